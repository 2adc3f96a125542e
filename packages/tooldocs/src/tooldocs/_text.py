"""Text helpers: capping by characters with a visible marker, one-line text, Python literals."""

from __future__ import annotations

import json
import math
import re
import sys
import unicodedata
from typing import Any, cast

__all__ = [
    "MARKER",
    "SCAN_CHARS",
    "cap_text",
    "first_sentence",
    "json_text",
    "one_line",
    "py_comment",
    "py_literal",
    "py_str",
]

MARKER = "…"
"""Appended to text that was cut (one character, U+2026)."""

SCAN_CHARS = 16_384
"""Characters of a text read to find its first sentence or its links (real descriptions are shorter)."""

_SPACE = re.compile(r"\s+")
# Characters that must never reach generated source: C0/C1 controls (NUL makes ast.parse fail).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[`\"'])")
_ZWJ = "\u200d"
# A period that ends one of these does not end the sentence.
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|approx|incl|cf|no|Dr|Mr|Ms|Mrs|St)\.|\b[A-Z]\.)$", re.IGNORECASE)


def json_text(value: Any) -> str:
    """``value`` as compact JSON text: no spaces, non-ASCII kept as is, ``str()`` of anything that is not JSON.

    The one JSON helper of the packages above: what an output budget measures, a result's text,
    a stored record. An int too long for Python to print (``sys.get_int_max_str_digits()``) is
    written as a string saying about how many digits it has.

    Raises:
        ValueError: For a circular reference (or ``RecursionError`` for a value nested too deep).
    """
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except ValueError:
        tamed = _tame_ints(value, 0)
        if tamed is value:
            raise  # not an int: a circular reference
        return json.dumps(tamed, ensure_ascii=False, separators=(",", ":"), default=str)


_LOG10_2 = 0.30102999566398120


def _tame_ints(value: Any, depth: int) -> Any:
    """``value`` with every int too long to print replaced by a string (the same object when there is none)."""
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        most = sys.get_int_max_str_digits()
        digits = int(value.bit_length() * _LOG10_2) + 1
        return f"<an int of about {digits:,} digits>" if most and digits > most else value
    if depth > 200:
        return value
    if isinstance(value, dict):
        items = cast(dict[Any, Any], value)
        tamed: dict[Any, Any] = {k: _tame_ints(v, depth + 1) for k, v in items.items()}
        return items if all(tamed[k] is v for k, v in items.items()) else tamed
    if isinstance(value, list | tuple):
        seq = cast(list[Any], value)
        out: list[Any] = [_tame_ints(v, depth + 1) for v in seq]
        return seq if all(a is b for a, b in zip(out, seq, strict=True)) else out
    return value


def _is_joiner(ch: str) -> bool:
    # A cut right before one of these would split a user-perceived character in two
    # (combining accents, variation selectors, zero-width joiners, emoji modifiers).
    return (
        unicodedata.combining(ch) != 0
        or ch == _ZWJ
        or "\ufe00" <= ch <= "\ufe0f"
        or "\U0001f3fb" <= ch <= "\U0001f3ff"
        or unicodedata.category(ch) in {"Mn", "Me", "Mc"}
    )


def cap_text(text: str, limit: int, marker: str = MARKER) -> str:
    """Cap ``text`` at ``limit`` characters, ending cut text with ``marker``.

    The result is a Python ``str``, so it never holds half a UTF-8 sequence; the cut
    also avoids separating a base character from the combining marks, joiners or
    variation selectors that follow it. A text that fits is returned unchanged.

    Args:
        text: The text.
        limit: Maximum length in characters, the marker included.
        marker: What marks the cut.

    Returns:
        ``text`` itself, or a prefix of it followed by ``marker``, at most ``limit`` characters.

    Raises:
        ValueError: If ``limit`` is smaller than the marker.

    Example:
        >>> cap_text("Hello, world", 8)
        'Hello,…'
        >>> cap_text("Cafe\u0301 au lait", 5)  # "é" written as "e" + combining accent stays whole
        'Caf…'
    """
    if len(text) <= limit:
        return text
    if limit < len(marker):
        raise ValueError(f"limit {limit} is shorter than the marker {marker!r}")
    cut = limit - len(marker)
    while 0 < cut < len(text) and _is_joiner(text[cut]):
        cut -= 1
    # Do not leave a lone high surrogate (only possible in str built from surrogateescape data).
    if cut > 0 and "\ud800" <= text[cut - 1] <= "\udbff":
        cut -= 1
    return text[:cut].rstrip() + marker


def one_line(text: str | None) -> str:
    """Collapse whitespace (newlines included) to single spaces and drop control characters.

    Args:
        text: Any text, or ``None``.

    Returns:
        A single line (empty for no text).
    """
    if not text:
        return ""
    return _SPACE.sub(" ", _CONTROL.sub(" ", text)).strip()


def first_sentence(text: str | None, limit: int) -> str:
    """The first sentence of ``text`` on one line, capped at ``limit`` characters.

    Args:
        text: A description.
        limit: Maximum length in characters.

    Returns:
        The first sentence (or paragraph, when no sentence end is found), capped.
    """
    if not text:
        return ""
    # The first sentence lies in the head of the text: a megabyte-long description costs no more.
    first = one_line(text[: max(SCAN_CHARS, 4 * limit)].strip().split("\n\n", 1)[0])
    for m in _SENTENCE_END.finditer(first):
        if m.start() >= 12 and not _ABBREVIATION.search(first, 0, m.start()):
            first = first[: m.start()]
            break
    return cap_text(first, limit)


def py_comment(text: str | None, limit: int) -> str:
    """Text safe to put after ``#`` in Python source: one line, no controls, capped.

    Args:
        text: Any text.
        limit: Maximum length in characters.

    Returns:
        The comment text (without the ``#``).
    """
    return cap_text(one_line(text), limit) if limit > 0 else ""


def py_str(value: str) -> str:
    """A double-quoted Python string literal for ``value``.

    Args:
        value: Any string.

    Returns:
        Source text that evaluates to ``value``.
    """
    if _has_surrogate(value):
        # Lone surrogates cannot be encoded as source text; escape everything instead.
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False)


def _has_surrogate(value: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in value)


def py_literal(value: Any, limit: int = 10_000) -> str | None:
    """Python source for a JSON value (``None``, bools, numbers, strings, lists, dicts).

    Args:
        value: A JSON-compatible value.
        limit: Give up (return ``None``) when the literal would be longer than this.

    Returns:
        Source text that evaluates to ``value``, or ``None`` when the value has no
        short literal (non-JSON objects, NaN, too long, nested over 200 levels). The work
        is bounded by ``limit``, not by the size of ``value``.
    """
    out = _literal(value, limit, 0)
    if out is None or len(out) > limit:
        return None
    return out


_MAX_LITERAL_DEPTH = 200


def _literal(value: Any, room: int, depth: int) -> str | None:
    # Gives up as soon as the literal cannot fit in ``room`` characters, so a huge or deeply
    # nested value costs no more than a short one.
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        # More bits than 4 * room means more digits than room; str() also refuses past 4,300 digits.
        if value.bit_length() > min(4 * room, 14_000):
            return None
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return py_str(value) if len(value) + 2 <= room else None
    if room < 2 or depth >= _MAX_LITERAL_DEPTH:
        # No room left for the brackets, or nested deeper than any literal worth showing.
        return None
    if isinstance(value, list | tuple):
        parts: list[str] = []
        used = 2
        for v in value:  # pyright: ignore[reportUnknownVariableType]
            p = _literal(v, room - used, depth + 1)
            if p is None:
                return None
            parts.append(p)
            used += len(p) + 2
            if used > room + 2:
                return None
        return "[" + ", ".join(parts) + "]"
    if isinstance(value, dict):
        items: list[str] = []
        used = 2
        for k, v in value.items():  # pyright: ignore[reportUnknownVariableType]
            if not isinstance(k, str) or len(k) + 2 > room - used:
                return None
            p = _literal(v, room - used, depth + 1)
            if p is None:
                return None
            items.append(f"{py_str(k)}: {p}")
            used += len(items[-1]) + 2
            if used > room + 2:
                return None
        return "{" + ", ".join(items) + "}"
    return None
