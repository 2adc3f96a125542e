"""Errors raised by toolindex.

Every error derives from :class:`ToolIndexError`, so ``except ToolIndexError`` catches all
of them::

    ToolIndexError
    ├── InvalidToolIDError        an id string is malformed (says which part and why)
    ├── InvalidToolError          a tool definition is unusable (names the tool and the field)
    ├── ToolNotFoundError         no tool has this id (carries close matches)
    ├── AmbiguousToolIDError      a bare name matches tools in several namespaces (lists them)
    ├── DuplicateToolError        a batch registers the same id twice
    └── SemanticUnavailableError  semantic search was asked for but its extra is not installed

Messages repeat ids, names and reasons clipped to 200 characters (an id can come from a
caller or an upstream server, and may be megabytes long); the attributes keep what was given.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolindex._limits import clip

__all__ = [
    "AmbiguousToolIDError",
    "DuplicateToolError",
    "InvalidToolError",
    "InvalidToolIDError",
    "SemanticUnavailableError",
    "ToolIndexError",
    "ToolNotFoundError",
]


_MAX_LISTED = 10
"""Suggestions or candidates a message lists (the attribute keeps all of them)."""
_REASON_CHARS = 400
"""A reason may quote what was wrong (a bad type name, a character set): clipped too, but longer."""


class ToolIndexError(Exception):
    """Root of every error raised by toolindex."""


class InvalidToolIDError(ToolIndexError, ValueError):
    """A tool id string is malformed.

    Attributes:
        raw: The id as given.
        reason: What is wrong with it, in words a person can act on.
    """

    def __init__(self, raw: str, reason: str) -> None:
        self.raw = raw
        self.reason = reason
        super().__init__(f"invalid tool id {clip(raw)!r}: {clip(reason, _REASON_CHARS)}")


class InvalidToolError(ToolIndexError, ValueError):
    """A tool definition cannot be used.

    Attributes:
        tool: The tool's name or id, as far as it is known.
        field: The offending field (dotted path), or ``None`` for the whole tool.
        reason: Why it is rejected.
    """

    def __init__(self, tool: str, field: str | None, reason: str) -> None:
        self.tool = tool
        self.field = field
        self.reason = reason
        where = f" field {clip(field)!r}" if field else ""
        super().__init__(f"invalid tool {clip(tool)!r}{where}: {clip(reason, _REASON_CHARS)}")


class ToolNotFoundError(ToolIndexError, LookupError):
    """No registered tool matches the id.

    Attributes:
        tool_id: The id that was looked up.
        suggestions: Ids of registered tools that look close, best first (may be empty).
    """

    def __init__(self, tool_id: str, suggestions: Sequence[str] = ()) -> None:
        self.tool_id = tool_id
        self.suggestions = list(suggestions)
        msg = f"tool not found: {clip(tool_id)!r}"
        if self.suggestions:
            msg += "; did you mean " + ", ".join(repr(clip(s)) for s in self.suggestions[:_MAX_LISTED]) + "?"
        super().__init__(msg)

    def __str__(self) -> str:
        # LookupError would otherwise repr() the message.
        return str(self.args[0]) if self.args else ""


class AmbiguousToolIDError(ToolIndexError, LookupError):
    """A bare tool name matches tools in more than one namespace.

    Attributes:
        name: The bare name that was looked up.
        candidates: Fully qualified ids that match, sorted.
    """

    def __init__(self, name: str, candidates: Sequence[str]) -> None:
        self.name = name
        self.candidates = sorted(candidates)
        shown = ", ".join(clip(c) for c in self.candidates[:_MAX_LISTED])
        if len(self.candidates) > _MAX_LISTED:
            shown += f" and {len(self.candidates) - _MAX_LISTED} more"
        super().__init__(f"tool name {clip(name)!r} is ambiguous; qualify it with a namespace, one of: {shown}")

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DuplicateToolError(ToolIndexError, ValueError):
    """The same tool id appears twice in one batch registration.

    Attributes:
        tool_id: The duplicated id.
    """

    def __init__(self, tool_id: str) -> None:
        self.tool_id = tool_id
        super().__init__(f"tool {clip(tool_id)!r} appears more than once in one batch")


class SemanticUnavailableError(ToolIndexError, RuntimeError):
    """Semantic search was asked for, but the embedding model cannot be loaded.

    The message says what to install (``pip install 'toolindex[semantic]'``); lexical search
    works without it.
    """
