"""Policy and approvals against real MCP servers: server-filesystem on a temporary folder, server-memory.

A run that reaches a call the policy asks about pauses *at* that call (nothing is written), and
continues from there once decided: approve, approve for the rest of the run, deny (the snippet
catches ``approval_denied``), abort. Paused runs are dumped to the state store, hold no worker,
and survive a restart.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from mcp_support import npm_server

from toolcode import Settings, Toolbox
from toolcode._settings import PolicySettings, StateSettings
from toolcode.exceptions import ErrorCode, ToolError

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


def _servers(files_dir: Path, tmp_path: Path) -> dict[str, Any]:
    return {
        "fs": {"command": str(npm_server("mcp-server-filesystem")), "args": [str(files_dir)]},
        "memory": {
            "command": str(npm_server("mcp-server-memory")),
            "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
        },
    }


def _box(files_dir: Path, tmp_path: Path, policy: dict[str, Any] | None = None, state: Path | None = None) -> Toolbox:
    settings = Settings(
        state=StateSettings(dir=str(state or tmp_path / "state")),
        policy=PolicySettings.model_validate(policy or {}),
    )
    return Toolbox.from_config({"mcpServers": _servers(files_dir, tmp_path)}, settings=settings)


def _made(folder: Path, pattern: str) -> list[str]:
    return sorted(p.name for p in folder.glob(pattern))


WRITE = """
path = input["dir"] + "/out.txt"
listing = run_tool("fs:list_directory", path=input["dir"])
run_tool("fs:write_file", path=path, content="written")
__out = {"listed": "a.txt" in str(listing), "wrote": path}
"""


async def test_a_write_under_ask_pauses_at_the_call_and_approve_continues_it(files_dir: Path, tmp_path: Path) -> None:
    # server-filesystem annotates write_file destructiveHint=true: the default policy asks.
    async with _box(files_dir, tmp_path) as box:
        cm = box.codemode
        out = await cm.execute(WRITE, input={"dir": str(files_dir)}, options={"trace": "full"})
        assert out.status == "approval_required" and not out.ok and out.error is None, out
        assert out.approval is not None
        assert [p.tool_id for p in out.approval.pending] == ["fs:write_file"]
        pending = out.approval.pending[0]
        assert pending.tier == "destructive" and pending.args["content"] == "written"
        assert out.approval.line == 4
        assert set(out.approval.may_call) == {"fs:list_directory", "fs:write_file"}
        assert not (files_dir / "out.txt").exists()  # paused *before* the call
        assert out.calls.count == 1  # the read before the pause ran

        done = await cm.resume(out.approval.execution_id, "approve")
        assert done.ok, done.error
        assert done.value == {"listed": True, "wrote": str(files_dir / "out.txt")}
        assert (files_dir / "out.txt").read_text() == "written"
        assert done.trace is not None
        steps = [(t.tool_id, t.ok) for t in done.trace]
        assert steps == [("fs:list_directory", True), ("fs:write_file", True), ("fs:write_file", True)]
        assert done.trace[1].result is not None and done.trace[1].result["decision"] == "approve"
        assert done.calls.count == 2  # the pause is in the trace, not counted as a call

        # The id was taken: a second decision on it answers how the run ended, and runs nothing again.
        (files_dir / "out.txt").write_text("after")
        again = await cm.resume(out.approval.execution_id, "deny")
        assert again.ok and again.value == done.value, again
        assert (files_dir / "out.txt").read_text() == "after"
        # Another caller's (or an unknown) id is refused, clearly.
        other = await cm.resume(out.approval.execution_id, "approve", caller="token:someone")
        assert other.error is not None and other.error.code == "invalid_arguments"
        assert "already resumed" in other.error.message


async def test_deny_gives_the_snippet_a_catchable_error_and_nothing_is_written(files_dir: Path, tmp_path: Path) -> None:
    code = """
try:
    run_tool("fs:write_file", path=input["dir"] + "/denied.txt", content="x")
    __out = "wrote"
except ToolError as e:
    __out = {"fallback": True, "code": tool_error_info(e)["code"]}
"""
    async with _box(files_dir, tmp_path) as box:
        cm = box.codemode
        out = await cm.execute(code, input={"dir": str(files_dir)})
        assert out.approval is not None
        done = await cm.resume(out.approval.execution_id, "deny")
        assert done.ok, done.error
        assert done.value == {"fallback": True, "code": "approval_denied"}
        assert not (files_dir / "denied.txt").exists()


async def test_abort_ends_the_run_and_approve_run_lets_later_writes_through(files_dir: Path, tmp_path: Path) -> None:
    three = (
        "\n".join(f'run_tool("fs:write_file", path=input["dir"] + "/f{i}.txt", content="{i}")' for i in range(3))
        + "\n__out = 3"
    )
    async with _box(files_dir, tmp_path) as box:
        cm = box.codemode
        out = await cm.execute(three, input={"dir": str(files_dir)})
        assert out.approval is not None
        aborted = await cm.resume(out.approval.execution_id, "abort")
        assert aborted.error is not None and aborted.error.code == "approval_denied"
        assert _made(files_dir, "f*.txt") == []

        out = await cm.execute(three, input={"dir": str(files_dir)})
        assert out.approval is not None
        done = await cm.resume(out.approval.execution_id, "approve_run")
        assert done.ok and done.value == 3, done  # no second pause for f1, f2
        assert _made(files_dir, "f*.txt") == ["f0.txt", "f1.txt", "f2.txt"]

        # approve (once) pauses again at the next write of the same tool.
        out = await cm.execute(three.replace("/f", "/g"), input={"dir": str(files_dir)})
        assert out.approval is not None
        second = await cm.resume(out.approval.execution_id, "approve")
        assert second.status == "approval_required" and second.approval is not None
        # Each question has an id of its own (a decision answers the question it was given for).
        assert second.approval.execution_id != out.approval.execution_id
        assert second.approval.line == 2
        assert (files_dir / "g0.txt").exists() and not (files_dir / "g1.txt").exists()
        done = await cm.resume(second.approval.execution_id, "approve_run")
        assert done.ok and done.value == 3, done


async def test_a_decision_answers_the_question_it_was_given_for_not_the_next(files_dir: Path, tmp_path: Path) -> None:
    # A person shown the first write approves it after the run's caller denied it and the run
    # went on to ask about another write: the approval must not reach the write nobody was shown.
    code = (
        "try:\n"
        '    run_tool("fs:write_file", path=input["dir"] + "/hello.txt", content="harmless")\n'
        "except ToolError:\n"
        "    pass\n"
        'run_tool("fs:write_file", path=input["dir"] + "/other.txt", content="not shown")\n'
        "__out = 1"
    )
    async with _box(files_dir, tmp_path) as box:
        cm = box.codemode
        first = await cm.execute(code, input={"dir": str(files_dir)})
        assert first.approval is not None
        shown = first.approval.execution_id
        second = await cm.resume(shown, "deny")
        assert second.status == "approval_required" and second.approval is not None
        assert second.approval.execution_id != shown
        stale = await cm.resume(shown, "approve")  # the decision about the first question, arriving late
        assert not (files_dir / "other.txt").exists()
        # It hears how that question ended: the run asks again, under the id of its next question.
        assert stale.approval is not None and stale.approval.execution_id == second.approval.execution_id
        assert not (files_dir / "hello.txt").exists()
        entries = await box.stores.audit.read()
    # The audit log keeps one id for the run across its questions: the first's.
    assert entries and all(e.get("execution_id") == shown for e in entries)


async def test_a_paused_run_survives_a_restart_and_time_spent_waiting_does_not_count(
    files_dir: Path, tmp_path: Path
) -> None:
    code = 'x = 40\nrun_tool("fs:write_file", path=input["dir"] + "/later.txt", content="ok")\n__out = x + 2'
    async with _box(files_dir, tmp_path) as box:
        # The timeout leaves room for a busy machine to run the snippet; the wait below outlasts it.
        out = await box.codemode.execute(code, input={"dir": str(files_dir)}, options={"timeout": 10})
        assert out.approval is not None
    await anyio.sleep(10.5)  # longer than the run's timeout: waiting for a person is not running
    async with _box(files_dir, tmp_path) as box:
        done = await box.codemode.resume(out.approval.execution_id, "approve")
        assert done.ok and done.value == 42, done
        assert (files_dir / "later.txt").read_text() == "ok"


async def test_fifty_paused_runs_hold_no_worker(files_dir: Path, tmp_path: Path) -> None:
    code = (
        'run_tool("fs:write_file", path=input["dir"] + "/p" + str(input["i"]) + ".txt", content="p")\n'
        '__out = input["i"]'
    )
    async with _box(files_dir, tmp_path) as box:
        me = psutil.Process()

        def workers() -> int:
            return sum(1 for p in me.children(recursive=True) if "monty" in " ".join(p.cmdline()[:3]))

        outs = [await box.codemode.execute(code, input={"dir": str(files_dir), "i": 0})]
        after_one = workers()
        assert after_one >= 1
        outs += [await box.codemode.execute(code, input={"dir": str(files_dir), "i": i}) for i in range(1, 50)]
        assert all(o.approval is not None for o in outs)
        listed = await box.codemode.list_paused()
        assert len(listed.paused) == 50
        # Each run used a worker while it ran; paused, none keeps one: 50 paused runs hold no
        # more workers than one did (the pool's warm worker), give or take the pool's spare, which
        # the pool starts again after each run and may not have started yet when one was counted.
        assert workers() <= after_one + 1
        ids = [o.approval.execution_id for o in outs if o.approval is not None]
        done = [await box.codemode.resume(eid, "approve") for eid in ids[:3]]
        assert [d.value for d in done] == [0, 1, 2]


async def test_every_path_a_call_can_take_respects_the_policy(files_dir: Path, tmp_path: Path) -> None:
    deny_writes = {"rules": [{"tier": "destructive", "decision": "deny"}, {"tier": "write", "decision": "deny"}]}
    target = str(files_dir / "no.txt")
    args = {"path": target, "content": "no"}
    paths = {
        "run_tool": f"run_tool('fs:write_file', {args!r})",
        "module": f"from tools import fs\nfs.write_file(path={target!r}, content='no')",
        "run_tools": (
            f"run_tools([('fs:read_text_file', {{'path': {str(files_dir / 'a.txt')!r}}}), ('fs:write_file', {args!r})])"
        ),
        "run_chain": f"run_chain([{{'tool_id': 'fs:write_file', 'args': {args!r}}}])",
        "async": f"import asyncio\nawait asyncio.gather(run_tool_async('fs:write_file', {args!r}))",
        "memory": "run_tool('memory:create_entities', entities=[{'name': 'a', 'entityType': 't', 'observations': []}])",
    }
    async with _box(files_dir, tmp_path, deny_writes) as box:
        cm = box.codemode
        for name, code in paths.items():
            out = await cm.execute(code)
            assert out.error is not None, (name, out)
            assert out.error.code == "not_allowed", (name, out.error)
        # A saved snippet that writes is judged by what it calls.
        await cm.save_snippet("writer", f"run_tool('fs:write_file', path={target!r}, content='no')", "Writes a file.")
        out = await cm.execute("run_tool('snippets:writer')")
        assert out.error is not None and out.error.code == "not_allowed", out
        # The doors' direct calls too.
        with pytest.raises(ToolError) as info:
            await cm.run_tool("fs:write_file", args)
        assert info.value.code == ErrorCode.NOT_ALLOWED
        with pytest.raises(ToolError) as info:
            await cm.run_chain(
                [{"tool_id": "fs:read_text_file", "args": {"path": target}}, {"tool_id": "fs:write_file", "args": args}]
            )
        assert info.value.code == ErrorCode.NOT_ALLOWED
        assert not (files_dir / "no.txt").exists()
        # Reads still go.
        ok = await cm.execute(f"run_tool('fs:read_text_file', path={str(files_dir / 'a.txt')!r})")
        assert ok.ok, ok.error


async def test_a_snippet_asks_before_it_starts_and_its_calls_go_once_approved(files_dir: Path, tmp_path: Path) -> None:
    async with _box(files_dir, tmp_path) as box:
        cm = box.codemode
        body = 'run_tool("fs:write_file", path=input["path"], content="from a snippet")\n__out = "saved"'
        await cm.save_snippet(
            "save_note", body, "Write a note.", {"type": "object", "properties": {"path": {"type": "string"}}}
        )
        target = str(files_dir / "note.txt")
        out = await cm.execute(f"run_tool('snippets:save_note', path={target!r})")
        assert out.approval is not None, out
        assert [p.tool_id for p in out.approval.pending] == ["snippets:save_note"]
        assert out.approval.pending[0].tier == "destructive"
        assert not (files_dir / "note.txt").exists()
        done = await cm.resume(out.approval.execution_id, "approve")
        assert done.ok and done.value == "saved", done
        assert (files_dir / "note.txt").read_text() == "from a snippet"


async def test_the_audit_log_records_calls_and_decisions(files_dir: Path, tmp_path: Path) -> None:
    async with _box(files_dir, tmp_path) as box:
        cm = box.codemode
        out = await cm.execute(WRITE, input={"dir": str(files_dir)})
        assert out.approval is not None
        await cm.resume(out.approval.execution_id, "approve")
        entries = await box.stores.audit.read()
    kinds = [(e["tool_id"], e["decision"]) for e in entries]
    assert ("fs:list_directory", "call") in kinds
    assert ("fs:write_file", "ask") in kinds
    assert ("fs:write_file", "approved") in kinds
    assert ("fs:write_file", "call") in kinds
    assert all(e.get("execution_id") == out.approval.execution_id for e in entries)
    assert all("args" not in e for e in entries)  # arguments only when configured
    json.dumps(entries)


async def test_a_denial_is_one_audit_entry(files_dir: Path, tmp_path: Path) -> None:
    # The decision is logged when a person makes it; the gate refusing the call is not a second one.
    code = f"""
try:
    run_tool("fs:write_file", path={str(files_dir)!r} + "/no.txt", content="x")
except ToolError:
    pass
__out = 1
"""
    async with _box(files_dir, tmp_path) as box:
        out = await box.codemode.execute(code)
        assert out.approval is not None
        done = await box.codemode.resume(out.approval.execution_id, "deny")
        assert done.ok, done.error
        entries = await box.stores.audit.read()
    decisions = [e["decision"] for e in entries if e.get("execution_id") == out.approval.execution_id]
    assert decisions.count("denied") == 1, decisions
    assert decisions.count("ask") == 1, decisions


async def test_pauses_on_the_module_the_awaitable_and_the_chain_paths_resume_exactly(
    files_dir: Path, tmp_path: Path
) -> None:
    d = str(files_dir)
    module = f"from tools import fs\nn = 1\nfs.write_file(path={d!r} + '/m.txt', content='m')\n__out = n + 1"
    awaited = (
        "import asyncio\n"
        f"a = run_tool_async('fs:read_text_file', path={d!r} + '/a.txt')\n"
        f"b = run_tool_async('fs:write_file', path={d!r} + '/w.txt', content='w')\n"
        "r = await asyncio.gather(a, b)\n"
        "__out = 'alpha' in str(r[0])"
    )
    chain = (
        f"c = run_chain([{{'tool_id': 'fs:read_text_file', 'args': {{'path': {d!r} + '/a.txt'}}}},"
        f" {{'tool_id': 'fs:write_file', 'args': {{'path': {d!r} + '/c.txt', 'content': 'c'}}}}])\n"
        "__out = [s['ok'] for s in c['steps']]"
    )
    async with _box(files_dir, tmp_path) as box:
        cm = box.codemode
        for code, made, expected in ((module, "m.txt", 2), (awaited, "w.txt", True), (chain, "c.txt", [True, True])):
            out = await cm.execute(code, options={"trace": "full"})
            assert out.approval is not None, (made, out)
            assert not (files_dir / made).exists(), made
            done = await cm.resume(out.approval.execution_id, "approve")
            assert done.ok, (made, done.error)
            assert done.value == expected, (made, done.value)
            assert (files_dir / made).exists(), made
            writes = [t for t in done.trace or [] if t.tool_id == "fs:write_file" and t.result != {}]
            assert writes, made
        # A chain is judged whole before its first step: nothing ran before the pause.
        out = await cm.execute(chain.replace("c.txt", "c2.txt"), options={"trace": "full"})
        assert out.calls.count == 0


async def test_a_session_run_that_pauses_keeps_its_state_when_resumed(files_dir: Path, tmp_path: Path) -> None:
    async with _box(files_dir, tmp_path) as box:
        cm = box.codemode
        assert (await cm.execute("total = 10", session="s")).ok
        code = (
            f"total += 5\nrun_tool('fs:write_file', path={str(files_dir)!r} + '/s.txt', content='s')\ntotal += 1\ntotal"
        )
        out = await cm.execute(code, session="s")
        assert out.approval is not None, out
        # A run of the session meanwhile would be lost when the paused one resumes: it is refused.
        meanwhile = await cm.execute("total = 1000", session="s")
        assert meanwhile.error is not None and meanwhile.error.code == "session_limit", meanwhile
        assert out.approval.execution_id in meanwhile.error.message
        assert (await cm.execute("1", session="other")).ok  # another session is not held
        done = await cm.resume(out.approval.execution_id, "approve")
        assert done.ok and done.value == 16, done
        assert (await cm.execute("total", session="s")).value == 16


async def test_quarantine_blocks_a_tool_whose_description_changes_until_approved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mcp_support import FAULT_SERVER

    flag = tmp_path / "changed"
    servers = {"faults": {"command": sys.executable, "args": [str(FAULT_SERVER), "--changed-flag", str(flag)]}}
    settings = Settings(state=StateSettings(dir=str(tmp_path / "state")), policy=PolicySettings(quarantine=True))
    async with Toolbox.from_config({"mcpServers": servers}, settings=settings) as box:
        cm = box.codemode
        assert box.stores.quarantine is not None
        first = await cm.execute("run_tool('faults:echo', text='hi')")
        assert first.error is not None and first.error.code == "not_allowed" and "quarantined" in first.error.message
        listed = await cm.list_tools("faults")
        echo = next(t for t in listed.tools if t.id == "faults:echo")
        assert echo.summary.startswith("[quarantined]")
        # The operator approves from the command line (another process of its own, same state store);
        # this server sees the approval at its next sync (every 2 s).
        from toolcode.cli import main

        cfg = tmp_path / "mcp.json"
        cfg.write_text(json.dumps({"mcpServers": servers, "toolcode": {"policy": {"quarantine": True}}}))
        argv = ["tools", "quarantined", "--config", str(cfg), "--state-dir", str(tmp_path / "state"), "--json"]
        assert await anyio.to_thread.run_sync(main, argv) == 0
        digest = next(
            t["digest"] for t in json.loads(capsys.readouterr().out)["tools"] if t["tool_id"] == "faults:echo"
        )
        echo = f"faults:echo@{digest}"  # the definition listed
        argv = ["tools", "approve", echo, "--config", str(cfg), "--state-dir", str(tmp_path / "state")]
        assert await anyio.to_thread.run_sync(main, argv) == 0
        with anyio.fail_after(60):  # a hang bound
            while not (ok := await cm.execute("run_tool('faults:echo', text='hi')")).ok:  # noqa: ASYNC110 - waits for the 2 s sync
                await anyio.sleep(0.2)
        assert ok.value is not None
        # The server changes the tool's description and announces it (tools/list_changed).
        flag.write_text("1")
        await box.stores.quarantine.approve([box.index.get("faults:add_tool")], "operator")
        assert (await cm.execute("run_tool('faults:add_tool', name='extra')")).ok  # announces list_changed
        with anyio.fail_after(60):  # a hang bound
            while "changed" not in box.index.get("faults:echo").description:  # noqa: ASYNC110 - the server's notification re-lists
                await anyio.sleep(0.05)
        blocked = await cm.execute("run_tool('faults:echo', text='hi')")
        assert blocked.error is not None and "quarantined" in blocked.error.message, blocked
        await box.stores.quarantine.approve([box.index.get("faults:echo")], "operator")
        assert (await cm.execute("run_tool('faults:echo', text='hi')")).ok


# -- through `toolcode serve`, with the real MCP client ---------------------------------------


def _serve_config(files_dir: Path, tmp_path: Path) -> Path:
    cfg = tmp_path / "serve.json"
    tools = ["execute_code", "resume_execution", "list_paused", "run_tool"]
    servers = {"fs": {"command": str(npm_server("mcp-server-filesystem")), "args": [str(files_dir)]}}
    state = {"dir": str(tmp_path / "serve-state")}
    section = {"tools": tools, "state": state, "expose": ["fs:write_file"]}
    cfg.write_text(json.dumps({"mcpServers": servers, "toolcode": section}))
    return cfg


def _stdio(cfg: Path) -> Any:
    from mcp.client.stdio import StdioServerParameters
    from mcp_support import toolcode_serve_args

    return StdioServerParameters(command=sys.executable, args=toolcode_serve_args(cfg))


async def test_mcp_resume_execution_across_a_server_restart(files_dir: Path, tmp_path: Path) -> None:
    from mcp import Client

    cfg = _serve_config(files_dir, tmp_path)
    code = f"run_tool('fs:write_file', path={str(files_dir)!r} + '/mcp.txt', content='via mcp')\n__out = 'done'"
    async with Client(_stdio(cfg)) as client:  # declares no elicitation: the run pauses
        res = await client.call_tool("execute_code", {"code": code})
        data = res.structured_content
        assert data is not None and data["status"] == "approval_required", res.content
        assert not res.is_error
        assert "resume_execution" in res.content[0].text  # type: ignore[union-attr]
        execution_id = data["approval"]["execution_id"]
        assert not (files_dir / "mcp.txt").exists()
        listed = await client.call_tool("list_paused", {})
        assert listed.structured_content is not None
        assert [p["execution_id"] for p in listed.structured_content["paused"]] == [execution_id]
        # An exposed upstream tool is a direct call: without a way to ask, it is refused.
        exposed = await client.call_tool("fs__write_file", {"path": str(files_dir / "x.txt"), "content": "x"})
        # It declares an outputSchema, so the error is in the text alone (that object would break the schema).
        assert exposed.is_error and exposed.structured_content is None
        assert exposed.content[0].text.startswith("error [approval_required]")  # type: ignore[union-attr]
        assert not (files_dir / "x.txt").exists()
        tools = {t.name: t for t in (await client.list_tools()).tools}
        annotations = tools["resume_execution"].annotations
        assert annotations is not None and annotations.destructive_hint is True
    # A new server process on the same state folder continues the run.
    async with Client(_stdio(cfg)) as client:
        res = await client.call_tool("resume_execution", {"execution_id": execution_id, "decision": "approve"})
        assert res.structured_content is not None and res.structured_content["value"] == "done", res.content
        assert (files_dir / "mcp.txt").read_text() == "via mcp"
        # Resumed once: asking again answers how it ended, and runs nothing again.
        (files_dir / "mcp.txt").write_text("after")
        again = await client.call_tool("resume_execution", {"execution_id": execution_id, "decision": "approve"})
        assert again.structured_content is not None and again.structured_content["value"] == "done", again.content
        assert (files_dir / "mcp.txt").read_text() == "after"
        bad = await client.call_tool("resume_execution", {"execution_id": "0" * 32, "decision": "approve"})
        assert bad.is_error and bad.structured_content is not None
        assert bad.structured_content["error"]["code"] == "invalid_arguments"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_mcp_elicitation_asks_within_the_same_request(files_dir: Path, tmp_path: Path, mode: str) -> None:
    # 2026-07-28 (auto): the result says input is required, the client asks its user and retries
    # the call; 2025-11-25 (legacy): the server sends elicitation/create within the request.
    import mcp_types as types
    from mcp import Client

    asked: list[str] = []
    answers = iter(["approve", "deny"])

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": next(answers)})

    cfg = _serve_config(files_dir, tmp_path)
    d = str(files_dir)
    code = (
        f"run_tool('fs:write_file', path={d!r} + '/e1.txt', content='1')\n"
        "try:\n"
        f"    run_tool('fs:write_file', path={d!r} + '/e2.txt', content='2')\n"
        "    second = 'written'\n"
        "except ToolError as e:\n"
        "    second = tool_error_info(e)['code']\n"
        "__out = second"
    )
    async with Client(_stdio(cfg), mode=mode, elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
        res = await client.call_tool("execute_code", {"code": code, "options": {"trace": "full"}})
        data = res.structured_content
        assert data is not None and data["status"] == "ok", res.content
        assert data["value"] == "approval_denied"
        assert len(asked) == 2
        assert "fs:write_file" in asked[0] and "e1.txt" in asked[0] and "line 1" in asked[0]
        assert "line 3" in asked[1]
        decisions = [t["result"]["decision"] for t in data["trace"] if t["result"] and "decision" in t["result"]]
        assert decisions == ["approve", "deny"]
        deciders = {t["result"]["by"] for t in data["trace"] if t["result"] and "decision" in t["result"]}
        assert deciders == {"person (elicitation)"}  # the local user; a token's caller is named (below)
        # A direct call asks too, where the server can ask within the call (2025-11-25); on
        # 2026-07-28 it answers approval_required and points to execute_code.
        answers = iter(["approve"])
        direct = await client.call_tool(
            "run_tool", {"tool_id": "fs:write_file", "args": {"path": d + "/e3.txt", "content": "3"}}
        )
        if mode == "legacy":
            assert not direct.is_error, direct.content
            assert (files_dir / "e3.txt").read_text() == "3"
        else:
            assert direct.is_error and direct.structured_content is not None
            assert direct.structured_content["error"]["code"] == "approval_required"
            assert not (files_dir / "e3.txt").exists()
    assert (files_dir / "e1.txt").exists() and not (files_dir / "e2.txt").exists()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_mcp_elicitation_shows_the_code_of_the_saved_snippet_it_approves(
    files_dir: Path, tmp_path: Path, mode: str
) -> None:
    # The question about a saved snippet's call showed its arguments and the tools it names, not
    # its code, while approving covered exactly that code.
    import mcp_types as types
    from mcp import Client

    asked: list[str] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    body = f"# tidy up\u202e\nrun_tool('fs:write_file', path={str(files_dir)!r} + '/tidy.txt', content='t')"
    code = f"save_snippet('tidy', {body!r}, 'Tidy up.')\nrun_tool('snippets:tidy')\n__out = 'done'"
    async with Client(_stdio(_serve_config(files_dir, tmp_path)), mode=mode, elicitation_callback=on_elicit) as c:  # type: ignore[arg-type]
        res = await c.call_tool("execute_code", {"code": code})
    assert res.structured_content is not None and res.structured_content.get("value") == "done", res.content
    [message] = asked
    assert "- snippets:tidy (destructive): {}" in message and "line 2" in message, message
    written = body.replace("\u202e", "\\u202e").split("\n")
    assert f"code of snippets:tidy that approving runs (2 lines):\n  1 | {written[0]}\n  2 | {written[1]}" in message
    assert (files_dir / "tidy.txt").read_text() == "t"


def test_an_answer_through_a_tokens_client_names_its_caller() -> None:
    from toolcode.server._ask import _by  # pyright: ignore[reportPrivateUsage]

    assert _by("token:ops") == "person:token:ops (elicitation)"
    assert _by(None) == _by("local") == "person (elicitation)"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_mcp_a_dismissed_question_answers_the_runs_own_outcome(
    files_dir: Path, tmp_path: Path, mode: str
) -> None:
    # Dismissing the form leaves the run paused; both protocol eras answer with that run's
    # outcome (approval_required and its execution_id), not a list of every paused run.
    import mcp_types as types
    from mcp import Client

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="cancel")

    cfg = _serve_config(files_dir, tmp_path)
    d = str(files_dir)
    async with Client(_stdio(cfg), mode=mode, elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
        # Another paused run of the same caller must not appear in this run's answer.
        other = await client.call_tool(
            "execute_code", {"code": f"run_tool('fs:write_file', path={d!r} + '/o.txt', content='o')"}
        )
        assert other.structured_content is not None
        res = await client.call_tool(
            "execute_code", {"code": f"run_tool('fs:write_file', path={d!r} + '/c.txt', content='c')\n__out = 1"}
        )
        data = res.structured_content
        assert data is not None, res.content
        assert data.get("status") == "approval_required", data
        eid = data["approval"]["execution_id"]
        assert [p["tool_id"] for p in data["approval"]["pending"]] == ["fs:write_file"]
        assert "paused" not in data
        assert eid in res.content[0].text  # type: ignore[union-attr]
        assert not (files_dir / "c.txt").exists()
        # The reply says to decide with resume_execution: the client was told of that tool.
        assert "resume_execution" in res.content[0].text  # type: ignore[union-attr]
        assert "resume_execution" in {t.name for t in (await client.list_tools()).tools}
        done = await client.call_tool("resume_execution", {"execution_id": eid, "decision": "approve"})
        assert done.structured_content is not None and done.structured_content["value"] == 1, done.content
    assert (files_dir / "c.txt").read_text() == "c"


async def test_mcp_a_question_nobody_answers_leaves_the_run_paused_after_ask_timeout(
    files_dir: Path, tmp_path: Path
) -> None:
    # A client that asks its user and never answers held the request (and one of its caller's slots)
    # for good; past policy.ask_timeout the run stays paused and the request answers with it.
    import anyio
    import mcp_types as types
    from mcp import Client

    asked = anyio.Event()

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    cfg = _serve_config(files_dir, tmp_path)
    config = json.loads(cfg.read_text())
    config["toolcode"]["policy"] = {"ask_timeout": 1}
    cfg.write_text(json.dumps(config))
    d = str(files_dir)
    with anyio.fail_after(120):  # a real hang only: the answer comes about a second after the question
        async with Client(_stdio(cfg), mode="legacy", elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            res = await client.call_tool(
                "execute_code", {"code": f"run_tool('fs:write_file', path={d!r} + '/u.txt', content='u')\n__out = 2"}
            )
            assert asked.is_set()
            data = res.structured_content
            assert data is not None and data.get("status") == "approval_required", res.content
            assert not (files_dir / "u.txt").exists()
            eid = data["approval"]["execution_id"]
            done = await client.call_tool("resume_execution", {"execution_id": eid, "decision": "approve"})
            assert done.structured_content is not None and done.structured_content["value"] == 2, done.content
    assert (files_dir / "u.txt").read_text() == "u"


# -- the command line ------------------------------------------------------------------------


def test_cli_exec_pauses_without_a_terminal_and_resume_continues(
    files_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolcode.cli import main

    cfg = tmp_path / "cli.json"
    cfg.write_text(json.dumps({"mcpServers": _servers(files_dir, tmp_path)}))
    state = ["--state-dir", str(tmp_path / "cli-state")]
    d = str(files_dir)
    code = f"run_tool('fs:write_file', path={d!r} + '/cli.txt', content='cli')\n'ok'"

    assert main(["exec", "--config", str(cfg), *state, "--json", "-c", code]) == 6  # stdin is not a terminal
    paused = json.loads(capsys.readouterr().out)
    assert paused["status"] == "approval_required"
    assert not (files_dir / "cli.txt").exists()
    assert main(["paused", "--config", str(cfg), *state, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [p["execution_id"] for p in listed["paused"]] == [paused["approval"]["execution_id"]]
    eid = paused["approval"]["execution_id"]
    assert main(["resume", eid, "approve", "--config", str(cfg), *state, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == "ok"
    assert (files_dir / "cli.txt").read_text() == "cli"

    assert (
        main(
            [
                "exec",
                "--config",
                str(cfg),
                *state,
                "--approve",
                "all",
                "--json",
                "-c",
                code.replace("cli.txt", "all.txt"),
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["value"] == "ok"
    assert (files_dir / "all.txt").exists()
    assert (
        main(
            [
                "exec",
                "--config",
                str(cfg),
                *state,
                "--approve",
                "none",
                "--json",
                "-c",
                code.replace("cli.txt", "none.txt"),
            ]
        )
        == 1
    )
    denied = json.loads(capsys.readouterr().out)
    assert denied["error"]["code"] == "approval_denied"
    assert not (files_dir / "none.txt").exists()

    assert main(["audit", "--config", str(cfg), *state, "--json", "--since", "1h"]) == 0
    entries = json.loads(capsys.readouterr().out)["entries"]
    decided = {(e["decision"], e["decided_by"]) for e in entries if e["tool_id"] == "fs:write_file"}
    assert ("approved", "flag:--approve=all") in decided and ("denied", "flag:--approve=none") in decided
    denials = [e for e in entries if e["decision"] == "denied"]
    assert len(denials) == 1, denials  # logged when decided, not again when the call is refused
    assert any(d == "approved" and by.startswith("person:") for d, by in decided)


async def test_a_run_paused_on_one_replica_continues_on_another(
    files_dir: Path, tmp_path: Path, redis_url: str
) -> None:
    def replica() -> Toolbox:
        settings = Settings(state=StateSettings(url=redis_url))
        return Toolbox.from_config({"mcpServers": _servers(files_dir, tmp_path)}, settings=settings)

    code = f"n = 20\nrun_tool('fs:write_file', path={str(files_dir)!r} + '/r.txt', content='r')\n__out = n + 1"
    async with replica() as a, replica() as b:
        out = await a.codemode.execute(code)
        assert out.approval is not None
        done = await b.codemode.resume(out.approval.execution_id, "approve")
        assert done.ok and done.value == 21, done
        # Taken once: the other replica cannot continue it again; it answers how the run ended.
        (files_dir / "r.txt").write_text("after")
        again = await a.codemode.resume(out.approval.execution_id, "approve")
        assert again.ok and again.value == 21, again
    assert (files_dir / "r.txt").read_text() == "after"


def test_cli_asks_at_a_terminal_for_exec_run_and_chain(
    files_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolcode._cli._common as common
    from toolcode.cli import main

    answers = iter(["r", "y", "n"])
    monkeypatch.setattr(common, "interactive", lambda: True)
    monkeypatch.setattr("builtins.input", lambda *a: next(answers))
    cfg = tmp_path / "cli.json"
    cfg.write_text(json.dumps({"mcpServers": _servers(files_dir, tmp_path)}))
    base = ["--config", str(cfg), "--state-dir", str(tmp_path / "cli-state"), "--json"]
    d = str(files_dir)
    code = f"for n in ['t1', 't2']:\n    run_tool('fs:write_file', path={d!r} + '/' + n, content=n)\n'ok'"
    assert main(["exec", *base, "-c", code]) == 0  # [r]: approved for the run, asked once
    assert json.loads(capsys.readouterr().out)["value"] == "ok"
    assert _made(files_dir, "t*") == ["t1", "t2"]
    args = json.dumps({"path": d + "/direct.txt", "content": "d"})
    assert main(["run", "fs:write_file", "--args", args, *base]) == 0  # [y]
    assert (files_dir / "direct.txt").read_text() == "d"
    steps = json.dumps([{"tool_id": "fs:write_file", "args": {"path": d + "/chain.txt", "content": "c"}}])
    assert main(["chain", "--steps", steps, *base]) == 1  # [n]: denied
    assert not (files_dir / "chain.txt").exists()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_mcp_elicitation_approves_only_what_the_question_showed(
    files_dir: Path, tmp_path: Path, mode: str
) -> None:
    # The question listed ten calls and cut arguments at 600 characters, while approving covered
    # them all: an eleventh write, or the end of a long one, was approved unseen.
    import mcp_types as types
    from mcp import Client

    asked: list[types.ElicitRequestParams] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"decision": "approve"})  # whatever was offered

    cfg = _serve_config(files_dir, tmp_path)
    d = str(files_dir)
    many = ", ".join(f"('fs:write_file', {{'path': {d!r} + '/m{i}.txt', 'content': 'x'}})" for i in range(12))
    async with Client(_stdio(cfg), mode=mode, elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
        res = await client.call_tool("execute_code", {"code": f"run_tools([{many}])\n__out = 'all'"})
        assert res.structured_content is not None and res.structured_content.get("value") == "all", res.content
        message = asked[-1].message
        assert all(f"/m{i}.txt" in message for i in range(12)), message  # every call approved was shown
        # A call too long to show whole cannot be approved here: deny and stop only; an answer
        # outside what was offered leaves the run paused.
        long = "y" * 30_000 + "THE END"
        res = await client.call_tool(
            "execute_code", {"code": f"run_tool('fs:write_file', path={d!r} + '/long.txt', content={long!r})"}
        )
        params = asked[-1]
        assert isinstance(params, types.ElicitRequestFormParams)
        offered = params.requested_schema["properties"]["decision"]["enum"]
        assert offered == ["deny", "abort"], offered
        assert "resume_execution" in params.message and "console" in params.message
        data = res.structured_content
        assert data is not None and data.get("status") == "approval_required", res.content
        assert not (files_dir / "long.txt").exists()
