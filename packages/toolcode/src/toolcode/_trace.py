"""The tool-call trace of one run: records in the order calls started, safe under fan-out."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from toolcode._limits import PayloadBudget, record_chars
from toolcode._types import OnToolCall, ToolCallRecord
from toolindex.log import get_logger
from toolrun import quick_new

__all__ = ["Trace"]

_log = get_logger("toolcode.trace")
_new_record = quick_new(ToolCallRecord)
# A slot holds a record, or (for a successful call nobody is listening to) the record's fields as a
# plain tuple: building the frozen record costs about a microsecond, so it is deferred to records().
_Slot = ToolCallRecord | tuple[Any, ...] | None


class Trace:
    """Collects one :class:`ToolCallRecord` per tool call.

    A call reserves its slot when it starts (:meth:`start`) and fills it when it ends
    (:meth:`finish`), so records stay in start order even when parallel calls finish out of
    order. All users run on one event loop thread; no lock is needed because no method
    awaits between reading and writing the slot list.
    """

    __slots__ = ("_known", "_on_call", "_slots", "_t0", "_unknown", "discards", "on_start", "payloads")

    def __init__(
        self,
        on_tool_call: OnToolCall | None = None,
        payloads: PayloadBudget | None = None,
        on_start: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.on_start = on_start
        """Awaited with the tool id as each call starts (a door's progress reporting)."""
        self._t0 = time.perf_counter()
        self._slots: list[_Slot] = []
        self._known = 0
        """What the records whose payloads cannot change any more count in the output budget."""
        self._unknown: list[int] = []
        """The slots of the others, measured when the run ends (:meth:`output_chars`)."""
        self._on_call = on_tool_call
        self.payloads = payloads
        """What the records may keep of call arguments and results (``None``: everything)."""
        self.discards = 0
        """How many records are of calls started early and never reached (:meth:`discarded`)."""

    def start(self) -> tuple[int, float]:
        """Reserve the next slot; returns ``(slot, start time)`` for :meth:`finish`."""
        self._slots.append(None)
        return len(self._slots) - 1, time.perf_counter()

    def finish(
        self,
        slot: int,
        started: float,
        tool_id: str,
        args: Mapping[str, Any],
        *,
        error: str,
        error_op: str,
        code: str | None = None,
        backend_kind: str | None = None,
        early: bool = False,
    ) -> ToolCallRecord:
        """Fill a slot for a failed call; :meth:`notify` the record afterwards (when :attr:`has_listener`)."""
        if self.payloads is not None:
            args = self.payloads.keep_args(args)
        now = time.perf_counter()
        ms, at = (now - started) * 1e3, (started - self._t0) * 1e3
        used = "used" if early else None
        record = ToolCallRecord(tool_id, args, None, backend_kind, error, error_op, ms, at, code, used)
        self._slots[slot] = record
        self._unknown.append(slot)
        return record

    def succeeded(
        self,
        slot: int,
        started: float,
        tool_id: str,
        args: Mapping[str, Any],
        structured: Any,
        backend_kind: str,
        early: bool = False,
    ) -> ToolCallRecord | None:
        """Fill a slot for a successful call.

        Returns:
            The record when a listener waits for it (pass it to :meth:`notify`), else ``None``:
            then the record is only built when :meth:`records` asks for it.
        """
        payloads = self.payloads
        if payloads is None:
            self._unknown.append(slot)
        else:
            args, structured, size = payloads.keep_call(args, structured)
            if size < 0:
                self._unknown.append(slot)
            else:
                self._known += len(tool_id) + size + 40  # record_chars of a call that succeeded
        ms, at = (time.perf_counter() - started) * 1e3, (started - self._t0) * 1e3
        fields = (tool_id, args, structured, backend_kind, None, None, ms, at, None, "used" if early else None)
        if self._on_call is None:
            self._slots[slot] = fields
            return None
        record = self._slots[slot] = _new_record(*fields)
        return record

    @property
    def has_listener(self) -> bool:
        """Whether an ``on_tool_call`` listener is set."""
        return self._on_call is not None

    async def notify(self, record: ToolCallRecord) -> None:
        """Tell the ``on_tool_call`` listener about a finished call.

        A listener that raises is logged and otherwise ignored: progress reporting must not
        change the outcome of a run.
        """
        if self._on_call is None:
            return
        try:
            await self._on_call(record)
        except Exception as e:  # the listener is the caller's code; its failure is not the run's
            # Nor is a logging sink's (a closed stream): reporting must never change the outcome.
            with contextlib.suppress(ValueError, OSError):
                _log.warning("trace.listener_failed", tool_id=record.tool_id, error=repr(e))

    def cancelled(self, slot: int, started: float, tool_id: str, args: Mapping[str, Any]) -> ToolCallRecord:
        """Fill a slot for a call that did not finish (no listener call: this runs while unwinding)."""
        now = time.perf_counter()
        error = "cancelled: the run ended before the call finished"
        elapsed, at = (now - started) * 1e3, (started - self._t0) * 1e3
        record = ToolCallRecord(tool_id, args, None, None, error, "cancelled", elapsed, at)
        self._slots[slot] = record
        self._unknown.append(slot)
        return record

    def discarded(
        self, tool_id: str, args: Mapping[str, Any], started: float, ended: float, backend_kind: str | None
    ) -> None:
        """Add a call started early that the run never reached (its result is not kept, its arguments when short).

        Outside the payload budget: what the run's own records keep is the same with or without it.
        """
        if len(str(args)) > 1000:
            args = {}
        ms, at = (ended - started) * 1e3, (started - self._t0) * 1e3
        self._slots.append(ToolCallRecord(tool_id, args, None, backend_kind, None, None, ms, at, None, "discarded"))
        self.discards += 1

    def restore(self, records: Sequence[ToolCallRecord]) -> None:
        """Start from records of an earlier part of the run (a run continued after a pause)."""
        self._unknown.extend(range(len(self._slots), len(self._slots) + len(records)))
        self._slots.extend(records)
        self.discards += sum(r.early == "discarded" for r in records)
        if records:
            last = max(r.started_ms + r.duration_ms for r in records)
            self._t0 -= last / 1000.0  # later calls start after the earlier ones

    def records(self) -> tuple[ToolCallRecord, ...]:
        """Finished records in start order (calls still running when the run ended are left out)."""
        slots, out = self._slots, list[ToolCallRecord]()
        for i, r in enumerate(slots):
            if isinstance(r, tuple):
                r = slots[i] = _new_record(*r)  # built once: later calls return the same objects
            if r is not None:
                out.append(r)
        return tuple(out)

    def output_chars(self) -> int:
        """What the finished records count in the output budget (:func:`record_chars`).

        Calls started early and never reached are left out: they stand outside the budget.
        """
        total, slots = self._known, self._slots
        for i in self._unknown:
            r = slots[i]
            if isinstance(r, tuple):
                r = slots[i] = _new_record(*r)
            if r is not None and r.early != "discarded":
                total += record_chars(r)
        return total

    def __len__(self) -> int:
        return len(self._slots)
