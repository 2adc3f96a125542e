"""One problem the check before the run found, and where it is in the snippet."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from toolcode.exceptions import ErrorCode

__all__ = ["CATCHERS", "Diagnostic", "Handlers", "Positions", "catches", "near"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found before the run, at a line and column of the snippet."""

    line: int
    column: int
    message: str
    rule: str = "type"
    """What found it: the argument check (``arguments``, ``unknown-tool``, ...) or ``ty``'s rule."""
    code: ErrorCode = ErrorCode.RUNTIME_ERROR
    """The error the run would have met here had it started: ``unknown_tool``, ``invalid_arguments``
    (the same code and message as the run's own check of the call) or ``runtime_error``."""
    raises: str = "Exception"
    """The exception the snippet would see (``ToolError``, ``KeyError``, ...): a ``try`` that
    catches it makes the problem the snippet's own business."""
    fails_at: tuple[int, int] | None = None
    """Where the run would raise it, when not where the problem is written (the call of a
    literal bound to a name earlier)."""
    subject: str | None = None
    """The tool id, module or function a name problem is about (a snippet that tests for it first
    does not fail: ``if "ns:tool" in ids``, ``hasattr(ns, "tool")``)."""

    def render(self) -> str:
        """``line L, column C: message``."""
        return f"line {self.line}, column {self.column}: {self.message}"


class Positions:
    """Line and column (1-based, in characters) of AST nodes of one source text.

    ``ast`` counts columns in UTF-8 bytes; people and ``ty`` count characters.
    """

    __slots__ = ("_lines",)

    def __init__(self, source: str) -> None:
        self._lines = source.split("\n")

    def char_column(self, line: int, byte_offset: int) -> int:
        """The 0-based character column of a 0-based UTF-8 byte offset on a 1-based line."""
        if not 1 <= line <= len(self._lines):
            return byte_offset
        text = self._lines[line - 1]
        if text.isascii():
            return byte_offset
        return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))

    def of(self, node: ast.AST) -> tuple[int, int]:
        """``(line, column)`` of a node's start, both 1-based."""
        line = getattr(node, "lineno", 1)
        return line, self.char_column(line, getattr(node, "col_offset", 0)) + 1

    def at(
        self,
        node: ast.AST,
        message: str,
        rule: str,
        code: ErrorCode,
        raises: str = "ToolError",
        fails_at: ast.AST | None = None,
        subject: str | None = None,
    ) -> Diagnostic:
        """A diagnostic at the start of ``node`` (the run raising at ``fails_at``, when given)."""
        line, col = self.of(node)
        return Diagnostic(line, col, message, rule, code, raises, self.of(fails_at) if fails_at else None, subject)


CATCHERS: Final[dict[str, frozenset[str]]] = {
    "ToolError": frozenset({"ToolError", "RuntimeError", "Exception", "BaseException"}),
    "KeyError": frozenset({"KeyError", "LookupError", "Exception", "BaseException"}),
    "AttributeError": frozenset({"AttributeError", "Exception", "BaseException"}),
    "TypeError": frozenset({"TypeError", "Exception", "BaseException"}),
    "ImportError": frozenset({"ImportError", "Exception", "BaseException"}),
    "ModuleNotFoundError": frozenset({"ModuleNotFoundError", "ImportError", "Exception", "BaseException"}),
}
"""The handler types that catch each exception the check foresees (``ToolError`` is a ``RuntimeError``;
``ModuleNotFoundError`` an ``ImportError``, not the other way round)."""


class Handlers:
    """Where a snippet catches exceptions: a problem a surrounding ``try`` catches does not fail the run.

    ``try: run_tool("ns:new_tool", ...) except ToolError: run_tool("ns:old_tool", ...)`` is a
    program that works whatever the first call does.
    """

    __slots__ = ("_functions", "_tries", "_uses")

    def __init__(self, tree: ast.AST, positions: Positions) -> None:
        self._tries: list[tuple[tuple[int, int], tuple[int, int], list[ast.ExceptHandler]]] = []
        self._functions: list[tuple[tuple[int, int], tuple[int, int], str | None]] = []
        """The snippet's functions: where each body is, and its name (``None``: a lambda)."""
        self._uses: dict[str, list[tuple[tuple[int, int], bool]]] = {}
        """Where each name is read, and whether it is called there (else it is handed on, to be called elsewhere)."""

        def end_of(node: ast.stmt | ast.expr) -> tuple[int, int]:
            line = node.end_lineno or node.lineno
            return line, positions.char_column(line, node.end_col_offset or 0) + 1

        called = {n.func for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Try | ast.TryStar) and node.handlers and node.body:
                self._tries.append((positions.of(node.body[0]), end_of(node.body[-1]), node.handlers))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
                self._functions.append((positions.of(node.body[0]), end_of(node.body[-1]), node.name))
            elif isinstance(node, ast.Lambda):
                self._functions.append((positions.of(node.body), end_of(node.body), None))
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self._uses.setdefault(node.id, []).append((positions.of(node), node in called))
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):  # a method: ``s.total()``
                self._uses.setdefault(node.attr, []).append((positions.of(node), node in called))

    def catch(self, d: Diagnostic) -> bool:
        """Whether what ``d`` would raise is caught where it would be raised.

        By a ``try`` around it, or around every call of the function it is in (a function never
        used never runs). A function handed on (a lambda, ``safe(fetch)``, ``for f in (a, b)``) is
        called where the check cannot follow: any handler of the snippet that catches it may be there.
        """
        return self._caught(d.fails_at or (d.line, d.column), CATCHERS.get(d.raises), 0)

    def _caught(self, at: tuple[int, int], catchers: frozenset[str] | None, depth: int) -> bool:
        for start, end, handlers in self._tries:
            if start <= at <= end and any(catches(h, catchers) for h in handlers):
                return True
        inside = [f for f in self._functions if f[0] <= at <= f[1]]
        if not inside or depth >= 8:
            return False
        start, end, name = max(inside, key=lambda f: (f[0], f[1]))  # the innermost function
        # A use inside its own body (recursion) adds nothing: the first call comes from outside.
        uses = [(u, call) for u, call in self._uses.get(name, ()) if not start <= u <= end] if name else []
        handed_on = name is None or not all(call for _, call in uses)
        if handed_on and not any(catches(h, catchers) for _, _, handlers in self._tries for h in handlers):
            return False
        return all(self._caught(u, catchers, depth + 1) for u, call in uses if call)


def catches(handler: ast.ExceptHandler, catchers: frozenset[str] | None) -> bool:
    """Whether ``handler`` may catch an exception that the handler types ``catchers`` catch (``None``: any)."""
    if handler.type is None or catchers is None:
        return True  # a bare except, or an exception the table does not know
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for t in types:
        name = t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else None
        if name is None or name in catchers or name not in _KNOWN:
            return True  # a name the check cannot judge: the handler may catch it
    return False


_KNOWN: Final = frozenset[str]().union(*CATCHERS.values()) | {
    *"ValueError IndexError ZeroDivisionError NameError StopIteration OSError ArithmeticError AssertionError".split(),
    *"UnicodeError NotImplementedError OverflowError RecursionError TimeoutError".split(),
}
"""Exception names whose place in the hierarchy the table above settles."""


def near(name: str, choices: Iterable[str]) -> str:
    """``; did you mean ...?`` with the choices closest to ``name`` (``""``: none is close)."""
    found = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.6)
    return f"; did you mean {', '.join(repr(f) for f in found)}?" if found else ""
