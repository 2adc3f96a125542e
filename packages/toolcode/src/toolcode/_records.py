"""What a run gives back: one record per tool call, the limits report, the result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from toolrun import quick_init

__all__ = ["ExecuteResult", "LimitsReport", "OnToolCall", "ToolCallRecord"]


def _fields(record: Any) -> dict[str, Any]:
    return {f.name: getattr(record, f.name) for f in fields(record)}


@quick_init  # one per tool call
@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call made by a snippet (one per chain step, one per fan-out call)."""

    tool_id: str
    """The id the tool resolved to (the id as given when it did not resolve)."""
    args: Mapping[str, Any]
    """The arguments as passed (with ``previous`` for chain steps that use it)."""
    structured: Any
    """The result as plain data (``None`` on failure)."""
    backend_kind: str | None
    """``"local"``, ``"mcp"``, ``"provider"``, or ``None`` when no backend was reached."""
    error: str | None
    """The failure message, or ``None``."""
    error_op: str | None
    """The step that failed (see :class:`toolcode.exceptions.ToolError`), or ``None``."""
    duration_ms: float
    """Wall time of this call alone."""
    started_ms: float = 0.0
    """When the call started, in ms since the run started (orders overlapping calls)."""
    code: str | None = None
    """The failure's error code (see :class:`toolcode.exceptions.ErrorCode`), or ``None``."""
    early: str | None = None
    """``"used"``: answered by the same call, started before the code reached it; ``"discarded"``: started
    early and never reached, its result thrown away (listed after the run's calls); ``None``: neither."""

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (for JSON)."""
        ms = {"duration_ms": round(self.duration_ms, 3), "started_ms": round(self.started_ms, 3)}
        return _fields(self) | {"args": dict(self.args)} | ms


@dataclass(frozen=True, slots=True)
class LimitsReport:
    """Which limits applied to a run, how much of each was used, and which one stopped it."""

    applied: Mapping[str, float | int]
    """Each limit in force and its value (``timeout`` in s, ``max_memory`` in bytes, ...)."""
    tool_calls: int = 0
    """Tool calls made."""
    output_chars: int = 0
    """Characters of result, stdout, stderr and trace before truncation."""
    stopped_by: str | None = None
    """The limit that stopped the run, or ``None``."""
    truncated: tuple[str, ...] = ()
    """What the output budget truncated: any of ``"value"``, ``"stdout"``, ``"stderr"``, ``"trace"``."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (for JSON)."""
        return _fields(self) | {"applied": dict(self.applied), "truncated": list(self.truncated)}


@dataclass(frozen=True, slots=True)
class ExecuteResult:
    """The outcome of one run."""

    value: Any
    """``__out`` if the snippet set it, else its trailing expression's value (JSON-serialisable)."""
    stdout: str = ""
    stderr: str = ""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    """Every tool call, in the order the calls started."""
    duration_ms: float = 0.0
    limits: LimitsReport = field(default_factory=lambda: LimitsReport(applied={}))
    full: Mapping[str, str] = field(default_factory=dict[str, str])
    """What the output budget cut, whole, when the executor keeps it (``value`` as JSON text,
    ``stdout``): the core stores it and hands the caller a reference."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (for JSON)."""
        return {
            "value": self.value,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "tool_calls": [r.to_dict() for r in self.tool_calls],
            "duration_ms": round(self.duration_ms, 3),
            "limits": self.limits.to_dict(),
        }


OnToolCall = Callable[[ToolCallRecord], Awaitable[None]]
"""Called as each tool call completes (in completion order)."""
