"""The work budget of one render: schema nodes visited and characters produced.

Schemas come from upstream servers, so they are hostile input: a recursive ``allOf`` of
``$ref``s, a union of thousands of branches or a tool with 30,000 properties must cost a
bounded amount of time and memory. The renderer spends from one budget per signature
(or per :func:`~tooldocs.schema_to_python` call); once it is spent, the rest renders as
``Any`` and a single warning says so.

The sizes below sit far above what real catalogs need (over the catalogs in
``tests/data/eval`` a signature visits at most 78 schema nodes, its text has at most 4,289
characters, one annotation at most 339, a class name at most 82, a property name at most
37 characters), so they never change a real tool's signature.
"""

from __future__ import annotations

__all__ = [
    "MAX_ANNOTATION",
    "MAX_CLASS_NAME",
    "MAX_KEY",
    "MAX_REF",
    "MAX_SCAN",
    "MAX_WARNINGS",
    "RenderBudget",
]

MAX_ANNOTATION = 4_000
"""Characters of one annotation (a union of many literals, say); a larger type is shown as ``Any``."""
MAX_CLASS_NAME = 160
"""Characters of a generated class name (names are built from nested property names)."""
MAX_KEY = 256
"""Characters of a property name that can be shown; a longer one is not rendered (and says so)."""
MAX_REF = 1_024
"""Characters of a ``$ref``; a longer one is not resolved."""
MAX_SCAN = 4_096
"""Items of one list a render reads (enum values inspected for their types)."""
MAX_WARNINGS = 20
"""Warnings kept per render; the last one says how many more there were."""


class RenderBudget:
    """Counts the work of one render against ``max_nodes`` schema nodes and ``max_chars`` characters.

    Not thread-safe: one budget belongs to one render.
    """

    __slots__ = ("chars", "max_chars", "max_nodes", "nodes", "spent")

    def __init__(self, max_nodes: int, max_chars: int) -> None:
        self.max_nodes = max_nodes
        self.max_chars = max_chars
        self.nodes = 0
        self.chars = 0
        self.spent: str | None = None
        """Why the budget ran out, or ``None`` while there is some left."""

    def visit(self, n: int = 1) -> bool:
        """Count ``n`` schema nodes; ``False`` once the budget is spent."""
        if self.spent is not None:
            return False
        self.nodes += n
        if self.nodes > self.max_nodes:
            self.spent = f"schema too large to render (more than {self.max_nodes:,} schema nodes)"
            return False
        return True

    def emit(self, n: int) -> bool:
        """Count ``n`` characters of output; ``False`` once the budget is spent."""
        if self.spent is not None:
            return False
        self.chars += n
        if self.chars > self.max_chars:
            self.spent = f"signature too large to show (more than {self.max_chars:,} characters)"
            return False
        return True
