"""A small MCP server that writes down, in full, the arguments of every call it receives (stdio).

Run it as ``python recording_server.py LEDGER_FILE``. Each call appends one JSON line
``{"tool": ..., "args": ...}`` to ``LEDGER_FILE``, so a test compares exactly what reached the
server with what a person was asked about. Tools (both take any object):

- ``echo`` (read-only): answers ``{"said": <its arguments>}``;
- ``wipe`` (destructive, so the default policy asks): answers ``"wiped"``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

ANY_OBJECT: dict[str, Any] = {"type": "object"}

TOOLS = [
    types.Tool(
        name="echo",
        description="Answer the arguments given.",
        input_schema=ANY_OBJECT,
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="wipe",
        description="Wipe what the arguments name, for good.",
        input_schema=ANY_OBJECT,
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True),
    ),
]


def _record(ledger: Path, tool: str, args: dict[str, Any]) -> None:
    """Append one call, its arguments in full, as a JSON line."""
    with ledger.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"tool": tool, "args": args}) + "\n")


def main() -> None:
    ledger = Path(sys.argv[1])

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        _record(ledger, params.name, args)
        if params.name == "echo":
            said = {"said": args}
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps(said))], structured_content=said
            )
        return types.CallToolResult(content=[types.TextContent(type="text", text="wiped")])

    server: Server[Any] = Server("recording", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
