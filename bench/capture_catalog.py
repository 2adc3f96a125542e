"""Capture the tool definitions of running MCP servers as an evaluation catalog.

    uv run python bench/capture_catalog.py --config servers.json --out catalog.json [--source TEXT]

Starts each server of the config's ``mcpServers`` (any MCP client config), lists its tools
(every page) and writes them in the catalog format of ``tests/data/eval/README.md``: one
record per tool with the server's name as namespace, its description, title, input and
output schemas and annotations as tags (``readOnlyHint`` ...), plus the server's
``instructions`` as ``server_description``. A name ending in ``.gz`` is written compressed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters


def _record(server: str, tool: Any, instructions: str | None) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": f"{server}:{tool.name}",
        "namespace": server,
        "name": tool.name,
        "description": tool.description or "",
        "tags": [],
        "input_schema": tool.input_schema,
    }
    if tool.title:
        rec["title"] = tool.title
    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
    if annotations.get("title") and "title" not in rec:
        rec["title"] = annotations["title"]
    rec["tags"] = sorted(k for k, v in annotations.items() if v is True)
    if tool.output_schema:
        rec["output_schema"] = tool.output_schema
    rec["server"] = server
    if instructions:
        rec["server_description"] = instructions
    return rec


async def _capture(name: str, entry: dict[str, Any]) -> list[dict[str, Any]]:
    env = {**os.environ, **(entry.get("env") or {})}
    params = StdioServerParameters(command=entry["command"], args=list(entry.get("args") or []), env=env)
    async with Client(params) as client:
        instructions = getattr(client, "instructions", None)
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
    return [_record(name, t, instructions if isinstance(instructions, str) else None) for t in tools]


async def _capture_all(servers: dict[str, Any]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for name, entry in servers.items():
        got = await _capture(name, entry)
        print(f"{name}: {len(got)} tools", file=sys.stderr)
        records.extend(got)
    return records


def _write(out: Path, records: list[dict[str, Any]], source: str | None) -> None:
    meta: dict[str, Any] = {"n_tools": len(records)}
    if source:
        meta["source"] = source
    text = json.dumps({"meta": meta, "tools": records}, indent=1, ensure_ascii=False) + "\n"
    if out.suffix == ".gz":
        with gzip.open(out, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        out.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", type=Path, required=True, help="JSON with mcpServers (stdio entries)")
    ap.add_argument("--out", type=Path, required=True, help="catalog file to write (.json or .json.gz)")
    ap.add_argument("--source", default=None, help="provenance for meta.source (server packages and versions)")
    args = ap.parse_args(argv)
    servers: dict[str, Any] = json.loads(args.config.read_text())["mcpServers"]
    _write(args.out, anyio.run(_capture_all, servers), args.source)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
