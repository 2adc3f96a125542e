"""Check a snippet against its tools' signatures before anything runs.

Two checks, both before the engine sees the code:

- **Namespace modules** (``from tools import github``; ``github.list_issues(owner=...)``): the
  snippet is type-checked by ``ty`` (inside a pydantic-monty worker) against the stubs of the
  modules it imports — unknown tools, unknown or missing parameters, wrong argument types
  (``Literal`` values included), wrong arity, misuse of a typed result. The check runs in a warm
  session kept per set of modules and catalog version: the snippet is wrapped in a function
  that is only defined, never called, so nothing executes, and a check costs about a
  millisecond once the session is warm.
- **Literal ids** (``run_tool("github:list_issues", {...}, page=2)``, ``run_tools([...])``): the
  id must name a visible tool; argument names must be its parameters, required ones present,
  and constant values must satisfy their schema.

Types are loose wherever the truth is uncertain (see :data:`~toolcode._modules.CHECKER_RENDER_OPTIONS`):
the check must never reject a snippet that would run correctly. When the checker itself
fails (no worker, a timeout), the snippet is not rejected: the failure is logged and the run
goes on unchecked.
"""

from __future__ import annotations

import ast
import difflib
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

import anyio
import pydantic_monty as pm
from pydantic_monty._binary import find_monty_binary  # pyright: ignore[reportPrivateUsage]

from toolcode._globals import globals_stub
from toolcode._modules import ASYNC_SUFFIX, PACKAGE, ToolModules
from toolcode._view import CatalogView
from toolindex import Tool, ToolIndexError
from toolindex.log import get_logger
from toolrun import CompiledSchema, watchdog_executable

__all__ = ["GLOBALS_STUB", "Diagnostic", "TypeChecker"]

_log = get_logger("toolcode.typecheck")

GLOBALS_STUB: Final = globals_stub()
"""What the type checker knows of the snippet globals (built from :data:`~toolcode.SNIPPET_GLOBALS`)."""

_WRAP = "async def __toolcode_check__():\n"
_LINE = re.compile(r"^[^:\n]*:(\d+):(\d+): error\[([\w-]+)\] (.*)$")
_CHECKS_PER_SESSION = 400
_NOT_REPORTED = frozenset({"unresolved-reference"})
"""ty rules the check does not report: a name it cannot see may come from an earlier run of the
session, or sit on a line that never runs; the run itself reports a real ``NameError``."""
_MEMBER = re.compile(r"Module `tools\.(\w+)` has no member `(\w+)`")
_TOOLS_MEMBER = re.compile(r"Module `tools` has no member `(\w+)`")
_ARG = re.compile(r"Argument `(\w+)` does not match any known parameter of function `(\w+)`")


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found before the run, at a line and column of the snippet."""

    line: int
    column: int
    message: str
    rule: str = "type"
    """``ty``'s rule (``unknown-argument``, ``invalid-argument-type``, ...) or ours (``unknown-tool``, ...)."""

    def render(self) -> str:
        """``line L, column C: message``."""
        return f"line {self.line}, column {self.column}: {self.message}"


@dataclass(slots=True)
class _Scan:
    modules: dict[str, tuple[int, int]] = field(default_factory=dict[str, tuple[int, int]])
    """Each ``tools`` module named, with where it is first named (line, column)."""
    literal_calls: list[ast.Call] = field(default_factory=list[ast.Call])
    saves_snippets: bool = False
    """The snippet calls ``save_snippet``: tools of the ``snippets`` namespace may appear as it runs."""


def _scan(tree: ast.AST) -> _Scan:
    """The ``tools`` modules a snippet names and its ``run_tool`` calls with a literal id."""
    out = _Scan()

    def named(module: str, node: ast.AST) -> None:
        at = (getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1)
        if module not in out.modules or at < out.modules[module]:
            out.modules[module] = at

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            head, _, rest = node.module.partition(".")
            if head != PACKAGE:
                continue
            if rest:
                named(rest.split(".")[0], node)
            else:
                for a in node.names:
                    if a.name != "*":
                        named(a.name, node)
        elif isinstance(node, ast.Import):
            for a in node.names:
                head, _, rest = a.name.partition(".")
                if head == PACKAGE and rest:
                    named(rest.split(".")[0], node)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == PACKAGE:
            named(node.attr, node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "save_snippet":
                out.saves_snippets = True
            if node.func.id in ("run_tool", "run_tool" + ASYNC_SUFFIX) and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    out.literal_calls.append(node)
            elif node.func.id in ("run_tools", "run_tools" + ASYNC_SUFFIX) and node.args:
                calls = node.args[0]
                if isinstance(calls, ast.List | ast.Tuple):
                    out.literal_calls.extend(_calls_of(calls.elts))
    return out


def _calls_of(elements: Sequence[ast.expr]) -> list[ast.Call]:
    # ``run_tools([("ns:x", {...}), ...])``: each literal pair becomes a run_tool-shaped call to check.
    out: list[ast.Call] = []
    for e in elements:
        if isinstance(e, ast.Tuple | ast.List) and e.elts and isinstance(e.elts[0], ast.Constant):
            if isinstance(e.elts[0].value, str):
                call = ast.Call(func=ast.Name("run_tool"), args=list(e.elts[:2]), keywords=[])
                ast.copy_location(call, e)
                out.append(call)
    return out


def _about_snippets(d: Diagnostic) -> bool:
    m = d.message
    return (
        (d.rule == "unknown-tool" and m.startswith("unknown tool 'snippets:"))
        or (d.rule == "unknown-module" and "`tools.snippets`" in m)
        or "tools.snippets" in m
        or (d.rule.startswith("unresolved") and "snippets" in m)
    )


def _near(name: str, choices: Iterable[str]) -> str:
    found = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.6)
    return f"; did you mean {', '.join(repr(f) for f in found)}?" if found else ""


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


class _LiteralChecker:
    """Checks ``run_tool`` calls whose tool id is a string literal, against the tool's input schema."""

    def __init__(self, view: CatalogView) -> None:
        self._view = view

    def check(self, call: ast.Call) -> list[Diagnostic]:
        first = cast(ast.Constant, call.args[0])
        tool_id = cast(str, first.value)
        at = (first.lineno, first.col_offset + 1)
        try:
            tool = self._view.get(tool_id)
        except ToolIndexError:
            near = self._view.suggest(tool_id)
            hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
            return [Diagnostic(*at, f"unknown tool {tool_id!r}{hint}", "unknown-tool")]
        given, complete = self._arguments(call)
        return self._against_schema(tool, given, complete, call)

    @staticmethod
    def _arguments(call: ast.Call) -> tuple[dict[str, tuple[ast.AST, ast.expr]], bool]:
        """Argument name → (where, value node); ``complete`` when every argument is visible here."""
        given: dict[str, tuple[ast.AST, ast.expr]] = {}
        complete = True
        if len(call.args) > 1:
            args = call.args[1]
            if isinstance(args, ast.Dict):
                for k, v in zip(args.keys, args.values, strict=True):
                    if k is None or not isinstance(k, ast.Constant) or not isinstance(k.value, str):
                        complete = False  # ``**spread`` or a computed key
                        continue
                    given[k.value] = (k, v)
            elif not (isinstance(args, ast.Constant) and args.value is None):
                complete = False  # a variable: its keys are unknown here
        for kw in call.keywords:
            if kw.arg is None:
                complete = False
            else:
                given[kw.arg] = (kw, kw.value)
        return given, complete

    def _against_schema(
        self, tool: Tool, given: Mapping[str, tuple[ast.AST, ast.expr]], complete: bool, call: ast.Call
    ) -> list[Diagnostic]:
        schema = tool.input_schema
        props = schema.get("properties")
        properties = cast(dict[str, Any], props) if isinstance(props, dict) else {}
        out: list[Diagnostic] = []
        closed = bool(properties) and not _admits_extra(schema)
        for name, (where, value) in given.items():
            wire = name if name in properties else _wire_of(name, properties)
            line, col = getattr(where, "lineno", call.lineno), getattr(where, "col_offset", call.col_offset) + 1
            if wire is None:
                if closed:
                    msg = f"{tool.id} has no parameter {name!r}{_near(name, properties)}"
                    out.append(Diagnostic(line, col, msg, "unknown-argument"))
                continue
            ok, constant = _literal(value)
            if not ok:
                continue
            sub = properties.get(wire)
            if not isinstance(sub, dict | bool):
                continue
            try:
                compiled = CompiledSchema(
                    _with_defs(cast(dict[str, Any], sub) if isinstance(sub, dict) else sub, schema)
                )
            except Exception:
                continue
            if not compiled.is_valid(constant):
                problem = compiled.problems(constant)
                why = problem[0].message if problem else "it does not match the parameter's schema"
                vline, vcol = value.lineno, value.col_offset + 1
                out.append(Diagnostic(vline, vcol, f"argument {name!r} of {tool.id}: {why}", "invalid-argument-type"))
        if complete:
            req = schema.get("required")
            required = [r for r in cast(list[Any], req) if isinstance(r, str)] if isinstance(req, list) else []
            idents = {_ident_of(r): r for r in required}
            missing = [r for r in required if r not in given and not any(idents.get(g) == r for g in given)]
            if missing:
                names = ", ".join(repr(m) for m in missing)
                out.append(Diagnostic(call.lineno, call.col_offset + 1, f"{tool.id} needs {names}", "missing-argument"))
        return out


def _admits_extra(schema: Mapping[str, Any]) -> bool:
    extra = schema.get("additionalProperties")
    return extra is True or isinstance(extra, dict) or bool(schema.get("patternProperties"))


def _ident_of(wire: str) -> str:
    from tooldocs import py_identifier

    return py_identifier(wire)


def _wire_of(name: str, properties: Mapping[str, Any]) -> str | None:
    # A keyword may use the signature's identifier for a wire name (``from_`` for ``from``).
    for wire in properties:
        if _ident_of(wire) == name:
            return wire
    return None


def _with_defs(sub: dict[str, Any] | bool, root: Mapping[str, Any]) -> dict[str, Any] | bool:
    # A property may refer to the root's definitions: carry them along so its $refs resolve.
    if isinstance(sub, bool):
        return sub
    defs = {k: root[k] for k in ("$defs", "definitions") if k in root}
    return {**defs, **sub} if defs else sub


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
            return [Diagnostic(d.line - shift, d.column, d.message, d.rule) for d in found if d.line > shift]
        if PACKAGE not in code and "run_tool" not in code:
            return []  # nothing that names a tool: no parse
        try:
            flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
            tree = cast(ast.Module, compile(code, "snippet.py", "exec", flags=flags, dont_inherit=True))
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return []
        scan = _scan(tree)
        found: list[Diagnostic] = []
        literal = _LiteralChecker(view)
        for call in scan.literal_calls:
            found.extend(literal.check(call))
        if scan.modules:
            visible: dict[str, str] = {}
            unknown_lines: set[int] = set()
            for name, (line, col) in sorted(scan.modules.items()):
                ns = self._modules.namespace_of(name)
                if ns is not None and view.visible(ns):
                    visible[name] = ns
                    continue
                unknown_lines.add(line)
                near = _near(name, self._visible_modules(view))
                msg = f"no namespace module `{PACKAGE}.{name}`{near} (list_namespaces() lists the namespaces)"
                found.append(Diagnostic(line, col, msg, "unknown-module"))
            checked = await self._typecheck(code, visible) if visible else []
            # The checker reports an unknown module again, as an unresolved import: once is enough.
            found.extend(d for d in checked if not (d.line in unknown_lines and d.rule.startswith("unresolved")))
        if scan.saves_snippets:
            # A snippet saved by this very run is a tool once that line has run: nothing about
            # the snippets namespace can be known before.
            found = [d for d in found if not _about_snippets(d)]
        return sorted(found, key=lambda d: (d.line, d.column))

    def _visible_modules(self, view: CatalogView) -> list[str]:
        names = (self._modules.module_name(n.name) for n in view.namespaces())
        return [n for n in names if n is not None]

    async def _typecheck(self, code: str, visible: Mapping[str, str]) -> list[Diagnostic]:
        wrapped = _wrapped(code)
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
        return self._diagnostics(rendered, visible)

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
            type_check_stubs=GLOBALS_STUB,
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

    def _diagnostics(self, rendered: str, visible: Mapping[str, str]) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        for text in rendered.splitlines():
            m = _LINE.match(text.strip())
            if m is None:
                continue
            line, col, rule, message = int(m.group(1)) - 1, int(m.group(2)) - 4, m.group(3), m.group(4)
            if line < 1 or rule in _NOT_REPORTED:
                continue  # the wrapper's own line, or a rule that is not about tools
            out.append(Diagnostic(line, max(1, col), self._explain(rule, message, visible), rule))
        return out

    def _explain(self, rule: str, message: str, visible: Mapping[str, str]) -> str:
        """Ty's message, with "did you mean" for names it does not suggest itself."""
        if m := _MEMBER.search(message):
            module, name = m.groups()
            ns = visible.get(module)
            functions = self._modules.functions(ns) if ns is not None else {}
            return message + _near(name, functions) + f" (list_tools({ns!r}) lists them)"
        if m := _TOOLS_MEMBER.search(message):
            return message + _near(m.group(1), visible) + " (namespaces are listed by list_namespaces())"
        if m := _ARG.search(message):
            return message + _near(m.group(1), self._parameters(m.group(2), visible))
        if rule == "unresolved-import" and PACKAGE in message:
            return message + " (namespaces are listed by list_namespaces())"
        return message

    def _parameters(self, function: str, visible: Mapping[str, str]) -> list[str]:
        """The keyword names of ``function`` in the snippet's modules (the first module that has it)."""
        for ns in visible.values():
            fn = self._modules.functions(ns).get(function)
            if fn is None:
                continue
            try:
                tool = self._modules.index.get(fn.tool_id)
            except ToolIndexError:
                return []
            props = tool.input_schema.get("properties")
            return [_ident_of(p) for p in cast(dict[str, Any], props)] if isinstance(props, dict) else []
        return []

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
