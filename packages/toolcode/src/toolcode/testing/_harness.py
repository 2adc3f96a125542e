"""The harness a conformance check runs against, and the check: an async function of a harness."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from toolcode._executor import Executor
from toolcode._options import ExecuteOptions, parse_options
from toolcode._services import Services
from toolcode._settings import PolicySettings, Settings
from toolcode._types import Engine, ExecuteParams, ExecuteResult
from toolcode.exceptions import ToolCodeError
from toolcode.testing._probes import ProbeRun
from tooldocs import InMemoryStore
from toolindex import InMemoryIndex
from toolrun import DefaultRunner, LocalBackend

__all__ = ["HANG_S", "CheckFn", "ConformanceCheck", "Harness", "Meeting", "collect", "value_check"]

HANG_S = 30.0
"""Seconds past a limit, or past a cancellation, after which a run counts as never stopped.

Far above what stopping takes on a busy machine, far below the runs these checks start (a minute):
a check fails only when the engine did not stop a run, never because the machine was slow.
"""


async def add(a: int, b: int = 1) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


async def echo(value: Any) -> Any:
    """Return the value unchanged."""
    return value


async def fail(message: str) -> str:
    """Always fail with the given message."""
    raise ValueError(message)


async def nap(seconds: float) -> float:
    """Sleep for a number of seconds and return it."""
    await anyio.sleep(seconds)
    return seconds


async def inc(previous: int = 0, by: int = 1) -> int:
    """Increment the previous chain result."""
    return previous + by


async def blob(n: int) -> str:
    """Return a string of n characters."""
    return "x" * n


async def ping() -> str:
    """Answer pong."""
    return "pong"


class Meeting:
    """The tool ``meet(n)``: returns once ``n`` calls are in flight at once; fails after ``wait_s`` (or HANG_S)."""

    def __init__(self, wait_s: float | None = None) -> None:
        self.wait_s = wait_s
        self._in_flight = 0
        self._met = anyio.Event()

    async def meet(self, n: int) -> int:
        """Wait until n calls to meet are in flight at once, then return n."""
        self._in_flight += 1
        try:
            if self._in_flight >= n:
                self._met.set()
            with anyio.move_on_after(HANG_S if self.wait_s is None else self.wait_s):
                await self._met.wait()
            if not self._met.is_set():
                raise RuntimeError(f"only {self._in_flight} of {n} calls were in flight at once")
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._met = anyio.Event()
        return n


class Harness:
    """A real executor, index, doc store and runner around the engine under test, as an async context manager.

    Tools: ``conf:add(a, b=1)``, ``conf:echo(value)``, ``conf:fail(message)`` (raises),
    ``conf:nap(seconds)``, ``conf:inc(previous=0, by=1)``, ``conf:blob(n)`` (``n`` characters),
    ``conf:meet(n)`` (returns once ``n`` calls to it are in flight at once; fails after :data:`HANG_S`)
    and ``other:ping()``, all classed ``read`` (none has a side effect). Runs have ``type_check="off"``
    unless a check asks for it: that check is the executor's, the same for every engine.

    Args:
        engine: The engine under test (not closed by the harness).
        timeout: Default timeout of each run.
        speculate: Whether reads whose arguments are known start before the code reaches them
            (default off: the checks then see the engine's own overlap; on, every check must give the
            same results).
    """

    def __init__(self, engine: Engine, *, timeout: float = 10.0, speculate: bool = False) -> None:
        self.engine = engine
        self.index = InMemoryIndex()
        self.local = LocalBackend()
        for tool in (add, echo, fail, nap, inc, blob):
            self.local.add(tool, namespace="conf")
        self.local.add(Meeting().meet, namespace="conf")
        self.local.add(ping, namespace="other")
        self.runner = DefaultRunner(self.index, [self.local])
        self.store = InMemoryStore(self.index, autosave=False)
        settings = Settings(
            limits=ExecuteOptions(timeout=timeout, type_check="off", speculate=speculate),
            policy=PolicySettings(tiers={"conf:*": "read", "other:*": "read"}),
        )
        self.executor = Executor(
            Services.of(self.index, self.runner, docs=self.store, engine=engine, settings=settings)
        )

    async def __aenter__(self) -> Harness:
        await self.local.attach(self.index)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.runner.aclose()

    async def run(self, code: str, **params: Any) -> ExecuteResult:
        """Execute a snippet; raises what the executor raises.

        ``params`` are :class:`~toolcode.ExecuteParams` fields (``input``, ``language``) and
        :class:`~toolcode.ExecuteOptions` fields (``timeout``, ``max_tool_calls``, ...).
        """
        fields = {k: params.pop(k) for k in ("input", "language") if k in params}
        return await self.executor.execute(ExecuteParams(code=code, options=parse_options(params), **fields))

    async def fail(self, code: str, expected: type[ToolCodeError] = ToolCodeError, **params: Any) -> Any:
        """Execute a snippet that must fail with ``expected``; return the error."""
        try:
            result = await self.run(code, **params)
        except expected as e:
            return e
        raise AssertionError(f"expected {expected.__name__}, the run succeeded with value {result.value!r}")

    async def probe_run(self, code: str) -> ProbeRun:
        """Run a probe snippet: ``(value, stdout, error text)``, never raising for a snippet failure."""
        try:
            r = await self.run(code, timeout=5.0)
        except ToolCodeError as e:
            return ProbeRun(None, e.stdout, f"{type(e).__name__}: {e}")
        return ProbeRun(r.value, r.stdout, None)


CheckFn = Callable[[Harness], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ConformanceCheck:
    """One conformance check."""

    id: str
    """Stable id, ``category.name``."""
    category: str
    description: str
    fn: CheckFn = field(repr=False)


def collect(checks: list[ConformanceCheck], category: str, description: str) -> Callable[[CheckFn], CheckFn]:
    """A decorator adding its function to ``checks`` as the check ``category.name`` (name without its ``_``)."""

    def register(fn: CheckFn) -> CheckFn:
        checks.append(ConformanceCheck(f"{category}.{fn.__name__.removeprefix('_')}", category, description, fn))
        return fn

    return register


def value_check(checks: list[ConformanceCheck], check_id: str, description: str) -> Callable[..., None]:
    """Like :func:`collect`, for a check that a snippet's value is the expected one.

    ``value_check(checks, "result.x", "...")(code, expected, **params)`` adds the check ``result.x``:
    ``code`` run with ``params`` (:meth:`Harness.run`'s) gives ``expected``; ``calls=n`` in ``params``
    also asks for exactly ``n`` tool calls in the trace.
    """

    def add(code: str, expected: object, *, calls: int | None = None, **params: Any) -> None:
        async def check(h: Harness) -> None:
            r = await h.run(code, **params)
            assert r.value == expected and (calls is None or len(r.tool_calls) == calls), r.value

        checks.append(ConformanceCheck(check_id, check_id.split(".", 1)[0], description, check))

    return add
