"""The snippet as the type checker reads it: typed where the types are certain, dynamic elsewhere.

Python does not check types at run time; ``ty`` infers them, and its inference of what a snippet
builds itself is narrower than what the run accepts: ``[{"name": "c", "observations": ["x"]}]``
is a ``list[dict[str, str | list[str]]]`` to it (so ``-r["urgent"]`` on such a dict is "not
supported for ``str | int``", and the list is not a ``list[Entity]``), a list built with
``append`` takes the union of everything appended, a dict display keeps the type of its first
values. Such types say nothing certain about the values at run time.

So before checking, every list, dict and set the snippet builds (a display, a comprehension, a
``list()``/``dict()``/``set()`` call) is handed to the checker as ``Any`` (wrapped in a call of
:data:`ANY_FUNCTION`), and the annotations the snippet writes on its own functions and variables,
which Python does not enforce, are ``Any`` too. What keeps its type: the tools' results (declared
by their output schemas), scalars and tuples, and whatever flows from them.

Every position of the checker's answer maps back to the snippet.
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass
from typing import Final

__all__ = ["ANY_FUNCTION", "ANY_TYPE", "CHECKER_HELPERS", "CheckedSource", "checked_source"]

ANY_FUNCTION: Final = "toolcode_dynamic"
ANY_TYPE: Final = "ToolcodeDynamic"
CHECKER_HELPERS: Final = f"\n{ANY_TYPE} = Any\ndef {ANY_FUNCTION}(value: object, /) -> Any: ...\n"
"""Added to the checker's stub of the snippet globals."""

_BUILT = (ast.Dict, ast.List, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp)
_CONSTRUCTORS = frozenset({"dict", "list", "set"})


@dataclass(frozen=True, slots=True)
class CheckedSource:
    """The rewritten text and the way back to the snippet's positions."""

    text: str
    _edits: tuple[tuple[int, int, int], ...]
    """``(start, end, length)``: the snippet's characters ``start:end`` became ``length`` characters, in order."""
    _line_starts: tuple[int, ...]
    _new_line_starts: tuple[int, ...]

    def original(self, line: int, column: int) -> tuple[int, int]:
        """The snippet's ``(line, column)`` (1-based) of a position in :attr:`text`."""
        if not 1 <= line <= len(self._new_line_starts):
            return line, column
        offset = self._new_line_starts[line - 1] + column - 1
        shift = 0
        orig = None
        for start, end, length in self._edits:
            if offset < start + shift:
                break
            if offset < start + shift + length:
                orig = start  # inside rewritten text: where it stands in the snippet
                break
            shift += length - (end - start)
        if orig is None:
            orig = offset - shift
        row = bisect.bisect_right(self._line_starts, orig) - 1
        return row + 1, orig - self._line_starts[row] + 1


def _line_starts(text: str) -> tuple[int, ...]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return tuple(starts)


def checked_source(code: str, tree: ast.Module, bindings: dict[str, int] | None = None) -> CheckedSource:
    """``code`` with what it builds wrapped as ``Any`` and its own annotations ``Any``.

    Args:
        code: The snippet.
        tree: ``code`` parsed.
        bindings: How many times each name is bound in the snippet (a rebound ``list`` is not
            the constructor).

    Returns:
        The text to check and the map back to the snippet's positions.
    """
    lines = code.split("\n")
    starts = _line_starts(code)
    rebound = bindings or {}

    def offset(line: int, byte_col: int) -> int:
        text = lines[line - 1]
        col = byte_col if text.isascii() else len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))
        return starts[line - 1] + col

    edits: list[tuple[int, int, int, str]] = []  # (start, order, end, text): closings sort before openings

    def span(node: ast.AST) -> tuple[int, int]:
        start = offset(getattr(node, "lineno", 1), getattr(node, "col_offset", 0))
        return start, offset(getattr(node, "end_lineno", None) or 1, getattr(node, "end_col_offset", None) or 0)

    def wrap(node: ast.expr) -> None:
        start, end = span(node)
        edits.append((start, 1, start, f"{ANY_FUNCTION}("))
        edits.append((end, 0, end, ")"))

    def replace_annotation(node: ast.expr) -> None:
        start, end = span(node)
        edits.append((start, 1, end, ANY_TYPE))
        skip.update(id(n) for n in ast.walk(node))

    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            # Positions inside f-strings are not reliable before Python 3.12: left as written.
            skip.update(id(n) for n in ast.walk(node) if n is not node)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, _BUILT) and not isinstance(getattr(node, "ctx", ast.Load()), ast.Store | ast.Del):
            wrap(node)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _CONSTRUCTORS
            and not rebound.get(node.func.id)
        ):
            wrap(node)
        elif isinstance(node, ast.arg) and node.annotation is not None:
            replace_annotation(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            replace_annotation(node.returns)
        elif isinstance(node, ast.AnnAssign):
            replace_annotation(node.annotation)
    edits.sort(key=lambda x: (x[0], x[1]))
    parts: list[str] = []
    last = 0
    for start, _, end, text in edits:
        parts.append(code[last:start])
        parts.append(text)
        last = end
    parts.append(code[last:])
    new = "".join(parts)
    return CheckedSource(new, tuple((s, e, len(t)) for s, _, e, t in edits), starts, _line_starts(new))
