"""The one call stack that every tool call passes, composed once per run or door call.

A call from a snippet, a chain, a saved snippet, an exposed tool or a door's ``run_tool`` goes
down the same layers, put together by :func:`build`::

    Budget (max_tool_calls; in runs: every call the snippet makes, a refused one too)
      → AtOnce (at most CALLS_AT_ONCE of the run's calls in flight at once)
        → Gate (policy: allow / ask / deny, quarantine, approvals; asks about a single call only when
                its arguments are ones the tool takes: makeable_first)
          → AuditGuard (with policy.audit.required: no call while the audit log cannot be written)
            → Record (trace, audit trail, span)
              → Deadline (a door's bound on a direct call)
                → Prefetch (in a run: reads started before the code reached them)
                  → Run (only as judged: the caller's view, then toolrun)

The budget comes first so that a call the gate refuses (denied, quarantined: an audit entry each)
is counted too, and a run cannot pile up refusals in a loop; a call that pauses the run is counted
once, when it is made after the decision. A call waits for its place before the gate judges it, and
carries the gate's verdict down: the last layer makes it only while that verdict stands, so no wait
after the gate (the audit log, a listener, a read started early) lets it go on a changed definition.

Each layer is a small class that calls the next once (:class:`Layer`); a concern that applies to
every call is a new layer and one line in :func:`build`. Only this package (the gate and its
policy) reads the policy.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolcode._audit import AuditTrail
from toolcode._limits import CallBudget
from toolcode._saved_snippet import SavedSnippet
from toolcode._snippets import RunSnippet
from toolcode._trace import Trace
from toolcode._view import CatalogView
from toolcode.calls._at_once import CALLS_AT_ONCE, AtOnce, Places
from toolcode.calls._budget import Budget
from toolcode.calls._deadline import Deadline
from toolcode.calls._early import Early, Prefetch, early_calls
from toolcode.calls._foresee import Foresight
from toolcode.calls._gate import Decide, Gate, ask_person, cannot_pause, pause, refuse
from toolcode.calls._guard import AuditGuard
from toolcode.calls._layer import Call, Layer
from toolcode.calls._policy import (
    MAX_SNIPPET_CODE,
    Approvals,
    Asker,
    Checkpoint,
    PendingCall,
    Policy,
    call_key,
    check_judged,
    decider,
    literal_tool_ids,
    snippet_code,
)
from toolcode.calls._record import Record
from toolcode.calls._run import Run, makeable_first
from toolrun import Runner

__all__ = [
    "CALLS_AT_ONCE",
    "MAX_SNIPPET_CODE",
    "Approvals",
    "Asker",
    "Call",
    "Checkpoint",
    "Decide",
    "Early",
    "Foresight",
    "Layer",
    "PendingCall",
    "Policy",
    "Scope",
    "ask_person",
    "build",
    "call_key",
    "cannot_pause",
    "decider",
    "early_calls",
    "literal_tool_ids",
    "pause",
    "refuse",
    "snippet_code",
]


@dataclass(frozen=True, slots=True)
class Scope:
    """What one run's (or one door call's) calls are made within."""

    view: CatalogView
    """What the caller may see."""
    checkpoint: Checkpoint
    """The policy, with the run's approvals."""
    decide: Decide
    """What happens to a call the policy asks about (pause the run, ask a person, refuse)."""
    trace: Trace
    """Where each call is recorded (a door's is thrown away)."""
    audit: AuditTrail
    """The run's audit entries."""
    run_snippet: RunSnippet
    """Runs a saved snippet for a call."""
    budget: CallBudget | None = None
    """The run's call budget (``None`` at a door: direct calls are not counted)."""
    deadline: float | None = None
    """A door's bound on a direct call that gives no timeout of its own."""
    audit_probe: Callable[[], Awaitable[None]] | None = None
    """With ``policy.audit.required``: raises while the audit log cannot be written (calls fail closed)."""
    early: Early | None = None
    """In a run: what may start before the code reaches it (``None``: nothing does)."""


def build(runner: Runner, scope: Scope) -> Layer:
    """The call stack of one run or door call: the one place where layers are put together."""
    run_snippet = scope.run_snippet

    async def judged_snippet(snippet: SavedSnippet, args: Mapping[str, Any]) -> Any:
        check_judged(snippet.tool_id, snippet.code)  # only the code the gate judged runs
        return await run_snippet(snippet, args)

    places = Places()
    stack: Layer = Run(scope.checkpoint, runner, judged_snippet)
    if scope.early is not None:
        early, checkpoint = scope.early, scope.checkpoint
        stack = Prefetch(stack, early, places, checkpoint, scope.trace, scope.audit, scope.budget, scope.audit_probe)
    if scope.deadline is not None:
        stack = Deadline(stack, scope.deadline)
    stack = Record(stack, scope.trace, scope.audit)
    if scope.audit_probe is not None:
        stack = AuditGuard(stack, scope.audit_probe)
    stack = Gate(stack, scope.checkpoint, scope.decide, makeable_first(scope.decide, scope.view))
    stack = AtOnce(stack, places)
    return stack if scope.budget is None else Budget(stack, scope.budget)
