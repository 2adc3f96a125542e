"""Bounds on the work a caller or a tool definition can make the index do.

Tool definitions come from upstream servers and queries from callers: both are hostile
input. Every number here sits well above what the real catalogs in ``tests/data/eval`` use
(their largest description has 5,360 characters, their widest tool 44 parameters, their
longest query 277 words), so results on real catalogs do not depend on them.
"""

from __future__ import annotations

__all__ = [
    "MAX_ECHO_CHARS",
    "MAX_FIELD_CHARS",
    "MAX_ID_CHARS",
    "MAX_PARAMS",
    "MAX_PARAM_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_WORDS",
    "MAX_TYPO_ENTRIES",
    "MAX_TYPO_NAMESPACE_ENTRIES",
    "MAX_TYPO_WORD_CHARS",
    "clip",
]

MAX_QUERY_CHARS = 8_192
"""Characters of a search query that are read; the rest is ignored."""
MAX_QUERY_WORDS = 256
"""Searchable words (stopwords not counted) of a query that are considered; later ones are ignored."""
MAX_ID_CHARS = 128 + 1 + 128 + 1 + 64
"""The longest valid id: namespace, name and version at their maximum lengths, with two ``:``."""
MAX_FIELD_CHARS = 16_384
"""Characters of one indexed text field (description, title, tags, all parameter names, all
parameter descriptions, namespace description) that are tokenised for search."""
MAX_PARAMS = 256
"""Schema parameters (nested ones included) whose names and descriptions are indexed."""
MAX_PARAM_CHARS = 8_192
"""Characters of one parameter's description (with its enum values) that are indexed."""
MAX_TYPO_WORD_CHARS = 32
"""Longest word (letters only, 3 at least) that typo correction and abbreviation expansion reach;
the longest word of the evaluation catalogs has 19 letters, of Microsoft Graph's OpenAPI document 50."""
MAX_TYPO_NAMESPACE_ENTRIES = 32_768
"""Typo-table entries (a word of n letters makes n + 1) one namespace's words may add, once for
its tools' names, titles and parameter names and once more for the rest of their text
(descriptions, parameter descriptions, tags, the namespace's description). The largest real
namespaces need about 10,000 (names) and 15,600 (the rest); a word past the budget is found as
written but not corrected."""
MAX_TYPO_ENTRIES = 262_144
"""Typo-table entries of all namespaces together (the evaluation catalogs' 3,500 tools make
61,000): past it, no new word becomes a typo target."""
MAX_ECHO_CHARS = 200
"""Characters of an id, name, namespace or query that an error message repeats."""


def clip(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """``text`` if it has at most ``limit`` characters, else its head and ``…`` (``limit`` characters in all).

    Args:
        text: Text that came from outside (an id, a name, a query).
        limit: Maximum length, the marker included (at least 2).

    Returns:
        The text, or its first ``limit - 1`` characters followed by ``…``.
    """
    if len(text) <= limit:
        return text
    cut = limit - 1
    # Never leave half of a surrogate pair (only possible in str built with surrogateescape).
    if "\ud800" <= text[cut - 1] <= "\udbff":
        cut -= 1
    return text[:cut] + "…"
