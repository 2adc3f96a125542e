"""Turn any error of the stack into one actionable paragraph for a model or a person."""

from __future__ import annotations

import re

from toolcode.exceptions import CodeExecutionError, ConfigurationError, LimitExceededError
from toolindex import AmbiguousToolIDError, Index, ToolNotFoundError

__all__ = ["describe_error"]

_LIMIT_HINTS = {
    "timeout": "do less per run, or raise options.timeout",
    "max_tool_calls": "batch the work or raise options.max_tool_calls",
    "max_chain_steps": "split the chain",
    "max_memory": "keep less data in memory; filter while iterating",
    "max_recursion_depth": "use a loop instead of recursion",
    "max_output_size": "return a smaller value (counts, ids, summaries)",
}
_QUOTED_ID = re.compile(r"'([A-Za-z0-9_.-]+(?::[A-Za-z0-9_.-]+){0,2})'")


def _nearest(index: Index | None, tool_id: str) -> list[str]:
    if index is None:
        return []
    suggest = getattr(index, "suggest", None)
    if callable(suggest):
        found = suggest(tool_id)
        if isinstance(found, list) and found:
            return [str(s) for s in found]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    name = tool_id.split(":")[1] if ":" in tool_id else tool_id
    return [h.id for h in index.search(name.replace("_", " "), limit=3)]


def describe_error(exc: BaseException, index: Index | None = None) -> str:
    """Explain a failure: where it happened, which tool, which limit, what to try.

    Args:
        exc: The error (toolcode, toolrun or toolindex, or anything else).
        index: The catalog, used to suggest the nearest tool names for an unknown id.

    Returns:
        One or a few lines of plain text.
    """
    if isinstance(exc, ToolNotFoundError):
        near = exc.suggestions or _nearest(index, exc.tool_id)
        hint = f"; nearest tools: {', '.join(near)}" if near else "; use search_tools to find one"
        return f"unknown tool {exc.tool_id!r}{hint}"
    if isinstance(exc, AmbiguousToolIDError):
        return str(exc)
    if isinstance(exc, LimitExceededError):
        hint = _LIMIT_HINTS.get(exc.limit, "")
        return f"{exc}" + (f" — {hint}" if hint else "")
    if isinstance(exc, CodeExecutionError):
        parts = [f"{exc.exc_type}" + (f" at line {exc.line}" if exc.line is not None else "") + f": {exc.message}"]
        suggested = "did you mean" in exc.message
        if exc.tool_id:
            parts.append(f"failing tool: {exc.tool_id}")
            if not suggested and ("not found" in exc.message.lower() or "unknown tool" in exc.message.lower()):
                near = _nearest(index, exc.tool_id)
                if near:
                    parts.append(f"nearest tools: {', '.join(near)}")
        elif not suggested and ("not found" in exc.message.lower() or "unknown tool" in exc.message.lower()):
            m = _QUOTED_ID.search(exc.message)
            if m:
                near = _nearest(index, m.group(1))
                if near:
                    parts.append(f"nearest tools: {', '.join(near)}")
        if exc.traceback:
            parts.append(exc.traceback.strip())
        return "\n".join(parts)
    if isinstance(exc, ConfigurationError):
        return str(exc)
    tool_id = getattr(exc, "tool_id", None)
    text = str(exc) or type(exc).__name__
    if tool_id and str(tool_id) not in text:
        text = f"{tool_id}: {text}"
    return f"{type(exc).__name__}: {text}"
