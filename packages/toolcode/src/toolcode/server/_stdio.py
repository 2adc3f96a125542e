r"""The server's stdio read side: a request the MCP SDK could not read is mended or answered, never dropped.

The SDK reads each line with pydantic's JSON parser and hands the server an exception for a
line it cannot read, which the server ignores: the client that sent it waits forever. Wrapped
around the read stream, :class:`AnsweringReadStream` takes those exceptions instead:

- a line Python's own JSON parser reads (pydantic refuses lone surrogate escapes such as
  ``"\\ud800"``; Python reads them) is read again with each lone surrogate replaced by U+FFFD,
  and handed on if it is a JSON-RPC message then;
- otherwise, if the line carries a request id, that id is answered with a JSON-RPC error:
  ``-32700`` (parse error) for a line that is not JSON, ``-32600`` (invalid request) for JSON
  that is not a JSON-RPC message;
- a batch (a JSON array, which MCP does not have) gets a ``-32600`` error for each request in it
  that carries an id (the first 1,000);
- a line with no id to answer is dropped, as before (nobody waits for it).

The SDK's server also stops serving the moment its input ends, cancelling the requests still in
flight: a client that closes stdin after its last request (``toolcode serve < requests.jsonl``, a
pipe) got no answer to them. :class:`OpenRequests` counts the requests handed on and the answers
written: read through it, the end of input waits until each request is answered (or cancelled by
its client), for up to a grace, then ends the server as before.
"""

from __future__ import annotations

import json
import re
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar, cast

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from toolcode._metatools import as_object
from toolindex.log import get_logger
from toolrun import find_request_id

__all__ = ["AnsweringReadStream", "OpenRequests"]

_log = get_logger("toolcode.server")
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
_MAX_BATCH_ANSWERS = 1_000
"""Requests of one batch answered at most (each costs a line written back)."""
_NO_BATCHES = "JSON-RPC batches are not supported (MCP has none): send each message on its own line"


def _unread(exc: ValidationError) -> str | dict[str, Any] | list[Any] | None:
    """What the SDK failed to read: the raw line for a JSON error, the parsed value for a shape error."""
    errors = exc.errors(include_url=False)
    lines = [e["input"] for e in errors if e["type"] == "json_invalid" and isinstance(e.get("input"), str)]
    if lines:
        return str(lines[0])
    batch = next((cast("list[Any]", v) for e in errors if isinstance(v := e.get("input"), list)), None)
    if batch is not None:
        return batch
    return next((obj for e in errors if (obj := as_object(e.get("input"))) is not None), None)


def _answerable_id(message: Any) -> int | str | None:
    """The id of a message to answer with an error (``None``: not an object, or no valid id)."""
    fields = as_object(message)
    rid = fields.get("id") if fields is not None else None
    return rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None


def _without_surrogates(line: str) -> Any:
    """The JSON value of ``line`` with each lone surrogate (in keys and strings alike) replaced by U+FFFD."""
    return json.loads(_LONE_SURROGATE.sub("\ufffd", json.dumps(json.loads(line), ensure_ascii=False)))


class _Receiving(Protocol):
    async def receive(self) -> SessionMessage | Exception: ...
    async def aclose(self) -> None: ...


class _Sending(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...


class _Writing(_Sending, Protocol):
    async def aclose(self) -> None: ...


class _Closing(Protocol):
    async def aclose(self) -> None: ...


_Inner = TypeVar("_Inner", bound=_Closing)


class _Wrapper(Generic[_Inner]):
    """What a stream wrapped for the SDK does beside its own job: close the stream it wraps, in ``async with`` too."""

    _inner: _Inner

    async def aclose(self) -> None:
        """Close the wrapped stream."""
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _ReadWrapper(_Wrapper[_Receiving]):
    """A wrapped read stream: iterated, it ends where :meth:`receive` raises ``anyio.EndOfStream``."""

    async def receive(self) -> SessionMessage | Exception:
        raise NotImplementedError

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class AnsweringReadStream(_ReadWrapper):
    """Wraps the stdio transport's read stream (see the module docstring).

    Args:
        inner: The transport's read stream (messages, or the exceptions of lines it could not read).
        write: The transport's write stream, where the answers to unreadable requests go.
    """

    def __init__(self, inner: _Receiving, write: _Sending) -> None:
        self._inner = inner
        self._write = write

    async def receive(self) -> SessionMessage | Exception:
        """The next message the server can read (answering the unreadable ones on the way)."""
        while True:
            item = await self._inner.receive()
            if not isinstance(item, ValidationError):
                return item
            mended = await self._mend(item)
            if mended is not None:
                return mended

    async def _mend(self, exc: ValidationError) -> SessionMessage | None:
        raw = _unread(exc)
        parsed: Any = raw
        if isinstance(raw, str):
            try:
                parsed = _without_surrogates(raw)
            except (ValueError, RecursionError):
                parsed = None
            if parsed is not None:
                try:
                    return SessionMessage(types.jsonrpc_message_adapter.validate_python(parsed, by_name=False))
                except ValidationError:
                    pass
        if isinstance(parsed, list):  # a batch: MCP has none, so each request in it is refused
            items = cast("list[Any]", parsed)
            for rid in [r for m in items[:_MAX_BATCH_ANSWERS] if (r := _answerable_id(m)) is not None]:
                await self._refuse(rid, types.INVALID_REQUEST, _NO_BATCHES)
            return None
        message = as_object(parsed)
        if message is not None:
            rid = _answerable_id(message)
            code, text = types.INVALID_REQUEST, "not a valid JSON-RPC request"
        else:
            rid = find_request_id(raw) if isinstance(raw, str) else None
            code, text = types.PARSE_ERROR, "not valid JSON"
        if rid is None:
            _log.debug("server.unreadable_message_dropped", error=str(exc.errors(include_url=False)[:1])[:200])
            return None
        await self._refuse(rid, code, text)
        return None

    async def _refuse(self, rid: int | str, code: int, text: str) -> None:
        error = types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=text))
        await self._write.send(SessionMessage(error))


class OpenRequests:
    """The client's requests handed to the server and not answered yet (see the module docstring).

    Args:
        grace: Seconds the end of input waits for the answers at most.
    """

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self._open: set[int | str] = set()
        self._none = anyio.Event()
        self._none.set()

    def reading(self, inner: _Receiving) -> _EndsWhenAnswered:
        """``inner``, whose requests are counted and whose end waits for their answers."""
        return _EndsWhenAnswered(inner, self)

    def writing(self, inner: _Writing) -> _CountsAnswers:
        """``inner``, whose answers are counted."""
        return _CountsAnswers(inner, self)

    def asked(self, message: SessionMessage | Exception) -> None:
        """Count ``message`` if it is a request; a client's cancellation of one closes it."""
        item = message.message if isinstance(message, SessionMessage) else None
        if isinstance(item, types.JSONRPCRequest):
            if not self._open:
                self._none = anyio.Event()
            self._open.add(item.id)
        elif isinstance(item, types.JSONRPCNotification) and item.method == "notifications/cancelled":
            fields = as_object(item.params)
            self.answered(fields.get("requestId") if fields is not None else None)

    def answered(self, rid: object) -> None:
        """Close request ``rid`` (answered, or cancelled by its client)."""
        if isinstance(rid, int | str) and rid in self._open:
            self._open.discard(rid)
            if not self._open:
                self._none.set()

    async def ended(self) -> None:
        """Wait until each request is answered, for up to :attr:`grace` seconds (then say how many are left)."""
        with anyio.move_on_after(self.grace):
            await self._none.wait()
        if self._open:
            _log.warning("server.input_ended_unanswered", requests=len(self._open), grace_s=self.grace)


class _EndsWhenAnswered(_ReadWrapper):
    def __init__(self, inner: _Receiving, requests: OpenRequests) -> None:
        self._inner = inner
        self._requests = requests

    async def receive(self) -> SessionMessage | Exception:
        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            await self._requests.ended()
            raise
        self._requests.asked(item)
        return item


class _CountsAnswers(_Wrapper[_Writing]):
    def __init__(self, inner: _Writing, requests: OpenRequests) -> None:
        self._inner = inner
        self._requests = requests

    async def send(self, item: SessionMessage, /) -> None:
        await self._inner.send(item)
        if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
            self._requests.answered(item.message.id)
