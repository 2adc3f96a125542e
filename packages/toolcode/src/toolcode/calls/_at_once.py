"""How many of one run's calls are in flight at once.

A snippet may fan out thousands of calls at once (``run_tools``, ``asyncio.gather`` of
``run_tool_async``): started together, they held the event loop and every upstream while other
callers' runs waited. Past :data:`CALLS_AT_ONCE`, a call waits for one of the run's calls in flight
to end, in the order they came.

A call waits for its place *before* the gate judges it (:class:`AtOnce` sits above the gate): a call
that waited while an earlier one changed its tool's definition is judged on the definition it is
made on. Calls started early (:mod:`._early`) take their places from the same count
(:class:`Places`); one the code waits for before it found a place runs on the place of the call
that waits for it.
"""

from __future__ import annotations

from collections import deque
from typing import Final

import anyio

from toolcode.calls._layer import Call, Layer
from toolrun import RunResult

__all__ = ["CALLS_AT_ONCE", "AtOnce", "Places"]

CALLS_AT_ONCE: Final = 16
"""A run's calls in flight at once (each saved snippet a run calls counts its own)."""


class Places:
    """The :data:`CALLS_AT_ONCE` places of one run (or door call), handed out in the order asked for.

    A call that finds a free place takes it without a turn of the event loop (the common case, on
    every call of a loop); one that ends hands its place to the first call waiting.
    """

    __slots__ = ("_busy", "_waiting")

    def __init__(self) -> None:
        self._busy = 0
        self._waiting: deque[anyio.Event] = deque()

    def take(self) -> bool:
        """Takes a free place if there is one and nobody waits for one (``False``: :meth:`wait`)."""
        if self._busy < CALLS_AT_ONCE and not self._waiting:
            self._busy += 1
            return True
        return False

    async def wait(self) -> None:
        """Returns holding a place, handed over by a call that ended (cancelled: holding none)."""
        turn = anyio.Event()
        self._waiting.append(turn)
        try:
            await turn.wait()
        except BaseException:
            if turn.is_set():
                self.leave()  # handed a place, then cancelled: it goes on to the next
            else:
                self._waiting.remove(turn)
            raise

    def leave(self) -> None:
        """Gives a place back: to the first call waiting, if any."""
        if self._waiting:
            self._waiting.popleft().set()  # the place passes on; the count stays
        else:
            self._busy -= 1


class AtOnce(Layer):
    """Lets at most :data:`CALLS_AT_ONCE` calls of one run (or door call) go on at once; the rest wait their turn."""

    __slots__ = ("_places",)

    def __init__(self, inner: Layer, places: Places) -> None:
        super().__init__(inner)
        self._places = places

    async def call(self, call: Call) -> RunResult:
        places = self._places
        if not places.take():
            await places.wait()
        try:
            return await self.inner.call(call)
        finally:
            places.leave()
