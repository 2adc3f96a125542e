"""Where a snippet is ready for a value of another type than the one declared: findings about it there are the run's.

Code written defensively reads a result as declared on one path and as something else on another:
``now["timezone"] if type(now) is dict else now.strip()``, or ``try: tz = now["timezone"] except
(TypeError, KeyError): tz = now.strip()``. The other path runs only when the value is not what its
type says, so what ``ty`` finds there about that value, judged by the declared type, is not certain
to fail. ``ty`` itself narrows ``isinstance(now, dict)`` both ways (its finding then names a type
that is not one value's); these are the forms it leaves as declared:

- the branch of an ``if``, ``while`` or conditional expression where a test ``type(x) is C`` is
  false, or ``type(x) is not C`` true, within ``not``, ``and`` and ``or``; and both branches of the
  tests ``ty`` narrows by in neither: ``type(x) == C`` (``!=``), ``type(x) in (C, D)`` (``not in``)
  and a comparison of ``type(x).__name__``;
- the branch where ``hasattr(x, "name")`` is true, for ``x.name`` only (what ``x`` lacks otherwise is
  still found);
- the operands of ``and`` (``or``) after a test, where it is true (false);
- the items of a comprehension, where its ``if`` clauses are true;
- the rest of a block after an ``if`` (or ``elif``) whose body ends the block (``return``,
  ``continue``, ``break``, ``raise``): its test is false there (``if type(v) != str: continue``
  then ``v.upper()``), and after an ``assert``, where its test is true;
- the handlers of a ``try`` that catch what a read of a wrongly typed value raises (``TypeError``,
  ``KeyError``, ``AttributeError`` or a base of them), for each value the ``try``'s body subscripts
  or reads an attribute of.

A value is a name or a chain of attributes and constant subscripts of one (``r["data"]``); a
finding is about it when the expression it is at contains it.
"""

from __future__ import annotations

import ast
from typing import Final, cast

from toolcode._typecheck._diagnostic import CATCHERS, Positions, catches

__all__ = ["Doubts"]

_MISREAD: Final = CATCHERS["TypeError"] | CATCHERS["KeyError"] | CATCHERS["AttributeError"]
"""The handler types that catch what reading a value of another type raises (``1["k"]``, ``"s".get``)."""

_ENDS: Final = (ast.Return, ast.Continue, ast.Break, ast.Raise)
"""Statements after which the rest of their block does not run."""

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
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if isinstance(block, list):
                    for i, stmt in enumerate(cast("list[ast.stmt]", block)[:-1]):
                        rest = cast("list[ast.stmt]", block)[i + 1 :]
                        if isinstance(stmt, ast.If):
                            add(rest, _left_early(stmt))
                        elif isinstance(stmt, ast.Assert):
                            add(rest, _mistyped(stmt.test, True))
            if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
                # The items are made where every ``if`` of the comprehension is true.
                tested = set[str]().union(*(_mistyped(t, True) for g in node.generators for t in g.ifs))
                for item in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
                    add(item, tested)
            if isinstance(node, ast.BoolOp):
                # Each operand after the first is reached where those before it are true (``and``) or false.
                truth = isinstance(node.op, ast.And)
                for i, operand in enumerate(node.values[1:], start=1):
                    add(operand, set[str]().union(*(_mistyped(v, truth) for v in node.values[:i])))
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
    if (tested := _called("hasattr", test, 2)) is not None:
        name = test.args[1] if isinstance(test, ast.Call) else None
        if truth and isinstance(name, ast.Constant) and isinstance(name.value, str):
            return {ast.dump(ast.Attribute(value=tested, attr=name.value, ctx=ast.Load()))}
        return set()
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op = test.left, test.ops[0]
        if isinstance(left, ast.Attribute) and left.attr == "__name__":
            tested = _called("type", left.value, 1)
            return set() if tested is None else {ast.dump(tested)}  # ``ty`` narrows by no name
        tested = _called("type", left, 1)
        if tested is None:
            return set()
        if isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn):
            return {ast.dump(tested)}  # ``ty`` narrows by ``is`` only: either branch may hold another type
        if isinstance(op, ast.Is | ast.IsNot) and isinstance(op, ast.Is) != truth:
            return {ast.dump(tested)}
    return set()


def _left_early(stmt: ast.If) -> set[str]:
    """The values doubted after ``stmt``: where each test of its ``if``/``elif`` chain whose branch ends is false."""
    out: set[str] = set()
    while True:
        if stmt.body and isinstance(stmt.body[-1], _ENDS):
            out |= _mistyped(stmt.test, False)
        if len(stmt.orelse) != 1 or not isinstance(stmt.orelse[0], ast.If):
            return out
        stmt = stmt.orelse[0]


def _called(function: str, node: ast.expr, arity: int) -> ast.expr | None:
    """The value ``node`` hands to the builtin ``function`` (``type(x)``, ``hasattr(x, "k")``), if it is one."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == function
        and len(node.args) == arity
        and not node.keywords
        and _value(node.args[0])
    ):
        return node.args[0]
    return None


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
