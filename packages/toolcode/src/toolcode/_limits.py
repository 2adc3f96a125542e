"""Limit bookkeeping shared by every engine: call counting, output capture and the output budget.

The output budget (``max_output_chars``) is one budget for all that leaves a run: value, stdout,
stderr, error message and trace. :func:`fit_output_budget` cuts what does not fit, leaving a visible
:data:`TRUNCATION_MARKER`, so nothing a snippet or an upstream server controls makes a reply larger.
Host memory is bounded too: the trace keeps call payloads up to :class:`PayloadBudget`'s allowance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from toolcode._records import ToolCallRecord
from toolcode.exceptions import LimitExceededError
from tooldocs import json_text
from toolrun._size import approx_size

__all__ = [
    "DROPPED_PAYLOAD",
    "MAX_TRACE_PAYLOAD_CHARS",
    "NARROW_HINT",
    "TRUNCATION_MARKER",
    "CallBudget",
    "FittedOutput",
    "OutputBuffer",
    "PayloadBudget",
    "fit_output_budget",
    "record_chars",
]

NARROW_HINT: Final = "narrow the query or return fewer fields"
"""The marker's advice when the whole content is not kept (replaced by a reference when it is)."""
TRUNCATION_MARKER: Final = "…[truncated {what}: {total} chars, {kept} shown; " + NARROW_HINT + "]"
"""Appended where the output budget cut something, so the reader (a model) knows to ask for less."""
MAX_TRACE_PAYLOAD_CHARS: Final = 16 * 1024 * 1024
"""Most characters of call arguments and results one run's trace keeps in host memory, whatever
the limits (the trace keeps ``4 * max_output_chars`` up to this)."""
DROPPED_PAYLOAD: Final = "…[truncated trace payload: not kept, the run's allowance for call payloads is used up]"
"""Stands in for call arguments or results the trace did not keep."""
_NUMBERS: Final = (int, float, bool)
_PRINTABLE_BITS: Final = 14_000
"""Ints of at most this many bits (about 4,200 digits) print; a longer one may not (``sys.get_int_max_str_digits``)."""


class CallBudget:
    """Counts tool calls against ``max_tool_calls``; once tripped, stays tripped.

    Not locked: every caller is on one event loop thread, with no await in a check-and-increment.
    """

    __slots__ = ("calls", "max_chain_steps", "max_tool_calls", "tripped")

    def __init__(self, max_tool_calls: int, max_chain_steps: int) -> None:
        self.max_tool_calls = max_tool_calls
        self.max_chain_steps = max_chain_steps
        self.calls = 0
        self.tripped: LimitExceededError | None = None

    def check(self) -> None:
        """Raise the tripped limit again, if any."""
        if self.tripped is not None:
            raise self.tripped

    def trip(self, error: LimitExceededError) -> None:
        """Stop the run with ``error`` (every later call raises it too)."""
        if self.tripped is None:
            self.tripped = error

    def take(self, n: int = 1) -> None:
        """Account for ``n`` more tool calls.

        Raises:
            LimitExceededError: If that would exceed ``max_tool_calls`` (and from then on).
        """
        if self.tripped is not None:  # check(), inline: this runs once per tool call
            raise self.tripped
        if self.calls + n > self.max_tool_calls:
            self.tripped = LimitExceededError("max_tool_calls", self.max_tool_calls, self.calls + n)
            raise self.tripped
        self.calls += n


class OutputBuffer:
    """Captures stdout and stderr, keeping at most ``cap`` characters of each (and counting the rest)."""

    __slots__ = ("_cap", "_parts", "_sizes", "dropped", "on_write")

    def __init__(self, cap: int) -> None:
        self.on_write: Callable[[str, str], None] | None = None
        """Told of every write as it happens, kept or not (a door's progress reporting)."""
        self._cap = cap
        self._parts: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._sizes: dict[str, int] = {"stdout": 0, "stderr": 0}
        self.dropped: dict[str, int] = {"stdout": 0, "stderr": 0}

    def write(self, stream: str, text: str) -> None:
        """Append text to a stream; text beyond the cap is counted, not kept (a flood cannot exhaust memory)."""
        if stream not in self._parts:
            stream = "stderr"
        if self.on_write is not None:
            self.on_write(stream, text)
        room = self._cap - self._sizes[stream]
        if room <= 0:
            self.dropped[stream] += len(text)
            return
        if len(text) > room:
            self.dropped[stream] += len(text) - room
            text = text[:room]
        self._parts[stream].append(text)
        self._sizes[stream] += len(text)

    def text(self, stream: str) -> str:
        """Everything kept for ``stream``."""
        return "".join(self._parts[stream])

    def total(self, stream: str) -> int:
        """Characters written to ``stream``, kept or not."""
        return self._sizes[stream] + self.dropped[stream]


class PayloadBudget:
    """How much call payload (arguments and results) one run's trace may keep in host memory.

    Each call's payloads are measured with :func:`toolrun._size.approx_size` against what is left; once the
    allowance is used up, later payloads are replaced by :data:`DROPPED_PAYLOAD` at no cost.
    """

    __slots__ = ("dropped", "left")

    def __init__(self, allowance: int) -> None:
        self.left = allowance
        self.dropped = 0

    def _fits(self, size: int) -> bool:
        """Whether a payload of ``size`` fits what is left: taken from it if so; else the allowance is used up."""
        if size > self.left:
            self.left = 0
            self.dropped += 1
            return False
        self.left -= size
        return True

    def keep(self, value: Any) -> Any:
        """``value`` if it fits what is left (which shrinks by its size), else :data:`DROPPED_PAYLOAD`."""
        if value is None or value.__class__ in _NUMBERS:
            return value
        return value if self._fits(approx_size(value, self.left) if self.left > 0 else 1) else DROPPED_PAYLOAD

    def keep_args(self, args: Mapping[str, Any]) -> Mapping[str, Any]:
        """:meth:`keep` for call arguments: a mapping either way (arguments left out: a dict of their own)."""
        if not args:
            return args
        return {"…": DROPPED_PAYLOAD} if self.keep(args) is DROPPED_PAYLOAD else args

    def keep_call(self, args: Mapping[str, Any], structured: Any) -> tuple[Mapping[str, Any], Any, int]:
        """:meth:`keep_args` and :meth:`keep` of one call, and what the two count in the output budget.

        The count is exact and final when neither can change any more: plain scalars, or a flat
        container of them, which is kept as a copy of its own (the snippet may hold the original
        and grow it); ``-1`` otherwise (:func:`record_chars` measures the record when the run ends).
        """
        size_a = _flat_size(args) if args and args.__class__ is dict else (0 if not args else -1)
        if size_a > 0:
            if self._fits(size_a):
                args = dict(args)
            else:
                args, size_a = {"…": DROPPED_PAYLOAD}, _DROPPED_ARGS_SIZE
        elif args:
            args = self.keep_args(args)
        t = structured.__class__
        if structured is None:
            size_s = 0
        elif t is int and structured.bit_length() <= _PRINTABLE_BITS:  # numbers are kept whatever is left
            size_s = len(str(structured))
        elif t in _NUMBERS:
            size_s = _scalar_size(structured)
        elif (size_s := _flat_size(structured) if t in _CONTAINERS else _scalar_size(structured)) >= 0:
            if not self._fits(size_s):
                structured, size_s = DROPPED_PAYLOAD, _DROPPED_SIZE
            elif t is not str and t is not tuple:
                structured = structured.copy()
        else:
            structured = self.keep(structured)
        return args, structured, -1 if size_a < 0 or size_s < 0 else size_a + size_s


def _size(value: Any) -> int:
    """JSON length of a trace payload, without serialising the common cases (scalars, flat containers)."""
    if value is None:
        return 0
    t = value.__class__
    if t is dict or t is list or t is tuple:
        flat = _flat_size(value)
        return flat if flat >= 0 else len(json_text(value))
    size = _scalar_size(value)  # exact: a string's escapes, a float that JSON spells otherwise
    return size if size >= 0 else len(json_text(value))


def _scalar_size(v: Any) -> int:
    """``json_text`` length of a plain scalar, or -1 when that needs the serialiser (escapes, NaN)."""
    t = v.__class__
    if t is str:
        return len(v) + 2 if v.isprintable() and '"' not in v and "\\" not in v else -1
    if t is int:
        return len(str(v)) if v.bit_length() <= _PRINTABLE_BITS else -1
    if v is None or v is True:
        return 4
    if v is False:
        return 5
    if t is float:
        return len(repr(v)) if math.isfinite(v) else -1
    return -1


def _flat_size(value: Any) -> int:
    """``json_text`` length of a dict, list or tuple of plain scalars, or -1 for anything else."""
    # Measured on every call's arguments and result: strs and ints inline, other scalars by _scalar_size.
    n = len(value)
    total = n + 1 if n else 2  # brackets and commas
    if value.__class__ is dict:
        for k, v in value.items():
            # An identifier is printable, without quotes or backslashes: one test for the usual key.
            if k.__class__ is not str or not (k.isidentifier() or (k.isprintable() and '"' not in k and "\\" not in k)):
                return -1
            t = v.__class__
            if t is int and v.bit_length() <= _PRINTABLE_BITS:
                size = len(str(v))
            elif t is str and v.isprintable() and '"' not in v and "\\" not in v:
                size = len(v) + 2
            elif (size := _scalar_size(v)) < 0:
                return -1
            total += len(k) + 3 + size  # "key":value
        return total
    for v in value:
        if (size := _scalar_size(v)) < 0:
            return -1
        total += size
    return total


_CONTAINERS: Final = (dict, list, tuple)
_DROPPED_SIZE: Final = len(json_text(DROPPED_PAYLOAD))
_DROPPED_ARGS_SIZE: Final = len(json_text({"…": DROPPED_PAYLOAD}))


def _cut(text: str, keep: int, what: str) -> str:
    keep = max(0, keep)
    return text[:keep] + TRUNCATION_MARKER.format(what=what, total=len(text), kept=keep)


@dataclass(frozen=True, slots=True)
class FittedOutput:
    """The result, streams, error message and trace after the output budget."""

    value: Any
    stdout: str
    stderr: str
    tool_calls: tuple[ToolCallRecord, ...]
    total_chars: int
    """Characters of everything before fitting (what the run produced)."""
    truncated: tuple[str, ...]
    error: str | None = None


def record_chars(r: ToolCallRecord) -> int:
    """What a record counts in the output budget: its id, error and payloads as JSON, and 40 for the rest."""
    args = r.args
    if args and args.__class__ is not dict:
        args = dict(args)
    return len(r.tool_id) + len(r.error or "") + _size(r.structured) + _size(args or None) + 40


def fit_output_budget(
    value: Any,
    stdout: str,
    stderr: str,
    records: tuple[ToolCallRecord, ...],
    budget: int,
    dropped: Mapping[str, int] | None = None,
    error: str | None = None,
    trace_chars: int | None = None,
) -> FittedOutput:
    """Fit the result, stdout, stderr, the error message and the trace into one character budget.

    The trace gives way first: every record stays (counts and errors matter) but its payloads
    (arguments, results) and its error text are cut to an equal share; then stdout and stderr
    are cut; then the error message; the value is cut last, into a string ending in a marker.
    Every cut leaves a :data:`TRUNCATION_MARKER`. Record ids and error texts are already
    clipped where they are made, so a trace of ``n`` calls takes at most a few hundred
    characters per call beyond the budget's share. ``dropped``: what the capture already
    discarded, per stream. ``trace_chars``: what the records count, when the trace knows it
    (:meth:`~toolcode._trace.Trace.output_chars`); measured here otherwise.
    """
    dropped = dropped or {}
    value_chars = 4 if value is None else _size(value)  # JSON's length without serialising the common cases
    truncated: list[str] = []
    streams = {"stdout": stdout, "stderr": stderr}
    for name, text in streams.items():
        if dropped.get(name):
            streams[name] = text + TRUNCATION_MARKER.format(what=name, total=len(text) + dropped[name], kept=len(text))
            truncated.append(name)
    err_len = len(error or "")
    if trace_chars is None:
        trace_chars = sum(record_chars(r) for r in records)
    shown = value_chars + sum(map(len, streams.values())) + err_len
    total = shown + trace_chars + dropped.get("stdout", 0) + dropped.get("stderr", 0)
    if shown + trace_chars <= budget:
        return FittedOutput(value, streams["stdout"], streams["stderr"], records, total, tuple(truncated), error)

    # The trace goes first: the value and the printed text are what the snippet chose to report.
    records = _fit_trace(records, max(0, budget - shown), truncated)
    trace_chars = sum(record_chars(r) for r in records)
    room_left = budget - value_chars - trace_chars
    # Then the streams share what the value leaves, each at least a quarter of the budget.
    for name, text in streams.items():
        cap = max(budget // 4, room_left // 2)
        if len(text) > cap:
            streams[name] = text = _cut(text, cap, name)
            if name not in truncated:
                truncated.append(name)
        room_left -= len(text)
    if error is not None and len(error) > max(budget // 4, room_left - value_chars):
        error = _cut(error, max(budget // 4, room_left - value_chars), "error")
        truncated.append("error")
    keep = max(budget // 2, budget - sum(map(len, streams.values())) - len(error or "") - trace_chars)
    if value_chars > keep:
        value = _cut(json_text(value), keep, "result")
        truncated.append("value")
    return FittedOutput(value, streams["stdout"], streams["stderr"], records, total, tuple(truncated), error)


def _fit_trace(records: tuple[ToolCallRecord, ...], room: int, truncated: list[str]) -> tuple[ToolCallRecord, ...]:
    # Every record stays (counts and errors matter); its payloads and error text get an equal share.
    if not records:
        return records
    per = max(0, room // len(records) - 40)
    out: list[ToolCallRecord] = []
    cut = False
    for r in records:
        structured: Any = r.structured
        if _size(structured) > per // 2:
            structured = _cut(json_text(structured), per // 2, "trace payload")
        args: Any = r.args
        if args and _size(dict(args)) > per // 2:
            args = {"…": _cut(json_text(dict(args)), per // 2, "trace arguments")}
        error = r.error if r.error is None or len(r.error) <= max(per, 200) else _cut(r.error, max(per, 200), "error")
        if structured is not r.structured or args is not r.args or error is not r.error:
            cut = True
            r = replace(r, structured=structured, args=args, error=error)
        out.append(r)
    if cut:
        truncated.append("trace")
    return tuple(out)
