"""The code-mode MCP server: the core's operations as MCP tools, in front of a :class:`~toolcode.Toolbox`.

A thin adapter over a :class:`~toolcode._door.Door`: each call is the door's, its reply becomes a
``CallToolResult`` (the result model as ``structuredContent``, the reply text as text content). A
failure is ``isError`` with ``structuredContent = {"ok": false, "error": {"code", "message", "line",
"column", "tool_id", "hint"}}`` in every tool but an exposed one that declares an ``outputSchema``: that
shape would break the schema (clients check it), so its failure is the text alone.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, TypeAdapter

from toolcode._app import Toolbox
from toolcode._compat_mcp import connection_of
from toolcode._door import Definition, Door
from toolcode._metatools import MetaToolReply, as_object, instructions, reply_of
from toolcode._results import RESULT_URI_PREFIX, result_ref_of_uri
from toolcode.exceptions import ToolCodeError, clip
from toolcode.models import ExecuteOutcome, RunToolOutcome, StoredResultInfo
from toolcode.server._ask import asker, can_ask_by_retry, continue_by_retry, decide_now, input_required
from toolcode.server._http_guard import http_caller
from toolcode.server._progress import Progress
from tooldocs import json_text
from toolindex import ChangeEvent
from toolindex.log import get_logger

__all__ = ["CodeModeServer"]

log = get_logger("toolcode.server")

_CONTENT_BLOCK: TypeAdapter[types.ContentBlock] = TypeAdapter(types.ContentBlock)


def _caller_of(ctx: ServerRequestContext[Any]) -> str:
    """Who a request is from: the HTTP door's authenticated caller, else the MCP session, else the process."""
    who = http_caller(ctx)
    if who is not None:
        return f"token:{who}"
    # A 2025-11-25 HTTP session has an id (``Mcp-Session-Id``); stdio and stateless HTTP do not.
    session_id = connection_of(ctx).session_id
    return f"session:{session_id}" if session_id else "local"


def _stored(result: BaseModel | None) -> list[StoredResultInfo]:
    if isinstance(result, RunToolOutcome):
        return [result.stored] if result.stored is not None else []
    return list(result.stored) if isinstance(result, ExecuteOutcome) else []


def _result(reply: MetaToolReply, output_schema: bool = False) -> types.CallToolResult:
    """The wire result of a reply; ``output_schema``: the tool declares one, so a failure has no structured content."""
    run = reply.run
    if run is not None:  # an exposed upstream tool: passed on as it answered
        content: list[types.ContentBlock] = [_CONTENT_BLOCK.validate_python(dict(b)) for b in run.content]
        content = content or [types.TextContent(text=json_text(run.structured))]
        return types.CallToolResult(content=content, structured_content=as_object(run.structured))
    blocks: list[types.ContentBlock] = [types.TextContent(text=reply.text)]
    # What did not fit is a resource: resources/read returns it (a page at a time; the cut's marker gives its size).
    blocks.extend(types.ResourceLink(uri=st.uri, name=st.what) for st in _stored(reply.result))
    structured = None if reply.is_error and output_schema else reply.structured()
    return types.CallToolResult(content=blocks, structured_content=structured, is_error=reply.is_error)


def _wire(d: Definition) -> types.Tool:
    tool = d.tool
    return types.Tool(
        name=d.name,
        title=tool.title if tool is not None else None,
        description=d.description,
        input_schema=d.input_schema,
        output_schema=tool.output_schema if tool is not None else None,
        # Clients that ask their user before a tool call should ask before these: a decision on a
        # paused run, or an approval of tool definitions, is the person's.
        annotations=types.ToolAnnotations(destructive_hint=True) if d.person else None,
    )


class CodeModeServer:
    """An MCP server exposing code mode over a :class:`~toolcode.Toolbox`.

    Tools: the code-mode tools chosen by ``tools`` (default :data:`toolcode.server.DEFAULT_TOOLS`),
    plus any upstream tools selected with ``expose`` (patterns ``namespace:name``, ``*``
    allowed), published as ``namespace__name``.

    When the upstream catalog changes, search results follow at once; when the change touches
    an exposed tool, clients are told with ``notifications/tools/list_changed`` (on the
    ``subscriptions/listen`` stream for 2026-07-28 clients).

    Args:
        toolbox: A connected toolbox; the server does not close it.
        expose: Patterns of upstream tools to publish directly as well (default: the
            config's ``toolcode.expose``).
        tools: Code-mode tools to list (default: the config's ``toolcode.tools``).
        name: Server name reported to clients.

    Raises:
        ConfigurationError: If ``tools`` names a tool this server does not have.
    """

    def __init__(
        self,
        toolbox: Toolbox,
        *,
        expose: Sequence[str] | None = None,
        tools: Sequence[str] | None = None,
        name: str = "toolcode",
    ) -> None:
        self.door = Door(toolbox, tools, expose)
        self.codemode = self.door.codemode
        self._bus = InMemorySubscriptionBus()
        # Weak: a handshake-era connection that ends must not be kept alive by us.
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._listed = self._exposed_ids()
        self.server: Server[Any] = Server(
            name,
            version=version("toolcode"),
            instructions=instructions(toolbox.codemode),
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
            on_read_resource=self._on_read_resource,
            on_list_resources=self._on_list_resources,
            on_subscriptions_listen=ListenHandler(self._bus),
        )
        self._unsubscribe = toolbox.index.subscribe(self._on_index_change)
        self._pending_notify = anyio.Event()

    @property
    def collisions(self) -> list[str]:
        """Exposed tools published under a name of their own, or left out, each with the reason."""
        return self.door.current.collisions

    def tool_definitions(self) -> list[dict[str, Any]]:
        """The tools this server lists right now, in MCP wire form."""
        return [_wire(d).model_dump(by_alias=True, mode="json", exclude_none=True) for d in self.door.definitions()]

    def tool_names(self) -> list[str]:
        """Names of every tool this server lists right now."""
        return [d.name for d in self.door.definitions()]

    def _exposed_ids(self) -> dict[str, str]:
        return {key: tool.id for key, tool in self.door.exposed().items()}

    def _on_index_change(self, event: ChangeEvent) -> None:
        if not self.door.patterns:
            return
        before, self._listed = self._listed, self._exposed_ids()
        touched = set(event.tool_ids) & {*before.values(), *self._listed.values()}
        if touched or before != self._listed:
            log.info("server.exposed_changed", version=event.version, tools=sorted(touched)[:20])
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
                    log.debug("server.connection_dropped", error=repr(exc))
                    self._connections.discard(connection)

    def close(self) -> None:
        """Stop following index changes."""
        self._unsubscribe()

    def _remember(self, ctx: ServerRequestContext[Any]) -> None:
        # Handshake-era clients get list_changed on their connection's standalone channel.
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._connections.add(connection_of(ctx))

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._remember(ctx)
        # The same list for every client: one that can ask its user still needs resume_execution
        # for a run left paused when the user dismissed the question (the reply names it).
        return types.ListToolsResult(tools=[_wire(d) for d in self.door.definitions()])

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        self._remember(ctx)
        name, args, caller = params.name, params.arguments or {}, _caller_of(ctx)
        ask = asker(ctx, caller, self.codemode.services.settings.policy.ask_timeout)
        if name not in ("execute_code", "run_chain") or name not in self.door.names:
            reply = await self.door.call(name, args, caller=caller, ask=ask)
            exposed = None if name in self.door.names else self.door.current.tools.get(name)
            return _result(reply, output_schema=exposed is not None and exposed.output_schema is not None)
        if name == "execute_code" and params.request_state is not None:
            out = await continue_by_retry(self.codemode, ctx, params, caller)
            return out if isinstance(out, types.InputRequiredResult) else _result(reply_of(out))
        # These two report progress, and execute_code asks a person within the request when the client can.
        async with Progress.of(ctx) as progress:
            reply = await self.door.call(name, args, caller=caller, ask=ask, **progress.hooks)
            out = reply.result
            if not isinstance(out, ExecuteOutcome) or out.approval is None:  # refused before it ran, or done
                return _result(reply)
            code = args.get("code")
            code = code if isinstance(code, str) else ""
            if can_ask_by_retry(ctx):
                return input_required(out, code)
            return _result(reply_of(await decide_now(self.codemode, ctx, out, code, caller, progress.tool_finished)))

    async def _on_list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """Stored results are reached by the links in the results that made them; none is listed."""
        return types.ListResourcesResult(resources=[])

    async def _on_read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """``toolcode://results/<ref>[?offset=N&limit=M]``: a page of a stored result (next page's URI in ``_meta``)."""
        parsed = result_ref_of_uri(str(params.uri))
        if parsed is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown resource {clip(str(params.uri))!r}")
        ref, offset, limit = parsed
        try:
            page = await self.codemode.read_result(ref, offset, limit, caller=_caller_of(ctx))
        except ToolCodeError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        meta: dict[str, Any] = {"total_chars": page.total_chars, "offset": page.offset}
        if page.next_offset is not None:
            meta["next"] = f"{RESULT_URI_PREFIX}{ref}?offset={page.next_offset}"
        contents = types.TextResourceContents(uri=str(params.uri), mime_type=page.media, text=page.text, _meta=meta)
        return types.ReadResourceResult(contents=[contents])
