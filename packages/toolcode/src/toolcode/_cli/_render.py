"""Rendering for people (rich, with every outside string made safe) and plain JSON for programs.

Text from upstream servers and snippets is hostile to a terminal: rich markup (``[/]``,
``[link=…]``) would be interpreted and escape sequences would reach the terminal. Every such
string goes through :func:`safe` and is printed with markup off (or escaped).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from toolcode._types import ToolCallRecord
from toolcode.exceptions import clip
from toolcode.models import ExecuteOutcome, TraceEntry
from tooldocs import json_text

__all__ = ["TERMINAL_LINES", "print_json", "render_outcome", "safe", "show_block", "trace_table"]

# ESC-introduced sequences (CSI, OSC, DCS/APC/PM/SOS strings, two-character escapes), then any
# remaining C0/C1 control (tab and newline excepted) and the bidirectional overrides.
_TERMINAL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[@-Z\\-_]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)


def safe(text: str) -> str:
    """``text`` without terminal control sequences or control characters (tabs and newlines kept)."""
    return _TERMINAL.sub("", text)


def print_json(data: Any) -> None:
    """Write one JSON document to stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


def _short(value: Any, limit: int = 60) -> str:
    return clip(safe(json_text(value)), limit)


def trace_table(records: Sequence[ToolCallRecord | TraceEntry], title: str = "trace") -> Table:
    """One row per tool call: order, tool id, args, outcome, duration."""
    calls = f"{len(records)} call{'' if len(records) == 1 else 's'}"
    table = Table("#", "tool", "args", "result", "ms", title=f"{title} ({calls})", title_justify="left")
    for i, r in enumerate(records, 1):
        if isinstance(r, ToolCallRecord):
            args, result, code = dict(r.args), r.structured, r.code or r.error_op
        else:
            args, result, code = r.args, r.result, r.code
        outcome = (
            Text(_short(f"{code or 'error'}: {r.error}", 80), style="red") if r.error else Text(_short(result, 50))
        )
        table.add_row(str(i), Text(safe(r.tool_id)), Text(_short(args, 50)), outcome, f"{r.duration_ms:.1f}")
    return table


TERMINAL_LINES = 200
"""Lines of a value (or of a snippet's output) shown on a terminal; the rest is cut with a marker."""

_SEE_ALL = "add --json, or pipe the output (| less), to see all of it"


def show_block(console: Console, title: str, text: str) -> None:
    """A value or a snippet's output, whole unless a person reads it on a terminal.

    Piped or redirected, the text is written as it is (a value is its JSON). On a terminal it is
    a titled panel whose long lines wrap (never cropped) and which shows the first
    :data:`TERMINAL_LINES` lines; a line under it says how many are left out and how to see them.
    """
    text = safe(text)
    if not console.is_terminal:
        console.file.write(text + "\n")
        console.file.flush()
        return
    lines = text.split("\n")
    body = Text("\n".join(lines[:TERMINAL_LINES]), overflow="fold", no_wrap=False)
    console.print(Panel(body, title=title, title_align="left", expand=False))
    if len(lines) > TERMINAL_LINES:
        left = len(lines) - TERMINAL_LINES
        console.print(
            Text(f"… {left:,} more line{'' if left == 1 else 's'} of {title} not shown: {_SEE_ALL}", "yellow")
        )


def render_outcome(
    out: Console, err: Console, outcome: ExecuteOutcome, *, resume_hint: Callable[[str], str] | None = None
) -> None:
    """Value (or error), stdout, stderr, trace and the call summary, for a person.

    ``resume_hint`` says, for a paused run's execution id, how to continue it (commands to paste).
    """
    if outcome.ok:
        show_block(out, "value", json.dumps(outcome.value, ensure_ascii=False, indent=2, default=str))
    if outcome.stdout:
        show_block(out, "stdout", outcome.stdout.rstrip("\n"))
    if outcome.stderr:
        show_block(err, "stderr", outcome.stderr.rstrip("\n"))
    if outcome.trace:
        err.print(trace_table(outcome.trace))
    c = outcome.calls
    summary = (
        f"{c.count} tool call{'' if c.count == 1 else 's'}"
        + (f", {c.failed} failed" if c.failed else "")
        + f", {outcome.duration_ms:.0f} ms"
    )
    if outcome.truncated:
        summary += f"; truncated: {', '.join(outcome.truncated)}"
    for f in c.failures:
        err.print(Text.assemble(("failed: ", "red"), safe(f"{f.tool_id} [{f.code}] {f.message}")))
    if outcome.approval is not None:
        a = outcome.approval
        where = f" at line {a.line}" if a.line is not None else ""
        for p in a.pending:
            shown = _short(p.args, 200)
            err.print(Text.assemble((f"paused{where}: ", "yellow"), safe(f"{p.tool_id} ({p.tier}) {shown}")))
        if resume_hint is not None:
            err.print(Text(safe(resume_hint(a.execution_id))))
        if a.console:
            err.print(Text(safe(f"or decide in the console: {a.console}")))
    if outcome.error is not None:
        e = outcome.error
        where = f" at line {e.line}" if e.line is not None else ""
        err.print(Text.assemble((f"error [{e.code}]{where}: ", "red"), safe(e.message)))
        if e.hint:
            err.print(Text(safe(f"hint: {e.hint}"), style="dim"))
    err.print(Text(summary, style="dim"))
