"""Errors raised by tooldocs.

Every error derives from :class:`ToolDocsError`::

    ToolDocsError
    ├── DocNotFoundError          no documentation for this tool id (wraps toolindex's ToolNotFoundError)
    ├── InvalidDetailLevelError   the detail level is not summary | schema | full
    ├── ArgsTooLargeError         an example's args exceed the size caps (says which cap)
    └── SchemaRenderError         a JSON Schema cannot be rendered (names the tool and the path)
"""

from __future__ import annotations

__all__ = [
    "ArgsTooLargeError",
    "DocNotFoundError",
    "InvalidDetailLevelError",
    "SchemaRenderError",
    "ToolDocsError",
]


class ToolDocsError(Exception):
    """Root of every error raised by tooldocs."""


class DocNotFoundError(ToolDocsError, LookupError):
    """No documentation exists for the tool id.

    Attributes:
        tool_id: The id that was asked for.
        suggestions: Close ids, best first (may be empty).
    """

    def __init__(self, tool_id: str, suggestions: list[str] | None = None) -> None:
        self.tool_id = tool_id
        self.suggestions = list(suggestions or [])
        msg = f"no documentation for tool {tool_id!r}"
        if self.suggestions:
            msg += "; did you mean " + ", ".join(repr(s) for s in self.suggestions) + "?"
        super().__init__(msg)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidDetailLevelError(ToolDocsError, ValueError):
    """The detail level is not one of ``summary``, ``schema``, ``full``."""

    def __init__(self, level: object) -> None:
        self.level = level
        super().__init__(f"invalid detail level {level!r}; use 'summary', 'schema' or 'full'")


class ArgsTooLargeError(ToolDocsError, ValueError):
    """An example's arguments exceed a size cap.

    Attributes:
        cap: Which cap was exceeded (``depth``, ``keys`` or ``chars``).
        limit: The cap's value.
        actual: What was found.
    """

    def __init__(self, cap: str, limit: int, actual: int) -> None:
        self.cap = cap
        self.limit = limit
        self.actual = actual
        super().__init__(f"example args too large: {cap} is {actual}, the cap is {limit}")


class SchemaRenderError(ToolDocsError, ValueError):
    """A JSON Schema could not be rendered as Python.

    Attributes:
        path: JSON pointer of the offending part of the schema.
        reason: Why.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"cannot render schema at {path or '/'}: {reason}")
