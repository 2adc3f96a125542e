"""The HTTP door's connections: a request that never completes cannot hold one open.

A real `serve_http` on 127.0.0.1 and raw sockets: half-sent heads (before any request, and after a
response on a kept-alive connection) are closed once the head deadline passes, a token holder's
unfinished body once the body deadline passes, while complete requests are answered as before.
The waits below bound hangs only: each test measures what the server did, never how fast.
"""

from __future__ import annotations

import secrets
import socket
import time
from collections.abc import AsyncIterator

import anyio
import pytest
from mcp_support import serving_http

from toolcode import Toolbox
from toolcode.exceptions import ConfigurationError
from toolcode.server import BearerTokens, serve_http

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TOKEN = secrets.token_urlsafe(32)
BOB = secrets.token_urlsafe(32)
HEAD_TIMEOUT = 0.5
BODY_TIMEOUT = 1.0
HANG = 60.0
"""Seconds after which a socket the server should have closed counts as held forever."""


@pytest.fixture
async def port() -> AsyncIterator[int]:
    async for port in _serving(BODY_TIMEOUT):
        yield port


@pytest.fixture
async def patient_port() -> AsyncIterator[int]:
    """A server whose body deadline is past the hang bound: only a refusal can close a body early."""
    async for port in _serving(HANG * 4):
        yield port


async def _serving(body_timeout: float) -> AsyncIterator[int]:
    tokens = BearerTokens({"alice": TOKEN, "bob": BOB})
    async with serving_http(tokens=tokens, head_timeout=HEAD_TIMEOUT, body_timeout=body_timeout) as url:
        yield int(url.rsplit(":", 1)[1].split("/")[0])


def _closed_by_server(sock: socket.socket) -> tuple[bool, bytes]:
    """Read until the server closes the socket (``True``, what it sent) or the hang bound passes."""
    sock.settimeout(HANG)
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except TimeoutError:
        return False, got
    return True, got


def _request(port: int, token: str | None) -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Accept: text/event-stream\r\n\r\n").encode()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=HANG)


async def test_a_head_that_never_completes_is_closed_unanswered(port: int) -> None:
    def half_sent() -> tuple[bool, bytes, float]:
        with _connect(port) as s:
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # no end of the head, no token
            t0 = time.monotonic()
            closed, got = _closed_by_server(s)
            return closed, got, time.monotonic() - t0

    closed, got, waited = await anyio.to_thread.run_sync(half_sent)
    assert closed and got == b""  # closed, without an answer
    assert waited >= HEAD_TIMEOUT * 0.9  # not before the deadline


async def test_a_connection_that_sends_nothing_is_closed(port: int) -> None:
    def silent() -> tuple[bool, bytes]:
        with _connect(port) as s:
            return _closed_by_server(s)

    assert await anyio.to_thread.run_sync(silent) == (True, b"")


async def test_a_half_sent_head_after_a_response_is_closed_too(port: int) -> None:
    def kept_alive() -> tuple[bytes, bool, bytes]:
        with _connect(port) as s:
            s.sendall(_request(port, None))  # answered 401, and the connection kept alive
            first = b""
            while b"\r\n\r\n" not in first:
                first += s.recv(65536)
            s.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the next head, never finished
            return (first, *_closed_by_server(s))

    first, closed, rest = await anyio.to_thread.run_sync(kept_alive)
    assert first.startswith(b"HTTP/1.1 401")
    assert closed and b"HTTP/1.1" not in rest.split(b"\r\n\r\n", 1)[-1]


async def test_complete_requests_are_answered_while_heads_are_held(port: int) -> None:
    def both() -> tuple[bytes, bool]:
        held = [_connect(port) for _ in range(20)]
        try:
            for s in held:
                s.sendall(b"POST /mcp HTTP/1.1\r\n")
            with _connect(port) as s:
                s.sendall(_request(port, "wrong-" + TOKEN))
                answer = s.recv(65536)
            return answer, all(_closed_by_server(s)[0] for s in held)
        finally:
            for s in held:
                s.close()

    answer, all_closed = await anyio.to_thread.run_sync(both)
    assert answer.startswith(b"HTTP/1.1 401")
    assert all_closed


async def test_a_token_holders_unfinished_body_is_closed(port: int) -> None:
    def unfinished() -> tuple[bool, bytes, float]:
        with _connect(port) as s:
            s.sendall(
                (
                    f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
                    "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                    "Content-Length: 100000\r\n\r\n{"
                ).encode()
            )
            t0 = time.monotonic()
            closed, got = _closed_by_server(s)
            return closed, got, time.monotonic() - t0

    closed, _, waited = await anyio.to_thread.run_sync(unfinished)
    assert closed
    assert waited >= BODY_TIMEOUT * 0.9


async def test_a_refused_request_with_a_body_is_closed_at_once(patient_port: int) -> None:
    """Refused before its body is read (no token, a wrong one, a foreign session): the answer closes the
    connection, so a caller without a token cannot hold it by sending that body a byte at a time."""

    def refused(head: str) -> tuple[bytes, bool]:
        with _connect(patient_port) as s:
            s.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{patient_port}\r\n{head}\r\n{{").encode())
            answer = b""
            while b"\r\n\r\n" not in answer and (chunk := s.recv(65536)):
                answer += chunk
            return answer, _closed_while_trickling(s)

    length = "Content-Type: application/json\r\nContent-Length: 100000\r\n"
    for head in (
        length,
        f"Authorization: Bearer wrong-{TOKEN}\r\n{length}",
        "Transfer-Encoding: chunked\r\n",
        f"Authorization: Bearer {TOKEN}\r\nMcp-Session-Id: not-yours\r\n{length}",
    ):
        answer, closed = await anyio.to_thread.run_sync(refused, head)
        assert answer.startswith((b"HTTP/1.1 401", b"HTTP/1.1 404")), answer
        assert closed, head
        assert b"connection: close" in answer.lower(), answer


def _closed_while_trickling(sock: socket.socket, rounds: int = 40) -> bool:
    """Send a byte of the body every half second (which keeps an idle connection from timing out)
    until the server closes the socket (``True``) or ``rounds`` bytes are sent (``False``)."""
    sock.settimeout(0.5)
    for _ in range(rounds):
        try:
            if not sock.recv(65536):
                return True
        except TimeoutError:
            pass
        except ConnectionError:
            return True
        try:
            sock.sendall(b" ")
        except ConnectionError:
            return True
    return False


async def test_a_caller_has_at_most_its_share_of_requests_in_flight(patient_port: int) -> None:
    """Requests whose answers are never read (here: bodies never finished) held the server's memory
    without bound; past its share, a caller's next request is refused at once, and another caller's
    still goes through."""
    from toolcode.server._http_guard import MAX_IN_FLIGHT_PER_CALLER

    def post(token: str, *, whole: bool = False) -> str:
        """A request whose body never ends (held in flight), or a whole one (answered at once)."""
        return (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{patient_port}\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {2 if whole else 100000}\r\n\r\n{'{}' if whole else '{'}"
        )

    def answer(s: socket.socket) -> bytes:
        s.settimeout(HANG)
        return s.recv(65536)

    def alices_answer(refused: bool) -> bytes:
        """Alice's answer once it is (or is no longer) a refusal: requests reach the server in their own time."""
        got = b""
        for _ in range(600):
            with _connect(patient_port) as s:
                s.sendall(post(TOKEN, whole=True).encode())
                if (got := answer(s)).startswith(b"HTTP/1.1 429") is refused:
                    break
            time.sleep(0.1)
        return got

    def held_then_more() -> tuple[bytes, bytes, bytes]:
        held = [_connect(patient_port) for _ in range(MAX_IN_FLIGHT_PER_CALLER)]
        try:
            for s in held:
                s.sendall(post(TOKEN).encode())
            mine = alices_answer(refused=True)
            with _connect(patient_port) as s:
                s.sendall(post(BOB, whole=True).encode())
                theirs = answer(s)
        finally:
            for s in held:
                s.close()
        return mine, theirs, alices_answer(refused=False)

    mine, theirs, later = await anyio.to_thread.run_sync(held_then_more)
    assert mine.startswith(b"HTTP/1.1 429"), mine
    assert not theirs.startswith(b"HTTP/1.1 429"), theirs  # bob's share is his own
    assert not later.startswith(b"HTTP/1.1 429"), later  # closed, alice's requests are hers again


async def test_deadlines_must_be_positive() -> None:
    async with Toolbox() as box:
        for field in ("head_timeout", "body_timeout"):
            for bad in (0, -1.0, float("nan")):
                with pytest.raises(ConfigurationError, match=field):
                    await serve_http(box, "127.0.0.1", 0, **{field: bad})


@pytest.mark.parametrize("input_bytes", [0, 1_100_000], ids=["small", "over 1 MiB"])
async def test_a_run_whose_client_left_is_cancelled(patient_port: int, input_bytes: int) -> None:
    """A client that disconnected before its answer left its runs going to their own timeout,
    holding its share of workers: back a moment later, it was refused ``busy`` (a request over
    1 MiB, up to the SDK's own bound of 4 MiB, too)."""
    import json

    import httpx2

    from toolcode.engines.monty import default_max_processes

    share = max(1, default_max_processes() // 2)  # a caller's runs at once, by default

    url = f"http://127.0.0.1:{patient_port}/mcp"
    auth = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}

    def call(session: str, code: str, request_id: int) -> bytes:
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {
                "name": "execute_code",
                "arguments": {"code": code, "input": "x" * input_bytes, "options": {"timeout": HANG * 2}},
            },
        }
        data = json.dumps(body).encode()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{patient_port}\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
            f"mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        return head.encode() + data

    def scenario() -> str:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        with httpx2.Client(headers=auth, timeout=HANG) as http:
            opened = http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
            session = opened.headers["mcp-session-id"]
            http.post(
                url,
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers={"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"},
            )
        # As many endless runs as the caller may have at once, each client gone once its run started.
        spinning = [_connect(patient_port) for _ in range(share)]
        for i, s in enumerate(spinning, start=1):
            s.sendall(call(session, "while True:\n    pass", i))
        time.sleep(1.0)  # the runs start (bounds nothing: without the fix they never end)
        for s in spinning:
            s.close()
        with _connect(patient_port) as s:
            s.sendall(call(session, "__out = 6 * 7", 99))
            return _read_answer(s)

    answer = await anyio.to_thread.run_sync(scenario)
    assert '"id":99,"result"' in answer and '"value":42' in answer, answer[-600:]
    assert "busy" not in answer, answer[-600:]


def _read_answer(sock: socket.socket) -> str:
    """An answer's text, read until its last chunk (or the server closes, or the hang bound passes)."""
    sock.settimeout(HANG)
    got = b""
    try:
        while not got.endswith(b"\r\n0\r\n\r\n") and (chunk := sock.recv(65536)):
            got += chunk
    except TimeoutError:
        pass
    return got.decode("utf-8", "replace")


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_a_deeply_nested_call_is_answered_with_an_error(
    patient_port: int, version: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A ``tools/call`` body of 200,000 nested arrays raised ``RecursionError`` in the reader that looks for
    its id (to cancel it if its client leaves): ``500`` or a reset connection, and a long traceback logged
    for every such request."""
    import httpx2

    url = f"http://127.0.0.1:{patient_port}/mcp"
    auth = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code","arguments":{"x":'
        + b"[" * 200_000
        + b"]" * 200_000
        + b"}}}"
    )
    async with httpx2.AsyncClient(headers=auth, timeout=HANG) as http:
        headers = {"content-type": "application/json", "mcp-protocol-version": version}
        if version == "2025-11-25":
            init = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
            opened = await http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
            headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        answer = await http.post(url, content=body, headers=headers)
    assert answer.status_code < 500, answer.text[:300]
    assert '"error"' in answer.text, answer.text[:300]
    assert "RecursionError" not in caplog.text
