"""The ``mcp`` SDK's private parts that toolcode relies on (``toolcode._compat_mcp``) are where they were."""

from __future__ import annotations

from importlib.metadata import version
from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.server import Server, ServerRequestContext
from mcp.server.connection import Connection

from toolcode._compat_mcp import CHECKED_ON, connection_of

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
