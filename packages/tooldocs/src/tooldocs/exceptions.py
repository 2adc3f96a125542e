"""Errors raised by tooldocs.

Every error derives from :class:`ToolDocsError`::

    ToolDocsError
    ├── DocNotFoundError          no documentation for this tool id (wraps toolindex's ToolNotFoundError)
    ├── InvalidDetailLevelError   the detail level is not summary | schema | full
    ├── ArgsTooLargeError         an example's args exceed the size caps (says which cap)
    ├── InvalidExampleError       an example is malformed or does not fit the tool's schema
    └── SchemaRenderError         a JSON Schema cannot be rendered (names the tool and the path)
"""

from __future__ import annotations

__all__ = [
    "ArgsTooLargeError",
    "DocNotFoundError",
    "InvalidDetailLevelError",
    "InvalidExampleError",
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
        reason: Why the lookup failed, when it is more than "not found" (ambiguous or malformed id).
    """

    def __init__(self, tool_id: str, suggestions: list[str] | None = None, reason: str | None = None) -> None:
        self.tool_id = tool_id
        self.suggestions = list(suggestions or [])
        self.reason = reason
        msg = f"no documentation for tool {tool_id!r}"
        if reason:
            msg += f": {reason}"
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
        tool_id: The tool the example is for, when known.
        example: The example's id or title, when known.
        path: JSON pointer inside the args where the cap was hit (``""`` for the whole args).
    """

    def __init__(
        self,
        cap: str,
        limit: int,
        actual: int,
        *,
        tool_id: str | None = None,
        example: str | None = None,
        path: str = "",
    ) -> None:
        self.cap = cap
        self.limit = limit
        self.actual = actual
        self.tool_id = tool_id
        self.example = example
        self.path = path
        where = ""
        if example:
            where += f" of example {example!r}"
        if tool_id:
            where += f" for tool {tool_id!r}"
        at = f" at {path}" if path else ""
        super().__init__(f"example args{where} too large: {cap}{at} is {actual}, the cap is {limit}")


class InvalidExampleError(ToolDocsError, ValueError):
    """An example is malformed, or its args do not fit the tool's input schema.

    Attributes:
        example: The example's id or title.
        field: The offending field (``args``, ``args.<name>``, ``title``, ...).
        reason: Why.
        tool_id: The tool, when known.
    """

    def __init__(self, example: str, field: str, reason: str, *, tool_id: str | None = None) -> None:
        self.example = example
        self.field = field
        self.reason = reason
        self.tool_id = tool_id
        for_tool = f" for tool {tool_id!r}" if tool_id else ""
        super().__init__(f"invalid example {example!r}{for_tool}, field {field!r}: {reason}")


class SchemaRenderError(ToolDocsError, ValueError):
    """A JSON Schema could not be rendered as Python.

    Attributes:
        path: JSON pointer of the offending part of the schema.
        reason: Why.
        tool_id: The tool whose schema it is, when known.
    """

    def __init__(self, path: str, reason: str, *, tool_id: str | None = None) -> None:
        self.path = path
        self.reason = reason
        self.tool_id = tool_id
        of = f" of tool {tool_id!r}" if tool_id else ""
        super().__init__(f"cannot render schema{of} at {path or '/'}: {reason}")
