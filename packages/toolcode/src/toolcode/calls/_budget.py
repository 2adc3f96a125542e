"""The call budget: a run's calls counted against ``max_tool_calls``."""

from __future__ import annotations

from collections.abc import Sequence

from toolcode._limits import CallBudget
from toolcode._types import CallPaused
from toolcode.calls._layer import Call, Layer
from toolcode.exceptions import LimitExceededError, ToolError
from toolrun import RunResult

__all__ = ["Budget"]


class Budget(Layer):
    """Counts each call the snippet makes; calls planned together must fit the budget as a whole, or none is made.

    The first layer of a run's stack: a call the gate refuses (denied, quarantined) counts as one
    made, so that a snippet catching the refusal in a loop stops at ``max_tool_calls``, with as
    many audit entries. A call that pauses the run for a decision is not counted then: it is when
    it is made again on resume. A tripped budget stays tripped: every later call of the run fails
    with the same limit error.
    """

    __slots__ = ("_budget",)

    def __init__(self, inner: Layer, budget: CallBudget) -> None:
        super().__init__(inner)
        self._budget = budget

    async def plan(self, calls: Sequence[Call]) -> None:
        b = self._budget
        b.check()
        if b.calls + len(calls) > b.max_tool_calls:
            err = LimitExceededError("max_tool_calls", b.max_tool_calls, b.calls + len(calls))
            b.trip(err)
            raise err
        try:
            await self.inner.plan(calls)
        except ToolError:
            b.take()  # refused as a whole, before any was made: one call (one audit entry)
            raise

    async def call(self, call: Call) -> RunResult:
        budget = self._budget
        budget.take()
        try:
            return await self.inner.call(call)
        except CallPaused:
            budget.calls -= 1  # not made: it is counted when it is made, after the decision
            raise
