"""``ty``'s part of the check: what a snippet does with the tools' typed results, kept only when certain to fail.

The snippet is handed to ``ty`` rewritten (:mod:`._source`: what it builds is ``Any``, a
``run_tool`` call with a literal id typed as its module function), and only the findings certain
to fail are kept (:mod:`._findings`).

**Where it runs.** In a warm pydantic-monty session kept per set of modules and catalog version:
the snippet is wrapped in a function that is only defined, never called, so nothing executes.
A module is the one the checking caller's view holds (:class:`~toolcode._modules.ModulesView`): a
session that holds another view's version of a module the snippet names (the ``snippets`` module of
a caller with other private snippets), or holds one the view lacks, is replaced before the check.

**Who waits behind whom.** A caller's checks go one at a time (:class:`_Turns`), so a caller waits
for a lane behind at most one check of each other caller. A check holds its lane's session for at
most :data:`HOLD_S`: one still running then (``ty``'s inferred types can grow exponentially with a
snippet's branches) takes the session with it and finishes on a worker of its own, one of
:data:`_SLOW` at a time (none free: it is ended), while the lane starts a new session for the next
check. The check is bounded by the checker's ``timeout`` (and by the run's own); one that runs out of
it ends its worker and finds nothing, and the run goes on unchecked: a snippet wrongly refused would
be worse than a mistake the run reports itself.
"""

from __future__ import annotations

import ast
import math
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import pydantic_monty as pm

from toolcode._globals import globals_stub
from toolcode._module_views import ModulesView
from toolcode._modules import PACKAGE, NamespaceModule
from toolcode._offload import Runs, run_here
from toolcode._typecheck._diagnostic import Diagnostic, Positions
from toolcode._typecheck._findings import Declared, kept
from toolcode._typecheck._source import ANY_FUNCTION, ANY_TYPE, MAX_CHARS, MODULE_ALIAS, RESULT_FUNCTION, prepared
from toolcode.engines._monty_pool import sandbox_module, start_pool
from toolcode.exceptions import EngineError
from toolindex.log import get_logger

__all__ = ["GLOBALS_STUB", "HOLD_S", "MAX_CHARS", "Ty", "Unanswered"]

_log = get_logger("toolcode.typecheck")

GLOBALS_STUB: Final = globals_stub()
"""What the type checker knows of the snippet globals (built from :data:`~toolcode.SNIPPET_GLOBALS`)."""
_HELPERS: Final = (
    f"\nfrom typing import Callable, TypeVar\n_ToolcodeR = TypeVar('_ToolcodeR')\n{ANY_TYPE} = Any\n"
    f"def {ANY_FUNCTION}(value: object, /) -> Any: ...\n"
    f"def {RESULT_FUNCTION}(function: Callable[..., _ToolcodeR], value: object, /) -> _ToolcodeR: ...\n"
)
_CHECKS_PER_SESSION = 400
HOLD_S: Final = 0.25
"""Seconds a check may hold its lane's session: a warm check takes about a millisecond, the first after
a session starts some tens of milliseconds."""
_SLOW: Final = 2
"""Checks that outgrew their lane running at once, each on a worker of its own."""


@dataclass(frozen=True, slots=True)
class Unanswered:
    """``ty`` did not answer: the run goes on unchecked by it."""

    again: bool
    """Whether asking again may answer (no worker, no free place for a slow check); ``False``: the
    check ran out of time, as the same snippet would again."""


@dataclass(slots=True)
class _Warm:
    """The warm session: type checking on, the snippet only ever defined, never run."""

    session: pm.AsyncMontySession
    version: int
    modules: dict[str, NamespaceModule]
    """Module name → the module it holds under that name (each built for one catalog version)."""
    checks: int = 0
    closed: bool = False


@dataclass(slots=True)
class _Lane:
    """Checks of one size class, serialised on their own warm session."""

    lock: anyio.Lock
    hold: float
    """Seconds a check may hold the lane's session before it goes on apart."""
    warm: _Warm | None = None


@dataclass(slots=True)
class _Feed:
    """One check under way: its answer once ``done`` is set."""

    done: anyio.Event = field(default_factory=anyio.Event)
    rendered: str = ""
    error: Exception | None = None
    timed_out: bool = False
    """``ty`` ran out of the checker's ``timeout`` on the snippet (the same snippet would again)."""


class _Turns:
    """One check at a time per caller: a caller's checks wait behind its own, not behind each other caller's."""

    def __init__(self) -> None:
        self._held: dict[str | None, tuple[anyio.Lock, int]] = {}

    @asynccontextmanager
    async def of(self, caller: str | None) -> AsyncGenerator[None]:
        """Hold ``caller``'s turn for the block (forgotten once no check of the caller holds or awaits it)."""
        lock, users = self._held.get(caller) or (anyio.Lock(), 0)
        self._held[caller] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._held[caller]
            if users == 1:
                del self._held[caller]
            else:
                self._held[caller] = (lock, users - 1)


class Ty:
    """``ty``'s certain findings on snippets, from warm sessions (see the module docstring).

    The session holds the modules snippets have imported so far (up to ``max_modules``), and is
    replaced by one holding one more module when a snippet imports a new one (or another version of
    one it holds, as another caller's view has it), or by a fresh one when the catalog changes.
    Checks are serialised on it (a warm check takes about a millisecond), long snippets on a second
    session of their own, so they hold up only each other; a check that outgrows its lane goes on
    apart (see the module docstring); one that fails (no worker, a timeout) finds nothing: it is
    logged and the run goes on unchecked.
    """

    def __init__(self, max_modules: int, timeout: float) -> None:
        self._max_modules = max_modules
        self._timeout = timeout
        self._pool: pm.AsyncMonty | None = None
        self._small = _Lane(anyio.Lock(), HOLD_S)
        # Long snippets' checks take seconds and go one at a time (``TypeChecker``): they keep their lane.
        self._large = _Lane(anyio.Lock(), math.inf)
        self._start = anyio.Lock()
        self._turns = _Turns()
        self._slow = anyio.Semaphore(_SLOW)
        self._apart: set[anyio.CancelScope] = set()
        """The checks that outgrew their lane (cancelled by :meth:`aclose`)."""

    async def findings(
        self,
        code: str,
        tree: ast.Module,
        bindings: Mapping[str, int],
        visible: Mapping[str, str],
        modules: ModulesView,
        positions: Positions,
        run: Runs = run_here,
        typed: Mapping[ast.Call, Sequence[str]] | None = None,
        declared: Declared | None = None,
        caller: str | None = None,
    ) -> list[Diagnostic] | Unanswered:
        """What the snippet does wrong with the typed results of the ``visible`` modules (name → namespace).

        ``modules`` are the modules as the caller's view holds them: the session checks with those only.

        ``run`` runs the parts that take the host's CPU (here, or in a worker thread for a long snippet);
        ``typed`` gives the ``run_tool`` calls with a literal id their module function (``<module>.<name>``),
        and ``run_tools`` calls unpacked into names the function of each pair.
        ``declared`` gives the declared result type of an expression that is a tool call (or a name
        bound once to one). ``caller``'s checks go one at a time, apart from other callers' (see the
        module docstring). :class:`Unanswered`: ``ty`` could not answer (no worker, a timeout); the
        run goes on unchecked by it.
        """
        source, wrapped = await run(prepared, code, tree, bindings, typed)
        if wrapped is None:
            return []  # the engine reports what is wrong with it
        lane = self._small if run is run_here else self._large
        feed = _Feed()
        try:
            async with self._turns.of(caller):
                rendered = await self._rendered(lane, visible, modules, wrapped, feed)
        except (TimeoutError, pm.MontyError, OSError, EngineError, RuntimeError) as e:
            # RuntimeError: pydantic-monty's answer for a session its worker already ended.
            _log.warning("typecheck.unavailable", error=repr(e)[:300], timed_out=feed.timed_out)
            return Unanswered(again=not feed.timed_out)
        closed: frozenset[str] | None = None
        if "Unknown key" in rendered:
            found = (modules.module(ns) for ns in dict.fromkeys(visible.values()))
            closed = frozenset(c for m in found if m is not None for c in m.closed)
        return await run(kept, rendered, source, tree, positions, declared, closed)

    async def _rendered(
        self, lane: _Lane, visible: Mapping[str, str], modules: ModulesView, wrapped: str, feed: _Feed
    ) -> str:
        """``ty``'s diagnostics, on the lane's session, or on its own once the check outgrows the lane's ``hold``.

        Raises:
            TimeoutError: The lane or its session took the checker's ``timeout``, or ``ty`` did.
            EngineError: The check outgrew its lane and no place for a slow check was free.
        """
        with anyio.fail_after(self._timeout):
            await lane.lock.acquire()
        held, full = True, False
        try:
            try:
                with anyio.fail_after(self._timeout):
                    warm = await self._session_for(lane, visible, modules)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self._drop(lane)  # half started: not reused
                raise
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._feed, lane, warm, wrapped, feed)
                with anyio.move_on_after(lane.hold):
                    await feed.done.wait()
                if not feed.done.is_set():
                    # The session leaves the lane with the check (which ends it): the next check
                    # starts another.
                    lane.warm = None
                    try:
                        self._slow.acquire_nowait()
                    except anyio.WouldBlock:
                        full = True
                        tg.cancel_scope.cancel()
                    else:
                        held = False
                        lane.lock.release()
                        await self._apart_until(feed, tg.cancel_scope)
        finally:
            if held:
                if not feed.done.is_set():
                    lane.warm = None  # cut short: its session (if any) ends with it
                lane.lock.release()
        if full:
            raise EngineError("ty", f"{_SLOW} slow checks are under way already")
        if feed.error is not None:
            raise feed.error
        return feed.rendered

    async def _apart_until(self, feed: _Feed, scope: anyio.CancelScope) -> None:
        """Wait for a check that went on apart (holding a place for slow checks), cancelled by :meth:`aclose`."""
        self._apart.add(scope)
        try:
            await feed.done.wait()
        finally:
            self._apart.discard(scope)
            self._slow.release()

    async def _feed(self, lane: _Lane, warm: _Warm, wrapped: str, feed: _Feed) -> None:
        """Run the check into ``feed``, for the checker's ``timeout`` at most.

        A check cut short or failed ends its session (and its worker), and so does one that went on
        apart from its lane.
        """
        try:
            with anyio.fail_after(self._timeout):
                feed.rendered = await self._check(warm, wrapped)
        except (TimeoutError, pm.MontyError, OSError, EngineError, RuntimeError) as e:
            feed.error, feed.timed_out = e, isinstance(e, TimeoutError)
        except BaseException:
            # Cut short (the run's timeout, the checker closing): the session is in an unknown state.
            feed.error = EngineError("ty", "the check was cut short")
            raise
        finally:
            if feed.error is not None or lane.warm is not warm:
                if lane.warm is warm:
                    lane.warm = None
                with anyio.CancelScope(shield=True):
                    await self._close(warm)
            feed.done.set()

    async def _check(self, warm: _Warm, wrapped: str) -> str:
        """``ty``'s diagnostics for a wrapped snippet (concise format), or ``""``."""
        warm.checks += 1
        try:
            await warm.session.feed_run(wrapped)
        except pm.MontyTypingError as e:
            return e.display()
        except pm.MontyError:
            # The wrapped snippet does not parse or define (a ``from __future__`` line, say): the
            # engine reports what is wrong with it when it runs. The session may have ended with it
            # (a limit): it is not reused.
            warm.checks = _CHECKS_PER_SESSION
        return ""

    async def _session_for(self, lane: _Lane, visible: Mapping[str, str], modules: ModulesView) -> _Warm:
        """The lane's warm session, replaced when it lacks a module, the catalog moved or it is worn.

        Also when it holds a module otherwise than ``modules`` do (another caller's version of
        ``snippets``, or one the caller has not): a snippet reaches every module the session holds.
        """
        version = modules.version
        needed = {name: m for name, ns in visible.items() if (m := modules.module(ns)) is not None}
        old = lane.warm
        if old is not None and old.version == version and old.checks < _CHECKS_PER_SESSION:
            kept = {n: m for n, m in old.modules.items() if modules.module_named(n) is m}
            if len(kept) == len(old.modules) and needed.keys() <= kept.keys():
                return old
            if len(kept) + len(needed) <= self._max_modules:
                needed = {**kept, **needed}
        await self._drop(lane)
        async with self._start:
            if self._pool is None:
                # A worker per lane, and one per slow check.
                self._pool = await start_pool(None, min_processes=1, max_processes=2 + _SLOW)
            pool = self._pool
        package: dict[str, Any] = {}
        keys: dict[str, str] = {}
        for name, module in needed.items():
            # A name the sandbox keeps (``time``) is a module under another key, named in the package stub.
            key = name
            while sandbox_module(key) or (key != name and key in needed and needed[key] is not module):
                key += "_"
            keys[name] = key
            package[key] = pm.ExternalModule(dict.fromkeys(module.functions, _placeholder), stubs=module.stub)
        stub = "".join(f"import {PACKAGE}.{k}\n{n} = {PACKAGE}.{k}\n" for n, k in keys.items() if n != k)
        checkout = pool.checkout(
            # The session only ever defines a function; limits in case a snippet finds a way out of it.
            limits={"max_feed_duration_secs": self._timeout, "max_memory": 64 * 1024 * 1024, "max_suspensions": 10_000},
            type_check=True,
            type_check_stubs=GLOBALS_STUB + _HELPERS,
            type_check_format="concise",
            external_modules={PACKAGE: pm.ExternalModule(package, stubs=stub)},
        )
        warm = lane.warm = _Warm(await checkout.__aenter__(), version, needed)
        if keys:
            # Resolves the modules once, so the wrapped snippets can import them (and name them, for run_tool).
            await checkout.feed_run("\n".join(f"import {PACKAGE}.{k} as {MODULE_ALIAS}{n}" for n, k in keys.items()))
        return warm

    @classmethod
    async def _drop(cls, lane: _Lane) -> None:
        warm, lane.warm = lane.warm, None
        if warm is not None:
            await cls._close(warm)

    @staticmethod
    async def _close(warm: _Warm) -> None:
        if warm.closed:
            return
        warm.closed = True
        try:
            await warm.session.__aexit__(None, None, None)
        except (pm.MontyError, RuntimeError) as e:  # RuntimeError: closed already
            _log.debug("typecheck.session_close_failed", error=repr(e)[:300])

    async def aclose(self) -> None:
        """Close the warm sessions and the worker pool; idempotent (a later check starts them again)."""
        async with self._small.lock, self._large.lock:
            await self._drop(self._small)
            await self._drop(self._large)
            for scope in self._apart:
                scope.cancel()  # its check finds nothing
            for _ in range(_SLOW):  # each ends its session first
                await self._slow.acquire()
            for _ in range(_SLOW):
                self._slow.release()
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.__aexit__(None, None, None)


def _placeholder(**_kwargs: Any) -> None:
    """Stands for a tool in the checker's modules (the checker never runs code)."""
