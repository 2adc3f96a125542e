"""The snippet as ``ty`` reads it: rewritten so that ``ty`` types only what is certain, with the way back.

**What ty reads.** Python does not check types at run time, and ``ty``'s inference of what a
snippet builds itself is narrower than what the run accepts: ``[{"name": "c", "observations":
["x"]}]`` is a ``list[dict[str, str | list[str]]]`` to it, a list built with ``append`` takes the
union of everything appended, a dict display keeps the type of its first values. Such types say
nothing certain about the values at run time. So every list, dict and set the snippet builds (a
display, a comprehension, a ``list()``/``dict()``/``set()`` call) is handed to ``ty`` as ``Any``
(wrapped in a call of :data:`ANY_FUNCTION`), and so are the annotations the snippet writes, which
Python does not enforce. What keeps its type: the tools' results (declared by their output
schemas), scalars and tuples, and whatever flows from them. A ``run_tool("ns:x", ...)`` call with
a literal id is handed over as ``toolcode_result(<the module function>, run_tool(...))``, so its
result is typed exactly as ``ns.x(...)``'s is; one of the id and keywords only, or of the id and
an object display of literal keys (:func:`as_keywords`), as the module function called with
those keywords, so they are typed as its arguments too. An import from
``tools`` whose name the snippet binds again is handed over as an import under another name and a plain assignment
(``from tools import helpdesk as toolcode_import_0; helpdesk = toolcode_import_0``): to ``ty`` an
import declares its name's type for good, and a Python name may be bound to anything later.
"""

from __future__ import annotations

import ast
import bisect
import keyword
import re
import textwrap
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, cast

from toolcode._modules import PACKAGE
from toolcode._typecheck._calls import RUN_TOOL
from toolcode._typecheck._diagnostic import Positions
from toolcode.engines._monty_imports import sandbox_import
from toolcode.engines._monty_pool import sandbox_module

__all__ = [
    "ANY_FUNCTION",
    "ANY_TYPE",
    "BUILT",
    "MAX_CHARS",
    "MODULE_ALIAS",
    "RESULT_FUNCTION",
    "CheckedSource",
    "checked_source",
    "prepared",
]

ANY_FUNCTION: Final = "toolcode_dynamic"
ANY_TYPE: Final = "ToolcodeDynamic"
RESULT_FUNCTION: Final = "toolcode_result"
IMPORT_ALIAS: Final = "toolcode_import_"
"""A ``tools`` import whose name the snippet binds again is imported under this prefix, then assigned."""
MODULE_ALIAS: Final = "toolcode_module_"
"""The warm session binds each module it holds under this prefix too (a snippet may rebind ``tools``)."""
BUILT = (ast.Dict, ast.List, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp)
_CONSTRUCTORS = frozenset({"dict", "list", "set"})
_WRAP = "async def __toolcode_check__():\n"
MAX_CHARS = 20_000
"""Longer snippets (about 500 lines) are not checked before they run: they run unchecked, their
calls checked as they are made. The check's cost grows with the snippet, and one caller's must not
cost everyone else (``bench/bystander.py``, ``typecheck_flood``)."""


def _wrapped(code: str) -> str | None:
    """The snippet as the body of a function that is defined, never called; ``None`` if it cannot be.

    The result is parsed to make sure every statement is the function's (a form feed, say, resets
    Python's indentation count), so that nothing of the snippet runs in the checker.
    """
    if len(code) > MAX_CHARS:
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
    return (0, *(i + 1 for i, ch in enumerate(text) if ch == "\n"))


def checked_source(
    code: str, tree: ast.Module, bindings: Mapping[str, int], typed: Mapping[ast.Call, Sequence[str]] | None = None
) -> CheckedSource:
    """``code`` with what it builds wrapped as ``Any`` and its own annotations ``Any``, and the way back.

    ``bindings`` counts how many times each name is bound (a rebound ``list`` is not the constructor);
    each call in ``typed`` (``run_tool("ns:x", ...)``) is typed as its module function (``<module>.<name>``),
    a ``run_tools`` call as the tuple of its calls' results.
    """
    positions = Positions(code)
    starts = _line_starts(code)
    # (position, order, nesting, end, text): closings sort before openings, inner closings first.
    edits: list[tuple[int, int, int, int, str]] = []

    def span(node: ast.AST) -> tuple[int, int]:
        line, end_line = getattr(node, "lineno", 1), getattr(node, "end_lineno", None) or 1
        start = starts[line - 1] + positions.char_column(line, getattr(node, "col_offset", 0))
        return start, starts[end_line - 1] + positions.char_column(end_line, getattr(node, "end_col_offset", None) or 0)

    def wrap(node: ast.expr, head: str = f"{ANY_FUNCTION}(", tail: str = ")") -> None:
        start, end = span(node)
        edits.append((start, 1, -end, start, head))
        edits.append((end, 0, -start, end, tail))

    def replace_annotation(node: ast.expr) -> None:
        start, end = span(node)
        edits.append((start, 1, -end, end, ANY_TYPE))
        skip.update(id(n) for n in ast.walk(node))

    def rebind(stmt: ast.Import | ast.ImportFrom) -> None:
        """Import what the snippet binds again under another name, then assign it (a binding, not a declaration)."""
        assigned: list[str] = []
        for a in stmt.names:
            local = a.asname or a.name
            if isinstance(stmt, ast.Import) and a.asname is None and "." in a.name:
                continue  # ``import tools.x`` binds ``tools``: left as written
            if bindings.get(local, 0) > 1:
                alias = f"{IMPORT_ALIAS}{len(imports)}"
                imports.append(alias)
                start, end = span(a)
                edits.append((start, 1, -end, end, f"{a.name} as {alias}"))
                assigned.append(f"{local} = {alias}")
        if assigned:
            start, end = span(stmt)
            edits.append((end, 0, -start, end, "".join(f"; {x}" for x in assigned)))

    imports: list[str] = []
    # Positions inside f-strings are not reliable before Python 3.12: left as written.
    skip = {id(n) for f in ast.walk(tree) if isinstance(f, ast.JoinedStr) for n in ast.walk(f) if n is not f}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import | ast.ImportFrom) and (as_run := sandbox_import(node, sandbox_module)):
            # ``from tools.time import f``: read as the run reads it (the checker holds ``time`` as
            # the package's attribute too), with plain assignments that bind and do not declare.
            start, end = span(node)
            edits.append((start, 1, -end, end, as_run))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == PACKAGE:
            rebind(node)
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == PACKAGE for a in node.names):
            rebind(node)
        if typed and isinstance(node, ast.Call) and node in typed:
            first, *rest = typed[node]
            if isinstance(node.func, ast.Name) and node.func.id == "run_tools":
                # Unpacked into names: a tuple of the results, the call kept in its first item.
                more = "".join(f", {RESULT_FUNCTION}({MODULE_ALIAS}{f}, 0)" for f in rest)
                wrap(node, f"({RESULT_FUNCTION}({MODULE_ALIAS}{first}, ", f"){more}{'' if rest else ','})")
            elif _keywords_only(node):
                # ``run_tool("ns:x", a=1)`` is the module function called with the same keywords, as
                # written: its arguments are typed as the function's, and its result too.
                start, end = span(node)
                head = span(node.keywords[0])[0] if node.keywords else end
                edits.append((start, 1, -head, head, f"{MODULE_ALIAS}{first}(" + ("" if node.keywords else ")")))
            elif (keys := as_keywords(node, code, span)) is not None:
                # ``run_tool("ns:x", {"a": 1})``: the module function called with ``a=1``.
                arguments = cast("ast.Dict", arguments_object(node))
                skip.add(id(arguments))
                start, end = span(node)
                if keys:
                    # ``run_tool("ns:x", {`` → ``ns.x(``; each ``"a": `` → ``a=``; ``})`` → ``)``.
                    head = span(cast("ast.expr", arguments.keys[0]))[0]
                    edits.append((start, 1, -head, head, f"{MODULE_ALIAS}{first}("))
                    for name, key, value in zip(keys, arguments.keys, arguments.values, strict=True):
                        at = span(value)[0]
                        edits.append((span(cast("ast.expr", key))[0], 1, -at, at, f"{name}="))
                    tail = span(arguments.values[-1])[1]
                    edits.append((tail, 1, -end, end, ")"))
                else:
                    edits.append((start, 1, -end, end, f"{MODULE_ALIAS}{first}()"))
            else:
                wrap(node, f"{RESULT_FUNCTION}({MODULE_ALIAS}{first}, ")
        elif isinstance(node, BUILT) and not isinstance(getattr(node, "ctx", ast.Load()), ast.Store | ast.Del):
            wrap(node)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _CONSTRUCTORS
            and not bindings.get(node.func.id)
        ):
            wrap(node)
        elif isinstance(node, ast.arg) and node.annotation is not None:
            replace_annotation(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            replace_annotation(node.returns)
        elif isinstance(node, ast.AnnAssign):
            replace_annotation(node.annotation)
    edits.sort(key=lambda x: x[:3])
    parts: list[str] = []
    last = 0
    for start, _, _, end, text in edits:
        parts.append(code[last:start])
        parts.append(text)
        last = end
    parts.append(code[last:])
    new = "".join(parts)
    return CheckedSource(new, tuple((s, e, len(t)) for s, _, _, e, t in edits), starts, _line_starts(new))


def _keywords_only(call: ast.Call) -> bool:
    """``run_tool("ns:x", k=v, **more)``: the id alone, then keywords that are all the tool's arguments."""
    return (
        isinstance(call.func, ast.Name)
        and call.func.id in RUN_TOOL
        and len(call.args) == 1
        and not any(k.arg in ("tool_id", "args") for k in call.keywords)
    )


def arguments_object(call: ast.Call) -> ast.Dict | None:
    """The object display a ``run_tool``/``run_tool_async`` call gives as its arguments, if that is all it gives.

    ``run_tool("ns:x", {...})``, ``run_tool("ns:x", args={...})`` or ``run_tool(tool_id="ns:x",
    args={...})``; ``None`` for any other call, or one with keywords of the tool's beside it.
    """
    if not (isinstance(call.func, ast.Name) and call.func.id in RUN_TOOL) or len(call.args) > 2:
        return None
    named = {k.arg: k.value for k in call.keywords}
    if set(named) - {"tool_id", "args"} or len(named) != len(call.keywords):
        return None
    given = call.args[1] if len(call.args) == 2 else named.get("args")
    if len(call.args) + len(named) != 2:
        return None
    return given if isinstance(given, ast.Dict) else None


def as_keywords(call: ast.Call, code: str, span: Callable[[ast.AST], tuple[int, int]]) -> tuple[str, ...] | None:
    """The keywords ``run_tool("ns:x", {"a": 1, "b": x})``'s arguments object is written as (``None``: it is not).

    Only an object display of distinct string keys that are identifiers as Python reads them
    (``from``, a keyword, is not; nor ``"per-page"``), with nothing between a key and its value but
    ``:``, and nothing after the last value but ``}``, ``,`` and ``)`` (comments there are dropped):
    a parenthesised key or value, or a ``**spread``, leaves the call as it is. A parameter named like an
    identifier keeps its name in the module function's signature (:class:`tooldocs.NameMap`), so
    ``a=`` is the argument ``"a"``.
    """
    arguments = arguments_object(call)
    if arguments is None:
        return None
    keys: list[str] = []
    for key, value in zip(arguments.keys, arguments.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        name = key.value
        if not name.isidentifier() or keyword.iskeyword(name) or unicodedata.normalize("NFKC", name) != name:
            return None
        if _COMMENT.sub("", code[span(key)[1] : span(value)[0]]).strip() != ":":
            return None
        keys.append(name)
    if len(set(keys)) != len(keys):
        return None
    if keys and not _CLOSING.fullmatch(_COMMENT.sub("", code[span(arguments.values[-1])[1] : span(call)[1]])):
        return None
    return tuple(keys)


_COMMENT: Final = re.compile(r"#[^\n]*")
_CLOSING: Final = re.compile(r"\s*,?\s*}\s*,?\s*\)")
"""What may stand after an arguments object's last value, comments aside, for it to be read as keywords."""


def prepared(
    code: str, tree: ast.Module, bindings: Mapping[str, int], typed: Mapping[ast.Call, Sequence[str]] | None
) -> tuple[CheckedSource, str | None]:
    source = checked_source(code, tree, bindings, typed)
    return source, _wrapped(source.text)
