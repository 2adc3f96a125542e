"""A replay MCP server for the GitHub MCP server's catalog, with deterministic fixture data.

Serves every tool of ``github_mcp_server_tools.json`` (117 tools, real names, descriptions and
input schemas taken from github/github-mcp-server's tool snapshots) over stdio, or streamable
HTTP with ``--http 127.0.0.1:PORT``. Results are generated from the tool's name and input
schema, seeded by the tool name and the arguments, so the same call always returns the same
JSON and different calls differ. Nothing is special-cased per tool: a ``list_*``/``search_*``
tool returns a page of records, a ``get_*``/``*_read``/``*_get`` tool one record, anything
else an acknowledgement that echoes its arguments.

The result is one text block holding JSON, the way the real server answers.

    python bench/servers/github_replay.py                 # stdio
    python bench/servers/github_replay.py --http 127.0.0.1:8765
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

DEFAULT_CATALOG = Path(__file__).resolve().parents[2] / "tests" / "data" / "eval" / "github_mcp_server_tools.json.gz"

_WORDS = (
    "fix build cache refactor parser add retry docs update config crash login timeout flaky test "
    "release notes bump dependency memory leak windows path unicode handling review api pagination "
    "error message typo ci workflow lint format migrate storage index search performance regression"
).split()
_USERS = ("octocat", "hubot", "monalisa", "defunkt", "mojombo", "pjhyett", "wycats", "tenderlove")
_LABELS = ("bug", "enhancement", "documentation", "good first issue", "help wanted", "question", "wontfix")
_LIST_PREFIXES = ("list_", "search_")
_GET_MARKERS = ("get_", "_get", "_read")


def load_catalog(path: Path) -> list[dict[str, Any]]:
    """Load the tool records of an eval catalog file."""
    raw = path.read_bytes()
    data = json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
    return list(data["tools"])


def _rng(tool: str, args: dict[str, Any]) -> random.Random:
    seed = hashlib.sha256((tool + "\0" + json.dumps(args, sort_keys=True, default=str)).encode()).digest()
    return random.Random(int.from_bytes(seed[:8], "big"))


def _noun(tool: str) -> str:
    """The thing a tool is about: ``list_issues`` -> ``issue``, ``pull_request_read`` -> ``pull_request``."""
    name = tool
    for prefix in ("list_", "search_", "get_", "create_", "update_", "delete_", "add_", "remove_"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    for suffix in ("_read", "_write", "_get", "_list"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def _record(rng: random.Random, noun: str, args: dict[str, Any], i: int) -> dict[str, Any]:
    owner = str(args.get("owner", rng.choice(_USERS)))
    repo = str(args.get("repo", "toolkit"))
    number = int(args.get("issue_number", args.get("pullNumber", args.get("pull_number", 0)))) or rng.randint(1, 4000)
    if i:
        number = max(1, number - i)
    day = 1 + (number * 7 + i) % 28
    month = 1 + (number + i) % 12
    user = rng.choice(_USERS)
    return {
        "id": rng.randint(10_000_000, 99_999_999),
        "node_id": hashlib.sha1(f"{noun}{number}{i}".encode()).hexdigest()[:20],
        "number": number,
        "title": _sentence(rng, rng.randint(3, 8)).capitalize(),
        "state": rng.choice(("open", "open", "closed")),
        "user": {
            "login": user,
            "id": int(hashlib.md5(user.encode()).hexdigest()[:5], 16),
            "type": "User",
            "site_admin": False,
        },
        "labels": [{"name": lab, "color": hashlib.md5(lab.encode()).hexdigest()[:6]} for lab in rng.sample(_LABELS, 2)],
        "comments": rng.randint(0, 25),
        "created_at": f"2026-{month:02d}-{day:02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z",
        "updated_at": f"2026-{month:02d}-{min(28, day + 1):02d}T12:00:00Z",
        "html_url": f"https://github.com/{owner}/{repo}/{noun}s/{number}",
        "body": _sentence(rng, rng.randint(25, 60)).capitalize() + ".",
        "author_association": rng.choice(("OWNER", "MEMBER", "CONTRIBUTOR", "NONE")),
        "sha": hashlib.sha1(f"{owner}/{repo}#{noun}{number}{i}".encode()).hexdigest(),
    }


def fixture(tool: dict[str, Any], args: dict[str, Any]) -> Any:
    """The deterministic result of calling ``tool`` with ``args``."""
    name: str = tool["name"]
    rng = _rng(name, args)
    noun = _noun(name)
    if name.startswith(_LIST_PREFIXES):
        per_page = args.get("perPage", args.get("per_page", 30))
        count = max(0, min(100, int(per_page) if isinstance(per_page, int | float) else 30))
        page = int(args.get("page", 1)) if isinstance(args.get("page", 1), int | float) else 1
        items = [_record(rng, noun, args, i + (page - 1) * count) for i in range(count)]
        if name.startswith("search_"):
            return {"total_count": count * 7, "incomplete_results": False, "items": items}
        return items
    if any(marker in name for marker in _GET_MARKERS) or name.startswith("get_"):
        rec = _record(rng, noun, args, 0)
        method = args.get("method")
        if isinstance(method, str) and method.startswith(("get_comments", "list_")):
            return [_record(rng, "comment", args, i) for i in range(rng.randint(2, 12))]
        return rec
    return {
        "ok": True,
        "action": name,
        "id": rng.randint(10_000_000, 99_999_999),
        "url": f"https://github.com/{args.get('owner', 'octocat')}/{args.get('repo', 'toolkit')}/{noun}s",
        "echo": {k: v for k, v in args.items() if isinstance(v, str | int | float | bool)},
    }


def _missing_required(tool: dict[str, Any], args: dict[str, Any]) -> list[str]:
    required: list[str] = list(tool.get("input_schema", {}).get("required", []))
    return [r for r in required if r not in args]


def build_server(catalog: list[dict[str, Any]]) -> Server[Any]:
    """An MCP server answering every catalog tool with fixture data."""
    by_name = {t["name"]: t for t in catalog}
    mcp_tools = [
        types.Tool(
            name=t["name"],
            title=t.get("title"),
            description=t.get("description", ""),
            input_schema=t.get("input_schema") or {"type": "object"},
        )
        for t in catalog
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=mcp_tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = by_name.get(params.name)
        args = dict(params.arguments or {})
        if tool is None:
            text = f"unknown tool {params.name!r}"
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        missing = _missing_required(tool, args)
        if missing:
            text = f"{params.name}: missing required parameter(s): {', '.join(missing)}"
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        text = json.dumps(fixture(tool, args), indent=2)
        return types.CallToolResult(content=[types.TextContent(text=text)])

    return Server("github-replay", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--catalog", type=Path, default=DEFAULT_CATALOG, help="eval catalog JSON (default: %(default)s)"
    )
    parser.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP instead of stdio")
    ns = parser.parse_args(argv)
    server = build_server(load_catalog(ns.catalog))
    if ns.http:
        import uvicorn

        host, _, port = ns.http.rpartition(":")
        uvicorn.run(server.streamable_http_app(host=host), host=host, port=int(port), log_level="warning")
    else:
        anyio.run(_serve_stdio, server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
