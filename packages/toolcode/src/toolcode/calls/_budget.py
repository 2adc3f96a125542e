"""The call budget: a run's calls counted against ``max_tool_calls``."""

from __future__ import annotations

from collections.abc import Sequence

from toolcode._limits import CallBudget
from toolcode.calls._layer import Call, Layer
from toolcode.exceptions import LimitExceededError
from toolrun import RunResult

__all__ = ["Budget"]


class Budget(Layer):
    """Counts each call; calls planned together must fit the budget as a whole, or none is made.

    A tripped budget stays tripped: every later call of the run fails with the same limit error.
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
        await self.inner.plan(calls)

    async def call(self, call: Call) -> RunResult:
        self._budget.take()
        return await self.inner.call(call)
