"""StdinLines: the stdio server's stdin read on the event loop (cancellable), line by line, bounded."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from toolcode.server._stdio_in import MAX_LINE, StdinLines

pytestmark = pytest.mark.anyio


async def _lines(fd: int) -> list[str]:
    async with StdinLines(fd) as lines:
        return [line async for line in lines]


async def test_lines_arrive_whole_across_reads_and_the_last_may_lack_its_newline() -> None:
    r, w = os.pipe()
    try:
        async with anyio.create_task_group() as tg:

            async def write() -> None:
                for part in (b'{"a":', b' 1}\n{"b": 2}\n\xff\n', b"tail"):
                    os.write(w, part)
                    await anyio.sleep(0.01)
                os.close(w)

            tg.start_soon(write)
            got = await _lines(r)
        assert got == ['{"a": 1}\n', '{"b": 2}\n', "\ufffd\n", "tail"]
    finally:
        os.close(r)


async def test_a_line_over_the_bound_is_dropped_and_reading_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    r, w = os.pipe()
    try:
        async with anyio.create_task_group() as tg:

            async def write() -> None:
                await anyio.to_thread.run_sync(os.write, w, b"x" * (MAX_LINE + 10) + b"\nnext\n")
                os.close(w)

            tg.start_soon(write)
            got = await _lines(r)
        assert got == ["next\n"]
        assert "server.stdin_line_dropped" in caplog.text
    finally:
        os.close(r)


async def test_cancelling_ends_a_wait_for_a_line_that_never_comes() -> None:
    # The SDK's reader blocked in a thread here: a server told to stop waited for its client's next line.
    r, w = os.pipe()
    try:
        with anyio.move_on_after(0.2) as waited:  # bounds the test only: nothing is ever written
            await _lines(r)
        assert waited.cancelled_caught
    finally:
        os.close(r)
        os.close(w)


async def test_the_descriptor_reads_the_null_device_while_served_and_is_given_back(tmp_path: Path) -> None:
    source = tmp_path / "requests.jsonl"
    source.write_bytes(b"one\ntwo\n")
    fd = os.open(source, os.O_RDONLY)  # a regular file: never waited for
    try:
        async with StdinLines(fd) as lines:
            assert os.read(fd, 10) == b""  # the null device: the lines are the reader's alone
            assert [line async for line in lines] == ["one\n", "two\n"]
        assert os.fstat(fd).st_ino == source.stat().st_ino
    finally:
        os.close(fd)


async def test_a_carriage_return_ends_a_line_too(tmp_path: Path) -> None:
    # The SDK's reader (universal newlines) ended a line at \r, \r\n or \n: a client ending its
    # messages with \r alone was never answered once only \n ended a line.
    source = tmp_path / "requests.jsonl"
    source.write_bytes(b"one\rtwo\r\nthree\nfour\r")
    fd = os.open(source, os.O_RDONLY)
    try:
        assert [line.strip() for line in await _lines(fd)] == ["one", "two", "three", "four"]
    finally:
        os.close(fd)
