"""The code-mode core: filtered views, excludes, settings, the output budget, argument checks."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import anyio
import pytest
from mcp import Client

from toolcode import (
    ConfigurationError,
    ExecuteOptions,
    InvalidArgumentsError,
    Settings,
    Toolbox,
    ToolError,
    load_settings,
)
from toolcode._door import call_exposed, exposed_description, exposed_tools
from toolcode._outcome import outcome_text
from toolcode._settings import SessionSettings
from toolcode.calls import PendingCall
from toolcode.exceptions import TypeCheckError, clip
from toolcode.models import ExecuteOutcome
from toolcode.server import CodeModeServer
from toolcode.state import RedisStateStore, Release, SQLiteStateStore, StateStore
from toolrun import LocalBackend

pytestmark = pytest.mark.anyio


def _backend() -> LocalBackend:
    local = LocalBackend()

    @local.tool(namespace="files")
    def read_file(path: str) -> str:
        """Read a text file."""
        return f"contents of {path}"

    @local.tool(namespace="files")
    def delete_file(path: str) -> str:
        """Delete a file for good."""
        return f"deleted {path}"

    @local.tool(namespace="admin")
    def reset_everything() -> str:
        """Reset every account."""
        return "reset"

    @local.tool(namespace="admin")
    def read_audit_file(day: str) -> str:
        """Read the audit file of a day."""
        return day

    @local.tool(namespace="files")
    def shout(text: str) -> str:
        """Fail with a long message."""
        raise ValueError(text)

    return local


@pytest.fixture
async def box() -> AsyncIterator[Toolbox]:
    async with Toolbox([_backend()], engine="inprocess") as b:
        yield b


async def test_excluded_tools_are_hidden_from_every_door() -> None:
    settings = Settings(exclude=("files:delete_*",), tools=("*",))
    async with Toolbox([_backend()], settings=settings, engine="inprocess") as box:
        cm = box.codemode
        assert "files:delete_file" not in [t.id for t in (await cm.list_tools()).tools]
        assert all(h.id != "files:delete_file" for h in (await cm.search_tools("delete a file")).hits)
        with pytest.raises(ToolError) as ei:
            await cm.run_tool("files:delete_file", {"path": "/x"})
        assert ei.value.code.value == "unknown_tool" and "delete_file" not in (ei.value.hint or "")
        # Caught by the check before the run, and at run time when the check is off.
        out = await cm.execute('run_tool("files:delete_file", path="/x")')
        assert not out.ok and out.error is not None and out.error.code == "type_error"
        assert out.error.diagnostics and out.error.diagnostics[0].message.startswith("unknown tool 'files:delete_file'")
        out = await cm.execute('run_tool("files:delete_file", path="/x")', options={"type_check": "off"})
        assert not out.ok and out.error is not None and out.error.code == "unknown_tool"
        async with Client(CodeModeServer(box).server) as client:
            res = await client.call_tool("describe_tool", {"tool_id": "files:delete_file"})
            assert res.is_error and res.structured_content is not None
            assert res.structured_content["error"]["code"] == "unknown_tool"


@pytest.mark.parametrize("type_check", ["strict", "off"])
async def test_a_view_never_suggests_a_tool_the_caller_may_not_use(box: Toolbox, type_check: str) -> None:
    # Before the run (the check's "did you mean") and during it (the error's hint) alike.
    opts = {"allowed_namespaces": ["files"], "type_check": type_check}
    out = await box.codemode.execute('run_tool("admin:read_audit_fil", day="x")', options=opts)
    assert out.error is not None and out.error.code == ("type_error" if type_check == "strict" else "unknown_tool")
    assert "admin:read_audit_file" not in json.dumps(out.model_dump()), out
    assert "files:read_file" in out.error.message
    out = await box.codemode.execute('describe_tool("read_audit_file")', options=opts)
    assert out.error is not None and "admin" not in json.dumps(out.model_dump())
    # Without the filter the same typo is answered with the admin tool.
    out = await box.codemode.execute('run_tool("admin:read_audit_fil", day="x")', options={"type_check": type_check})
    assert out.error is not None and "admin:read_audit_file" in out.error.message
    out = await box.codemode.execute("list_namespaces()['namespaces']", options=opts)
    assert out.value == [{"name": "files", "tool_count": 3, "unavailable": None}]


async def test_the_output_budget_holds_for_everything_a_snippet_controls(box: Toolbox) -> None:
    budget = 2_000
    huge_id = "x" * 40_000_000
    snippets = [
        # A 40 MB tool id, echoed by the failure.
        f"run_tool({huge_id!r})",
        # A 1 MB exception message.
        "raise ValueError('m' * 1_000_000)",
        # A tool failure with a 1 MB message, caught, then a big value and stdout.
        "try:\n    run_tool('files:shout', text='e' * 1_000_000)\nexcept ToolError:\n    pass\n"
        "print('p' * 100_000)\n__out = ['v' * 1000] * 100",
        # Many failing calls with long messages, traced in full.
        "for i in range(50):\n    try:\n        run_tool('files:shout', text=str(i) * 5000)\n"
        "    except ToolError:\n        pass\n__out = 1",
    ]
    for code in snippets:
        for trace in ("summary", "full"):
            out = await box.codemode.execute(code, options={"max_output_chars": budget, "trace": trace})
            reply = json.dumps(out.model_dump(mode="json"))
            text = outcome_text(out)
            # The budget, plus the fixed framing of the reply (keys, codes, summary of a few failures).
            assert len(reply) < budget + 3_000, (code[:40], trace, len(reply))
            assert len(text) < budget + 3_000, (code[:40], trace, len(text))


async def test_a_result_carries_the_call_line_only_when_something_failed_was_cut_or_it_was_asked(
    box: Toolbox,
) -> None:
    # What the MCP server's client reads: the value alone when all went well.
    async with Client(CodeModeServer(box).server) as client:

        async def read(code: str, **options: object) -> tuple[str, dict[str, object]]:
            res = await client.call_tool("execute_code", {"code": code, "options": options})
            assert res.structured_content is not None
            return "".join(getattr(b, "text", "") for b in res.content), res.structured_content

        text, structured = await read("__out = run_tool('files:read_file', path='a')")
        assert text == '"contents of a"'
        calls = {"count": 1, "failed": 0, "failures": []}  # no empty stdout, null error, [] truncated...
        assert structured == {"ok": True, "value": "contents of a", "status": "ok", "calls": calls, "duration_ms": ANY}
        text, _ = await read("__out = 42", trace="summary")
        assert text.startswith("42\n[0 tool calls, ") and text.endswith(" ms]")
        text, structured = await read(
            "try:\n    run_tool('files:shout', text='no')\nexcept ToolError:\n    pass\n__out = 1"
        )
        assert text.startswith("1\n[1 tool call, 1 failed: files:shout (tool_error), ")
        assert structured["calls"] == {"count": 1, "failed": 1, "failures": [ANY]}
        text, _ = await read("__out = 'v' * 500", max_output_chars=100)
        assert "[truncated result" in text and text.endswith(" ms]")
        # A trace cut from the structured result (trace not asked for) is no output of the model's.
        many = "for i in range(60):\n    run_tool('files:read_file', path='x' * 40)\n__out = 1"
        text, structured = await read(many, max_output_chars=1_000)
        assert structured["truncated"] == ["trace"] and text == "1"
        text, _ = await read("__out = 1 / 0")
        assert text.startswith("error [runtime_error]") and text.endswith(" ms]")


async def test_invalid_arguments_are_errors_with_a_code_at_every_door(box: Toolbox) -> None:
    cm = box.codemode
    for call in (
        lambda: cm.search_tools("x" * 5_000),
        lambda: cm.search_tools("files", limit=float("inf")),
        lambda: cm.search_tools("files", detail="everything"),
        lambda: cm.list_tools(limit=0),
        lambda: cm.describe_tool([]),
        lambda: cm.run_chain([{"tool_id": "files:read_file", "colour": "red"}]),
        lambda: cm.run_tool("files:read_file", ["not", "a", "dict"]),
        lambda: cm.run_tool("files:read_file", {"path": "/x"}, timeout=-1),
    ):
        with pytest.raises(InvalidArgumentsError) as ei:
            await call()
        assert ei.value.code.value == "invalid_arguments" and ei.value.field
    out = await cm.execute("1", options={"timeout": "soon"})
    assert out.error is not None and out.error.code == "invalid_arguments" and "options.timeout" in out.error.message
    out = await cm.execute("   ")
    assert out.error is not None and out.error.code == "invalid_arguments"


async def test_ceilings_bind_callers_of_the_mcp_door(box: Toolbox) -> None:
    limited = box.codemode.with_ceilings(ExecuteOptions(timeout=10, max_tool_calls=5))
    out = await limited.execute("1", options={"timeout": 0})
    assert out.error is not None and out.error.code == "invalid_arguments" and "maximum" in out.error.message
    out = await limited.execute("1", options={"max_tool_calls": 5})
    assert out.ok and out.value == 1
    assert (await box.codemode.execute("1", options={"timeout": 0})).ok  # the operator's own door: no ceiling


async def test_options_given_again_are_checked_alike_and_each_value_as_what_it_is(box: Toolbox) -> None:
    # Options are parsed once per distinct value: a refused one is refused each time, and values a
    # dict takes for one key (1, 1.0, True) are each parsed as what they are.
    limited = box.codemode.with_ceilings(ExecuteOptions(timeout=10, max_tool_calls=5))
    two_calls = "run_tool('files:read_file', path='a')\nrun_tool('files:read_file', path='b')"
    for _ in range(2):
        refused = await limited.execute("1", options={"timeout": 0})
        assert refused.error is not None and "maximum" in refused.error.message
        for one in (1, 1.0, True):
            stopped = await limited.execute(two_calls, options={"max_tool_calls": one})
            assert stopped.error is not None and stopped.error.code == "tool_call_limit", one
        bad = await limited.execute("1", options={"max_tool_calls": 1.5})
        assert bad.error is not None and "options.max_tool_calls" in bad.error.message
        assert (await limited.execute(two_calls, options={"max_tool_calls": 2})).ok
        hidden = await limited.execute(two_calls, options={"allowed_namespaces": ["admin"]})
        assert hidden.error is not None and "unknown tool 'files:read_file'" in hidden.error.message
        assert (await limited.execute(two_calls, options={"allowed_namespaces": ("files",)})).ok


async def test_a_doors_clients_are_bound_by_finite_ceilings_unless_the_operator_lifts_them() -> None:
    # Without ceilings any client could switch its run's timeout off and hold workers without end.
    async def asks(settings: Settings, **options: object) -> str | None:
        async with Toolbox([_backend()], settings=settings, engine="inprocess") as box:
            async with Client(CodeModeServer(box).server) as client:
                res = await client.call_tool("execute_code", {"code": "__out = 1", "options": options})
                assert res.structured_content is not None
                error = res.structured_content.get("error")
                return None if error is None else f"{error['code']}: {error['message']}"

    default = Settings()
    for over in ({"timeout": 0}, {"timeout": 301}, {"max_tool_calls": None}, {"max_output_chars": 1_000_001}):
        refused = await asks(default, **over)
        assert refused is not None and refused.startswith("invalid_arguments") and "maximum" in refused, over
    assert await asks(default, timeout=300, max_tool_calls=10_000, max_chain_steps=1_000) is None
    # A ceiling the config leaves out keeps its default; 0 lets clients ask for no limit; null lifts them all.
    raised = Settings.model_validate({"max_limits": {"timeout": 0}})
    assert await asks(raised, timeout=0) is None
    assert await asks(raised, max_tool_calls=0) is not None
    assert await asks(Settings.model_validate({"max_limits": None}), timeout=0, max_tool_calls=0) is None
    # Without max_limits in the config, a client may ask for what runs get unasked there.
    longer = Settings.model_validate({"limits": {"timeout": 600, "max_tool_calls": 0}})
    assert await asks(longer, timeout=600, max_tool_calls=0) is None
    assert await asks(longer, timeout=601) is not None


async def test_the_unsandboxed_engine_says_so_in_the_server_instructions(box: Toolbox) -> None:
    server = CodeModeServer(box)
    assert "without a sandbox" in (server.server.instructions or "")
    async with Toolbox([_backend()]) as sandboxed:
        assert "sandbox" not in (CodeModeServer(sandboxed).server.instructions or "")


async def test_exposed_name_collisions_are_reported_at_start() -> None:
    local = LocalBackend()

    @local.tool(namespace="a", name="x__b")
    def one() -> str:
        """One."""
        return "1"

    @local.tool(namespace="a__x", name="b")
    def two() -> str:
        """Two."""
        return "2"

    async with Toolbox([local], engine="inprocess") as box:
        server = CodeModeServer(box, expose=["*"])
        # Both stay reachable, each under a name of its own that does not depend on the other.
        names = [n for n in server.tool_names() if n.startswith("a")]
        assert len(names) == 2 and all(n.startswith("a__x__b_") and len(n) == len("a__x__b_") + 6 for n in names)
        assert {server.door.exposed()[n].id for n in names} == {"a:x__b", "a__x:b"}
        assert len(server.collisions) == 2 and all("'a__x__b' is taken" in c for c in server.collisions)
        replies = {(await call_exposed(box.codemode, server.door.exposed()[n], {})).text for n in names}
        assert replies == {'"1"', '"2"'}  # the JSON of each tool's own value
        alone = CodeModeServer(box, expose=["a:*"])  # without the other, the plain name
        assert [n for n in alone.tool_names() if n.startswith("a")] == ["a__x__b"]


async def test_exposed_names_follow_each_doors_rules_and_never_take_a_code_mode_tools_name() -> None:
    local = LocalBackend()
    for namespace, name in [("ns", "v1.get"), ("ns", "x" * 125), ("ns", "x" * 70), ("ns", "ok-1"), ("run", "tool")]:
        local.add(lambda: "1", namespace=namespace, name=name, description="A tool.")

    async with Toolbox([local], engine="inprocess") as box:
        mcp = exposed_tools(box.codemode, ["*"], reserved={"run__tool"})
        openai = exposed_tools(box.codemode, ["ns:*"], max_name=64, punctuation="_-")
        none = exposed_tools(box.codemode, [])

    # MCP: ASCII letters, digits and _.- up to 128 characters.
    assert [n for n in mcp.tools if n.startswith("ns")] == ["ns__ok-1", "ns__v1.get", "ns__" + "x" * 70]
    renamed = [n for n in mcp.tools if n.startswith("run__tool_")]
    assert len(renamed) == 1 and mcp.tools[renamed[0]].id == "run:tool"
    assert sorted(mcp.collisions) == [
        f"ns:{'x' * 125}: {clip('ns__' + 'x' * 125, 80)!r} is not a valid tool name here; not exposed",
        f"run:tool is exposed as {renamed[0]!r}: 'run__tool' is taken (a code-mode tool's name)",
    ]
    # OpenAI function names: no '.', at most 64 characters.
    assert list(openai.tools) == ["ns__ok-1"]
    assert len(openai.collisions) == 3  # v1.get, and both long names
    assert exposed_description(mcp.tools["ns__ok-1"]) == "[ns:ok-1] A tool."
    assert not none.tools and not none.collisions


def test_settings_name_unknown_keys_and_never_echo_values(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as ei:
        load_settings({"toolcode": {"limits": {"timeout": 5, "timout": 7}}})
    assert ei.value.field == "toolcode.limits.timout" and "unknown key" in str(ei.value)
    with pytest.raises(ConfigurationError) as ei:
        load_settings({"toolcode": {"limits": {"timeout": "s3cr3t-value"}}})
    assert ei.value.field == "toolcode.limits.timeout" and "s3cr3t-value" not in str(ei.value)
    s = load_settings({"toolcode": {"limits": {"timeout": "${T:-12}"}, "exclude": ["${NS}:*"]}}, env={"NS": "files"})
    assert s.limits.timeout == 12 and s.exclude == ("files:*",)
    with pytest.raises(ConfigurationError) as ei:
        load_settings({"toolcode": {"tools": ["search_tools", "rm_rf"]}}).meta_tools()
    assert "rm_rf" in str(ei.value)
    cfg = tmp_path / "mcp.json"
    cfg.write_bytes(b'{"mcpServers": {}, "toolcode": {"limits": {"timeout": \xff}}}')
    with pytest.raises(ConfigurationError, match="UTF-8"):
        load_settings(cfg)


async def test_from_config_reads_the_toolcode_section_and_per_server_excludes(tmp_path: Path) -> None:
    import sys

    cfg = tmp_path / "mcp.json"
    server = {"command": sys.executable, "args": ["-m", "mcp_server_time"], "exclude": ["convert_*"]}
    cfg.write_text(json.dumps({"mcpServers": {"time": server}, "toolcode": {"limits": {"max_tool_calls": 3}}}))
    async with Toolbox.from_config(cfg) as box:
        assert [t.id for t in (await box.codemode.list_tools()).tools] == ["time:get_current_time"]
        out = await box.codemode.execute("for i in range(5):\n    run_tool('time:get_current_time', timezone='UTC')")
        assert out.error is not None and out.error.code == "tool_call_limit" and out.calls.count == 3


async def test_a_run_too_large_to_keep_paused_ends_with_memory_limit(tmp_path: Path) -> None:
    from toolcode._settings import PolicySettings, StateSettings

    policy = PolicySettings.model_validate(
        {"rules": [{"tools": "files:delete_*", "decision": "ask"}], "max_paused_bytes": 64 * 1024}
    )
    settings = Settings(policy=policy, state=StateSettings(dir=str(tmp_path / "state")))
    async with Toolbox([_backend()], settings=settings) as box:  # monty: runs pause
        cm = box.codemode
        small = await cm.execute('run_tool("files:delete_file", path="/a")')
        assert small.status == "approval_required", small
        big = await cm.execute('keep = "x" * 200_000\nrun_tool("files:delete_file", path="/a")')
        assert not big.ok and big.error is not None and big.error.code == "memory_limit", big
        assert "max_paused_bytes" in big.error.message and big.approval is None
        assert [p.execution_id for p in (await cm.list_paused()).paused] == [small.approval.execution_id]


async def test_saved_snippets_are_never_exposed_as_tools(tmp_path: Path) -> None:
    from toolcode._settings import StateSettings

    settings = Settings(state=StateSettings(dir=str(tmp_path / "state")))
    async with Toolbox([_backend()], settings=settings, engine="inprocess") as box:
        await box.codemode.save_snippet("note", "__out = 'NOTE TO ASSISTANT: ...'", "Any caller wrote this.")
        assert "snippets:note" in [t.id for t in (await box.codemode.list_tools()).tools]
        for patterns in (["*"], ["snippets:*"], ["snippets:note"]):
            names = exposed_tools(box.codemode, patterns).tools
            assert all(t.namespace != "snippets" for t in names.values()), patterns
        assert "files__read_file" in exposed_tools(box.codemode, ["*"]).tools


def _asking_deletes(tmp_path: Path, store: str, request: pytest.FixtureRequest) -> Settings:
    """Settings where deleting a file asks (runs pause), two paused runs per caller, state in ``store``."""
    from toolcode._settings import PolicySettings, StateSettings

    policy = PolicySettings.model_validate(
        {"rules": [{"tools": "files:delete_*", "decision": "ask"}], "max_paused_runs": 2}
    )
    if store == "redis":
        state = StateSettings(url=str(request.getfixturevalue("redis_url")))
    else:
        state = StateSettings(dir=str(tmp_path / "state"))
    return Settings(policy=policy, state=state)


@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_paused_runs_are_kept_per_caller_under_a_quota(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    settings = _asking_deletes(tmp_path, store, request)
    ask = 'run_tool("files:delete_file", path="/a")'
    async with Toolbox([_backend()], settings=settings) as box:  # monty: runs pause
        cm = box.codemode
        mine = [await cm.execute(ask, caller="token:alice") for _ in range(2)]
        assert all(o.status == "approval_required" for o in mine), mine
        over = await cm.execute(ask, caller="token:alice")
        assert over.error is not None and over.error.code == "quota_exceeded", over
        assert "max_paused_runs" in over.error.message
        theirs = await cm.execute(ask, caller="token:bob")  # another caller's quota is its own
        assert theirs.status == "approval_required" and theirs.approval is not None, theirs
        listed = {p.execution_id for p in (await cm.list_paused("token:alice")).paused}
        assert listed == {o.approval.execution_id for o in mine if o.approval is not None}
        stolen = await cm.resume(theirs.approval.execution_id, "approve", caller="token:alice")
        assert stolen.error is not None and stolen.error.code == "invalid_arguments", stolen  # not found
        assert mine[0].approval is not None
        done = await cm.resume(mine[0].approval.execution_id, "approve", caller="token:alice")
        assert done.ok, done
        again = await cm.execute(ask, caller="token:alice")  # a decided run frees its place
        assert again.status == "approval_required", again


class _ListsMeet:
    """A replica's store whose first ``expected`` listings of ``kind`` (over every replica) wait for one another.

    So runs on several replicas each count what the store holds before any of them writes: the
    interleaving that runs pausing (or ending) at once on two replicas may get, every time.
    """

    kind = ""
    expected = 0
    arrived = 0
    everyone: anyio.Event

    async def list(self, kind: str, *, prefix: str = "", limit: int = 1000) -> list[Any]:
        cls = type(self)
        if kind == cls.kind and cls.arrived < cls.expected:
            cls.arrived += 1
            if cls.arrived == cls.expected:
                cls.everyone.set()
            with anyio.fail_after(60):  # only a hang: the other runs list within a second
                await cls.everyone.wait()
        return await super().list(kind, prefix=prefix, limit=limit)  # type: ignore[misc]


@asynccontextmanager
async def _stores_meeting(
    tmp_path: Path, store: str, request: pytest.FixtureRequest, kind: str, expected: int
) -> AsyncIterator[tuple[StateStore, StateStore]]:
    """Two stores over one SQLite file or one Redis, whose first ``expected`` listings of ``kind`` meet."""

    class SQLite(_ListsMeet, SQLiteStateStore):
        pass

    class Redis(_ListsMeet, RedisStateStore):
        pass

    meeting: type[_ListsMeet] = Redis if store == "redis" else SQLite
    meeting.kind, meeting.expected, meeting.everyone = kind, expected, anyio.Event()
    if store == "redis":
        url = str(request.getfixturevalue("redis_url"))
        stores: tuple[StateStore, StateStore] = (Redis(url), Redis(url))
    else:
        stores = (SQLite(tmp_path / "one.sqlite3"), SQLite(tmp_path / "one.sqlite3"))
    try:
        yield stores
    finally:
        for s in stores:
            await s.aclose()


@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_runs_pausing_at_once_on_two_replicas_stay_within_the_paused_quota(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    # Each counted the caller's paused runs before writing its own, none after: four runs pausing at
    # once on two replicas over one store all paused, against a quota of two.
    settings = _asking_deletes(tmp_path, store, request)
    ask = 'run_tool("files:delete_file", path="/a")'
    async with (
        _stores_meeting(tmp_path, store, request, "paused", 4) as (one_store, two_store),
        Toolbox([_backend()], settings=settings, state=one_store) as one,  # monty: runs pause
        Toolbox([_backend()], settings=settings, state=two_store) as two,
    ):
        outs: list[ExecuteOutcome] = []

        async def run(box: Toolbox) -> None:
            outs.append(await box.codemode.execute(ask, caller="token:alice"))

        async with anyio.create_task_group() as tg:
            for box in (one, two, one, two):
                tg.start_soon(run, box)
        waiting = (await one.codemode.list_paused("token:alice")).paused
        assert len(waiting) <= settings.policy.max_paused_runs, waiting
        paused = {o.approval.execution_id for o in outs if o.approval is not None}
        assert paused == {p.execution_id for p in waiting}, (outs, waiting)  # a refused run is not kept
        refused = [o for o in outs if o.approval is None]
        assert len(refused) >= 2, outs
        for o in refused:
            assert o.error is not None and o.error.code == "quota_exceeded", o
            assert "max_paused_runs" in o.error.message


@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_results_kept_at_once_on_two_replicas_stay_within_the_callers_quota(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    # Each made room for itself before writing, none after: four results kept at once on two
    # replicas over one store were all kept, against a quota of two.
    from toolcode._settings import ResultSettings

    settings = Settings(results=ResultSettings(max_per_caller=2))
    big = {"max_output_chars": 1_000}
    async with (
        _stores_meeting(tmp_path, store, request, "result", 4) as (one_store, two_store),
        Toolbox([], settings=settings, state=one_store) as one,
        Toolbox([], settings=settings, state=two_store) as two,
    ):
        refs: list[str] = []

        async def run(box: Toolbox) -> None:
            out = await box.codemode.execute("__out = 'y' * 5_000", options=big, caller="token:alice")
            assert out.ok and out.stored is not None, out
            refs.extend(s.ref for s in out.stored)

        async with anyio.create_task_group() as tg:
            for box in (one, two, one, two):
                tg.start_soon(run, box)
        assert len(refs) == 4, refs
        readable: list[str] = []
        for ref in refs:
            try:
                await one.codemode.read_result(ref, 0, 10, caller="token:alice")
            except InvalidArgumentsError:  # dropped to make room
                continue
            readable.append(ref)
        assert 1 <= len(readable) <= 2, readable
        assert len(await one_store.list("result", limit=100)) == len(readable)


@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_decided_outcomes_are_kept_within_the_callers_paused_quota_across_replicas(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    # Every decision kept the outcome it led to for an hour, counted against no quota: a caller
    # approving its own run's questions in a loop grew the shared store without bound.
    from toolcode._paused import _DECIDED_KIND  # pyright: ignore[reportPrivateUsage]
    from toolcode._sessions import owner_of

    settings = _asking_deletes(tmp_path, store, request)
    loop = "for i in range(10):\n    run_tool('files:delete_file', path=str(i))\n__out = 'done'"
    # Two replicas over one store (monty: runs pause).
    async with Toolbox([_backend()], settings=settings) as one, Toolbox([_backend()], settings=settings) as two:
        assert one.stores is not None
        bob = await one.codemode.execute("run_tool('files:delete_file', path='/b')", caller="token:bob")
        assert bob.approval is not None, bob
        assert (await two.codemode.resume(bob.approval.execution_id, "approve", caller="token:bob")).ok
        out = await one.codemode.execute(loop, caller="token:alice")
        decided: list[str] = []
        for n in range(6):
            assert out.approval is not None, out
            decided.append(out.approval.execution_id)
            out = await (one, two)[n % 2].codemode.resume(decided[-1], "approve", caller="token:alice")
        store_ = one.stores.paused.store
        kept = await store_.list(_DECIDED_KIND, prefix=owner_of("token:alice") + "/")
        assert len(kept) == settings.policy.max_paused_runs, kept
        # The newest answer again with the outcome each led to; an older one was dropped.
        assert out.approval is not None
        again = await one.codemode.resume(decided[-1], "approve", caller="token:alice")
        assert again.approval is not None and again.approval.execution_id == out.approval.execution_id, again
        gone = await two.codemode.resume(decided[0], "approve", caller="token:alice")
        assert gone.error is not None and gone.error.code == "invalid_arguments", gone
        # Another caller's quota is its own: alice's decisions dropped none of bob's.
        assert (await one.codemode.resume(bob.approval.execution_id, "approve", caller="token:bob")).ok


async def test_an_aborted_run_names_who_aborted_it_in_words(tmp_path: Path) -> None:
    from toolcode._settings import PolicySettings, StateSettings

    policy = PolicySettings.model_validate({"rules": [{"tools": "files:delete_*", "decision": "ask"}]})
    settings = Settings(policy=policy, state=StateSettings(dir=str(tmp_path / "state")))
    ask = 'run_tool("files:delete_file", path="/a")'
    async with Toolbox([_backend()], settings=settings) as box:  # monty: runs pause
        cm = box.codemode
        for caller, by in ((None, "a person"), ("token:alice", "person:token:alice")):
            out = await cm.execute(ask, caller=caller)
            assert out.approval is not None, out
            aborted = await cm.resume(out.approval.execution_id, "abort", caller=caller)
            assert aborted.error is not None and aborted.error.code == "approval_denied", aborted
            assert f"the run was aborted by {by} before this call" in aborted.error.message


async def test_a_saved_snippet_is_changed_only_by_its_owner_or_an_operator(tmp_path: Path) -> None:
    from toolcode._settings import PolicySettings, StateSettings

    policy = PolicySettings.model_validate({"operators": ["token:op"]})
    settings = Settings(policy=policy, state=StateSettings(dir=str(tmp_path / "state")))
    async with Toolbox([_backend()], settings=settings, engine="inprocess") as box:
        cm = box.codemode
        await cm.save_snippet("report", "__out = 'alice'", "Alice's report.", caller="token:alice")
        with pytest.raises(InvalidArgumentsError) as info:
            await cm.save_snippet("report", "__out = 'bob'", "Bob's report.", caller="token:bob")
        assert info.value.field == "name" and "another caller" in str(info.value)
        with pytest.raises(InvalidArgumentsError):
            await cm.delete_snippet("report", caller="token:bob")
        # Nor from inside a run of bob's: the snippet global goes the same way.
        out = await cm.execute("save_snippet('report', \"__out = 'bob'\", 'Bob.')", caller="token:bob")
        assert out.error is not None and "another caller" in out.error.message, out
        assert (await cm.run_tool("snippets:report", {}, caller="token:alice")).value == "alice"
        await cm.save_snippet("report", "__out = 'alice 2'", "Alice's report.", caller="token:alice")
        await cm.save_snippet("report", "__out = 'op'", "Reviewed.", caller="token:op")  # an operator may
        assert await cm.delete_snippet("report", caller="token:op")


async def test_a_snippet_saved_from_a_run_counts_against_its_callers_quota(tmp_path: Path) -> None:
    from toolcode._settings import SnippetSettings, StateSettings

    settings = Settings(state=StateSettings(dir=str(tmp_path / "state")), snippets=SnippetSettings(max_per_caller=2))
    async with Toolbox([_backend()], settings=settings, engine="inprocess") as box:
        cm = box.codemode
        await cm.save_snippet("one", "__out = 1", "One.", caller="token:alice")
        save = "save_snippet('{}', '__out = 2', 'Another.')"
        assert (await cm.execute(save.format("two"), caller="token:alice")).error is None
        over = await cm.execute(save.format("three"), caller="token:alice")
        assert over.error is not None and "max_per_caller" in over.error.message, over
        assert [s.name for s in (await cm.list_snippets(caller="token:alice")).snippets] == ["one", "two"]
        assert (await cm.execute(save.format("two"), caller="token:alice")).error is None  # a new version of one kept


async def test_with_the_check_off_a_snippet_is_saved_unchecked_at_every_door(tmp_path: Path) -> None:
    from toolcode._settings import StateSettings

    on = Settings(state=StateSettings(dir=str(tmp_path / "on")))
    off = Settings(state=StateSettings(dir=str(tmp_path / "off")), limits=ExecuteOptions(type_check="off"))
    code = "__out = run_tool('files:read_file', path=1)"  # the check refuses it (path is a str)
    async with Toolbox([_backend()], settings=on, engine="inprocess") as box:
        with pytest.raises(TypeCheckError):
            await box.codemode.save_snippet("checked", code, "Read a file.")
    async with Toolbox([_backend()], settings=off, engine="inprocess") as box:
        cm = box.codemode
        await cm.save_snippet("unchecked", code, "Read a file.")
        out = await cm.execute(f"save_snippet('unchecked2', {code!r}, 'Read a file.')")
        assert out.error is None, out
        assert [s.name for s in (await cm.list_snippets()).snippets] == ["unchecked", "unchecked2"]


async def test_an_operator_never_finds_or_runs_another_callers_private_snippet(tmp_path: Path) -> None:
    # Run by an operator, a caller's snippet would act with the operator's reach (every caller's
    # snippets, results and runs): it ranked first in the operator's search and ran unasked.
    from toolcode._settings import PolicySettings, StateSettings

    policy = PolicySettings.model_validate({"operators": ["token:op"]})
    settings = Settings(policy=policy, state=StateSettings(dir=str(tmp_path / "state")))
    async with Toolbox([_backend()], settings=settings, engine="inprocess") as box:
        cm = box.codemode
        await cm.save_snippet("count_open_tickets", "__out = 'bob ran'", "Count open tickets.", caller="token:bob")
        await cm.save_snippet("shared_count", "__out = 'shared'", "Count tickets.", caller="token:op", shared=True)
        hits = [h.id for h in (await cm.search_tools("count open tickets", caller="token:op")).hits]
        assert "snippets:count_open_tickets" not in hits and "snippets:shared_count" in hits, hits
        ran = await cm.execute("__out = run_tool('snippets:count_open_tickets', {})", caller="token:op")
        assert ran.error is not None and "unknown tool 'snippets:count_open_tickets'" in ran.error.message, ran
        with pytest.raises(ToolError) as info:
            await cm.run_tool("snippets:count_open_tickets", {}, caller="token:op")
        assert info.value.code == "unknown_tool"
        assert (await cm.run_tool("snippets:count_open_tickets", {}, caller="token:bob")).value == "bob ran"
        # The operator still manages every caller's snippets.
        listed = [s.name for s in (await cm.list_snippets(caller="token:op")).snippets]
        assert listed == ["count_open_tickets", "shared_count"], listed
        assert await cm.delete_snippet("count_open_tickets", caller="token:op")


async def test_approving_a_quarantined_definition_is_in_the_audit_log(tmp_path: Path) -> None:
    # Keeping a tool blocked was logged, approving it was not: no history of who let which definition through.
    from contextlib import aclosing

    from toolcode._audit import tool_hash
    from toolcode._settings import PolicySettings, StateSettings

    policy = PolicySettings.model_validate({"quarantine": True})
    settings = Settings(policy=policy, state=StateSettings(dir=str(tmp_path / "state")))
    async with Toolbox([_backend()], settings=settings, engine="inprocess") as box:
        digest_now = box.codemode.quarantined_tools().digests()["files:read_file"]
        approved = (await box.codemode.approve_tools({"files:read_file": digest_now}, by="person:token:ops")).approved
        assert approved == ["files:read_file"]
        assert box.stores is not None
        async with aclosing(box.stores.audit.newest()) as entries:
            logged = [e async for e in entries]
    digest = tool_hash(box.index.get("files:read_file"))
    assert [(e["tool_id"], e["decision"], e["decided_by"], e.get("args")) for e in logged] == [
        ("files:read_file", "approved", "person:token:ops", {"definition": digest})
    ]


def test_an_approval_names_each_digest_in_its_one_form_or_is_refused_naming_the_tool() -> None:
    # A digest outside ASCII reached hmac.compare_digest and raised a TypeError, not invalid_arguments.
    from toolcode._approval_request import approval_request
    from toolcode.exceptions import InvalidArgumentsError

    good = "0b48041bbd8223ac1e06ed4d5cc6a72f"
    assert approval_request({"ns:t": good}) == ({"ns:t": good}, [])
    assert approval_request([f"ns:t@{good}", "ns:*", "@scope/pkg:*"]) == ({"ns:t": good}, ["ns:*", "@scope/pkg:*"])
    assert approval_request(f"@scope/pkg:t@{good}") == ({"@scope/pkg:t": good}, [])
    for bad in ("\u00e9" * 32, good[:31] + "\u0661", good.upper(), good[:31], good + "0", good + "\n", " " + good):
        for tools, field in (({"ns:t": bad}, "tools['ns:t']"), ([f"ns:t@{bad}"], "tools[0]")):
            with pytest.raises(InvalidArgumentsError) as info:
                approval_request(tools)
            err = info.value
            assert (err.field, err.tool_id) == (field, "ns:t") and "'ns:t'" in str(err), err
            assert "32 lowercase hexadecimal" in err.reason and err.code == "invalid_arguments", err


async def test_a_session_run_that_waited_while_another_paused_is_refused_not_lost(tmp_path: Path) -> None:
    # The "a run waits in this session" check came before the session's lock, and the mark after
    # it: a run queued on the lock while another paused went through, and the paused run's state
    # overwrote its work when it was resumed.
    import anyio

    from toolcode._settings import PolicySettings, StateSettings

    policy = PolicySettings.model_validate({"rules": [{"tools": "files:delete_*", "decision": "ask"}]})
    settings = Settings(policy=policy, state=StateSettings(dir=str(tmp_path / "state")))
    async with Toolbox([_backend()], settings=settings) as box:  # monty: runs pause
        cm = box.codemode
        started = anyio.Event()

        async def on_call(record: object) -> None:
            started.set()

        first = "a = 1\nrun_tool('files:read_file', path='x')\nimport time\ntime.sleep(0.5)\n"
        first += "run_tool('files:delete_file', path='/a')"
        outs: dict[str, object] = {}

        async def pausing() -> None:
            outs["first"] = await cm.execute(first, session="s", on_tool_call=on_call)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pausing)
            await started.wait()  # the first run holds the session
            second = await cm.execute("b = 2\n__out = b", session="s")
        paused = outs["first"]
        assert getattr(paused, "status", None) == "approval_required", paused
        assert second.error is not None and "waits for a decision" in second.error.message, second


class _Held:
    """A replica's store whose session locks it cannot take while ``held`` (another holds them, say)."""

    held = False
    tried: anyio.Event

    async def try_lock(self, name: str, *, ttl: float) -> Release | None:
        if self.held and name.startswith("session/"):
            self.tried.set()
            return None
        return await super().try_lock(name, ttl=ttl)  # type: ignore[misc]


class _HeldSQLite(_Held, SQLiteStateStore):
    pass


class _HeldRedis(_Held, RedisStateStore):
    pass


@asynccontextmanager
async def _two_replicas(
    tmp_path: Path, store: str, request: pytest.FixtureRequest, **sessions: float
) -> AsyncIterator[tuple[Toolbox, Toolbox, _Held]]:
    """Two toolboxes over one store (deleting a file asks, so runs pause); the first's session locks can be held."""
    settings = _asking_deletes(tmp_path, store, request).model_copy(update={"sessions": SessionSettings(**sessions)})
    if store == "redis":
        url = str(request.getfixturevalue("redis_url"))
        mine: _HeldSQLite | _HeldRedis = _HeldRedis(url)
        other: StateStore = RedisStateStore(url)
    else:
        mine, other = _HeldSQLite(tmp_path / "one.sqlite3"), SQLiteStateStore(tmp_path / "one.sqlite3")
    mine.tried = anyio.Event()
    try:
        async with Toolbox([_backend()], settings=settings, state=mine) as one:  # monty: runs pause
            async with Toolbox([_backend()], settings=settings, state=other) as two:
                yield one, two, mine
    finally:
        await mine.aclose()
        await other.aclose()


_PAUSING = "log.append('p')\nrun_tool('files:delete_file', path='/a')\nlog.append('p2')\n__out = len(log)"


@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_runs_of_a_session_while_its_paused_run_is_resumed_are_refused_or_kept(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    # Resuming took the run and removed its session's mark before it held the session: runs of the
    # session that came in that gap (on another replica, or while it waited for the session's lock)
    # were answered ok, and the resumed run's state then overwrote what they did.
    async with _two_replicas(tmp_path, store, request) as (one, two, held):
        await one.codemode.execute("log = []", session="s")
        paused = await one.codemode.execute(_PAUSING, session="s")
        assert paused.approval is not None, paused
        eid = paused.approval.execution_id
        resumed: list[ExecuteOutcome] = []
        meanwhile: dict[str, ExecuteOutcome] = {}

        async def run(tag: str) -> None:
            meanwhile[tag] = await two.codemode.execute(f"log.append({tag!r})", session="s")

        held.held = True  # the resume on `one` waits for the session while runs on `two` come in
        async with anyio.create_task_group() as tg:

            async def resume() -> None:
                resumed.append(await one.codemode.resume(eid, "approve"))

            tg.start_soon(resume)
            with anyio.fail_after(60):  # bounds a hang only
                await held.tried.wait()
            async with anyio.create_task_group() as runs:
                for i in range(4):
                    runs.start_soon(run, f"q{i}")
            held.held = False
        assert resumed[0].ok and resumed[0].value == 2, resumed
        log = (await two.codemode.execute("__out = log", session="s")).value
        for tag, out in meanwhile.items():
            refused = out.error is not None and out.error.code in ("session_limit", "busy")
            assert refused or (out.ok and tag in log), (tag, out, log)
        assert log[:2] == ["p", "p2"] or log[-2:] == ["p", "p2"], log


@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_a_resume_that_cannot_hold_the_session_leaves_the_run_waiting(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    # The session's lock stays taken past queue_timeout (deterministically: the gate is never opened
    # while it waits): the run is not taken, the session keeps refusing, a later resume continues it.
    async with _two_replicas(tmp_path, store, request, queue_timeout=0.2) as (one, two, held):
        paused = await one.codemode.execute("log = []\n" + _PAUSING, session="s")
        assert paused.approval is not None, paused
        eid = paused.approval.execution_id
        held.held = True
        busy = await one.codemode.resume(eid, "approve")
        assert busy.error is not None and busy.error.code == "busy", busy
        held.held = False
        assert [p.execution_id for p in (await two.codemode.list_paused()).paused] == [eid]
        refused = await two.codemode.execute("log.append('q')", session="s")
        assert refused.error is not None and refused.error.code == "session_limit", refused
        done = await two.codemode.resume(eid, "deny")  # a denied call raises in the snippet: it ends there
        assert done.error is not None and done.error.code == "approval_denied", done
        assert (await one.codemode.resume(eid, "approve")) == done  # decided: the same outcome again
        after = await two.codemode.execute("log.append('q')\n__out = log", session="s")
        assert after.ok and after.value == ["p", "q"], after


@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_a_second_resume_of_a_run_being_resumed_is_busy_at_once(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    # The second resume waited for the session's lock, that is for the whole first resume (or
    # queue_timeout), before it learned that the run was taken: here the first never ends until
    # the second has answered, on this replica and on another.
    async with _two_replicas(tmp_path, store, request, queue_timeout=600) as (one, two, held):
        paused = await one.codemode.execute("log = []\n" + _PAUSING, session="s")
        assert paused.approval is not None, paused
        eid = paused.approval.execution_id
        held.held = True  # the first resume waits for the session until both others have answered
        async with anyio.create_task_group() as tg:
            first: list[ExecuteOutcome] = []

            async def resume() -> None:
                first.append(await one.codemode.resume(eid, "approve"))

            tg.start_soon(resume)
            with anyio.fail_after(60):  # bounds a hang only (without the fix: the first resume's whole run)
                await held.tried.wait()
                seconds = [await one.codemode.resume(eid, "approve"), await two.codemode.resume(eid, "deny")]
            held.held = False
        for second in seconds:
            assert second.error is not None and second.error.code == "busy", second
            assert eid in second.error.message and "being resumed" in second.error.message, second.error
        assert first[0].ok and first[0].value == 2, first  # resumed once, by the first request
        after = await two.codemode.execute("__out = log", session="s")
        assert after.ok and after.value == ["p", "p2"], after


async def test_a_paused_run_never_overwrites_a_session_written_while_it_waited(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Should a run of the session get in while one waits (its mark lost), resuming the waiting run
    # must not replace that run's work with its own snapshot: it ends, loudly, and the session keeps it.
    from toolcode._paused import _SESSION_KIND as MARK  # pyright: ignore[reportPrivateUsage]
    from toolcode._sessions import owner_of

    settings = _asking_deletes(tmp_path, "sqlite", request)
    async with Toolbox([_backend()], settings=settings) as box:  # monty: runs pause
        cm = box.codemode
        assert box.stores is not None
        paused = await cm.execute("log = []\n" + _PAUSING, session="s")
        assert paused.approval is not None, paused
        assert await box.stores.paused.store.delete(MARK, f"{owner_of(None)}/s")
        assert (await cm.execute("log = ['other']", session="s")).ok
        out = await cm.resume(paused.approval.execution_id, "approve")
        assert out.error is not None and out.error.code == "session_limit", out
        assert "runs_while_paused" in out.error.message and "was not continued" in out.error.message
        assert await cm.resume(paused.approval.execution_id, "approve") == out  # decided: ended, not waiting
        after = await cm.execute("__out = log", session="s")
        assert after.ok and after.value == ["other"], after
        assert (await cm.list_paused()).paused == []


async def test_a_person_is_asked_only_about_a_call_that_can_be_made(tmp_path: Path) -> None:
    # Arguments computed at run time that the tool's schema refuses paused the run and asked a
    # person, who approved a call that then failed with invalid_arguments.
    from toolcode._settings import PolicySettings, StateSettings

    policy = PolicySettings.model_validate({"rules": [{"tools": "files:delete_*", "decision": "ask"}]})
    settings = Settings(policy=policy, state=StateSettings(dir=str(tmp_path / "state")))
    async with Toolbox([_backend()], settings=settings) as box:  # monty: runs pause
        cm = box.codemode
        out = await cm.execute("run_tool('files:delete_file', path=input['p'])", input={"p": ["/a"]})
        assert out.status != "approval_required" and out.error is not None, out
        assert "files:delete_file" in out.error.message and "path" in out.error.message
        with pytest.raises(ToolError) as info:  # a door's direct call: refused for its arguments, not asked about
            await cm.run_tool("files:delete_file", {}, caller="token:alice")
        assert info.value.code == "invalid_arguments", info.value
        good = await cm.execute("run_tool('files:delete_file', path=input['p'])", input={"p": "/a"})
        assert good.status == "approval_required"  # a call that can be made is asked about, as before
        # A chain's step that gets its arguments from earlier steps is judged with them filled in, not
        # refused for its own (no path): a run cannot stop inside the chain, so it fails, not made ...
        steps = [
            {"tool": "files:read_file", "args": {"path": "x"}},
            {"tool": "files:delete_file", "use_previous": "path"},
        ]
        planned = await cm.execute(f"__out = run_chain({steps!r})")
        assert planned.ok and planned.value["steps"][1]["error"]["code"] == "approval_required", planned

        # ... and a door's person is asked about it as it is made, with the path it gets.
        asked: list[dict[str, Any]] = []

        async def ask(pending: Sequence[PendingCall], line: int | None) -> tuple[str, str]:
            asked.extend(dict(p.args) for p in pending)
            return "approve", "person"

        done = await cm.run_chain(steps, ask=ask)
        assert asked == [{"path": "contents of x"}] and done.steps[1].value == "deleted contents of x", done


async def test_a_saved_snippets_failure_keeps_its_own_code(tmp_path: Path) -> None:
    # Every failure inside a saved snippet reached its caller as tool_error, its code only in the text.
    from toolcode._settings import StateSettings

    settings = Settings(state=StateSettings(dir=str(tmp_path / "state")))
    async with Toolbox([_backend()], settings=settings, engine="inprocess") as box:
        cm = box.codemode
        await cm.save_snippet("reader", "__out = run_tool('files:read_file', path=input['p'])", "Read a file.")
        await cm.save_snippet("picky", "__out = {}['missing']", "Fails.")
        catch = "try:\n    run_tool('snippets:{}', {})\nexcept ToolError as e:\n    __out = tool_error_info(e)"
        bad_args = (await cm.execute(catch.format("reader", "{'p': 3}"))).value
        assert bad_args["code"] == "invalid_arguments" and "line 1 of the saved snippet" in bad_args["message"]
        raised = (await cm.execute(catch.format("picky", "{}"))).value
        assert raised["code"] == "runtime_error" and "KeyError" in raised["message"], raised
        with pytest.raises(ToolError) as info:  # at a door too
            await cm.run_tool("snippets:reader", {"p": 3})
        assert info.value.code == "invalid_arguments"


async def test_a_snippet_that_calls_itself_saves_in_either_call_style(tmp_path: Path) -> None:
    from toolcode._settings import StateSettings

    settings = Settings(state=StateSettings(dir=str(tmp_path / "state")))
    async with Toolbox([_backend()], settings=settings, engine="inprocess") as box:
        cm = box.codemode
        for name, call in (("rt", "run_tool('snippets:rt', {'d': 1})"), ("mod", "snippets.mod(d=1)")):
            code = f"from tools import snippets\nif input.get('d', 0) < 1:\n    __out = {call}\n"
            code += "else:\n    __out = 'bottom'"
            await cm.save_snippet(name, code, "Calls itself once.")
            assert (await cm.run_tool(f"snippets:{name}", {})).value == "bottom"
        with pytest.raises(TypeCheckError):  # another snippet that does not exist is still found
            await cm.save_snippet("other", "from tools import snippets\nsnippets.nothing_here()", "Calls nothing.")


async def test_a_session_is_not_reset_while_a_run_of_it_waits_for_a_decision(tmp_path: Path) -> None:
    # The reset went through, and the resumed run's state then silently replaced it.
    from toolcode._settings import PolicySettings, StateSettings
    from toolcode.exceptions import SessionLimitError

    policy = PolicySettings.model_validate({"rules": [{"tools": "files:delete_*", "decision": "ask"}]})
    settings = Settings(policy=policy, state=StateSettings(dir=str(tmp_path / "state")))
    async with Toolbox([_backend()], settings=settings) as box:  # monty: runs pause
        cm = box.codemode
        paused = await cm.execute("a = 1\nrun_tool('files:delete_file', path='/a')", session="s")
        assert paused.approval is not None
        with pytest.raises(SessionLimitError, match="waits for a decision"):
            await cm.reset_session("s")
        await cm.resume(paused.approval.execution_id, "deny")
        assert await cm.reset_session("s")  # decided: the reset goes through


async def test_a_paused_runs_may_call_names_no_tool_the_caller_cannot_see(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # What a paused run may still call was read against the whole catalog: an id in bob's code
    # told him whether alice's private snippet of that name exists.
    settings = _asking_deletes(tmp_path, "sqlite", request)
    async with Toolbox([_backend()], settings=settings) as box:  # monty: runs pause
        cm = box.codemode
        await cm.save_snippet("merger_plan", "__out = 1", "alice's plan", caller="token:alice")
        await cm.save_snippet("bobs_notes", "__out = 2", "bob's notes", caller="token:bob")
        code = (
            "if input:\n    run_tool('snippets:merger_plan')\n    run_tool('snippets:bobs_notes')\n"
            "run_tool('files:delete_file', path='/a')"
        )
        out = await cm.execute(code, input=0, caller="token:bob", options={"type_check": "off"})
        assert out.approval is not None, out
        assert "snippets:merger_plan" not in out.approval.may_call, out.approval.may_call
        assert "snippets:bobs_notes" in out.approval.may_call, out.approval.may_call
