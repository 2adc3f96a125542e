"""A call, and the shape of a layer of the call stack."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolcode.calls._policy import Judged
from toolrun import RunResult

__all__ = ["Call", "Layer"]


@dataclass(slots=True, eq=False)  # not frozen: one is built per call, and a frozen init costs twice as much
class Call:
    """One tool call on its way down the stack (compared by identity: two calls of one tool are two calls)."""

    tool_id: str
    """The id as the caller wrote it (resolved by the last layer)."""
    args: dict[str, Any]
    """The arguments, keyed by the tool's wire names."""
    timeout: float | None = None
    """The caller's own bound on this call (``run_tool(..., timeout=)`` at a door), if any."""
    planned: Call | None = None
    """The planned call this one carries out (a chain step, its references filled in once the
    earlier steps ran): judged with the plan, and again only when its arguments are not the planned
    ones (a person's approval covers the arguments they were shown)."""
    fed: bool = False
    """In a plan: its arguments are filled in from earlier calls' results as it is made (a chain step
    with references or ``use_previous``), so the plan refuses only what no decision lets through, and
    the call is judged, and asked about, with the arguments it is made with."""
    early: bool = False
    """Answered by the same call started before the code reached it (set by the layer that held it)."""
    judged: Judged | None = None
    """What the gate judged: the catalog version and the verdict (set by the gate; a call started early, by
    the layer that started it). The last layer makes the call only while that verdict stands."""


class Layer:
    """One concern around the next layer; a layer overrides what it changes and passes the rest on.

    ``plan`` is told of calls about to be made together (``run_tools``, a chain) before the first
    of them is made: a layer that judges or counts calls as a whole does it there. ``call`` makes
    one call (after ``plan``, for planned calls). Each layer calls the next once.
    """

    __slots__ = ("inner",)

    def __init__(self, inner: Layer) -> None:
        self.inner = inner

    async def plan(self, calls: Sequence[Call]) -> None:
        """Calls about to be made together: refuse them all here, or let them go."""
        await self.inner.plan(calls)

    async def call(self, call: Call) -> RunResult:
        """Make one call."""
        return await self.inner.call(call)
