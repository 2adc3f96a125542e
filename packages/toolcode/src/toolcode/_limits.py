"""Limit bookkeeping shared by every engine: call counting, output capture and the output budget."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolcode._types import ToolCallRecord
from toolcode.exceptions import LimitExceededError

__all__ = [
    "TRUNCATION_MARKER",
    "CallBudget",
    "OutputBuffer",
    "as_json_data",
    "check_json",
    "fit_output_budget",
]

TRUNCATION_MARKER = "…[truncated {what}: {total} chars, {kept} shown; narrow the query or return fewer fields]"
"""Appended where the output budget cut something, so the reader (a model) knows to ask for less."""


class CallBudget:
    """Counts tool calls against ``max_tool_calls``; once tripped, stays tripped.

    Not locked: every caller runs on one event loop thread, and the check-and-increment
    has no await in between.
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

    def check_chain(self, steps: int) -> None:
        """Refuse a chain longer than ``max_chain_steps``.

        Raises:
            LimitExceededError: If ``steps`` exceeds the limit (and from then on).
        """
        self.check()
        if steps > self.max_chain_steps:
            self.tripped = LimitExceededError("max_chain_steps", self.max_chain_steps, steps)
            raise self.tripped


class OutputBuffer:
    """Captures stdout and stderr, keeping at most ``cap`` characters of each (and counting the rest)."""

    __slots__ = ("_cap", "_parts", "_sizes", "dropped")

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._parts: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._sizes: dict[str, int] = {"stdout": 0, "stderr": 0}
        self.dropped: dict[str, int] = {"stdout": 0, "stderr": 0}

    def write(self, stream: str, text: str) -> None:
        """Append text to a stream; text beyond the cap is counted, not kept (a flood cannot exhaust memory)."""
        if stream not in self._parts:
            stream = "stderr"
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


def _path_of_bad(value: Any, path: str = "$", depth: int = 0) -> str | None:
    if depth > 200:
        return f"{path} (nested more than 200 levels)"
    if value is None or isinstance(value, bool | int | str):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value!r}"
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
            bad = _path_of_bad(item, f"{path}[{i}]", depth + 1)
            if bad:
                return bad
        return None
    if isinstance(value, dict):
        for k, v in value.items():  # pyright: ignore[reportUnknownVariableType]
            if not isinstance(k, str):
                return f"{path} has a {type(k).__name__} key {k!r} (keys must be strings)"  # pyright: ignore[reportUnknownArgumentType]
            bad = _path_of_bad(v, f"{path}.{k}", depth + 1)
            if bad:
                return bad
        return None
    return f"{path} is a {type(value).__name__}"


def check_json(value: Any) -> str | None:
    """Say what in ``value`` is not JSON-serialisable, or return ``None`` when all of it is.

    Args:
        value: The snippet's result.

    Returns:
        ``None``, or a message naming the JSON path of the first offending value and its type.
    """
    bad = _path_of_bad(value)
    if bad is None:
        return None
    return f"the result must be JSON-serialisable (dicts with str keys, lists, str, numbers, bool, None): {bad}"


def as_json_data(value: Any) -> Any:
    """The value with tuples turned into lists (what a JSON round trip gives), other values as they are."""
    if isinstance(value, tuple | list):
        return [as_json_data(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, dict):
        return {k: as_json_data(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    return value


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _size(value: Any) -> int:
    """JSON length of a trace payload, without serialising the common scalar cases (this runs once per call)."""
    if value is None:
        return 0
    if isinstance(value, int | float):
        return len(str(value))
    if isinstance(value, str):
        return len(value) + 2
    return len(_dumps(value))


def _cut(text: str, keep: int, what: str) -> str:
    keep = max(0, keep)
    return text[:keep] + TRUNCATION_MARKER.format(what=what, total=len(text), kept=keep)


@dataclass(frozen=True, slots=True)
class FittedOutput:
    """The result, streams and trace after the output budget."""

    value: Any
    stdout: str
    stderr: str
    tool_calls: tuple[ToolCallRecord, ...]
    total_chars: int
    truncated: tuple[str, ...]


def fit_output_budget(
    value: Any,
    stdout: str,
    stderr: str,
    records: tuple[ToolCallRecord, ...],
    budget: int,
    dropped: Mapping[str, int] | None = None,
) -> FittedOutput:
    """Fit the result, stdout, stderr and trace into one character budget.

    The trace keeps every record (counts and errors matter) but loses its ``structured``
    payloads first; then stdout and stderr are cut; the result is cut last, into a string
    ending in a marker. Every cut leaves a :data:`TRUNCATION_MARKER`.

    Args:
        value: The snippet's (JSON-serialisable) result.
        stdout: Captured stdout.
        stderr: Captured stderr.
        records: The trace.
        budget: ``max_output_chars``.
        dropped: Characters the capture already discarded, per stream.

    Returns:
        The fitted output and what was truncated.
    """
    dropped = dropped or {}
    value_json = _dumps(value)
    sizes = [_size(r.structured) for r in records]
    trace_chars = sum(sizes)
    total = len(value_json) + len(stdout) + len(stderr) + trace_chars
    total += dropped.get("stdout", 0) + dropped.get("stderr", 0)
    truncated: list[str] = []
    if dropped.get("stdout"):
        stdout = stdout + TRUNCATION_MARKER.format(
            what="stdout", total=len(stdout) + dropped["stdout"], kept=len(stdout)
        )
        truncated.append("stdout")
    if dropped.get("stderr"):
        stderr = stderr + TRUNCATION_MARKER.format(
            what="stderr", total=len(stderr) + dropped["stderr"], kept=len(stderr)
        )
        truncated.append("stderr")
    if len(value_json) + len(stdout) + len(stderr) + trace_chars <= budget:
        return FittedOutput(value, stdout, stderr, records, total, tuple(truncated))

    # The trace payloads go first: the value and the printed text are what the snippet chose to report.
    room = budget - len(value_json) - len(stdout) - len(stderr)
    new_records: list[ToolCallRecord] = []
    per = max(0, room) // max(1, len(records)) if records else 0
    for r, size in zip(records, sizes, strict=True):
        if size > per:
            r = ToolCallRecord(
                r.tool_id, r.args, _cut(_dumps(r.structured), per, "trace payload"), r.backend_kind, r.error,
                r.error_op, r.duration_ms, r.started_ms,
            )  # fmt: skip
        new_records.append(r)
    if any(size > per for size in sizes):
        truncated.append("trace")
    records = tuple(new_records)
    room_left = budget - len(value_json)
    # Then the streams share what the value leaves, each at least a quarter of the budget.
    for name in ("stdout", "stderr"):
        text = stdout if name == "stdout" else stderr
        cap = max(budget // 4, room_left // 2)
        if len(text) > cap:
            text = _cut(text, cap, name)
            if name not in truncated:
                truncated.append(name)
        room_left -= len(text)
        if name == "stdout":
            stdout = text
        else:
            stderr = text
    if len(value_json) > max(budget // 2, budget - len(stdout) - len(stderr)):
        keep = max(budget // 2, budget - len(stdout) - len(stderr))
        value = _cut(value_json, keep, "result")
        truncated.append("value")
    return FittedOutput(value, stdout, stderr, records, total, tuple(truncated))
