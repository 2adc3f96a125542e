"""Which of a snippet's functions run only where they are called by name (for the dead-code rules).

A function whose name is only ever called, never handed on, runs at those calls and nowhere else:
what it reads is read there, and if every such call is in code that cannot run, neither can it.
"""

from __future__ import annotations

import ast
from typing import Final

from toolcode._typecheck._calls import Scan

__all__ = ["SCOPES", "calls_only", "first_calls", "scope_of"]

SCOPES: Final = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.GeneratorExp, ast.Module)
"""Where code may run at another time than where it is written (a generator's body runs as it is consumed)."""


def first_calls(tree: ast.Module, found: Scan) -> dict[ast.AST, tuple[int, int]]:
    """The snippet's top-level functions whose body runs only where the top level calls them, with the first call.

    A function bound once, by a top-level ``def``, whose name is only called (never handed on), by
    top-level code (a comprehension included; not another function, nor a generator, which run later
    or elsewhere), or by its own body (a later call): its body runs at those calls, not where it is
    written. A read in it of a constant bound after the ``def`` and before every call is settled.
    """
    defs = {
        stmt.name: stmt
        for stmt in tree.body
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and found.bindings[stmt.name] == 1
    }
    first: dict[ast.AST, tuple[int, int]] = {}
    handed_on: set[ast.AST] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
            continue
        fn = defs.get(node.id)
        if fn is None:
            continue
        parent = found.parents.get(node)
        scope = parent
        while scope is not None and not isinstance(scope, SCOPES):
            scope = found.parents.get(scope)
        if scope is fn:
            continue  # recursion: a call made once the function runs
        if not (isinstance(parent, ast.Call) and parent.func is node and isinstance(scope, ast.Module)):
            handed_on.add(fn)
            continue
        at = (node.lineno, node.col_offset)
        first[fn] = min(first.get(fn, at), at)
    return {fn: at for fn, at in first.items() if fn not in handed_on}


def scope_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST | None:
    """The innermost of :data:`SCOPES` around ``node``."""
    scope = parents.get(node)
    while scope is not None and not isinstance(scope, SCOPES):
        scope = parents.get(scope)
    return scope


_INTROSPECTION: Final = frozenset({"globals", "locals", "vars", "eval", "exec", "__import__"})
"""Names through which a snippet may reach its functions other than by name."""


def calls_only(tree: ast.Module, found: Scan) -> dict[ast.FunctionDef | ast.AsyncFunctionDef, list[ast.Name]]:
    """The snippet's functions whose name is only ever called, with where it is called (not from their own body).

    A function bound once, by a ``def`` without decorators that is not a method, whose name is
    read only as the callee of a call (never handed on: passed, returned, stored, ...), at least
    once outside its own body. It runs only where those calls run. None when the snippet reads
    ``globals()``, ``locals()``, ``vars()``, ``eval``, ``exec`` or ``__import__``, through which it
    may reach a function otherwise.
    """
    defs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    names: list[ast.Name] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in _INTROSPECTION:
                return {}
            names.append(node)
        elif (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and not node.decorator_list
            and found.bindings[node.name] == 1
            and not isinstance(scope_of(node, found.parents), ast.ClassDef)
        ):
            defs[node.name] = node
    calls: dict[ast.FunctionDef | ast.AsyncFunctionDef, list[ast.Name]] = {}
    handed_on: set[ast.AST] = set()
    for name in names:
        fn = defs.get(name.id)
        if fn is None:
            continue
        parent = found.parents.get(name)
        if not (isinstance(parent, ast.Call) and parent.func is name):
            handed_on.add(fn)
        elif not _within(name, fn, found.parents):
            calls.setdefault(fn, []).append(name)
    return {fn: at for fn, at in calls.items() if fn not in handed_on}


def _within(node: ast.AST, fn: ast.FunctionDef | ast.AsyncFunctionDef, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether ``node`` is in ``fn``'s body (not its decorators, defaults or annotations, which run at its ``def``)."""
    child, parent = node, parents.get(node)
    while parent is not None and parent is not fn:
        child, parent = parent, parents.get(parent)
    return parent is fn and child in fn.body
