"""One mapping from any error of the stack to toolcode's errors, codes and hints.

The lower packages' errors map by one table, :data:`LOWER_ERRORS` (error class → the step that
failed, the code, a hint), looked up along the error's class hierarchy, as httpx maps its
transport's errors. Every door reports failures through :func:`error_info` (the JSON shape) or
:func:`describe_error` (a paragraph for a person), so a failure has the same code and the same
words everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NamedTuple

import toolindex.exceptions as ix
import toolrun.exceptions as rn
from toolcode._view import UNAVAILABLE_HINT, CatalogView
from toolcode.exceptions import (
    MAX_MESSAGE,
    CodeExecutionError,
    ErrorCode,
    LimitExceededError,
    ToolCodeError,
    ToolError,
    TypeCheckError,
    clip,
)
from toolcode.models import Diagnostic, ErrorInfo
from tooldocs import exceptions as dc
from toolrun import redact

__all__ = ["LOWER_ERRORS", "MAX_MESSAGE", "Lower", "as_tool_error", "describe_error", "error_info", "message_of"]

_MAX_DIAGNOSTICS = 50
"""Diagnostics an error carries (a snippet with more problems than this says so in its message)."""

_LIMIT_HINTS = {
    "timeout": "do less per run, or raise options.timeout",
    "max_tool_calls": "batch the work, or raise options.max_tool_calls",
    "max_chain_steps": "split the chain, or raise options.max_chain_steps",
    "max_memory": "keep less data in memory; filter while iterating",
    "max_recursion_depth": "use a loop instead of recursion",
    "max_output_chars": "return a smaller value (counts, ids, summaries)",
}


class Lower(NamedTuple):
    """How an error of a lower package maps: the step that failed, its code, what to try next."""

    op: str
    """The :attr:`ToolError.error_op` it becomes."""
    code: ErrorCode
    hint: Callable[[Any], str | None] | None = None


def _qualify(e: ix.AmbiguousToolIDError) -> str:
    return "qualify the name: " + ", ".join(e.candidates[:5])


def _ask_less(e: rn.ResponseTooLargeError) -> str:
    return f"ask the tool for less (a filter, a smaller page), or raise maxResponseBytes of server {e.server!r}"


def _restart(e: rn.BackendUnavailableError) -> str:
    # A server that never started says what would fix it; one that went away is restarted by the next call.
    return e.fix or "the server may be restarting; try again, or use another tool"


_UNKNOWN: Final = Lower("resolve", ErrorCode.UNKNOWN_TOOL)
"""An unknown id: the message and the hint name the nearest visible tools (see :func:`as_tool_error`)."""
_INVALID: Final = Lower("validate_input", ErrorCode.INVALID_ARGUMENTS)
_FAILED: Final = Lower("call", ErrorCode.TOOL_ERROR)
_UNREACHABLE: Final = Lower("backend", ErrorCode.UPSTREAM_UNAVAILABLE)
_CONFIG: Final = Lower("call", ErrorCode.CONFIG_ERROR)

LOWER_ERRORS: Final[dict[type[Exception], Lower]] = {
    ix.ToolIndexError: _FAILED,
    ix.ToolNotFoundError: _UNKNOWN,
    ix.AmbiguousToolIDError: Lower("resolve", ErrorCode.UNKNOWN_TOOL, _qualify),
    ix.InvalidToolIDError: _INVALID,
    ix.InvalidToolError: _FAILED,
    ix.DuplicateToolError: _FAILED,
    ix.SemanticUnavailableError: _CONFIG,
    dc.ToolDocsError: _FAILED,
    dc.DocNotFoundError: _UNKNOWN,
    dc.InvalidDetailLevelError: _INVALID,
    dc.ArgsTooLargeError: _FAILED,
    dc.InvalidExampleError: _FAILED,
    dc.SchemaRenderError: _FAILED,
    rn.ToolRunError: _FAILED,
    rn.ToolNotFoundError: _UNKNOWN,
    rn.AmbiguousToolIDError: Lower("resolve", ErrorCode.UNKNOWN_TOOL, _qualify),
    rn.InvalidToolIDError: _INVALID,
    rn.ConfigError: _CONFIG,
    rn.AddressRefusedError: _CONFIG,
    rn.NoBackendError: _UNREACHABLE,
    rn.InputValidationError: _INVALID,
    rn.OutputValidationError: Lower("validate_output", ErrorCode.TOOL_ERROR),
    rn.InvalidSchemaError: _FAILED,
    rn.SchemaLimitError: _FAILED,
    rn.ToolExecutionError: _FAILED,
    rn.UpstreamProtocolError: _FAILED,
    rn.ResponseTooLargeError: Lower("call", ErrorCode.RESPONSE_TOO_LARGE, _ask_less),
    rn.HTTPStatusError: _FAILED,
    rn.ToolTimeoutError: Lower("timeout", ErrorCode.TIMEOUT),
    rn.BackendUnavailableError: Lower("backend", ErrorCode.UPSTREAM_UNAVAILABLE, _restart),
    rn.StreamNotSupportedError: _FAILED,
    rn.ChainError: _INVALID,
}
"""Every public error of toolindex, tooldocs and toolrun, and how it maps (a test checks that none is missing)."""


def lower_error(exc: BaseException) -> Lower | None:
    """The mapping of a lower package's error (its nearest class in :data:`LOWER_ERRORS`), else ``None``."""
    for cls in type(exc).__mro__:
        found = LOWER_ERRORS.get(cls)
        if found is not None:
            return found
    return None


def message_of(exc: BaseException) -> str:
    """The message of an error: redacted, and clipped to :data:`MAX_MESSAGE` characters."""
    # Redacted before the clip (a secret cut in two would no longer be found), over a bounded
    # stretch: redaction reads every character, and a message can be megabytes long.
    return clip(redact(_message_of(exc)[: 4 * MAX_MESSAGE]), MAX_MESSAGE)


def _message_of(exc: BaseException) -> str:
    # Code and tool id travel in their own fields, so a snippet's uncaught tool failure reads
    # ``ToolError: <the tool's message>`` rather than repeating them.
    if isinstance(exc, CodeExecutionError):
        text = exc.message
        if exc.tool_id and text.startswith("["):
            head = f"] {exc.tool_id}: "
            cut = text.find(head)
            text = text[cut + len(head) :] if cut != -1 else text
        return f"{exc.exc_type}: {text}"
    if isinstance(exc, rn.ToolExecutionError | ToolError):
        return exc.message
    return str(exc) or type(exc).__name__


def _nearest(near: list[str]) -> str:
    return f"nearest tools: {', '.join(near)}" if near else "use search_tools to find one"


def as_tool_error(exc: BaseException, tool_id: str, view: CatalogView | None = None) -> ToolError:
    """The :class:`ToolError` for a failure of a lower layer concerning ``tool_id``.

    Args:
        exc: What toolindex, tooldocs or toolrun raised (a ``ToolError`` passes through).
        tool_id: The id the caller asked for.
        view: The caller's view of the catalog, for suggestions (visible tools only).

    Returns:
        The error, with its code, and a hint naming the nearest visible tools for an unknown id.
    """
    if isinstance(exc, ToolError):
        return exc
    lower = lower_error(exc) or _FAILED
    if lower is _UNKNOWN:
        down = view.unavailable_error(tool_id) if view is not None else None
        if down is not None:
            return down
        asked = exc.tool_id if isinstance(exc, ix.ToolNotFoundError) else tool_id
        hint = _nearest(view.suggest(asked) if view is not None else list(getattr(exc, "suggestions", [])))
        # The hint is in the message too: inside a snippet only the message travels.
        err = ToolError(tool_id, f"unknown tool {clip(asked)!r}; {hint}", lower.op, code=lower.code)
    elif isinstance(exc, rn.ToolExecutionError) and isinstance(inner := exc.__cause__, ToolCodeError):
        # A saved snippet's run that failed: its own code and words, not a tool's plain failure.
        line = getattr(inner, "line", None) if isinstance(inner, CodeExecutionError) else None
        where = f" (line {line} of the saved snippet)" if line is not None else ""
        err = ToolError(tool_id, message_of(inner) + where, lower.op, code=inner.code)
        hint = inner.hint
    else:
        err = ToolError(tool_id, message_of(exc), lower.op, code=lower.code)
        hint = lower.hint(exc) if lower.hint is not None else None
    err.hint = hint
    return err


def _code(exc: BaseException) -> ErrorCode:
    if isinstance(exc, ToolCodeError):
        return exc.code
    lower = lower_error(exc)
    if lower is not None:
        return lower.code
    if isinstance(exc, FileNotFoundError | IsADirectoryError | PermissionError):
        return ErrorCode.CONFIG_ERROR
    return ErrorCode.RUNTIME_ERROR


def _hint(exc: BaseException, view: CatalogView | None) -> str | None:
    if isinstance(exc, ToolCodeError) and exc.hint:
        return exc.hint
    if isinstance(exc, LimitExceededError):
        return _LIMIT_HINTS.get(exc.limit)
    if isinstance(exc, TypeCheckError):
        return "nothing ran: fix these calls (describe_tool shows each tool's signature)"
    if isinstance(exc, CodeExecutionError) and exc.code is ErrorCode.SERVER_UNAVAILABLE:
        return UNAVAILABLE_HINT
    if isinstance(exc, CodeExecutionError) and exc.code is ErrorCode.UNKNOWN_TOOL and exc.tool_id and view:
        return _nearest(view.suggest(exc.tool_id))
    if lower_error(exc) is not None:
        return as_tool_error(exc, getattr(exc, "tool_id", "") or "", view).hint
    return None


def error_info(exc: BaseException, view: CatalogView | None = None) -> ErrorInfo:
    """The JSON shape of a failure: ``{code, message, line, column, tool_id, hint, diagnostics}``.

    Args:
        exc: Any error (toolcode's, a lower layer's, or anything else).
        view: The caller's view of the catalog, for "nearest tools" hints.

    Returns:
        The error info; the message is clipped to :data:`MAX_MESSAGE` characters.
    """
    tool_id = getattr(exc, "tool_id", None)
    located = isinstance(exc, CodeExecutionError | TypeCheckError)
    diagnostics = None
    if isinstance(exc, TypeCheckError):
        diagnostics = [
            Diagnostic(
                line=d.line,
                column=d.column,
                message=clip(redact(d.message[: 4 * MAX_MESSAGE]), MAX_MESSAGE),
                code=str(code) if (code := getattr(d, "code", None)) is not None else None,
            )
            for d in exc.diagnostics[:_MAX_DIAGNOSTICS]
        ]
    return ErrorInfo(
        code=_code(exc).value,
        message=message_of(exc),
        line=getattr(exc, "line", None) if located else None,
        column=getattr(exc, "column", None) if located else None,
        tool_id=clip(str(tool_id)) if tool_id else None,
        hint=redact(h) if (h := _hint(exc, view)) else None,
        diagnostics=diagnostics,
    )


def describe_error(exc: BaseException, view: CatalogView | None = None) -> str:
    """Explain a failure in a few lines for a person: what, where, which tool, what to try.

    Args:
        exc: The error.
        view: The caller's view of the catalog, for "nearest tools" hints.

    Returns:
        Plain text.
    """
    info = error_info(exc, view)
    parts = [f"{info.code}: {info.message}"]
    if info.tool_id and info.tool_id not in info.message:
        parts.append(f"tool: {info.tool_id}")
    if info.hint:
        parts.append(f"hint: {info.hint}")
    if isinstance(exc, CodeExecutionError) and exc.traceback:
        parts.append(clip(exc.traceback.strip(), MAX_MESSAGE))
    return "\n".join(parts)
