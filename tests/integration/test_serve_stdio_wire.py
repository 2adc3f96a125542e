"""`toolcode serve` over stdio, spoken to line by line: every request with an id gets an answer.

The MCP SDK's stdio reader drops a line it cannot parse; a request dropped that way leaves its
client waiting forever. These tests write raw JSON-RPC lines to a real server process.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp_support import toolcode_serve_args

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

HANG_S = 60  # bounds only a real hang: the server answers in milliseconds


class Wire:
    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._out = BufferedByteReceiveStream(process.stdout)

    async def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(line + b"\n")

    async def reply(self, request_id: int | str) -> dict[str, Any]:
        """The next message that answers ``request_id`` (notifications are skipped)."""
        with anyio.fail_after(HANG_S):
            while True:
                line = await self._out.receive_until(b"\n", 16 * 1024 * 1024)
                message: dict[str, Any] = json.loads(line)
                if message.get("id") == request_id:
                    return message


@asynccontextmanager
async def _served(tmp_path: Path) -> AsyncIterator[Wire]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    async with await anyio.open_process([sys.executable, *toolcode_serve_args(config)]) as process:
        wire = Wire(process)
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        await wire.send(json.dumps(init).encode())
        assert "result" in await wire.reply(1)
        await wire.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        try:
            yield wire
        finally:
            process.terminate()


async def test_a_lone_surrogate_escape_is_answered(tmp_path: Path) -> None:
    async with _served(tmp_path) as wire:
        await wire.send(b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"_meta":{"x":"\\ud800"}}}')
        answer = await wire.reply(5)
        assert "result" in answer or "error" in answer, answer
        # The session reads on: the next request is answered as usual.
        await wire.send(b'{"jsonrpc":"2.0","id":6,"method":"tools/list"}')
        listed = await wire.reply(6)
        assert "execute_code" in {t["name"] for t in listed["result"]["tools"]}


async def test_an_unreadable_request_with_an_id_gets_an_error(tmp_path: Path) -> None:
    async with _served(tmp_path) as wire:
        await wire.send(b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":')  # cut short
        answer = await wire.reply(7)
        assert answer["error"]["code"] == -32700, answer  # parse error
        await wire.send(b'{"jsonrpc":"2.0","id":8,"method":42}')  # not a request
        answer = await wire.reply(8)
        assert answer["error"]["code"] == -32600, answer  # invalid request
        await wire.send(b'{"jsonrpc":"2.0","id":9,"method":"ping"}')
        assert "result" in await wire.reply(9)


async def test_each_request_of_a_batch_gets_an_error(tmp_path: Path) -> None:
    # MCP has no batches: an array of requests was dropped, and its client waited forever for each.
    async with _served(tmp_path) as wire:
        batch = [
            {"jsonrpc": "2.0", "id": 11, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": "twelve", "method": "tools/list"},
        ]
        await wire.send(json.dumps(batch).encode())
        for request_id in (11, "twelve"):
            answer = await wire.reply(request_id)
            assert answer["error"]["code"] == -32600, answer
            assert "batch" in answer["error"]["message"], answer
        await wire.send(b'{"jsonrpc":"2.0","id":13,"method":"ping"}')
        assert "result" in await wire.reply(13)


@pytest.mark.parametrize("stdin", ["a file", "a pipe closed after writing"])
async def test_each_request_sent_before_the_end_of_input_is_answered(tmp_path: Path, stdin: str) -> None:
    # At the end of its input the server stopped at once and cancelled the requests still in
    # flight: `toolcode serve < requests.jsonl` answered the initialize alone.
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    info = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": info},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(2, 8)),
        {
            "jsonrpc": "2.0",
            "id": 8,
            "method": "tools/call",
            "params": {"name": "execute_code", "arguments": {"code": "__out = 6 * 7"}},
        },
    ]
    body = b"\n".join(json.dumps(m).encode() for m in lines)  # the last line without its newline
    source = tmp_path / "requests.jsonl"
    source.write_bytes(body)
    command = [sys.executable, *toolcode_serve_args(config)]
    with anyio.fail_after(HANG_S):
        if stdin == "a file":
            with source.open("rb") as f:
                done = await anyio.run_process(command, stdin=f, check=False)
        else:
            done = await anyio.run_process(command, input=body, check=False)
    answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines()) if "id" in m}
    assert sorted(answers) == list(range(1, 9)), done.stderr.decode()[-2000:]
    assert "42" in json.dumps(answers[8]["result"]), answers[8]
    assert done.returncode == 0, done.stderr.decode()[-2000:]
