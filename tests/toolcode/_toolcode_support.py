"""Real collaborators for executor tests: an index, a doc store and a runner over local functions."""

from __future__ import annotations

from typing import Any

import anyio

from tooldocs import InMemoryStore
from toolindex import InMemoryIndex
from toolrun import DefaultRunner, LocalBackend


async def make_runner() -> tuple[InMemoryIndex, InMemoryStore, DefaultRunner]:
    index = InMemoryIndex()
    local = LocalBackend()

    @local.tool(namespace="t")
    async def nap(seconds: float) -> float:
        """Sleep, then return the number of seconds slept."""
        await anyio.sleep(seconds)
        return seconds

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
