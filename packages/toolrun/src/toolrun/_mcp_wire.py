"""MCP wire helpers: raw requests, tolerant tool parsing, result normalisation.

The SDK validates whole responses: one malformed tool makes ``list_tools()`` raise, and a
structured result that misses its declared output schema makes ``call_tool()`` raise. We
take the raw JSON result instead, check tools one by one, and leave output validation to
the runner's policy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from mcp import ClientSession
from mcp.shared.dispatcher import CallOptions, ProgressFnT
from mcp.shared.inbound import find_invalid_x_mcp_header, x_mcp_header_map

from toolindex import InvalidToolError, Tool
from toolrun._compat_mcp import header_maps, send_raw
from toolrun._schema_limits import DEFAULT_SCHEMA_LIMITS, SchemaLimits
from toolrun._types import BackendResult
from toolrun._validation import compile_schema
from toolrun.exceptions import InvalidSchemaError, SchemaLimitError

__all__ = ["error_text", "learn_param_headers", "normalise_result", "parse_tool", "raw_request"]


async def raw_request(
    session: ClientSession,
    method: str,
    params: Mapping[str, Any] | None,
    *,
    progress: ProgressFnT | None = None,
) -> dict[str, Any]:
    """Send one request on the session and return the raw JSON result.

    Uses the session's own stamping (protocol-version ``_meta`` and headers), so the request
    is the one ``ClientSession.send_request`` would write, minus result validation.

    Raises:
        MCPError: An error response, or ``CONNECTION_CLOSED`` when the transport is gone.
    """
    opts: CallOptions = {}
    if progress is not None:
        opts["on_progress"] = progress
    return await send_raw(session, method, params or {}, opts)


def learn_param_headers(session: ClientSession, tools: list[dict[str, Any]]) -> None:
    """Tell a 2026-07-28 session which arguments of which tools travel as ``Mcp-Param-*`` headers.

    ``ClientSession`` learns this only from its own ``list_tools()``; our tolerant listing
    bypasses that, so the maps are filled here (tools with an invalid annotation were dropped
    by :func:`parse_tool`).
    """
    maps = header_maps(session)
    for t in tools:
        name, schema = t.get("name"), t.get("inputSchema")
        if isinstance(name, str) and isinstance(schema, dict):
            header_map = x_mcp_header_map(schema)
            if header_map:
                maps[name] = header_map
            else:
                maps.pop(name, None)


def _check_schema(schema: Any, what: str, limits: SchemaLimits) -> None:
    # The schema is compiled exactly as the runner will compile it (bounds first, then
    # jsonschema-rs offline), so a tool listed here is one the runner can validate.
    if not isinstance(schema, dict):
        raise ValueError(f"{what} must be an object")
    try:
        compile_schema(cast(dict[str, Any], schema), limits)
    except SchemaLimitError as e:
        raise ValueError(f"{what} is {e}") from None
    except InvalidSchemaError as e:
        where = e.pointer.lstrip("/") or "(root)"
        raise ValueError(f"{what} is not a valid JSON Schema at {where}: {e.reason}") from None


def parse_tool(
    raw: Any, namespace: str, *, modern: bool = False, schema_limits: SchemaLimits = DEFAULT_SCHEMA_LIMITS
) -> Tool:
    """Turn one raw ``tools/list`` entry into a :class:`~toolindex.Tool`.

    The schemas are upstream data: each must be valid JSON Schema within ``schema_limits``,
    with every ``$ref`` inside its own document; nothing a schema names is ever fetched.

    Args:
        raw: The tool's JSON object as the server sent it.
        namespace: Namespace to put it in (the server's name).
        modern: Whether the session speaks 2026-07-28, where a tool with an invalid
            ``x-mcp-header`` annotation must be dropped.
        schema_limits: Bounds on ``inputSchema`` and ``outputSchema``.

    Returns:
        The tool.

    Raises:
        ValueError: If the entry is not a usable tool; the message says why (for a schema:
            which bound or which reference, and where).
    """
    if not isinstance(raw, dict):
        raise ValueError(f"a tool must be an object, got {type(raw).__name__}")
    entry = cast(dict[str, Any], raw)
    if "inputSchema" not in entry:
        raise ValueError("missing inputSchema")
    schema = entry["inputSchema"]
    if isinstance(schema, dict) and cast(dict[str, Any], schema).get("type") != "object":
        raise ValueError(f"inputSchema must have type 'object', got {cast(dict[str, Any], schema).get('type')!r}")
    _check_schema(schema, "inputSchema", schema_limits)
    if modern and (bad := find_invalid_x_mcp_header(schema)) is not None:
        raise ValueError(f"invalid x-mcp-header annotation: {bad}")
    if entry.get("outputSchema") is not None:
        _check_schema(entry["outputSchema"], "outputSchema", schema_limits)
    try:
        return Tool.from_mcp(entry, namespace=namespace)
    except InvalidToolError as e:
        where = f"{e.field}: " if e.field else ""
        raise ValueError(f"{where}{e.reason}") from None


def normalise_result(raw: Mapping[str, Any]) -> BackendResult:
    """Normalise a raw ``tools/call`` result.

    ``structured`` is ``structuredContent`` when present, else the parsed JSON of a single text
    block when it is JSON, else ``None``. Content blocks are kept in wire form.

    Raises:
        ValueError: If the result is not shaped like a ``CallToolResult``.
    """
    content_raw = raw.get("content", [])
    if not isinstance(content_raw, list):
        raise ValueError("'content' must be a list")
    blocks = cast(list[Any], content_raw)
    for b in blocks:
        if not isinstance(b, dict) or not isinstance(cast(dict[str, Any], b).get("type"), str):
            raise ValueError("every content block must be an object with a string 'type'")
    content = tuple(cast(list[dict[str, Any]], blocks))
    is_error = raw.get("isError") is True
    structured: Any = raw.get("structuredContent")
    if structured is None and len(content) == 1 and content[0].get("type") == "text":
        text = content[0].get("text")
        # Only text that can start a JSON value is tried; plain prose skips the parser.
        if isinstance(text, str) and text.lstrip()[:1] in '{["-0123456789tfn':
            try:
                structured = json.loads(text)
            except ValueError:
                structured = None
    return BackendResult(structured=structured, content=content, is_error=is_error)


def error_text(content: tuple[dict[str, Any], ...]) -> str:
    """The text of an error result's content blocks (or a placeholder when there is none)."""
    texts = [str(b.get("text", "")) for b in content if b.get("type") == "text"]
    return "\n".join(t for t in texts if t) or "the tool reported an error without a message"
