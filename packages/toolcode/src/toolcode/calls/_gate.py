"""The policy gate: every call is judged before it goes on; what needs a person waits for one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from toolcode._types import CallPaused
from toolcode.calls._layer import Call, Layer
from toolcode.calls._policy import ApprovalNeeded, Asker, Checkpoint, PendingCall, Verdict, decider
from toolcode.exceptions import ErrorCode, ToolError
from toolrun import RunResult

_SNIPPETS_PREFIX = "snippets:"
_ASK_AT_MOST = 3
_CHANGED = "its definition changed after it was judged (or approved) with the calls planned with it"
_CHANGED_THEN = "call it again to be asked about it as it is now"
_FED = (
    "its arguments come from earlier steps' results (use_previous, {{...}} references), so it is asked "
    "about only as it is made, with them filled in"
)
_FED_THEN = "call it on its own (run_tool) with those arguments, and the run pauses to ask about exactly them"

__all__ = ["Decide", "Gate", "ask_person", "cannot_pause", "pause", "refuse"]

Decide = Callable[[Checkpoint, Sequence[PendingCall]], Awaitable[None]]
"""What a gate does with calls the policy asks about: returns once a person approved them, else raises."""


async def pause(checkpoint: Checkpoint, pending: Sequence[PendingCall]) -> None:
    """Inside a run: stop the run at this call (the engine turns the signal into a paused run)."""
    raise CallPaused(list(pending))


async def cannot_pause(checkpoint: Checkpoint, pending: Sequence[PendingCall]) -> None:
    """Inside a run of an engine that cannot pause: the call fails."""
    first = pending[0]
    raise ToolError(
        first.tool_id,
        f"needs approval ({first.reason}), and this run cannot pause for it (its engine cannot pause "
        "runs): add an allow rule, or use an engine that pauses (monty)",
        "not_allowed",
        code=ErrorCode.NOT_ALLOWED,
    )


async def refuse(checkpoint: Checkpoint, pending: Sequence[PendingCall]) -> None:
    """At a door nobody can ask: the call fails and says where it could wait for a decision."""
    first = pending[0]
    raise ToolError(
        first.tool_id,
        f"needs approval ({first.reason}); call it from execute_code, where the run pauses "
        "for the decision and resume_execution continues it",
        "not_allowed",
        code=ErrorCode.APPROVAL_REQUIRED,
    )


def ask_person(asker: Asker) -> Decide:
    """At a door whose client can ask its user: ask now, within the call."""

    async def decide(checkpoint: Checkpoint, pending: Sequence[PendingCall]) -> None:
        decision, who = await asker(pending, None)
        checkpoint.approvals.who = who
        if decision in ("deny", "abort"):
            checkpoint.log_decision(pending, "denied", who)
            raise ToolError(
                pending[0].tool_id, f"{decider(who)} denied this call", "not_allowed", code=ErrorCode.APPROVAL_DENIED
            )
        checkpoint.log_decision(pending, "approved", who)
        checkpoint.approve_once(pending)

    return decide


class Gate(Layer):
    """Judges each call with the policy (allow, ask, deny, quarantine) before it goes on.

    Calls planned together are judged together, before the first of them is made. Each verdict
    carries the digest of the definition it was made under: when a planned call is made, a tool
    whose definition changed since (or that is quarantined now) is judged again. A question about
    it then cannot stop the run (resuming would make the plan's earlier calls again): the call
    fails with ``approval_required``, and calling it again asks about what it is now.
    A verdict covers the arguments it judged, and a person's approval the arguments they were
    shown: a planned call whose arguments are filled in from earlier calls' results (a chain's fed
    step) is judged, and asked about, only as it is made, with those arguments (a question it
    raises in a run fails the same way); the plan refuses it outright only when denied or quarantined.
    A call of a saved snippet goes on with the tools its code names approved with it, as they
    were defined when it was judged (:meth:`Checkpoint.scope`); inside another snippet's run, only
    with what that snippet's approval listed. Each call goes on carrying its verdict
    (:attr:`Call.judged`): below, it is made only while that verdict stands.
    """

    __slots__ = ("_checkpoint", "_decide", "_makeable", "_planned")

    def __init__(self, inner: Layer, checkpoint: Checkpoint, decide: Decide, makeable: Decide | None = None) -> None:
        super().__init__(inner)
        self._checkpoint = checkpoint
        self._decide = decide
        self._makeable = makeable or decide
        """What decides about a single call: a person is asked only about one that can be made
        (a call made with arguments computed at run time may hold ones its tool refuses)."""
        self._planned: dict[Call, Verdict | None] = {}
        """Calls judged with a plan and not yet made, with their verdicts (keyed by the calls
        themselves: an id could be reused)."""

    async def _judge(self, calls: Sequence[Call], decide: Decide) -> dict[str, Verdict]:
        judged = [(c.tool_id, c.args) for c in calls]
        for _ in range(_ASK_AT_MOST):
            try:
                return self._checkpoint.check(judged)
            except ApprovalNeeded as e:
                # A person decides; what changed meanwhile (a snippet saved anew, a definition) has
                # another digest, which their decision does not cover: they are asked again.
                await decide(self._checkpoint, e.pending)
        first = judged[0][0]
        raise ToolError(
            first, "what was approved kept changing while a person decided", "not_allowed", code=ErrorCode.NOT_ALLOWED
        )

    def _midway(self, why: str, then: str) -> Decide:
        """Decides about a planned call judged (again) as it is made: the run cannot stop here.

        ``why`` says why it is judged now and ``then`` what to do instead, each a clause.
        """

        async def decide(checkpoint: Checkpoint, pending: Sequence[PendingCall]) -> None:
            try:
                await self._makeable(checkpoint, pending)
            except CallPaused:
                first = pending[0]
                raise ToolError(
                    first.tool_id,
                    f"needs approval ({first.reason}): {why}, and a plan under way cannot stop for a question; "
                    f"nothing was called: {then}",
                    "not_allowed",
                    code=ErrorCode.APPROVAL_REQUIRED,
                ) from None

        return decide

    async def plan(self, calls: Sequence[Call]) -> None:
        # A fed call's arguments are not known yet: nobody is asked about it now (a question shows
        # the arguments the tool gets), but a tool no decision lets through refuses the plan.
        self._checkpoint.refuse_outright(c.tool_id for c in calls if c.fed)
        verdicts = await self._judge([c for c in calls if not c.fed], self._decide)
        self._planned.update((c, None if c.fed else verdicts.get(c.tool_id)) for c in calls)
        await self.inner.plan(calls)

    async def call(self, call: Call) -> RunResult:
        checkpoint, planned = self._checkpoint, self._planned
        if planned and (key := call.planned or call) in planned:
            verdict = planned.pop(key)
            if key.fed or (call is not key and call.args != key.args):
                # A verdict (and an approval) covers the arguments judged: these are judged as they are.
                verdict = (await self._judge((call,), self._midway(_FED, _FED_THEN))).get(call.tool_id)
            elif verdict is None or not checkpoint.stands(verdict, call.tool_id):
                verdict = (await self._judge((call,), self._midway(_CHANGED, _CHANGED_THEN))).get(call.tool_id)
            call.judged = checkpoint.judged(verdict)  # it stands now, or was judged just now
        elif (judged := checkpoint.allowed(call.tool_id)) is not None:
            call.judged = judged
        else:
            # No await between the check and reading the catalog's version: the verdict is of that version.
            call.judged = checkpoint.judged((await self._judge((call,), self._makeable)).get(call.tool_id))
        if not call.tool_id.startswith(_SNIPPETS_PREFIX):
            return await self.inner.call(call)
        # A saved snippet: what it names goes with it, and only the code judged runs.
        with checkpoint.scope(call.tool_id, call.judged[1]):
            return await self.inner.call(call)
