"""Progress notifications of one request: tool calls and chain steps as they start and end, and printed lines."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server import ServerRequestContext

from toolcode._types import ToolCallRecord
from toolcode.exceptions import clip
from toolindex.log import get_logger

__all__ = ["Progress"]

log = get_logger("toolcode.server")

_PRINT_EVERY_S = 0.25
_PRINT_LINES_PER_FLUSH = 5
_PRINT_PENDING_MAX = 50
_PRINT_LINE_CHARS = 200


class Progress:
    """Progress notifications of one request (sent only when the client asked for progress).

    Each tool call (or chain step) is reported when it starts and when it ends (tool id, ok or
    the error code, duration; never arguments or results), and what the snippet prints, a few
    lines every quarter second, each line capped. Nothing is sent once the request has ended.
    """

    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        # Reporting is a no-op for a request that asked for no progress (the session knows: over
        # JSON-RPC by its progress token, in process by its callback).
        self._session = ctx.session
        self._n = 0
        self._closed = False
        self._lines: list[str] = []
        self._partial: str = ""
        self._dropped = 0
        self._lock = anyio.Lock()

    @classmethod
    @asynccontextmanager
    async def of(cls, ctx: ServerRequestContext[Any]) -> AsyncGenerator[Progress]:
        progress = cls(ctx)
        failure: BaseException | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(progress._flush_every)
            try:
                yield progress
                await progress._flush(everything=True)
            except BaseException as e:  # re-raised below, outside the task group: not wrapped in a group
                failure = e
            finally:
                progress._closed = True
                tg.cancel_scope.cancel()
        if failure is not None:
            raise failure

    @property
    def hooks(self) -> dict[str, Any]:
        """The listeners of a run or a chain (:func:`toolcode._metatools.call_metatool`'s keywords)."""
        return {
            "on_step": self.step,
            "on_tool_call": self.tool_finished,
            "on_tool_start": self.tool_started,
            "on_print": self.printed,
        }

    async def _send(self, message: str) -> None:
        async with self._lock:
            if self._closed:
                return
            self._n += 1
            try:
                await self._session.report_progress(self._n, None, clip(message, 300))
            except Exception as e:  # a client that went away: progress is best effort
                log.debug("server.progress_failed", error=repr(e)[:200])

    async def tool_started(self, tool_id: str) -> None:
        await self._send(f"{tool_id} started")

    async def tool_finished(self, record: ToolCallRecord) -> None:
        status = "ok" if record.error is None else f"failed ({record.code or 'tool_error'})"
        await self._send(f"{record.tool_id} {status} ({record.duration_ms:.0f} ms)")

    async def step(self, event: dict[str, Any]) -> None:
        name = f"step {event['step']}" + (f" ({event['id']})" if event.get("id") else "") + f" {event['tool_id']}"
        status = event["status"]
        shown = "ok" if status == "ok" else f"failed ({event.get('code', 'tool_error')})"
        ms = f" ({event.get('duration_ms', 0):.0f} ms)"
        await self._send(f"{name} started" if status == "started" else f"{name} {shown}{ms}")

    def printed(self, stream: str, text: str) -> None:
        """Keep whole lines of output to send (bounded: beyond the cap, lines are only counted)."""
        parts: list[str] = (self._partial + text).split("\n")
        whole, rest = parts[:-1], parts[-1]
        self._partial = rest[-_PRINT_LINE_CHARS:]
        for line in whole:
            if len(self._lines) < _PRINT_PENDING_MAX:
                self._lines.append(f"{stream}: {line[:_PRINT_LINE_CHARS]}")
            else:
                self._dropped += 1

    async def _flush(self, *, everything: bool = False) -> None:
        if self._partial and everything:
            self._lines.append(f"stdout: {self._partial}")
            self._partial = ""
        take = len(self._lines) if everything else _PRINT_LINES_PER_FLUSH
        lines, self._lines = self._lines[:take], self._lines[take:]
        for line in lines:
            await self._send(line)
        if self._dropped and (everything or not self._lines):
            dropped, self._dropped = self._dropped, 0
            await self._send(f"... {dropped} more lines of output")

    async def _flush_every(self) -> None:
        while True:
            await anyio.sleep(_PRINT_EVERY_S)
            await self._flush()
