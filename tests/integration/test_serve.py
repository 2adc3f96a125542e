"""`toolcode serve` driven by the real mcp Client over stdio and streamable HTTP, in both protocol eras."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import jsonschema_rs
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_support import toolcode_serve_args, toolcode_serve_http

import toolcode
import toolcode.server

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

META_TOOLS = set(toolcode.server.META_TOOLS)
ALL_TOOLS = {"toolcode": {"tools": ["*"]}}  # every code-mode tool, not only the default few

GIT_COMMIT = ("commit", "-q", "--allow-empty", "-m", "first commit")

TWO_SERVERS = """
now = run_tool("time:get_current_time", {"timezone": "Europe/Paris"})
log = run_tool("git:git_log", {"repo_path": input["repo"], "max_count": 5})
println("checked", now["timezone"])
__out = {"timezone": now["timezone"], "has_commit": "first commit" in str(log)}
"""


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("serve")
    repo = root / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        [*("git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t"), *GIT_COMMIT],
        check=True,
    )
    cfg = {
        "mcpServers": {
            "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
            "git": {"command": sys.executable, "args": ["-m", "mcp_server_git"]},
        },
        **ALL_TOOLS,
    }
    path = root / "mcp.json"
    path.write_text(json.dumps(cfg))
    return path, repo


def _serve_args(config: Path, *extra: str) -> list[str]:
    return toolcode_serve_args(config, *extra)


@asynccontextmanager
async def http_server(config: Path, *extra: str) -> AsyncIterator[str]:
    """Start `toolcode serve --http 127.0.0.1:0` and yield its URL."""
    async with toolcode_serve_http(config, *extra) as served:
        yield served.url


ClientFactory = Callable[[str], AbstractAsyncContextManager[Client]]


@pytest.fixture(params=["stdio", "http"])
async def connect(request: pytest.FixtureRequest, config_file: tuple[Path, Path]) -> AsyncIterator[ClientFactory]:
    config, _ = config_file
    if request.param == "stdio":
        params = StdioServerParameters(command=sys.executable, args=_serve_args(config))

        def stdio_client(mode: str) -> AbstractAsyncContextManager[Client]:
            return Client(params, mode=mode)  # type: ignore[arg-type]

        yield stdio_client
    else:
        async with http_server(config) as url:

            def http_client(mode: str) -> AbstractAsyncContextManager[Client]:
                return Client(url, mode=mode)  # type: ignore[arg-type]

            yield http_client


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tools_listed_with_schemas(connect: ClientFactory, mode: str) -> None:
    async with connect(mode) as client:
        if mode == "auto":
            assert client.protocol_version == "2026-07-28"
        else:
            assert client.protocol_version == "2025-11-25"
        listed = await client.list_tools()
        names = {t.name for t in listed.tools}
        assert names == META_TOOLS
        for tool in listed.tools:
            assert tool.description and len(tool.description) > 20
            assert tool.input_schema["type"] == "object"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_execute_code_two_servers_progress_and_trace(
    connect: ClientFactory, config_file: tuple[Path, Path], mode: str
) -> None:
    _, repo = config_file
    progress: list[tuple[float, str | None]] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append((p, message))

    async with connect(mode) as client:
        args = {"code": TWO_SERVERS, "input": {"repo": str(repo)}, "options": {"trace": "full"}}
        res = await client.call_tool("execute_code", args, progress_callback=on_progress)
        assert not res.is_error, res.content
        out = res.structured_content
        assert out is not None
        assert out["value"] == {"timezone": "Europe/Paris", "has_commit": True}
        assert out["stdout"].strip() == "checked Europe/Paris"
        assert [t["tool_id"] for t in out["trace"]] == ["time:get_current_time", "git:git_log"]
        assert all(t["ok"] for t in out["trace"])
        assert out["calls"] == {"count": 2, "failed": 0, "failures": []}
        # A notification when each tool call starts and ends (ids and status, never arguments or
        # results), and the snippet's printed lines; all before the result, in order.
        assert [p for p, _ in progress] == list(range(1, len(progress) + 1))
        messages = [m or "" for _, m in progress]
        calls = [m for m in messages if not m.startswith("stdout:")]
        assert calls[0] == "time:get_current_time started" and calls[1].startswith("time:get_current_time ok (")
        assert calls[2] == "git:git_log started" and calls[3].startswith("git:git_log ok (")
        assert "stdout: checked Europe/Paris" in messages
        assert not any(str(repo) in m for m in messages)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_progress_of_a_ten_call_snippet_and_a_three_step_chain(connect: ClientFactory, mode: str) -> None:
    progress: list[str] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    code = (
        "for z in ['UTC', 'Europe/Paris', 'Asia/Tokyo', 'America/New_York', 'Europe/London',"
        " 'Asia/Kolkata', 'Australia/Sydney', 'Africa/Cairo', 'America/Sao_Paulo', 'Europe/Berlin']:\n"
        "    run_tool('time:get_current_time', timezone=z)\n"
        "    println('at', z)\n"
        "'done'"
    )
    async with connect(mode) as client:
        res = await client.call_tool("execute_code", {"code": code}, progress_callback=on_progress)
        assert not res.is_error, res.content
        calls = [m for m in progress if m.startswith("time:")]
        assert len(calls) == 20
        assert all(calls[i] == "time:get_current_time started" for i in range(0, 20, 2))
        assert all(calls[i].startswith("time:get_current_time ok (") for i in range(1, 20, 2))
        assert [m for m in progress if m.startswith("stdout:")][-1] == "stdout: at Europe/Berlin"

        progress.clear()
        steps = [
            {"id": "now", "tool_id": "time:get_current_time", "args": {"timezone": "UTC"}},
            {
                "tool_id": "time:convert_time",
                "args": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            },
            {"tool_id": "time:get_current_time", "args": {"timezone": "{{now.timezone}}"}},
        ]
        res = await client.call_tool("run_chain", {"steps": steps}, progress_callback=on_progress)
        assert not res.is_error, res.content
        assert progress[0] == "step 0 (now) time:get_current_time started"
        assert progress[1].startswith("step 0 (now) time:get_current_time ok (")
        assert progress[2] == "step 1 time:convert_time started"
        assert progress[4] == "step 2 time:get_current_time started"
        assert progress[5].startswith("step 2 time:get_current_time ok (") and len(progress) == 6


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_broken_and_hostile_snippets_are_errors_and_server_keeps_serving(
    connect: ClientFactory, mode: str
) -> None:
    def text(res: types.CallToolResult) -> str:
        return " ".join(getattr(b, "text", "") for b in res.content)

    async with connect(mode) as client:
        syntax = await client.call_tool("execute_code", {"code": "x = (1,\nfor"})
        assert syntax.is_error, text(syntax)
        assert "line" in text(syntax).lower(), text(syntax)

        unknown = await client.call_tool(
            "execute_code", {"code": 'run_tool("time:get_curent_time", {"timezone": "UTC"})'}
        )
        assert unknown.is_error, text(unknown)
        assert "time:get_current_time" in text(unknown)  # the nearest tool name is suggested

        escape = await client.call_tool("execute_code", {"code": "import os\n__out = os.listdir('/')"})
        assert escape.is_error, text(escape)

        loop = await client.call_tool("execute_code", {"code": "while True:\n    pass", "options": {"timeout": 1}})
        assert loop.is_error, text(loop)
        assert "timeout" in text(loop), text(loop)

        limited = await client.call_tool(
            "execute_code",
            {
                "code": (
                    'for z in ["UTC", "Asia/Tokyo", "Europe/Paris"]:\n'
                    '    run_tool("time:get_current_time", {"timezone": z})'
                ),
                "options": {"max_tool_calls": 2},
            },
        )
        assert limited.is_error, text(limited)
        assert "max_tool_calls" in text(limited), text(limited)
        assert limited.structured_content is not None
        assert limited.structured_content["error"]["code"] == "tool_call_limit"

        bad_args = await client.call_tool("execute_code", {"code": ""})
        assert bad_args.is_error, text(bad_args)
        assert "code" in text(bad_args), text(bad_args)

        # Still serving after all of that.
        ok = await client.call_tool("execute_code", {"code": "__out = 6 * 7"})
        assert not ok.is_error, text(ok)
        assert ok.structured_content is not None and ok.structured_content["value"] == 42


async def test_a_snippet_too_large_for_the_workers_memory_is_memory_limit(connect: ClientFactory) -> None:
    # 1.2 MB of code: the sandbox worker outgrows its memory and is terminated, as other
    # memory exhaustion is reported: memory_limit, not the snippet's runtime_error.
    async with connect("auto") as client:
        res = await client.call_tool("execute_code", {"code": "x = 1\n" * 200_000 + "__out = x"})
        assert res.is_error and res.structured_content is not None
        error = res.structured_content["error"]
        assert error["code"] == "memory_limit", error
        assert error["message"].startswith("limit max_memory exceeded: configured 128 MiB"), error
        ok = await client.call_tool("execute_code", {"code": "__out = 6 * 7"})
        assert ok.structured_content is not None and ok.structured_content["value"] == 42


@pytest.mark.parametrize("session", [None, "s"])
async def test_functions_modules_and_classes_are_refused_as_results(
    connect: ClientFactory, session: str | None
) -> None:
    # They are not JSON data, like a set: refused, not returned as their repr.
    cases = {
        "def f():\n    pass\n__out = f": "$ is a function",
        "__out = lambda x: x": "$ is a function",
        "import json\n__out = json": "$ is a module",
        "class A:\n    pass\n__out = {'k': [1, A]}": "$.k[1] is a type",
        "__out = range(3)": "$ is a range",
        "__out = {1, 2}": "$ is a set",
    }
    extra = {} if session is None else {"session": session}
    async with connect("auto") as client:
        for code, where in cases.items():
            res = await client.call_tool("execute_code", {"code": code, **extra})
            assert res.is_error and res.structured_content is not None, (code, res.structured_content)
            error = res.structured_content["error"]
            assert error["code"] == "runtime_error", (code, error)
            assert error["message"] == f"TypeError: the result must be JSON data {_JSON_DATA}: {where}", (code, error)
        ok = await client.call_tool("execute_code", {"code": "__out = {'a': [1, 'x', None]}", **extra})
        assert ok.structured_content is not None and ok.structured_content["value"] == {"a": [1, "x", None]}


_JSON_DATA = "(dicts with str keys, lists, str, numbers, bool, None)"


async def test_options_that_are_not_an_object_are_invalid_arguments(connect: ClientFactory) -> None:
    async with connect("auto") as client:
        for options in ["x", 5, True, ["a"], [], {"timeout": "x"}]:
            res = await client.call_tool("execute_code", {"code": "1", "options": options})
            assert res.is_error and res.structured_content is not None, options
            error = res.structured_content["error"]
            assert error["code"] == "invalid_arguments", (options, error)
            assert "'options" in error["message"], (options, error)
        ok = await client.call_tool("execute_code", {"code": "__out = 1", "options": {}})
        assert not ok.is_error


async def test_allowed_namespaces_restrict_a_run(connect: ClientFactory) -> None:
    async with connect("auto") as client:
        res = await client.call_tool(
            "execute_code",
            {
                "code": 'run_tool("time:get_current_time", {"timezone": "UTC"})',
                "options": {"allowed_namespaces": ["git"]},
            },
        )
        assert res.is_error
        hits = await client.call_tool("search_tools", {"query": "current time in a timezone", "limit": 3})
        assert hits.structured_content is not None
        assert hits.structured_content["hits"][0]["id"] == "time:get_current_time"


async def test_metatools_search_describe_run_chain(connect: ClientFactory, config_file: tuple[Path, Path]) -> None:
    _, repo = config_file
    async with connect("auto") as client:
        ns = await client.call_tool("list_namespaces", {})
        assert ns.structured_content == {
            "namespaces": [
                {"name": "git", "tool_count": 12, "unavailable": None},
                {"name": "time", "tool_count": 2, "unavailable": None},
            ],
        }
        doc = await client.call_tool("describe_tool", {"tool_id": "git:git_log"})
        assert doc.structured_content is not None and "repo_path" in doc.structured_content["text"]
        missing = await client.call_tool("describe_tool", {"tool_id": "git:git_lgo"})
        assert missing.is_error and "git:git_log" in missing.content[0].text  # type: ignore[union-attr]
        assert missing.structured_content is not None
        assert missing.structured_content["error"]["code"] == "unknown_tool"
        run = await client.call_tool("run_tool", {"tool_id": "time:get_current_time", "args": {"timezone": "UTC"}})
        assert run.structured_content is not None and run.structured_content["value"]["timezone"] == "UTC"
        chain = await client.call_tool(
            "run_chain",
            {
                "steps": [
                    {"tool_id": "git:git_status", "args": {"repo_path": str(repo)}},
                    {"tool_id": "time:get_current_time", "args": {"timezone": "UTC"}},
                ]
            },
        )
        assert chain.structured_content is not None
        assert [s["ok"] for s in chain.structured_content["steps"]] == [True, True]
        aborted = await client.call_tool(
            "run_chain",
            {
                "steps": [
                    {"tool_id": "time:get_current_time", "args": {"timezone": "UTC"}},
                    {"tool_id": "time:get_current_time", "args": {"timezone": "Not/AZone"}},
                    {"tool_id": "time:get_current_time", "args": {"timezone": "UTC"}},
                ]
            },
        )
        assert aborted.is_error
        assert "aborted at step 1 (time:get_current_time)" in aborted.content[0].text  # type: ignore[union-attr]
        # A chain refused before it runs (a reference to a later step) is an error result with its
        # code, like every other failure (not a protocol error).
        refused = await client.call_tool(
            "run_chain",
            {"steps": [{"tool_id": "time:get_current_time", "args": {"timezone": "{{steps.1.timezone}}"}}]},
        )
        assert refused.is_error and refused.structured_content is not None
        assert refused.structured_content["error"]["code"] == "invalid_arguments"
        assert "not before step 0" in refused.structured_content["error"]["message"]
        examples = await client.call_tool("list_tool_examples", {"tool_id": "time:convert_time"})
        assert not examples.is_error
        assert examples.structured_content is not None and examples.structured_content["id"] == "time:convert_time"


async def test_expose_publishes_upstream_tool(config_file: tuple[Path, Path]) -> None:
    config, _ = config_file
    params = StdioServerParameters(
        command=sys.executable, args=_serve_args(config, "--expose", "time:get_current_time")
    )
    async with Client(params, mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == META_TOOLS | {"time__get_current_time"}
        res = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert not res.is_error
        assert "UTC" in res.content[0].text  # type: ignore[union-attr]


async def test_failed_call_of_an_exposed_tool_keeps_to_its_output_schema(config_file: tuple[Path, Path]) -> None:
    # A client checks structuredContent against the tool's outputSchema (the JS SDK throws -32602
    # when it does not match), so a failure must not answer the door's own error object there.
    config, _ = config_file
    params = StdioServerParameters(
        command=sys.executable, args=_serve_args(config, "--expose", "time:get_current_time")
    )
    async with Client(params, mode="auto") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        schema = listed["time__get_current_time"].output_schema
        assert schema is not None
        valid = jsonschema_rs.validator_for(schema)
        ok = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert not ok.is_error and valid.is_valid(ok.structured_content)
        for args in ({"timezone": "Mars/Base"}, {"timezone": 5}):
            res = await client.call_tool("time__get_current_time", args)
            assert res.is_error, args
            assert res.structured_content is None or valid.is_valid(res.structured_content), res.structured_content
            text = " ".join(getattr(b, "text", "") for b in res.content)
            assert text.startswith("error ["), text
        assert "Mars/Base" in text or "timezone" in text


FAULT_SERVER = Path(__file__).parent / "servers" / "fault_server.py"


@pytest.fixture
def faults_config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    servers = {"faults": {"command": sys.executable, "args": [str(FAULT_SERVER)]}}
    path.write_text(json.dumps({"mcpServers": servers, **ALL_TOOLS}))
    return path


async def test_upstream_list_changed_reaches_legacy_client(faults_config: Path) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    params = StdioServerParameters(command=sys.executable, args=_serve_args(faults_config, "--expose", "faults:dyn_*"))
    async with Client(params, mode="legacy", message_handler=on_message) as client:
        before = {t.name for t in (await client.list_tools()).tools}
        assert before == META_TOOLS  # nothing matches the pattern yet
        res = await client.call_tool("run_tool", {"tool_id": "faults:add_tool", "args": {"name": "dyn_one"}})
        assert not res.is_error, res.content
        with anyio.fail_after(60):  # a hang bound: the notification comes in milliseconds
            await changed.wait()
        after = {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}
        assert after == META_TOOLS | {"faults__dyn_one"}
        hits = await client.call_tool("search_tools", {"query": "dyn_one", "limit": 3})
        assert hits.structured_content is not None
        assert "faults:dyn_one" in [h["id"] for h in hits.structured_content["hits"]]


async def test_upstream_list_changed_reaches_modern_listener(faults_config: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=_serve_args(faults_config, "--expose", "faults:dyn_*"))
    async with Client(params, mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(tools_list_changed=True) as sub:
            res = await client.call_tool("run_tool", {"tool_id": "faults:add_tool", "args": {"name": "dyn_two"}})
            assert not res.is_error, res.content
            with anyio.fail_after(60):  # a hang bound: the notification comes in milliseconds
                async for _event in sub:
                    break
        after = {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}
        assert "faults__dyn_two" in after


# A user's own program serving over stdio; {setup} is what it does about logging first.
_LIBRARY_SERVE = """
import sys
import anyio
from toolcode import Toolbox
from toolcode.server import log_to_stderr, serve_stdio

async def main() -> None:
    {setup}
    async with Toolbox.from_config(sys.argv[1]) as box:
        await serve_stdio(box)

anyio.run(main)
"""


@pytest.mark.parametrize("setup", ["log_to_stderr()", "pass"])
async def test_serve_stdio_from_library_code_keeps_stdout_for_the_protocol(tmp_path: Path, setup: str) -> None:
    # stdout carries JSON-RPC only. With log_to_stderr() (the documented example) the connection
    # log lines go to stderr, so stdout is protocol from its first byte; without it (structlog's
    # default prints to stdout) they precede the protocol, but from the first response on, even
    # while the upstream dies mid-call and is reconnected, stdout stays protocol.
    from mcp_support import FAULT_SERVER

    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"fault": {"command": sys.executable, "args": [str(FAULT_SERVER)]}}}))
    script = tmp_path / "serve.py"
    script.write_text(_LIBRARY_SERVE.replace("{setup}", setup))
    raw = tmp_path / "stdout.txt"
    state = os.environ.get("TOOLCODE_STATE_DIR", str(tmp_path / "state"))
    shell = f'TOOLCODE_STATE_DIR="{state}" "{sys.executable}" "{script}" "{cfg}" | tee "{raw}"'
    params = StdioServerParameters(command="/bin/sh", args=["-c", shell])
    code = 'try:\n    run_tool("fault:crash")\nexcept Exception:\n    pass\n__out = run_tool("fault:echo", text="hi")'
    with anyio.fail_after(60):
        async with Client(params) as client:
            res = await client.call_tool("execute_code", {"code": code, "options": {"trace": "full"}})
            assert not res.is_error, res.content
            assert res.structured_content is not None
            assert res.structured_content["value"] == {"text": "hi"}
            assert [t["tool_id"] for t in res.structured_content["trace"]] == ["fault:crash", "fault:echo"]
    lines = [ln for ln in raw.read_text().splitlines() if ln.strip()]
    first_json = next(i for i, ln in enumerate(lines) if ln.startswith("{"))
    if setup != "pass":
        assert first_json == 0, lines[:first_json]
    not_json = [ln for ln in lines[first_json:] if not ln.startswith("{")]
    assert not not_json, not_json
    for ln in lines[first_json:]:
        json.loads(ln)


async def test_stdio_serve_leaves_no_process_behind(config_file: tuple[Path, Path]) -> None:
    # Upstream servers (time, git) and the sandbox's worker processes all end with the server.
    import psutil

    config, repo = config_file
    params = StdioServerParameters(command=sys.executable, args=_serve_args(config))
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with anyio.fail_after(60):
        async with Client(params) as client:
            res = await client.call_tool("execute_code", {"code": TWO_SERVERS, "input": {"repo": str(repo)}})
            assert not res.is_error, res.content
            started = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
            serve = [p for p in started if "serve" in p.cmdline()]
            assert len(serve) == 1, [p.cmdline() for p in started]
            spawned = serve[0].children(recursive=True)
            assert len(spawned) >= 2, [p.cmdline() for p in spawned]  # at least the two upstream servers
    gone, alive = psutil.wait_procs([*serve, *spawned], timeout=60)  # a process left behind never goes
    assert not alive, [(p.pid, p.cmdline()) for p in alive if p.is_running()]
    assert len(gone) == 1 + len(spawned)
