"""Real collaborators for executor tests: an index, a doc store and a runner over local functions."""

from __future__ import annotations

from typing import Any

import anyio

from toolcode import Executor, Services, Settings
from tooldocs import InMemoryStore
from toolindex import InMemoryIndex
from toolrun import DefaultRunner, LocalBackend

MEET_WAIT_S = 30.0
"""How long ``t:meet`` waits for the others: a bound for calls that never overlap, not a speed."""


async def make_runner() -> tuple[InMemoryIndex, InMemoryStore, DefaultRunner]:
    index = InMemoryIndex()
    local = LocalBackend()

    @local.tool(namespace="t")
    async def nap(seconds: float) -> float:
        """Sleep, then return the number of seconds slept."""
        await anyio.sleep(seconds)
        return seconds

    in_flight = 0
    met = anyio.Event()

    @local.tool(namespace="t")
    async def meet(n: int) -> int:
        """Return n once n calls to meet are in flight at the same time; fail if they never are."""
        nonlocal in_flight, met
        in_flight += 1
        try:
            if in_flight >= n:
                met.set()
            with anyio.move_on_after(MEET_WAIT_S):
                await met.wait()
            if not met.is_set():
                raise RuntimeError(f"only {in_flight} of {n} calls were in flight at once")
        finally:
            in_flight -= 1
            if not in_flight:
                met = anyio.Event()
        return n

    @local.tool(namespace="t")
    async def add(a: int, b: int = 1) -> int:
        """Add two integers."""
        return a + b

    @local.tool(namespace="t")
    async def echo(value: Any) -> Any:
        """Return the value."""
        return value

    await local.attach(index)
    return index, InMemoryStore(index, autosave=False), DefaultRunner(index, [local])


def executor_of(*, index: Any, store: Any, runner: Any, engine: Any = None, defaults: Any = None) -> Executor:
    """An executor over these parts (the engine made from a name is closed with the executor)."""
    settings = Settings(limits=defaults) if defaults is not None else None
    return Executor(Services.of(index, runner, docs=store, engine=engine, settings=settings))
