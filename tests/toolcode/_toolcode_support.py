"""Real collaborators for executor tests: an index, a doc store and a runner over local functions."""

from __future__ import annotations

from typing import Any

from toolcode import Executor, Services, Settings
from toolcode.testing._harness import Meeting, add, echo, nap
from tooldocs import InMemoryStore
from toolindex import InMemoryIndex
from toolrun import DefaultRunner, LocalBackend


async def make_runner() -> tuple[InMemoryIndex, InMemoryStore, DefaultRunner]:
    """The conformance harness's ``nap``, ``meet``, ``add`` and ``echo`` tools, in the namespace ``t``."""
    index = InMemoryIndex()
    local = LocalBackend()
    for tool in (nap, Meeting().meet, add, echo):
        local.add(tool, namespace="t")
    await local.attach(index)
    return index, InMemoryStore(index, autosave=False), DefaultRunner(index, [local])


def executor_of(*, index: Any, store: Any, runner: Any, engine: Any = None, defaults: Any = None) -> Executor:
    """An executor over these parts (the engine made from a name is closed with the executor)."""
    settings = Settings(limits=defaults) if defaults is not None else None
    return Executor(Services.of(index, runner, docs=store, engine=engine, settings=settings))
