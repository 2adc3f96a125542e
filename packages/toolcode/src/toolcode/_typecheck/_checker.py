"""Check a snippet's tool calls before anything runs, refusing only what would certainly fail.

The check refuses a snippet only for what its run would certainly fail on, and says it as the
run would (the diagnostic's ``code`` is the run's error code):

- **Names** (``unknown_tool``): a ``tools`` module the caller cannot use, a function its module
  does not have, a literal tool id (``run_tool("ns:x", ...)``, ``run_tools([...])``) no visible
  tool has.
- **Arguments** (``invalid_arguments``, :mod:`._arguments`): in both call styles, what the text
  settles of each call's arguments is validated by the run's own validator: a literal of the
  wrong type or outside an enum, a required argument missing from a call that shows them all,
  an argument the tool does not declare, a positional argument to a module function.
- **Typed results** (``runtime_error``, :mod:`._source`, :mod:`._verdicts`): ``ty`` (inside a
  pydantic-monty worker) checks the snippet against the stubs of the modules it imports, with
  everything the snippet builds itself typed ``Any``; only findings that fail for every value of
  the types named are kept (a key a ``TypedDict`` result does not have, a method a ``str`` lacks).

What the text cannot settle (a value computed at run time, a tool id built from strings) is left
to the run, which checks each call against its schema with the same code and message. A problem
inside a ``try`` whose handler catches what it raises is not one (the snippet handles it).

``ty`` runs in a warm session kept per set of modules and catalog version: the snippet is wrapped
in a function that is only defined, never called, so nothing executes. When the checker itself
fails (no worker, a timeout), the snippet is not rejected: the failure is logged and the run goes
on unchecked.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, cast

import anyio
import pydantic_monty as pm

from toolcode._compat_monty import find_monty_binary
from toolcode._globals import globals_stub
from toolcode._modules import PACKAGE, ToolModules
from toolcode._typecheck._arguments import ArgumentChecker
from toolcode._typecheck._calls import Scan, ToolCall, scan
from toolcode._typecheck._diagnostic import Diagnostic, Handlers, Positions
from toolcode._typecheck._source import CHECKER_HELPERS, checked_source
from toolcode._typecheck._verdicts import certain, parse, subscript_keys
from toolcode._view import CatalogView
from toolcode.exceptions import ErrorCode
from toolindex import Tool, ToolIndexError
from toolindex.log import get_logger
from toolrun import CompiledSchema, ToolRunError, watchdog_executable

__all__ = ["GLOBALS_STUB", "TypeChecker"]

_log = get_logger("toolcode.typecheck")

GLOBALS_STUB: Final = globals_stub()
"""What the type checker knows of the snippet globals (built from :data:`~toolcode.SNIPPET_GLOBALS`)."""

_WRAP = "async def __toolcode_check__():\n"
_CHECKS_PER_SESSION = 400


def _about_snippets(d: Diagnostic) -> bool:
    # A snippet saved by this very run is a tool once that line has run.
    return "snippets:" in d.message or "tools.snippets" in d.message or "'snippets'" in d.message


def _near(name: str, choices: Iterable[str]) -> str:
    found = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.6)
    return f"; did you mean {', '.join(repr(f) for f in found)}?" if found else ""


class TypeChecker:
    """Checks snippets before they run (see the module docstring).

    One warm checker session serves every check: it holds the modules snippets have imported
    so far (up to ``max_modules``), and is replaced by one holding one more module when a
    snippet imports a new one, or by a fresh one when the catalog changes. Checks are
    serialised on it (a warm check takes about a millisecond).

    Args:
        modules: The catalog's namespace modules (names and stubs).
        max_modules: Modules one session may hold before it starts over with just what a
            snippet needs.
        timeout: Seconds a check may take before the run goes on unchecked.
    """

    def __init__(self, modules: ToolModules, *, max_modules: int = 32, timeout: float = 10.0) -> None:
        self._modules = modules
        self._max_modules = max_modules
        self._timeout = timeout
        self._pool: pm.AsyncMonty | None = None
        self._lock = anyio.Lock()
        self._session: _Session | None = None
        self._schemas: dict[str, CompiledSchema | None] = {}
        self._schemas_version = -1

    @property
    def modules(self) -> ToolModules:
        """The namespace modules checked against."""
        return self._modules

    async def check(self, code: str, view: CatalogView, *, preamble: Sequence[str] = ()) -> list[Diagnostic]:
        """The problems of ``code``, in line order (empty: nothing found, or nothing to check).

        Args:
            code: The snippet.
            view: The caller's view of the catalog (what it may import and call).
            preamble: Lines that ran before ``code`` (a session's earlier ``tools`` imports):
                checked with it, never reported.

        Returns:
            The diagnostics; a snippet that does not parse gives none (the engine reports it).
        """
        if preamble:
            shift = len(preamble)
            found = await self.check("\n".join(preamble) + "\n" + code, view)
            return [dataclasses.replace(d, line=d.line - shift, fails_at=None) for d in found if d.line > shift]
        if PACKAGE not in code and "run_tool" not in code:
            return []  # nothing that names a tool: no parse
        try:
            flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
            tree = cast(ast.Module, compile(code, "snippet.py", "exec", flags=flags, dont_inherit=True))
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return []
        positions = Positions(code)
        found = scan(tree)
        out, visible = self._names(found, view, positions)
        arguments = ArgumentChecker(view, self._input_schema)
        calls: list[tuple[ToolCall, Tool]] = []
        for call in found.calls:
            if call.module is not None:
                tool = self._tool_of(call, visible)
                if tool is not None:
                    calls.append((call, tool))
                continue
            unknown = arguments.unknown_tool(call, positions)
            if unknown is not None:
                out.append(unknown)
                continue
            assert call.tool_id is not None
            calls.append((call, view.get(call.tool_id)))
        out.extend(arguments.check(tree, found, calls, positions))
        if visible:
            out.extend(await self._typecheck(code, tree, found, visible, positions))
        if found.saves_snippets:
            out = [d for d in out if not _about_snippets(d)]
        handlers = Handlers(tree, positions)
        out = [d for d in out if not handlers.catch(d)]
        unique = {(d.line, d.column, d.message): d for d in out}
        return sorted(unique.values(), key=lambda d: (d.line, d.column))

    def _names(self, found: Scan, view: CatalogView, positions: Positions) -> tuple[list[Diagnostic], dict[str, str]]:
        """Unknown modules and unknown functions of known ones; the visible modules named (name → namespace)."""
        out: list[Diagnostic] = []
        visible: dict[str, str] = {}
        for name, node in sorted(found.modules.items()):
            ns = self._modules.namespace_of(name)
            if ns is not None and view.visible(ns):
                visible[name] = ns
                continue
            near = _near(name, self._visible_modules(view))
            msg = f"no namespace module `{PACKAGE}.{name}`{near} (list_namespaces() lists the namespaces)"
            out.append(positions.at(node, msg, "unknown-module", ErrorCode.UNKNOWN_TOOL, "ImportError"))
        for ref in found.references:
            ns = visible.get(ref.module)
            if ns is None:
                continue
            functions = self._modules.functions(ns)
            if ref.name not in functions:
                msg = (
                    f"module '{PACKAGE}.{ref.module}' has no attribute '{ref.name}'{_near(ref.name, functions)} "
                    f"(list_tools({ns!r}) lists its tools)"
                )
                out.append(positions.at(ref.node, msg, "unknown-tool", ErrorCode.UNKNOWN_TOOL, "AttributeError"))
        return out, visible

    def _input_schema(self, tool: Tool) -> CompiledSchema | None:
        """The tool's input schema compiled, once per catalog version (``None``: it does not compile)."""
        version = self._modules.version
        if version != self._schemas_version or len(self._schemas) > 4096:
            self._schemas.clear()
            self._schemas_version = version
        if tool.id not in self._schemas:
            try:
                self._schemas[tool.id] = CompiledSchema(tool.input_schema)
            except ToolRunError:
                self._schemas[tool.id] = None
        return self._schemas[tool.id]

    def _tool_of(self, call: ToolCall, visible: Mapping[str, str]) -> Tool | None:
        assert call.module is not None
        ns = visible.get(call.module.module)
        fn = self._modules.functions(ns).get(call.module.name) if ns is not None else None
        if fn is None:
            return None
        try:
            return self._modules.index.get(fn.tool_id)
        except ToolIndexError:
            return None

    def _visible_modules(self, view: CatalogView) -> list[str]:
        names = (self._modules.module_name(n.name) for n in view.namespaces())
        return [n for n in names if n is not None]

    async def _typecheck(
        self, code: str, tree: ast.Module, found: Scan, visible: Mapping[str, str], positions: Positions
    ) -> list[Diagnostic]:
        """``ty``'s certain findings: what the snippet does with the tools' typed results."""
        source = checked_source(code, tree, found.bindings)
        wrapped = _wrapped(source.text)
        if wrapped is None:
            return []  # the engine reports what is wrong with it
        try:
            with anyio.fail_after(self._timeout):
                async with self._lock:
                    try:
                        session = await self._session_for(visible)
                        rendered = await session.check(wrapped)
                    except BaseException:
                        # A check cut short (the run's timeout, a failure) leaves the session in
                        # an unknown state: it is not reused.
                        with anyio.CancelScope(shield=True):
                            await self._drop_session()
                        raise
        except (TimeoutError, pm.MontyError, OSError) as e:
            _log.warning("typecheck.unavailable", error=repr(e)[:300])
            return []
        stores = subscript_keys(tree, positions)
        out: list[Diagnostic] = []
        for f in parse(rendered):
            if f.line < 2:
                continue  # the wrapper's own line
            at = source.original(f.line - 1, max(1, f.column - 4))
            raised = certain(f, stores, at)
            if raised is not None:
                out.append(Diagnostic(at[0], at[1], f.message, f.rule, ErrorCode.RUNTIME_ERROR, raised))
        return out

    async def _session_for(self, visible: Mapping[str, str]) -> _Session:
        """The warm session, replaced when it lacks a module, the catalog moved or it is worn."""
        version = self._modules.version
        needed = {name: ns for name, ns in visible.items()}
        old = self._session
        if old is not None and old.version == version and old.checks < _CHECKS_PER_SESSION:
            if needed.keys() <= old.modules.keys():
                return old
            if len(old.modules) + len(needed) <= self._max_modules:
                needed = {**old.modules, **needed}
        await self._drop_session()
        pool = await self._get_pool()
        package: dict[str, Any] = {}
        for name, ns in needed.items():
            module = self._modules.module(ns)
            if module is not None:
                package[name] = pm.ExternalModule(dict.fromkeys(module.functions, _placeholder), stubs=module.stub)
        checkout = pool.checkout(
            # The session only ever defines a function; limits in case a snippet finds a way out of it.
            limits={"max_feed_duration_secs": self._timeout, "max_memory": 64 * 1024 * 1024, "max_suspensions": 10_000},
            type_check=True,
            type_check_stubs=GLOBALS_STUB + CHECKER_HELPERS,
            type_check_format="concise",
            external_modules={PACKAGE: pm.ExternalModule(package, stubs="")},
        )
        session = _Session(checkout, version, needed)
        self._session = session
        await session.open([f"import {PACKAGE}.{name}" for name in needed])
        return session

    async def _drop_session(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def _get_pool(self) -> pm.AsyncMonty:
        if self._pool is None:
            binary = watchdog_executable(find_monty_binary(None))
            pool = pm.AsyncMonty(binary_path=binary, min_processes=1, max_processes=2)
            await pool.__aenter__()
            self._pool = pool
        return self._pool

    async def aclose(self) -> None:
        """Close the warm session and the worker pool; idempotent (a later check starts them again)."""
        async with self._lock:
            await self._drop_session()
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.__aexit__(None, None, None)


MAX_CHECKED_CHARS: Final = 200_000
"""Longer snippets are not type-checked (they run unchecked)."""


def _wrapped(code: str) -> str | None:
    """The snippet as the body of a function that is defined, never called; ``None`` if it cannot be.

    Every line is indented, so every statement is the function's; the result is parsed here to
    make sure of it (a form feed, say, resets Python's indentation count), so that nothing of
    the snippet runs in the checker.
    """
    if len(code) > MAX_CHECKED_CHARS:
        return None
    wrapped = f"{_WRAP}{textwrap.indent(code, '    ')}\n    pass\n"
    try:
        tree = ast.parse(wrapped, "snippet.py", "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.AsyncFunctionDef):
        return None
    fn = tree.body[0]
    if fn.decorator_list or fn.args.defaults or fn.args.kw_defaults or fn.returns is not None:
        return None
    return wrapped


def _placeholder(**_kwargs: Any) -> None:
    """Stands for a tool in the checker's modules (the checker never runs code)."""


class _Session:
    """One warm checker session: type checking is on, the snippet is only ever defined, not run."""

    def __init__(self, checkout: pm.AsyncMontySession, version: int, modules: Mapping[str, str]) -> None:
        self._checkout = checkout
        self.version = version
        self.modules = dict(modules)
        """Module name → namespace, for every module this session can check."""
        self.checks = 0
        self._open = False

    async def open(self, imports: Sequence[str]) -> None:
        await self._checkout.__aenter__()
        self._open = True
        if imports:
            # Resolves the modules once, so the wrapped snippets below can import them.
            await self._checkout.feed_run("\n".join(imports))

    async def check(self, wrapped: str) -> str:
        """``ty``'s diagnostics for a wrapped snippet (concise format), or ``""``."""
        self.checks += 1
        try:
            await self._checkout.feed_run(wrapped)
        except pm.MontyTypingError as e:
            return e.display()
        except pm.MontyError:
            # The wrapped snippet does not parse or define (a ``from __future__`` line, say): the
            # engine reports what is wrong with it when it runs.
            return ""
        return ""

    async def close(self) -> None:
        if self._open:
            self._open = False
            try:
                await self._checkout.__aexit__(None, None, None)
            except pm.MontyError as e:
                _log.debug("typecheck.session_close_failed", error=repr(e)[:300])
