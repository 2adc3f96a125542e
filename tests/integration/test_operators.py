"""Only an operator approves quarantined tools: two bearer tokens on one real `toolcode serve --http`."""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_support import RunningServer, start_http_server

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ALICE = secrets.token_urlsafe(32)  # an operator
BOB = secrets.token_urlsafe(32)  # an ordinary caller


async def _call(url: str, token: str, tool: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(10, read=60)) as http,
        Client(streamable_http_client(url, http_client=http)) as client,  # type: ignore[arg-type]
    ):
        res = await client.call_tool(tool, args)
        return bool(res.is_error), dict(res.structured_content or {})


def _serve(tmp_path: Path, config: dict[str, Any]) -> RunningServer:
    """A real `toolcode serve --http` with this config, alice's and bob's tokens."""
    (tmp_path / "mcp.json").write_text(json.dumps(config))
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice:{ALICE}\nbob:{BOB}\n")
    tokens.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if k != "TOOLCODE_HTTP_TOKENS"}
    argv = [sys.executable, "-m", "toolcode.cli", "serve", "--config", str(tmp_path / "mcp.json")]
    argv += ["--http", "127.0.0.1:{port}", "--token-file", str(tokens)]
    return start_http_server(argv, ready="listening on", env=env, timeout=60)


@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_only_an_operator_approves_quarantined_tools(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    state = {"url": str(request.getfixturevalue("redis_url"))} if store == "redis" else {"dir": str(tmp_path / "state")}
    config = {
        "mcpServers": {
            "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
        },
        "toolcode": {
            "tools": ["*"],
            "policy": {"quarantine": True, "operators": ["token:alice"]},
            "state": state,
        },
    }
    server = _serve(tmp_path, config)
    try:
        call = {"tool_id": "time:get_current_time", "args": {"timezone": "UTC"}}
        failed, out = await _call(server.url, BOB, "run_tool", call)
        assert failed and out["error"]["code"] == "not_allowed", out  # quarantined: new to this server
        await _only_an_operator_approves(server.url, ["time:convert_time", "time:get_current_time"], call)
    finally:
        server.stop()


async def _only_an_operator_approves(url: str, ids: list[str], call: dict[str, Any]) -> None:
    """Bob may not approve ``ids`` and his ``call`` stays refused; once Alice (an operator) approves, it runs.

    Alice approves the definitions ``describe_tool`` showed her, by their digests.
    """
    failed, out = await _call(url, ALICE, "describe_tool", {"tool_id": ids, "level": "full"})
    assert not failed, out
    tools = {d["id"]: d["digest"] for d in out["docs"]}
    failed, out = await _call(url, BOB, "approve_tools", {"tools": tools})
    assert failed and out["error"]["code"] == "not_allowed" and "operator" in out["error"]["message"], out
    failed, out = await _call(url, BOB, "run_tool", call)
    assert failed and out["error"]["code"] == "not_allowed", out  # still quarantined
    failed, out = await _call(url, ALICE, "approve_tools", {"tools": tools})
    assert not failed, out
    failed, out = await _call(url, BOB, "run_tool", call)
    assert not failed, out


@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_a_tool_whose_title_changes_is_quarantined_until_an_operator_approves_it(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    from mcp_support import FAULT_SERVER

    state = {"url": str(request.getfixturevalue("redis_url"))} if store == "redis" else {"dir": str(tmp_path / "state")}
    flag = tmp_path / "changed"
    config = {
        "mcpServers": {"faults": {"command": sys.executable, "args": [str(FAULT_SERVER), "--changed-flag", str(flag)]}},
        "toolcode": {"tools": ["*"], "policy": {"quarantine": True, "operators": ["token:alice"]}, "state": state},
    }
    server = _serve(tmp_path, config)
    echo = {"tool_id": "faults:echo", "args": {"text": "hi"}}
    try:
        failed, out = await _call(server.url, ALICE, "approve_tools", {"tools": ["faults:*"]})
        assert failed and out["error"]["code"] == "invalid_arguments", out  # a glob names no definition
        failed, out = await _call(
            server.url, ALICE, "describe_tool", {"tool_id": ["faults:echo", "faults:add_tool"], "level": "full"}
        )
        assert not failed, out
        shown = {d["id"]: d["digest"] for d in out["docs"]}
        failed, out = await _call(server.url, ALICE, "approve_tools", {"tools": shown})
        assert not failed, out
        failed, out = await _call(server.url, BOB, "run_tool", echo)
        assert not failed, out
        # Only the title changes, into an instruction; a call that makes the server re-list announces it.
        flag.write_text("title")
        failed, out = await _call(server.url, BOB, "run_tool", {"tool_id": "faults:add_tool", "args": {"name": "x"}})
        assert not failed, out
        with anyio.fail_after(60):  # a hang bound: the re-list follows the announcement
            while not (await _call(server.url, BOB, "run_tool", echo))[0]:  # noqa: ASYNC110 - polls another process
                await anyio.sleep(0.1)
        failed, out = await _call(server.url, BOB, "run_tool", echo)
        assert failed and out["error"]["code"] == "not_allowed" and "quarantined" in out["error"]["message"], out
        await _only_an_operator_approves(server.url, ["faults:echo"], echo)
    finally:
        server.stop()


async def test_the_cli_approves_quarantined_tools_only_for_an_operator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`toolcode tools approve` asks what the approve_tools tool asks: is the local user an operator?"""
    from toolcode.cli import main

    servers = {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}}

    async def toolcode(operators: list[str], *argv: str) -> tuple[int, dict[str, Any]]:
        config = {"mcpServers": servers, "toolcode": {"policy": {"quarantine": True, "operators": operators}}}
        (tmp_path / "mcp.json").write_text(json.dumps(config))
        argv += ("--config", str(tmp_path / "mcp.json"), "--state-dir", str(tmp_path / "state"), "--json")
        code = await anyio.to_thread.run_sync(main, list(argv))
        return code, json.loads(capsys.readouterr().out)

    code, out = await toolcode(["token:ops"], "tools", "approve", "time:*")
    assert code == 1 and out["error"]["code"] == "not_allowed", out
    assert "only an operator approves tools, and 'local' is not one" in out["error"]["message"], out
    code, out = await toolcode(["token:ops"], "tools", "quarantined")
    assert code == 0 and out["tools"] and all(t["approved_by"] is None for t in out["tools"]), out  # still blocked
    code, out = await toolcode(["local"], "tools", "approve", "time:*")
    assert code == 2 and out["error"]["code"] == "invalid_arguments", out  # a glob names no definition
    code, out = await toolcode(["local"], "tools", "quarantined")
    bound = [f"{t['tool_id']}@{t['digest']}" for t in out["tools"]]
    code, out = await toolcode(["local"], "tools", "approve", *bound)
    assert code == 0 and out["approved"], out


async def test_the_cli_reads_every_callers_audit_entries_only_for_an_operator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`toolcode audit` shows what the console shows: a caller's own entries, an operator's everyone's."""
    import time

    from toolcode import Settings, Toolbox
    from toolcode._audit import AuditEntry
    from toolcode._settings import StateSettings
    from toolcode.cli import main

    async with Toolbox(settings=Settings(state=StateSettings(dir=str(tmp_path / "state")))) as box:
        now = time.time()
        callers = ("token:bob", None)
        entries = [AuditEntry(now, f"up:{who or 'mine'}", "read", "allow", "policy", who) for who in callers]
        await box.stores.audit.write([e.to_dict() for e in entries])

    async def audit(operators: list[str]) -> list[str]:
        config = {"mcpServers": {}, "toolcode": {"policy": {"operators": operators}}}
        (tmp_path / "mcp.json").write_text(json.dumps(config))
        argv = ["audit", "--config", str(tmp_path / "mcp.json"), "--state-dir", str(tmp_path / "state"), "--json"]
        assert await anyio.to_thread.run_sync(main, argv) == 0
        return [e["tool_id"] for e in json.loads(capsys.readouterr().out)["entries"]]

    assert await audit(["token:ops"]) == ["up:mine"]  # the local user's own, as the console shows it
    assert await audit(["local"]) == ["up:token:bob", "up:mine"]
