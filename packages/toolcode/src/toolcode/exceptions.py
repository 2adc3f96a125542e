"""Errors raised by toolcode, and the one enum of error codes every door reports.

Every error derives from :class:`ToolCodeError` and carries a stable :class:`ErrorCode`::

    ToolCodeError                 .code: ErrorCode; .to_error(): {code, message, line, column, tool_id, hint}
    ├── CodeExecutionError        syntax or runtime error in the snippet (line, column, type, message)
    ├── TypeCheckError            the snippet failed its check against the tools' signatures (every diagnostic)
    ├── InvalidArgumentsError     an operation's argument or option is invalid (names the field)
    ├── StateUnavailableError     the state store cannot be reached or written
    │   └── StateConflictError    a conditional write lost to another writer
    ├── SessionLimitError         too many sessions, a session's state too large, or one paused
    ├── ConfigurationError        invalid configuration: config file, engine, executor setup (names the field)
    ├── LimitExceededError        a limit stopped the run (which limit, its value, what was reached)
    ├── ApprovalRequiredError     not a failure: the run paused at a call that waits for a decision
    ├── DefinitionChangedError    an approval named a tool definition that is not the tool's now (nothing approved)
    ├── EngineError               the engine itself failed (a sandbox worker crashed, a broken engine)
    │   └── EngineBusyError       every worker (or the caller's share) stayed busy: try again shortly
    └── ToolError                 a tool call or lookup failed; raised *inside* the snippet, where code
                                  may catch it (also a ``RuntimeError``); at the doors, the failed operation

:meth:`toolcode.Executor.execute` raises the first five. Each carries ``result``: the partial
:class:`~toolcode.ExecuteResult` of the run (stdout, stderr and the tool-call trace up to the
failure), so a caller can still report what happened. The codes are the machine-readable part:
the MCP server's ``structuredContent``, ``toolcode exec --json``, and the CLI's exit code (one
table, :data:`toolcode.cli.EXIT_CODES`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from toolcode._codes import ERROR_CODE_MEANINGS, MAX_ECHO, MAX_MESSAGE, ErrorCode, clip, limit_text
from toolcode._records import ExecuteResult, ToolCallRecord

__all__ = [
    "ERROR_CODE_MEANINGS",
    "MAX_ECHO",
    "MAX_MESSAGE",
    "ApprovalRequiredError",
    "CodeExecutionError",
    "ConfigurationError",
    "DefinitionChangedError",
    "EngineBusyError",
    "EngineError",
    "ErrorCode",
    "InvalidArgumentsError",
    "LimitExceededError",
    "SessionLimitError",
    "StateConflictError",
    "StateUnavailableError",
    "ToolCodeError",
    "ToolError",
    "TypeCheckError",
    "clip",
    "limit_text",
]

_MISSING_NAME_TYPES: Final = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError"})
_MISSING_TOOL: Final = re.compile(
    r"^module 'tools\.\w+' has no attribute|^cannot import name '\w+' from 'tools(\.\w+)?'|^No module named 'tools\."
)
"""How both engines say that a snippet named a namespace module or a tool function that does not exist."""
_LIMIT_CODES: Final = {
    "timeout": ErrorCode.TIMEOUT,
    "max_tool_calls": ErrorCode.TOOL_CALL_LIMIT,
    "max_chain_steps": ErrorCode.TOOL_CALL_LIMIT,
    "max_output_chars": ErrorCode.OUTPUT_LIMIT,
    "max_value_items": ErrorCode.OUTPUT_LIMIT,
    "max_memory": ErrorCode.MEMORY_LIMIT,
    "max_recursion_depth": ErrorCode.MEMORY_LIMIT,
    "max_paused_bytes": ErrorCode.MEMORY_LIMIT,
    "max_paused_runs": ErrorCode.QUOTA_EXCEEDED,
    "max_snippets": ErrorCode.QUOTA_EXCEEDED,
}
_OP_CODES: Final = {
    "resolve": ErrorCode.UNKNOWN_TOOL,
    "validate_input": ErrorCode.INVALID_ARGUMENTS,
    "timeout": ErrorCode.TIMEOUT,
    "backend": ErrorCode.UPSTREAM_UNAVAILABLE,
    "not_allowed": ErrorCode.NOT_ALLOWED,
    "approval_denied": ErrorCode.APPROVAL_DENIED,
    "reference": ErrorCode.INVALID_REFERENCE,
}
"""The code of a :class:`ToolError` by the step that failed (``tool_error`` for the others)."""


class ToolCodeError(Exception):
    """Root of every error raised by toolcode.

    A subclass names its code in its bases (``class X(ToolCodeError, code=ErrorCode.BUSY)``).

    Attributes:
        result: The partial result of the run that failed (``None`` when nothing ran).
        hint: What to try next, when there is something useful to say (set by the doors).
    """

    result: ExecuteResult | None = None
    hint: str | None = None
    _code: ErrorCode = ErrorCode.RUNTIME_ERROR

    def __init_subclass__(cls, code: ErrorCode | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls._code = code

    @property
    def code(self) -> ErrorCode:
        """The stable error code (see :class:`ErrorCode`)."""
        return self._code

    @property
    def tool_calls(self) -> list[ToolCallRecord]:
        """The tool calls made before the failure, in call order (empty when nothing ran)."""
        return list(self.result.tool_calls) if self.result is not None else []

    @property
    def stdout(self) -> str:
        """What the snippet printed before the failure."""
        return self.result.stdout if self.result is not None else ""

    @property
    def stderr(self) -> str:
        """What the snippet wrote to stderr before the failure."""
        return self.result.stderr if self.result is not None else ""

    def to_error(self) -> dict[str, Any]:
        """The error in the JSON shape every door uses.

        Returns:
            ``{"code", "message", "line", "column", "tool_id", "hint"}`` (``None`` where unknown).
        """
        return {
            "code": self.code.value,
            "message": str(self),
            "line": getattr(self, "line", None),
            "column": getattr(self, "column", None),
            "tool_id": getattr(self, "tool_id", None),
            "hint": self.hint,
        }


class CodeExecutionError(ToolCodeError):
    """The snippet failed: a syntax error, or an exception it did not catch.

    Attributes:
        line: 1-based line in the snippet's own code (``None`` when unknown).
        column: 1-based column (``None`` when unknown).
        exc_type: The exception's type name, e.g. ``"ZeroDivisionError"`` or ``"ToolError"``.
        message: The exception's message.
        tool_id: For an uncaught tool failure, the tool that failed.
        tool_code: For an uncaught tool failure, the tool error's own code.
        traceback: The snippet-level traceback as text, when the engine provides one.
    """

    def __init__(
        self,
        exc_type: str,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        tool_id: str | None = None,
        tool_code: ErrorCode | None = None,
        traceback: str | None = None,
    ) -> None:
        # The message and traceback come from the snippet: bounded, whatever it raised.
        self.exc_type = clip(exc_type, 100)
        self.message = clip(message, MAX_MESSAGE)
        self.line = line
        self.column = column
        self.tool_id = clip(tool_id) if tool_id is not None else None
        self.tool_code = tool_code
        self.traceback = clip(traceback, 2 * MAX_MESSAGE) if traceback is not None else None
        where = ""
        if line is not None:
            where = f" at line {line}" + (f", column {column}" if column is not None else "")
        super().__init__(f"{self.exc_type}{where}: {self.message}")

    @property
    def code(self) -> ErrorCode:
        """``syntax_error``, the uncaught tool failure's own code, ``unknown_tool`` or ``runtime_error``.

        ``unknown_tool`` also for a name the ``tools`` package or one of its modules does not have
        (an ``AttributeError`` or ``ImportError`` of the engine).
        """
        if self.exc_type == "SyntaxError":
            return ErrorCode.SYNTAX_ERROR
        if self.tool_code is not None:
            return self.tool_code
        if self.tool_id is not None:
            return ErrorCode.TOOL_ERROR
        if self.exc_type in _MISSING_NAME_TYPES and _MISSING_TOOL.search(self.message):
            return ErrorCode.UNKNOWN_TOOL
        return ErrorCode.RUNTIME_ERROR


class TypeCheckError(ToolCodeError, code=ErrorCode.TYPE_ERROR):
    """The snippet calls its tools wrongly: found by the check before anything ran.

    Attributes:
        diagnostics: Every problem found, each with ``line``, ``column``, ``message``, ``rule`` and
            ``code``: the error the run would have met there (``toolcode._typecheck.Diagnostic``).
    """

    def __init__(self, diagnostics: Sequence[Any]) -> None:
        self.diagnostics = list(diagnostics)
        first = self.diagnostics[0] if self.diagnostics else None
        self.line: int | None = getattr(first, "line", None)
        self.column: int | None = getattr(first, "column", None)
        shown = "\n".join(clip(str(d.render()), 500) for d in self.diagnostics[:20])
        more = f"\n... and {len(self.diagnostics) - 20} more" if len(self.diagnostics) > 20 else ""
        count = len(self.diagnostics)
        super().__init__(f"{count} problem{'s' if count != 1 else ''} found before running:\n{shown}{more}")

    def to_error(self) -> dict[str, Any]:
        """The error JSON, with ``diagnostics``: ``[{line, column, message, code}]``."""
        out = super().to_error()
        out["diagnostics"] = [
            {"line": d.line, "column": d.column, "message": d.message, "code": None if d.code is None else str(d.code)}
            for d in self.diagnostics
        ]
        return out


class InvalidArgumentsError(ToolCodeError, ValueError, code=ErrorCode.INVALID_ARGUMENTS):
    """An argument of an operation (or an execution option) is invalid.

    Attributes:
        field: The offending argument, e.g. ``"limit"`` or ``"options.timeout"``.
        reason: Why it is invalid.
        tool_id: The tool concerned, when there is one.
    """

    def __init__(self, field: str, reason: str, *, tool_id: str | None = None) -> None:
        self.field = field
        self.reason = reason
        self.tool_id = tool_id
        super().__init__(f"invalid {field!r}: {reason}")


class ConfigurationError(ToolCodeError, ValueError, code=ErrorCode.CONFIG_ERROR):
    """The configuration is invalid (config file, engine, executor setup).

    Attributes:
        field: The offending field, e.g. ``"toolcode.limits.timeout"`` or ``"engine"``.
        reason: Why it is invalid.
    """

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"invalid {field!r}: {reason}")


class LimitExceededError(ToolCodeError):
    """A limit stopped the run: its code is ``timeout``, ``tool_call_limit``, ``output_limit`` or ``memory_limit``.

    Attributes:
        limit: Which limit: ``"timeout"``, ``"max_tool_calls"``, ``"max_chain_steps"``,
            ``"max_memory"``, ``"max_recursion_depth"``, ``"max_output_chars"``, ``"max_value_items"``,
            ``"max_paused_bytes"``, ``"max_paused_runs"`` (code ``quota_exceeded``).
        configured: The configured value (seconds, calls, steps, bytes, frames).
        reached: What the run reached when it was stopped (``None`` when unknown).
        detail: Extra words from the engine, if any.
    """

    def __init__(
        self, limit: str, configured: float | int, reached: float | int | None = None, detail: str = ""
    ) -> None:
        self.limit = limit
        self.configured = configured
        self.reached = reached
        self.detail = detail
        self._code = _LIMIT_CODES.get(limit, ErrorCode.RUNTIME_ERROR)
        got = f", reached {limit_text(limit, reached)}" if reached is not None else ""
        extra = f" ({clip(detail)})" if detail else ""
        super().__init__(f"limit {limit} exceeded: configured {limit_text(limit, configured)}{got}{extra}")


class EngineError(ToolCodeError, code=ErrorCode.ENGINE_ERROR):
    """The engine failed for a reason that is not the snippet's fault (a crashed worker, a broken engine).

    Attributes:
        engine: The engine's name.
        reason: What went wrong.
    """

    def __init__(self, engine: str, reason: str) -> None:
        self.engine = engine
        self.reason = reason
        super().__init__(f"engine {engine!r} failed: {clip(reason, 500)}")


class EngineBusyError(EngineError, code=ErrorCode.BUSY):
    """No worker became free in time: every worker, or the caller's share of them, is busy.

    Attributes:
        engine: The engine's name.
        reason: Which cap was full, and for how long the run waited.
    """


class ToolError(ToolCodeError, RuntimeError):
    """A tool call (or a lookup such as ``describe_tool``) made by a snippet or a door failed.

    Raised inside the snippet, where ``except ToolError`` catches it. In the Monty sandbox,
    where host classes cannot cross and exceptions carry no attributes, it arrives as a
    ``RuntimeError`` (``ToolError`` is bound to ``RuntimeError`` there) whose message is
    ``"[code] tool_id: message"``; the snippet global ``tool_error_info(e)`` returns
    ``{"code", "tool_id", "message"}`` on every engine. Uncaught, the run ends in
    :class:`CodeExecutionError` with ``exc_type="ToolError"``, ``tool_id`` and the code set.

    Attributes:
        tool_id: The tool id the snippet asked for (clipped).
        message: The tool's (or the runner's) own message.
        error_op: The step that failed: ``"resolve"``, ``"validate_input"``, ``"call"``,
            ``"validate_output"``, ``"timeout"``, ``"backend"``, ``"describe"``, ``"not_allowed"``.
        backend_kind: The kind of backend the call reached (``"mcp"``, ``"local"``, ...), if any.
    """

    backend_kind: str | None = None

    def __init__(self, tool_id: str, message: str, error_op: str = "call", *, code: ErrorCode | None = None) -> None:
        self.tool_id = clip(str(tool_id))
        self.message = clip(message, MAX_MESSAGE)
        self.error_op = error_op
        self._code = code or _OP_CODES.get(error_op, ErrorCode.TOOL_ERROR)
        head = f"[{self._code.value}] {self.tool_id}: " if self.tool_id else f"[{self._code.value}] "
        super().__init__(head + self.message)


class ApprovalRequiredError(ToolCodeError, code=ErrorCode.APPROVAL_REQUIRED):
    """The run paused at a tool call that needs a person's decision (not a failure).

    The core keeps :attr:`paused` in the state store; ``resume(execution_id, decision)``
    continues the run from that call.

    Attributes:
        paused: The paused run (``toolcode._paused_run.PausedRun``): its id, the pending calls, the
            snippet line, and everything needed to continue it.
    """

    def __init__(self, paused: Any) -> None:
        self.paused = paused
        self.execution_id: str = paused.execution_id
        pending = paused.pending
        self.tool_id: str | None = pending[0].tool_id if pending else None
        self.line: int | None = paused.state.line
        shown = ", ".join(f"{p.tool_id} ({p.tier})" for p in pending[:5])
        where = f" at line {self.line}" if self.line is not None else ""
        super().__init__(f"paused{where}: {shown} needs a decision (execution_id {self.execution_id})")


class DefinitionChangedError(ToolCodeError, code=ErrorCode.DEFINITION_CHANGED):
    """An approval of quarantined tools named a definition that is not the tool's now: nothing was approved.

    ``approve_tools`` binds each approval to the digest of the definition the approver was shown
    (``describe_tool`` at level ``full``, ``quarantined_tools``, the console); a tool whose
    definition changed since (or that is gone) refuses the whole request.

    Attributes:
        tool_id: The first such tool.
        changed: Each such tool id, with the digest of its definition now (``None``: no longer in the catalog).
        named: The digest the request named for each of them.
    """

    def __init__(self, changed: dict[str, str | None], named: dict[str, str]) -> None:
        self.changed = dict(changed)
        self.named = {k: named[k] for k in changed}
        self.tool_id: str | None = next(iter(changed), None)
        parts = [
            f"{clip(t)} ({'no longer in the catalog' if now is None else f'digest now: {now}'}, "
            f"named: {clip(named[t], 40)})"
            for t, now in list(changed.items())[:5]
        ]
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        super().__init__(
            f"definition changed since it was shown: {', '.join(parts)}{more}; nothing was approved. Review the "
            "definition now (describe_tool at level 'full' shows it with its digest) and approve that digest."
        )


class StateUnavailableError(ToolCodeError, code=ErrorCode.STATE_UNAVAILABLE):
    """The state store cannot be reached, read or written (nothing was half-written).

    Attributes:
        store: The store's name (credentials redacted).
        reason: What failed.
    """

    def __init__(self, store: str, reason: str) -> None:
        self.store = clip(store)
        self.reason = clip(reason, MAX_MESSAGE)
        super().__init__(f"state store {self.store}: {self.reason}")


class StateConflictError(StateUnavailableError, code=ErrorCode.BUSY):
    """A conditional write found another version than it expected (another writer went first): try again.

    Attributes:
        kind: The record's kind.
        key: The record's key.
        expected: The version the write expected (``0``: absent; ``"any"``).
        current: The version found (``0``: absent).
    """

    def __init__(self, kind: str, key: str, expected: object, current: int) -> None:
        self.kind, self.key, self.expected, self.current = kind, clip(key), expected, current
        ToolCodeError.__init__(
            self, f"record {kind}/{self.key} is at version {current}, not {expected}: another writer went first"
        )
        self.store = ""
        self.reason = str(self)


class SessionLimitError(ToolCodeError, code=ErrorCode.SESSION_LIMIT):
    """A session limit was hit (``toolcode.sessions``): which one, its value, what was reached.

    Attributes:
        limit: ``"max_sessions"``, ``"max_bytes"`` or ``"runs_while_paused"`` (a run of the
            session waits for a decision).
        configured: The limit's value.
        reached: What the session would have needed.
    """

    def __init__(self, session: str, limit: str, configured: int, reached: int, detail: str = "") -> None:
        self.session, self.limit, self.configured, self.reached = clip(session), limit, configured, reached
        detail = f"; {detail}" if detail else ""
        super().__init__(f"session {self.session!r}: {limit} is {configured:,}, this needs {reached:,}{detail}")
