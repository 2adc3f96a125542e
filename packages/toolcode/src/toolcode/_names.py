"""The names a piece of Python code binds: one reading for the check, the sessions and Monty's state.

:func:`binds` says what one node binds by itself; each reader walks the nodes it cares about: the
check every node of a snippet, Monty's state every node of a statement (over-approximating: a
function's local names count too), a session the module scope of a statement (:func:`module_names`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

__all__ = ["alias_name", "binds", "bound_names", "module_names", "rebound_by_functions"]


def alias_name(alias: ast.alias) -> str:
    """The name an import binds (``import a.b`` binds ``a``)."""
    return alias.asname or alias.name.split(".")[0]


def binds(node: ast.AST) -> Iterator[str]:
    """The names ``node`` itself binds (or deletes), not counting its children's.

    Assignment, loop and ``with`` targets, walrus targets, parameters, ``def`` and ``class`` names,
    imports, ``except`` and ``match`` captures, ``global`` and ``nonlocal``, ``del``.
    """
    if isinstance(node, ast.Name):
        if isinstance(node.ctx, ast.Store | ast.Del):
            yield node.id
    elif isinstance(node, ast.arg):
        yield node.arg
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.alias):
        yield alias_name(node)
    elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
        if node.name:
            yield node.name
    elif isinstance(node, ast.MatchMapping):
        if node.rest:
            yield node.rest
    elif isinstance(node, ast.Global | ast.Nonlocal):
        yield from node.names


def bound_names(nodes: Iterable[ast.AST]) -> Iterator[str]:
    """Every name the nodes bind, once per binding (their children count only when among ``nodes``)."""
    for node in nodes:
        yield from binds(node)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def module_names(stmt: ast.stmt) -> Iterator[str]:
    """The names a top-level statement binds in the module.

    Not those bound inside the functions, classes and lambdas it defines, nor a comprehension's
    own variables; a walrus inside a comprehension binds in the module (PEP 572).
    """
    stack: list[tuple[ast.AST, bool]] = [(stmt, False)]
    while stack:
        node, in_comprehension = stack.pop()
        if isinstance(node, _SCOPES):
            if not isinstance(node, ast.Lambda):
                yield node.name  # defined in the module (or a block of it): a module name
            continue
        if in_comprehension:
            if isinstance(node, ast.NamedExpr):
                yield node.target.id
        elif not isinstance(node, ast.Global):
            yield from binds(node)
        inside = in_comprehension or isinstance(node, _COMPREHENSIONS)
        stack.extend((child, inside) for child in ast.iter_child_nodes(node))


def rebound_by_functions(
    tree: ast.AST, declared: tuple[type[ast.Global | ast.Nonlocal], ...] = (ast.Global,)
) -> frozenset[str]:
    """The names a function declares ``global`` (or, asked, ``nonlocal``) and binds: a call may rebind them.

    Whatever the name held before, it holds what the function gave it once the function has run,
    wherever that call is. A function that only reads the name through the declaration changes nothing.
    """
    out: set[str] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            inside = [node for stmt in fn.body for node in ast.walk(stmt)]
            names = {n for node in inside if isinstance(node, declared) for n in node.names}
            if names:
                out |= names & set(bound_names(n for n in inside if not isinstance(n, ast.Global | ast.Nonlocal)))
    return frozenset(out)
