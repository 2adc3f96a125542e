"""``MontyEngine``: snippets run in pydantic-monty's sandbox, in a pool of worker processes.

Made of the pool (:mod:`._monty_pool`), the drive that answers a run's suspensions
(:mod:`._monty_drive`) and a session's state (:mod:`._monty_session`); this module runs a snippet
with them and maps Monty's errors to toolcode's.
"""

from __future__ import annotations

import ast
import functools
import math
import os
import re
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from typing import Any, Final, cast

import anyio
import pydantic_monty as pm
from pydantic_monty.class_instance import ClassInstance

from toolcode._data import json_data_needed
from toolcode._globals import TOOL_ERROR_INFO_SOURCE
from toolcode._modules import PACKAGE
from toolcode._offload import runs_for
from toolcode._types import EngineInfo, ExecuteParams, ExecuteResult, PauseState, RunPaused, Tools
from toolcode.engines import _monty_state as _state
from toolcode.engines._leaving import cut_path
from toolcode.engines._monty_drive import Drive, ModuleMap, Paused
from toolcode.engines._monty_errors import Failed, Failure, MontyErrors
from toolcode.engines._monty_imports import importable
from toolcode.engines._monty_pool import CALLER, WorkerPool, sandbox_module, start_pool
from toolcode.engines._monty_session import SessionTurn
from toolcode.exceptions import CodeExecutionError, EngineError

__all__ = ["DEFAULT_MAX_MEMORY", "MontyEngine", "default_max_processes"]

# Defined inside the sandbox before each snippet: no host round trip for println, and a
# ToolError name to catch (host exception classes cannot cross; a ToolError arrives as RuntimeError).
_PRELUDE = "ToolError = RuntimeError\ndef println(*args):\n    print(*args)\n" + TOOL_ERROR_INFO_SOURCE
_FETCH_OUT = (
    "try:\n    __toolcode_out = (True, __out)\nexcept NameError:\n    __toolcode_out = (False, None)\n"
    + _state.suspect("__toolcode_out[1]")
    + "(*__toolcode_out, __toolcode_suspect is not None)\n"
)
_PRELUDE_NAMES = re.compile("ToolError|println|tool_error_info")
"""A snippet that spells none of these names cannot reach them (no ``globals()``, no ``eval``): no prelude fed."""
_FETCH_IN_FEED_CHARS = 4_000
"""Snippets up to this long that set ``__out`` and end in a statement fetch it in the same feed (parsed to know)."""
_MODULE_CACHE = 16
_LIMITS_CACHE = 16
_UNCOUNTED: Final = 2**62
"""``max_suspensions``, which pydantic-monty does not let be switched off: never reached by a run."""

DEFAULT_MAX_MEMORY = 128 * 1024 * 1024
"""Heap limit per run. Monty refuses an operation whose estimated result does not fit before computing
it: ``10**10**8`` (estimated 191 MiB) fails at once, where a limit above its estimate lets it compute
until the run's timeout. Tool results cost 8 to 13 times their JSON size in the heap: a 4 MiB one
needs about 50 MiB (``bench/memory_limit.py``)."""


def default_max_processes() -> int:
    """The default pool size: twice the CPU count, at least 8 and at most 32.

    More workers than cores on purpose: a CPU-bound snippet holds its worker until its timeout, and
    the system time-slices busy workers, so a short run still answers in milliseconds (docs/engines.md
    has the measurements). The cap bounds memory: each worker may use up to ``max_memory``.
    """
    return min(32, max(8, 2 * (os.cpu_count() or 1)))


class MontyEngine:
    """The default engine: a real sandbox (pydantic-monty) with host-enforced limits.

    Each run checks a worker out of a shared pool (started on first use, through toolrun's
    watchdog launcher so that workers die with this process, ``SIGKILL`` included), feeds it the
    snippet and answers every tool call from the host; awaitable calls overlap. The sandbox has no
    file system, network, environment or host objects; memory, recursion depth and time are
    limited in the worker, which the pool kills when it overruns. Monty has no class inheritance
    and no ``yield``; the engine needs asyncio. docs/engines.md tells the whole story.

    Args:
        min_processes: Workers kept warm.
        max_processes: Cap on concurrent runs and workers (default: :func:`default_max_processes`).
        max_memory: Heap limit per run, in bytes (default :data:`DEFAULT_MAX_MEMORY`): an operation
            whose result would not fit fails at once (``LimitExceededError``, ``max_memory``).
        max_recursion_depth: Call-stack depth limit.
        kill_grace: Seconds the pool waits past the time limit before killing a worker.
        max_runs_per_caller: Cap on one caller's concurrent runs under :meth:`caller` (default:
            half of ``max_processes``, at least 1).
        queue_timeout: Seconds a run waits for a slot under either cap before failing with
            ``EngineBusyError`` (naming the cap).
        worker_nice: How much lower the workers' scheduling priority is (0 to 19, Linux): under CPU
            contention the host's event loop, and with it every other caller, goes first.
        binary_path: The ``monty`` worker binary (default: pydantic-monty's own resolution).
        max_hot_sessions: Sessions whose worker stays checked out between runs, so that the next
            run skips restoring the state (default: a quarter of ``max_processes``; idle ones are
            released after a minute).

    Raises:
        ValueError: A count below 1, a negative ``queue_timeout``, or ``worker_nice`` not from 0 to 19.
    """

    def __init__(
        self,
        *,
        min_processes: int = 1,
        max_processes: int | None = None,
        max_memory: int = DEFAULT_MAX_MEMORY,
        max_recursion_depth: int = 200,
        kill_grace: float = 0.5,
        max_runs_per_caller: int | None = None,
        queue_timeout: float = 10.0,
        worker_nice: int = 10,
        binary_path: str | None = None,
        max_hot_sessions: int | None = None,
    ) -> None:
        total = max_processes if max_processes is not None else default_max_processes()
        per_caller = max_runs_per_caller if max_runs_per_caller is not None else max(1, total // 2)
        if min(min_processes, total, per_caller) < 1 or min_processes > total:
            raise ValueError("min_processes, max_processes and max_runs_per_caller must be >= 1, min <= max")
        if not queue_timeout >= 0:
            raise ValueError(f"queue_timeout must be >= 0, got {queue_timeout!r}")
        if isinstance(worker_nice, bool) or not 0 <= worker_nice <= 19:
            raise ValueError(f"worker_nice must be an integer from 0 to 19, got {worker_nice!r}")
        start = functools.partial(
            start_pool,
            binary_path,
            min_processes=min_processes,
            max_processes=total,
            nice=worker_nice,
            grace=kill_grace,
        )
        max_hot = max_hot_sessions if max_hot_sessions is not None else max(1, total // 4)
        self._pool = WorkerPool(start, total, per_caller, queue_timeout, max_hot)
        self._max_memory = max_memory
        self._max_depth = max_recursion_depth
        self._errors = MontyErrors(max_recursion_depth, max_memory)
        self._packages: dict[int, tuple[ModuleMap, dict[str, pm.ExternalModule]]] = {}
        self._limits: dict[float, tuple[pm.ResourceLimits, tuple[Any, ...]]] = {}
        """The sandbox limits of a run, and what a worker checked out with them is compared by, per timeout."""
        limits = {"max_memory": max_memory, "max_recursion_depth": max_recursion_depth}
        self._info = EngineInfo(name="monty", sandboxed=True, limits=limits, sessions=True, pauses=True)

    @property
    def info(self) -> EngineInfo:
        """Name (``monty``), sandboxed, and the memory and recursion limits."""
        return self._info

    @staticmethod
    @contextmanager
    def caller(caller_id: str) -> Generator[None]:
        """Count the runs started in this block (and its tasks) against ``caller_id``'s ``max_runs_per_caller``.

        A door that serves several clients wraps each client's runs in it, so that one client's
        CPU-bound runs cannot take every worker.

        Args:
            caller_id: Who the runs are for (an MCP session id, a user name).

        Yields:
            Nothing.
        """
        token = CALLER.set(caller_id)
        try:
            yield
        finally:
            CALLER.reset(token)

    async def execute(self, params: ExecuteParams, tools: Tools) -> ExecuteResult:
        """Run the snippet in a sandbox worker.

        Raises:
            CodeExecutionError: A syntax error or an uncaught exception in the snippet.
            LimitExceededError: The time, memory or recursion limit stopped it.
            EngineError: The worker crashed, the pool cannot start, or no worker became free
                within ``queue_timeout`` (the message names the cap that was full).
        """
        return await self._run(params, tools, None)

    async def resume(self, params: ExecuteParams, tools: Tools, state: PauseState) -> ExecuteResult:
        """Continue a paused run in a fresh worker: its snapshot is restored and driven on.

        The call it waited at is made again through ``tools`` (now decided). A paused run held
        no worker; this one takes a slot like any run.

        Raises:
            RunPaused: If it reaches another call that needs a decision.
            EngineError: If the snapshot cannot be restored (another engine version wrote it).
        """
        return await self._run(params, tools, state)

    def _limits_for(self, timeout: float) -> tuple[pm.ResourceLimits, tuple[Any, ...]]:
        """The sandbox limits of a run with ``timeout``, and their sorted items (built once per timeout).

        The dict is shared by the runs of that timeout: pydantic-monty only reads it.
        """
        hit = self._limits.get(timeout)
        if hit is not None:
            return hit
        bounded = math.isfinite(timeout)  # a switched-off timeout leaves the sandbox unbounded in time too
        limits: pm.ResourceLimits = {
            "max_feed_duration_secs": timeout if bounded else None,
            "max_memory": self._max_memory,
            "max_recursion_depth": self._max_depth,
            # pydantic-monty counts suspensions and sleeps per checkout, and a session's runs share
            # one while it stays hot: per run, these would add its runs up. A run's host round trips
            # and sleeps are bounded by its timeout (and its calls by max_tool_calls) on the host.
            "max_suspensions": _UNCOUNTED,
            "max_total_sleep_secs": None,
        }
        if len(self._limits) >= _LIMITS_CACHE:
            self._limits.clear()
        built = self._limits[timeout] = (limits, tuple(sorted(limits.items())))
        return built

    async def _run(self, params: ExecuteParams, tools: Tools, paused: PauseState | None) -> ExecuteResult:
        code, timeout = params.code, float(params.timeout) if params.timeout is not None else 30.0
        limits, limit_items = self._limits_for(timeout)
        # A session may use modules its earlier runs imported: it always gets the package.
        modules = tools.modules() if PACKAGE in code or params.session is not None else None
        package = self._package(modules) if modules else None
        if modules and PACKAGE + "." in code:
            # A long snippet's parse takes a while: off the event loop, which serves other callers.
            code = await runs_for(code)(importable, code, [name for name in modules if sandbox_module(name)])
        shape = ((limit_items, timeout, id(package)), package)
        drive = Drive(tools, timeout, self._max_depth, modules)
        session = SessionTurn(params.session, paused, self._max_depth) if params.session is not None else None

        def on_print(stream: str, text: str) -> None:
            tools.write("stderr" if stream == "stderr" else "stdout", text)

        try:
            async with self._pool.slot(params.caller) as pool:

                def checkout() -> pm.AsyncMontySession:
                    policy: pm.OSPolicy = {"sleep": "system", "sleep_system_max": timeout}
                    return pool.checkout(
                        script_name="snippet.py", limits=limits, os_policy=policy, external_modules=package
                    )

                async with self._pool.worker(checkout, params.session, shape, hot=paused is None) as worker:
                    sandbox, restored = worker.session, None
                    assert sandbox is not None
                    if paused is not None:
                        try:
                            restored = await sandbox.load_snapshot(paused.snapshot, print_callback=on_print)
                        except pm.MontyError as e:
                            raise EngineError("monty", f"the paused run cannot be restored: {e}") from None
                    elif session is None:
                        if _PRELUDE_NAMES.search(code):  # a feed less for the others
                            await sandbox.feed_run(_PRELUDE)
                    else:
                        await session.restore(worker, code)
                    if params.session is not None:
                        params.session.ran = True
                    try:
                        fetch = _state.FETCH_OUT if session else _FETCH_OUT
                        fetched = _fetches_out(code)
                        if restored is None:
                            restored = await sandbox.feed_start(
                                code + "\n" + fetch if fetched else code,
                                inputs={"input": params.input},
                                print_callback=on_print,
                            )
                        value: Any = await drive.run(restored, paused.drive if paused is not None else None)
                        rest: list[Any] = []
                        # (set, __out, suspect): a paused run written by an earlier version gives None here.
                        if fetched and isinstance(value, tuple):
                            has_out, out, *rest = cast("tuple[Any, ...]", value)
                            value = out if has_out else None
                        # Only a snippet that names __out can have set it (no exec, no globals()).
                        elif "__out" in code:
                            has_out, out, *rest = await sandbox.feed_run(fetch)
                            value = out if has_out else value
                        # True only: a session's fetch written by an earlier version has the reset marker there.
                        suspect = rest[:1] == [True]
                        not_data = await sandbox.feed_run(_state.NOT_DATA_OF_SUSPECT) if suspect else None
                    except Paused as p:
                        drive_state = session.paused(p.drive) if session else p.drive
                        raise RunPaused(PauseState(p.snap.dump(), drive_state, p.pending, p.line(code))) from None
                    except (pm.MontySyntaxError, pm.MontyRuntimeError) as e:
                        # The snippet's own error: a session keeps what it did up to there (a REPL
                        # does the same); a limit (time, memory, depth) resets it.
                        if session is None:
                            raise
                        failure = await anyio.to_thread.run_sync(Failure.of, e)
                        if failure.limit is None:
                            await session.keep(worker, code, checkout, completed=False)
                        raise Failed(failure) from None
                    if session is not None:
                        await session.keep(worker, code, checkout, completed=True)
                    if isinstance(not_data, str):
                        raise CodeExecutionError("TypeError", json_data_needed(not_data))
                    cut = cut_path(value, self._max_depth)
                    if cut is not None:
                        raise CodeExecutionError(
                            "ValueError",
                            f"the result is nested deeper than the sandbox's {self._max_depth} levels at {cut}; "
                            "return flatter data",
                        )
        except Failed as f:
            raise self._errors.mapped(f.failure, timeout, drive.raised, code) from None
        except pm.MontyError as e:
            # Reading a snippet's error copies its message (as long as the sandbox's memory allows)
            # while holding the interpreter lock: once, and off the event loop every caller shares.
            failure = await anyio.to_thread.run_sync(Failure.of, e)
            raise self._errors.mapped(failure, timeout, drive.raised, code) from None
        return ExecuteResult(value=value)

    def _package(self, modules: ModuleMap) -> dict[str, pm.ExternalModule]:
        """The sandbox's ``tools`` package for a module map (built once per map: maps are reused)."""
        hit = self._packages.get(id(modules))
        if hit is not None and hit[0] is modules:
            return hit[1]
        package = {name: _module(name, functions) for name, functions in modules.items()}
        built = {PACKAGE: pm.ExternalModule(package, stubs=None)}
        if len(self._packages) >= _MODULE_CACHE:
            self._packages.clear()
        self._packages[id(modules)] = (modules, built)
        return built

    async def aclose(self) -> None:
        """Shut the worker pool down; idempotent (a later run starts a new pool)."""
        await self._pool.aclose()


def _module(name: str, functions: Mapping[str, object]) -> pm.ExternalModule | ClassInstance:
    """``tools.<name>``: a module, or where the sandbox keeps the name (``time``), an object with its functions.

    Either way its functions reach the drive as ``tools.<name>.<function>``; the object form serves
    ``from tools import time`` and ``tools.time.f()`` (the sandbox refuses ``import tools.time``).
    """
    if not sandbox_module(name):
        return pm.ExternalModule(dict.fromkeys(functions, _never_called), stubs=None)
    namespace = _Namespace()
    for function in functions:
        setattr(namespace, function, _named(f"{PACKAGE}.{name}.{function}"))
    return ClassInstance(namespace, eager_attrs="all")


class _Namespace:
    """The object form of a module (its class name is what ``type()`` shows in the sandbox)."""


_Namespace.__name__ = _Namespace.__qualname__ = "module"


def _fetches_out(code: str) -> bool:
    """Whether ``code`` names ``__out`` and ends in a statement: ``_FETCH_OUT`` may follow it in the same feed.

    Its value is then ``__out`` or nothing (a trailing expression's value would be lost by the feed).
    """
    return "__out" in code and len(code) <= _FETCH_IN_FEED_CHARS and _ends_in_statement(code)


@functools.lru_cache(maxsize=256)  # a snippet run again is not parsed again
def _ends_in_statement(code: str) -> bool:
    try:
        body = ast.parse(code).body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return bool(body) and not isinstance(body[-1], ast.Expr)


def _named(name: str) -> Any:
    def called(*args: Any, **kwargs: Any) -> None:
        _never_called(*args, **kwargs)

    called.__name__ = name
    return called


def _never_called(*_args: Any, **_kwargs: Any) -> None:
    """Stands for a module function in the sandbox: every call reaches the host as a snapshot instead."""
    raise AssertionError("module functions are answered by the drive")
