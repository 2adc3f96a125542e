"""`toolcode serve` over stdio as a process: SIGINT and SIGTERM stop it while its client keeps stdin open.

The SDK read stdin in a worker thread that no cancellation reaches: on SIGINT the server waited for
that thread, that is for its client's next line, and hung while the client waited for it to end;
SIGTERM killed it (exit -15) before it closed its upstream servers. The waits bound hangs only.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import anyio
import psutil
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp_support import toolcode_serve_args

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

HANG = 60.0
SPIN = 'run_tool("time:get_current_time", {"timezone": "UTC"})\nwhile True:\n    pass\n'


def _line(message: dict[str, object]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_a_signal_stops_the_server_with_a_run_in_flight_and_stdin_open(
    tmp_path: Path, sig: signal.Signals
) -> None:
    time_server = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"time": time_server}}))
    log = tmp_path / "serve.log"
    with log.open("wb") as err:
        args = ["-m", "toolcode.cli", "-v", *toolcode_serve_args(config)[2:]]  # -v: the info lines
        process = await anyio.open_process([sys.executable, *args], stderr=err)
    async with process:
        assert process.stdin is not None and process.stdout is not None
        out = BufferedByteReceiveStream(process.stdout)

        async def reply(request_id: int) -> dict[str, object]:
            with anyio.fail_after(HANG):
                while True:
                    message = json.loads(await out.receive_until(b"\n", 16 * 1024 * 1024))
                    if message.get("id") == request_id:
                        return message

        info = {"name": "t", "version": "1"}
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}
        await process.stdin.send(_line({"id": 1, "method": "initialize", "params": init}))
        assert "result" in await reply(1)
        await process.stdin.send(_line({"method": "notifications/initialized"}))
        upstream = psutil.Process(process.pid).children(recursive=True)
        assert upstream, "no upstream server started"
        call = {"name": "execute_code", "arguments": {"code": SPIN, "options": {"timeout": 600}}}
        await process.stdin.send(_line({"id": 2, "method": "tools/call", "params": call}))
        await process.stdin.send(_line({"id": 3, "method": "ping"}))
        assert "result" in await reply(3)  # read after the call: the run is under way
        process.send_signal(sig)
        with anyio.fail_after(HANG):  # stdin stays open: nothing but the signal ends the server
            code = await process.wait()
        text = log.read_text()
        assert code == (130 if sig == signal.SIGINT else 0), text  # as `serve --http` (docs/security.md)
        assert "server.stopping" in text and sig.name in text, text
        assert "Traceback" not in text, text
        _, alive = await anyio.to_thread.run_sync(lambda: psutil.wait_procs(upstream, timeout=HANG))
        assert not alive, [p.cmdline() for p in alive]
