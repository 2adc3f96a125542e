"""What a snippet's text says about its tools: the modules it imports, the functions it names, its calls.

Both call styles are found here, from the syntax alone:

- module style: ``from tools import helpdesk`` (or ``import tools.helpdesk [as hd]``,
  ``from tools.helpdesk import on_call [as oc]``), then ``helpdesk.on_call(office=...)``;
- literal ids: ``run_tool("helpdesk:on_call", {...}, k=v)``, ``run_tool_async(...)`` and the
  literal pairs of ``run_tools([...])``.

A name counts as a module (or a tool function) only when the snippet binds it by that import
and nothing else: a name rebound anywhere is left alone, as is everything the syntax cannot
settle (a tool id computed at run time, a module passed around). The run checks those calls.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from toolcode._modules import ASYNC_SUFFIX, PACKAGE
from toolcode._names import bound_names
from toolcode._typecheck._syntax import readable

__all__ = ["Scan", "ToolCall", "ToolReference", "parsed", "scan"]

RUN_TOOL: frozenset[str] = frozenset({"run_tool", "run_tool" + ASYNC_SUFFIX})
RUN_TOOLS: frozenset[str] = frozenset({"run_tools", "run_tools" + ASYNC_SUFFIX})


@dataclass(frozen=True, slots=True)
class ToolReference:
    """``<module>.<name>`` as the snippet writes it (an attribute, or a ``from tools.<module> import``)."""

    module: str
    name: str
    node: ast.AST


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call of a tool the snippet names in its text."""

    node: ast.Call
    keywords: tuple[ast.keyword, ...]
    """Keyword arguments (``**spread`` ones have ``arg=None``); signature identifiers are accepted."""
    module: ToolReference | None = None
    """Module style: the function called."""
    tool_id: str | None = None
    """Literal style: the id as written."""
    id_node: ast.expr | None = None
    args: ast.expr | None = None
    """Literal style: the arguments object (keyed by wire names), when given."""
    positional: tuple[ast.expr, ...] = ()
    """Module style: positional arguments (the run refuses them)."""


@dataclass(slots=True)
class Scan:
    """What :func:`scan` found."""

    modules: dict[str, ast.AST] = field(default_factory=dict[str, ast.AST])
    """Each ``tools`` module named, with where it is first named."""
    references: list[ToolReference] = field(default_factory=list[ToolReference])
    """Every ``<module>.<name>`` written (called or not)."""
    calls: list[ToolCall] = field(default_factory=list[ToolCall])
    bindings: Counter[str] = field(default_factory=Counter[str])
    """How many times each name is bound (assigned, imported, a parameter, a loop variable, ...)."""
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict[ast.AST, ast.AST])
    saves_snippets: bool = False
    """The snippet calls ``save_snippet``: tools of the ``snippets`` namespace may appear as it runs."""
    text: str | None = None
    """The text the tree is of when it is not the snippet's own: the snippet in this host's syntax
    (:func:`~toolcode._typecheck._syntax.readable`: Python 3.12's f-strings, re-quoted), same positions."""


class _Names:
    """The names bound to ``tools`` modules, the package and tool functions by imports."""

    def __init__(self, nodes: Sequence[ast.AST], out: Scan) -> None:
        self.modules: dict[str, str] = {}
        """Local name → module name (``from tools import helpdesk as hd``)."""
        self.packages: set[str] = set()
        """Local names bound to the ``tools`` package itself."""
        self.functions: dict[str, ToolReference] = {}
        """Local name → the tool function it was imported as (``from tools.helpdesk import on_call``)."""
        imported: Counter[str] = Counter()
        for node in nodes:
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
                head, _, rest = node.module.partition(".")
                for a in node.names:
                    local = a.asname or a.name
                    if head != PACKAGE or a.name == "*":
                        continue  # another module's name: it rebinds ``local`` (``from datetime import time``)
                    imported[local] += 1
                    if not rest:
                        out.modules.setdefault(a.name, node)
                        self.modules[local] = a.name
                    elif "." not in rest:
                        out.modules.setdefault(rest, node)
                        ref = ToolReference(rest, a.name, node)
                        out.references.append(ref)
                        self.functions[local] = ref
                    else:
                        out.modules.setdefault(rest.split(".")[0], node)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    head, _, rest = a.name.partition(".")
                    local = a.asname or head
                    if head != PACKAGE:
                        continue  # ``import time`` after ``from tools import time``: not the tools module
                    imported[local] += 1
                    if rest:
                        out.modules.setdefault(rest.split(".")[0], node)
                    if a.asname is None:
                        self.packages.add(PACKAGE)
                    elif rest and "." not in rest:
                        self.modules[a.asname] = rest
                    elif not rest:
                        self.packages.add(a.asname)
        # A name that is also bound another way (assigned, a parameter, another module's import, ...)
        # may not be the tools import.
        for name, count in out.bindings.items():
            if count > imported[name]:
                self.modules.pop(name, None)
                self.packages.discard(name)
                self.functions.pop(name, None)

    def reference(self, node: ast.expr) -> ToolReference | None:
        """The module function ``node`` names (``hd.on_call``, ``tools.helpdesk.on_call``, ``on_call``)."""
        if isinstance(node, ast.Name):
            return self.functions.get(node.id)
        if not isinstance(node, ast.Attribute):
            return None
        base = node.value
        if isinstance(base, ast.Name) and base.id in self.modules:
            return ToolReference(self.modules[base.id], node.attr, node)
        if (
            isinstance(base, ast.Attribute)
            and isinstance(base.value, ast.Name)
            and base.value.id in self.packages
            and "." not in base.attr
        ):
            return ToolReference(base.attr, node.attr, node)
        return None


def scan(tree: ast.AST) -> Scan:
    """Everything the parsed snippet's text says about its tools: the modules, references and calls."""
    out = Scan()
    nodes: list[ast.AST] = []
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        nodes.append(node)
        for child in ast.iter_child_nodes(node):
            out.parents[child] = node
            todo.append(child)
    out.bindings.update(bound_names(nodes))
    names = _Names(nodes, out)
    # ``hd.extra = 1`` gives a module an attribute: reading it later is no unknown tool.
    assigned = {
        (n.value.id, n.attr)
        for n in nodes
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    ids = _ids(tree, out) if isinstance(tree, ast.Module) else {}
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            base = node.value
            if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id in names.packages:
                out.modules.setdefault(base.attr, base)
            elif isinstance(base, ast.Name) and base.id in names.packages:
                out.modules.setdefault(node.attr, node)
            ref = names.reference(node)
            named = (base.id, node.attr) if isinstance(base, ast.Name) else None
            if ref is not None and not ref.name.startswith("__") and named not in assigned:
                out.references.append(ref)
        elif isinstance(node, ast.Call):
            _call(node, names, ids, out)
    return out


_Ids = dict[str, tuple[str, tuple[int, int]]]
"""A name bound once, at the top level, to a string literal: the string, and where its binding ends."""


def _ids(tree: ast.Module, out: Scan) -> _Ids:
    """``TOOL = "ns:x"`` at the top level, the name bound nowhere else: read as the literal after that line.

    A read before the line (in a function defined earlier, say) may see an earlier run's value of
    the name, or none: only a read after it is the literal for certain (:func:`_literal_id`).
    """
    ids: _Ids = {}
    for stmt in tree.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target = stmt.target
        value = getattr(stmt, "value", None)
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
            and out.bindings[target.id] == 1
        ):
            ids[target.id] = (value.value, (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0))
    return ids


@functools.lru_cache(maxsize=16)
def parsed(code: str) -> tuple[ast.Module, Scan] | None:
    """``code`` parsed (top-level ``await`` allowed) and scanned, or ``None`` when it does not parse.

    A snippet in a syntax Monty reads and this host's Python does not (3.12's f-strings on 3.11) is
    parsed as :func:`~toolcode._typecheck._syntax.readable` rewrites it, when it can (``Scan.text``).
    Kept for the last few snippets: the check before a run and the reads started early read the same
    text. Callers must not change what they get.
    """
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    try:
        tree = compile(code, "snippet.py", "exec", flags=flags, dont_inherit=True)
        text = None
    except SyntaxError:
        text = readable(code)
        if text is None:
            return None
        try:
            tree = compile(text, "snippet.py", "exec", flags=flags, dont_inherit=True)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
    except (ValueError, MemoryError, RecursionError):
        return None
    assert isinstance(tree, ast.Module)
    found = scan(tree)
    found.text = text
    return tree, found


def _call(node: ast.Call, names: _Names, ids: _Ids, out: Scan) -> None:
    ref = names.reference(node.func)
    if ref is not None:
        out.calls.append(ToolCall(node, tuple(node.keywords), module=ref, positional=tuple(node.args)))
        return
    if not isinstance(node.func, ast.Name) or out.bindings[node.func.id]:
        return  # not a snippet global (or one the snippet rebinds)
    name = node.func.id
    if name == "save_snippet":
        out.saves_snippets = True
    elif name in RUN_TOOL:
        call = _literal_call(node, node.args, node.keywords, ids)
        if call is not None:
            out.calls.append(call)
    elif name in RUN_TOOLS and node.args and isinstance(node.args[0], ast.List | ast.Tuple):
        out.calls.extend(c for e in node.args[0].elts if (c := _pair(e, ids)) is not None)


def _literal_call(
    node: ast.Call, args: Sequence[ast.expr], keywords: Sequence[ast.keyword], ids: _Ids
) -> ToolCall | None:
    """``run_tool("ns:x", {...}, k=v)``: ``None`` unless the id is a string literal (or a name bound to one)."""
    first = args[0] if args else next((k.value for k in keywords if k.arg == "tool_id"), None)
    tool_id = _literal_id(first, ids) if first is not None else None
    if first is None or tool_id is None:
        return None
    given = args[1] if len(args) > 1 else next((k.value for k in keywords if k.arg == "args"), None)
    if isinstance(given, ast.Constant) and given.value is None:
        given = None
    rest = tuple(k for k in keywords if k.arg not in ("tool_id", "args"))
    return ToolCall(node, rest, tool_id=tool_id, id_node=first, args=given)


def _literal_id(node: ast.expr, ids: _Ids) -> str | None:
    """The id ``node`` writes: a string literal, or a name :func:`_ids` found, read after its line."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in ids:
        value, bound = ids[node.id]
        return value if (node.lineno, node.col_offset) > bound else None
    return None


def _pair(element: ast.expr, ids: _Ids) -> ToolCall | None:
    """One call of ``run_tools([...])``: ``("ns:x", {...})``, ``{"tool_id": ..., "args": ...}`` or ``"ns:x"``."""
    if isinstance(element, ast.Tuple | ast.List) and 1 <= len(element.elts) <= 2:
        return _literal_call(_located_call(element), element.elts, (), ids)
    if isinstance(element, ast.Constant):
        return _literal_call(_located_call(element), [element], (), ids)
    if isinstance(element, ast.Dict) and all(isinstance(k, ast.Constant) for k in element.keys):
        fields = {k.value: v for k, v in zip(element.keys, element.values, strict=True) if isinstance(k, ast.Constant)}
        if set(fields) <= {"tool_id", "args"}:
            keywords = [ast.keyword(arg=str(k), value=v) for k, v in fields.items()]
            return _literal_call(_located_call(element), [], keywords, ids)
    return None


def _located_call(element: ast.expr) -> ast.Call:
    call = ast.Call(func=ast.Name("run_tool", ast.Load()), args=[], keywords=[])
    return ast.copy_location(call, element)
