"""The private parts of uvicorn that the HTTP door relies on, in one place: bounds on a request's arrival, and its stop.

uvicorn waits for a request as long as its client keeps the connection open, so a client without a
token could hold many half-sent heads until the process runs out of file descriptors, and one with
a token could hold a body it never finishes. :func:`deadline_protocol` is uvicorn's h11 protocol
with a deadline on each request's head (from the connection's start, or from the first byte after
a response, until the head is complete) and on its body (from the head's end until the body is
complete). A connection past either is closed.

uvicorn stops on SIGTERM and SIGINT, then raises the signal again once it has stopped: SIGTERM then
kills the process before anything after the server (the upstream servers' shutdown) runs.
:func:`stop_listening` and :func:`take_signals` let the door stop listening before it drains its
requests, and keep the signals it has handled from being raised again.

sse_starlette (the MCP SDK's event streams) patches ``uvicorn.Server.handle_exit`` so that a signal
ends every event stream at once: a 2025-11-25 session's answers are such streams, so a run in flight
lost its answer whatever the door's grace. :func:`streams_left_to_the_door` turns that off while the
door serves (its graceful stop ends the streams after the grace instead).

These internals are pinned by ``tests/toolcode/test_compat.py`` against the installed packages.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Generator

import h11
import uvicorn
from sse_starlette.sse import AppStatus
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "BODY_TIMEOUT",
    "CHECKED_ON",
    "HEAD_TIMEOUT",
    "deadline_protocol",
    "stop_listening",
    "streams_left_to_the_door",
    "take_signals",
]

CHECKED_ON = "0.54"
"""The uvicorn minor version these internals were read on."""

HEAD_TIMEOUT = 10.0
"""Seconds a request's head may take to arrive, by default."""
BODY_TIMEOUT = 60.0
"""Seconds a request's body may take to arrive after its head, by default."""


def deadline_protocol(head: float, body: float) -> type[asyncio.Protocol]:
    """The h11 protocol of uvicorn, closing a connection whose request head or body is late.

    A request's head is awaited when the connection opens and when bytes of another request come
    after a response (an idle connection between requests is uvicorn's keep-alive timeout's); its
    body from the end of its head until its last byte.
    """

    class Deadlines(H11Protocol):
        _timer: asyncio.TimerHandle | None = None
        _awaiting: type[h11.IDLE] | type[h11.SEND_BODY] | None = None
        """What the timer waits for: a head (``IDLE``), a body (``SEND_BODY``), or nothing."""

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            self._watch()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop()
            super().connection_lost(exc)

        def _watch(self) -> None:
            state = self.conn.their_state
            if state is self._awaiting or self.transport.is_closing():
                return
            self._stop()
            if state is h11.IDLE or state is h11.SEND_BODY:
                self._awaiting = state
                self._timer = self.loop.call_later(head if state is h11.IDLE else body, self._late)

        def _stop(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._awaiting = None

        def _late(self) -> None:
            late = self.conn.their_state is self._awaiting
            self._timer = self._awaiting = None
            if late and not self.transport.is_closing():
                self.transport.close()

    return Deadlines


def stop_listening(server: uvicorn.Server) -> None:
    """Close ``server``'s listening sockets (uvicorn's own shutdown does it again, harmlessly)."""
    for listener in server.servers:
        listener.close()


def take_signals(server: uvicorn.Server) -> list[signal.Signals]:
    """The signals ``server`` stopped on so far, which it will then not raise again (call it before ``serve`` returns).

    Raises:
        RuntimeError: If the installed uvicorn no longer keeps them in ``_captured_signals``.
    """
    captured: object = getattr(server, "_captured_signals", None)
    if not isinstance(captured, list):
        raise RuntimeError(f"uvicorn.Server keeps no _captured_signals list any more (checked on uvicorn {CHECKED_ON})")
    taken = [signal.Signals(s) for s in captured]  # pyright: ignore[reportUnknownVariableType]
    captured.clear()  # pyright: ignore[reportUnknownMemberType]
    return taken


_doors_holding_streams = 0
"""Doors serving in this process (sse_starlette's switch is process-wide: the last one out restores it)."""


@contextlib.contextmanager
def streams_left_to_the_door() -> Generator[None]:
    """While held, a signal to uvicorn no longer ends sse_starlette's event streams (the door ends them)."""
    global _doors_holding_streams
    if _doors_holding_streams == 0:
        AppStatus.disable_automatic_graceful_drain()
    _doors_holding_streams += 1
    try:
        yield
    finally:
        _doors_holding_streams -= 1
        if _doors_holding_streams == 0:
            AppStatus.enable_automatic_graceful_drain_mode()
