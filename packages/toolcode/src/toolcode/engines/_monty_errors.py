"""Monty's errors in toolcode's terms: a limit that stopped the run, the snippet's own error, or the engine's.

A Monty error is read once (:meth:`Failure.of`, in a worker thread: a snippet's own exception may
carry tens of megabytes, and every read of it copies the whole message while holding the
interpreter lock), then mapped (:meth:`MontyErrors.mapped`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import pydantic_monty as pm

from toolcode.exceptions import CodeExecutionError, EngineError, LimitExceededError, ToolCodeError, ToolError

__all__ = ["Failed", "Failure", "MontyErrors"]

_MEMORY_RE: Final = re.compile(r"memory limit exceeded: (\d+) bytes > (\d+) bytes")
_WORKER_OUT_OF_MEMORY: Final = "the worker exceeded its memory limit"
"""What Monty says when the worker process, not the heap's count, went over the limit (a very long snippet, say)."""
SHORT_MESSAGE: Final = 8_000
"""Longer than this, an error message is the snippet's own (the host's are clipped to 2,000 characters)."""
_CANNOT_SUSPEND: Final = "cannot suspend in this synchronous context"
"""What Monty says of a host call made from a function a builtin calls back (``map``, ``sorted``'s key)."""
_CANNOT_SUSPEND_HINT: Final = (
    "a function that map, filter, or a key= of sorted, min or max calls cannot call a tool in this sandbox: "
    "call it in a for loop or a list comprehension instead"
)


@dataclass(frozen=True, slots=True)
class Failure:
    """What a Monty error says, each part read once."""

    error: pm.MontyError
    inner: BaseException | None
    """The sandbox's exception (a runtime error's)."""
    exc_type: str
    message: str
    traceback: str | None
    """The snippet-level traceback (with the message cut to :data:`SHORT_MESSAGE` when longer)."""

    @classmethod
    def of(cls, e: pm.MontyError) -> Failure:
        """Read ``e`` once (in a worker thread: a long message holds the interpreter lock meanwhile)."""
        if not isinstance(e, pm.MontyRuntimeError):
            return cls(e, None, type(e).__name__, str(e), None)
        inner = e.exception()
        exc_type, message = type(inner).__name__, str(inner)
        if len(message) <= SHORT_MESSAGE:
            shown = e.display("traceback")
        else:
            # Written from the frames, never by formatting the whole message again.
            lines = ["Traceback (most recent call last):"]
            for f in e.traceback():
                lines.append(f'  File "{f.filename}", line {f.line}, in {f.function_name or "<module>"}')
                if f.source_line:
                    lines.append("    " + f.source_line.strip())
            shown = "\n".join([*lines, f"{exc_type}: {message[:SHORT_MESSAGE]}…"])
        return cls(e, inner, exc_type, message, shown)

    @property
    def limit(self) -> str | None:
        """The limit that stopped the run (``timeout``, ``max_memory``, ``max_recursion_depth``), if one did."""
        inner = self.inner
        if inner is None:
            return None
        if isinstance(inner, TimeoutError) and "time limit exceeded" in self.message:
            return "timeout"
        if isinstance(inner, MemoryError):
            return "max_memory"
        return "max_recursion_depth" if isinstance(inner, RecursionError) else None


class Failed(Exception):
    """A snippet's error already read (:class:`Failure`), on its way out of the worker's block."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.exc_type)
        self.failure = failure


class MontyErrors:
    """Maps a run's :class:`Failure` to toolcode's errors, given the engine's limits.

    Args:
        max_depth: The sandbox's recursion limit (frames).
        max_memory: The sandbox's heap limit (bytes).
    """

    def __init__(self, max_depth: int, max_memory: int) -> None:
        self._max_depth = max_depth
        self._max_memory = max_memory

    def mapped(self, failure: Failure, timeout: float, raised: Mapping[str, ToolError], code: str) -> ToolCodeError:
        """The run's error: a limit that stopped it, the snippet's own error, or the engine's.

        ``raised``: the tool errors the run raised into the sandbox, by message (one arrives back as
        a ``RuntimeError`` of the same words); ``code``: the snippet (where the memory ran out).
        """
        e = failure.error
        if isinstance(e, pm.MontyCrashedError):
            if e.timed_out:
                return LimitExceededError("timeout", timeout, None, "the sandbox worker was killed")
            return EngineError("monty", f"the sandbox worker died: {failure.message}")
        if isinstance(e, pm.MontySyntaxError):
            exc_type, message = "SyntaxError", failure.message
        elif isinstance(e, pm.MontyRuntimeError):
            exc_type, message, limit = failure.exc_type, failure.message, failure.limit
            if limit == "timeout":
                return LimitExceededError("timeout", timeout, None, message)
            if limit == "max_recursion_depth":
                return LimitExceededError("max_recursion_depth", self._max_depth, None, message)
            if limit == "max_memory" and (m := _MEMORY_RE.search(message)):
                return LimitExceededError("max_memory", self._max_memory, int(m.group(1)), _what_needed(e, code))
            if limit == "max_memory" and _WORKER_OUT_OF_MEMORY in message:  # the process outgrew it: no count
                return LimitExceededError("max_memory", self._max_memory, None, "the sandbox worker was terminated")
        else:
            return EngineError("monty", f"{type(e).__name__}: {failure.message}")
        frames = e.traceback()
        frame = frames[-1] if frames else None
        # A ToolError's message is the host's own, short: a long one is the snippet's.
        tool_error = raised.get(message) if len(message) <= SHORT_MESSAGE else None
        err = CodeExecutionError(
            "ToolError" if tool_error is not None else exc_type,
            message,
            line=frame.line if frame else None,
            column=frame.column if frame else None,
            tool_id=tool_error.tool_id if tool_error is not None else None,
            tool_code=tool_error.code if tool_error is not None else None,
            traceback=failure.traceback,
        )
        if exc_type == "NotImplementedError" and _CANNOT_SUSPEND in message:
            err.hint = _CANNOT_SUSPEND_HINT
        return err


def _what_needed(e: pm.MontyRuntimeError, code: str) -> str:
    """Where the memory ran out: the line, and the expression when Monty points at one."""
    frames = e.traceback()
    if not frames:
        return ""
    f = frames[-1]
    if f.line > code.count("\n") + 1:
        # The engine's own lines after the snippet (they fetch ``__out``): not the snippet's to read.
        return "returning the result"
    source = f.source_line or ""
    if f.end_line == f.line and 1 <= f.column < f.end_column <= len(source) + 1:
        what = source[f.column - 1 : f.end_column - 1]
    else:
        what = source.strip()
    what = what if len(what) <= 80 else what[:79] + "…"
    return f"line {f.line}: {what}" if what else f"line {f.line}"
