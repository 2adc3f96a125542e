"""Imports of a namespace the sandbox keeps the name of (``tools.time``), put the way the sandbox takes them.

Monty refuses a module named like one of its own (``time``) anywhere, ``tools.time`` included, so
the ``tools`` package holds such a namespace as an attribute: ``from tools import time`` and
``tools.time.f()`` work as they are. The other forms are written in those terms before the feed,
each on the lines it stood on (an error later in the snippet keeps its line)::

    import tools.time                -> import tools
    import tools.time as t           -> from tools import time as t
    from tools.time import f, g as h -> from tools import time as __toolcode_time; f = __toolcode_time.f; ...
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection

from toolcode._modules import PACKAGE

__all__ = ["importable", "sandbox_import"]

_HOLDER = "__toolcode_"


def importable(code: str, kept: Collection[str]) -> str:
    """``code`` with its imports of the namespaces in ``kept`` (named like sandbox modules) rewritten.

    Code that names none of them, or does not parse, is returned as it is.
    """
    if not any(f"{PACKAGE}.{name}" in code for name in kept):
        return code
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return code  # the sandbox reports it (too deep for the host's parser included)
    lines = code.splitlines(keepends=True)
    edits: list[tuple[ast.stmt, str]] = []
    for node in ast.walk(tree):
        text = sandbox_import(node, kept.__contains__)
        if text is not None and isinstance(node, ast.stmt):
            edits.append((node, text))
    # From the end, so that earlier positions stay right.
    for node, text in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        start = len(lines[first].encode()[: node.col_offset].decode())
        end = len(lines[last].encode()[: node.end_col_offset].decode())
        # The statement keeps its lines: continuation lines stand in for the ones it spanned.
        lines[first : last + 1] = [lines[first][:start] + text + " \\\n" * (last - first) + lines[last][end:]]
    return "".join(lines)


def sandbox_import(node: ast.AST, kept: Callable[[str], bool]) -> str | None:
    """The import ``node`` written in the sandbox's terms, or ``None`` when it needs no rewriting.

    ``kept`` tells the namespaces named like a sandbox module. The type checker reads the same statement.
    """
    if isinstance(node, ast.Import):
        parts: list[str] = []
        changed = False
        for a in node.names:
            head, _, rest = a.name.partition(".")
            if head == PACKAGE and rest and kept(rest):
                parts.append(f"from {PACKAGE} import {rest} as {a.asname}" if a.asname else f"import {PACKAGE}")
                changed = True
            else:
                parts.append(f"import {a.name}" + (f" as {a.asname}" if a.asname else ""))
        return "; ".join(parts) if changed else None
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
        head, _, rest = node.module.partition(".")
        if head != PACKAGE or not rest or not kept(rest) or any(a.name == "*" for a in node.names):
            return None
        holder = _HOLDER + rest
        binds = [f"{a.asname or a.name} = {holder}.{a.name}" for a in node.names]
        return "; ".join([f"from {PACKAGE} import {rest} as {holder}", *binds])
    return None
