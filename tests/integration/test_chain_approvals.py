"""A chain step fed by earlier steps reaches its tool only with the arguments a person was asked about.

A step with ``use_previous`` (``true``, a name, ``"merge"``) or ``{{steps.N.path}}`` references gets
its arguments from earlier steps' results. The person was asked about the step's own arguments
before the chain ran, and the tool got more (the previous result under ``why``): the approval
bound arguments the tool never received. Against a real MCP server that writes down every call's
arguments, at both doors: a door's ``run_chain`` with a person to ask, and ``execute_code``, whose
run pauses and is resumed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp_support import SERVERS_DIR

from toolcode import Settings, Toolbox
from toolcode._metatools import call_metatool
from toolcode._settings import PolicySettings, StateSettings
from toolcode.calls import PendingCall

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

FED: dict[str, tuple[dict[str, Any], bool | str]] = {
    "named": ({"note": "harmless cleanup"}, "why"),
    "previous": ({"note": "harmless cleanup"}, True),
    "merge": ({"note": "harmless cleanup"}, "merge"),
    "reference": ({"note": "{{steps.0.said.text}}"}, False),
}
"""A wipe step's own arguments and its ``use_previous``, each taking the echo step's result."""


def _box(tmp_path: Path, policy: dict[str, Any] | None = None) -> Toolbox:
    """The recording server, by default under the default policy (``up:wipe`` is destructive: asked about)."""
    server = {"command": sys.executable, "args": [str(SERVERS_DIR / "recording_server.py"), str(tmp_path / "ledger")]}
    settings = Settings(
        state=StateSettings(dir=str(tmp_path / "state")), policy=PolicySettings.model_validate(policy or {})
    )
    return Toolbox.from_config({"mcpServers": {"up": server}}, settings=settings)


def _received(tmp_path: Path, tool: str) -> list[dict[str, Any]]:
    """The arguments of every call of ``tool`` that reached the server, in order."""
    ledger = tmp_path / "ledger"
    lines = ledger.read_text(encoding="utf-8").splitlines() if ledger.exists() else []
    return [entry["args"] for entry in map(json.loads, lines) if entry["tool"] == tool]


def _chain(args: dict[str, Any], use_previous: bool | str) -> list[dict[str, Any]]:
    wipe: dict[str, Any] = {"tool_id": "up:wipe", "args": args}
    if use_previous is not False:
        wipe["use_previous"] = use_previous
    return [{"tool_id": "up:echo", "args": {"text": "rm -rf / --no-preserve-root"}}, wipe]


@pytest.mark.parametrize("fed", list(FED))
async def test_a_door_asks_about_a_fed_step_with_what_its_tool_gets(tmp_path: Path, fed: str) -> None:
    shown: list[dict[str, Any]] = []

    async def ask(pending: Sequence[PendingCall], line: int | None) -> tuple[str, str]:
        shown.extend(dict(p.args) for p in pending)
        return "approve", "person"

    async with _box(tmp_path) as box:
        reply = await call_metatool(box.codemode, "run_chain", {"steps": _chain(*FED[fed])}, ask=ask)
    got = _received(tmp_path, "wipe")
    assert reply.error is None and reply.structured()["aborted"] is False, reply.text
    assert len(got) == 1 and got == shown, (shown, got)
    assert "rm -rf /" in json.dumps(shown), shown  # the earlier step's value was in the question


async def _run(box: Toolbox, code: str, decision: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run ``code`` at the execute_code door, deciding every question with ``decision``.

    Returns:
        The run's outcome, and the arguments of every ``up:wipe`` call a question showed.
    """
    shown: list[dict[str, Any]] = []
    out = (await call_metatool(box.codemode, "execute_code", {"code": code})).structured()
    for _ in range(5):
        if out.get("status") != "approval_required":
            break
        approval = out["approval"]
        shown.extend(p["args"] for p in approval["pending"] if p["tool_id"] == "up:wipe")
        resume = {"execution_id": approval["execution_id"], "decision": decision}
        out = (await call_metatool(box.codemode, "resume_execution", resume)).structured()
    return out, shown


@pytest.mark.parametrize("fed", list(FED))
async def test_a_paused_run_never_sends_a_fed_step_arguments_nobody_saw(tmp_path: Path, fed: str) -> None:
    async with _box(tmp_path) as box:
        out, shown = await _run(box, f"__out = run_chain({_chain(*FED[fed])!r})", "approve")
    got = _received(tmp_path, "wipe")
    assert all(args in shown for args in got), (shown, got)
    # A run cannot stop inside a chain to ask once the arguments are known: the step fails, not called.
    assert out.get("ok") is True and not got, out
    step = out["value"]["steps"][1]
    assert step["error"]["code"] == "approval_required", step
    assert "earlier steps" in step["error"]["message"] and "run_tool" in step["error"]["message"], step


async def test_approving_a_steps_own_arguments_does_not_cover_them_with_the_previous_result(tmp_path: Path) -> None:
    # The first wipe is asked about before the chain runs; the third shows the same own arguments.
    own = {"note": "harmless cleanup"}
    steps = [
        {"tool_id": "up:wipe", "args": own},
        {"tool_id": "up:echo", "args": {"text": "rm -rf / --no-preserve-root"}},
        {"tool_id": "up:wipe", "args": own, "use_previous": "why"},
    ]
    code = f"__out = run_chain({steps!r})"
    async with _box(tmp_path) as box:
        once, shown = await _run(box, code, "approve")
        assert shown == [own] and _received(tmp_path, "wipe") == [own], (shown, once)
        assert once["value"]["steps"][2]["error"]["code"] == "approval_required", once
        # approve_run approves the tool for the rest of the run, whatever its arguments: a person
        # who chose it covered the fed step too.
        whole, shown = await _run(box, code, "approve_run")
        assert shown == [own] and whole["value"]["aborted"] is False, whole
    fed = _received(tmp_path, "wipe")[-1]
    assert fed == {**own, "why": {"said": {"text": "rm -rf / --no-preserve-root"}}}, fed


async def test_a_denied_fed_step_still_refuses_the_chain_before_anything_runs(tmp_path: Path) -> None:
    async with _box(tmp_path, {"rules": [{"tools": "up:wipe", "decision": "deny"}]}) as box:
        reply = await call_metatool(box.codemode, "run_chain", {"steps": _chain(*FED["named"])})
    assert reply.error is not None and reply.error.code == "not_allowed", reply.text
    assert not (tmp_path / "ledger").exists()  # not even the echo step reached the server
