"""The code-mode MCP server: seven metatools in front of a :class:`~toolcode.Toolbox`."""

from __future__ import annotations

import fnmatch
import json
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import anyio
import mcp_types as types
import structlog
from mcp.server import Server, ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from pydantic import BaseModel, ValidationError

from toolcode._app import Toolbox
from toolcode._errors import describe_error
from toolcode._types import ToolCallRecord
from toolcode.exceptions import ToolCodeError
from toolcode.server._descriptions import DESCRIPTIONS, INSTRUCTIONS
from toolcode.server._models import (
    DescribeToolIn,
    DescribeToolOut,
    ExamplesIn,
    ExamplesOut,
    ExecuteCodeIn,
    ExecuteCodeOut,
    NamespaceOut,
    NamespacesIn,
    NamespacesOut,
    RunChainIn,
    RunChainOut,
    RunToolIn,
    RunToolOut,
    SearchHitOut,
    SearchToolsIn,
    SearchToolsOut,
    StepOut,
    TraceEntry,
)
from toolindex import ChangeEvent, Tool, ToolIndexError
from toolrun import ChainStep, ToolRunError

__all__ = ["EXPOSED_SEPARATOR", "CodeModeServer"]

log = structlog.get_logger("toolcode.server")

EXPOSED_SEPARATOR = "__"
"""Joins namespace and name of a directly exposed upstream tool (``github__list_issues``);
``:`` is not allowed in MCP tool names and some clients reject ``.``."""

_InT = TypeVar("_InT", bound=BaseModel)
_Handler = Callable[[ServerRequestContext[Any], Any], Awaitable[types.CallToolResult]]


def _jsonable(value: Any) -> Any:
    """A JSON-safe copy of ``value`` (unknown objects become their ``str``)."""
    return json.loads(json.dumps(value, default=str))


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _ok(model: BaseModel) -> types.CallToolResult:
    data = model.model_dump(mode="json")
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data)


def compact_schema(schema: Any, *, keep_descriptions: bool = True) -> Any:
    """A JSON Schema without the noise pydantic adds (titles, ``anyOf`` with null), same meaning.

    Every definition token is paid on every turn by every client, so the wire schemas are kept lean.
    """
    if isinstance(schema, list):
        items = cast(list[Any], schema)
        return [compact_schema(s, keep_descriptions=keep_descriptions) for s in items]
    if not isinstance(schema, dict):
        return schema
    src = cast(dict[str, Any], schema)
    out: dict[str, Any] = {}
    for key, value in src.items():
        if key == "title" or (key == "description" and not keep_descriptions):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            props = cast(dict[str, Any], value)
            out[key] = {k: compact_schema(v, keep_descriptions=keep_descriptions) for k, v in props.items()}
        elif key == "additionalProperties" and value is True:
            continue
        else:
            out[key] = compact_schema(value, keep_descriptions=keep_descriptions)
    any_of = out.get("anyOf")
    null: dict[str, Any] = {"type": "null"}
    if isinstance(any_of, list):
        options = cast(list[Any], any_of)
        others = [o for o in options if o != null]
        if len(options) == 2 and len(others) == 1 and isinstance(others[0], dict):
            other = cast(dict[str, Any], others[0])
            if isinstance(other.get("type"), str) and set(other) <= {"type", "items"}:
                del out["anyOf"]
                out.update(other)
                out["type"] = [other["type"], "null"]
    if out.get("default", ...) is None and "required" not in out:
        del out["default"]
    return out


def _tool_def(name: str, in_model: type[BaseModel], out_model: type[BaseModel]) -> types.Tool:
    return types.Tool(
        name=name,
        description=DESCRIPTIONS[name],
        input_schema=compact_schema(in_model.model_json_schema()),
        output_schema=compact_schema(out_model.model_json_schema(), keep_descriptions=False),
    )


class CodeModeServer:
    """An MCP server exposing code mode over a :class:`~toolcode.Toolbox`.

    Tools: ``search_tools``, ``list_namespaces``, ``describe_tool``, ``list_tool_examples``,
    ``run_tool``, ``run_chain`` and ``execute_code``, plus any upstream tools selected with
    ``expose`` (patterns ``namespace:name``, ``*`` allowed), published as ``namespace__name``.

    When the upstream catalog changes, search results follow at once; when the change touches
    an exposed tool, clients are told with ``notifications/tools/list_changed`` (on the
    ``subscriptions/listen`` stream for 2026-07-28 clients).

    Args:
        toolbox: A connected toolbox; the server does not close it.
        expose: Patterns of upstream tools to publish directly as well.
        name: Server name reported to clients.
    """

    def __init__(self, toolbox: Toolbox, *, expose: Sequence[str] = (), name: str = "toolcode") -> None:
        from importlib.metadata import version

        self._toolbox = toolbox
        self._expose = tuple(expose)
        self._bus = InMemorySubscriptionBus()
        # Weak: a handshake-era connection that ends must not be kept alive by us.
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._handlers: dict[str, tuple[type[BaseModel], _Handler]] = {
            "search_tools": (SearchToolsIn, self._search_tools),
            "list_namespaces": (NamespacesIn, self._list_namespaces),
            "describe_tool": (DescribeToolIn, self._describe_tool),
            "list_tool_examples": (ExamplesIn, self._list_tool_examples),
            "run_tool": (RunToolIn, self._run_tool),
            "run_chain": (RunChainIn, self._run_chain),
            "execute_code": (ExecuteCodeIn, self._execute_code),
        }
        self._meta_tools = [
            _tool_def("search_tools", SearchToolsIn, SearchToolsOut),
            _tool_def("list_namespaces", NamespacesIn, NamespacesOut),
            _tool_def("describe_tool", DescribeToolIn, DescribeToolOut),
            _tool_def("list_tool_examples", ExamplesIn, ExamplesOut),
            _tool_def("run_tool", RunToolIn, RunToolOut),
            _tool_def("run_chain", RunChainIn, RunChainOut),
            _tool_def("execute_code", ExecuteCodeIn, ExecuteCodeOut),
        ]
        self._exposed: dict[str, Tool] = self._compute_exposed()
        self.server: Server[Any] = Server(
            name,
            version=version("toolcode"),
            instructions=INSTRUCTIONS,
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
            on_subscriptions_listen=ListenHandler(self._bus),
        )
        self._unsubscribe = toolbox.index.subscribe(self._on_index_change)
        self._pending_notify = anyio.Event()

    # ----------------------------------------------------------------- catalog of our own tools

    def _compute_exposed(self) -> dict[str, Tool]:
        if not self._expose:
            return {}
        out: dict[str, Tool] = {}
        cursor: str | None = None
        while True:
            page = self._toolbox.index.list_tools(cursor=cursor, limit=500)
            for tool in page.tools:
                if any(fnmatch.fnmatchcase(tool.key, pat) or fnmatch.fnmatchcase(tool.id, pat) for pat in self._expose):
                    out[f"{tool.namespace}{EXPOSED_SEPARATOR}{tool.name}"] = tool
            if page.next_cursor is None:
                return out
            cursor = page.next_cursor

    def tool_definitions(self) -> list[dict[str, Any]]:
        """The tools this server lists right now, in MCP wire form."""
        listed = [*self._meta_tools, *self._exposed_defs()]
        return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed]

    def _exposed_defs(self) -> list[types.Tool]:
        return [
            types.Tool(
                name=key,
                title=tool.title,
                description=f"[{tool.id}] {tool.description}",
                input_schema=tool.input_schema,
                output_schema=tool.output_schema,
            )
            for key, tool in sorted(self._exposed.items())
        ]

    def tool_names(self) -> list[str]:
        """Names of every tool this server lists right now."""
        return [t.name for t in self._meta_tools] + sorted(self._exposed)

    def _on_index_change(self, event: ChangeEvent) -> None:
        if not self._expose:
            return
        before = {k: t.id for k, t in self._exposed.items()}
        self._exposed = self._compute_exposed()
        touched = set(event.tool_ids) & ({t.id for t in self._exposed.values()} | set(before.values()))
        if touched or before != {k: t.id for k, t in self._exposed.items()}:
            log.info("exposed tools changed", version=event.version, tools=sorted(touched))
            self._pending_notify.set()

    async def notify_changes(self) -> None:
        """Forward exposed-tool changes to clients until cancelled (run it in the serving task group)."""
        while True:
            await self._pending_notify.wait()
            self._pending_notify = anyio.Event()
            await self._bus.publish(ToolsListChanged())
            for connection in list(self._connections):
                try:
                    await connection.send_tool_list_changed()
                except Exception as exc:  # a gone client must not stop the others
                    log.debug("dropping a connection after a failed notification", error=repr(exc))
                    self._connections.discard(connection)

    def close(self) -> None:
        """Stop following index changes."""
        self._unsubscribe()

    # ----------------------------------------------------------------- MCP handlers

    def _remember(self, ctx: ServerRequestContext[Any]) -> None:
        # Handshake-era clients get list_changed on their connection's standalone channel; the
        # SDK's lowlevel context exposes the connection only through the session.
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._connections.add(ctx.session._connection)  # pyright: ignore[reportPrivateUsage]

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._remember(ctx)
        return types.ListToolsResult(tools=[*self._meta_tools, *self._exposed_defs()])

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        self._remember(ctx)
        args = dict(params.arguments or {})
        entry = self._handlers.get(params.name)
        if entry is None:
            exposed = self._exposed.get(params.name)
            if exposed is None:
                names = ", ".join(self.tool_names())
                return _error(f"unknown tool {params.name!r}; this server has: {names}")
            return await self._run_exposed(exposed, args)
        model, handler = entry
        try:
            parsed = model.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}" for e in exc.errors()
            )
            return _error(f"{params.name}: invalid arguments: {problems}")
        try:
            return await handler(ctx, parsed)
        except (ToolCodeError, ToolRunError, ToolIndexError) as exc:
            return _error(describe_error(exc, self._toolbox.index))

    # ----------------------------------------------------------------- metatools

    async def _search_tools(self, ctx: ServerRequestContext[Any], p: SearchToolsIn) -> types.CallToolResult:
        hits = self._toolbox.index.search(p.query, limit=p.limit, namespaces=p.namespaces)
        out = SearchToolsOut(hits=[SearchHitOut(id=h.id, summary=h.summary, score=round(h.score, 3)) for h in hits])
        return _ok(out)

    async def _list_namespaces(self, ctx: ServerRequestContext[Any], p: NamespacesIn) -> types.CallToolResult:
        ns = [NamespaceOut(name=n.name, tool_count=n.tool_count) for n in self._toolbox.index.namespaces()]
        return _ok(NamespacesOut(namespaces=ns))

    async def _describe_tool(self, ctx: ServerRequestContext[Any], p: DescribeToolIn) -> types.CallToolResult:
        tool = self._toolbox.index.get(p.tool_id)
        doc = self._toolbox.store.describe(tool.id, p.level)
        return _ok(DescribeToolOut(id=tool.id, level=p.level, text=doc.render()))

    async def _list_tool_examples(self, ctx: ServerRequestContext[Any], p: ExamplesIn) -> types.CallToolResult:
        tool = self._toolbox.index.get(p.tool_id)
        examples = [_jsonable(_as_dict(e)) for e in self._toolbox.store.examples(tool.id)]
        return _ok(ExamplesOut(id=tool.id, examples=examples))

    async def _run_tool(self, ctx: ServerRequestContext[Any], p: RunToolIn) -> types.CallToolResult:
        result = await self._toolbox.runner.run(p.tool_id, p.args, timeout=p.timeout)
        return _ok(RunToolOut(tool_id=result.tool_id, value=_jsonable(result.value), duration_ms=result.duration_ms))

    async def _run_chain(self, ctx: ServerRequestContext[Any], p: RunChainIn) -> types.CallToolResult:
        steps = [ChainStep(s.tool_id, s.args, use_previous=s.use_previous, on_error=s.on_error) for s in p.steps]
        chain = await self._toolbox.runner.run_chain(steps)
        out = RunChainOut(
            steps=[
                StepOut(
                    index=s.index,
                    tool_id=s.result.tool_id if s.result is not None else s.step.tool_id,
                    ok=s.ok,
                    value=_jsonable(s.result.value) if s.result is not None else None,
                    error=None if s.error is None else describe_error(s.error, self._toolbox.index),
                    duration_ms=round(s.duration_ms, 3),
                )
                for s in chain.steps
            ],
            aborted=chain.aborted,
            final=_jsonable(chain.final.value) if chain.final is not None else None,
        )
        if chain.aborted:
            failed = next(s for s in reversed(out.steps) if not s.ok)
            text = f"chain aborted at step {failed.index} ({failed.tool_id}): {failed.error}\n" + json.dumps(
                out.model_dump(mode="json"), separators=(",", ":")
            )
            return _error(text)
        return _ok(out)

    async def _execute_code(self, ctx: ServerRequestContext[Any], p: ExecuteCodeIn) -> types.CallToolResult:
        done = 0
        limit = p.options.max_tool_calls

        async def on_tool_call(record: ToolCallRecord) -> None:
            nonlocal done
            done += 1
            status = "ok" if record.error is None else f"failed: {record.error}"
            await ctx.session.report_progress(done, limit, f"{record.tool_id} {status} ({record.duration_ms:.0f} ms)")

        started = time.perf_counter()
        try:
            result = await self._toolbox.execute(
                p.code,
                input=p.input,
                timeout=p.options.timeout,
                max_tool_calls=p.options.max_tool_calls,
                namespaces=p.options.allowed_namespaces,
                on_tool_call=on_tool_call,
            )
        except ToolCodeError as exc:
            text = describe_error(exc, self._toolbox.index)
            trace = [_trace_entry(r, "summary") for r in exc.tool_calls]
            if trace:
                text += "\ncalls before the failure: " + json.dumps(
                    [t.model_dump(mode="json", exclude_none=True) for t in trace], separators=(",", ":")
                )
            if exc.stdout:
                text += "\nstdout:\n" + exc.stdout
            return _error(text)
        detail = p.options.trace
        out = ExecuteCodeOut(
            value=_jsonable(result.value),
            stdout=result.stdout,
            trace=[] if detail == "none" else [_trace_entry(r, detail) for r in result.tool_calls],
            tool_calls=len(result.tool_calls),
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return _ok(out)

    async def _run_exposed(self, tool: Tool, args: dict[str, Any]) -> types.CallToolResult:
        try:
            result = await self._toolbox.runner.run(tool.id, args)
        except (ToolRunError, ToolIndexError) as exc:
            return _error(describe_error(exc, self._toolbox.index))
        blocks = [types.TextContent(text=json.dumps(_jsonable(result.structured)))] if not result.content else []
        content: list[types.ContentBlock] = [
            *(_content_block(b) for b in result.content),
            *blocks,
        ]
        raw: Any = result.structured
        structured = cast(dict[str, Any], raw) if isinstance(raw, dict) else None
        return types.CallToolResult(content=content, structured_content=structured)


def _content_block(block: Mapping[str, Any]) -> types.ContentBlock:
    from pydantic import TypeAdapter

    adapter: TypeAdapter[types.ContentBlock] = TypeAdapter(types.ContentBlock)
    return adapter.validate_python(dict(block))


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, Mapping):
        return dict(obj)  # pyright: ignore[reportUnknownArgumentType]
    from dataclasses import asdict, is_dataclass

    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    return {"value": str(obj)}


def _trace_entry(record: ToolCallRecord, detail: str) -> TraceEntry:
    entry = TraceEntry(
        tool_id=record.tool_id,
        ok=record.error is None,
        duration_ms=round(record.duration_ms, 2),
        error=None if record.error is None else str(record.error),
    )
    if detail == "full":
        entry.args = _jsonable(dict(record.args))
        entry.result = _jsonable(record.structured)
    return entry
