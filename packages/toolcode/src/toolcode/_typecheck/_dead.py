"""Code that cannot run because a test the snippet writes is settled by its text: nothing found there is reported.

A snippet often chooses by a constant of its own (``status = "all"`` then ``if status == "all":
... else: ns.x(status=status)``, ``DEBUG = False`` then ``if DEBUG: ...``). The branch the test
rules out never runs, so what it would do wrong (an argument a tool refuses, a tool that does not
exist, a key a result lacks) is no failure of the run.

A test is settled when it is made only of literals (a string, a number, ``True``, ``False``,
``None``, a tuple, list or set display of such) and of names bound once, by a top-level ``name =
value`` before the test runs (in a top-level function only ever called by top-level code: before
its first call), or by a ``name = value`` among a function's own statements, the test in that
function (not in one inside it) after it, to a value settled the same way that cannot change (not
a list or a set; bound nowhere else, such a name keeps that value), combined by comparisons (``==``, ``!=``,
``<``, ``<=``, ``>``, ``>=``, ``in``, ``not in``, and ``is``/``is not`` against ``None``,
``True`` or ``False``), ``not``, ``and``, ``or`` and conditional expressions; the value's truth
decides. Such a test is evaluated here on those values alone (with Python's own operators;
nothing of the snippet runs), and what it rules out is dead:

- the body of an ``if`` whose test is false, or its ``else`` (``elif`` included) when true;
- the branch of ``a if test else b`` not taken;
- the body of a ``while`` whose test is false at entry, or its ``else`` when the test is always true;
- the operands of ``x and ...`` after one that is false, of ``x or ...`` after one that is true.

Anything else (a value computed at run time, a comparison Python refuses, ``is`` between two
strings) leaves the test unsettled: both branches are checked, as before.

And in any block, what follows a statement that always leaves it is dead: a ``return``, ``raise``,
``break`` or ``continue``; an ``if`` whose branches that can run (by the tests above) all leave
(a guard clause ``if MODE == "all": return ...`` on a constant); a ``while`` whose test is settled
true and that has no ``break`` of its own; ``assert`` of a false test; a ``try`` whose ``finally``
leaves, or whose body (or ``else``) and every handler leave. A loop, whose body may not run, and a
``with``, whose context may swallow a ``raise``, never count as leaving.

And the body of a function called only from code that cannot run (that of another such function
included) is dead: one bound once, by a ``def`` without decorators that is not a method, whose
name is only ever the callee of a call (never passed, returned, stored or otherwise read), called
at least once outside its own body. Its defaults and decorators run at its ``def``: they are live.
A snippet that reads ``globals()``, ``locals()``, ``vars()``, ``eval``, ``exec`` or ``__import__``
has no such function.
"""

from __future__ import annotations

import ast
import bisect
import operator
from collections.abc import Callable
from typing import Any, Final, cast

from toolcode._typecheck._calls import Scan
from toolcode._typecheck._diagnostic import Positions
from toolcode._typecheck._functions import SCOPES, calls_only, first_calls, scope_of

__all__ = ["DeadCode"]

_UNSETTLED: Final = object()
"""A value the text does not settle."""
_SCALARS: Final = (str, int, float, bool, type(None))
_MAX_DEPTH: Final = 64


class DeadCode:
    """Where the snippet's code cannot run (see the module docstring), as ranges of its positions.

    Positions are those of :class:`~toolcode._typecheck._diagnostic.Positions` (1-based line and
    character column), so that a finding's position can be looked up directly.
    """

    __slots__ = ("_bound", "_called", "_ends", "_parents", "_positions", "_starts", "_values")

    def __init__(self, tree: ast.Module, found: Scan, positions: Positions) -> None:
        self._positions = positions
        self._parents = found.parents
        self._values: dict[str, object] = {}
        self._bound: dict[str, tuple[ast.expr, tuple[int, int], ast.AST]] = {}
        """Name → its literal, where its binding ends (``ast``'s line and byte column) and the scope binding it."""
        scopes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))]
        for scope in scopes:
            for stmt in scope.body:
                target, value = _single_binding(stmt)
                if target is not None and value is not None and found.bindings[target] == 1:
                    end = (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
                    self._bound[target] = (value, end, scope)
        self._called = first_calls(tree, found) if self._bound else {}
        ranges: list[tuple[tuple[int, int], tuple[int, int]]] = []
        for node in ast.walk(tree):
            for first, last in self._ruled_out(node):
                ranges.append((positions.of(first), self._end(last)))
        self._starts: list[tuple[int, int]] = []
        self._ends: list[tuple[int, int]] = []
        self._merge(ranges)
        # A function called only from code that cannot run does not run either (nor do those it calls).
        uncalled = calls_only(tree, found)
        while ranges and uncalled:
            dead = [fn for fn, calls in uncalled.items() if all(self.covers(positions.of(c)) for c in calls)]
            if not dead:
                break
            for fn in dead:
                del uncalled[fn]
                ranges.append((positions.of(fn.body[0]), self._end(fn.body[-1])))
            self._merge(ranges)

    def _merge(self, ranges: list[tuple[tuple[int, int], tuple[int, int]]]) -> None:
        """Keep ``ranges`` as sorted disjoint ranges: nested or overlapping ones become their outermost."""
        ranges.sort(key=lambda r: (r[0], (-r[1][0], -r[1][1])))
        self._starts.clear()
        self._ends.clear()
        for start, end in ranges:
            if self._ends and start < self._ends[-1]:
                if end > self._ends[-1]:
                    self._ends[-1] = end
                continue
            self._starts.append(start)
            self._ends.append(end)

    def covers(self, at: tuple[int, int]) -> bool:
        """Whether the position ``(line, column)`` is in code that cannot run."""
        i = bisect.bisect_right(self._starts, at) - 1
        return i >= 0 and at < self._ends[i]

    def _end(self, node: ast.AST) -> tuple[int, int]:
        line = getattr(node, "end_lineno", None) or getattr(node, "lineno", 1)
        return line, self._positions.char_column(line, getattr(node, "end_col_offset", None) or 0) + 1

    def _ruled_out(self, node: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
        """The parts of ``node`` its own test rules out, as (first, last) nodes of each.

        And in each block of statements ``node`` holds, those after one that always leaves it.
        """
        out = [(block[i + 1], block[-1]) for block in _blocks(node) if (i := self._leaving(block)) < len(block) - 1]
        return out + self._untaken(node)

    def _leaving(self, block: list[ast.stmt]) -> int:
        """The index of the first statement of ``block`` after which nothing runs (``len(block)``: none)."""
        return next((i for i, stmt in enumerate(block) if self._leaves(stmt)), len(block))

    def _leaves(self, stmt: ast.stmt) -> bool:
        """Whether ``stmt`` never goes on to the next statement (it returns, raises, breaks or continues)."""
        if isinstance(stmt, ast.Return | ast.Raise | ast.Break | ast.Continue):
            return True
        if isinstance(stmt, ast.Assert):
            return self.truth(stmt.test) is False
        if isinstance(stmt, ast.If):
            truth = self.truth(stmt.test)
            taken = [b for b, runs in ((stmt.body, truth is not False), (stmt.orelse, truth is not True)) if runs]
            return all(self._leaving(b) < len(b) for b in taken)
        if isinstance(stmt, ast.While):
            # Left only by a ``break`` (then what follows runs), a ``return`` or a ``raise``.
            return self.truth(stmt.test) is True and not _breaks(stmt.body)
        if isinstance(stmt, ast.Try | ast.TryStar):
            if stmt.finalbody and self._leaving(stmt.finalbody) < len(stmt.finalbody):
                return True
            goes_on = self._leaving(stmt.body) == len(stmt.body) and self._leaving(stmt.orelse) == len(stmt.orelse)
            handled = all(self._leaving(h.body) < len(h.body) for h in stmt.handlers)
            return not goes_on and handled
        return False  # a loop (its body may not run), ``with`` (it may swallow a raise), ``match``, ...

    def _untaken(self, node: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
        """The parts of ``node`` its own test rules out."""
        if isinstance(node, ast.IfExp):
            truth = self.truth(node.test)
            return [] if truth is None else [(node.orelse, node.orelse)] if truth else [(node.body, node.body)]
        if isinstance(node, ast.If | ast.While):
            # A ``while`` test settled true stays true: its ``else`` (run once the test is false) never runs.
            truth = self.truth(node.test)
            block = [] if truth is None else node.orelse if truth else node.body
            return [(block[0], block[-1])] if block else []
        if isinstance(node, ast.BoolOp):
            stops = isinstance(node.op, ast.Or)  # the truth at which evaluation stops
            for i, operand in enumerate(node.values[:-1]):
                if self.truth(operand) is stops:
                    return [(node.values[i + 1], node.values[-1])]
        return []

    def truth(self, node: ast.expr, depth: int = 0) -> bool | None:
        """Whether ``node``'s value is true wherever it is evaluated (``None``: the text does not settle it)."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, ast.BoolOp):
            # ``a and b`` is false as soon as one operand is, whatever the others; ``or`` alike.
            stops = isinstance(node.op, ast.Or)
            truths = [self.truth(v, depth + 1) for v in node.values]
            if stops in truths:
                return stops
            return None if None in truths else not stops
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            truth = self.truth(node.operand, depth + 1)
            return None if truth is None else not truth
        value = self._value(node, depth)
        return None if value is _UNSETTLED else bool(value)

    def _value(self, node: ast.expr, depth: int) -> object:
        """The value of ``node`` when the text settles it (else :data:`_UNSETTLED`)."""
        if depth > _MAX_DEPTH:
            return _UNSETTLED
        depth += 1
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, _SCALARS) else _UNSETTLED
        if isinstance(node, ast.Name):
            return self._constant(node, depth)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                truth = self.truth(node.operand, depth)
                return _UNSETTLED if truth is None else not truth
            operand = self._value(node.operand, depth)
            if isinstance(node.op, ast.USub | ast.UAdd) and type(operand) in (int, float):
                assert isinstance(operand, int | float)
                return -operand if isinstance(node.op, ast.USub) else operand
            return _UNSETTLED
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = [self._value(e, depth) for e in node.elts]  # ``*rest`` is not settled
            if any(i is _UNSETTLED for i in items):
                return _UNSETTLED
            if isinstance(node, ast.Set):
                try:
                    return set(items)
                except TypeError:  # an unhashable item (a list): Python refuses it too
                    return _UNSETTLED
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Compare):
            return self._compare(node, depth)
        if isinstance(node, ast.BoolOp):
            # Python's own rule: the first operand that ends the evaluation, or the last.
            stops = isinstance(node.op, ast.Or)
            for operand in node.values:
                value = self._value(operand, depth)
                if value is _UNSETTLED:
                    return _UNSETTLED
                if bool(value) is stops or operand is node.values[-1]:
                    return value
            return _UNSETTLED  # not reached: a BoolOp has operands
        if isinstance(node, ast.IfExp):
            truth = self.truth(node.test, depth)
            return _UNSETTLED if truth is None else self._value(node.body if truth else node.orelse, depth)
        return _UNSETTLED

    def _compare(self, node: ast.Compare, depth: int) -> object:
        left = self._value(node.left, depth)
        if left is _UNSETTLED:
            return _UNSETTLED
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self._value(right_node, depth)
            if right is _UNSETTLED:
                return _UNSETTLED
            outcome = _compared(op, left, right)
            if outcome is None:
                return _UNSETTLED
            if not outcome:
                return False  # a chain stops at its first false comparison
            left = right
        return True

    def _constant(self, node: ast.Name, depth: int) -> object:
        """The literal value of a name bound once, before ``node``, at the top level or in ``node``'s function."""
        hit = self._bound.get(node.id)
        if hit is None:
            return _UNSETTLED
        if isinstance(hit[2], ast.Module):
            if self._read_at(node) <= hit[1]:
                return _UNSETTLED  # read before (or while) it is bound: an earlier run's value, say
        elif scope_of(node, self._parents) is not hit[2] or (node.lineno, node.col_offset) <= hit[1]:
            # A function's own name: read there after its binding (elsewhere, it is another name, or
            # a function inside that may run before the binding; before it, the read fails).
            return _UNSETTLED
        if node.id not in self._values:
            value = self._value(hit[0], depth)
            # A list or a set may be changed in place (``names.append(x)``) without the name being bound again.
            self._values[node.id] = value if _frozen(value) else _UNSETTLED
        return self._values[node.id]

    def _read_at(self, node: ast.Name) -> tuple[int, int]:
        """Where ``node`` is read: as written, or at the first call of the ``first_calls`` function it is in."""
        at = (node.lineno, node.col_offset)
        child: ast.AST = node
        parent = self._parents.get(node)
        while parent is not None and not isinstance(parent, SCOPES):
            child, parent = parent, self._parents.get(parent)
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef) and child in parent.body:
            return max(at, self._called.get(parent, at))
        return at


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    """The blocks of statements ``node`` holds (a body, an ``else``, a ``finally``)."""
    blocks = (getattr(node, field, None) for field in ("body", "orelse", "finalbody"))
    return [b for b in blocks if isinstance(b, list) and b and isinstance(b[0], ast.stmt)]


def _breaks(body: list[ast.stmt]) -> bool:
    """Whether a loop's ``body`` has a ``break`` of that loop (not of a loop or function inside it)."""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Break):
            return True
        if isinstance(node, ast.For | ast.AsyncFor | ast.While):
            todo.extend(node.orelse)  # a loop's ``else`` belongs to the loop around it
        elif not isinstance(node, SCOPES):
            todo.extend(ast.iter_child_nodes(node))
    return False


def _frozen(value: object) -> bool:
    return isinstance(value, _SCALARS) or (
        isinstance(value, tuple) and all(_frozen(v) for v in cast("tuple[object, ...]", value))
    )


def _single_binding(stmt: ast.stmt) -> tuple[str | None, ast.expr | None]:
    """``name = value`` (or ``name: type = value``): the name and the value."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id, stmt.value
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return stmt.target.id, stmt.value
    return None, None


def _compared(op: ast.cmpop, left: object, right: object) -> bool | None:
    """One comparison of settled values, as Python makes it (``None``: Python refuses it, or it is not settled)."""
    if isinstance(op, ast.Is | ast.IsNot):
        # Identity is settled only against a singleton; two equal strings may or may not be one object.
        if not any(v is None or isinstance(v, bool) for v in (left, right)):
            return None
        return (left is right) is isinstance(op, ast.Is)
    compare = _OPERATORS.get(type(op))
    if compare is None:
        return None
    try:
        return bool(compare(left, right))
    except TypeError:
        return None  # ``1 < "a"``, ``1 in "abc"``: the run raises there, and neither branch runs


_OPERATORS: Final[dict[type[ast.cmpop], Callable[[Any, Any], object]]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: operator.contains(b, a),
    ast.NotIn: lambda a, b: not operator.contains(b, a),
}
"""What each comparison does, on values that are only scalars and tuples, lists and sets of them."""
