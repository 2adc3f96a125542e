"""A snippet in Python 3.12's f-string syntax, made readable by an older host's parser, position for position.

Monty reads Python 3.12's f-strings (PEP 701), which may reuse their own quote inside a replacement
field: ``f"{office["city"]}"``. A host on Python 3.11 refuses that text, and a check that cannot
parse a snippet checks nothing of it. :func:`readable` gives the same program with each string
nested in a replacement field re-quoted with the other quote (``f"{office['city']}"``): the same
length, line for line, so every position the check reports is the snippet's own.

It gives up (``None``) where no such swap exists, or the text is not plain to read: a backslash or a
comment inside a replacement field, a backslash before a brace or before a named character (``N{...}``)
in an f-string, a nested string that holds the other quote or is triple-quoted, both quotes taken by
the enclosing f-strings. The snippet then runs unchecked, as any text the host cannot parse.
"""

from __future__ import annotations

from typing import Final

__all__ = ["readable"]

_PREFIXES: Final = frozenset({"", "r", "u", "f", "b", "br", "rb", "fr", "rf"})
_OTHER: Final = {'"': "'", "'": '"'}


class _Unreadable(Exception):
    """No same-length rewrite exists."""


def readable(code: str) -> str | None:
    """``code`` with nested strings re-quoted so that this host may parse it (see the module docstring).

    ``None`` when it has nothing to re-quote, or no same-length rewrite exists.
    """
    edits: dict[int, str] = {}
    try:
        _Scanner(code, edits).module()
    except (_Unreadable, IndexError):
        return None
    if not edits:
        return None
    chars = list(code)
    for at, quote in edits.items():
        chars[at] = quote
    return "".join(chars)


class _Scanner:
    """Walks the text's strings; records the quote swaps nested strings need (index → new quote)."""

    __slots__ = ("_code", "_edits")

    def __init__(self, code: str, edits: dict[int, str]) -> None:
        self._code = code
        self._edits = edits

    def module(self) -> None:
        code, i = self._code, 0
        while i < len(code):
            ch = code[i]
            if ch == "#":
                end = code.find("\n", i)
                i = len(code) if end < 0 else end
            elif ch in "\"'":
                i = self._string(i, "", ())
            elif ch.isalpha() and (i == 0 or not _word(code[i - 1])):
                j = i
                while j < len(code) and _word(code[j]):
                    j += 1
                if j < len(code) and code[j] in "\"'" and code[i:j].lower() in _PREFIXES:
                    i = self._string(j, code[i:j].lower(), ())
                else:
                    i = j
            else:
                i += 1

    def _string(self, i: int, prefix: str, enclosing: tuple[str, ...]) -> int:
        """Scan the literal whose quote starts at ``i``; the index just after it."""
        code = self._code
        quote = code[i] * 3 if code.startswith(code[i] * 3, i) else code[i]
        if enclosing and code[i] in enclosing:
            other = _OTHER[code[i]]
            if len(quote) == 3 or other in enclosing:
                raise _Unreadable
            new = other
        else:
            new = code[i]
        j = i + len(quote)
        while not code.startswith(quote, j):
            ch = code[j]
            if ch == "\n" and len(quote) == 1:
                raise _Unreadable
            if ch == "\\":
                if enclosing:
                    raise _Unreadable  # no backslash in a replacement field before 3.12
                if "f" in prefix and code[j + 1 : j + 2] in ("{", "}", "N"):
                    # ``\{{`` is a backslash and a brace; ``\N{...}`` a named character: given up.
                    raise _Unreadable
                j += 2
                continue
            if enclosing and ch == new:
                raise _Unreadable
            if "f" in prefix and ch in "{}":
                if code.startswith(ch * 2, j):
                    j += 2
                    continue
                if ch == "{":
                    j = self._field(j + 1, (*enclosing, new))
                    continue
            j += 1
        if new != code[i]:
            self._edits[i] = new
            self._edits[j] = new
        return j + len(quote)

    def _field(self, i: int, enclosing: tuple[str, ...]) -> int:
        """Scan a replacement field's expression (and format spec) from ``i``; the index after its ``}``."""
        code, depth = self._code, 0
        while True:
            ch = code[i]
            if ch in "\"'":
                i = self._string(i, "", enclosing)
                continue
            if ch.isalpha() and not _word(code[i - 1]):
                j = i
                while _word(code[j]):
                    j += 1
                if code[j] in "\"'" and code[i:j].lower() in _PREFIXES:
                    i = self._string(j, code[i:j].lower(), enclosing)
                else:
                    i = j
                continue
            if ch in "#\\":
                raise _Unreadable
            if ch in "([{":
                depth += 1
            elif ch in ")]" or (ch == "}" and depth):
                depth -= 1
            elif ch == "}":
                return i + 1
            elif ch == ":" and not depth:
                return self._spec(i + 1, enclosing)
            i += 1

    def _spec(self, i: int, enclosing: tuple[str, ...]) -> int:
        """Scan a format spec (which may hold fields of its own); the index after the field's ``}``."""
        code = self._code
        while True:
            ch = code[i]
            if ch == "{":
                i = self._field(i + 1, enclosing)
            elif ch == "}":
                return i + 1
            elif ch in "\\\n" or ch == enclosing[-1]:
                raise _Unreadable
            else:
                i += 1


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"
