"""The doors' view of a run: the outcome model and the text a model reads of it."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from toolcode._errors import error_info
from toolcode._paused_run import DECISIONS, Decision, PausedRun
from toolcode._types import ExecuteResult, LimitsReport, ToolCallRecord
from toolcode._view import CatalogView
from toolcode.calls import MAX_SNIPPET_CODE, PendingCall
from toolcode.calls import snippet_code as kept_code
from toolcode.exceptions import ApprovalRequiredError, ToolCodeError, clip
from toolcode.models import (
    ApprovalRequest,
    CallFailure,
    CallSummary,
    ErrorInfo,
    ExecuteOutcome,
    PendingCallInfo,
    TraceEntry,
)
from tooldocs import json_text

__all__ = [
    "APPROVAL_OP",
    "code_lines",
    "definition_text",
    "line_quoted",
    "outcome",
    "outcome_json",
    "outcome_text",
    "paused_result",
]

_SUMMARY_FAILURES = 3
_SUMMARY_MESSAGE = 160


def outcome(
    result: ExecuteResult | None,
    error: ToolCodeError | None,
    detail: str,
    started: float | None = None,
    view: CatalogView | None = None,
    link: Callable[[str], str | None] | None = None,
) -> ExecuteOutcome:
    """The door's view of a run: value and output, error info, call summary, trace on request.

    ``view`` is the run's view of the catalog: hints name only tools the run could use; ``link``
    gives a paused run's console page.
    """
    records: tuple[ToolCallRecord, ...] = result.tool_calls if result is not None else ()
    failures = [r for r in records if r.error is not None]
    calls = sum(1 for r in records if r.error_op != APPROVAL_OP and r.early != "discarded")
    summary = CallSummary(
        count=calls,
        failed=len(failures),
        failures=[
            CallFailure(tool_id=r.tool_id, code=r.code or "tool_error", message=clip(r.error or "", _SUMMARY_MESSAGE))
            for r in failures[:_SUMMARY_FAILURES]
        ],
    )
    budget = int(result.limits.applied.get("max_output_chars", 0)) if result is not None else 0
    trace = _trace_entries(records, budget or sys.maxsize) if detail == "full" else None
    info: ErrorInfo | None = None
    approval: ApprovalRequest | None = None
    if isinstance(error, ApprovalRequiredError):
        paused: PausedRun = error.paused
        approval = ApprovalRequest(
            execution_id=paused.execution_id,
            pending=[PendingCallInfo(**p.to_dict()) for p in paused.pending],
            snippet_code=paused.snippet_code,
            line=paused.state.line,
            may_call=paused.may_call,
            expires=round(paused.expires, 3) if paused.expires is not None else None,
            console=link(paused.execution_id) if link is not None else None,
        )
    elif error is not None:
        info = error_info(error, view)
    duration = result.duration_ms if result is not None else 0.0
    if started is not None and result is None:
        duration = (time.perf_counter() - started) * 1000
    truncated = list(result.limits.truncated) if result is not None else []
    if trace is not None and len(trace) < len(records) and "trace" not in truncated:
        truncated.append("trace")
    return ExecuteOutcome(
        ok=error is None,
        value=result.value if result is not None and error is None else None,
        stdout=result.stdout if result is not None else "",
        stderr=result.stderr if result is not None else "",
        error=info,
        calls=summary,
        trace=trace,
        truncated=truncated,
        duration_ms=round(duration, 1),
        status="approval_required" if approval is not None else ("ok" if error is None else "error"),
        approval=approval,
        summary=detail != "none",
    )


APPROVAL_OP = "approval"
"""``error_op`` of the trace entry that records a decision on a paused run (not a tool call)."""


def paused_result(run: PausedRun) -> ExecuteResult:
    """What a paused run had produced when it stopped (its value is not known yet)."""
    return ExecuteResult(
        value=None,
        stdout=run.stdout,
        stderr=run.stderr,
        tool_calls=tuple(run.trace),
        duration_ms=run.elapsed * 1000.0,
        limits=LimitsReport(applied=run.options.applied(), tool_calls=run.calls, output_chars=0),
    )


def _trace_entries(records: Sequence[ToolCallRecord], budget: int) -> list[TraceEntry]:
    # Payloads were already cut to the run's budget; drop whole entries beyond it (the summary
    # still counts every call).
    out: list[TraceEntry] = []
    used = 0
    for r in records:
        entry = TraceEntry(
            tool_id=r.tool_id,
            ok=r.error is None,
            duration_ms=round(r.duration_ms, 2),
            error=r.error,
            code=r.code,
            args=dict(r.args) if r.args else {},
            result=r.structured,
            early=r.early,
        )
        size = len(json.dumps(entry.model_dump(mode="json"), default=str))
        if out and used + size > budget:
            break
        out.append(entry)
        used += size
    return out


def outcome_json(outcome: ExecuteOutcome) -> dict[str, Any]:
    """A run's outcome as the doors print it (MCP ``structuredContent``, ``toolcode exec --json``).

    Its fields, less those at their defaults (an empty ``stdout``, no ``error``, no ``trace``...):
    a client that reads ``structuredContent`` pays for every key on every run. What a field holds
    is whole (an ``error`` has every key of the one error shape).
    """
    dump = outcome.model_dump(mode="json")
    return {k: v for k, v in dump.items() if k not in _DEFAULTS or v != _DEFAULTS[k]}


_DEFAULTS: dict[str, Any] = ExecuteOutcome.model_construct(ok=True, calls=CallSummary(count=0)).model_dump(
    mode="json", exclude={"ok", "status", "calls", "value", "duration_ms"}
)
"""The JSON of the outcome's defaulted fields (``value``, ``status`` and ``duration_ms`` are always shown)."""


def outcome_text(outcome: ExecuteOutcome) -> str:
    """What a model reads of a run: the value, stdout, stderr, the error, and, when it says something, one line.

    The line is the only overhead: ``[13 tool calls, 1 failed: github:get_issue (not_found), 412 ms]``.
    It comes when a call or the run failed, when output was cut, or when the caller asked for it
    (``trace`` ``summary`` or ``full``); the full trace stays in the structured result.
    """
    parts: list[str] = []
    if outcome.approval is not None:
        a = outcome.approval
        where = f"line {a.line} calls" if a.line is not None else "the run calls"
        for p in a.pending[:5]:
            shown = clip(json.dumps(p.args, ensure_ascii=False, default=str), 300)
            parts.append(f"approval required: {where} {p.tool_id} {shown} ({p.tier}; {p.reason})")
        parts.append(
            f"paused, execution_id {a.execution_id}: decide with resume_execution(execution_id, decision) — "
            "approve, approve_run, deny or abort"
            + (f"; or a person decides in the console: {a.console}" if a.console else "")
        )
    elif outcome.ok:
        parts.append(json_text(outcome.value))
    elif outcome.error is not None:
        e = outcome.error
        where = f" at line {e.line}" if e.line is not None else ""
        parts.append(f"error [{e.code}]{where}: {e.message}")
        if e.hint and e.hint not in e.message:
            parts.append(f"hint: {e.hint}")
    if outcome.stdout:
        parts.append("stdout:\n" + outcome.stdout.rstrip("\n"))
    if outcome.stderr:
        parts.append("stderr:\n" + outcome.stderr.rstrip("\n"))
    c = outcome.calls
    # A cut value, stdout or stderr carries its own marker (how much, and where the rest is); a
    # trace that is not shown (trace="summary") is not reported as cut either.
    cut = [t for t in outcome.truncated if t == "error" or (t == "trace" and outcome.trace is not None)]
    # A trace that is not shown is not output: its cut alone brings no line.
    shown_cut = [t for t in outcome.truncated if t != "trace" or outcome.trace is not None]
    if not (outcome.summary or outcome.error or c.failed or shown_cut or outcome.stored):
        return "\n".join(parts)
    line = f"[{c.count} tool call{'s' if c.count != 1 else ''}"
    if c.failed:
        shown = ", ".join(f"{f.tool_id} ({f.code})" for f in c.failures)
        more = f" +{c.failed - len(c.failures)}" if c.failed > len(c.failures) else ""
        line += f", {c.failed} failed: {shown}{more}"
    line += f", {outcome.duration_ms:.0f} ms"
    if cut:
        line += f"; truncated: {', '.join(cut)}"
    parts.append(line + "]")
    return "\n".join(parts)


MAX_SHOWN_CHARS: Final = 20_000
"""The longest list of pending calls a question shows whole; a person approves only what was shown."""
REFUSALS: Final[tuple[Decision, ...]] = ("deny", "abort")
"""What a question offers about calls too long to show whole."""


def shown_to_decide(
    pending: Sequence[PendingCall | PendingCallInfo], snippet_code: Mapping[str, str] | None = None
) -> tuple[str, tuple[Decision, ...]]:
    """Every pending call as a person reads it before deciding, and the decisions that may be made about it.

    A person approves only what they were shown: each call whole, then the code of each saved
    snippet approving them covers (:attr:`PendingCallInfo.snippets`), once however many calls name
    it, its lines numbered and written out (:func:`code_lines`). The code is looked up by digest in
    ``snippet_code`` (the paused run's table; ``None``: the code the calls were judged with,
    :func:`~toolcode.calls.snippet_code`). A snippet whose code is not there (past
    :data:`~toolcode.calls.MAX_SNIPPET_CODE`) is named as not shown, and the calls may only be
    denied or stopped. Calls too long to show (:data:`MAX_SHOWN_CHARS` together, code included) are
    shown cut, with a marker, and may only be denied or stopped there; they are approved where they
    can be read whole (the console, ``toolcode paused --json``, the paused run's ``pending``).
    """
    if snippet_code is None:
        snippet_code = kept_code([p for p in pending if isinstance(p, PendingCall)])
    text = "\n".join(f"- {p.tool_id} ({p.tier}): {json_text(p.args)}\n  why asked: {p.reason}" for p in pending)
    text = visible(text)  # no bidi override reorders what is approved, no invisible character hides it
    covered = snippets_covered(pending)
    missing = [tool_id for tool_id, digest in covered if digest not in snippet_code]
    text += "".join(_snippet_code(tool_id, snippet_code[h]) for tool_id, h in covered if h in snippet_code)
    whole = len(text) <= MAX_SHOWN_CHARS
    if not whole:
        text = (
            f"{text[:2_000]}…\n(too long to show here in full: {len(text):,} characters. It can be denied or "
            "stopped here; to approve it, read it whole in the console or in the paused run's pending calls, then "
            "decide with resume_execution or toolcode resume.)"
        )
    if missing:
        text += _not_kept(missing)
    return text, DECISIONS if whole and not missing else REFUSALS


def snippets_covered(pending: Sequence[PendingCall | PendingCallInfo]) -> list[tuple[str, str]]:
    """Each saved snippet approving ``pending`` covers, once: ``(tool id, digest of its code as judged)``."""
    return list(dict.fromkeys((tool_id, digest) for p in pending for tool_id, digest in p.snippets.items()))


def _not_kept(tool_ids: Sequence[str]) -> str:
    """What a question says of the saved snippets whose code it does not show (nothing approves them unseen)."""
    names = ", ".join(visible(t) for t in dict.fromkeys(tool_ids))
    return (
        f"\n(not shown: the code of {names}. The saved snippets' code these calls cover is more than one "
        f"question keeps ({MAX_SNIPPET_CODE:,} characters): they can be denied or stopped, not approved; call "
        "fewer or smaller snippets at once.)"
    )


def _snippet_code(tool_id: str, code: str) -> str:
    """A saved snippet's code as a question shows it: whole, each line numbered and written out."""
    lines = code_lines(code)
    width = len(str(len(lines)))
    shown = "\n".join(f"  {i:>{width}} | {line}" for i, line in enumerate(lines, start=1))
    count = f"{len(lines)} line{'s' if len(lines) != 1 else ''}"
    return f"\ncode of {visible(tool_id)} that approving runs ({count}):\n{shown}"


def line_quoted(code: str, line: int | None) -> str | None:
    """The snippet's line ``line`` as a question quotes it, or ``None`` when it has no such line.

    Numbered and written out as :func:`code_lines` has it, stripped, at most 300 characters (a cut marked).
    """
    lines = code_lines(code)
    return clip(lines[line - 1].strip(), 300) if line is not None and 0 < line <= len(lines) else None


def code_lines(code: str) -> list[str]:
    r"""A snippet's lines as its interpreter numbers them (a line ends at ``\n`` only), written out (:func:`visible`).

    ``str.splitlines`` also ends a line at ``\u2028``, ``\x0c``, ``\x1c``... which the interpreter
    does not: a line split there would move every later number, and a person shown "line 2" would
    read another line than the one that makes the call. A carriage return that does not end a line
    is written out too (an HTML page and a terminal would each start a line there).
    """
    lines = code.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the new line that ends the last line starts no line
    return [visible(line.removesuffix("\r")).replace("\r", "\\u000d") for line in lines]


_INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f"
    "\ufeff\uffa0\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
"""Control (but tab and new lines), format, line and paragraph separator characters, and every
default-ignorable code point (Unicode's ``Default_Ignorable_Code_Point``): bidi overrides and isolates,
zero-width, tag and variation selector characters, fillers. A font draws none of them, so a run of
them carries text nobody sees (a secret spelt in variation selectors after ``ok`` reads ``ok``)."""


def visible(text: str) -> str:
    r"""``text`` with its control and format characters written out (``\u202e``, ``\U000e0041``).

    What a person reads is what is there: never text a bidi override reorders or an invisible
    character hides.
    """
    return _INVISIBLE.sub(_written_out, text)


def definition_text(definition: Mapping[str, Any]) -> str:
    """A tool's definition (:func:`toolcode._audit.tool_definition`) as a person reviews it before approving its digest.

    Its JSON, indented with its keys sorted, whole: never cut to a budget, since approving its
    digest approves every part of it. Every door that shows the digest of a quarantined tool's
    definition shows it with this text (``describe_tool`` at level ``full``, the approval question
    of ``approve_tools``, ``toolcode tools approve``, the console), written out as :func:`visible` does.
    """
    return visible(json.dumps(definition, ensure_ascii=False, indent=2, sort_keys=True, default=str))


def _written_out(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
