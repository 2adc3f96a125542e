"""The Monty worker pool: one per event loop, shared by every run, with admission per caller and hot sessions.

A run takes a slot (:meth:`WorkerPool.slot`: at most ``max_processes`` runs at once, at most
``max_runs_per_caller`` of them for one caller), then a worker (:meth:`WorkerPool.worker`): the
spare, the hot one still holding its session's state, or a fresh checkout. A worker is given back
after the run, discarded when the run failed, or kept checked out (hot) for the session's next run.

Checking a worker out and giving it back are a round trip each to the pool's threads; neither is
on a run's way: the pool keeps one spare worker checked out for the last run shape (taken by the
next run of that shape, refilled at once while a process is free), and gives workers back without
waiting for the pool's answer.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anyio
import pydantic_monty as pm

from toolcode._compat_monty import find_monty_binary
from toolcode._types import SessionState
from toolcode.exceptions import EngineBusyError, EngineError
from toolindex.log import get_logger
from toolrun import watchdog_executable

__all__ = ["CALLER", "Worker", "WorkerPool", "exit_quietly", "sandbox_module", "start_pool"]

_log = get_logger("toolcode.engines.monty")

CALLER: ContextVar[str | None] = ContextVar("toolcode_monty_caller", default=None)
"""Who the runs started in this context are for (``MontyEngine.caller``)."""
_HOT_IDLE_S = 60.0
"""Seconds a hot session's worker stays checked out without a run."""
_SETTLE_S = 1.0
"""Longest wait, after the pool has closed, for its native threads to leave the interpreter."""


@functools.cache
def sandbox_module(name: str) -> bool:
    """Whether the sandbox (or its type checker) provides a module ``name`` (``time``, ``json``, ...).

    Monty refuses a module of that name anywhere, ``tools.time`` included: such a namespace is
    given another way (see ``MontyEngine`` and the type checker).
    """
    try:
        pm.ExternalModule({name: pm.ExternalModule({})})
    except ValueError:
        return True
    return False


@dataclass(slots=True)
class Worker:
    """The worker a run holds; ``session`` is ``None`` once given back."""

    session: pm.AsyncMontySession | None
    hot: bool = False
    """It came hot: it holds the session's state already."""
    keep_hot: bool = False
    """Set by the run: the worker holds exactly the state stored for its session, and may stay hot."""


@dataclass(slots=True)
class _Spare:
    shape: Any
    package: object
    """The run's module package: compared by identity (a shape holds only its id)."""
    session: asyncio.Future[pm.AsyncMontySession]


@dataclass(slots=True)
class _Hot:
    session: pm.AsyncMontySession
    holds: tuple[object, ...]
    """The token of the state it holds (the store's state when it matches), the run settings, the pool."""
    used: float


async def start_pool(
    binary_path: str | None, *, min_processes: int, max_processes: int, nice: int = 0, grace: float = 1.0
) -> pm.AsyncMonty:
    """A started pydantic-monty pool whose workers go through the watchdog launcher (they die with this process).

    Raises:
        EngineError: The worker binary cannot be found or the pool cannot start.
    """
    try:
        binary = watchdog_executable(find_monty_binary(binary_path), nice=nice)
    except (OSError, ValueError) as e:
        raise EngineError("monty", f"cannot find the worker binary: {e}") from e
    pool = pm.AsyncMonty(
        binary_path=binary,
        min_processes=min_processes,
        max_processes=max_processes,
        feed_duration_limit_grace=grace,
        turn_duration_limit_grace=grace,
    )
    try:
        await pool.__aenter__()
    except Exception as e:  # the worker binary is missing or cannot start
        raise EngineError("monty", f"cannot start the worker pool: {type(e).__name__}: {e}") from e
    return pool


class WorkerPool:
    """pydantic-monty's pool for the running event loop, who may use it, and the hot sessions' workers."""

    def __init__(
        self, start: Callable[[], Awaitable[pm.AsyncMonty]], total: int, per_caller: int, wait: float, max_hot: int
    ) -> None:
        self._start = start
        self._total = total
        self._per_caller = per_caller
        self._wait = wait
        self._max_hot = max_hot
        self._pool: pm.AsyncMonty | None = None
        self._token: object = None
        self._lock = anyio.Lock()
        self._slots = anyio.Semaphore(total)
        self._callers: dict[str, tuple[anyio.Semaphore, int]] = {}
        self._hot: OrderedDict[str, _Hot] = OrderedDict()
        self._closing: list[pm.AsyncMontySession] = []
        self._spare: _Spare | None = None
        self._leaving: set[asyncio.Future[Any]] = set()
        """Give-backs under way (awaited by :meth:`aclose`)."""

    async def _get(self) -> pm.AsyncMonty:
        token = asyncio.get_running_loop()  # the engine runs on asyncio only (anyio's token asks sniffio)
        if self._pool is not None and self._token == token:
            return self._pool
        async with self._lock:
            if self._pool is not None and self._token != token:
                # The pool's I/O is bound to the loop it was started on; a new loop needs a new pool.
                old, self._pool = self._pool, None
                self._drop_spare()
                try:
                    await old.__aexit__(None, None, None)
                except Exception as e:  # the old loop is gone; nothing more can be done for it
                    _log.debug("monty.stale_pool_close_failed", error=repr(e))
            if self._pool is None:
                self._pool, self._token = await self._start(), token
                # Semaphores belong to the loop they wait on, like the pool.
                self._slots, self._callers = anyio.Semaphore(self._total), {}
            return self._pool

    @asynccontextmanager
    async def slot(self, caller: str | None) -> AsyncGenerator[pm.AsyncMonty]:
        """The pool, and a place among the runs that hold a worker, for ``caller`` (default: :data:`CALLER`).

        Raises:
            EngineError: The pool cannot start.
            EngineBusyError: No place became free within ``queue_timeout`` (the message names the full cap).
        """
        pool = await self._get()
        caller = caller or CALLER.get()
        if caller is None:
            await self._take(self._slots, None)
            try:
                yield pool
            finally:
                self._slots.release()
            return
        sem, users = self._callers.get(caller) or (anyio.Semaphore(self._per_caller), 0)
        self._callers[caller] = (sem, users + 1)
        try:
            await self._take(sem, caller)
            try:
                await self._take(self._slots, None)
                try:
                    yield pool
                finally:
                    self._slots.release()
            finally:
                sem.release()
        finally:
            sem, users = self._callers[caller]
            if users > 1:
                self._callers[caller] = (sem, users - 1)
            else:
                del self._callers[caller]

    async def _take(self, sem: anyio.Semaphore, caller: str | None) -> None:
        """A place of ``sem`` (the caller's share when ``caller`` is given), waiting at most ``queue_timeout``."""
        if sem.value > 0:  # free: taken at once, with no timer and no turn of the event loop
            sem.acquire_nowait()
            return
        with anyio.move_on_after(self._wait) as scope:
            await sem.acquire()
        if scope.cancelled_caught:
            if caller is None:
                busy = f"all {self._total} sandbox workers are busy (max_processes); none became free"
            else:
                busy = f"caller {caller[:80]!r} already has {self._per_caller} runs in progress (max_runs_per_caller); "
                busy += "none finished"
            raise EngineBusyError("monty", f"{busy} within {self._wait:g} s")

    @asynccontextmanager
    async def worker(
        self,
        checkout: Callable[[], pm.AsyncMontySession],
        session: SessionState | None,
        shape: tuple[Any, object],
        *,
        hot: bool,
    ) -> AsyncGenerator[Worker]:
        """A worker for one run: the session's hot one (when ``hot`` allows and its state is current), or a new one.

        ``shape`` is what ``checkout`` sets up (settings, the module package): a new worker is the
        spare when it was checked out for the same shape. After the run it is given back, kept hot
        for ``session`` when the run set ``keep_hot``, or discarded when the run failed (a worker
        stopped mid-run is never reused).
        """
        found, holds = None, None
        if session is not None and session.key:
            found, holds = self._hot.pop(session.key, None), (session.token, shape, self._token)
        if found is not None and not (hot and found.holds == holds):
            # Another server changed the session, the settings differ, or the run starts from another state.
            self._closing.append(found.session)
            found = None
        worker = Worker(found.session, hot=True) if found is not None else Worker(await self._fresh(checkout, shape))
        try:
            yield worker
        except BaseException:
            with anyio.CancelScope(shield=True):
                if worker.session is not None:
                    await exit_quietly(worker.session)
            raise
        if worker.session is not None and worker.keep_hot and session is not None:
            now = time.monotonic()
            self._hot[session.key] = _Hot(worker.session, (session.token, shape, self._token), now)
            for key in [k for k, h in self._hot.items() if now - h.used > _HOT_IDLE_S]:
                self._closing.append(self._hot.pop(key).session)
            while len(self._hot) > self._max_hot:
                self._closing.append(self._hot.pop(next(iter(self._hot))).session)
            await self._close_pending()
        elif worker.session is not None:
            self._give_back(worker.session)

    async def _fresh(
        self, checkout: Callable[[], pm.AsyncMontySession], shape: tuple[Any, object]
    ) -> pm.AsyncMontySession:
        """A new worker: the spare when it fits ``shape``; the next spare is checked out while the run goes on."""
        spare, self._spare = self._spare, None
        if spare is not None and (spare.shape != shape[0] or spare.package is not shape[1]):
            self._give_back_later(spare.session)
            spare = None
        # The spare counts as a run: it may be checked out only while a process is free for it.
        if self._total - self._slots.value + len(self._hot) < self._total:
            self._spare = _Spare(shape[0], shape[1], asyncio.ensure_future(checkout().__aenter__()))
        if spare is None:
            return await checkout().__aenter__()
        try:
            return await spare.session
        except Exception as e:  # the spare could not be checked out (a worker died): take a new one
            _log.debug("monty.spare_failed", error=repr(e)[:300])
            return await checkout().__aenter__()

    def _give_back(self, session: pm.AsyncMontySession) -> None:
        """Give a worker back without waiting for the pool's answer (:meth:`aclose` waits for it)."""
        done = asyncio.ensure_future(session.__aexit__(None, None, None))
        self._leaving.add(done)
        done.add_done_callback(self._left)

    def _give_back_later(self, checking_out: asyncio.Future[pm.AsyncMontySession]) -> None:
        """Give back a spare whose checkout may still be under way."""
        self._leaving.add(checking_out)
        checking_out.add_done_callback(self._left)
        checking_out.add_done_callback(
            lambda f: None if f.cancelled() or f.exception() else self._give_back(f.result())
        )

    def _left(self, done: asyncio.Future[Any]) -> None:
        self._leaving.discard(done)
        if not done.cancelled() and (e := done.exception()) is not None:
            _log.debug("monty.checkout_exit_failed", error=repr(e)[:300])

    def _drop_spare(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None:
            self._give_back_later(spare.session)

    async def _close_pending(self) -> None:
        while self._closing:
            await exit_quietly(self._closing.pop())

    async def aclose(self) -> None:
        """Give the hot workers back and shut the pool down; idempotent (a later run starts a new pool)."""
        self._closing.extend(h.session for h in self._hot.values())
        self._hot.clear()
        self._drop_spare()
        await self._close_pending()
        while self._leaving:
            await asyncio.wait(set(self._leaving))
        async with self._lock:
            pool, self._pool = self._pool, None
            if pool is not None:
                await pool.__aexit__(None, None, None)
                await _settle_native_threads()


async def exit_quietly(session: pm.AsyncMontySession) -> None:
    """Give a worker back, whatever state it is in."""
    try:
        await session.__aexit__(None, None, None)
    except Exception as e:  # a worker that died or was killed: nothing to give back
        _log.debug("monty.checkout_exit_failed", error=repr(e)[:300])


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
