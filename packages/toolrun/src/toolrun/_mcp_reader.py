"""Reading what an MCP server sends so that one bad message costs one call, never the session.

The SDK reads every message with pydantic's JSON parser, which gives up above about 200
levels of nesting, and drops what it cannot read: over stdio the message vanishes (its caller
waits for its timeout), over HTTP the request fails with a parse error. For a ``tools/list``
reply that is the whole catalog, lost because of one tool's schema. This module sits on the
reading side of both transports and mends what it can:

- a reply nested too deep is read with the too-deep parts cut out; in a ``tools/list`` reply
  each tool that lost a part is replaced by a stub (``{"name": …, UNREADABLE: reason}``) that
  the backend skips with that reason, and the other tools arrive intact; any other reply
  becomes an error for its request;
- a reply that is not valid JSON, or not JSON-RPC, but whose request id can be found becomes
  an error for that request (marked with :data:`MALFORMED`), so the call fails at once
  instead of at its timeout;
- a reply holding ``NaN`` or ``Infinity`` (which the SDK reads as floats; JSON has neither)
  becomes an error for its request (over stdio the transport's own parse refuses them);
- anything else (a line of noise, a reply to no request) is left to the SDK, which drops it.

A message larger than the server's ``maxResponseBytes`` is never read whole: the transport
counts and drops it, and :func:`too_large_error` stands for it (marked :data:`TOO_LARGE`).
Every message within that bound is screened before it is parsed (:func:`screen`), at C speed:

- a notification larger than :data:`MAX_NOTIFICATION_BYTES` is dropped unparsed, and logged
  by its size (never its content);
- a message holding more arrays and objects than the server's bound
  (:func:`~toolrun._size.container_bound`, from its ``maxResponseBytes``) is not parsed: the
  reply fails its call with :func:`too_large_error` saying so, anything else is dropped and
  logged. Parsing costs per container, and holds the GIL: 4 MiB of ``[],[],…`` took close to a
  second, in which no other caller ran.

Messages the SDK reads fine are passed through untouched: the cost on the normal path is one
``isinstance`` per message over stdio and a bracket count and two substring searches per HTTP
body or SSE event.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Final, cast

import anyio
import anyio.to_thread
import httpx2
import mcp_types as types
import pydantic_core
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from toolrun._compat_mcp import TransportStreams
from toolrun._http_inflate import UnreadableEncodingError, inflating
from toolrun._mcp_secrets import mask_message, may_hold_secret
from toolrun._redact import mask_secrets
from toolrun._size import container_bound, containers_at_most

__all__ = [
    "HEAD_CHARS",
    "MALFORMED",
    "MAX_DEPTH",
    "MAX_NOTIFICATION_BYTES",
    "TAIL_CHARS",
    "TOO_LARGE",
    "UNREADABLE",
    "MendingReadStream",
    "NotJsonConstant",
    "Refused",
    "describe_parse_error",
    "find_request_id",
    "malformed_error",
    "mend_http_response",
    "mend_text",
    "nested_deeper_than",
    "not_json",
    "request_id_at_end",
    "screen",
    "too_large_error",
]

MAX_DEPTH = 190
"""Nesting kept when a message is too deep for the SDK's parser (which stops a little above 200)."""
UNREADABLE = "x-toolrun-unreadable"
"""Key of the stub that replaces a listed tool the reader had to cut; its value is the reason."""
MALFORMED = "toolrun:malformed-reply"
"""``error.data.reason`` of an error this module made up for a reply it could not read."""
TOO_LARGE = "toolrun:reply-too-large"
"""``error.data.reason`` of the error that stands for a reply over the server's size bound."""

_CUT = "\u0000toolrun:cut"
_CUT_JSON = json.dumps(_CUT)
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:(")|\\?\Z)|[\[\]{}]')
"""A string (group 1 is its closing quote; a string cut short runs to the end, so that no quote
inside it starts another scan) or a bracket."""
_ID_VALUE = re.compile(r'\s*:\s*(-?\d+|"[^"\\]*(?:\\.[^"\\]*)*")')
# Bigger texts are mended in a worker thread: the scan is a Python loop over tokens.
_INLINE_CHARS = 256 * 1024


def _cut_deep(text: str, limit: int) -> tuple[str, int]:
    """``text`` with every container deeper than ``limit`` replaced by a marker string, and the count."""
    out: list[str] = []
    pos = depth = cuts = 0
    cut_at = -1
    for m in _TOKENS.finditer(text):
        c = text[m.start()]
        if c == '"':
            continue
        if c in "[{":
            depth += 1
            if depth == limit + 1:
                cut_at = m.start()
        else:
            if depth == limit + 1 and cut_at >= 0:
                out += (text[pos:cut_at], _CUT_JSON)
                pos, cut_at, cuts = m.end(), -1, cuts + 1
            depth -= 1
    if not cuts:
        return text, 0
    out.append(text[pos:])
    return "".join(out), cuts


def nested_deeper_than(text: str, limit: int) -> bool:
    """Whether the JSON ``text`` nests containers more than ``limit`` levels deep.

    Counting brackets settles nearly every text at C speed; only a text with more brackets
    than ``limit`` is scanned token by token.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for m in _TOKENS.finditer(text):
        c = text[m.start()]
        if c in "[{":
            depth += 1
            if depth > limit:
                return True
        elif c in "]}":
            depth -= 1
    return False


def find_request_id(text: str) -> int | str | None:
    """The top-level ``"id"`` of a JSON-RPC message that may be cut short or otherwise broken.

    Args:
        text: The message as it was sent.

    Returns:
        The id (a number or a string), or ``None`` when no top-level id can be found.
    """
    depth = 0
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok[0] != '"':
            depth += 1 if tok in "[{" else -1
            if depth <= 0:
                return None
            continue
        if m.group(1) is None:
            return None  # the text ends inside this string
        if depth == 1 and tok == '"id"' and (v := _ID_VALUE.match(text, m.end())) is not None:
            value: Any = json.loads(v.group(1))
            return cast(int | str, value)
    return None


# The last member of a message: the id, or the id then "jsonrpc" (the TypeScript SDK writes both after the result).
_ID_AT_END = re.compile(r'"id"\s*:\s*(-?\d+|"[^"\\]*(?:\\.[^"\\]*)*")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')


def request_id_at_end(tail: str) -> int | str | None:
    """The ``"id"`` of a JSON-RPC message whose last member it is, from the message's last characters.

    Args:
        tail: The end of the message (a few hundred characters are enough).

    Returns:
        The id, or ``None`` when the message does not end with one.
    """
    m = _ID_AT_END.search(tail)
    if m is None:
        return None
    value: Any = json.loads(m.group(1))
    return cast(int | str, value)


def too_large_error(request_id: int | str, limit: int, *, containers: int | None = None) -> dict[str, Any]:
    """The error reply that stands for a reply to ``request_id`` larger than ``limit`` bytes.

    With ``containers``, for a reply within ``limit`` bytes holding more arrays and objects than
    that (the bound that comes with ``limit``, see :func:`~toolrun._size.container_bound`).
    """
    if containers is None:
        message = f"the server's reply is larger than {limit:,} bytes (maxResponseBytes); it was not read"
    else:
        message = (
            f"the server's reply holds more than {containers:,} arrays and objects, the bound that comes with its "
            f"maxResponseBytes of {limit:,}; it was not read"
        )
    data: dict[str, Any] = {"reason": TOO_LARGE, "limit": limit}
    if containers is not None:
        data["containers"] = containers
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": types.INTERNAL_ERROR, "message": message, "data": data},
    }


def _has_cut(value: Any) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(cast(dict[str, Any], v).values())
        elif isinstance(v, list):
            stack.extend(cast(list[Any], v))
        elif v == _CUT:
            return True
    return False


class NotJsonConstant(ValueError):
    """A constant Python's ``json`` reads and JSON does not have (``NaN``, ``Infinity``): its name."""


def not_json(name: str) -> Any:
    """``json.loads``'s ``parse_constant``: refuses what JSON does not have (raises :class:`NotJsonConstant`)."""
    raise NotJsonConstant(name)


def not_json_error(text: str, constant: NotJsonConstant) -> dict[str, Any] | None:
    """The error reply that stands for a reply holding ``NaN`` or ``Infinity``: the call it answers fails.

    ``None`` for a message that answers no call of ours (a request or a notification of the
    server's, which the SDK reads as it is): its id, if any, is the server's, not one of ours.
    """
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "method" in message:
        return None
    rid = cast(dict[str, Any], message).get("id")
    if isinstance(rid, bool) or not isinstance(rid, int | str):
        return None
    return malformed_error(rid, f"the server's reply holds {constant}, which JSON does not have")


HEAD_CHARS = 64 * 1024
"""How much of a message's start is searched for its id (characters, or bytes of one not decoded)."""
TAIL_CHARS = 512
"""How much of a message's end is searched for an id written last (characters, or bytes)."""


MAX_NOTIFICATION_BYTES: Final = 64 * 1024
"""The largest notification read from a server, in bytes; a larger one is dropped unparsed.

No notification toolcode reads needs more: a progress step, ``tools/list_changed``, a log line,
a cancellation. Without the bound a server could send notifications up to its
``maxResponseBytes`` (4 MiB by default), each parsed and dropped at a cost every caller pays.
Requests of the server (which carry an id) are not notifications: they are answered as before.
"""

_NOTIFICATION_START = re.compile(r'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"method"\s*:')
"""How every SDK starts a notification (its method first, or right after ``"jsonrpc"``); a
request of the server starts so too when its id comes last (the TypeScript SDK's order)."""


@dataclass(frozen=True, slots=True)
class Refused:
    """A message refused before it was parsed (see :func:`screen`)."""

    why: str
    """What was refused and why, for the log: sizes and bounds, never the message's content."""
    reply: dict[str, Any] | None
    """The error reply that stands for it when it answers a request of ours, else ``None`` (dropped)."""


def screen(text: str, size: int, max_bytes: int) -> Refused | None:
    """Whether one message, within ``max_bytes``, may be parsed: ``None`` if so, else what stands for it.

    A notification over :data:`MAX_NOTIFICATION_BYTES` (one that starts with its method and
    ends without an id) is refused, as is a message holding more arrays and objects than
    :func:`~toolrun._size.container_bound` allows; a refused reply whose id can be found is
    answered by :func:`too_large_error`. The work is two byte counts and a few anchored
    searches; only a refused message whose id is neither first nor last is scanned, up to
    :data:`HEAD_CHARS`.

    Args:
        text: The message as the server sent it.
        size: Its size in bytes.
        max_bytes: The server's ``maxResponseBytes``.
    """
    tail = text[-TAIL_CHARS:]
    if size > MAX_NOTIFICATION_BYTES and _NOTIFICATION_START.match(text) and request_id_at_end(tail) is None:
        return Refused(f"a notification of {size:,} bytes, over the {MAX_NOTIFICATION_BYTES:,}-byte bound", None)
    bound = container_bound(max_bytes)
    if containers_at_most(text) <= bound:
        return None
    rid = request_id_at_end(tail)
    if rid is None:
        rid = find_request_id(text[:HEAD_CHARS])
    if rid is None:
        return Refused(f"a message of {size:,} bytes holding more than {bound:,} arrays and objects", None)
    return Refused(
        f"a reply holding more than {bound:,} arrays and objects", too_large_error(rid, max_bytes, containers=bound)
    )


def _refuse_constants(text: str) -> dict[str, Any] | None:
    # The substrings rule out nearly every message; only the rest is parsed (they may be in a string).
    if "NaN" not in text and "Infinity" not in text:
        return None
    try:
        json.loads(text, parse_constant=not_json)
    except NotJsonConstant as e:
        return not_json_error(text, e)
    except (ValueError, RecursionError):
        pass  # not JSON, or too deep: the depth mending and the SDK's parser say why
    return None


def malformed_error(request_id: int | str, message: str) -> dict[str, Any]:
    """The error reply that stands for a malformed one (its caller gets ``UpstreamProtocolError``)."""
    data = {"reason": MALFORMED}
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": types.PARSE_ERROR, "message": message, "data": data}}


_INVALID_JSON = re.compile(r"Invalid JSON: ([^\[\n]+)")


def describe_parse_error(message: str) -> str:
    """What the SDK's "Failed to parse …" error (pydantic's report, several lines) says, in one line."""
    m = _INVALID_JSON.search(message)
    if m is not None:
        return f"the server's reply is not valid JSON ({m.group(1).strip()})"
    return "the server's reply is not a valid JSON-RPC response"


def _request_id(msg: dict[str, Any]) -> int | str | None:
    rid = msg.get("id")
    return rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None


def _mend_object(msg: Any, cut: bool) -> dict[str, Any] | None:
    if not isinstance(msg, dict):
        return None
    msg = cast(dict[str, Any], msg)
    rid = _request_id(msg)
    if rid is None or "method" in msg:
        return None  # not a reply: nobody waits for it
    if not ("result" in msg or "error" in msg):
        # An id and no method is a reply by its shape: its request fails now, not at its timeout.
        return malformed_error(rid, "the server's reply has neither result nor error")
    result = msg.get("result")
    if cut and isinstance(result, dict) and isinstance(tools := cast(dict[str, Any], result).get("tools"), list):
        reason = f"its definition is nested deeper than {MAX_DEPTH} levels"
        mended: list[Any] = []
        for t in cast(list[Any], tools):
            if _has_cut(t):
                name = cast(dict[str, Any], t).get("name") if isinstance(t, dict) else None
                mended.append({"name": name if isinstance(name, str) else "?", UNREADABLE: reason})
            else:
                mended.append(t)
        if not _has_cut({k: v for k, v in cast(dict[str, Any], result).items() if k != "tools"}):
            return {**msg, "result": {**cast(dict[str, Any], result), "tools": mended}}
    if cut:
        return malformed_error(rid, f"the server's reply is nested deeper than {MAX_DEPTH} levels")
    return malformed_error(rid, "the server's reply is not a valid JSON-RPC response")


def mend_text(text: str) -> dict[str, Any] | None:
    """A JSON-RPC message standing for ``text``, a message the SDK could not read.

    Args:
        text: One message as the server sent it.

    Returns:
        The message with too-deep parts cut (a ``tools/list`` reply with stubs for the cut
        tools), an error reply for the request ``text`` answers, or ``None`` when ``text``
        answers no request that can be found.
    """
    cut_text, cuts = _cut_deep(text, MAX_DEPTH)
    try:
        msg = pydantic_core.from_json(cut_text)
    except ValueError as e:
        rid = find_request_id(text)
        if rid is None:
            return None
        # jiter says what and where ("EOF while parsing a string at line 1 column 88"), never the text.
        detail = str(e).split(" [", 1)[0]
        return malformed_error(rid, f"the server's reply is not valid JSON ({detail})")
    return _mend_object(msg, cuts > 0)


async def _mend_text_async(text: str) -> dict[str, Any] | None:
    if len(text) <= _INLINE_CHARS:
        return mend_text(text)
    return await anyio.to_thread.run_sync(mend_text, text, abandon_on_cancel=True)


def _unread_input(exc: Exception) -> str | dict[str, Any] | None:
    # What the SDK failed to read: the raw text for a JSON error, the parsed object for a shape error.
    if not isinstance(exc, ValidationError):
        return None
    for err in exc.errors(include_url=False):
        if err["type"] == "json_invalid" and isinstance(err.get("input"), str):
            return cast(str, err["input"])
    for err in exc.errors(include_url=False):
        # Every union member reports a missing field against the whole message.
        if err["type"] == "missing" and isinstance(err.get("input"), dict):
            return cast(dict[str, Any], err["input"])
    return None


class MendingReadStream:
    """Wraps a transport's read stream: mends what the SDK could not read (see the module docstring).

    Args:
        inner: The transport's read stream.
        on_drop: Called with a short description of each message neither read nor mended.
    """

    def __init__(self, inner: Any, on_drop: Callable[[str], None]) -> None:
        self._inner = inner
        self._on_drop = on_drop

    @property
    def last_context(self) -> Any:
        """The sender's context of the last message (streamable HTTP's streams carry one)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        """The next message, mended where possible."""
        item: SessionMessage | Exception = await self._inner.receive()
        if not isinstance(item, Exception):
            return item
        unread = _unread_input(item)
        if isinstance(unread, str):
            mended = await _mend_text_async(unread)
        else:
            mended = _mend_object(unread, cut=False) if unread is not None else None
        if mended is None:
            self._on_drop(_describe(item))
            return item
        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_python(mended, by_name=False))
        except ValidationError:
            self._on_drop(_describe(item))
            return item

    def __aiter__(self) -> MendingReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Close the wrapped stream."""
        await self._inner.aclose()

    async def __aenter__(self) -> MendingReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_input=False)
        first = errors[0]["msg"] if errors else "unreadable"
        return f"{type(exc).__name__}: {first}"
    return type(exc).__name__


def mending(streams: TransportStreams, on_drop: Callable[[str], None]) -> TransportStreams:
    """``streams`` with the read side wrapped in a :class:`MendingReadStream`."""
    read, write = streams
    return cast(TransportStreams, (MendingReadStream(read, on_drop), write))


# -- HTTP: bodies and SSE events are mended before the SDK parses them --------------------------


def _too_deep(text: str) -> bool:
    # Counting brackets is cheap and rules out nearly every message; only the rest is parsed.
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    try:
        pydantic_core.from_json(text)
    except ValueError as e:
        return "recursion limit" in str(e)
    return False


async def _mend_json_text(text: str) -> str | None:
    # NaN and Infinity are not JSON (the SDK's parser reads them as floats): the call they answer
    # fails, naming its tool, as over stdio.
    if len(text) <= _INLINE_CHARS:
        refused = _refuse_constants(text)
    else:
        refused = await anyio.to_thread.run_sync(_refuse_constants, text, abandon_on_cancel=True)
    if refused is not None:
        return json.dumps(refused)
    if not _too_deep(text):
        return None
    mended = await _mend_text_async(text)
    return json.dumps(mended, ensure_ascii=False) if mended is not None else None


def _request_id_of(request: httpx2.Request) -> int | str | None:
    # The id of the JSON-RPC request this response answers: our own request body says it.
    try:
        msg = json.loads(request.content) if request.content else None
    except (ValueError, httpx2.RequestNotRead):
        return None
    return _request_id(cast(dict[str, Any], msg)) if isinstance(msg, dict) else None


def _too_large_bytes(request_id: int | str | None, limit: int, containers: int | None = None) -> bytes | None:
    if request_id is None:
        return None
    return json.dumps(too_large_error(request_id, limit, containers=containers)).encode()


class _MendedJSON(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, request_id: int | str | None, limit: int) -> None:
        self._inner = inner
        self._request_id = request_id
        self._limit = limit
        self._bound = container_bound(limit)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        parts: list[bytes] = []
        size = 0
        async for chunk in self._inner:
            size += len(chunk)
            if size > self._limit:
                # Not read on: the request fails with the error that stands for its reply.
                await self._inner.aclose()
                yield _too_large_bytes(self._request_id, self._limit) or b""
                return
            parts.append(chunk)
        body = b"".join(parts)
        if containers_at_most(body) > self._bound:
            # Not parsed: the request fails as for a body over the byte bound, saying why.
            yield _too_large_bytes(self._request_id, self._limit, self._bound) or b""
            return
        if not body:
            yield body
            return
        text = body.decode("utf-8", errors="replace")
        masked = mask_message(text)
        mended = await _mend_json_text(masked)
        if mended is not None:
            yield mended.encode()
        else:
            yield body if masked is text else masked.encode()

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Capped(httpx2.AsyncByteStream):
    """A body of another type (an error page, say): its first ``limit`` bytes, then no more are read."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._left = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            if len(chunk) >= self._left:
                yield chunk[: self._left]
                await self._inner.aclose()
                return
            self._left -= len(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


class _MendedSSE(httpx2.AsyncByteStream):
    def __init__(
        self, inner: httpx2.AsyncByteStream, request_id: int | str | None, limit: int, on_drop: Callable[[str], None]
    ) -> None:
        self._inner = inner
        self._request_id = request_id
        self._limit = limit
        self._bound = container_bound(limit)
        self._on_drop = on_drop

    async def __aiter__(self) -> AsyncIterator[bytes]:
        buffer = b""
        async for chunk in self._inner:
            # Only the new bytes (and the 3 before them, a separator may straddle) are searched again.
            start, search = 0, max(0, len(buffer) - 3)
            buffer += chunk
            out: list[bytes] = []
            while (m := _EVENT_END.search(buffer, search)) is not None:
                out.append(await self._event(buffer[start : m.start()]) + m.group())
                start = search = m.end()
            buffer = buffer[start:]
            if len(buffer) > self._limit:
                # An event over the bound is not read on: the stream ends with the error that stands for it.
                await self._inner.aclose()
                error = _too_large_bytes(self._request_id, self._limit)
                yield b"".join(out) + (b"event: message\ndata: " + error + b"\n\n" if error else b"")
                return
            if out:
                yield b"".join(out)
        if buffer:
            yield buffer

    async def _event(self, event: bytes) -> bytes:
        text = event.decode("utf-8", errors="replace")
        count = containers_at_most(event)
        if (
            count <= MAX_DEPTH
            and len(event) <= MAX_NOTIFICATION_BYTES
            and b"NaN" not in event
            and b"Infinity" not in event
            and not may_hold_secret(text)
        ):
            return event
        lines = text.splitlines()
        data = "\n".join(ln[5:].removeprefix(" ") for ln in lines if ln.startswith("data:"))
        # The other fields (an event's id comes back in Last-Event-ID) are masked as text.
        others = [ln for ln in lines if not ln.startswith("data:")]
        kept = [mask_secrets(ln) for ln in others]
        if (refused := screen(data, len(event), self._limit)) is not None:
            if refused.reply is None:
                self._on_drop(refused.why)
                return "\n".join(kept).encode()  # its id and type stay: an event without data is skipped
            return "\n".join([*kept, f"data: {json.dumps(refused.reply)}"]).encode()
        masked = mask_message(data)
        mended = await _mend_json_text(masked)
        if mended is None and masked is data and kept == others:
            return event
        return "\n".join([*kept, f"data: {mended if mended is not None else masked}"]).encode()

    async def aclose(self) -> None:
        await self._inner.aclose()


def _drop_silently(_: str) -> None:
    pass


async def mend_http_response(
    response: httpx2.Response, *, max_bytes: int = 4 * 1024 * 1024, on_drop: Callable[[str], None] = _drop_silently
) -> None:
    """An ``httpx2`` response hook: mends JSON bodies and SSE events that are nested too deep or hold ``NaN``.

    A body or an event larger than ``max_bytes`` is not read on: the request it answers gets
    :func:`too_large_error` instead. A body or an event holding more containers than the bound
    that comes with ``max_bytes`` is not parsed (the same error, saying so); an event that is a
    notification over :data:`MAX_NOTIFICATION_BYTES` is dropped, and ``on_drop`` told (see
    :func:`screen`). A compressed body is inflated first (:mod:`toolrun._http_inflate`), so that
    these bounds are on what it inflates to; one in a coding that is not inflated fails its request.
    """
    stream = response.stream
    if not isinstance(stream, httpx2.AsyncByteStream):
        return
    try:
        inflated = inflating(stream, response.headers.get("content-encoding", "identity"))
    except UnreadableEncodingError as e:
        request_id = _request_id_of(response.request)
        del response.headers["content-encoding"]
        response.headers["content-type"] = "application/json"
        response.stream = httpx2.ByteStream(
            b"" if request_id is None else json.dumps(malformed_error(request_id, str(e))).encode()
        )
        await stream.aclose()
        return
    if inflated is not stream:
        del response.headers["content-encoding"]  # inflated here: never again by the client
        stream = response.stream = inflated
    # Told apart as the SDK tells them (by how the type starts: it reads ``application/jsonx`` as
    # JSON too); whatever else a server sends is read up to the bound and no further.
    ctype = response.headers.get("content-type", "").strip().lower()
    if ctype.startswith("application/json"):
        response.stream = _MendedJSON(stream, _request_id_of(response.request), max_bytes)
    elif ctype.startswith("text/event-stream"):
        response.stream = _MendedSSE(stream, _request_id_of(response.request), max_bytes, on_drop)
    else:
        response.stream = _Capped(stream, max_bytes)
