"""The peers' side of ``bench/peers.py``: FastMCP CodeMode and pydantic-ai-harness CodeMode, driven over JSON lines.

Runs in the peers' own environment (made by ``bench/peers.py`` with uv, outside the workspace
lock): it imports only the standard library and the peer under test, never a workspace package.

    python _peers_child.py protocol fastmcp|harness   # one JSON request per stdin line, one answer per stdout line
    python _peers_child.py serve-fastmcp               # FastMCP + CodeMode over stdio, one local tool `f`
    python _peers_child.py serve-fastmcp-proxy CONFIG  # FastMCP + CodeMode over stdio in front of CONFIG's servers

Every request is ``{"op": NAME, ...}``; every answer ``{"ok": true, "result": ...}`` or
``{"ok": false, "error": "..."}``. Times are measured here, around each run only, with
``time.perf_counter``. Token counting happens in the parent (one tokenizer for every system):
this side returns what a client or a model would read (wire definitions, result texts).

Both peers get the same local tool as toolcode, ``f(x: int) -> int`` returning ``x + 1``, and,
for the docs, definitions and search rows, catalog tools built from the same JSON records
(name, description, input schema) that toolcode registers.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

Handler = Callable[[dict[str, Any]], Awaitable[Any]]


async def f(x: int) -> int:
    """Return x + 1."""
    return x + 1


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("fastmcp", "pydantic-ai-harness", "pydantic-ai-slim", "pydantic-monty", "mcp"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "absent"
    return out


def _timed_ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


# --------------------------------------------------------------------------- FastMCP


class FastMCPSystem:
    """FastMCP with its CodeMode transform (``fastmcp.experimental.transforms.code_mode``)."""

    def __init__(self) -> None:
        from fastmcp import FastMCP
        from fastmcp.experimental.transforms.code_mode import CodeMode

        self._FastMCP = FastMCP
        self._CodeMode = CodeMode
        self.small = self.small_server()
        self.catalogs: dict[str, list[Any]] = {}
        self.catalog_servers: dict[str, Any] = {}

    def small_server(self) -> Any:
        mcp = self._FastMCP("bench")
        mcp.tool(f)
        # The per-call row makes 100 calls from one snippet; CodeMode's default allows 50.
        # Nothing else is changed: the sandbox limits stay the defaults (30 s, 100 MB).
        mcp.add_transform(self._CodeMode(max_tool_calls=None))
        return mcp

    @staticmethod
    def catalog_tool(rec: dict[str, Any]) -> Any:
        from fastmcp.tools.base import Tool, ToolResult

        class CatalogTool(Tool):
            async def run(self, arguments: dict[str, Any]) -> ToolResult:
                return ToolResult(structured_content={"tool": self.name, "args": arguments})

        return CatalogTool(
            name=rec["name"],
            description=rec.get("description") or "",
            parameters=rec.get("inputSchema") or {"type": "object", "properties": {}},
            output_schema=rec.get("outputSchema"),
        )

    async def load_catalog(self, req: dict[str, Any]) -> Any:
        tools = [self.catalog_tool(rec) for rec in req["tools"]]
        self.catalogs[req["key"]] = tools
        if req.get("server"):
            mcp = self._FastMCP(req["key"])
            for tool in tools:
                mcp.add_tool(tool)
            mcp.add_transform(self._CodeMode())
            self.catalog_servers[req["key"]] = mcp
        return len(tools)

    async def definitions(self, req: dict[str, Any]) -> Any:
        from fastmcp import Client

        server = self.small if req.get("catalog", "small") == "small" else self.catalog_servers[req["catalog"]]
        async with Client(server) as client:
            tools = await client.list_tools()
        return {
            "tools": [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools],
            "instructions": server.instructions or "",
        }

    async def docs(self, req: dict[str, Any]) -> Any:
        """``get_schema`` of each named tool, one call per tool, at ``detail`` (default: its default)."""
        from fastmcp import Client

        server = self.catalog_servers[req["catalog"]]
        out: list[dict[str, Any]] = []
        async with Client(server) as client:
            for name in req["names"]:
                args: dict[str, Any] = {"tools": [name]}
                if req.get("detail"):
                    args["detail"] = req["detail"]
                res = await client.call_tool_mcp("get_schema", args)
                out.append(res.model_dump(by_alias=True, mode="json", exclude_none=True))
        return out

    async def result(self, req: dict[str, Any]) -> Any:
        """The wire result of ``execute`` through the MCP server (in-memory transport)."""
        from fastmcp import Client

        async with Client(self.small) as client:
            res = await client.call_tool_mcp("execute", {"code": req["code"]})
        return res.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def run(self, code: str) -> Any:
        # The server's own call path (arguments validated, middleware, the tool), without a transport.
        res = await self.small.call_tool("execute", {"code": code})
        if res.structured_content is not None:  # a dict value
            return res.structured_content
        text = "".join(getattr(block, "text", "") for block in res.content)
        return json.loads(text) if text else None

    async def search(self, key: str, query: str, k: int) -> list[str]:
        hits = await self.searcher._search(self.catalogs[key], query)
        return [t.name for t in hits[:k]]

    @property
    def searcher(self) -> Any:
        # What CodeMode's default `search` tool runs: BM25 over name, description and parameters,
        # all matches ranked, the limit applied after (fastmcp's `Search` discovery tool).
        if not hasattr(self, "_searcher"):
            from fastmcp.server.transforms.search.bm25 import BM25SearchTransform

            self._searcher = BM25SearchTransform(max_results=sys.maxsize)
        return self._searcher


# --------------------------------------------------------------------------- pydantic-ai-harness


class HarnessSystem:
    """pydantic-ai-harness's ``CodeModeToolset`` (what its ``CodeMode`` capability installs), called as an agent would.

    A run goes through pydantic-ai's ``ToolManager.handle_call`` with a ``run_code`` call part:
    the path a model's tool call takes (argument validation, hooks, the toolset), without a model.
    """

    def __init__(self) -> None:
        warnings.filterwarnings("ignore", category=UserWarning)
        self.tm: Any = None
        self.toolset: Any = None
        self.catalogs: dict[str, list[Any]] = {}
        self._defs: dict[str, list[Any]] = {}

    async def start(self) -> None:
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai_harness.code_mode import CodeModeToolset

        # 100 calls per snippet and a warm REPL kept across thousands of snippets: the nested-call
        # budget and Monty's per-session suspension budget (1,000 by default, cumulative) are
        # raised; time and memory limits stay the defaults (30 s, 256 MiB).
        self.toolset = CodeModeToolset(
            wrapped=FunctionToolset([f]), max_tool_calls=1_000_000, resource_limits={"max_suspensions": 2**62}
        )
        await self.toolset.__aenter__()
        self.tm = await self.manager(self.toolset)

    @staticmethod
    async def manager(toolset: Any) -> Any:
        import dataclasses

        from pydantic_ai import RunContext
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.tool_manager import ToolManager
        from pydantic_ai.usage import RunUsage, UsageLimits

        ctx = RunContext(
            deps=None,
            model=TestModel(),
            usage=RunUsage(),
            usage_limits=UsageLimits(request_limit=None, tool_calls_limit=None),
        )
        tm = await ToolManager(toolset=toolset).for_run_step(ctx)
        ctx = dataclasses.replace(ctx, tool_manager=tm)
        tm.ctx = ctx
        return tm

    async def definitions(self, req: dict[str, Any]) -> Any:
        """The definitions a model is sent: ``run_code``, every sandboxed tool's signature in its description."""
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai_harness.code_mode import CodeModeToolset

        catalog = req.get("catalog", "small")
        if catalog == "small":
            tm = self.tm
        else:
            toolset = CodeModeToolset(wrapped=FunctionToolset(self.catalogs.get(catalog, [])))
            async with toolset:
                tm = await self.manager(toolset)
        return {
            "tools": [
                {"name": td.name, "description": td.description or "", "inputSchema": td.parameters_json_schema}
                for td in (t.tool_def for t in tm.tools.values())
            ],
            "instructions": "",
        }

    async def load_catalog(self, req: dict[str, Any]) -> Any:
        from pydantic_ai import Tool

        def make(name: str) -> Callable[..., Any]:
            async def call(**kwargs: Any) -> dict[str, Any]:
                return {"tool": name, "args": kwargs}

            return call

        self.catalogs[req["key"]] = [
            Tool.from_schema(
                make(rec["name"]),
                rec["name"],
                rec.get("description") or "",
                rec.get("inputSchema") or {"type": "object", "properties": {}},
            )
            for rec in req["tools"]
        ]
        return len(self.catalogs[req["key"]])

    async def result(self, req: dict[str, Any]) -> Any:
        """What the model reads of a ``run_code`` result (harness has no MCP server): the tool-return text."""
        from pydantic_ai.messages import ToolReturnPart

        ret = await self.tm.handle_call(self.call_part(req["code"]))
        return {"text": ToolReturnPart(tool_name="run_code", content=ret.return_value).model_response_str()}

    @staticmethod
    def call_part(code: str) -> Any:
        from pydantic_ai.messages import ToolCallPart

        return ToolCallPart("run_code", {"code": code})

    async def run(self, code: str) -> Any:
        ret = await self.tm.handle_call(self.call_part(code))
        return ret.return_value

    async def search(self, key: str, query: str, k: int) -> list[str]:
        # pydantic-ai's local tool search (``search_tools`` beside ``run_code`` for deferred tools):
        # keyword overlap with the name and the description.
        from pydantic_ai.toolsets._tool_search import keywords_search_fn

        defs = self._defs.get(key)
        if defs is None:
            defs = self._defs[key] = [t.tool_def for t in self.catalogs[key]]
        return keywords_search_fn(None, [query], defs)[:k]


# --------------------------------------------------------------------------- the protocol


def handlers(system: Any) -> dict[str, Handler]:
    async def info(req: dict[str, Any]) -> Any:
        return _versions()

    async def time_runs(req: dict[str, Any]) -> Any:
        """Run each code of ``codes`` in turn, ``repeat`` times; the ms of every run, per code."""
        codes: list[str] = req["codes"]
        expect: list[Any] = req.get("expect") or [None] * len(codes)
        times: list[list[float]] = [[] for _ in codes]
        for _ in range(req.get("warmup", 0)):
            for code in codes:
                await system.run(code)
        for _ in range(req["repeat"]):
            for i, code in enumerate(codes):
                t0 = time.perf_counter()
                value = await system.run(code)
                times[i].append(_timed_ms(t0))
                if expect[i] is not None and value != expect[i]:
                    raise RuntimeError(f"run returned {value!r}, expected {expect[i]!r}: {code!r}")
        return times

    async def bomb(req: dict[str, Any]) -> Any:
        t0 = time.perf_counter()
        try:
            value = await system.run(req["code"])
        except Exception as e:  # the error is the measurement
            return {"ms": _timed_ms(t0), "error": f"{type(e).__name__}: {e}"[:600]}
        return {"ms": _timed_ms(t0), "error": None, "value": repr(value)[:200]}

    async def search(req: dict[str, Any]) -> Any:
        rankings: list[list[str]] = []
        ms: list[float] = []
        for query in req["queries"]:
            t0 = time.perf_counter()
            rankings.append(await system.search(req["key"], query, req.get("k", 10)))
            ms.append(_timed_ms(t0))
        return {"rankings": rankings, "p50_ms": round(statistics.median(ms), 3) if ms else 0.0}

    out: dict[str, Handler] = {"info": info, "time": time_runs, "bomb": bomb, "search": search}
    for name in ("definitions", "docs", "result", "load_catalog"):
        if hasattr(system, name):
            out[name] = getattr(system, name)
    return out


async def protocol(which: str) -> None:
    # Answers go to the real stdout; anything a library prints goes to stderr instead.
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if which == "fastmcp":
        system: Any = FastMCPSystem()
    elif which == "harness":
        system = HarnessSystem()
        await system.start()
    else:
        raise SystemExit(f"unknown system {which!r}")
    table = handlers(system)
    while True:
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        if not line:
            break
        try:
            req = json.loads(line)
            handler = table.get(req.get("op"))
            if handler is None:
                raise ValueError(f"unknown op {req.get('op')!r} for {which}")
            answer: dict[str, Any] = {"ok": True, "result": await handler(req)}
        except Exception as e:  # reported to the parent, which stops with the message
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


def _quiet_fastmcp() -> None:
    os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
    os.environ.setdefault("FASTMCP_SHOW_CLI_BANNER", "false")


async def serve_fastmcp() -> None:
    system = FastMCPSystem()
    await system.small.run_async(transport="stdio", show_banner=False)


async def serve_fastmcp_proxy(config: dict[str, Any]) -> None:
    from fastmcp.experimental.transforms.code_mode import CodeMode
    from fastmcp.server import create_proxy

    proxy = create_proxy(config, name="proxy")
    proxy.add_transform(CodeMode())
    await proxy.run_async(transport="stdio", show_banner=False)


def main() -> None:
    _quiet_fastmcp()
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "protocol" and len(sys.argv) == 3:
        anyio.run(protocol, sys.argv[2])
    elif mode == "serve-fastmcp":
        anyio.run(serve_fastmcp)
    elif mode == "serve-fastmcp-proxy" and len(sys.argv) == 3:
        with open(sys.argv[2], encoding="utf-8") as fh:
            config = json.load(fh)
        anyio.run(serve_fastmcp_proxy, config)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
