"""A small MCP server with a read tool and a write tool whose calls are counted on disk (stdio).

Run it as ``python ledger_server.py LEDGER_FILE``. Tools:

- ``read_notes()`` (read-only): the notes written so far;
- ``add_note(text)`` (a write, not destructive): appends one line to ``LEDGER_FILE``, so a test
  counts exactly how many calls reached the server. Its description holds markup
  (``<script>…</script>``), as a hostile upstream's may.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

HOSTILE_DESCRIPTION = 'Add a note. <script>document.title="owned"</script><img src=x onerror="alert(1)">'

TOOLS = [
    types.Tool(
        name="read_notes",
        description="The notes written so far.",
        input_schema={"type": "object", "properties": {}},
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="add_note",
        description=HOSTILE_DESCRIPTION,
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False),
    ),
]


def _write(ledger: Path, text: str | None) -> list[str]:
    """Append ``text`` as one line (``None``: nothing); the notes so far."""
    if text is not None:
        with ledger.open("a", encoding="utf-8") as f:
            f.write(text.replace("\n", " ") + "\n")
    return ledger.read_text(encoding="utf-8").splitlines() if ledger.exists() else []


def main() -> None:
    ledger = Path(sys.argv[1])

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        text = str((params.arguments or {}).get("text", "")) if params.name == "add_note" else None
        notes = _write(ledger, text)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=str(len(notes)))], structured_content={"notes": notes}
        )

    server: Server[Any] = Server("ledger", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
