"""What a snippet's text says it will call, with arguments known before it runs: read before the run.

The call sites come from the check's scan (:func:`toolcode._typecheck.parsed`: ``run_tool("ns:x", ...)``,
its awaitable form, the literal pairs of ``run_tools``, and ``from tools import ns`` then ``ns.x(...)``).
A site's arguments are *known* when they are made of literals, module constants (a name the snippet
binds once, at the top, to a known value) and the run's ``input``. A site inside a loop or a
comprehension whose only tool call it is, its arguments made of the loop's variables and known
values, is known per element: at once when the loop walks a known value (``for n in [1, 2, 3]``,
``range(5)``), or as soon as the call whose result it walks returns (``for i in gh.list_issues(...)``,
or a name bound once to that call).

Nothing here is trusted: a value this evaluator gets wrong only makes a call the snippet never
matches, which is thrown away (the run compares each call's tool and arguments exactly).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

from toolcode._module_views import ModulesView
from toolcode._modules import PACKAGE
from toolcode._typecheck import MAX_CHARS, Scan, ToolCall, parsed
from toolcode.calls._known import Env, Unknown, bind, holds, iterable, value

__all__ = ["EarlyCall", "Foresight", "LoopCalls", "foresee", "key_of"]

_RUNNERS: Final = frozenset(
    {"run_tool", "run_tools", "run_chain", "run_tool_async", "run_tools_async", "run_chain_async"}
)
_MAX_KEY: Final = 100_000
_LOOPS: Final = (ast.For, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_SCOPES: Final = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)

_MISREAD: Final = (Unknown, RecursionError, TypeError, ValueError, LookupError, AttributeError)
"""What reading a text (or a result) the evaluator does not follow may raise: never the run's failure."""

Key = tuple[str, str]
"""A call as the run compares it: the tool id as written, and its arguments as canonical JSON."""


def key_of(tool_id: str, args: Mapping[str, Any]) -> Key | None:
    """The key of a call; ``None`` for arguments that are not plain JSON data (such a call is never held)."""
    try:
        text = json.dumps(args, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return None
    return (tool_id, text) if len(text) <= _MAX_KEY else None


@dataclass(frozen=True, slots=True)
class EarlyCall:
    """A call the snippet makes with arguments known before it runs."""

    at: tuple[int, int]
    """Where the call is written (line, column)."""
    tool_id: str
    args: dict[str, Any]
    """The arguments object (wire names), or the keywords of a module function (identifiers)."""
    keywords: bool = False
    """``args`` are a module function's keywords: their wire names come from the tool's signature."""


@dataclass(frozen=True, slots=True)
class LoopCalls:
    """A loop's calls, known as soon as the call whose result it walks returns."""

    at: tuple[int, int]
    source: EarlyCall
    """The call whose result the loop walks."""
    calls: Callable[[Any], list[EarlyCall]]
    """The loop's calls for that result (empty when what the loop walks cannot be worked out)."""


@dataclass(frozen=True, slots=True)
class Foresight:
    """What :func:`foresee` found."""

    calls: list[EarlyCall] = field(default_factory=list[EarlyCall])
    """Calls whose arguments are known now."""
    loops: list[LoopCalls] = field(default_factory=list[LoopCalls])
    """Loops of calls known once an earlier call returns."""
    sites: list[tuple[tuple[int, int], str | None]] = field(default_factory=list[tuple[tuple[int, int], str | None]])
    """Every place the snippet calls a tool, with the tool id (``None``: computed, or a chain)."""


def _stored(nodes: Iterable[ast.AST]) -> set[str]:
    out: set[str] = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                out.add(n.id)
    return out


class _Reader:
    """Reads one parsed snippet against the catalog's modules and the run's input."""

    def __init__(
        self, tree: ast.Module, found: Scan, modules: ModulesView, given: Any, may_start: Callable[[str], bool]
    ) -> None:
        self.found = found
        self.modules = modules
        self.may_start = may_start
        names: dict[str, Any] = {}
        if not found.bindings["input"]:
            names["input"] = given
        self.env = Env(names)
        self.sites: dict[ast.Call, tuple[str, ToolCall]] = {}
        for c in found.calls:
            tool_id = self._tool_id(c)
            if tool_id is not None:
                self.sites[c.node] = (tool_id, c)
        self.tree = tree
        self.from_call: dict[str, ast.Call] = {}

    def _constants(self) -> None:
        """Module constants and names bound once to a call's result, in the order the module binds them."""
        found, names = self.found, self.env.names
        for stmt in self.tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, expr = stmt.targets[0], stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                target, expr = stmt.target, stmt.value
            else:
                continue
            if not isinstance(target, ast.Name):
                continue
            name = target.id
            if found.bindings[name] != 1:
                continue
            inner = expr.value if isinstance(expr, ast.Await) else expr
            if isinstance(inner, ast.Call) and inner in self.sites:
                self.from_call[name] = inner
                continue
            try:
                names[name] = value(expr, self.env)
            except Unknown:
                pass

    def _tool_id(self, c: ToolCall) -> str | None:
        if c.tool_id is not None:
            return c.tool_id
        assert c.module is not None
        ns = self.modules.namespace_of(c.module.module)
        fn = self.modules.functions(ns).get(c.module.name) if ns is not None else None
        return fn.tool_id if fn is not None else None

    def args(self, c: ToolCall, env: Env) -> tuple[dict[str, Any], bool]:
        """A call's arguments (and whether they are a module function's keywords), or :class:`Unknown`."""
        if c.positional:
            raise Unknown
        keywords: dict[str, Any] = {}
        for k in c.keywords:
            if k.arg is None:
                raise Unknown
            keywords[k.arg] = value(k.value, env)
        if c.module is not None or c.args is None:
            return keywords, True
        given: Any = value(c.args, env)
        if not isinstance(given, dict) or keywords:  # keywords over an object: leave the merge to the run
            raise Unknown
        return cast("dict[str, Any]", given), False

    def loop_of(self, node: ast.AST) -> ast.AST | None:
        """The loop or comprehension the call is made in, directly (not through a function)."""
        parent = self.found.parents.get(node)
        while parent is not None and not isinstance(parent, _SCOPES):
            if isinstance(parent, _LOOPS):
                return parent
            parent = self.found.parents.get(parent)
        return None

    def read(self) -> Foresight:
        out = Foresight()
        if not any(self.may_start(tool_id) for tool_id, _ in self.sites.values()):
            return out  # nothing may start early: the rest of the text does not matter
        self._constants()
        by_loop: dict[ast.AST, list[ast.Call]] = {}
        for node in self.sites:
            loop = self.loop_of(node)
            if loop is not None:
                by_loop.setdefault(loop, []).append(node)
        for node, (tool_id, c) in self.sites.items():
            at = (node.lineno, node.col_offset)
            out.sites.append((at, tool_id))
            if not self.may_start(tool_id):
                continue
            loop = self.loop_of(node)
            try:
                if loop is None:
                    args, kw = self.args(c, self.env)
                    out.calls.append(EarlyCall(at, tool_id, args, kw))
                elif len(by_loop[loop]) == 1 and self.loop_site_count(loop) == 1:
                    self._loop(loop, node, tool_id, c, out)
            except (Unknown, RecursionError):
                continue
        out.sites.extend(self.other_sites())
        out.sites.sort(key=lambda s: s[0])
        return out

    def loop_site_count(self, loop: ast.AST) -> int:
        """Tool calls in the loop, those this reader cannot name included."""
        return sum(1 for n in ast.walk(loop) if isinstance(n, ast.Call) and (n in self.sites or self._runner(n)))

    def _runner(self, node: ast.Call) -> bool:
        return isinstance(node.func, ast.Name) and node.func.id in _RUNNERS and not self.found.bindings[node.func.id]

    def other_sites(self) -> list[tuple[tuple[int, int], str | None]]:
        """Calls of tools this reader cannot name: a computed id, a chain, a module function it cannot resolve."""
        out: list[tuple[tuple[int, int], str | None]] = []
        named = {c.node for c in self.found.calls}
        for node in self.found.parents:
            if not isinstance(node, ast.Call) or node in self.sites:
                continue
            if self._runner(node) and node not in named and not self._literal_pairs(node):
                out.append(((node.lineno, node.col_offset), None))
            elif node in named:
                out.append(((node.lineno, node.col_offset), None))  # a module function this catalog lacks
        return out

    def _literal_pairs(self, node: ast.Call) -> bool:
        """``run_tools([...])`` whose every pair the scan named (their sites stand for it)."""
        if not isinstance(node.func, ast.Name) or node.func.id not in ("run_tools", "run_tools_async"):
            return False
        first = node.args[0] if node.args else None
        if not isinstance(first, ast.List | ast.Tuple):
            return False
        inside = {c.node.lineno * 100_000 + c.node.col_offset for c in self.found.calls if c.tool_id is not None}
        return all(e.lineno * 100_000 + e.col_offset in inside for e in first.elts)

    def _loop(self, loop: ast.AST, node: ast.Call, tool_id: str, c: ToolCall, out: Foresight) -> None:
        if isinstance(loop, ast.For):
            target, walked, ifs, body = loop.target, loop.iter, [], loop.body
            if loop.orelse:
                raise Unknown
        else:
            comp = cast("ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp", loop)
            if len(comp.generators) != 1 or comp.generators[0].is_async:
                raise Unknown
            gen = comp.generators[0]
            target, walked, ifs = gen.target, gen.iter, gen.ifs
            body = [comp.key, comp.value] if isinstance(comp, ast.DictComp) else [comp.elt]
        loop_names = _stored([target])
        if loop_names & _stored(body):  # a loop variable changed in the body: the call's arguments are not its own
            raise Unknown
        at = (node.lineno, node.col_offset)

        def calls(env: Env) -> list[EarlyCall]:
            out: list[EarlyCall] = []
            for item in iterable(walked, env):
                names = dict(env.names)
                try:
                    bind(target, item, names)
                    each = Env(names, env.results)
                    if not all(holds(cond, each) for cond in ifs):
                        continue
                    args, kw = self.args(c, each)
                except (Unknown, RecursionError):
                    continue
                out.append(EarlyCall(at, tool_id, args, kw))
            return out

        source = self._source(walked)
        if source is None:
            out.calls.extend(calls(self.env))
            return
        name, call = source
        src_id, src = self.sites[call]
        src_args, src_kw = self.args(src, self.env)

        def walk(result: Any) -> list[EarlyCall]:
            env = Env({**self.env.names, name: result} if name else self.env.names, {call: result})
            try:
                return calls(env)
            except _MISREAD:  # what the loop walks is not what this reader thought: nothing starts
                return []

        out.loops.append(LoopCalls(at, EarlyCall((call.lineno, call.col_offset), src_id, src_args, src_kw), walk))

    def _source(self, iterable: ast.expr) -> tuple[str, ast.Call] | None:
        """The call whose result the loop walks (with the name bound to it), or ``None``: nothing the run waits for."""
        for n in ast.walk(iterable):
            if isinstance(n, ast.Call) and n in self.sites:
                return "", n
            if isinstance(n, ast.Name) and n.id in self.from_call:
                return n.id, self.from_call[n.id]
        return None


def foresee(
    code: str, modules: ModulesView, given: Any, may_start: Callable[[str], bool] = lambda _: True
) -> Foresight | None:
    """The calls of a snippet whose tool and arguments are known before it runs (see the module docstring).

    Args:
        code: The snippet.
        modules: The namespace modules as the run's view holds them (``from tools import ns``).
        given: The run's ``input``.
        may_start: Whether calls of a tool id (as written) may start early: the others are only sites.

    Returns:
        The calls known now, the loops known later, and every tool-call site; ``None`` when there is
        nothing to start (no such call, no tool named, a snippet too long to be checked, or one that
        does not parse).
    """
    if len(code) > MAX_CHARS or ("run_tool" not in code and PACKAGE not in code):
        return None
    read = parsed(code)
    if read is None:
        return None
    try:
        seen = _Reader(read[0], read[1], modules, given, may_start).read()
    except _MISREAD:  # a text this reader cannot follow: nothing starts early, the run goes on
        return None
    return seen if seen.calls or seen.loops else None
