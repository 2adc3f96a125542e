"""Errors raised by toolcode.

Every error derives from :class:`ToolCodeError`::

    ToolCodeError
    ├── CodeExecutionError    syntax or runtime error in the snippet (line, column, type, message)
    ├── ConfigurationError    invalid executor configuration or parameters (names the field)
    ├── LimitExceededError    a limit stopped the run (which limit, its value, what was reached)
    ├── EngineError           the engine itself failed (a sandbox worker crashed, a broken engine)
    └── ToolError             a tool call made by the snippet failed; raised *inside* the snippet,
                              where code may catch it (also a ``RuntimeError``)

:meth:`toolcode.Executor.execute` raises the first four. Each carries ``result``: the partial
:class:`~toolcode.ExecuteResult` of the run (stdout, stderr and the tool-call trace up to the
failure), so a caller can still report what happened; ``tool_calls`` and ``stdout`` are shortcuts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolcode._types import ExecuteResult, ToolCallRecord

__all__ = [
    "CodeExecutionError",
    "ConfigurationError",
    "EngineError",
    "LimitExceededError",
    "ToolCodeError",
    "ToolError",
]


class ToolCodeError(Exception):
    """Root of every error raised by toolcode.

    Attributes:
        result: The partial result of the run that failed (``None`` when nothing ran).
    """

    result: ExecuteResult | None = None

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


class CodeExecutionError(ToolCodeError):
    """The snippet failed: a syntax error, or an exception it did not catch.

    Attributes:
        line: 1-based line in the snippet's own code (``None`` when unknown).
        column: 1-based column (``None`` when unknown).
        exc_type: The exception's type name, e.g. ``"ZeroDivisionError"`` or ``"ToolError"``.
        message: The exception's message.
        tool_id: For an uncaught tool failure, the tool that failed.
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
        traceback: str | None = None,
    ) -> None:
        self.exc_type = exc_type
        self.message = message
        self.line = line
        self.column = column
        self.tool_id = tool_id
        self.traceback = traceback
        where = ""
        if line is not None:
            where = f" at line {line}" + (f", column {column}" if column is not None else "")
        super().__init__(f"{exc_type}{where}: {message}")


class ConfigurationError(ToolCodeError, ValueError):
    """The executor configuration or the execution parameters are invalid.

    Attributes:
        field: The offending field, e.g. ``"timeout"`` or ``"engine"``.
        reason: Why it is invalid.
    """

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"invalid {field!r}: {reason}")


class LimitExceededError(ToolCodeError):
    """A limit stopped the run.

    Attributes:
        limit: Which limit: ``"timeout"``, ``"max_tool_calls"``, ``"max_chain_steps"``,
            ``"max_memory"``, ``"max_recursion_depth"``.
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
        got = f", reached {reached:g}" if reached is not None else ""
        extra = f" ({detail})" if detail else ""
        super().__init__(f"limit {limit} exceeded: configured {configured:g}{got}{extra}")


class EngineError(ToolCodeError):
    """The engine failed for a reason that is not the snippet's fault (a crashed worker, a broken engine).

    Attributes:
        engine: The engine's name.
        reason: What went wrong.
    """

    def __init__(self, engine: str, reason: str) -> None:
        self.engine = engine
        self.reason = reason
        super().__init__(f"engine {engine!r} failed: {reason}")


class ToolError(ToolCodeError, RuntimeError):
    """A tool call made by a snippet failed.

    Raised inside the snippet, where ``except ToolError`` catches it. In the Monty sandbox,
    where host classes cannot cross, it arrives as a ``RuntimeError`` (``ToolError`` is
    bound to ``RuntimeError`` there) whose message is the same text. Uncaught, the run
    ends in :class:`CodeExecutionError` with ``exc_type="ToolError"`` and ``tool_id`` set.

    Attributes:
        tool_id: The tool id the snippet asked for.
        message: The tool's (or the runner's) own message.
        error_op: The step that failed: ``"resolve"``, ``"validate_input"``, ``"call"``,
            ``"validate_output"``, ``"timeout"``, ``"backend"``, ``"describe"``.
    """

    def __init__(self, tool_id: str, message: str, error_op: str = "call") -> None:
        self.tool_id = tool_id
        self.message = message
        self.error_op = error_op
        super().__init__(f"tool {tool_id!r} failed ({error_op}): {message}")
