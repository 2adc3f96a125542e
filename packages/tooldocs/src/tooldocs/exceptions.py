"""Errors raised by tooldocs.

Every error derives from :class:`ToolDocsError`::

    ToolDocsError
    ├── DocNotFoundError          no documentation for this tool id (wraps toolindex's ToolNotFoundError)
    ├── InvalidDetailLevelError   the detail level is not summary | schema | full
    ├── ArgsTooLargeError         an example's args exceed the size caps (says which cap)
    ├── InvalidExampleError       an example is malformed or does not fit the tool's schema
    └── SchemaRenderError         a JSON Schema cannot be rendered (names the tool and the path)

Messages repeat ids, titles, paths and reasons clipped to a few hundred characters (they can
come from a caller or an upstream server, and may be megabytes long); the attributes keep
what was given.
"""

from __future__ import annotations

import reprlib

from tooldocs._text import cap_text

__all__ = [
    "ArgsTooLargeError",
    "DocNotFoundError",
    "InvalidDetailLevelError",
    "InvalidExampleError",
    "SchemaRenderError",
    "ToolDocsError",
]


_ECHO = 200
"""Characters of an id, title or path a message repeats."""
_REASON = 400
"""Characters of a reason (it may quote a parameter list or a schema value)."""
_LISTED = 10
"""Suggestions a message lists (the attribute keeps all of them)."""


def _clip(text: str, limit: int = _ECHO) -> str:
    return cap_text(text, limit)


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
        msg = f"no documentation for tool {_clip(tool_id)!r}"
        if reason:
            msg += f": {_clip(reason, _REASON)}"
        if self.suggestions:
            shown = ", ".join(repr(_clip(s)) for s in self.suggestions[:_LISTED])
            if len(self.suggestions) > _LISTED:
                shown += f" and {len(self.suggestions) - _LISTED} more"
            msg += f"; did you mean {shown}?"
        super().__init__(msg)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidDetailLevelError(ToolDocsError, ValueError):
    """The detail level is not one of ``summary``, ``schema``, ``full``."""

    def __init__(self, level: object) -> None:
        self.level = level
        shown = _clip(level) if isinstance(level, str) else _clip(reprlib.repr(level))
        super().__init__(f"invalid detail level {shown!r}; use 'summary', 'schema' or 'full'")


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
            where += f" of example {_clip(example)!r}"
        if tool_id:
            where += f" for tool {_clip(tool_id)!r}"
        at = f" at {_clip(path)}" if path else ""
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
        for_tool = f" for tool {_clip(tool_id)!r}" if tool_id else ""
        super().__init__(
            f"invalid example {_clip(example)!r}{for_tool}, field {_clip(field)!r}: {_clip(reason, _REASON)}"
        )


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
        of = f" of tool {_clip(tool_id)!r}" if tool_id else ""
        super().__init__(f"cannot render schema{of} at {_clip(path or '/')}: {_clip(reason, _REASON)}")
