"""Asking the client's user about a paused run: within the request (MCP elicitation), or by a retry.

A 2025-11-25 client that declares elicitation is asked with ``elicitation/create`` while the request
waits; a 2026-07-28 client gets an ``InputRequiredResult``, asks its user, and retries the call with
the answer. A dismissed question leaves the run paused (``resume_execution`` continues it later).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext

from toolcode._core import CodeMode
from toolcode._outcome import line_quoted, shown_to_decide
from toolcode._paused_run import DECISIONS
from toolcode._types import OnToolCall
from toolcode.calls import Asker, PendingCall
from toolcode.models import ExecuteOutcome, PendingCallInfo
from toolindex.log import get_logger

__all__ = ["asker", "can_ask_by_retry", "can_elicit", "continue_by_retry", "decide_now", "input_required"]

log = get_logger("toolcode.server")

_MAX_ASKS_PER_REQUEST = 100
"""Decisions asked for within one execute_code request, at most (then the run stays paused)."""
_BY = "person (elicitation)"


def _by(caller: str | None) -> str:
    """Who answered a question asked through the client: the person behind the caller, named (audit, trace)."""
    return f"person:{caller} (elicitation)" if caller and caller != "local" else _BY


_NAMES = {
    "approve": "Approve this call",
    "approve_run": "Approve these tools for this run",
    "deny": "Deny this call",
    "abort": "Stop the run",
}


def _form(decisions: Sequence[str]) -> dict[str, Any]:
    """The form a person fills in about paused calls, offering ``decisions``."""
    names = [_NAMES[d] for d in decisions]
    field = {"type": "string", "title": "Decision", "enum": list(decisions), "enumNames": names}
    return {"type": "object", "properties": {"decision": field}, "required": ["decision"]}


Pending = Sequence[PendingCall | PendingCallInfo]


def _question(
    pending: Pending, line: int | None, code: str, snippet_code: Mapping[str, str] | None = None
) -> tuple[str, tuple[str, ...]]:
    """The question a person answers about paused calls, and the decisions it offers (:func:`shown_to_decide`)."""
    shown, offered = shown_to_decide(pending, snippet_code)
    quoted = line_quoted(code, line)
    where = f"\nat line {line}: {quoted}" if quoted is not None else ""
    head = f"A program run by the assistant wants to make {len(pending)} call(s) that need your decision:\n"
    return head + shown + where, offered


def _decision_of(result: types.ElicitResult, offered: Sequence[str]) -> str:
    """A person's answer as a decision; ``cancel`` leaves the run paused (as does one that was not offered)."""
    if result.action == "decline":
        return "deny"
    if result.action != "accept" or not result.content:
        return "cancel"
    decision = result.content.get("decision")
    return decision if isinstance(decision, str) and decision in offered else "cancel"


def can_elicit(ctx: ServerRequestContext[Any]) -> bool:
    """Whether the client declared MCP elicitation: its user can be asked about a paused run."""
    caps = ctx.session.client_capabilities
    return caps is not None and caps.elicitation is not None


def can_ask_by_retry(ctx: ServerRequestContext[Any]) -> bool:
    """2026-07-28: the client asks its user when the result says input is required, then retries."""
    return can_elicit(ctx) and not ctx.session.can_send_request


async def _elicit(
    ctx: ServerRequestContext[Any],
    wait: float,
    pending: Pending,
    line: int | None,
    code: str,
    snippet_code: Mapping[str, str] | None = None,
) -> str:
    """The person's decision, asked through the client.

    ``cancel``: dismissed, the client failed to ask, or nobody answered within ``wait`` seconds
    (``policy.ask_timeout``): the run stays paused, for ``resume_execution``.
    """
    message, offered = _question(pending, line, code, snippet_code)
    result = None
    with anyio.move_on_after(wait):
        try:
            result = await ctx.session.elicit_form(message, _form(offered), related_request_id=ctx.request_id)
        except Exception as e:  # the client failed to ask: the run stays paused, to resume later
            log.warning("server.elicitation_failed", error=repr(e)[:300])
            return "cancel"
    if result is None:
        log.info("server.elicitation_unanswered", seconds=wait)
        return "cancel"
    return _decision_of(result, offered)


def asker(ctx: ServerRequestContext[Any], caller: str | None, wait: float) -> Asker | None:
    """Asks the client's user (MCP elicitation) when the client declared it can; else ``None``.

    ``wait``: how long a question waits for its answer (``policy.ask_timeout``).
    """
    if not can_elicit(ctx) or not ctx.session.can_send_request:
        return None

    async def ask(pending: Sequence[PendingCall], line: int | None) -> tuple[str, str]:
        return await _elicit(ctx, wait, pending, line, ""), _by(caller)

    return ask


def input_required(out: ExecuteOutcome, code: str) -> types.InputRequiredResult:
    """The question about a paused run, for a client that asks its user and retries with the answer."""
    approval = out.approval
    assert approval is not None
    message, offered = _question(approval.pending, approval.line, code, approval.snippet_code)
    params = types.ElicitRequestFormParams(message=message, requested_schema=_form(offered))
    return types.InputRequiredResult(
        input_requests={"decision": types.ElicitRequest(params=params)}, request_state=approval.execution_id
    )


async def continue_by_retry(
    codemode: CodeMode, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams, caller: str
) -> ExecuteOutcome | types.InputRequiredResult:
    """The retry of an execute_code that asked for a decision: continue the paused run with it."""
    answer = (params.input_responses or {}).get("decision")
    paused = await codemode.paused_outcome(params.request_state, caller)
    approval = paused.approval
    # What the question offered is asked again of the run as it waits (the question is its own:
    # a decided one answers below with how it ended, whatever the answer).
    offered = DECISIONS
    if approval is not None:
        offered = _question(approval.pending, approval.line, "", approval.snippet_code)[1]
    decision = _decision_of(answer, offered) if isinstance(answer, types.ElicitResult) else "cancel"
    if decision == "cancel":  # dismissed: the run stays paused, as the 2025-11-25 era answers
        return paused
    out = await codemode.resume(params.request_state, decision, caller=caller, by=_by(caller))
    return input_required(out, str((params.arguments or {}).get("code") or "")) if out.approval is not None else out


async def decide_now(
    codemode: CodeMode,
    ctx: ServerRequestContext[Any],
    out: ExecuteOutcome,
    code: str,
    caller: str,
    on_tool_call: OnToolCall | None,
) -> ExecuteOutcome:
    """While the run waits and the client can ask its user, ask within this request and continue."""
    wait = codemode.services.settings.policy.ask_timeout
    if asker(ctx, caller, wait) is None:
        return out
    for _ in range(_MAX_ASKS_PER_REQUEST):
        approval = out.approval
        if approval is None:
            break
        decision = await _elicit(ctx, wait, approval.pending, approval.line, code, approval.snippet_code)
        if decision == "cancel":
            break  # left paused: resume_execution continues it later
        out = await codemode.resume(
            approval.execution_id, decision, caller=caller, on_tool_call=on_tool_call, by=_by(caller)
        )
    return out
