"""How many of one run's calls are in flight at once.

A snippet may fan out thousands of calls at once (``run_tools``, ``asyncio.gather`` of
``run_tool_async``): started together, they held the event loop and every upstream while other
callers' runs waited. Past :data:`CALLS_AT_ONCE`, a call waits for one of the run's calls in flight
to end. Calls started early (:mod:`._early`) take their places from the same count.
"""

from __future__ import annotations

from typing import Final

import anyio

from toolcode.calls._layer import Call, Layer
from toolrun import RunResult

__all__ = ["CALLS_AT_ONCE", "AtOnce"]

CALLS_AT_ONCE: Final = 16
"""A run's calls in flight at once (each saved snippet a run calls counts its own)."""


class AtOnce(Layer):
    """Lets at most :data:`CALLS_AT_ONCE` calls of one run (or door call) go on at once; the rest wait their turn."""

    __slots__ = ("_places",)

    def __init__(self, inner: Layer) -> None:
        super().__init__(inner)
        self._places = anyio.CapacityLimiter(CALLS_AT_ONCE)

    async def call(self, call: Call) -> RunResult:
        async with self._places:
            return await self.inner.call(call)
