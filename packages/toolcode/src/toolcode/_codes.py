"""What every error says: the one table of codes every door reports, and bounded text for messages.

Re-exported by :mod:`toolcode.exceptions`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = ["ERROR_CODE_MEANINGS", "MAX_ECHO", "MAX_MESSAGE", "ErrorCode", "clip", "limit_text"]

MAX_ECHO: Final = 200
"""Characters of caller- or upstream-controlled text (ids, names, values) an error message repeats."""
MAX_MESSAGE: Final = 2_000
"""Characters of one error message (a snippet's exception, an upstream server's error text) kept."""
_BYTE_UNITS: Final = ("B", "KiB", "MiB", "GiB", "TiB")


def clip(text: str, limit: int = MAX_ECHO) -> str:
    """``text`` cut to ``limit`` characters, the last one ``…``: error messages never echo megabytes."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def limit_text(limit: str, value: float) -> str:
    """A limit's value as a person reads it: ``256 MiB``, ``30 s``, ``50,000``.

    Args:
        limit: The limit's name (``max_memory`` is in bytes, ``timeout`` in seconds, the rest counts).
        value: Its value.

    Returns:
        The value with its unit (bytes in binary units, one decimal at most; counts with separators).
    """
    if limit in ("max_memory", "max_paused_bytes"):
        amount, unit = float(value), 0
        while abs(amount) >= 1024 and unit < len(_BYTE_UNITS) - 1:
            amount, unit = amount / 1024, unit + 1
        return f"{amount:.1f}".removesuffix(".0") + f" {_BYTE_UNITS[unit]}"
    if limit == "timeout":
        return f"{value:g} s"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


class ErrorCode(StrEnum):
    """Stable, machine-readable error codes, the same in every door (snippet, MCP, CLI, Python).

    What each one means: :data:`ERROR_CODE_MEANINGS` (docs/errors.md shows the same lines).
    """

    SYNTAX_ERROR = "syntax_error"
    RUNTIME_ERROR = "runtime_error"
    TYPE_ERROR = "type_error"
    TOOL_ERROR = "tool_error"
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    NOT_ALLOWED = "not_allowed"
    TIMEOUT = "timeout"
    TOOL_CALL_LIMIT = "tool_call_limit"
    OUTPUT_LIMIT = "output_limit"
    MEMORY_LIMIT = "memory_limit"
    ENGINE_ERROR = "engine_error"
    CONFIG_ERROR = "config_error"
    BUSY = "busy"
    UPSTREAM_UNAVAILABLE = "upstream_unavailable"
    SERVER_UNAVAILABLE = "server_unavailable"
    APPROVAL_REQUIRED = "approval_required"
    APPROVAL_DENIED = "approval_denied"
    INVALID_REFERENCE = "invalid_reference"
    STATE_UNAVAILABLE = "state_unavailable"
    SESSION_LIMIT = "session_limit"
    QUOTA_EXCEEDED = "quota_exceeded"
    RESPONSE_TOO_LARGE = "response_too_large"
    DEFINITION_CHANGED = "definition_changed"


ERROR_CODE_MEANINGS: Final[dict[ErrorCode, str]] = {
    ErrorCode.SYNTAX_ERROR: "the snippet does not parse",
    ErrorCode.RUNTIME_ERROR: "the snippet raised an exception it did not catch (other than a tool failure)",
    ErrorCode.TYPE_ERROR: "the snippet failed its type check before anything ran",
    ErrorCode.TOOL_ERROR: "a tool ran and reported failure (MCP `isError`, an exception in a local function, "
    "a result that breaks its output schema)",
    ErrorCode.UNKNOWN_TOOL: "no visible tool has this id (the hint names the nearest visible ones)",
    ErrorCode.INVALID_ARGUMENTS: "the arguments of a tool call, an operation or an option are invalid "
    "(which field, why)",
    ErrorCode.NOT_ALLOWED: "the policy forbids this call",
    ErrorCode.TIMEOUT: "a run or a tool call took longer than its timeout",
    ErrorCode.TOOL_CALL_LIMIT: "the run reached `max_tool_calls`, or a chain exceeded `max_chain_steps`",
    ErrorCode.OUTPUT_LIMIT: "output was over the budget where it could not be cut instead",
    ErrorCode.MEMORY_LIMIT: "the sandbox ran out of its memory (or recursion-depth) allowance",
    ErrorCode.ENGINE_ERROR: "the engine failed for a reason that is not the snippet's (a crashed worker)",
    ErrorCode.CONFIG_ERROR: "the configuration is invalid (file, server entry, engine, setting)",
    ErrorCode.BUSY: "every sandbox worker, or the caller's share of them, stayed busy: try again shortly",
    ErrorCode.UPSTREAM_UNAVAILABLE: "an upstream server cannot be reached (not started, crashed, closed the "
    "connection)",
    ErrorCode.SERVER_UNAVAILABLE: "a configured server failed to start or connect, so its tools are not in the "
    "catalog; the message names the server and the reason",
    ErrorCode.APPROVAL_REQUIRED: "a tool call waits for a decision: the run is paused, or, where nothing can wait "
    "for one (a door's direct call, a plan under way or a saved snippet's run whose tool changed since it was "
    "judged), the call was not made",
    ErrorCode.APPROVAL_DENIED: "a person (or the policy) denied a paused tool call",
    ErrorCode.INVALID_REFERENCE: "a chain step refers to a result path that does not exist",
    ErrorCode.STATE_UNAVAILABLE: "the state store (the SQLite file, Redis) cannot be reached or written; "
    "nothing was half-written",
    ErrorCode.SESSION_LIMIT: (
        "a session limit was hit: too many sessions, a session's state over its size limit, or a run of the "
        "session waits for a decision (runs_while_paused)"
    ),
    ErrorCode.QUOTA_EXCEEDED: "a caller's quota is used up (paused runs, saved snippets): free some, then try again",
    ErrorCode.RESPONSE_TOO_LARGE: "an upstream tool's reply was larger than its server's `maxResponseBytes`, so it "
    "was not read; the message names the server, the tool and the bound",
    ErrorCode.DEFINITION_CHANGED: "an approval of quarantined tools named a definition digest that is not the tool's "
    "definition now (it changed since it was shown, or the tool is gone); the message names the tool, and nothing "
    "was approved",
}
"""One line per code: what it means (docs/errors.md shows exactly these, with each code's exit code)."""
