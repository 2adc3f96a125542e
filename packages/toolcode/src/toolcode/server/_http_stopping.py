"""The HTTP door's graceful stop: requests in flight end or are cut within a grace period, each answered.

uvicorn stops on SIGTERM or SIGINT by cancelling whatever is still running two seconds after it
stopped listening: one traceback per request, answers cut mid-stream, and the MCP SDK's sessions
ended under requests whose streams were already gone. :class:`Stopping` wraps the application and,
once :meth:`Stopping.stop` is called (after the listener is closed):

1. answers each new request on a kept-alive connection ``503`` (``Connection: close``);
2. ends each ``GET`` stream (it does no work: a 2025-11-25 session's stream of notifications) at once;
3. lets the other requests in flight finish, for up to ``grace`` seconds;
4. then tells each one left that its client is gone (``http.disconnect``): a ``tools/call`` is
   cancelled by :class:`~toolcode.server._http_leaving.CancelOnLeave`, a body still arriving is
   dropped, and each is answered ``503``, or its response ended if it had begun; one warning
   line per request cut. What still runs a few seconds later is cancelled.
"""

from __future__ import annotations

from typing import Final

import anyio

from toolcode.server._http_guard import ASGIApp, Message, Receive, Scope, Send
from toolindex.log import get_logger

__all__ = ["STOPPING_REASON", "STOP_GRACE", "Stopping"]

log = get_logger("toolcode.server")

STOP_GRACE: Final = 10.0
"""Seconds requests in flight may take to finish once the server stops, by default."""
STOPPING_REASON: Final = "the server is stopping"
"""The ``reason`` of the ``http.disconnect`` a cut request receives (its run's cancellation says it)."""
_CUT_WAIT: Final = 5.0
"""Seconds a cut request may take to wind down (its run's cancellation) before it is cancelled outright."""
_UNAVAILABLE = b"the server is stopping: try again on another replica or after it restarts\n"


class _Request:
    """One request in flight: whether it answered, and what ends it."""

    __slots__ = ("cut", "done", "ended", "receiving", "scope", "started", "stream")

    def __init__(self, stream: bool) -> None:
        self.stream = stream
        self.started = False
        self.ended = False
        self.cut = False
        self.done = anyio.Event()
        self.scope = anyio.CancelScope()
        self.receiving: anyio.CancelScope | None = None
        """The scope of the application's wait for a message under way (cancelled when the request is cut)."""

    def end(self) -> None:
        """Cut the request: the message it waits for, and each one after, is ``http.disconnect``."""
        self.cut = True
        if self.receiving is not None:
            self.receiving.cancel()


class Stopping:
    """ASGI middleware: the server's graceful stop (module docstring).

    Args:
        app: The application to stop gracefully.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._stopping = False
        self._requests: set[_Request] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        if self._stopping:
            await _unavailable(send)
            return
        request = _Request(stream=scope.get("method") == "GET")

        async def received() -> Message:
            if not request.cut:
                with anyio.CancelScope() as request.receiving:  # cancelled only by request.end()
                    return await receive()
            return {"type": "http.disconnect", "reason": STOPPING_REASON}

        async def sent(message: Message) -> None:
            if message["type"] == "http.response.start":
                request.started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                request.ended = True
            await send(message)

        self._requests.add(request)
        try:
            with request.scope:
                await self.app(scope, received, sent)
        finally:
            self._requests.discard(request)
            request.done.set()
        # A response begun and not ended is ended here (the MCP SDK's session streams can return so).
        if not request.ended and (request.started or request.cut):
            try:
                if request.started:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                else:
                    await _unavailable(send)
            except OSError:  # the client left too: nothing to answer
                pass

    async def stop(self, grace: float = STOP_GRACE, *, why: str = "") -> None:
        """Stop taking requests, and end those in flight within ``grace`` seconds (module docstring)."""
        self._stopping = True
        work = [r for r in self._requests if not r.stream]
        log.info("server.stopping", why=why or None, requests=len(work), grace_s=grace)
        for r in self._requests - set(work):
            r.end()
        with anyio.move_on_after(grace):
            for r in work:
                await r.done.wait()
        left = [r for r in work if not r.done.is_set()]
        for r in left:
            log.warning("server.request_cut", reason=f"still running {grace:g} s after the server began to stop")
            r.end()
        with anyio.move_on_after(_CUT_WAIT):
            for r in list(self._requests):
                await r.done.wait()
        for r in list(self._requests):
            r.scope.cancel()


async def _unavailable(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(_UNAVAILABLE)).encode()),
                (b"connection", b"close"),
                (b"retry-after", b"1"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": _UNAVAILABLE})
