"""The stdio server's standard input, read on the event loop: cancelling the server ends its reading.

The MCP SDK reads stdin with a blocking ``readline`` in a worker thread that no cancellation
reaches: a server told to stop (SIGINT, SIGTERM, a host's cancel scope) waited for its client's
next line, and its client waited for it to end. :class:`StdinLines` reads the same lines without a
thread: it waits until its descriptor is readable (a wait that cancellation ends), then reads what
is there. A regular file (``serve < requests.jsonl``) is never waited for: its reads do not block.

Like the SDK, it takes fd 0 for itself while it serves — fd 0 then reads the null device, so
nothing else in the process, nor a child, takes lines off the wire — and gives it back after.
A line longer than :data:`MAX_LINE` bytes is dropped (with a warning): the HTTP door's bound on a
request's body.
"""

from __future__ import annotations

import fcntl
import os
from types import TracebackType
from typing import Final, Self

import anyio
import anyio.lowlevel

from toolindex.log import get_logger

__all__ = ["MAX_LINE", "StdinLines"]

_log = get_logger("toolcode.server")

MAX_LINE: Final = 4 * 1024 * 1024
"""Bytes of one line read at most (the MCP SDK's bound on an HTTP request's body)."""
_CHUNK: Final = 64 * 1024


class StdinLines:
    """The lines of a descriptor (stdin by default) as an async iterator of ``str``, for the SDK's ``stdio_server``.

    Use it as an async context manager: entering claims ``fd`` (see the module docstring), leaving
    gives it back. Bytes that are not UTF-8 are replaced (U+FFFD), as the SDK's reader does.

    Args:
        fd: The descriptor to serve from (``0``).
    """

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._wire = -1
        self._waits = True
        self._buffer = bytearray()
        self._scanned = 0
        self._dropping = False

    async def __aenter__(self) -> Self:
        self._wire = fcntl.fcntl(self._fd, fcntl.F_DUPFD_CLOEXEC, 3)
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, self._fd)
        except OSError:
            os.close(self._wire)
            raise
        finally:
            os.close(null)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        try:
            os.dup2(self._wire, self._fd)
        finally:
            os.close(self._wire)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> str:
        """The next line, with its end (the last one may have none); ends at end of file.

        A line feed, a carriage return, or the two in that order each end a line, as for the SDK's
        reader (universal newlines); a JSON message holds neither character unescaped.
        """
        while True:
            end = _line_end(self._buffer, self._scanned)
            if end > MAX_LINE or (end < 0 and len(self._buffer) > MAX_LINE):
                self._drop()
                continue
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                self._scanned = 0
                if self._dropping:
                    self._dropping = False
                    continue
                if line in (b"\n", b"\r"):  # the \n of a \r\n, or an empty line: nothing to read
                    continue
                return line.decode("utf-8", "replace")
            self._scanned = len(self._buffer)
            chunk = await self._read()
            if not chunk:
                line, dropped = bytes(self._buffer), self._dropping
                self._buffer.clear()
                self._scanned, self._dropping = 0, False
                if line and not dropped:
                    return line.decode("utf-8", "replace")
                raise StopAsyncIteration
            self._buffer += chunk

    def _drop(self) -> None:
        """Drop the line being read: the bytes up to its end (or all there are, and those to come up to it)."""
        if not self._dropping:
            _log.warning("server.stdin_line_dropped", reason=f"longer than {MAX_LINE} bytes")
        end = _line_end(self._buffer, self._scanned)
        if end < 0:
            self._buffer.clear()
            self._dropping = True
        else:
            del self._buffer[: end + 1]
            self._dropping = False
        self._scanned = 0

    async def _read(self) -> bytes:
        if self._waits:
            try:
                await anyio.wait_readable(self._wire)
            except PermissionError:  # a regular file or the null device: reads that never block
                self._waits = False
        if not self._waits:
            await anyio.lowlevel.checkpoint()
        return os.read(self._wire, _CHUNK)


def _line_end(buffer: bytearray, start: int) -> int:
    """Where the first line feed or carriage return of ``buffer`` from ``start`` is (``-1``: none yet)."""
    ends = [i for i in (buffer.find(b"\n", start), buffer.find(b"\r", start)) if i >= 0]
    return min(ends) if ends else -1
