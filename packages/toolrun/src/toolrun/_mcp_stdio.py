"""The stdio transport: the SDK's process handling, with a reader that bounds every message.

The SDK's ``stdio_client`` reads a server's stdout as text and re-joins everything it has
buffered with each new 64 KiB chunk, then splits the lot again: a 50 MB reply costs tens of
seconds of copying, on the event loop, in hundreds of slices that every other caller waits
behind, before the whole of it is parsed there too. This transport starts and stops the
server exactly as the SDK does (its own helpers, through ``_compat_mcp``) but reads stdout
itself:

- bytes are split into lines in linear time: each chunk is searched for a newline and the
  parts of a line are joined once;
- a line longer than ``max_bytes`` is never kept: from the byte that crosses the bound on, the
  line is counted and dropped up to its newline, and the request it answers fails with
  :func:`~toolrun._mcp_reader.too_large_error`. The request's id is looked for in the line's
  first 64 KiB (the Python SDK writes it there), so the call fails as soon as the bound is
  crossed; else in its last bytes (the TypeScript SDK writes it last), when the line ends. A
  line with neither is dropped and logged, and its call waits for its timeout;
- a line within the bound is screened before it is parsed (:func:`~toolrun._mcp_reader.screen`):
  a notification over ``MAX_NOTIFICATION_BYTES`` is dropped unparsed and logged; a message
  holding more arrays and objects than the server's bound is not parsed, and the reply fails
  its call with the error that stands for an oversized one;
- what passes has every registered secret masked before anything parses it
  (:func:`~toolrun._mcp_secrets.mask_message`);
- what passes is parsed on the event loop, a line over 64 KiB with the cyclic garbage collector
  paused. It used to be parsed in a worker thread when over 256 KiB, which did not help:
  ``json.loads`` and pydantic hold the GIL from start to end, so the loop waited all the same
  (4 MiB of ``[]`` stalled every caller for close to a second). The container bound is what
  keeps one parse short; the pause keeps it in proportion to the message, not to the process:
  every list or object parsed is tracked by the collector, whose passes over the whole heap
  made 262,000 empty lists take 0.47 s in a server process (0.05 s with the pause).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final, TextIO

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp import StdioServerParameters
from mcp.shared.message import SessionMessage

from toolrun._compat_mcp import (
    WRITER_FLUSH_TIMEOUT,
    TransportStreams,
    create_process,
    drain_stdout,
    executable_command,
    get_default_environment,
    stop_server_process,
)
from toolrun._gc import collector_paused
from toolrun._mcp_reader import (
    HEAD_CHARS,
    MAX_NOTIFICATION_BYTES,
    TAIL_CHARS,
    NotJsonConstant,
    find_request_id,
    not_json,
    not_json_error,
    request_id_at_end,
    screen,
    too_large_error,
)
from toolrun._mcp_secrets import mask_message

__all__ = ["bounded_stdio_client"]

_PAUSE_GC_BYTES = 64 * 1024
"""A line from this size is parsed with the cyclic garbage collector paused (see the module docstring)."""


class _SessionGone(Exception):
    """The session stopped reading: nothing more is delivered."""


class _Refusal:
    """An oversized line being dropped: its size so far, whether its caller was told, its last bytes."""

    def __init__(self, head: bytes, encoding: str) -> None:
        self.size = len(head)
        self.encoding = encoding
        self.request_id = find_request_id(head[:HEAD_CHARS].decode(encoding, errors="replace"))
        self.tail = head[-TAIL_CHARS:]

    def add(self, piece: bytes) -> None:
        self.size += len(piece)
        self.tail = (self.tail + piece)[-TAIL_CHARS:] if len(piece) < TAIL_CHARS else piece[-TAIL_CHARS:]

    def id_at_end(self) -> int | str | None:
        return request_id_at_end(self.tail.decode(self.encoding, errors="replace"))


def _parse(text: str) -> SessionMessage | Exception:
    data: object = _UNPARSED
    # Parsed first, then validated: pydantic's own JSON parsing of a reply of many small containers
    # held about five times the memory (448 against 89 MB for 4 MiB of `[]`s), which a hostile
    # server could have many callers pay at once. Surrogate escapes are left to pydantic's parser,
    # which refuses a lone one (``json`` would keep it, and it could not be written out later).
    if "\\ud" not in text and "\\uD" not in text:
        try:
            data = json.loads(text, parse_constant=not_json)
        except NotJsonConstant as e:
            # NaN and Infinity are not JSON: the call they answer fails, naming its tool, at every door.
            if (refused := not_json_error(text, e)) is not None:
                return _reply(refused)
        except (ValueError, RecursionError):
            pass  # pydantic's parser says why, in the words the mending reader reads
    try:
        if data is _UNPARSED:
            message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        else:
            message = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValueError as exc:  # the session surfaces it; the mending reader may turn it into an error reply
        return exc
    return SessionMessage(message)


_UNPARSED: Final = object()


def _reply(message: dict[str, Any]) -> SessionMessage:
    """A reply made up here (an error standing for the server's), as the session reads it."""
    return SessionMessage(types.jsonrpc_message_adapter.validate_python(message, by_name=False))


@asynccontextmanager
async def bounded_stdio_client(
    server: StdioServerParameters,
    errlog: TextIO = sys.stderr,
    *,
    max_bytes: int,
    on_drop: Callable[[str], None],
) -> AsyncGenerator[TransportStreams]:
    """Start an MCP server as a child process and connect to it over its stdin and stdout.

    Like the SDK's ``stdio_client`` (same start, same shutdown), but no message from the
    server longer than ``max_bytes`` is ever held whole, and none is parsed that holds more
    containers than ``max_bytes`` allows (see the module docstring).

    Args:
        server: How to start it.
        errlog: Where its stderr goes.
        max_bytes: The largest message read, in bytes (its newline not counted).
        on_drop: Told about a message dropped unread: an oversized one that answers no request it
            could find, a notification over ``MAX_NOTIFICATION_BYTES``.

    Raises:
        OSError: If the server cannot be started.
    """
    command = await executable_command(server.command)
    process = await create_process(
        command=command,
        args=server.args,
        env=get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    encoding, errors = server.encoding, server.encoding_error_handler
    read_stream_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_stream_reader = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    writer_done = anyio.Event()

    async def deliver(item: SessionMessage | Exception) -> None:
        try:
            await read_stream_writer.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise _SessionGone from None

    async def end_line(parts: list[bytes], refusal: _Refusal | None) -> None:
        if refusal is not None:
            if refusal.request_id is None:
                rid = refusal.id_at_end()
                if rid is None:
                    on_drop(
                        f"a message of {refusal.size:,} bytes, over the {max_bytes:,}-byte bound, answering no request"
                    )
                    return
                await deliver(_reply(too_large_error(rid, max_bytes)))
            return
        line = b"".join(parts)
        if not line.strip():
            return
        text = line.decode(encoding, errors)
        refused = screen(text, len(line), max_bytes)
        if refused is not None:
            if refused.reply is None:
                on_drop(refused.why)
            else:
                await deliver(_reply(refused.reply))
            return
        text = mask_message(text)
        with collector_paused(len(line) >= _PAUSE_GC_BYTES):
            item = _parse(text)
        if (
            len(line) > MAX_NOTIFICATION_BYTES
            and isinstance(item, SessionMessage)
            and isinstance(item.message, types.JSONRPCNotification)
        ):
            # One that did not start with its method (as every SDK writes it) is dropped once parsed.
            on_drop(f"a notification of {len(line):,} bytes, over the {MAX_NOTIFICATION_BYTES:,}-byte bound")
            return
        await deliver(item)

    async def stdout_reader() -> None:
        assert process.stdout, "Opened process is missing stdout"
        try:
            async with read_stream_writer:
                try:
                    parts: list[bytes] = []
                    size = 0
                    refusal: _Refusal | None = None
                    async for chunk in process.stdout:
                        start = 0
                        while True:
                            end = chunk.find(b"\n", start)
                            piece = chunk[start:] if end < 0 else chunk[start:end]
                            if refusal is not None:
                                refusal.add(piece)
                            elif size + len(piece) > max_bytes:
                                refusal = _Refusal(b"".join([*parts, piece]), encoding)
                                parts, size = [], 0
                                if refusal.request_id is not None:
                                    await deliver(_reply(too_large_error(refusal.request_id, max_bytes)))
                            elif piece:
                                parts.append(piece)
                                size += len(piece)
                            if end < 0:
                                break
                            await end_line(parts, refusal)
                            parts, size, refusal = [], 0, None
                            start = end + 1
                except _SessionGone:
                    return  # only the drain below remains
                finally:
                    await drain_stdout(process)
        except anyio.ClosedResourceError:
            pass  # our own shutdown closed the stdout stream under the read
        except (anyio.BrokenResourceError, ConnectionError):
            # Teardown noise during shutdown, a real failure otherwise; either way the session
            # sees a clean close when the read stream closes.
            if not shutting_down:
                on_drop("reading the server's stdout failed mid-session")

    async def stdin_writer() -> None:
        assert process.stdin, "Opened process is missing stdin"
        try:
            async with write_stream_reader:
                async for session_message in write_stream_reader:
                    json = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((json + "\n").encode(encoding, errors))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server may still be alive: close the read stream so the session sees the
            # connection end instead of a request hanging forever.
            await read_stream_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        # The SDK's order: unblock the reader into its drain, let the writer flush, stop the server.
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        await stop_server_process(process)
        for stream in (read_stream, write_stream, read_stream_writer, write_stream_reader):
            await stream.aclose()
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            # Shutdown must finish even when the caller is cancelled, or the server would be left running.
            with anyio.CancelScope(shield=True):
                await shutdown()
            tg.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()
