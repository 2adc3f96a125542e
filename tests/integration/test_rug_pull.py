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


def _box(tmp_path: Path, policy: dict[str, Any], local: LocalBackend | None = None) -> Toolbox:
    """The fault server, whose echo changes once the flag file exists, ``wait:changed`` and ``local``'s tools."""
    flag = tmp_path / "changed"
    servers = {"faults": {"command": sys.executable, "args": [str(FAULT_SERVER), "--changed-flag", str(flag)]}}
    local = local if local is not None else LocalBackend()
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
        await cm.approve_tools(cm.quarantined_tools().digests(), by="person:ops")
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


HOLDERS = 16
"""Calls that hold every place of a run (``calls.CALLS_AT_ONCE``) until the catalog has echo's new definition."""

WAITING = {
    "gathered": (
        "import asyncio\n"
        f"cs = [run_tool_async('hold:place', i=i) for i in range({HOLDERS})]\n"
        "cs.append(run_tool_async('faults:echo', text='computed ' + str(sum([1, 2]))))\n"
        "__out = await asyncio.gather(*cs)\n"
    ),
    # The one yield lets the sixteen take their places before the plain call is made.
    "plain": (
        "import asyncio, time\n"
        f"cs = [run_tool_async('hold:place', i=i) for i in range({HOLDERS})]\n"
        "time.sleep(0)\n"
        "e = run_tool('faults:echo', text='computed ' + str(sum([1, 2])))\n"
        "__out = [await asyncio.gather(*cs), e]\n"
    ),
    "module function": (
        "import asyncio, time\n"
        "from tools import faults\n"
        f"cs = [run_tool_async('hold:place', i=i) for i in range({HOLDERS})]\n"
        "time.sleep(0)\n"
        "e = faults.echo(text='computed ' + str(sum([1, 2])))\n"
        "__out = [await asyncio.gather(*cs), e]\n"
    ),
}
"""A call of echo (its arguments computed: not started early) that waits for a place while sixteen calls hold them."""


async def _changed(box: Toolbox, tmp_path: Path, changed: anyio.Event) -> None:
    """The rug pull: echo changes upstream, which announces ``tools/list_changed``; returns once the catalog has it."""

    def heard(event: Any) -> None:
        if "faults:echo" in event.tool_ids:
            changed.set()

    unsubscribe = box.index.subscribe(heard)
    try:
        _pull(tmp_path)
        await box.runner.run("faults:add_tool", {"name": "extra"})  # not a call of the run: it has no place free
        with anyio.fail_after(60):  # a hang bound
            await changed.wait()
    finally:
        unsubscribe()


async def _upstream_calls(box: Toolbox) -> int:
    """How many calls the fault server received, this one excluded."""
    stats = await box.runner.run("faults:stats")
    return int(stats.value["calls"]) - 1


@pytest.mark.parametrize("form", list(WAITING))
async def test_a_call_waiting_for_a_place_while_its_tool_changes_is_judged_as_it_is_now(
    tmp_path: Path, form: str
) -> None:
    # Sixteen calls hold every place; echo waits for one. Meanwhile the upstream changes echo's
    # definition: quarantined now, echo must not be called when a place frees.
    local = LocalBackend()
    in_flight, all_in, changed = set[int](), anyio.Event(), anyio.Event()

    @local.tool(namespace="hold")
    async def place(i: int) -> int:
        """Hold a place until the catalog has echo's new definition."""
        in_flight.add(i)
        if len(in_flight) == HOLDERS:
            all_in.set()
        await changed.wait()
        return i

    async with _box(tmp_path, {"quarantine": True}, local) as box:
        cm = box.codemode
        await cm.approve_tools(cm.quarantined_tools().digests(), by="person:ops")
        outcome: list[Any] = []

        async def run() -> None:
            outcome.append(await cm.execute(WAITING[form]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            with anyio.fail_after(60):  # a hang bound
                await all_in.wait()
            await _changed(box, tmp_path, changed)
        [out] = outcome
        assert out.error is not None and out.error.code == "not_allowed", out
        assert "quarantined" in out.error.message, out
        assert await _upstream_calls(box) == 1  # add_tool: echo was never called


async def test_a_call_whose_tool_changes_while_a_listener_holds_it_is_not_made(tmp_path: Path) -> None:
    # Past the gate, a call still waits for what hears of it (a door's progress reporting): a change
    # then must not let it go on under the verdict of the definition before.
    async with _box(tmp_path, {"quarantine": True}) as box:
        cm = box.codemode
        await cm.approve_tools(cm.quarantined_tools().digests(), by="person:ops")
        changed = anyio.Event()

        async def started(tool_id: str) -> None:
            if tool_id == "faults:echo":
                await _changed(box, tmp_path, changed)

        out = await cm.execute(
            "__out = run_tool('faults:echo', text='judged before the change')", on_tool_start=started
        )
        assert out.error is not None and out.error.code == "not_allowed", out
        assert "changed" in out.error.message and "nothing was called" in out.error.message, out
        assert await _upstream_calls(box) == 1  # add_tool: echo was never called
