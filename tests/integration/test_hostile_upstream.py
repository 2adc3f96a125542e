"""A hostile upstream server (or a careless caller) must not hurt the other callers, and secrets never leak.

Drives tests/integration/servers/hostile_server.py over stdio and streamable HTTP through
``MCPBackend`` / ``DefaultRunner``. Each attack must fail cleanly (or be absorbed) while a call in
flight on the same session and a call to another server (``mcp-server-time``) still answer
promptly; the bounds are generous (the bugs took 45 s, 30 s or forever).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from mcp_support import SERVERS_DIR, RunningServer, free_port
from structlog.testing import capture_logs

import toolindex
import toolindex._index
import toolrun._config
import toolrun._mcp
from toolindex import BackendRef, ChangeEvent, InMemoryIndex, Tool
from toolrun import (
    DEFAULT_MAX_RESPONSE_BYTES,
    BackendUnavailableError,
    InputValidationError,
    MCPBackend,
    ResponseTooLargeError,
    ToolExecutionError,
    ToolTimeoutError,
    UpstreamProtocolError,
    load_config,
)
from toolrun._mcp_stderr import BURST

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

HOSTILE = SERVERS_DIR / "hostile_server.py"
TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
PROMPT = 30.0
"""Seconds within which a bystander, or a call failing "at once", must answer.

Half the 60 s timeout the servers here are configured with: a call that waited for the timeout fails,
a call that a busy machine slowed down does not.
"""
STALL_S = 10.0
"""Longest a call to another server may take during a re-list storm: it waited ~21 s when the listing
was checked on the event loop (longer on a busy machine); it takes milliseconds now, and a busy machine
stretches that to a second or so. Its latency itself is measured by bench/bystander.py."""


@dataclass
class Hostile:
    transport: str
    make: Callable[..., dict[str, Any]]

    def entry(self, *flags: str, secret: str | None = None, **extra: Any) -> dict[str, Any]:
        """The ``mcpServers`` entry of a hostile server started with ``flags``."""
        return {**self.make(*flags, secret=secret), **extra}


@pytest.fixture(params=["stdio", "http"])
def hostile(request: pytest.FixtureRequest, http_server: Callable[..., RunningServer]) -> Hostile:
    def make(*flags: str, secret: str | None = None) -> dict[str, Any]:
        if request.param == "stdio":
            entry: dict[str, Any] = {"command": sys.executable, "args": [str(HOSTILE), *flags]}
            if secret is not None:
                entry["env"] = {"HOSTILE_SECRET": secret}
            return entry
        env = {**os.environ, "HOSTILE_SECRET": secret} if secret is not None else None
        command = [sys.executable, str(HOSTILE), "--http", "--port", "{port}", *flags]
        server = http_server(command, ready=r"Uvicorn running on", env=env)
        return {"url": server.url}

    return Hostile(request.param, make)


@pytest.fixture
def lower_default_timeout(monkeypatch: pytest.MonkeyPatch) -> Iterator[float]:
    """The built-in per-call default (60 s) lowered to 2 s, for configs made while it is active."""
    monkeypatch.setattr(toolrun._config, "DEFAULT_MCP_TIMEOUT", 2.0)
    yield 2.0


async def under_attack(runner: Any, attack: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``attack`` while bystanders are in flight; return its value or the exception it raised.

    Bystanders: a 0.5 s call on the hostile server's session (sent first, so it is in flight
    when the attack's reply arrives) and a trivial call on another server. Both must succeed,
    everything within ``PROMPT`` seconds, and the hostile session must still answer afterwards.
    """
    got: dict[str, Any] = {}

    async def slow() -> None:
        got["slow"] = (await runner.run("hostile:sleep", {"seconds": 0.5})).value

    async def other() -> None:
        got["time"] = (await runner.run("time:get_current_time", {"timezone": "UTC"})).structured

    async def attacker() -> None:
        start = anyio.current_time()
        try:
            got["attack"] = await attack()
        except Exception as e:  # the outcome under test, whatever it is
            got["attack"] = e
        got["attack_s"] = anyio.current_time() - start

    with anyio.fail_after(PROMPT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            tg.start_soon(attacker)
            tg.start_soon(other)
    assert got["slow"] == "slept"
    assert got["time"]["timezone"] == "UTC"
    with anyio.fail_after(PROMPT):
        after = await runner.run("hostile:echo", {"text": "still here"})
    assert after.structured == {"text": "still here"}
    return got["attack"]


def all_text(exc: BaseException) -> str:
    """Everything an exception prints: message, repr, attributes and its chain with tracebacks."""
    return "".join(traceback.format_exception(exc)) + repr(exc) + repr(vars(exc))


# -- replies -------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [-32000, -32603, 42])
async def test_an_error_reply_fails_only_its_call(mcp_runner: Callable[..., Any], hostile: Hostile, code: int) -> None:
    # -32000 is also the SDK's "connection closed": it used to tear the shared session down.
    async with mcp_runner({"hostile": hostile.entry(), "time": TIME}) as (runner, _):
        err = await under_attack(runner, lambda: runner.run("hostile:reply", {"kind": "error", "code": code}))
    assert type(err) is ToolExecutionError
    assert err.message == f"upstream failure (MCP error {code})"


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("truncated", "not valid JSON (EOF while parsing"),
        ("surrogates", "not valid JSON"),
        ("bad_shape", "not a valid JSON-RPC response"),
        ("bad_content", "'content' must be a list"),
        ("no_result", "neither result nor error"),
        ("deep", "nested deeper than 190 levels"),
        ("nan", "holds NaN, which JSON does not have"),
    ],
)
async def test_malformed_replies_fail_at_once(
    mcp_runner: Callable[..., Any], hostile: Hostile, kind: str, words: str
) -> None:
    # The configured timeout is 60 s: failing within PROMPT shows the call did not wait for it.
    async with mcp_runner({"hostile": hostile.entry(), "time": TIME}) as (runner, _):
        err = await under_attack(runner, lambda: runner.run("hostile:reply", {"kind": kind}))
    assert isinstance(err, UpstreamProtocolError)
    assert err.tool_id == "hostile:reply"
    if kind == "no_result" and hostile.transport == "http":
        words = "not a valid JSON-RPC response"  # the HTTP client's own parse error, also at once
    assert words in err.message


async def test_invalid_utf8_does_not_wedge_the_session(mcp_runner: Callable[..., Any], hostile: Hostile) -> None:
    async with mcp_runner({"hostile": hostile.entry(), "time": TIME}) as (runner, _):
        got = await under_attack(runner, lambda: runner.run("hostile:reply", {"kind": "invalid_utf8"}))
        if hostile.transport == "stdio":
            # Over stdio the bytes are read as U+FFFD: the reply arrives, visibly damaged.
            assert got.value == "bad \ufffd\ufffd bytes"
        else:
            assert isinstance(got, UpstreamProtocolError)
            assert "not valid JSON" in got.message
        # A line of raw bytes before a good reply: the session reads on.
        noisy = await under_attack(runner, lambda: runner.run("hostile:reply", {"faults": ["invalid_utf8"]}))
        if hostile.transport == "stdio":
            assert noisy.value == "ok"
        else:
            assert isinstance(noisy, UpstreamProtocolError)
        # Every later call still answers (it used to time out, one after the other).
        with anyio.fail_after(PROMPT):
            async with anyio.create_task_group() as tg:
                for i in range(20):
                    tg.start_soon(runner.run, "hostile:add", {"a": i, "b": 1})


async def test_noise_before_a_reply(mcp_runner: Callable[..., Any], hostile: Hostile) -> None:
    faults = ["garbage", "not_rpc", "unknown_id"]
    async with mcp_runner({"hostile": hostile.entry(), "time": TIME}) as (runner, _):
        got = await under_attack(runner, lambda: runner.run("hostile:reply", {"faults": faults}))
    if hostile.transport == "stdio":
        assert got.value == "ok"  # the noise is logged and dropped; the reply is read
    else:
        # Over HTTP each message is an event of the call's own response stream: the first one
        # that is not JSON-RPC ends the call.
        assert isinstance(got, UpstreamProtocolError)


async def test_a_huge_reply_within_the_bound_arrives_whole(mcp_runner: Callable[..., Any], hostile: Hostile) -> None:
    size = DEFAULT_MAX_RESPONSE_BYTES - 1024  # the JSON-RPC envelope counts too
    async with mcp_runner({"hostile": hostile.entry(), "time": TIME}) as (runner, _):
        got = await under_attack(runner, lambda: runner.run("hostile:reply", {"kind": "huge", "size": size}))
    assert len(got.value) == size


@pytest.mark.parametrize("id_last", [False, True], ids=["id first", "id last"])
async def test_a_reply_over_the_bound_fails_its_call_unread(
    mcp_runner: Callable[..., Any], hostile: Hostile, id_last: bool
) -> None:
    # 50 MB: the SDK's stdio reader held it whole, copying it again for every 64 KiB read, for tens of
    # seconds on the event loop; then it was parsed, normalised and handed on whole.
    args = {"kind": "huge", "size": 50_000_000, "id_last": id_last}
    async with mcp_runner({"hostile": hostile.entry(), "time": TIME}) as (runner, _):
        got = await under_attack(runner, lambda: runner.run("hostile:reply", args))
    assert isinstance(got, ResponseTooLargeError), got
    assert (got.tool_id, got.server, got.limit) == ("hostile:reply", "hostile", DEFAULT_MAX_RESPONSE_BYTES)
    assert "server 'hostile'" in str(got) and "4,194,304 bytes (maxResponseBytes)" in str(got)


async def test_a_compressed_reply_is_bounded_by_what_it_inflates_to(
    mcp_runner: Callable[..., Any], hostile: Hostile
) -> None:
    # 50 MB of text gzip-compressed to ~50 KB, sent though the client asked for no compression:
    # the client inflated it after every bound on its bytes was counted (300 MB took 580 MB).
    if hostile.transport != "http":
        pytest.skip("compression is an HTTP matter")
    async with mcp_runner({"hostile": hostile.entry(), "time": TIME}) as (runner, _):
        small = await runner.run("hostile:reply", {"kind": "huge", "size": 100_000, "gzip": True})
        assert len(small.value) == 100_000
        args = {"kind": "huge", "size": 50_000_000, "gzip": True}
        got = await under_attack(runner, lambda: runner.run("hostile:reply", args))
    assert isinstance(got, ResponseTooLargeError), got
    assert got.limit == DEFAULT_MAX_RESPONSE_BYTES


async def test_the_bound_is_the_servers_own(mcp_runner: Callable[..., Any], hostile: Hostile) -> None:
    entry = hostile.entry(maxResponseBytes=100_000)
    async with mcp_runner({"hostile": entry, "time": TIME}) as (runner, _):
        small = await runner.run("hostile:reply", {"kind": "huge", "size": 90_000})
        assert len(small.value) == 90_000
        got = await under_attack(runner, lambda: runner.run("hostile:reply", {"kind": "huge", "size": 110_000}))
    assert isinstance(got, ResponseTooLargeError) and got.limit == 100_000


@pytest.mark.parametrize("id_last", [False, True], ids=["id first", "id last"])
async def test_a_reply_of_too_many_containers_fails_its_call_unparsed(
    mcp_runner: Callable[..., Any], hostile: Hostile, id_last: bool
) -> None:
    # 3.9 MB of `[],[],...` (1.3 million lists), within maxResponseBytes: parsing it held the GIL for close
    # to a second (every caller waited), and it cost a few hundred MB across the layers a result goes through.
    args = {"kind": "containers", "id_last": id_last}
    async with mcp_runner({"hostile": hostile.entry(), "time": TIME}) as (runner, _):
        got = await under_attack(runner, lambda: runner.run("hostile:reply", args))
    assert isinstance(got, ResponseTooLargeError), got
    assert (got.tool_id, got.server, got.limit) == ("hostile:reply", "hostile", DEFAULT_MAX_RESPONSE_BYTES)
    assert got.containers == 262_144  # 64 Ki per MiB of the default maxResponseBytes
    assert "server 'hostile' holds more than 262,144 arrays and objects" in str(got)


async def test_a_large_reply_of_ordinary_records_arrives_whole(
    mcp_runner: Callable[..., Any], hostile: Hostile
) -> None:
    count = 35_000  # about 3.5 MB of records of five fields, each field one more value to parse
    async with mcp_runner({"hostile": hostile.entry(), "time": TIME}) as (runner, _):
        got = await under_attack(runner, lambda: runner.run("hostile:reply", {"kind": "records", "count": count}))
    rows = got.structured["rows"]
    assert len(rows) == count and rows[-1]["email"] == f"user{count - 1}@example.com"


async def test_a_huge_notification_is_dropped_unparsed_and_the_session_goes_on(
    mcp_runner: Callable[..., Any], hostile: Hostile
) -> None:
    # Each was parsed and dropped (no notification the client reads needs 1 MB), at a cost every caller paid.
    with capture_logs() as logs:
        async with mcp_runner({"hostile": hostile.entry(), "time": TIME}) as (runner, _):
            got = await under_attack(runner, lambda: runner.run("hostile:reply", {"faults": ["big_note"] * 3}))
    assert got.value == "ok"
    dropped = [e for e in logs if e["event"] == "mcp.unreadable_message" and e["server"] == "hostile"]
    assert len(dropped) == 3, logs
    assert all(e["error"].startswith("a notification of ") and "65,536-byte bound" in e["error"] for e in dropped)
    assert "note note" not in repr(logs)


# -- arguments -----------------------------------------------------------------------------


class Opaque:
    pass


def _nested(levels: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(levels):
        out = [out]
    return out


def _circular() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


@pytest.mark.parametrize(
    ("value", "path", "words"),
    [
        (..., "$.x", "ellipsis is not JSON"),
        (len, "$.x", "builtin_function_or_method is not JSON"),
        (ValueError("boom"), "$.x", "ValueError is not JSON"),
        (Opaque(), "$.x", "Opaque is not JSON"),
        ({"a": [1, {"b": Opaque()}]}, "$.x.a[1].b", "Opaque is not JSON"),
        (math.nan, "$.x", "nan is not a JSON number"),
        (math.inf, "$.x", "inf is not a JSON number"),
        ("lone \ud800", "$.x", "lone surrogate"),
        (_circular(), "$.x[0]", "circular reference"),
        ({"deep": _nested(300)}, ("$.x.deep" + "[0]" * 300)[:120] + "…", "nested deeper than 128 levels"),
        ({1j: "complex key"}, "$.x", "keys must be strings"),
    ],
)
async def test_arguments_that_are_not_json_fail_alone(hostile: Hostile, value: Any, path: str, words: str) -> None:
    # Straight to the backend: the runner's own checks must not be what saves the session.
    config = load_config({"mcpServers": {"hostile": hostile.entry()}}).servers["hostile"]
    index = InMemoryIndex()
    async with MCPBackend("hostile", config) as backend:
        await backend.attach(index)
        sleep, stats = index.get("hostile:sleep"), index.get("hostile:stats")
        got: dict[str, Any] = {}

        async def slow() -> None:
            got["slow"] = await backend.call(BackendRef.mcp("hostile", tool="sleep"), sleep, {"seconds": 1})

        async def bad() -> None:
            with pytest.raises(InputValidationError) as ei:
                await backend.call(BackendRef.mcp("hostile", tool="stats"), stats, {"x": value})
            got["bad"] = ei.value

        with anyio.fail_after(PROMPT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                tg.start_soon(bad)
        assert got["slow"].content == ({"type": "text", "text": "slept"},)
        (problem,) = got["bad"].problems
        assert problem.path == path
        assert words in problem.message
        with anyio.fail_after(PROMPT):
            res = await backend.call(BackendRef.mcp("hostile", tool="stats"), stats, {})
        assert res.structured["calls"] == 2  # the bad call never reached the server


# -- timeouts ------------------------------------------------------------------------------


@pytest.mark.parametrize(("tool", "args"), [("hang", {}), ("reply", {"kind": "none"})])
async def test_a_hung_call_times_out_at_the_default(
    mcp_runner: Callable[..., Any], hostile: Hostile, lower_default_timeout: float, tool: str, args: dict[str, Any]
) -> None:
    # No timeout in the call, the runner or the server's config: the built-in default applies.
    async with mcp_runner({"hostile": hostile.entry(), "time": TIME}) as (runner, backends):
        assert backends["hostile"].config.timeout == lower_default_timeout
        err = await under_attack(runner, lambda: runner.run(f"hostile:{tool}", args))
    assert isinstance(err, ToolTimeoutError)
    assert err.timeout == lower_default_timeout


# -- catalogs ------------------------------------------------------------------------------


async def test_hostile_schemas_cost_only_their_own_tool(mcp_runner: Callable[..., Any], hostile: Hostile) -> None:
    with anyio.fail_after(60):
        async with mcp_runner({"hostile": hostile.entry("--schemas", "all"), "time": TIME}) as (runner, backends):
            backend: MCPBackend = backends["hostile"]
            assert {"echo", "add", "sleep", "hang", "reply", "churn"} <= set(backend.tools)
            # The 5,000-level schema is cut by the reader and skipped; it used to take every tool with it.
            assert "nested deeper than 190 levels" in backend.skipped["schema_deep"]
            assert "schema_deep" not in backend.tools
            await under_attack(runner, lambda: runner.run("hostile:add", {"a": 1, "b": 2}))


async def test_a_huge_relist_does_not_stall_other_calls(mcp_runner: Callable[..., Any], hostile: Hostile) -> None:
    async with mcp_runner({"hostile": hostile.entry(), "time": TIME}) as (runner, backends):
        relisted = anyio.Event()

        def on_change(event: ChangeEvent) -> None:
            if "hostile:bulk_2999" in event.tool_ids:
                relisted.set()

        runner.index.subscribe(on_change)
        slowest = 0.0

        async def bystanders() -> None:
            # The call to the other server measures this process: the hostile one is busy churning.
            nonlocal slowest
            while not relisted.is_set():
                start = anyio.current_time()
                await runner.run("time:get_current_time", {"timezone": "UTC"})
                slowest = max(slowest, anyio.current_time() - start)
                await runner.run("hostile:echo", {"text": "x"})

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                tg.start_soon(bystanders)
                # 3,000 tools and one with 30,000 properties, announced 20 times over.
                await runner.run("hostile:churn", {"tools": 3000, "props": 30000, "storm": 20})
                await relisted.wait()
        assert slowest < STALL_S, f"a call to another server waited {slowest:.1f} s during the re-list"
        assert len(backends["hostile"].tools) > 3000


# -- secrets -------------------------------------------------------------------------------


def secrets(test: str) -> dict[str, str]:
    """Secret values of one test: the process-wide registry only grows, so no test may reuse another's."""
    return {kind: f"{kind}-{test}-s3cret" for kind in ("env", "header", "query", "password")}


def assert_no_secret(exc: BaseException, values: dict[str, str]) -> None:
    text = all_text(exc)
    for name, secret in values.items():
        assert secret not in text, f"the {name} secret leaked"


async def test_secrets_never_reach_error_messages(mcp_runner: Callable[..., Any], hostile: Hostile) -> None:
    values = secrets(f"echo-{hostile.transport}")
    entry = hostile.entry(secret=values["env"])
    if hostile.transport == "http":
        host = entry["url"].removeprefix("http://")
        entry = {
            "url": f"http://bob:{values['password']}@{host}?api_key={values['query']}",
            "headers": {"Authorization": f"Bearer {values['header']}"},
        }
        del values["env"]  # the server's own environment: not in this config, so not a known secret
    else:
        values = {"env": values["env"]}
    echoed = " ".join(values.values())
    async with mcp_runner({"hostile": entry, "time": TIME}) as (runner, _):
        # The server echoes every secret of the config back: in a JSON-RPC error, in an isError result.
        for kind in ("error", "tool_error"):
            args = {"kind": kind, "message": f"denied for {echoed}"}
            err = await under_attack(runner, lambda args=args: runner.run("hostile:reply", args))
            assert isinstance(err, ToolExecutionError)
            assert_no_secret(err, values)
            assert err.message.startswith("denied for ***")


async def test_secrets_never_reach_connection_errors() -> None:
    values = secrets("refused")
    url = f"http://bob:{values['password']}@127.0.0.1:{free_port()}/mcp?api_key={values['query']}"
    entry = {"url": url, "headers": {"X-Api-Key": values["header"]}}
    config = load_config({"mcpServers": {"gone": entry}}).servers["gone"]
    async with MCPBackend("gone", config) as backend:
        with anyio.fail_after(30), pytest.raises(BackendUnavailableError) as ei:
            await backend.attach(InMemoryIndex())
    assert "cannot reach http://***@127.0.0.1" in ei.value.reason
    assert "api_key=***" in ei.value.reason
    assert_no_secret(ei.value, values)


@pytest.mark.parametrize("expose", [False, True])
async def test_a_server_that_dies_with_its_token_on_stderr(expose: bool) -> None:
    values = {"env": secrets(f"dies-{expose}")["env"]}
    code = "import os, sys; sys.stderr.write('bad token ' + os.environ['HOSTILE_SECRET'] + '\\n'); sys.exit(2)"
    entry = {"command": sys.executable, "args": ["-c", code], "env": {"HOSTILE_SECRET": values["env"]}}
    config = load_config({"mcpServers": {"dies": {**entry, "exposeStderr": expose}}}).servers["dies"]
    with capture_logs() as logs:
        async with MCPBackend("dies", config) as backend:
            with anyio.fail_after(30), pytest.raises(BackendUnavailableError) as ei:
                await backend.attach(InMemoryIndex())
    assert_no_secret(ei.value, values)
    if expose:
        assert "server stderr: bad token ***" in ei.value.reason
    else:
        assert "bad token" not in ei.value.reason
        assert "the server's stderr is in the log" in ei.value.reason
    # The operator's log has the line, redacted, with the server's name.
    lines = [e for e in logs if e["event"] == "mcp.stderr"]
    assert {"event": "mcp.stderr", "line": "bad token ***", "server": "dies", "log_level": "info"} in lines
    # The warning that reports the failure carries the last lines, for an operator who logs only warnings.
    [warning] = [e for e in logs if e["event"] == "mcp.unavailable"]
    assert warning["log_level"] == "warning" and warning["stderr"] == "bad token ***"


# -- stderr --------------------------------------------------------------------------------


async def test_stderr_goes_to_the_log_not_to_callers(mcp_runner: Callable[..., Any]) -> None:
    # Printed by the server, known to nobody (and no secret by its looks): only keeping stderr
    # away from callers hides it.
    unknown = "unregisteredsecretword"
    entry = {"command": sys.executable, "args": [str(HOSTILE), "--secret", unknown]}
    with capture_logs() as logs:
        async with mcp_runner({"hostile": entry, "time": TIME}) as (runner, _):
            err = await under_attack(runner, lambda: runner.run("hostile:reply", {"kind": "truncated"}))
            assert isinstance(err, UpstreamProtocolError)
            assert unknown not in all_text(err)
            assert "stderr" not in err.message
    lines = [e["line"] for e in logs if e["event"] == "mcp.stderr" and e["server"] == "hostile"]
    assert f"hostile-server: starting (token {unknown})" in lines
    assert f"hostile-server: call reply (token {unknown})" in lines


async def test_stderr_is_redacted_and_rate_limited(mcp_runner: Callable[..., Any]) -> None:
    secret = secrets("flood")["env"]
    entry = {"command": sys.executable, "args": [str(HOSTILE)], "env": {"HOSTILE_SECRET": secret}}
    with capture_logs() as logs:
        async with mcp_runner({"hostile": entry, "time": TIME}) as (runner, _):
            await under_attack(runner, lambda: runner.run("hostile:noise", {"lines": 500, "width": 10_000}))
    stderr = [e for e in logs if e["event"] == "mcp.stderr" and e["server"] == "hostile"]
    assert stderr[0]["line"] == "hostile-server: starting (token ***)"
    assert all(secret not in e["line"] for e in stderr)
    assert len(stderr) <= BURST  # 500 lines of 10,000 characters, and the calls' own lines
    assert max(len(e["line"]) for e in stderr) <= 501  # each line cut to 500 characters and "…"
    suppressed = sum(e["lines"] for e in logs if e["event"] == "mcp.stderr_suppressed")
    assert suppressed >= 500 - BURST


async def test_a_relist_is_tokenised_off_the_loop_and_registered_in_small_parts(
    mcp_runner: Callable[..., Any], hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a re-list leaves on the event loop is bounded by the work of each part, not by the listing:
    # tokenising the tools (most of the CPU of registering them) runs in a worker thread, and the index
    # updates run in parts of at most _REGISTER_COST characters of tool text, with other tasks between.
    # Counted, not timed: a busy machine cannot make it pass or fail.
    loop_thread = threading.get_ident()
    on_loop: list[str] = []
    parts: list[int] = []
    real_fields = toolindex._index.document_fields
    real_register = getattr(toolindex.InMemoryIndex, "register_prepared", None)

    def fields(tool: Tool, text: str | None) -> Any:
        if tool.name.startswith("bulk_") and threading.get_ident() == loop_thread:
            on_loop.append(tool.name)
        return real_fields(tool, text)

    def register(self: toolindex.InMemoryIndex, batch: toolindex.PreparedBatch) -> None:
        parts.append(batch.cost)
        assert real_register is not None
        real_register(self, batch)

    monkeypatch.setattr(toolindex._index, "document_fields", fields)
    monkeypatch.setattr(toolindex.InMemoryIndex, "register_prepared", register, raising=False)
    async with mcp_runner({"hostile": hostile.entry()}) as (runner, backends):
        relisted = anyio.Event()
        runner.index.subscribe(lambda event: relisted.set() if "hostile:bulk_1999" in event.tool_ids else None)
        with anyio.fail_after(120):
            await runner.run("hostile:churn", {"tools": 2000, "props": 2000, "storm": 1})
            await relisted.wait()
        assert len(backends["hostile"].tools) > 2000
    assert on_loop == []
    assert len(parts) > 1
    # A part holds several tools up to the bound, or one tool alone.
    assert max(parts) <= max(toolrun._mcp._REGISTER_COST, 100_000)
