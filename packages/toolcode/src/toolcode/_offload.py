"""Where work on a snippet that takes the host's CPU (parsing it, walking it) runs: in place, or in a worker thread.

A short snippet's parse takes well under a millisecond and runs in place; a long one's runs in a
worker thread, so the event loop goes on serving other callers meanwhile.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar, TypeVarTuple

import anyio.to_thread

__all__ = ["LARGE_CHARS", "Runs", "run_here", "runs_for"]

LARGE_CHARS = 4_000
"""Snippets longer than this (about a hundred lines) are worked on apart: checking one can take
seconds, and a caller sending them must not hold up everyone else."""

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")


class Runs(Protocol):
    """Runs a function that takes the host's CPU: in place, or in a worker thread."""

    def __call__(self, func: Callable[[*_Ts], _T], /, *args: *_Ts) -> Awaitable[_T]: ...


async def run_here(func: Callable[[*_Ts], _T], /, *args: *_Ts) -> _T:
    """Run ``func`` in place (a short snippet's check takes about a millisecond)."""
    return func(*args)


def runs_for(code: str) -> Runs:
    """Where work on ``code`` that takes the host's CPU runs: in place for a short snippet, in a worker thread else."""
    return run_here if len(code) <= LARGE_CHARS else anyio.to_thread.run_sync
