"""Sessions and saved snippets through real `toolcode serve` processes: restarts, and replicas sharing Redis."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_support import toolcode_serve_http

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


def _config(tmp_path: Path, state: dict[str, Any]) -> Path:
    cfg = tmp_path / f"mcp-{len(list(tmp_path.glob('mcp-*.json')))}.json"
    servers = {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}}
    tools = ["execute_code", "run_tool", "search_tools", "describe_tool", "list_sessions", "save_snippet"]
    cfg.write_text(json.dumps({"mcpServers": servers, "toolcode": {"state": state, "tools": tools}}))
    return cfg


@asynccontextmanager
async def serve_http(config: Path) -> AsyncIterator[str]:
    """A `toolcode serve --http 127.0.0.1:0` process; yields its URL."""
    async with toolcode_serve_http(config) as served:
        yield served.url


async def _execute(client: Client, code: str, session: str | None = "s") -> dict[str, Any]:
    args: dict[str, Any] = {"code": code}
    if session is not None:
        args["session"] = session
    res = await client.call_tool("execute_code", args)
    assert res.structured_content is not None, res.content
    return res.structured_content


async def test_a_session_survives_a_server_restart_on_the_same_state_dir(tmp_path: Path) -> None:
    config = _config(tmp_path, {"dir": str(tmp_path / "state")})
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolcode.cli", "serve", "--config", str(config)]
    )
    async with Client(params) as client:
        first = await _execute(client, "x = 41")
        assert first["ok"] and first["session"]["new"], first
    # The server process has ended; a new one reads the same state file.
    async with Client(params) as client:
        second = await _execute(client, "__out = x + 1")
        assert second["ok"] and second["value"] == 42 and not second["session"]["new"], second


async def test_a_session_started_on_one_replica_continues_on_another(tmp_path: Path, redis_url: str) -> None:
    config = _config(tmp_path, {"url": redis_url})
    async with serve_http(config) as url_a, serve_http(config) as url_b:
        assert url_a != url_b
        async with Client(url_a) as a:
            started = await _execute(
                a, "from tools import time_\nzone = time_.get_current_time(timezone='UTC')\nn = 41"
            )
            assert started["ok"], started
            saved = await a.call_tool(
                "save_snippet",
                {"name": "plus_one", "code": "input['n'] + 1", "description": "Add one to a number."},
            )
            assert not saved.is_error, saved.content
        async with Client(url_b) as b:
            continued = await _execute(b, "[n + 1, zone['timezone']]")
            assert continued["ok"] and continued["value"] == [42, "UTC"], continued
            listed = await b.call_tool("list_sessions", {})
            assert listed.structured_content is not None
            assert [s["name"] for s in listed.structured_content["sessions"]] == ["s"]
            # The snippet saved on A reaches B within its sync interval (the bound is for a hang only).
            with anyio.fail_after(60):
                while True:
                    res = await b.call_tool("run_tool", {"tool_id": "snippets:plus_one", "args": {"n": 1}})
                    if not res.is_error:
                        break
                    await anyio.sleep(0.5)
            assert res.structured_content is not None and res.structured_content["value"] == 2
            called = await _execute(b, "from tools import snippets\nsnippets.plus_one(n=n)")
            assert called["ok"] and called["value"] == 42, called
