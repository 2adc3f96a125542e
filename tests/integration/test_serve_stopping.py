"""`toolcode serve --http` as a process: a client that leaves mid-body, and SIGTERM with requests in flight.

Each test reads the server's stderr: what it logs is what an operator sees. The waits bound hangs only.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import anyio
import httpx2
import psutil
import pytest
from mcp_support import ServeProcess, toolcode_serve_process

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

HANG = 60.0
VERSION = "2025-11-25"
SPIN = {"code": "while True:\n    pass", "options": {"timeout": 600}}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    time_server = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"time": time_server}}))
    return path


async def _session(url: str) -> str:
    init = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    async with httpx2.AsyncClient(headers={"Accept": "application/json, text/event-stream"}, timeout=HANG) as http:
        opened = await http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        sid = opened.headers["mcp-session-id"]
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(url, json=done, headers={"mcp-session-id": sid, "mcp-protocol-version": VERSION})
    return sid


async def _post(served: ServeProcess, sid: str, body: bytes, *, sent: int | None = None) -> anyio.abc.SocketStream:
    """A raw POST of ``body`` in session ``sid`` (only its first ``sent`` bytes: a body still arriving)."""
    port = int(served.url.rsplit(":", 1)[1].split("/")[0])
    stream = await anyio.connect_tcp("127.0.0.1", port)
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Type: application/json\r\nmcp-session-id: {sid}\r\nmcp-protocol-version: {VERSION}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    await stream.send(head.encode() + body[:sent])
    return stream


def _call(request_id: int, arguments: dict[str, object]) -> bytes:
    params = {"name": "execute_code", "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


async def _read_all(stream: anyio.abc.SocketStream) -> bytes:
    """What the server sends until it closes the connection (or has sent a whole chunked answer); closed after."""
    got = b""
    async with stream:
        with anyio.move_on_after(HANG):  # a hang bound
            try:
                while not got.endswith(b"\r\n0\r\n\r\n"):
                    got += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                pass
    return got


async def test_a_client_leaving_mid_body_is_one_quiet_line(config: Path) -> None:
    """The MCP SDK logged ``Error handling POST request`` and a ``ClientDisconnect`` traceback."""
    async with toolcode_serve_process(config) as served:
        sid = await _session(served.url)
        leaving = await _post(served, sid, _call(7, {"code": "1", "input": "x" * 100_000}), sent=1_000)
        await leaving.aclose()
        with anyio.fail_after(HANG):
            line = await served.line_with("http.client_left", "Traceback", "Error handling POST")
        assert "http.client_left" in line and "INFO" in line, line
        answer = await _read_all(await _post(served, sid, _call(8, {"code": "__out = 6 * 7"})))
        assert b'"value":42' in answer, answer[-300:]  # the session is unaffected
        assert not [ln for ln in served.lines if "Traceback" in ln or " ERROR " in ln], served.lines


async def test_sigterm_stops_gracefully_with_requests_in_flight(config: Path) -> None:
    """SIGTERM logged a traceback per request (cut after uvicorn's 2 s), then the process died of the
    signal again (exit -15) before it closed its upstream servers."""
    async with toolcode_serve_process(config, "--stop-grace", "1") as served:
        upstream = psutil.Process(served.process.pid).children(recursive=True)
        assert upstream, "no upstream server started"
        sid = await _session(served.url)
        spinning = [await _post(served, sid, _call(i, SPIN)) for i in (1, 2)]
        for s in spinning:
            with anyio.fail_after(HANG):
                assert (await s.receive()).startswith(b"HTTP/1.1 200"), "the run did not start"
        arriving = await _post(served, sid, _call(3, {"code": "1", "input": "x" * 100_000}), sent=1_000)
        served.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(HANG):
            assert await served.process.wait() == 0, served.lines
            late = await _read_all(arriving)
        assert late.startswith(b"HTTP/1.1 503"), late[:200]
        for s in spinning:
            await _read_all(s)  # answered, or closed: never held open
        assert not [ln for ln in served.lines if "Traceback" in ln or " ERROR " in ln], served.lines
        assert any("server.stopping" in ln and "SIGTERM" in ln for ln in served.lines), served.lines
        _, alive = await anyio.to_thread.run_sync(lambda: psutil.wait_procs(upstream, timeout=HANG))
        assert not alive, [p.cmdline() for p in alive]


async def test_a_sessions_run_in_flight_gets_the_grace_and_its_answer(config: Path) -> None:
    """A 2025-11-25 session's answer is a stream of events, which sse_starlette ended at the signal
    itself: the run's result never reached its client, however long the grace."""
    async with toolcode_serve_process(config, "--stop-grace", "60") as served:
        sid = await _session(served.url)
        code = "import time\ntime.sleep(2)\n__out = 'finished after the signal'"
        running = await _post(served, sid, _call(1, {"code": code}))
        with anyio.fail_after(HANG):
            head = await running.receive()
        assert head.startswith(b"HTTP/1.1 200"), "the run did not start"
        served.process.send_signal(signal.SIGTERM)
        answer = head + await _read_all(running)
        with anyio.fail_after(HANG):
            assert await served.process.wait() == 0, served.lines
        assert b"finished after the signal" in answer, answer[-500:]
        assert not [ln for ln in served.lines if "server.request_cut" in ln], served.lines


async def test_cancelling_an_in_process_server_stops_it_as_a_signal_does(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # Cancelled, uvicorn's serve() was cut before its shutdown: its lifespan task, left to the loop,
    # logged a CancelledError traceback, and the requests in flight got no grace.
    from toolcode import Toolbox
    from toolcode.server import serve_http

    caplog.set_level("INFO", logger="toolcode.server")
    async with Toolbox.from_config({"mcpServers": {}}) as box:
        urls: list[str] = []
        async with anyio.create_task_group() as tg:
            ready = anyio.Event()

            def on_ready(url: str) -> None:
                urls.append(url)
                ready.set()

            serving = anyio.CancelScope()

            async def serve() -> None:
                with serving:
                    await serve_http(box, "127.0.0.1", 0, on_ready=on_ready)

            tg.start_soon(serve)
            with anyio.fail_after(HANG):
                await ready.wait()
            sid = await _session(urls[0])
            code = "import time\ntime.sleep(1)\n__out = 'finished after the cancel'"
            async with httpx2.AsyncClient(timeout=HANG) as http:
                headers = {"Accept": "application/json, text/event-stream", "mcp-session-id": sid}
                headers |= {"mcp-protocol-version": VERSION, "Content-Type": "application/json"}
                async with http.stream("POST", urls[0], content=_call(1, {"code": code}), headers=headers) as res:
                    assert res.status_code == 200
                    serving.cancel()
                    answer = await res.aread()
        assert b"finished after the cancel" in answer, answer
    left = [t for t in asyncio.all_tasks() if "uvicorn" in repr(t)]
    assert not left, left  # uvicorn's lifespan task waited to be cancelled at the loop's end (a traceback)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "CancelledError" not in err, err
    logged = caplog.text
    assert "server.stopping" in logged and "cancelled" in logged, logged
    assert "callers='any local'" in logged, logged  # not hidden as a secret-looking key
