"""``MontyEngine``: snippets run in pydantic-monty's sandboxed interpreter, in a pool of worker processes."""

from __future__ import annotations

import atexit
import math
import os
import re
import sys
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

import anyio
import anyio.abc
import anyio.lowlevel
import pydantic_monty as pm

from toolcode._compat_monty import find_monty_binary
from toolcode._globals import TOOL_ERROR_INFO_SOURCE, async_names, call_names
from toolcode._modules import PACKAGE, ModuleFunction
from toolcode._types import (
    CallPaused,
    EngineInfo,
    ExecuteParams,
    ExecuteResult,
    PauseState,
    RunPaused,
    SessionState,
    Tools,
)
from toolcode.engines import _monty_state as _state
from toolcode.exceptions import (
    CodeExecutionError,
    EngineBusyError,
    EngineError,
    ErrorCode,
    LimitExceededError,
    ToolCodeError,
    ToolError,
)
from toolindex.log import get_logger
from toolrun import watchdog_executable

__all__ = ["DEFAULT_MAX_MEMORY", "MontyEngine", "default_max_processes"]

_log = get_logger("toolcode.engines.monty")

# Defined inside the sandbox before each snippet: no host round trip for println, and a
# ToolError name to catch (host exception classes cannot cross; a ToolError arrives as RuntimeError).
_PRELUDE = (
    """\
ToolError = RuntimeError
def println(*args):
    print(*args)
"""
    + TOOL_ERROR_INFO_SOURCE
)
_FETCH_OUT = """\
try:
    __toolcode_out = (True, __out)
except NameError:
    __toolcode_out = (False, None)
__toolcode_out
"""
_SLEEPS = frozenset({"time.sleep", "system.sleep"})
_ASYNC_SLEEPS = frozenset({"asyncio.sleep", "system.async_sleep"})
_MEMORY_RE = re.compile(r"memory limit exceeded: (\d+) bytes > (\d+) bytes")
_SYNC_NAMES = call_names()
_ASYNC_NAMES = async_names()

Handler = Callable[..., Awaitable[Any]]
ModuleMap = Mapping[str, Mapping[str, ModuleFunction]]
_MODULE_PREFIX = PACKAGE + "."
_IMPORT = "import"
_MODULE_CACHE = 16

DEFAULT_MAX_MEMORY = 128 * 1024 * 1024
"""Heap limit per run. Monty refuses an operation whose estimated result does not fit before computing
it: ``10**10**8`` (estimated 191 MiB) fails at once, where a limit above its estimate lets it compute
until the run's timeout. Tool results cost 8 to 13 times their JSON size in the heap: a 4 MiB one
needs about 50 MiB (``bench/memory_limit.py``)."""

_caller: ContextVar[str | None] = ContextVar("toolcode_monty_caller", default=None)
_SETTLE_S = 1.0
"""Longest wait, after the pool has closed, for its native threads to leave the interpreter."""


def default_max_processes() -> int:
    """The default pool size: twice the CPU count, at least 8 and at most 32.

    More workers than cores on purpose: a CPU-bound snippet holds its worker until its timeout,
    and the operating system time-slices busy workers, so a short run still answers in
    milliseconds while long ones compute (see docs/engines.md for the measurements). The cap
    bounds memory: each worker may use up to ``max_memory``.
    """
    return min(32, max(8, 2 * (os.cpu_count() or 1)))


class MontyEngine:
    """The default engine: a real sandbox (pydantic-monty) with host-enforced limits.

    Each run checks one worker out of a shared pool (created on first use), feeds it the
    snippet, and answers every tool call from the host. The sandbox has no file system,
    network, environment or host objects; memory, recursion depth and CPU time are limited
    inside the worker, and a worker that overruns (a huge integer computation cannot be
    interrupted from inside) is killed by the pool. A session that timed out or ran out of
    memory is discarded, never reused.

    Snippet API: the tool functions are plain synchronous calls (``run_tool(...)`` returns
    the result). For fan-out, use ``run_tools([...])``, or the awaitable variants
    ``run_tool_async`` / ``run_chain_async`` / ``describe_tool_async`` with
    ``await asyncio.gather(...)``; either way the calls overlap on the host.

    Limits: Monty has no class inheritance and no ``yield``; sleeps are capped at the run's
    timeout. Requires the asyncio event loop (pydantic-monty's async pool is asyncio-based).

    Process lifetime: on Linux every worker is started through toolrun's watchdog launcher
    (:func:`toolrun.watchdog_executable`), so workers die with this process however it ends,
    ``SIGKILL`` included, within about a second.

    Admission: at most ``max_processes`` runs hold a worker at once, and at most
    ``max_runs_per_caller`` of them for one caller (see :meth:`caller`). A run beyond either cap
    waits up to ``queue_timeout`` seconds for a slot (its own timeout still applies), then fails
    with :class:`~toolcode.exceptions.EngineError` saying which cap was full.

    Args:
        min_processes: Workers kept warm.
        max_processes: Cap on concurrent runs and workers (default: :func:`default_max_processes`).
        max_memory: Heap limit per run, in bytes (default :data:`DEFAULT_MAX_MEMORY`, 128 MiB). An
            operation whose result Monty estimates would not fit (``10**10**8``, ``'x' * 10**10``)
            fails at once with :class:`~toolcode.exceptions.LimitExceededError` (``max_memory``).
        max_recursion_depth: Call-stack depth limit.
        kill_grace: Seconds the pool waits past the time limit before killing a worker.
        max_runs_per_caller: Cap on one caller's concurrent runs (default: half of
            ``max_processes``, at least 1); applies to runs started under :meth:`caller`.
        queue_timeout: Seconds a run waits for a free slot before failing.
        worker_nice: How much lower the workers' scheduling priority is than the host's (0 to
            19, Linux): under CPU contention the host's event loop, and with it every other
            caller, goes first.
        binary_path: The ``monty`` worker binary (default: pydantic-monty's own resolution,
            ``MONTY_BIN`` or the environment's scripts directory).
        max_hot_sessions: Sessions whose worker stays checked out between runs (default: a
            quarter of ``max_processes``): the next run of such a session skips restoring its
            state. Idle ones are released after a minute; the stored state stays the truth.

    Raises:
        ValueError: If a count is below 1, ``queue_timeout`` is negative or ``worker_nice`` is
            not from 0 to 19.
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
        self._min = min_processes
        self._max = max_processes if max_processes is not None else default_max_processes()
        self._per_caller = max_runs_per_caller if max_runs_per_caller is not None else max(1, self._max // 2)
        if min(self._min, self._max, self._per_caller) < 1 or self._min > self._max:
            raise ValueError("min_processes, max_processes and max_runs_per_caller must be >= 1, min <= max")
        if not queue_timeout >= 0:
            raise ValueError(f"queue_timeout must be >= 0, got {queue_timeout!r}")
        if isinstance(worker_nice, bool) or not 0 <= worker_nice <= 19:
            raise ValueError(f"worker_nice must be an integer from 0 to 19, got {worker_nice!r}")
        self._queue_timeout = queue_timeout
        self._binary = binary_path
        self._nice = worker_nice
        self._admission: _Admission | None = None
        self._max_memory = max_memory
        self._max_depth = max_recursion_depth
        self._grace = kill_grace
        self._pool: pm.AsyncMonty | None = None
        self._pool_token: object = None
        self._lock = anyio.Lock()
        self._packages: dict[int, tuple[ModuleMap, dict[str, pm.ExternalModule]]] = {}
        self._hot: OrderedDict[str, _Hot] = OrderedDict()
        self._closing: list[_Hot] = []
        self._max_hot = max_hot_sessions if max_hot_sessions is not None else max(1, self._max // 4)
        self._info = EngineInfo(
            name="monty",
            sandboxed=True,
            limits={"max_memory": max_memory, "max_recursion_depth": max_recursion_depth},
            sessions=True,
            pauses=True,
        )

    @property
    def info(self) -> EngineInfo:
        """Name (``monty``), sandboxed, and the memory and recursion limits."""
        return self._info

    @staticmethod
    @contextmanager
    def caller(caller_id: str) -> Generator[None]:
        """Count the runs started inside this block against ``caller_id``'s share of the pool.

        A door that serves several clients wraps each client's runs in it, so that one client's
        CPU-bound runs cannot take every worker (``max_runs_per_caller``)::

            with MontyEngine.caller(session_id):
                await executor.execute(params)

        Args:
            caller_id: Who the runs are for (an MCP session id, a user name).

        Yields:
            Nothing; the id applies to runs started in the block (and in tasks it starts).
        """
        token = _caller.set(caller_id)
        try:
            yield
        finally:
            _caller.reset(token)

    async def _get_pool(self) -> pm.AsyncMonty:
        token = anyio.lowlevel.current_token()
        pool = self._pool
        if pool is not None and self._pool_token == token:
            return pool
        async with self._lock:
            if self._pool is not None and self._pool_token != token:
                # The pool's I/O is bound to the loop it was started on; a new loop needs a new pool.
                old, self._pool = self._pool, None
                try:
                    await old.__aexit__(None, None, None)
                except Exception as e:  # the old loop is gone; nothing more can be done for it
                    _log.debug("monty.stale_pool_close_failed", error=repr(e))
            if self._pool is None:
                try:
                    # Through the watchdog launcher: a worker dies with this process, even by SIGKILL.
                    binary = watchdog_executable(find_monty_binary(self._binary), nice=self._nice)
                except (OSError, ValueError) as e:
                    raise EngineError("monty", f"cannot find the worker binary: {e}") from e
                pool = pm.AsyncMonty(
                    binary_path=binary,
                    min_processes=self._min,
                    max_processes=self._max,
                    feed_duration_limit_grace=self._grace,
                    turn_duration_limit_grace=self._grace,
                )
                try:
                    await pool.__aenter__()
                except Exception as e:  # the worker binary is missing or cannot start
                    raise EngineError("monty", f"cannot start the worker pool: {type(e).__name__}: {e}") from e
                self._pool, self._pool_token = pool, token
                # Semaphores belong to the loop they wait on, like the pool.
                self._admission = _Admission(self._max, self._per_caller, self._queue_timeout)
            assert self._pool is not None
            return self._pool

    async def execute(self, params: ExecuteParams, tools: Tools) -> ExecuteResult:
        """Run the snippet in a sandbox worker.

        Raises:
            CodeExecutionError: A syntax error or an uncaught exception in the snippet.
            LimitExceededError: The time, memory or recursion limit stopped it.
            EngineError: The worker crashed, the pool cannot start, or no worker became free
                within ``queue_timeout`` (the message names the cap that was full).
        """
        await self._get_pool()
        assert self._admission is not None
        async with self._admission.slot(params.caller or _caller.get()):
            return await self._run(params, tools)

    async def resume(self, params: ExecuteParams, tools: Tools, state: PauseState) -> ExecuteResult:
        """Continue a paused run in a fresh worker: its snapshot is restored and driven on.

        The call it waited at is made again through ``tools`` (now decided). A paused run held
        no worker; this one takes a slot like any run.

        Raises:
            RunPaused: If it reaches another call that needs a decision.
            EngineError: If the snapshot cannot be restored (another engine version wrote it).
        """
        await self._get_pool()
        assert self._admission is not None
        async with self._admission.slot(params.caller or _caller.get()):
            return await self._run(params, tools, state)

    async def _run(self, params: ExecuteParams, tools: Tools, resume: PauseState | None = None) -> ExecuteResult:
        timeout = float(params.timeout) if params.timeout is not None else 30.0
        pool = await self._get_pool()
        bounded = math.isfinite(timeout)  # a switched-off timeout leaves the sandbox unbounded in time too
        limits: pm.ResourceLimits = {
            "max_feed_duration_secs": timeout if bounded else None,
            "max_memory": self._max_memory,
            "max_recursion_depth": self._max_depth,
            "max_suspensions": 1_000_000,
            "max_total_sleep_secs": timeout if bounded else None,
        }
        keep = params.session
        # A session may use modules its earlier runs imported: it always gets the package.
        modules = tools.modules() if PACKAGE in params.code or keep is not None else None
        drive = _Drive(tools, timeout, self._max_depth, modules)

        def on_print(stream: str, text: str) -> None:
            tools.write("stderr" if stream == "stderr" else "stdout", text)

        package = self._package(modules) if modules else None
        shape = (tuple(sorted(limits.items())), timeout, id(package))

        def open_checkout() -> Any:
            return pool.checkout(
                script_name="snippet.py",
                limits=limits,
                os_policy={"sleep": "system", "sleep_system_max": timeout},
                external_modules=package,
            )

        head, dump = _state.decode(keep.state) if keep is not None else (None, None)
        if head is not None and resume is not None and "session" in resume.drive:
            head = _state.SessionHead.from_json(resume.drive["session"])  # as it was when the run paused
        hot = self._take_hot(keep, shape)
        if hot is not None and resume is not None:
            self._closing.append(hot)  # the paused run's snapshot is the state now
            hot = None
        try:
            if hot is not None:
                worker = _Worker(hot.checkout, hot.session)
            else:
                checkout = open_checkout()
                worker = _Worker(checkout, await checkout.__aenter__())
            session = worker.session
            keep_hot = False
            try:
                restored: pm.AsyncSnapshot | None = None
                if resume is not None:
                    try:
                        restored = await session.load_snapshot(resume.snapshot, print_callback=on_print)
                    except pm.MontyError as e:
                        raise EngineError("monty", f"the paused run cannot be restored: {e}") from None
                elif keep is None:
                    await session.feed_run(_PRELUDE)
                else:
                    assert head is not None
                    if hot is None and dump is not None:
                        try:
                            await session.load_session(dump)
                        except pm.MontyError as e:
                            raise EngineError("monty", f"session {keep.name!r} cannot be restored: {e}") from None
                    # A new session gets its definitions; a helper is defined when first mentioned.
                    prelude = head.prelude(params.code, new=dump is None)
                    if prelude:
                        await session.feed_run(prelude)
                if keep is not None:
                    keep.ran = True
                try:
                    if resume is None:
                        snap = await session.feed_start(
                            params.code, inputs={"input": params.input}, print_callback=on_print
                        )
                        value = await drive.run(snap)
                    else:
                        assert restored is not None
                        value = await drive.resume(restored, resume.drive)
                    # Only a snippet that names __out can have set it (no exec, no globals()).
                    if keep is not None:
                        if "__out" in params.code:
                            has_out, out, _ = await session.feed_run(_state.FETCH_OUT)
                            if has_out:
                                value = out
                    elif "__out" in params.code:
                        has_out, out = await session.feed_run(_FETCH_OUT)
                        if has_out:
                            value = out
                except _Paused as p:
                    drive_state = p.drive
                    if keep is not None and head is not None:
                        keep.paused = True
                        drive_state = {**p.drive, "session": head.to_json()}
                    state = PauseState(p.snap.dump(), drive_state, p.pending, _line_of(params.code, p.snap))
                    raise RunPaused(state) from None
                except (pm.MontySyntaxError, pm.MontyRuntimeError) as e:
                    # The snippet's own error: a session keeps what it did up to there (a REPL
                    # does the same); a limit (time, memory, depth) resets it.
                    if keep is not None and head is not None and not self._is_limit(e):
                        await self._keep(worker, keep, head, params.code, open_checkout, new=dump is None, ok=False)
                    raise
                if keep is not None and head is not None:
                    keep_hot = await self._keep(
                        worker, keep, head, params.code, open_checkout, new=dump is None, ok=True
                    )
                cut = _cut_path(value, self._max_depth)
                if cut is not None:
                    raise CodeExecutionError(
                        "ValueError",
                        f"the result is nested deeper than the sandbox's {self._max_depth} levels at {cut}; "
                        "return flatter data",
                    )
            except BaseException:
                keep_hot = False
                with anyio.CancelScope(shield=True):
                    if worker.checkout is not None:
                        await _exit_quietly(worker.checkout)
                raise
            if keep_hot and keep is not None and worker.checkout is not None:
                await self._put_hot(keep, worker.checkout, worker.session, shape)
            elif worker.checkout is not None:
                await worker.checkout.__aexit__(None, None, None)
        except pm.MontySyntaxError as e:
            raise _code_error(e, "SyntaxError", drive.raised) from None
        except pm.MontyRuntimeError as e:
            raise self._map_runtime(e, timeout, drive.raised) from None
        except pm.MontyCrashedError as e:
            if e.timed_out:
                raise LimitExceededError("timeout", timeout, None, "the sandbox worker was killed") from None
            raise EngineError("monty", f"the sandbox worker died: {e}") from None
        except pm.MontyError as e:
            raise EngineError("monty", f"{type(e).__name__}: {e}") from None
        return ExecuteResult(value=value)

    def _package(self, modules: ModuleMap) -> dict[str, pm.ExternalModule]:
        """The sandbox's ``tools`` package for a module map (built once per map: maps are reused)."""
        hit = self._packages.get(id(modules))
        if hit is not None and hit[0] is modules:
            return hit[1]
        package = {
            name: pm.ExternalModule(dict.fromkeys(functions, _never_called), stubs=None)
            for name, functions in modules.items()
        }
        built = {PACKAGE: pm.ExternalModule(package, stubs=None)}
        if len(self._packages) >= _MODULE_CACHE:
            self._packages.clear()
        self._packages[id(modules)] = (modules, built)
        return built

    # -- hot sessions: a session's worker kept checked out between its runs -------------------

    def _take_hot(self, keep: SessionState | None, shape: tuple[Any, ...]) -> _Hot | None:
        """The worker still holding exactly this session's state (same token, same run settings)."""
        if keep is None or not keep.key:
            return None
        hot = self._hot.pop(keep.key, None)
        if hot is None:
            return None
        if hot.token == keep.token and hot.shape == shape and hot.pool_token == self._pool_token:
            return hot
        self._closing.append(hot)  # another server changed the session, or the settings differ
        return None

    async def _put_hot(
        self, keep: SessionState, checkout: Any, session: pm.AsyncMontySession, shape: tuple[Any, ...]
    ) -> None:
        self._hot[keep.key] = _Hot(checkout, session, keep.token or "", shape, self._pool_token, time.monotonic())
        now = time.monotonic()
        for key in [k for k, h in self._hot.items() if now - h.used > _HOT_IDLE_S]:
            self._closing.append(self._hot.pop(key))
        while len(self._hot) > self._max_hot:
            self._closing.append(self._hot.pop(next(iter(self._hot))))
        await self._close_pending()

    async def _close_pending(self) -> None:
        while self._closing:
            await _exit_quietly(self._closing.pop().checkout)

    @staticmethod
    def _is_limit(e: pm.MontySyntaxError | pm.MontyRuntimeError) -> bool:
        if isinstance(e, pm.MontySyntaxError):
            return False
        inner = e.exception()
        return isinstance(inner, MemoryError | RecursionError) or (
            isinstance(inner, TimeoutError) and "time limit exceeded" in str(inner)
        )

    async def _keep(
        self,
        worker: _Worker,
        keep: SessionState,
        head: _state.SessionHead,
        code: str,
        open_checkout: Callable[[], Any],
        *,
        new: bool,
        ok: bool,
    ) -> bool:
        """Set the state to store after a run (``keep.kept``); rebuild it first when its history outweighs it.

        Returns whether ``worker`` (possibly a new one, after a rebuild) holds exactly that state
        and may stay hot.
        """
        try:
            if not ok:
                await worker.session.feed_run(_state.RESET_OUT)
            head.note_run(code, completed=ok)
            dump = await worker.session.dump()
        except pm.MontyError as e:
            _log.warning("monty.session_dump_failed", session=keep.name, error=repr(e)[:300])
            keep.kept = None
            return False
        exact = True
        if new:
            head.base = len(dump)
        elif head.due(len(dump)):
            rebuilt = await self._rebuild(worker, head, open_checkout)
            if rebuilt is None:
                exact = False  # the worker ran the export, or holds a partial rebuild
            else:
                dump = rebuilt
            head.base = len(dump)  # after a failure: try again once the history has doubled
        keep.kept = _state.encode(head, dump)
        keep.token = uuid.uuid4().hex
        return exact

    async def _rebuild(
        self, worker: _Worker, head: _state.SessionHead, open_checkout: Callable[[], Any]
    ) -> bytes | None:
        """Re-create the session in a fresh worker from its namespace (see ``_monty_state``); its dump, or ``None``.

        ``worker`` ends up holding the fresh worker (or none), whatever happens.
        """
        try:
            data, bad, names = await worker.session.feed_run(_state.EXPORT, inputs=head.export_inputs(self._max_depth))
        except pm.MontyError as e:
            _log.debug("monty.session_export_failed", error=repr(e)[:300])
            return None
        if bad or not _state.plain_data(data) or _cut_path(data, self._max_depth) is not None:
            _log.debug("monty.session_not_rebuilt", names=[str(n)[:40] for n in bad[:10]])
            return None
        old, worker.checkout = worker.checkout, None
        await _exit_quietly(old)
        definitions, replay = head.rebuild_source()
        try:
            checkout = open_checkout()
            worker.session = await checkout.__aenter__()
            worker.checkout = checkout
            await worker.session.feed_run(definitions)
            got = await worker.session.feed_run(replay, inputs=data)
            if {n for n in got if not _state.engine_name(n)} != {n for n in names if not _state.engine_name(n)}:
                return None
            return await worker.session.dump()
        except pm.MontyError as e:
            _log.debug("monty.session_rebuild_failed", error=repr(e)[:300])
            return None

    def _map_runtime(self, e: pm.MontyRuntimeError, timeout: float, raised: dict[str, ToolError]) -> ToolCodeError:
        inner = e.exception()
        msg = str(inner)
        if isinstance(inner, TimeoutError) and "time limit exceeded" in msg:
            return LimitExceededError("timeout", timeout, None, msg)
        if isinstance(inner, MemoryError):
            m = _MEMORY_RE.search(msg)
            if m:
                return LimitExceededError("max_memory", self._max_memory, int(m.group(1)), _what_needed(e))
        if isinstance(inner, RecursionError):
            return LimitExceededError("max_recursion_depth", self._max_depth, None, msg)
        return _code_error(e, type(inner).__name__, raised)

    async def aclose(self) -> None:
        """Shut the worker pool down; idempotent (a later run starts a new pool)."""
        self._closing.extend(self._hot.values())
        self._hot.clear()
        await self._close_pending()
        async with self._lock:
            pool, self._pool = self._pool, None
            if pool is not None:
                await pool.__aexit__(None, None, None)
                await _settle_native_threads()


# pydantic-monty completes each awaited call from one of its Rust threads through
# loop.call_soon_threadsafe, which releases the GIL while it writes to the loop's wake-up socket.
# The awaiting task can resume and the program reach interpreter shutdown before that thread
# takes the GIL back; CPython then ends the thread with pthread_exit, which aborts the process
# (SIGABRT) when it unwinds through Rust frames. So before the pool's owner goes on (aclose),
# and again before the interpreter shuts down (atexit), wait until no thread that Python did not
# start is inside Python code: its frames are visible while it waits for the GIL.


def _native_threads_in_python() -> bool:
    ours = {t.ident for t in threading.enumerate() if not isinstance(t, threading._DummyThread)}  # pyright: ignore[reportPrivateUsage]
    return any(ident not in ours for ident in sys._current_frames())  # pyright: ignore[reportPrivateUsage]


async def _settle_native_threads() -> None:
    deadline = anyio.current_time() + _SETTLE_S
    # No event tells when a foreign thread leaves Python; each short wait of the event loop
    # releases the GIL to it.
    while _native_threads_in_python() and anyio.current_time() < deadline:  # noqa: ASYNC110
        await anyio.sleep(0.001)


@atexit.register
def _settle_native_threads_at_exit() -> None:
    deadline = time.monotonic() + _SETTLE_S
    while _native_threads_in_python() and time.monotonic() < deadline:
        time.sleep(0.001)


_HOT_IDLE_S = 60.0
"""Seconds a hot session's worker stays checked out without a run."""


@dataclass(slots=True)
class _Hot:
    checkout: Any
    session: pm.AsyncMontySession
    token: str
    """Identifies the state it holds (the one the store has when the token matches)."""
    shape: tuple[Any, ...]
    """The run settings it was checked out with (limits, modules)."""
    pool_token: object
    used: float


@dataclass(slots=True)
class _Worker:
    """The worker a run holds (its checkout and session); ``checkout`` is ``None`` once given back."""

    checkout: Any
    session: pm.AsyncMontySession


async def _exit_quietly(checkout: Any) -> None:
    try:
        await checkout.__aexit__(None, None, None)
    except Exception as e:  # a worker that died or was killed: nothing to give back
        _log.debug("monty.checkout_exit_failed", error=repr(e)[:300])


class _Admission:
    """At most ``total`` runs at once, ``per_caller`` of them for one caller; a bounded wait for a slot."""

    def __init__(self, total: int, per_caller: int, wait: float) -> None:
        self._total = total
        self._slots = anyio.Semaphore(total)
        self._per_caller = per_caller
        self._callers: dict[str, tuple[anyio.Semaphore, int]] = {}
        self._wait = wait

    @asynccontextmanager
    async def slot(self, caller: str | None) -> AsyncGenerator[None]:
        if caller is None:
            async with self._global():
                yield
            return
        sem, users = self._callers.get(caller) or (anyio.Semaphore(self._per_caller), 0)
        self._callers[caller] = (sem, users + 1)
        try:
            with anyio.move_on_after(self._wait) as scope:
                await sem.acquire()
            if scope.cancelled_caught:
                who = repr(caller[:80])
                raise EngineBusyError(
                    "monty",
                    f"caller {who} already has {self._per_caller} runs in progress (max_runs_per_caller); "
                    f"none finished within {self._wait:g} s",
                )
            try:
                async with self._global():
                    yield
            finally:
                sem.release()
        finally:
            sem, users = self._callers[caller]
            if users > 1:
                self._callers[caller] = (sem, users - 1)
            else:
                del self._callers[caller]

    @asynccontextmanager
    async def _global(self) -> AsyncGenerator[None]:
        with anyio.move_on_after(self._wait) as scope:
            await self._slots.acquire()
        if scope.cancelled_caught:
            raise EngineBusyError(
                "monty",
                f"all {self._total} sandbox workers are busy (max_processes); none became free within {self._wait:g} s",
            )
        try:
            yield
        finally:
            self._slots.release()


_CUT = "<deeply nested>"
"""What Monty puts in place of a value nested deeper than its recursion limit when it leaves the sandbox."""


def _cut_path(value: Any, max_depth: int) -> str | None:
    """The JSON path where a value leaving the sandbox was cut for depth, if it was.

    Only containers are walked, and strings are compared only near the depth where the cut
    happens, so shallow data costs next to nothing.
    """
    near = max(0, max_depth - 4)
    stack: list[tuple[Any, int, str]] = [(value, 0, "$")]
    while stack:
        v, depth, path = stack.pop()
        if isinstance(v, dict):
            items = ((f"{path}.{str(k)[:40]}", x) for k, x in cast(dict[Any, Any], v).items())
        elif isinstance(v, list | tuple):
            items = ((f"{path}[{i}]", x) for i, x in enumerate(cast(list[Any], v)))
        else:
            if depth >= near and v == _CUT:
                return path if len(path) <= 120 else f"{path[:40]}…{path[-60:]}"
            continue
        for p, x in items:
            if isinstance(x, dict | list | tuple) or (depth + 1 >= near and x == _CUT):
                stack.append((cast(Any, x), depth + 1, p))
    return None


_CONTAINERS = (dict, list, tuple)


def _check_depth(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], max_depth: int) -> None:
    """Refuse arguments that Monty cut for depth on their way out of the sandbox (never silently)."""
    # Most calls pass a tool id and flat keywords: nothing to walk (a plain loop: this runs per call).
    for a in args:
        if type(a) in _CONTAINERS:
            break
    else:
        for a in kwargs.values():
            if type(a) in _CONTAINERS:
                break
        else:
            return
    for i, a in enumerate(args):
        if isinstance(a, dict | list | tuple) and (cut := _cut_path(a, max_depth - 1)) is not None:
            raise ToolError(
                "", f"{name}(): argument {i + 1} is nested deeper than {max_depth} levels at {cut}", "validate_input"
            )
    for k, a in kwargs.items():
        if isinstance(a, dict | list | tuple) and (cut := _cut_path(a, max_depth - 1)) is not None:
            raise ToolError(
                "", f"{name}(): argument {k!r} is nested deeper than {max_depth} levels at {cut}", "validate_input"
            )


def _never_called(*_args: Any, **_kwargs: Any) -> None:
    """Stands for a module function in the sandbox: every call reaches the host as a snapshot instead."""
    raise AssertionError("module functions are answered by the drive")


class _Drive:
    """Answers a feed's suspensions until it completes.

    Synchronous-looking API calls (``run_tool``) are awaited in place and the sandbox resumed
    with the result. Awaitable ones (``run_tool_async``) and ``asyncio.sleep`` are answered
    with a future: the call runs as a task of this drive, and each future snapshot is resumed
    with whatever has finished, so gathered calls overlap.
    """

    def __init__(self, tools: Tools, timeout: float, depth: int, modules: ModuleMap | None = None) -> None:
        self._timeout = timeout
        self._depth = depth
        self._tools = tools
        self._modules = modules
        self._sync: dict[str, Handler] = {name: getattr(tools, name) for name in _SYNC_NAMES}
        self._async: dict[str, Handler] = {name: getattr(tools, method) for name, method in _ASYNC_NAMES.items()}
        self.raised: dict[str, ToolError] = {}
        self._done: dict[int, pm.ExternalSettledResult] = {}
        self._sleeps: dict[int, float] = {}
        self._mine: set[int] = set()
        """Ids of the futures this drive answers (tool calls in flight, sleeps)."""
        self._changed = anyio.Event()
        self._inflight = 0
        """Awaitable calls running as tasks."""
        self._waiting: dict[int, tuple[str, tuple[Any, ...], dict[str, Any], list[Any]]] = {}
        """Awaitable calls that stopped for a decision: name, arguments, what they wait for."""

    def _module_function(self, name: str) -> bool:
        """Route ``tools.<module>.<function>`` (added to the sync or async handlers); ``False``: not one."""
        if self._modules is None or not name.startswith(_MODULE_PREFIX):
            return False
        _, module, function = [*name.split(".", 2), "", ""][:3]
        fn = self._modules.get(module, {}).get(function)
        if fn is None:
            return False
        call_function = self._tools.call_function

        async def handler(*args: Any, **kwargs: Any) -> Any:
            return await call_function(module, function, args, kwargs)

        handler.__name__ = name
        (self._async if fn.awaitable else self._sync)[name] = handler
        return True

    def _failure(self, e: Exception) -> pm.ExternalException:
        if isinstance(e, ToolError):
            self.raised[str(e)] = e
        return {"exception": e}

    async def _call(
        self, call_id: int, name: str, handler: Handler, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        try:
            _check_depth(name, args, kwargs, self._depth)
            self._done[call_id] = {"return_value": await handler(*args, **kwargs)}
        except (ToolCodeError, TypeError, ValueError) as e:
            self._done[call_id] = self._failure(e)
        except CallPaused as e:
            self._waiting[call_id] = (name, args, kwargs, e.pending)
        finally:
            self._inflight -= 1
            self._changed.set()

    def _start(
        self,
        tg: anyio.abc.TaskGroup,
        call_id: int,
        name: str,
        handler: Handler,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self._mine.add(call_id)
        self._inflight += 1
        tg.start_soon(self._call, call_id, name, handler, args, kwargs)

    # -- pauses -------------------------------------------------------------------------------

    async def _pause(self, snap: _Suspended, pending: list[Any]) -> _Paused:
        """Stop here for a decision: let the calls in flight finish, then describe what is left."""
        while self._inflight:
            await self._changed.wait()
            self._changed = anyio.Event()
        now = anyio.current_time()
        waiting = [p for (_n, _a, _k, ps) in self._waiting.values() for p in ps]
        state = {
            "done": {str(i): _encode_settled(r) for i, r in self._done.items()},
            "sleeps": {str(i): max(0.0, t - now) for i, t in self._sleeps.items()},
            "mine": sorted(self._mine),
            "waiting": {str(i): [n, list(a), k] for i, (n, a, k, _p) in self._waiting.items()},
        }
        return _Paused(snap, state, [*pending, *waiting])

    async def resume(self, snap: pm.AsyncSnapshot, state: Mapping[str, Any]) -> Any:
        """Drive a restored snapshot on: the call it stopped at is answered again (now decided)."""
        now = anyio.current_time()
        done = cast("dict[str, Any]", state.get("done", {}))
        self._done = {int(i): _decode_settled(r, self.raised) for i, r in done.items()}
        sleeps = cast("dict[str, float]", state.get("sleeps", {}))
        self._sleeps = {int(i): now + float(t) for i, t in sleeps.items()}
        self._mine = {int(i) for i in cast("list[int]", state.get("mine", []))}
        waiting = cast("dict[str, list[Any]]", state.get("waiting", {}))
        restart = [
            (int(i), str(n), tuple(cast("list[Any]", a)), dict(cast("dict[str, Any]", k)))
            for i, (n, a, k) in waiting.items()
        ]
        if not self._mine and not restart:
            return await self.run(snap)
        return await self._run_general(snap, restart)

    async def run(self, snap: pm.AsyncSnapshot) -> Any:
        # Fast path for plain calls (the common case: ``run_tool(...)`` in a loop): answered in
        # place, with no task group and no extra frame per call. The first suspension that is not
        # such a call moves the drive to the general loop below.
        sync = self._sync
        complete, function = pm.MontyComplete, pm.AsyncFunctionSnapshot
        while True:
            if type(snap) is complete:
                return snap.output
            if type(snap) is not function:
                break
            if snap.is_os_function:
                if snap.function_name != _IMPORT:
                    break
                snap = await snap.resume_auto()
                continue
            handler = sync.get(snap.function_name)
            if handler is None:
                if not self._module_function(snap.function_name) or snap.function_name not in sync:
                    break
                continue  # a module function, now routed: answered on the next turn
            try:
                if snap.args or snap.kwargs:
                    _check_depth(snap.function_name, snap.args, snap.kwargs, self._depth)
                value = await handler(*snap.args, **snap.kwargs)
            except (ToolCodeError, TypeError, ValueError) as e:
                snap = await snap.resume(self._failure(e))
            except CallPaused as e:
                raise await self._pause(snap, e.pending) from None
            else:
                snap = await snap.resume({"return_value": value})
        return await self._run_general(snap)

    async def _run_general(
        self,
        snap: pm.AsyncSnapshot,
        restart: Sequence[tuple[int, str, tuple[Any, ...], dict[str, Any]]] = (),
    ) -> Any:
        failure: pm.MontyError | _Paused | None = None
        async with anyio.create_task_group() as tg:
            for call_id, name, args, kwargs in restart:
                if name not in self._async:
                    self._module_function(name)
                handler = self._async.get(name)
                if handler is None:
                    self._done[call_id] = {"exception": RuntimeError(f"{name}: cannot be resumed")}
                    continue
                self._start(tg, call_id, name, handler, args, kwargs)
            try:
                while not isinstance(snap, pm.MontyComplete):
                    if isinstance(snap, pm.AsyncFunctionSnapshot):
                        snap = await self._function(snap, tg)
                    elif isinstance(snap, pm.AsyncFutureSnapshot):
                        snap = await self._future(snap)
                    else:
                        snap = await snap.resume_auto()
            except (pm.MontyError, _Paused) as e:
                # Raised after the group has closed, so it is not wrapped in an ExceptionGroup.
                failure = e
            # A call the snippet started but never awaited has nobody left to read its result.
            tg.cancel_scope.cancel()
        if failure is not None:
            raise failure
        assert isinstance(snap, pm.MontyComplete)
        return snap.output

    async def _function(self, snap: pm.AsyncFunctionSnapshot, tg: anyio.abc.TaskGroup) -> pm.AsyncSnapshot:
        name = snap.function_name
        if not snap.is_os_function:
            if name not in self._sync and name not in self._async:
                self._module_function(name)
            handler = self._sync.get(name)
            if handler is not None:
                try:
                    _check_depth(name, snap.args, snap.kwargs, self._depth)
                    value = await handler(*snap.args, **snap.kwargs)
                except (ToolCodeError, TypeError, ValueError) as e:
                    return await snap.resume(self._failure(e))
                except CallPaused as e:
                    raise await self._pause(snap, e.pending) from None
                return await snap.resume({"return_value": value})
            handler = self._async.get(name)
            if handler is not None:
                self._start(tg, snap.call_id, name, handler, snap.args, snap.kwargs)
                return await snap.resume({"future": ...})
            return await snap.resume_auto()
        if name in _SLEEPS or name in _ASYNC_SLEEPS:
            # Sleeps are served by the host: cancellable, and bounded by the run's timeout.
            seconds = snap.args[0] if snap.args else 0
            if not isinstance(seconds, int | float) or seconds < 0:
                return await snap.resume({"exception": ValueError("sleep length must be a number >= 0")})
            seconds = min(float(seconds), self._timeout)
            if name in _ASYNC_SLEEPS:
                self._mine.add(snap.call_id)
                self._sleeps[snap.call_id] = anyio.current_time() + seconds
                return await snap.resume({"future": ...})
            await anyio.sleep(seconds)
            return await snap.resume({"return_value": None})
        return await snap.resume_auto()

    async def _future(self, snap: pm.AsyncFutureSnapshot) -> pm.AsyncSnapshot:
        ids = snap.pending_call_ids
        if not self._mine.issuperset(ids):
            return await snap.resume_auto()  # futures Monty itself owns
        while True:
            if any(i in self._waiting for i in ids):
                raise await self._pause(snap, [])
            now = anyio.current_time()
            ready: dict[int, pm.ExternalSettledResult] = {}
            for i in ids:
                if i in self._done:
                    ready[i] = self._done.pop(i)
                elif self._sleeps.get(i, float("inf")) <= now:
                    del self._sleeps[i]
                    ready[i] = {"return_value": None}
            if ready:
                self._mine.difference_update(ready)
                return await snap.resume(ready)
            wake = min((self._sleeps[i] for i in ids if i in self._sleeps), default=float("inf"))
            with anyio.move_on_after(wake - now):
                await self._changed.wait()
            self._changed = anyio.Event()


_Suspended = pm.AsyncFunctionSnapshot | pm.AsyncFutureSnapshot


class _Paused(Exception):
    def __init__(self, snap: _Suspended, drive: dict[str, Any], pending: list[Any]) -> None:
        self.snap = snap
        self.drive = drive
        self.pending = pending
        super().__init__("paused")


def _line_of(code: str, snap: pm.AsyncSnapshot) -> int | None:
    position = getattr(snap, "position", None)
    start = getattr(position, "start", None)
    if not isinstance(start, int) or not 0 <= start <= len(code):
        return None
    return code.count("\n", 0, start) + 1


def _encode_settled(r: pm.ExternalSettledResult) -> dict[str, Any]:
    if "return_value" in r:
        return {"value": cast("dict[str, Any]", r)["return_value"]}
    e = cast("dict[str, Any]", r).get("exception")
    if isinstance(e, ToolError):
        return {"tool_error": [e.tool_id, e.message, e.error_op, e.code.value]}
    name = type(e).__name__ if isinstance(e, TypeError | ValueError) else "RuntimeError"
    return {"error": [name, str(e)]}


def _decode_settled(d: Mapping[str, Any], raised: dict[str, ToolError]) -> pm.ExternalSettledResult:
    if "value" in d:
        return {"return_value": d["value"]}
    if "tool_error" in d:
        tool_id, message, op, code = d["tool_error"]
        err = ToolError(str(tool_id), str(message), str(op), code=ErrorCode(code))
        raised[str(err)] = err
        return {"exception": err}
    name, message = d.get("error", ["RuntimeError", "failed"])
    kind = {"TypeError": TypeError, "ValueError": ValueError}.get(str(name), RuntimeError)
    return {"exception": kind(str(message))}


def _what_needed(e: pm.MontyRuntimeError) -> str:
    """Where the memory ran out: the line, and the expression when Monty points at one."""
    frames = e.traceback()
    if not frames:
        return ""
    f = frames[-1]
    source = f.source_line or ""
    if f.end_line == f.line and 1 <= f.column < f.end_column <= len(source) + 1:
        what = source[f.column - 1 : f.end_column - 1]
    else:
        what = source.strip()
    what = what if len(what) <= 80 else what[:79] + "…"
    return f"line {f.line}: {what}" if what else f"line {f.line}"


def _code_error(
    e: pm.MontySyntaxError | pm.MontyRuntimeError, exc_type: str, raised: dict[str, ToolError]
) -> CodeExecutionError:
    frames = e.traceback()
    frame = frames[-1] if frames else None
    message = str(e.exception()) if exc_type != "SyntaxError" else str(e)
    tool_id = None
    tool_err = raised.get(message)
    tool_code = None
    if tool_err is not None:
        exc_type, tool_id, tool_code = "ToolError", tool_err.tool_id, tool_err.code
    return CodeExecutionError(
        exc_type,
        message,
        line=frame.line if frame else None,
        column=frame.column if frame else None,
        tool_id=tool_id,
        tool_code=tool_code,
        traceback=e.display("traceback"),
    )
