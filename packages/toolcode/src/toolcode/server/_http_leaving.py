"""A request whose client left: what it started is cancelled, as if the client had cancelled it.

An MCP client that goes away (closed, crashed, restarted) before its ``tools/call`` is answered
never reads the answer, but the run it started went on to its own timeout (up to minutes),
holding its caller's share of workers: the same caller, back a moment later, was refused
``busy``. :class:`CancelOnLeave` watches each ``POST`` once its body has arrived; when the
connection drops before the answer has gone out, it does what the client would have done: it
sends the server a ``notifications/cancelled`` for that request, in the request's session (a
2025-11-25 session's requests run apart from their ``POST``), and cancels the ``POST``'s own
handling (a stateless request runs inside it).

A client that leaves while still sending a request's body started nothing: that request's handling
is cancelled where it waits for the rest, with one ``info`` line, instead of the MCP SDK (or
uvicorn) logging the ``ClientDisconnect`` with its traceback.
"""

from __future__ import annotations

import json
from typing import Final, cast

import anyio
import anyio.lowlevel

from toolcode.server._http_guard import ASGIApp, Message, Receive, Scope, Send
from toolindex.log import get_logger

__all__ = ["CancelOnLeave"]

log = get_logger("toolcode.server")

_WATCHED_BODY: Final = 4 * 1024 * 1024
"""Bodies up to this size are read for the request's id: the MCP SDK's own bound on a request's body
(a larger one is refused, ``413``, before anything runs)."""
_KEPT_HEADERS: Final = frozenset({b"host", b"authorization", b"mcp-session-id", b"mcp-protocol-version"})


class CancelOnLeave:
    """ASGI middleware: cancels a ``tools/call`` whose client disconnected before its answer (module docstring).

    Args:
        app: The MCP application (behind the guard, so that the scope names the caller).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body: list[bytes] = []
        size = 0
        arrived = anyio.Event()
        answered = False
        request_id: int | str | None = None

        async def received() -> Message:
            nonlocal size, request_id
            message = await receive()
            if message["type"] == "http.disconnect" and not arrived.is_set():
                if "reason" not in message:  # else the server cut it (it is stopping), and says so itself
                    log.info("http.client_left", during="request body", received_bytes=size)
                handling.cancel()
                await anyio.lowlevel.checkpoint()  # raises the cancellation here, where the body was awaited
            if message["type"] == "http.request":
                chunk = message.get("body", b"")
                size += len(chunk)
                if size <= _WATCHED_BODY:
                    body.append(chunk)
                if not message.get("more_body", False):
                    # Read for its id once it is whole, and not kept: the application holds the body.
                    request_id = _request_id(b"".join(body)) if size <= _WATCHED_BODY else None
                    body.clear()
                    arrived.set()
            return message

        async def sent(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                answered = True
            await send(message)

        handling = anyio.CancelScope()
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                await arrived.wait()
                message = await receive()  # what comes after a whole body: the client leaving
                if message["type"] != "http.disconnect" or answered:
                    return
                tg.cancel_scope.cancel()
                if request_id is not None:
                    with anyio.CancelScope(shield=True):
                        await self._cancel(scope, request_id, message.get("reason"))

            tg.start_soon(watch)
            with handling:
                await self.app(scope, received, sent)
            tg.cancel_scope.cancel()

    async def _cancel(self, scope: Scope, request_id: int | str, reason: str | None) -> None:
        """Tell the server, in the request's own session and as its caller, that the request is cancelled.

        ``reason``: why the server itself ended the request (``None``: its client disconnected).
        """
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason or "the client disconnected"},
        }
        data = json.dumps(note).encode()
        headers = [(k, v) for k, v in scope.get("headers", ()) if k.lower() in _KEPT_HEADERS]
        headers += [
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-length", str(len(data)).encode()),
        ]
        inner: Scope = {**scope, "headers": headers}
        given = False

        async def receive() -> Message:
            nonlocal given
            if given:
                await anyio.sleep_forever()
            given = True
            return {"type": "http.request", "body": data, "more_body": False}

        async def discard(message: Message) -> None:
            return None

        with anyio.move_on_after(5):
            try:
                await self.app(inner, receive, discard)
            except Exception as e:  # the client is gone: nobody to tell, only the log
                log.debug("http.cancel_failed", error=repr(e)[:200])
        if reason is None:
            log.info("http.client_left", request_id=str(request_id)[:40])


def _request_id(body: bytes) -> int | str | None:
    """The id of a ``tools/call`` request in ``body`` (``None``: not one, or not JSON)."""
    if b"tools/call" not in body:  # parsed only when it may be one
        return None
    try:
        message: object = json.loads(body)
    except (ValueError, RecursionError):  # nested past Python's parser: the SDK's own answers it
        return None
    if not isinstance(message, dict):
        return None
    fields = cast("dict[str, object]", message)
    if fields.get("method") != "tools/call":
        return None
    request_id = fields.get("id")
    return request_id if isinstance(request_id, int | str) and not isinstance(request_id, bool) else None
