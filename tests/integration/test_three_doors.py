"""The same demo catalog through the three doors: CLI ``--json``, an MCP client, and a snippet.

Each operation must return the same result shape (and, where the data is deterministic, the
same data) in every door, and the same failure must carry the same error code everywhere.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client

from toolcode import Settings
from toolcode._outcome import outcome_json
from toolcode.cli import main
from toolcode.demo import demo_backends
from toolcode.server import CodeModeServer

pytestmark = pytest.mark.integration

CHAIN = [
    {"tool_id": "helpdesk:list_offices", "args": {}},
    {"tool_id": "helpdesk:on_call", "args": {"office": "Paris"}},
    {"tool_id": "helpdesk:list_tickets", "args": {"office": "Atlantis"}, "on_error": "continue"},
]
EXECUTE = 'offices = run_tool("helpdesk:list_offices", {})\nprintln(len(offices))\n__out = offices[0]["city"]'

# The same calls, spelled for each door: (name, cli argv, mcp tool + arguments, snippet expression).
OPERATIONS: list[tuple[str, list[str], tuple[str, dict[str, Any]], str]] = [
    (
        "search",
        ["search", "urgent tickets of an office", "--limit", "3"],
        ("search_tools", {"query": "urgent tickets of an office", "limit": 3}),
        'search_tools("urgent tickets of an office", limit=3)',
    ),
    (
        "search_schema",
        ["search", "who is on call", "--limit", "2", "--detail", "schema"],
        ("search_tools", {"query": "who is on call", "limit": 2, "detail": "schema"}),
        'search_tools("who is on call", limit=2, detail="schema")',
    ),
    ("list", ["tools", "--limit", "3"], ("list_tools", {"limit": 3}), "list_tools(limit=3)"),
    ("namespaces", ["namespaces"], ("list_namespaces", {}), "list_namespaces()"),
    (
        "describe",
        ["describe", "helpdesk:list_tickets", "time:convert_time"],
        ("describe_tool", {"tool_id": ["helpdesk:list_tickets", "time:convert_time"]}),
        'describe_tool(["helpdesk:list_tickets", "time:convert_time"])',
    ),
    (
        "chain",
        ["chain", "--steps", json.dumps(CHAIN)],
        ("run_chain", {"steps": CHAIN}),
        f"run_chain({CHAIN!r})",
    ),
]

# The same failures: (name, cli argv, mcp tool + arguments, snippet statement, expected code).
FAILURES: list[tuple[str, list[str], tuple[str, dict[str, Any]], str, str]] = [
    (
        "unknown tool",
        ["run", "helpdesk:list_tikets", "--args", "{}"],
        ("run_tool", {"tool_id": "helpdesk:list_tikets", "args": {}}),
        'run_tool("helpdesk:list_tikets", {})',
        "unknown_tool",
    ),
    (
        "tool failure",
        ["run", "helpdesk:list_tickets", "--args", '{"office": "Atlantis"}'],
        ("run_tool", {"tool_id": "helpdesk:list_tickets", "args": {"office": "Atlantis"}}),
        'run_tool("helpdesk:list_tickets", {"office": "Atlantis"})',
        "tool_error",
    ),
    (
        "bad arguments to a tool",
        ["run", "helpdesk:on_call", "--args", '{"office": 7}'],
        ("run_tool", {"tool_id": "helpdesk:on_call", "args": {"office": 7}}),
        'run_tool("helpdesk:on_call", {"office": 7})',
        "invalid_arguments",
    ),
    (
        "bad arguments to an operation",
        ["search", "tickets", "--limit", "0"],
        ("search_tools", {"query": "tickets", "limit": 0}),
        'search_tools("tickets", limit=0)',
        "invalid_arguments",
    ),
    (
        "describe an unknown tool",
        ["describe", "nope:nothing"],
        ("describe_tool", {"tool_id": "nope:nothing"}),
        'describe_tool("nope:nothing")',
        "unknown_tool",
    ),
]


def _shape(value: Any) -> Any:
    """The structure of a JSON value: keys and types, recursively (values left out)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return type(value).__name__


def _stable(value: Any) -> Any:
    """The value without the fields that differ between two runs (durations)."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k != "duration_ms"}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, Any]:
    code = main([*argv, "--demo", "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


async def _mcp_and_snippet() -> dict[str, Any]:
    """Every operation and failure through an MCP client and through a snippet, on one toolbox."""
    from toolcode import Toolbox

    got: dict[str, Any] = {"mcp": {}, "snippet": {}, "mcp_errors": {}, "snippet_errors": {}, "execute": {}}
    async with Toolbox(demo_backends(), settings=Settings(tools=("*",))) as box:
        server = CodeModeServer(box)
        async with Client(server.server) as client:
            for name, _, (tool, args), expr in OPERATIONS:
                res = await client.call_tool(tool, args)
                assert res.structured_content is not None, (name, res.content)
                got["mcp"][name] = res.structured_content
                outcome = await box.codemode.execute(f"__out = {expr}")
                assert outcome.ok, (name, outcome.error)
                got["snippet"][name] = outcome.value
            for name, _, (tool, args), stmt, _code in FAILURES:
                res = await client.call_tool(tool, args)
                assert res.is_error and res.structured_content is not None, (name, res.content)
                got["mcp_errors"][name] = res.structured_content["error"]["code"]
                snippet = (
                    f"try:\n    {stmt}\n    __out = 'no error'\nexcept ToolError as e:\n    __out = tool_error_info(e)"
                )
                # The failure at run time: with the check on, a literal mistake never reaches the call.
                outcome = await box.codemode.execute(snippet, options={"type_check": "off"})
                assert outcome.ok, (name, outcome.error)
                got["snippet_errors"][name] = outcome.value["code"]
            # run_tool: the door returns {tool_id, value, duration_ms}; a snippet gets the value.
            res = await client.call_tool("run_tool", {"tool_id": "helpdesk:list_offices", "args": {}})
            got["mcp"]["run_tool"] = res.structured_content
            snip = await box.codemode.execute('__out = run_tool("helpdesk:list_offices", {})')
            got["snippet"]["run_tool"] = snip.value
            res = await client.call_tool("execute_code", {"code": EXECUTE})
            got["execute"]["mcp"] = res.structured_content
            # The Python door returns the model; its JSON is the one every door prints.
            got["execute"]["python"] = outcome_json(await box.codemode.execute(EXECUTE))
            res = await client.call_tool("execute_code", {"code": "run_tool('helpdesk:nope')"})
            got["execute"]["mcp_failure"] = res.structured_content
    return got


def test_same_shapes_and_error_codes_through_cli_mcp_and_snippet(capsys: pytest.CaptureFixture[str]) -> None:
    cli: dict[str, Any] = {}
    for name, argv, _, _ in OPERATIONS:
        code, doc = _cli(capsys, argv)
        assert code == 0, (name, doc)
        cli[name] = doc
    cli_errors: dict[str, str] = {}
    for name, argv, _, _, _ in FAILURES:
        code, doc = _cli(capsys, argv)
        assert code != 0 and doc["ok"] is False, (name, doc)
        assert set(doc["error"]) == {"code", "message", "line", "column", "tool_id", "hint", "diagnostics"}
        cli_errors[name] = doc["error"]["code"]
    code, cli_run = _cli(capsys, ["run", "helpdesk:list_offices", "--args", "{}"])
    assert code == 0
    code, cli_exec = _cli(capsys, ["exec", "-c", EXECUTE])
    assert code == 0
    code, cli_exec_failure = _cli(capsys, ["exec", "-c", "run_tool('helpdesk:nope')"])
    assert code == 1

    other = anyio.run(_mcp_and_snippet)

    for name, *_ in OPERATIONS:
        mcp, snippet = other["mcp"][name], other["snippet"][name]
        assert _shape(cli[name]) == _shape(mcp) == _shape(snippet), name
        assert _stable(cli[name]) == _stable(mcp) == _stable(snippet), name
    # Spot checks that the shapes are the documented ones.
    assert cli["search"]["hits"][0]["id"] == "helpdesk:list_tickets"
    assert all("def " in (h["signature"] or "") for h in cli["search_schema"]["hits"])
    assert [d["id"] for d in cli["describe"]["docs"]] == ["helpdesk:list_tickets", "time:convert_time"]
    assert [s["ok"] for s in cli["chain"]["steps"]] == [True, True, False]
    assert cli["chain"]["steps"][2]["error"]["code"] == "tool_error" and not cli["chain"]["aborted"]

    expected = {name: code for name, *_, code in FAILURES}
    assert cli_errors == other["mcp_errors"] == other["snippet_errors"] == expected

    mcp_run = other["mcp"]["run_tool"]
    assert _shape(cli_run) == _shape(mcp_run) and set(cli_run) == {"tool_id", "value", "duration_ms", "stored"}
    assert cli_run["value"] == mcp_run["value"] == other["snippet"]["run_tool"]

    executions = [cli_exec, other["execute"]["mcp"], other["execute"]["python"]]
    assert all(_shape(e) == _shape(cli_exec) for e in executions)
    assert all(_stable(e) == _stable(cli_exec) for e in executions)
    assert cli_exec["value"] == "Paris" and cli_exec["stdout"] == "6\n" and cli_exec["calls"]["count"] == 1
    failure = other["execute"]["mcp_failure"]
    assert cli_exec_failure["ok"] is False and failure["ok"] is False
    assert cli_exec_failure["error"]["code"] == failure["error"]["code"] == "type_error"  # caught before the run
    assert cli_exec_failure["error"]["diagnostics"] == failure["error"]["diagnostics"]
    assert _stable(cli_exec_failure) == _stable(failure)
