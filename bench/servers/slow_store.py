"""A tiny MCP server for ``bench/speculation.py``: reads that take a while, and a write that logs what it gets.

Tools (stdio, mcp SDK ``MCPServer``):

- ``get_item(n)`` (``readOnlyHint``): waits ``--delay`` seconds (default 0.1), returns
  ``{"n": n, "items": [n + 1, ..., n + 10]}``;
- ``put_item(n)`` (no hints: a write): appends ``n`` as one line to the ``--log`` file, returns ``n``.

    python bench/servers/slow_store.py --log /tmp/writes.txt [--delay 0.1]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations


def build(log: Path, delay: float) -> MCPServer:
    server = MCPServer("slow-store")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def get_item(n: int) -> dict[str, Any]:
        """Read item n (takes a while)."""
        await anyio.sleep(delay)
        return {"n": n, "items": list(range(n + 1, n + 11))}

    @server.tool()
    async def put_item(n: int) -> int:
        """Store item n (every call is logged)."""
        with log.open("a", encoding="utf-8") as f:
            f.write(f"{n}\n")
        return n

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", type=Path, required=True, help="file the write tool appends each call to")
    parser.add_argument("--delay", type=float, default=0.1, help="seconds each read takes (default 0.1)")
    args = parser.parse_args()
    build(args.log, args.delay).run("stdio")


if __name__ == "__main__":
    main()
