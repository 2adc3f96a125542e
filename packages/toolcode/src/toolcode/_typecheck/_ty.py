"""``ty``'s part of the check: what a snippet does with the tools' typed results, kept only when certain to fail.

The snippet is handed to ``ty`` rewritten (:mod:`._source`: what it builds is ``Any``, a
``run_tool`` call with a literal id typed as its module function), and only the findings certain
to fail are kept (:mod:`._findings`).

**Where it runs.** In a warm pydantic-monty session kept per set of modules and catalog version:
the snippet is wrapped in a function that is only defined, never called, so nothing executes.
A module is the one the checking caller's view holds (:class:`~toolcode._modules.ModulesView`): a
session that holds another view's version of a module the snippet names (the ``snippets`` module of
a caller with other private snippets), or holds one the view lacks, is replaced before the check.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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

__all__ = ["GLOBALS_STUB", "MAX_CHARS", "Ty"]

_log = get_logger("toolcode.typecheck")

GLOBALS_STUB: Final = globals_stub()
"""What the type checker knows of the snippet globals (built from :data:`~toolcode.SNIPPET_GLOBALS`)."""
_HELPERS: Final = (
    f"\nfrom typing import Callable, TypeVar\n_ToolcodeR = TypeVar('_ToolcodeR')\n{ANY_TYPE} = Any\n"
    f"def {ANY_FUNCTION}(value: object, /) -> Any: ...\n"
    f"def {RESULT_FUNCTION}(function: Callable[..., _ToolcodeR], value: object, /) -> _ToolcodeR: ...\n"
)
_CHECKS_PER_SESSION = 400


@dataclass(slots=True)
class _Warm:
    """The warm session: type checking on, the snippet only ever defined, never run."""

    session: pm.AsyncMontySession
    version: int
    modules: dict[str, NamespaceModule]
    """Module name → the module it holds under that name (each built for one catalog version)."""
    checks: int = 0


@dataclass(slots=True)
class _Lane:
    """Checks of one size class, serialised on their own warm session."""

    lock: anyio.Lock
    warm: _Warm | None = None


class Ty:
    """``ty``'s certain findings on snippets, from warm sessions (see the module docstring).

    The session holds the modules snippets have imported so far (up to ``max_modules``), and is
    replaced by one holding one more module when a snippet imports a new one (or another version of
    one it holds, as another caller's view has it), or by a fresh one when the catalog changes.
    Checks are serialised on it (a warm check takes about a millisecond), long snippets on a second
    session of their own, so they hold up only each other; one that fails (no worker, a timeout)
    finds nothing: it is logged and the run goes on unchecked.
    """

    def __init__(self, max_modules: int, timeout: float) -> None:
        self._max_modules = max_modules
        self._timeout = timeout
        self._pool: pm.AsyncMonty | None = None
        self._small = _Lane(anyio.Lock())
        self._large = _Lane(anyio.Lock())
        self._start = anyio.Lock()

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
    ) -> list[Diagnostic] | None:
        """What the snippet does wrong with the typed results of the ``visible`` modules (name → namespace).

        ``modules`` are the modules as the caller's view holds them: the session checks with those only.

        ``run`` runs the parts that take the host's CPU (here, or in a worker thread for a long snippet);
        ``typed`` gives the ``run_tool`` calls with a literal id their module function (``<module>.<name>``),
        and ``run_tools`` calls unpacked into names the function of each pair.
        ``declared`` gives the declared result type of an expression that is a tool call (or a name
        bound once to one). ``None``: ``ty`` could not answer (no worker, a timeout); the run goes
        on unchecked by it.
        """
        source, wrapped = await run(prepared, code, tree, bindings, typed)
        if wrapped is None:
            return []  # the engine reports what is wrong with it
        lane = self._small if run is run_here else self._large
        try:
            with anyio.fail_after(self._timeout):
                async with lane.lock:
                    try:
                        rendered = await self._check(await self._session_for(lane, visible, modules), wrapped)
                    except BaseException:
                        # A check cut short (the run's timeout, a failure) leaves the session in
                        # an unknown state: it is not reused.
                        with anyio.CancelScope(shield=True):
                            await self._drop(lane)
                        raise
        except (TimeoutError, pm.MontyError, OSError, EngineError, RuntimeError) as e:
            # RuntimeError: pydantic-monty's answer for a session its worker already ended.
            _log.warning("typecheck.unavailable", error=repr(e)[:300])
            return None
        closed: frozenset[str] | None = None
        if "Unknown key" in rendered:
            found = (modules.module(ns) for ns in dict.fromkeys(visible.values()))
            closed = frozenset(c for m in found if m is not None for c in m.closed)
        return await run(kept, rendered, source, tree, positions, declared, closed)

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
                self._pool = await start_pool(None, min_processes=1, max_processes=2)  # a worker per lane
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

    @staticmethod
    async def _drop(lane: _Lane) -> None:
        warm, lane.warm = lane.warm, None
        if warm is not None:
            try:
                await warm.session.__aexit__(None, None, None)
            except pm.MontyError as e:
                _log.debug("typecheck.session_close_failed", error=repr(e)[:300])

    async def aclose(self) -> None:
        """Close the warm session and the worker pool; idempotent (a later check starts them again)."""
        async with self._small.lock, self._large.lock:
            await self._drop(self._small)
            await self._drop(self._large)
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.__aexit__(None, None, None)


def _placeholder(**_kwargs: Any) -> None:
    """Stands for a tool in the checker's modules (the checker never runs code)."""
