"""Reading the types ``ty`` writes in its findings (``Literal["a", "b"]``, ``int | None``, ``list[dict[str, Any]]``)."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["literal_kinds", "one_value_type", "split_top_level", "top_level"]


def one_value_type(t: str, by_type: bool = False) -> bool:
    """Whether ``t`` is the type of each value it stands for (no union, nothing unknown).

    ``by_type``: what is asked of the values depends on their runtime type only (an attribute, an
    operator), so a ``Literal`` whose members all have one type (``Literal["low", "urgent"]``, all
    ``str``) is one value's type too.
    """
    if not t or "Unknown" in t or "@Todo" in t or t in ("Any", "object") or top_level(t, "|") > 1:
        return False  # ``object``: what ``ty`` knows of a TypedDict's ``.values()``, not the value's type
    if not (t.startswith("Literal[") and t.endswith("]")):
        return True
    if top_level(t[8:-1], ",") == 1:
        return True
    kinds = literal_kinds(t)
    return by_type and len(kinds) == 1 and None not in kinds


def literal_kinds(t: str) -> set[str | None]:
    """The runtime types of the members of ``Literal[...]`` ``t`` (empty for another type)."""
    if not (t.startswith("Literal[") and t.endswith("]")):
        return set()
    return {_literal_type(m) for m in split_top_level(t[8:-1], ",")}


_LITERAL_KINDS: Final = (
    (re.compile(r'^"(?:[^"\\]|\\.)*"$'), "str"),
    (re.compile(r"^'(?:[^'\\]|\\.)*'$"), "str"),
    (re.compile(r"^-?\d+$"), "int"),
    (re.compile(r"^(True|False)$"), "bool"),
)


def _literal_type(member: str) -> str | None:
    """The runtime type of a member of ``ty``'s ``Literal[...]`` (``None``: another kind, bytes or an enum's)."""
    member = member.strip()
    return next((kind for pattern, kind in _LITERAL_KINDS if pattern.match(member)), None)


def top_level(text: str, sep: str) -> int:
    """How many parts ``text`` has, split at ``sep`` outside brackets and quotes."""
    return len(split_top_level(text, sep))


def split_top_level(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside brackets and quotes."""
    depth, quote, start = 0, "", 0
    parts: list[str] = []
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]
