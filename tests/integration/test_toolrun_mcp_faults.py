"""MCPBackend against our own fault-injection server (tests/integration/servers/fault_server.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
import structlog
from mcp_support import FAULT_SERVER, RunningServer

from toolindex import ChangeEvent, InMemoryIndex, ToolNotFoundError
from toolrun import (
    BackendUnavailableError,
    MCPBackend,
    OutputValidationError,
    ProgressEvent,
    RunResult,
    StdioServerConfig,
    ToolExecutionError,
    ToolTimeoutError,
    load_config,
)
from toolrun._child_env import NETWORK_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

HANG_S = 60
"""Seconds after which a call or a wait counts as hung: a bound for a hang, not a speed (a busy machine
stretches calls that take milliseconds here to seconds)."""

STATIC_TOOLS = {
    "echo",
    "add",
    "blocks",
    "bad_image",
    "crash",
    "hang",
    "stats",
    "echo_meta",
    "fail",
    "big",
    "add_tool",
    "remove_tool",
    "progress",
    "region",
    "whoami",
    "bad_output",
}


def fault_stdio(*extra: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FAULT_SERVER), *extra]}


@pytest.fixture(params=["stdio", "http"])
def fault(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The fault server's config entry, over stdio and over streamable HTTP."""
    if request.param == "stdio":
        return fault_stdio()
    server: RunningServer = request.getfixturevalue("fault_http")
    return {"url": server.url}


def fault_children() -> list[psutil.Process]:
    out: list[psutil.Process] = []
    for p in psutil.Process().children(recursive=True):
        try:
            cmd = p.cmdline()
        except psutil.Error:
            continue
        # The watchdog launcher in front of each stdio server carries the server's command line too.
        if str(FAULT_SERVER) in cmd and "--http" not in cmd and not any(a.endswith("_watchdog.py") for a in cmd):
            out.append(p)
    return out


async def test_lists_every_page_and_skips_the_malformed_tool(mcp_runner: Callable[..., Any]) -> None:
    async with mcp_runner({"fault": fault_stdio("--malformed", "--page-size", "4")}) as (runner, backends):
        backend: MCPBackend = backends["fault"]
        assert set(backend.tools) == STATIC_TOOLS  # four pages of four
        assert "broken_schema" in backend.skipped
        assert "inputSchema" in backend.skipped["broken_schema"]
        with pytest.raises(ToolNotFoundError):
            runner.index.get("fault:broken_schema")
        ids = {t.id for t in runner.index.list_tools(namespace="fault").tools}
        assert ids == {f"fault:{n}" for n in STATIC_TOOLS}
        # The rest of the server stays usable, output schema validated.
        res = await runner.run("fault:echo", {"text": "still here"})
        assert res.structured == {"text": "still here"}
        assert str(res.backend) == "mcp:fault/echo"


async def test_a_listing_that_never_ends_stops_at_its_size_bound(mcp_runner: Callable[..., Any]) -> None:
    # Pages of 64 KB, each with a next cursor: the listing stops once it holds 4 x maxResponseBytes
    # (1 MiB here), instead of holding up to 1,000 pages (4 GiB at the default bound).
    entry = {**fault_stdio("--endless-pages", "64"), "maxResponseBytes": 256 * 1024}
    with structlog.testing.capture_logs() as logs:
        async with mcp_runner({"fault": entry}) as (_, backends):
            backend: MCPBackend = backends["fault"]
            assert 0 < len(backend.tools) <= 1024 // 64 + 1
    [capped] = [e for e in logs if e["event"] == "mcp.list_size_cap"]
    assert capped["max_bytes"] == 4 * 256 * 1024


async def test_results_are_normalised(mcp_runner: Callable[..., Any], fault: dict[str, Any]) -> None:
    async with mcp_runner({"fault": fault}) as (runner, _):
        add = await runner.run("fault:add", {"a": 2, "b": 3})
        assert add.structured == 5  # a single JSON text block, parsed
        blocks = await runner.run("fault:blocks")
        assert blocks.structured is None
        assert [b["type"] for b in blocks.content] == ["text", "image", "audio", "resource"]
        assert blocks.content[1]["mimeType"] == "image/png"
        assert blocks.content[2]["mimeType"] == "audio/wav"
        assert blocks.content[3]["resource"]["text"] == "a note"


async def test_is_error_raises_with_the_server_text(mcp_runner: Callable[..., Any], fault: dict[str, Any]) -> None:
    async with mcp_runner({"fault": fault}) as (runner, _):
        with pytest.raises(ToolExecutionError) as ei:
            await runner.run("fault:fail", {"message": "disk is full"})
        assert ei.value.tool_id == "fault:fail"
        assert ei.value.message == "disk is full"
        assert ei.value.content == ({"type": "text", "text": "disk is full"},)


async def test_crash_mid_call_then_the_next_call_reconnects(
    mcp_runner: Callable[..., Any], fault: dict[str, Any]
) -> None:
    async with mcp_runner({"fault": fault}) as (runner, _):
        assert (await runner.run("fault:echo", {"text": "before"})).structured == {"text": "before"}
        with anyio.fail_after(HANG_S):
            with pytest.raises(BackendUnavailableError) as ei:
                await runner.run("fault:crash")
        assert ei.value.backend == "mcp:fault"
        assert "closed the connection during a call to 'crash'" in ei.value.reason
        if "command" in fault:  # over HTTP the server is gone for good: see the restart test below
            with anyio.fail_after(HANG_S):
                res = await runner.run("fault:echo", {"text": "after"})
            assert res.structured == {"text": "after"}
            stats = await runner.run("fault:stats")
            assert stats.structured["calls"] == 2  # a fresh process: echo + stats


async def test_hang_times_out_and_the_server_is_told(mcp_runner: Callable[..., Any], fault: dict[str, Any]) -> None:
    async with mcp_runner({"fault": fault}) as (runner, _):
        with anyio.fail_after(HANG_S):
            with pytest.raises(ToolTimeoutError) as ei:
                await runner.run("fault:hang", timeout=0.5)
        assert ei.value.timeout == 0.5
        # notifications/cancelled reached the server: its handler was cancelled.
        with anyio.fail_after(HANG_S):
            while (await runner.run("fault:stats")).structured["cancelled"] < 1:
                await anyio.wait_all_tasks_blocked()
        assert (await runner.run("fault:echo", {"text": "ok"})).structured == {"text": "ok"}


async def test_cancelling_the_caller_cancels_the_call(mcp_runner: Callable[..., Any]) -> None:
    async with mcp_runner({"fault": fault_stdio()}) as (runner, _):
        with anyio.fail_after(HANG_S):
            with anyio.move_on_after(0.3) as scope:
                await runner.run("fault:hang")
        assert scope.cancelled_caught
        with anyio.fail_after(HANG_S):
            while (await runner.run("fault:stats")).structured["cancelled"] < 1:
                await anyio.wait_all_tasks_blocked()


async def test_backend_timeout_without_runner_timeout() -> None:
    cfg = load_config({"mcpServers": {"fault": {**fault_stdio(), "timeout": 0.3}}}).servers["fault"]
    index = InMemoryIndex()
    async with MCPBackend("fault", cfg) as backend:
        await backend.attach(index)
        tool = index.get("fault:hang")
        with anyio.fail_after(HANG_S), pytest.raises(ToolTimeoutError):
            await backend.call(index.backends(tool.id)[0], tool, {})


async def test_progress_is_streamed(mcp_runner: Callable[..., Any], fault: dict[str, Any]) -> None:
    async with mcp_runner({"fault": fault}) as (runner, _):
        async with aclosing(runner.stream("fault:progress", {"steps": 4})) as it:
            items: list[ProgressEvent | RunResult] = [item async for item in it]
        events = [i for i in items if isinstance(i, ProgressEvent)]
        assert [(e.progress, e.total, e.message) for e in events] == [(i, 4, f"step {i}") for i in range(1, 5)]
        assert all(e.tool_id == "fault:progress" for e in events)
        last = items[-1]
        assert isinstance(last, RunResult)
        assert last.structured == {"steps": 4}


async def test_output_schema_mismatch_follows_the_policy(mcp_runner: Callable[..., Any]) -> None:
    async with mcp_runner({"fault": fault_stdio()}) as (runner, _):
        with pytest.raises(OutputValidationError) as ei:
            await runner.run("fault:bad_output")
        assert any(p.path == "$.n" for p in ei.value.problems)
    async with mcp_runner({"fault": fault_stdio()}, validation="off") as (runner, _):
        res = await runner.run("fault:bad_output")
        assert res.structured == {"n": "not a number"}


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_list_changed_updates_the_index(
    mcp_runner: Callable[..., Any], fault: dict[str, Any], protocol: str
) -> None:
    async with mcp_runner({"fault": {**fault, "protocol": protocol}}) as (runner, backends):
        index = runner.index
        events: list[ChangeEvent] = []
        changed = anyio.Event()

        def on_change(e: ChangeEvent) -> None:
            events.append(e)
            changed.set()

        unsubscribe = index.subscribe(on_change)
        await runner.run("fault:add_tool", {"name": "late_arrival"})
        with anyio.fail_after(HANG_S):
            await changed.wait()
        assert events[0].kind == "registered"
        assert events[0].tool_ids == ("fault:late_arrival",)
        assert (await runner.run("fault:late_arrival")).value == "late_arrival ran"
        assert "late_arrival" in backends["fault"].tools

        changed = anyio.Event()
        await runner.run("fault:remove_tool", {"name": "late_arrival"})
        with anyio.fail_after(HANG_S):
            await changed.wait()
        assert events[-1].kind == "unregistered"
        with pytest.raises(ToolNotFoundError):
            index.get("fault:late_arrival")
        unsubscribe()


async def test_big_result_over_http(mcp_runner: Callable[..., Any], fault_http: RunningServer) -> None:
    size = 3 * 1024 * 1024
    async with mcp_runner({"fault": {"url": fault_http.url}}) as (runner, _):
        with anyio.fail_after(HANG_S):
            res = await runner.run("fault:big", {"size": size})
        assert len(res.content) == 1
        assert len(res.content[0]["text"]) == size


async def test_200_concurrent_calls_share_one_session(mcp_runner: Callable[..., Any]) -> None:
    async with mcp_runner({"fault": fault_stdio()}) as (runner, _):
        results: dict[int, Any] = {}

        async def one(i: int) -> None:
            results[i] = (await runner.run("fault:echo", {"text": f"call-{i}"})).structured

        with anyio.fail_after(HANG_S):
            async with anyio.create_task_group() as tg:
                for i in range(200):
                    tg.start_soon(one, i)
        assert results == {i: {"text": f"call-{i}"} for i in range(200)}
        stats = await runner.run("fault:stats")
        assert stats.structured["calls"] == 201  # one process served every call
        assert len(fault_children()) == 1


async def test_concurrent_first_calls_open_one_session() -> None:
    cfg = load_config({"mcpServers": {"fault": fault_stdio()}}).servers["fault"]
    index = InMemoryIndex()
    async with MCPBackend("fault", cfg) as backend:
        # Register by hand so the first calls themselves race to connect.
        from toolindex import BackendRef, Tool

        echo = Tool(name="echo", namespace="fault", input_schema={"type": "object"})
        index.register(echo, BackendRef.mcp("fault", tool="echo"))
        ref = index.backends("fault:echo")[0]
        got: list[Any] = []

        async def one(i: int) -> None:
            got.append((await backend.call(ref, echo, {"text": str(i)})).structured)

        with anyio.fail_after(HANG_S):
            async with anyio.create_task_group() as tg:
                for i in range(20):
                    tg.start_soon(one, i)
        assert sorted(g["text"] for g in got) == sorted(str(i) for i in range(20))
        assert len(fault_children()) == 1


async def test_aclose_stops_the_process_and_is_idempotent() -> None:
    cfg = load_config({"mcpServers": {"fault": fault_stdio()}}).servers["fault"]
    backend = MCPBackend("fault", cfg)
    async with backend:
        await backend.attach(InMemoryIndex())
        assert len(fault_children()) == 1
        await backend.aclose()
        await backend.aclose()
        assert fault_children() == []
    with pytest.raises(BackendUnavailableError):
        await backend.attach(InMemoryIndex())


async def test_unentered_backend_says_how_to_start_it() -> None:
    backend = MCPBackend("fault", StdioServerConfig(command=sys.executable))
    with pytest.raises(BackendUnavailableError, match="not started"):
        await backend.attach(InMemoryIndex())


async def test_command_not_found() -> None:
    cfg = StdioServerConfig(command="definitely-not-an-mcp-server-xyz")
    async with MCPBackend("nope", cfg) as backend:
        with anyio.fail_after(HANG_S), pytest.raises(BackendUnavailableError) as ei:
            await backend.attach(InMemoryIndex())
    assert ei.value.backend == "mcp:nope"
    assert "command not found" in ei.value.reason
    assert (
        ei.value.fix
        == "install 'definitely-not-an-mcp-server-xyz', or give its full path as \"command\" (it is looked up on PATH)"
    )


async def test_server_that_exits_at_start_reports_its_stderr() -> None:
    # Quoted only when the config opts in (exposeStderr); otherwise the error points at the log.
    code = "import sys; sys.stderr.write('missing API key FOO_TOKEN\\n'); sys.exit(2)"
    for expose in (False, True):
        cfg = StdioServerConfig(command=sys.executable, args=("-c", code), exposeStderr=expose)
        async with MCPBackend("broken", cfg) as backend:
            with anyio.fail_after(HANG_S), pytest.raises(BackendUnavailableError) as ei:
                await backend.attach(InMemoryIndex())
        assert ("missing API key FOO_TOKEN" in ei.value.reason) is expose
        assert ("stderr is in the log" in ei.value.reason) is not expose


async def test_a_server_gets_the_networking_environment_and_no_other_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A "server" that writes down the environment it got, then exits before the handshake.
    network = {name: f"value of {name}" for name in NETWORK_ENV}
    for name, value in {**network, "MY_SERVICE_TOKEN": "not for servers"}.items():
        monkeypatch.setenv(name, value)
    seen: dict[bool, dict[str, str]] = {}
    for inherit in (False, True):
        out = tmp_path / f"env-{inherit}.json"
        code = f"import json, os; json.dump(dict(os.environ), open({str(out)!r}, 'w')); raise SystemExit(1)"
        cfg = StdioServerConfig(command=sys.executable, args=("-c", code), env={"OWN": "1"}, inheritEnv=inherit)
        async with MCPBackend("envdump", cfg) as backend:
            with anyio.fail_after(20), pytest.raises(BackendUnavailableError) as ei:
                await backend.attach(InMemoryIndex())
        seen[inherit] = json.loads(out.read_text())
        # Why a server that works in the shell exits here, and what to do about it.
        assert "closed the connection during the handshake" in ei.value.reason
        assert "stdio servers start with a minimal environment" in ei.value.reason
        assert ei.value.fix is not None and '"env"' in ei.value.fix and '"inheritEnv": true' in ei.value.fix
    assert {k: seen[False].get(k) for k in network} == network  # proxies, CAs, uv/pip/npm settings
    assert seen[False]["OWN"] == "1" and "MY_SERVICE_TOKEN" not in seen[False]
    assert seen[True]["MY_SERVICE_TOKEN"] == "not for servers" and seen[True]["OWN"] == "1"


async def test_silent_server_hits_the_connect_timeout() -> None:
    code = "import time; time.sleep(60)"
    cfg = load_config(
        {"mcpServers": {"mute": {"command": sys.executable, "args": ["-c", code], "connectTimeout": 1}}}
    ).servers["mute"]
    async with MCPBackend("mute", cfg) as backend:
        with anyio.fail_after(HANG_S), pytest.raises(BackendUnavailableError) as ei:
            await backend.attach(InMemoryIndex())
    assert "no MCP handshake within 1 s" in ei.value.reason
    assert ei.value.fix is not None and '"connectTimeout"' in ei.value.fix


async def test_http_connection_refused() -> None:
    from mcp_support import free_port

    cfg = load_config({"mcpServers": {"gone": {"url": f"http://127.0.0.1:{free_port()}/mcp"}}}).servers["gone"]
    async with MCPBackend("gone", cfg) as backend:
        with anyio.fail_after(HANG_S), pytest.raises(BackendUnavailableError) as ei:
            await backend.attach(InMemoryIndex())
    assert "cannot reach http://127.0.0.1" in ei.value.reason


async def test_http_headers_from_config(mcp_runner: Callable[..., Any], fault_http: RunningServer) -> None:
    entry = {"url": fault_http.url, "headers": {"Authorization": "Bearer ${FAULT_TOKEN:-s3cret}"}}
    async with mcp_runner({"fault": entry}) as (runner, _):
        # The server got the header and echoes it; a result shows a configured secret masked.
        assert (await runner.run("fault:whoami")).value == "***"


async def test_mcp_param_headers_on_2026_http(mcp_runner: Callable[..., Any], fault_http: RunningServer) -> None:
    # The tool declares x-mcp-header: a 2026-07-28 HTTP server rejects a call without the header.
    async with mcp_runner({"fault": {"url": fault_http.url}}) as (runner, backends):
        assert backends["fault"].protocol_version == "2026-07-28"
        assert (await runner.run("fault:region", {"region": "eu-west"})).value == "eu-west"


async def test_mcp_param_headers_learned_on_mismatch(fault_http: RunningServer) -> None:
    # Called before any listing: the server answers HEADER_MISMATCH, the backend re-lists and resends.
    from toolindex import BackendRef, Tool

    cfg = load_config({"mcpServers": {"fault": {"url": fault_http.url}}}).servers["fault"]
    region = Tool(name="region", namespace="fault", input_schema={"type": "object"})
    async with MCPBackend("fault", cfg) as backend:
        with anyio.fail_after(HANG_S):
            res = await backend.call(BackendRef.mcp("fault", tool="region"), region, {"region": "us"})
    assert res.content == ({"type": "text", "text": "us"},)


async def test_http_server_restart_is_survived(
    mcp_runner: Callable[..., Any], http_server: Callable[..., RunningServer]
) -> None:
    command = [sys.executable, str(FAULT_SERVER), "--http", "--port", "{port}"]
    first = http_server(command, ready=r"Uvicorn running on")
    async with mcp_runner({"fault": {"url": first.url}}) as (runner, _):
        with anyio.fail_after(HANG_S), pytest.raises(BackendUnavailableError):
            await runner.run("fault:crash")
        await anyio.to_thread.run_sync(first.process.wait, 10)
        http_server(command, ready=r"Uvicorn running on", port=first.port)
        with anyio.fail_after(HANG_S):
            res = await runner.run("fault:echo", {"text": "second life"})
        assert res.structured == {"text": "second life"}


async def test_attach_to_a_second_index_registers_everything() -> None:
    cfg = load_config({"mcpServers": {"fault": fault_stdio()}}).servers["fault"]
    first, second = InMemoryIndex(), InMemoryIndex()
    async with MCPBackend("fault", cfg) as backend:
        await backend.attach(first)
        tools = await backend.attach(second)
    assert len(second) == len(first) == len(tools) == len(STATIC_TOOLS)
