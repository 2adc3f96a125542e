"""The ``mcp`` SDK's private parts that toolcode relies on (``toolcode._compat_mcp``) are where they were."""

from __future__ import annotations

import json
from importlib.metadata import version
from types import SimpleNamespace
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.server import Server, ServerRequestContext
from mcp.server.connection import Connection

from toolcode._compat_mcp import CHECKED_ON, connection_of, session_ender

pytestmark = pytest.mark.anyio


def test_the_sdk_is_the_minor_version_its_internals_were_checked_on() -> None:
    installed = version("mcp")
    assert installed.startswith(f"{CHECKED_ON}."), f"mcp {installed}: re-check toolcode._compat_mcp, then CHECKED_ON"


async def test_a_request_reaches_the_connection_it_came_on() -> None:
    seen: list[Connection] = []

    async def on_list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        seen.append(connection_of(ctx))
        return types.ListToolsResult(tools=[])

    async with Client(Server("pin", on_list_tools=on_list_tools)) as client:
        await client.list_tools()
    [connection] = seen
    assert connection.session_id is None  # in process: no HTTP session
    await connection.send_tool_list_changed()  # what the server sends handshake-era clients


def test_a_session_without_its_connection_fails_loudly_by_name() -> None:
    with pytest.raises(RuntimeError, match=r"_connection.*toolcode\._compat_mcp"):
        connection_of(SimpleNamespace(session=SimpleNamespace()))  # type: ignore[arg-type]


async def test_a_session_ended_by_its_id_is_gone_from_the_server() -> None:
    server = Server("pin")
    app = server.streamable_http_app(json_response=True)
    end = session_ender(server.session_manager)
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    transport = httpx2.ASGITransport(app=app)
    async with (
        server.session_manager.run(),
        httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http,
    ):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
        opened = await http.post("/mcp", content=body, headers=headers)
        assert opened.status_code == 200, opened.text
        sid = opened.headers["mcp-session-id"]
        ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        in_session = {**headers, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        assert (await http.post("/mcp", content=ping, headers=in_session)).status_code == 200
        assert await end(sid)
        assert (await http.post("/mcp", content=ping, headers=in_session)).status_code == 404
        assert not await end(sid)  # no such session any more


def test_a_manager_without_its_session_table_fails_loudly_by_name() -> None:
    with pytest.raises(RuntimeError, match=r"_server_instances.*toolcode\._compat_mcp"):
        session_ender(SimpleNamespace())  # type: ignore[arg-type]
