"""A stdio server's stderr goes to the operator's log, never to the callers' error messages.

Servers print anything there, tokens included. :class:`StderrPump` reads the child's stderr
from a pipe as it is written and logs each line at info level (``mcp.stderr``, bound to the
server's name: most of it is a server's ordinary chatter, such as "running on stdio" or an
installer's progress; a server that fails to start has its last lines in the warning that
reports it), redacted, cut to :data:`MAX_LINE` characters and rate-limited to
:data:`BURST` lines per :data:`WINDOW_S` seconds (the rest is counted in one
``mcp.stderr_suppressed`` line). It keeps the last :data:`TAIL_CHARS` characters for the
servers whose config asks for ``exposeStderr``.
"""

from __future__ import annotations

import os
from collections import deque
from typing import IO, Any

import anyio

from toolrun._redact import redact

__all__ = ["BURST", "MAX_LINE", "TAIL_CHARS", "WINDOW_S", "LogLimiter", "StderrPump"]

MAX_LINE = 500
"""Characters of one stderr line that reach the log."""
BURST = 20
"""Lines logged per window; the rest are counted."""
WINDOW_S = 10.0
"""Length of a rate-limiting window, in seconds."""
TAIL_CHARS = 2000
"""Characters of recent stderr kept for ``exposeStderr``."""
_READ = 64 * 1024
_DRAIN = 4 * _READ
"""Bytes read at most before the loop is given back to everything else."""
# A "line" without a newline is cut here, so a child writing megabytes without one stays bounded.
_PENDING_MAX = 8 * 1024


class LogLimiter:
    """At most ``burst`` events per ``window`` seconds; counts the ones it refuses.

    Args:
        burst: Events allowed per window.
        window: Window length in seconds.
    """

    def __init__(self, burst: int = BURST, window: float = WINDOW_S) -> None:
        self._burst = burst
        self._window = window
        self._start = -window
        self._used = 0
        self.suppressed = 0
        """Events refused since the last :meth:`take_suppressed`."""

    def allow(self) -> bool:
        """Whether one more event may be logged now."""
        now = anyio.current_time()
        if now - self._start >= self._window:
            self._start, self._used = now, 0
        if self._used < self._burst:
            self._used += 1
            return True
        self.suppressed += 1
        return False

    def take_suppressed(self) -> int:
        """The count of refused events, reset to zero."""
        n, self.suppressed = self.suppressed, 0
        return n


class StderrPump:
    """Reads one child's stderr from a pipe into the log (see the module docstring).

    Use: :meth:`open` before starting the child (pass the returned file as its stderr),
    :meth:`spawned` once it runs, :meth:`run` in a task, :meth:`close` when the session ends.

    Args:
        log: A logger bound to the server (``toolindex.log.get_logger``).
    """

    def __init__(self, log: Any) -> None:
        self._log = log
        self._limiter = LogLimiter()
        self._rfd = -1
        self._writer: IO[bytes] | None = None
        self._pending = b""
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._closed = False

    def open(self) -> IO[bytes]:
        """Create the pipe; returns its write end, for the child's stderr."""
        rfd, wfd = os.pipe()
        os.set_blocking(rfd, False)
        self._rfd = rfd
        self._writer = os.fdopen(wfd, "wb", buffering=0)
        return self._writer

    def spawned(self) -> None:
        """Drop this process's copy of the write end, so the child's exit reads as end of file."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    async def run(self) -> None:
        """Log what the child writes until it closes its stderr or :meth:`close` is called."""
        try:
            while not self._closed:
                await anyio.wait_readable(self._rfd)
                if not self.drain():
                    return
        except (anyio.ClosedResourceError, OSError, ValueError):
            return  # closed under the wait
        finally:
            self._flush()

    def drain(self) -> bool:
        """Read what is available without waiting, up to :data:`_DRAIN` bytes; ``False`` at end of file or closed.

        Bounded: a child that writes as fast as it is read would otherwise keep this loop, and the
        event loop every caller shares, busy for as long as it writes.
        """
        for _ in range(_DRAIN // _READ):
            if self._closed:
                return False
            try:
                chunk = os.read(self._rfd, _READ)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            self._feed(chunk)
        return not self._closed

    def tail(self) -> str:
        """The last lines the child wrote (read so far), redacted."""
        self.drain()
        return redact("\n".join(self._tail)).strip()

    def close(self) -> None:
        """Log what is left, stop :meth:`run` and close the pipe; idempotent."""
        if self._closed:
            return
        self.drain()
        self._flush(final=True)
        self._closed = True
        self.spawned()
        if self._rfd >= 0:
            anyio.notify_closing(self._rfd)
            os.close(self._rfd)
            self._rfd = -1

    def _feed(self, chunk: bytes) -> None:
        data = self._pending + chunk
        *lines, rest = data.split(b"\n")
        if len(rest) > _PENDING_MAX:
            lines.append(rest)
            rest = b""
        self._pending = rest
        for raw in lines:
            self._line(raw)

    def _flush(self, *, final: bool = False) -> None:
        if final and self._pending:
            self._line(self._pending)
            self._pending = b""
        if n := self._limiter.take_suppressed():
            self._log.info("mcp.stderr_suppressed", lines=n, reason=f"more than {BURST} lines in {WINDOW_S:g} s")

    def _line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        if not text.strip():
            return
        if len(text) > MAX_LINE:
            # Redacted before the cut: a secret cut in two would no longer be found.
            text = redact(text)[:MAX_LINE] + "…"
        self._tail.append(text)
        self._tail_len += len(text) + 1
        while self._tail_len > TAIL_CHARS and len(self._tail) > 1:
            self._tail_len -= len(self._tail.popleft()) + 1
        if self._limiter.allow():
            if n := self._limiter.take_suppressed():
                self._log.info("mcp.stderr_suppressed", lines=n, reason=f"more than {BURST} lines in {WINDOW_S:g} s")
            self._log.info("mcp.stderr", line=redact(text))
