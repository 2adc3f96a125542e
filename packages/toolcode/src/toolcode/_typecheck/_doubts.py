"""Where a snippet is ready for a value of another type than the one declared: findings about it there are the run's.

Code written defensively reads a result as declared on one path and as something else on another:
``now["timezone"] if type(now) is dict else now.strip()``, or ``try: tz = now["timezone"] except
(TypeError, KeyError): tz = now.strip()``. The other path runs only when the value is not what its
type says, so what ``ty`` finds there about that value, judged by the declared type, is not certain
to fail. ``ty`` itself narrows ``isinstance(now, dict)`` both ways (its finding then names a type
that is not one value's); these are the forms it leaves as declared:

- the branch of an ``if``, ``while`` or conditional expression where a test ``type(x) is C`` (or
  ``==``) is false, or ``type(x) is not C`` (or ``!=``) true, within ``not``, ``and`` and ``or``;
- the handlers of a ``try`` that catch what a read of a wrongly typed value raises (``TypeError``,
  ``KeyError``, ``AttributeError`` or a base of them), for each value the ``try``'s body subscripts
  or reads an attribute of.

A value is a name or a chain of attributes and constant subscripts of one (``r["data"]``); a
finding is about it when the expression it is at contains it.
"""

from __future__ import annotations

import ast
from typing import Final

from toolcode._typecheck._diagnostic import CATCHERS, Positions, catches

__all__ = ["Doubts"]

_MISREAD: Final = CATCHERS["TypeError"] | CATCHERS["KeyError"] | CATCHERS["AttributeError"]
"""The handler types that catch what reading a value of another type raises (``1["k"]``, ``"s".get``)."""

_Region = tuple[tuple[int, int], tuple[int, int], frozenset[str]]


class Doubts:
    """The regions of a snippet where some values may not have their declared type (see the module docstring)."""

    __slots__ = ("_regions",)

    def __init__(self, tree: ast.Module, positions: Positions) -> None:
        self._regions: list[_Region] = []
        imported = {
            a.asname or a.name.partition(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        }

        def add(block: list[ast.stmt] | ast.expr, values: set[str]) -> None:
            first, last = (block[0], block[-1]) if isinstance(block, list) else (block, block)
            if values:
                line = last.end_lineno or last.lineno
                end = (line, positions.char_column(line, last.end_col_offset or 0) + 1)
                self._regions.append((positions.of(first), end, frozenset(values)))

        for node in ast.walk(tree):
            if isinstance(node, ast.If | ast.While | ast.IfExp):
                if node.body:
                    add(node.body, _mistyped(node.test, True))
                if node.orelse:
                    add(node.orelse, _mistyped(node.test, False))
            elif isinstance(node, ast.Try | ast.TryStar) and node.body:
                read = {
                    ast.dump(n.value)
                    for stmt in node.body
                    for n in ast.walk(stmt)
                    if isinstance(n, ast.Subscript | ast.Attribute)
                    and isinstance(n.ctx, ast.Load)
                    and _value(n.value)
                    and _root(n.value) not in imported
                }
                for handler in node.handlers:
                    if handler.body and catches(handler, _MISREAD):
                        add(handler.body, read)

    def about(self, node: ast.expr | None, at: tuple[int, int]) -> bool:
        """Whether ``node``, at ``at``, contains a value that may not have its declared type there."""
        doubted = [values for start, end, values in self._regions if start <= at < end]
        if node is None or not doubted:
            return False
        inside = {ast.dump(n) for n in ast.walk(node) if isinstance(n, ast.expr) and _value(n)}
        return any(inside & values for values in doubted)


def _mistyped(test: ast.expr, truth: bool) -> set[str]:
    """The values whose ``type(...)`` test fails where ``test`` has the truth ``truth`` (as :func:`ast.dump` s)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _mistyped(test.operand, not truth)
    if isinstance(test, ast.BoolOp):
        # Where ``a and b`` is false either may be; where ``a or b`` is true, either may be the true one.
        return set[str]().union(*(_mistyped(v, truth) for v in test.values))
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left = test.left
        if (
            isinstance(left, ast.Call)
            and isinstance(left.func, ast.Name)
            and left.func.id == "type"
            and len(left.args) == 1
            and not left.keywords
            and _value(left.args[0])
        ):
            op = test.ops[0]
            if isinstance(op, ast.Is | ast.Eq | ast.IsNot | ast.NotEq) and isinstance(op, ast.Is | ast.Eq) != truth:
                return {ast.dump(left.args[0])}
    return set()


def _value(node: ast.expr) -> bool:
    """Whether ``node`` is a name, or attributes and constant subscripts of one (the same value wherever read)."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Constant):
            return False
        node = node.value
    return isinstance(node, ast.Name)


def _root(node: ast.expr) -> str:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""
