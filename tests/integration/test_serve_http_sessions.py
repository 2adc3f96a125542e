"""The 2025-11-25 sessions of the HTTP door: each caller's share, and what happens past it.

A real `serve_http` on 127.0.0.1 with two tokens and a share lowered to a few sessions (100 by
default), and real HTTP requests. A caller that opens more sessions than its share ends its own
least recently used ones, in the server too: their requests answer 404 and their streams close.
What one caller opens never refuses another's sessions: before, the guard forgot a caller's
sessions past its share but the MCP SDK kept them until its 30-minute idle timeout, and refused
every caller's new session once one caller had opened 10,000.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_support import serving_http

from toolcode import Toolbox
from toolcode.exceptions import ConfigurationError
from toolcode.server import BearerTokens, serve_http

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TOKENS = {"alice": secrets.token_urlsafe(32), "bob": secrets.token_urlsafe(32)}
SHARE = 4
HANG = 60.0
"""Seconds after which something the server should have done counts as never done."""

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
)
PING = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async with serving_http(tokens=BearerTokens(TOKENS), sessions_per_caller=SHARE) as u:
        yield u


def _client(who: str) -> httpx2.AsyncClient:
    headers = {"authorization": f"Bearer {TOKENS[who]}", "accept": "application/json, text/event-stream"}
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(HANG))


def _in(sid: str) -> dict[str, str]:
    return {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}


async def _open(http: httpx2.AsyncClient, url: str) -> str:
    opened = await http.post(url, content=INITIALIZE, headers={"content-type": "application/json"})
    assert opened.status_code == 200, opened.text
    return opened.headers["mcp-session-id"]


async def _ping(http: httpx2.AsyncClient, url: str, sid: str) -> int:
    headers = {"content-type": "application/json", **_in(sid)}
    return (await http.post(url, content=PING, headers=headers)).status_code


async def test_past_its_share_a_callers_oldest_session_is_ended_in_the_server(url: str) -> None:
    async with _client("alice") as alice:
        first = await _open(alice, url)
        headers = {**_in(first), "accept": "text/event-stream"}
        async with alice.stream("GET", url, headers=headers) as stream:  # the session's own stream, kept open
            assert stream.status_code == 200
            newer = [await _open(alice, url) for _ in range(SHARE)]
            with anyio.fail_after(HANG):  # the server closes it: the session ended there, not only in the guard
                async for _ in stream.aiter_bytes():
                    pass
        assert await _ping(alice, url, first) == 404
        assert (await alice.delete(url, headers=_in(first))).status_code == 404
        assert [await _ping(alice, url, sid) for sid in newer] == [200] * SHARE


async def test_a_caller_within_its_share_opens_sessions_whatever_another_opens(url: str) -> None:
    async with _client("alice") as alice, _client("bob") as bob:
        mine = [await _open(bob, url) for _ in range(SHARE - 1)]
        async with anyio.create_task_group() as tg:
            for _ in range(SHARE * 6):
                tg.start_soon(_open, alice, url)
        mine.append(await _open(bob, url))
        assert [await _ping(bob, url, sid) for sid in mine] == [200] * SHARE  # none of bob's pushed out
        # The stateless 2026-07-28 requests go on beside the sessions.
        async with Client(streamable_http_client(url, http_client=bob)) as client:  # type: ignore[arg-type]
            assert "execute_code" in {tool.name for tool in (await client.list_tools()).tools}


async def test_the_session_bounds_must_be_positive() -> None:
    tokens = BearerTokens(TOKENS)
    async with Toolbox() as box:
        for field, bad in (("sessions_per_caller", 0), ("session_idle_timeout", float("inf"))):
            with pytest.raises(ConfigurationError, match=field):
                await serve_http(box, "127.0.0.1", 0, tokens=tokens, **{field: bad})
