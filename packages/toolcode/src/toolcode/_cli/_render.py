"""Rich rendering of results and traces for people; plain JSON for programs."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.json import JSON
from rich.panel import Panel
from rich.table import Table

from toolcode._types import ExecuteResult, ToolCallRecord

__all__ = ["print_json", "render_result", "trace_table"]


def print_json(data: Any) -> None:
    """Write one JSON document to stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def trace_table(records: Sequence[ToolCallRecord], title: str = "trace") -> Table:
    """One row per tool call: order, tool id, args, outcome, duration."""
    table = Table("#", "tool", "args", "result", "ms", title=f"{title} ({len(records)} calls)", title_justify="left")
    for i, r in enumerate(records, 1):
        outcome = f"[red]{r.error_op or 'error'}: {r.error}[/]" if r.error else _short(r.structured, 50)
        table.add_row(str(i), r.tool_id, _short(dict(r.args), 50), outcome, f"{r.duration_ms:.1f}")
    return table


def render_result(console: Console, result: ExecuteResult) -> None:
    """Value, then stdout, then the trace table (when a person reads it)."""
    value = json.dumps(result.value, ensure_ascii=False, default=str)
    console.print(Panel(JSON(value), title="value", title_align="left", expand=False))
    if result.stdout:
        console.print(Panel(result.stdout.rstrip("\n"), title="stdout", title_align="left", expand=False), markup=False)
    if result.tool_calls:
        console.print(trace_table(result.tool_calls))
    console.print(f"[dim]{len(result.tool_calls)} tool calls, {result.duration_ms:.0f} ms[/]")
