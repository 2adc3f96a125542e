"""A tool whose definition changes between the judgement of a call and the call (a "rug pull").

Calls are judged before they are made: a chain's steps (also inside a snippet) all before the
first runs, the tools a saved snippet names with the snippet. A real MCP server (the fault
server) changes ``faults:echo``'s description while an earlier call runs and announces
``tools/list_changed``; ``wait:changed`` (a local tool) holds the run until the catalog has the
new definition. The call of the changed tool is judged again when it is made: quarantine refuses
it, and an approval of the old definition does not cover it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_support import FAULT_SERVER

from toolcode import Settings, Toolbox
from toolcode._settings import PolicySettings, StateSettings
from toolrun import LocalBackend

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ASK_ECHO = {"preset": "allow-all", "rules": [{"tools": "faults:echo", "decision": "ask"}]}
"""Every call is allowed, but one of ``faults:echo``, which a person approves."""

CHAIN = [
    {"tool_id": "faults:add_tool", "args": {"name": "extra"}},  # the server re-lists its tools: echo changed
    {"tool_id": "wait:changed"},
    {"tool_id": "faults:echo", "args": {"text": "made under the new definition"}},
]


def _box(tmp_path: Path, policy: dict[str, Any]) -> Toolbox:
    """The fault server, whose echo changes once the flag file exists, and ``wait:changed``."""
    flag = tmp_path / "changed"
    servers = {"faults": {"command": sys.executable, "args": [str(FAULT_SERVER), "--changed-flag", str(flag)]}}
    local = LocalBackend()
    settings = Settings(state=StateSettings(dir=str(tmp_path / "state")), policy=PolicySettings.model_validate(policy))
    box = Toolbox.from_config({"mcpServers": servers}, settings=settings, extra_backends=[local])

    @local.tool(namespace="wait")
    async def changed() -> bool:
        """Wait until the catalog holds echo's new definition."""
        with anyio.fail_after(60):  # a hang bound
            while "changed" not in box.index.get("faults:echo").description:  # noqa: ASYNC110 - the re-listing
                await anyio.sleep(0.05)
        return True

    return box


def _pull(tmp_path: Path) -> None:
    """From now on the server lists echo changed: at its next listing, once add_tool announces a change."""
    (tmp_path / "changed").write_text("1")


def _steps(chain: Any) -> list[tuple[bool, str | None]]:
    return [(s["ok"], s["error"]["code"] if s.get("error") else None) for s in chain["steps"]]


@pytest.mark.parametrize("path", ["execute_code", "door"])
async def test_a_chain_step_quarantined_while_an_earlier_step_runs_is_not_called(tmp_path: Path, path: str) -> None:
    async with _box(tmp_path, {"quarantine": True}) as box:
        cm = box.codemode
        await cm.approve_tools(["faults:*", "wait:*"], by="person:ops")
        before = box.index.get("faults:echo").description
        _pull(tmp_path)
        if path == "door":
            chain = (await cm.run_chain(CHAIN)).model_dump()
        else:
            out = await cm.execute(f"__out = run_chain({CHAIN!r})")
            assert out.ok, out.error
            chain = out.value
        assert box.index.get("faults:echo").description != before  # the step ran after the change
        assert _steps(chain) == [(True, None), (True, None), (False, "not_allowed")], chain
        assert "quarantined" in chain["steps"][2]["error"]["message"]
        direct = await cm.execute("run_tool('faults:echo', text='direct')")
        assert direct.error is not None and "quarantined" in direct.error.message, direct


async def test_a_chain_step_approved_under_its_old_definition_is_not_made_under_the_new_one(tmp_path: Path) -> None:
    code = f"c = run_chain({CHAIN!r})\nrun_tool('faults:echo', text='asked again')\n__out = c"
    async with _box(tmp_path, ASK_ECHO) as box:
        cm = box.codemode
        _pull(tmp_path)
        out = await cm.execute(code)
        assert out.approval is not None, out
        [asked] = out.approval.pending
        assert asked.tool_id == "faults:echo"
        # Approved under the definition the question showed, which changes while step 0 runs.
        after = await cm.resume(out.approval.execution_id, "approve")
        # The step is not made; the next call of the tool asks about the definition it has now.
        assert after.approval is not None, after
        [again] = after.approval.pending
        assert again.args == {"text": "asked again"} and again.digest != asked.digest, again
        done = await cm.resume(after.approval.execution_id, "approve")
        assert done.ok, done.error
        assert _steps(done.value) == [(True, None), (True, None), (False, "approval_required")], done.value
        assert "definition changed" in done.value["steps"][2]["error"]["message"]


async def test_a_tool_an_approved_snippet_names_is_not_called_once_its_definition_changed(tmp_path: Path) -> None:
    body = "run_tool('faults:add_tool', name='extra')\nrun_tool('wait:changed')\n"
    body += "run_tool('faults:echo', text='inside the approved snippet')\n__out = 'done'"
    async with _box(tmp_path, ASK_ECHO) as box:
        cm = box.codemode
        await cm.save_snippet("tidy", body, "Tidy up.")
        _pull(tmp_path)
        out = await cm.execute("__out = run_tool('snippets:tidy')")
        assert out.approval is not None, out
        [asked] = out.approval.pending
        assert asked.tool_id == "snippets:tidy" and "faults:echo" in asked.reason, asked
        done = await cm.resume(out.approval.execution_id, "approve")
        # The approval covered echo as it was defined when the snippet was asked about, not as it is now.
        assert done.error is not None and done.error.code == "approval_required", done
        assert "faults:echo" in done.error.message and "changed after the calling snippet" in done.error.message, done
        # Called again, the snippet is asked about anew: what it names is now another definition.
        again = await cm.execute("__out = run_tool('snippets:tidy')")
        assert again.approval is not None, again
        assert again.approval.pending[0].digest != asked.digest
        ok = await cm.resume(again.approval.execution_id, "approve")
        assert ok.ok and ok.value == "done", ok
