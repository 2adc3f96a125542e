"""The code-mode MCP server: the core's operations as MCP tools, in front of a :class:`~toolcode.Toolbox`.

A thin adapter: each tool parses its arguments, calls the core operation of the same name
(:class:`toolcode.CodeMode`) and returns the operation's result model as ``structuredContent``,
with a compact text rendering for the model. A failure is ``isError`` with
``structuredContent = {"ok": false, "error": {"code", "message", "line", "column", "tool_id",
"hint"}}`` in every tool.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, TypeAdapter

from toolcode._app import Toolbox
from toolcode._core import CodeMode
from toolcode._descriptions import DESCRIPTIONS
from toolcode._metatools import (
    EXPOSED_SEPARATOR,
    PERSON_TOOLS,
    MetaToolReply,
    call_metatool,
    compact_schema,
    exposed_description,
    exposed_tools,
    failure_reply,
    input_schema,
    instructions,
)
from toolcode._outcome import outcome_text
from toolcode._paused import DECISIONS
from toolcode._results import RESULT_URI_PREFIX, result_ref_of_uri
from toolcode._types import ToolCallRecord
from toolcode.calls import Asker, PendingCall
from toolcode.exceptions import InvalidArgumentsError, ToolCodeError, clip
from toolcode.models import ExecuteOutcome, StoredResultInfo
from tooldocs import json_text
from toolindex import ChangeEvent, Tool
from toolindex.log import get_logger

__all__ = ["EXPOSED_SEPARATOR", "CodeModeServer", "compact_schema"]

log = get_logger("toolcode.server")

_Handler = Callable[
    [ServerRequestContext[Any], dict[str, Any]], Awaitable[types.CallToolResult | types.InputRequiredResult]
]
_CONTENT_BLOCK: TypeAdapter[types.ContentBlock] = TypeAdapter(types.ContentBlock)
_ASKED_INLINE = frozenset({"resume_execution"})
"""Not listed to clients that declare elicitation: their user decides within the request."""
_MAX_ASKS_PER_REQUEST = 100
"""Decisions asked for within one execute_code request, at most (then the run stays paused)."""


def _caller_of(ctx: ServerRequestContext[Any]) -> str:
    """Who a request is from: the HTTP door's authenticated caller, else the MCP session, else the process."""
    from toolcode.server._http_guard import http_caller

    who = http_caller(ctx)
    if who is not None:
        return f"token:{who}"
    # A 2025-11-25 HTTP session has an id (``Mcp-Session-Id``); stdio and stateless HTTP do not.
    connection: Any = getattr(ctx.session, "_connection", None)
    session_id = getattr(connection, "session_id", None)
    return f"session:{session_id}" if isinstance(session_id, str) and session_id else "local"


def _failure(exc: BaseException, codemode: CodeMode, extra: Mapping[str, Any] | None = None) -> types.CallToolResult:
    reply = failure_reply(exc, codemode)
    data: dict[str, Any] = {**reply.structured(), **(extra or {})}
    return types.CallToolResult(content=[types.TextContent(text=reply.text)], structured_content=data, is_error=True)


def _result(model: BaseModel, text: str, *, is_error: bool = False) -> types.CallToolResult:
    data = model.model_dump(mode="json")
    content: list[types.ContentBlock] = [types.TextContent(text=text)]
    stored: Any = getattr(model, "stored", None)
    items: list[Any] = cast("list[Any]", stored) if isinstance(stored, list) else [stored]
    kept = [st for st in items if isinstance(st, StoredResultInfo)]
    # What did not fit is a resource: resources/read returns it (a page at a time).
    content.extend(types.ResourceLink(uri=st.uri, name=st.what) for st in kept)  # the cut's marker gives its size
    return types.CallToolResult(content=content, structured_content=data, is_error=is_error)


def _reply(reply: MetaToolReply) -> types.CallToolResult:
    if reply.result is None:  # failed before the operation had a result: the error shape
        content: list[types.ContentBlock] = [types.TextContent(text=reply.text)]
        return types.CallToolResult(content=content, structured_content=reply.structured(), is_error=True)
    return _result(reply.result, reply.text, is_error=reply.is_error)


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
        from importlib.metadata import version

        self._toolbox = toolbox
        settings = toolbox.settings
        if tools is not None:
            settings = settings.model_copy(update={"tools": tuple(tools)})
        self._tool_names = settings.meta_tools()
        self._expose = tuple(expose) if expose is not None else settings.expose
        # Callers of the MCP door may not ask for more than the operator's ceilings.
        self.codemode = toolbox.codemode.with_ceilings(settings.max_limits)
        self._bus = InMemorySubscriptionBus()
        # Weak: a handshake-era connection that ends must not be kept alive by us.
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        # Every tool is the call every door shares (toolcode._metatools); these two also report
        # progress, and execute_code asks a person within the request when the client can.
        special: dict[str, _Handler] = {"run_chain": self._run_chain, "execute_code": self._execute_code}
        self._handlers = {n: special.get(n) or self._shared(n) for n in self._tool_names}
        self._meta_tools = [
            types.Tool(
                name=n,
                description=DESCRIPTIONS[n],
                input_schema=input_schema(n),
                # Clients that ask their user before a tool call should ask before these: a
                # decision on a paused run, or an approval of tool definitions, is the person's.
                annotations=types.ToolAnnotations(destructive_hint=True) if n in PERSON_TOOLS else None,
            )
            for n in self._tool_names
        ]
        self.collisions: list[str] = []
        """Exposed names that two upstream tools map to (the first by id is kept), found at start."""
        self._exposed: dict[str, Tool] = self._compute_exposed(report=True)
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

    # ----------------------------------------------------------------- catalog of our own tools

    def _compute_exposed(self, *, report: bool = False) -> dict[str, Tool]:
        exposed = exposed_tools(self.codemode, self._expose, reserved=self._handlers)
        if report:
            self.collisions = exposed.collisions
            for c in exposed.collisions:
                log.warning("server.expose_collision", detail=c)
        return exposed.tools

    def tool_definitions(self) -> list[dict[str, Any]]:
        """The tools this server lists right now, in MCP wire form."""
        listed = [*self._meta_tools, *self._exposed_defs()]
        return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed]

    def _exposed_defs(self) -> list[types.Tool]:
        return [
            types.Tool(
                name=key,
                title=tool.title,
                description=exposed_description(tool),
                input_schema=tool.input_schema,
                output_schema=tool.output_schema,
            )
            for key, tool in self._exposed.items()  # in name order
        ]

    def tool_names(self) -> list[str]:
        """Names of every tool this server lists right now."""
        return [*self._tool_names, *self._exposed]

    def _on_index_change(self, event: ChangeEvent) -> None:
        if not self._expose:
            return
        before = {k: t.id for k, t in self._exposed.items()}
        self._exposed = self._compute_exposed()
        touched = set(event.tool_ids) & ({t.id for t in self._exposed.values()} | set(before.values()))
        if touched or before != {k: t.id for k, t in self._exposed.items()}:
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
        meta = self._meta_tools
        caps = ctx.session.client_capabilities
        if caps is not None and caps.elicitation is not None:
            # This client's user is asked within execute_code: it does not need the tool (it is
            # still callable, for a run left paused when the user dismissed the question).
            meta = [t for t in meta if t.name not in _ASKED_INLINE]
        return types.ListToolsResult(tools=[*meta, *self._exposed_defs()])

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        self._remember(ctx)
        args = dict(params.arguments or {})
        handler = self._handlers.get(params.name)
        try:
            if params.request_state is not None and params.name == "execute_code" and handler is not None:
                return await self._continue_by_retry(ctx, params)
            if handler is None:
                exposed = self._exposed.get(params.name)
                if exposed is None:
                    names = ", ".join(self.tool_names()[:30])
                    raise InvalidArgumentsError("name", f"unknown tool {clip(params.name)!r}; this server has: {names}")
                return await self._run_exposed(ctx, exposed, args)
            return await handler(ctx, args)
        except ToolCodeError as exc:
            return _failure(exc, self.codemode)

    # ----------------------------------------------------------------- the core's operations

    async def _call(self, ctx: ServerRequestContext[Any], name: str, a: dict[str, Any], **hooks: Any) -> MetaToolReply:
        return await call_metatool(self.codemode, name, a, caller=_caller_of(ctx), ask=self._asker(ctx), **hooks)

    def _shared(self, name: str) -> _Handler:
        async def handle(ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
            return _reply(await self._call(ctx, name, a))

        return handle

    async def _run_chain(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        async with _Progress.of(ctx) as progress:
            reply = await self._call(ctx, "run_chain", a, on_step=progress.step if progress.enabled else None)
        return _reply(reply)

    async def _execute_code(
        self, ctx: ServerRequestContext[Any], a: dict[str, Any]
    ) -> types.CallToolResult | types.InputRequiredResult:
        async with _Progress.of(ctx) as progress:
            return await self._execute_with(ctx, a, progress)

    async def _execute_with(
        self, ctx: ServerRequestContext[Any], a: dict[str, Any], progress: _Progress
    ) -> types.CallToolResult | types.InputRequiredResult:
        on_tool_call = progress.tool_finished if progress.enabled else None
        reply = await self._call(
            ctx,
            "execute_code",
            a,
            on_tool_call=on_tool_call,
            on_tool_start=progress.tool_started if progress.enabled else None,
            on_print=progress.printed if progress.enabled else None,
        )
        out = reply.result
        if not isinstance(out, ExecuteOutcome):  # refused before it ran (an unknown argument)
            return _reply(reply)
        code: Any = a.get("code")
        if out.approval is not None and self._can_ask_by_retry(ctx):
            return self._input_required(out, code if isinstance(code, str) else "")
        out = await self._decide_now(ctx, out, code if isinstance(code, str) else "", on_tool_call)
        return _result(out, outcome_text(out), is_error=out.status == "error")

    def _asker(self, ctx: ServerRequestContext[Any]) -> Asker | None:
        """Asks the client's user (MCP elicitation) when the client declared it can; else ``None``."""
        caps = ctx.session.client_capabilities
        if caps is None or caps.elicitation is None or not ctx.session.can_send_request:
            return None

        async def ask(pending: Sequence[PendingCall], line: int | None, code: str = "") -> tuple[str, str]:
            return await self._elicit(ctx, pending, line, code)

        return ask

    @staticmethod
    def _form(pending: Sequence[PendingCall], line: int | None, code: str) -> tuple[str, dict[str, Any]]:
        """The question a person answers about paused calls: message and form schema."""
        shown = "\n".join(
            f"- {p.tool_id} ({p.tier}): {clip(json_text(p.args), 600)}\n  why asked: {clip(p.reason, 200)}"
            for p in pending[:10]
        )
        where = ""
        lines = code.splitlines()
        if line is not None and 0 < line <= len(lines):
            where = f"\nat line {line}: {clip(lines[line - 1].strip(), 300)}"
        message = (
            f"A program run by the assistant wants to make {len(pending)} call(s) that need your decision:\n"
            f"{shown}{where}"
        )
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Decision",
                    "enum": list(DECISIONS),
                    "enumNames": [
                        "Approve this call",
                        "Approve these tools for this run",
                        "Deny this call",
                        "Stop the run",
                    ],
                }
            },
            "required": ["decision"],
        }
        return message, schema

    @staticmethod
    def _decision_of(result: types.ElicitResult) -> str:
        """A person's answer as a decision; ``cancel`` leaves the run paused."""
        if result.action == "decline":
            return "deny"
        if result.action != "accept" or not result.content:
            return "cancel"
        decision = result.content.get("decision")
        return decision if isinstance(decision, str) and decision in DECISIONS else "cancel"

    async def _elicit(
        self, ctx: ServerRequestContext[Any], pending: Sequence[PendingCall], line: int | None, code: str
    ) -> tuple[str, str]:
        message, schema = self._form(pending, line, code)
        try:
            result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        except Exception as e:  # the client failed to ask: the run stays paused, to resume later
            log.warning("server.elicitation_failed", error=repr(e)[:300])
            return "cancel", "nobody"
        return self._decision_of(result), "person (elicitation)"

    @staticmethod
    def _can_ask_by_retry(ctx: ServerRequestContext[Any]) -> bool:
        """2026-07-28: the client asks its user when the result says input is required, then retries."""
        caps = ctx.session.client_capabilities
        return caps is not None and caps.elicitation is not None and not ctx.session.can_send_request

    def _input_required(self, out: ExecuteOutcome, code: str) -> types.InputRequiredResult:
        approval = out.approval
        assert approval is not None
        pending = [PendingCall.from_dict(p.model_dump()) for p in approval.pending]
        message, schema = self._form(pending, approval.line, code)
        request = types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))
        return types.InputRequiredResult(input_requests={"decision": request}, request_state=approval.execution_id)

    async def _continue_by_retry(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """The retry of an execute_code that asked for a decision: continue the paused run with it."""
        code = str((params.arguments or {}).get("code") or "")
        execution_id = params.request_state
        answer = (params.input_responses or {}).get("decision")
        decision = self._decision_of(answer) if isinstance(answer, types.ElicitResult) else "cancel"
        caller = _caller_of(ctx)
        if decision == "cancel":  # dismissed: the run stays paused, as the 2025-11-25 era answers
            out = await self.codemode.paused_outcome(execution_id, caller)
            return _result(out, outcome_text(out), is_error=out.status == "error")
        out = await self.codemode.resume(execution_id, decision, caller=caller, by="person (elicitation)")
        if out.approval is not None:
            return self._input_required(out, code)
        return _result(out, outcome_text(out), is_error=out.status == "error")

    async def _decide_now(
        self, ctx: ServerRequestContext[Any], out: ExecuteOutcome, code: str, on_tool_call: Any
    ) -> ExecuteOutcome:
        """While the run waits and the client can ask its user, ask within this request and continue."""
        if out.approval is None or self._asker(ctx) is None:
            return out
        caller = _caller_of(ctx)
        for _ in range(_MAX_ASKS_PER_REQUEST):
            approval = out.approval
            if approval is None:
                break
            pending = [PendingCall.from_dict(p.model_dump()) for p in approval.pending]
            decision, who = await self._elicit(ctx, pending, approval.line, code)
            if decision == "cancel":
                break  # left paused: resume_execution continues it later
            out = await self.codemode.resume(
                approval.execution_id, decision, caller=caller, on_tool_call=on_tool_call, by=who
            )
        return out

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

    async def _run_exposed(
        self, ctx: ServerRequestContext[Any], tool: Tool, args: dict[str, Any]
    ) -> types.CallToolResult:
        try:
            result = await self.codemode.run_result(tool.id, args, ask=self._asker(ctx), caller=_caller_of(ctx))
        except ToolCodeError as exc:
            return _failure(exc, self.codemode)
        blocks = [types.TextContent(text=json_text(result.structured))] if not result.content else []
        content: list[types.ContentBlock] = [
            *(_CONTENT_BLOCK.validate_python(dict(b)) for b in result.content),
            *blocks,
        ]
        raw: Any = result.structured
        structured = cast(dict[str, Any], raw) if isinstance(raw, dict) else None
        return types.CallToolResult(content=content, structured_content=structured)


_PRINT_EVERY_S = 0.25
_PRINT_LINES_PER_FLUSH = 5
_PRINT_PENDING_MAX = 50
_PRINT_LINE_CHARS = 200


class _Progress:
    """Progress notifications of one request (sent only when the client asked for progress).

    Each tool call (or chain step) is reported when it starts and when it ends (tool id, ok or
    the error code, duration; never arguments or results), and what the snippet prints, a few
    lines every quarter second, each line capped. Nothing is sent once the request has ended.
    """

    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        # Reporting is a no-op for a request that asked for no progress (the session knows: over
        # JSON-RPC by its progress token, in process by its callback).
        self.enabled = True
        self._session = ctx.session
        self._n = 0
        self._closed = False
        self._lines: list[str] = []
        self._partial: str = ""
        self._dropped = 0
        self._lock = anyio.Lock()

    @classmethod
    @asynccontextmanager
    async def of(cls, ctx: ServerRequestContext[Any]) -> AsyncGenerator[_Progress]:
        progress = cls(ctx)
        failure: BaseException | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(progress._flush_every)
            try:
                yield progress
                await progress._flush(everything=True)
            except BaseException as e:  # re-raised below, outside the task group: not wrapped in a group
                failure = e
            finally:
                progress._closed = True
                tg.cancel_scope.cancel()
        if failure is not None:
            raise failure

    async def _send(self, message: str) -> None:
        async with self._lock:
            if self._closed:
                return
            self._n += 1
            try:
                await self._session.report_progress(self._n, None, clip(message, 300))
            except Exception as e:  # a client that went away: progress is best effort
                log.debug("server.progress_failed", error=repr(e)[:200])

    async def tool_started(self, tool_id: str) -> None:
        await self._send(f"{tool_id} started")

    async def tool_finished(self, record: ToolCallRecord) -> None:
        status = "ok" if record.error is None else f"failed ({record.code or 'tool_error'})"
        await self._send(f"{record.tool_id} {status} ({record.duration_ms:.0f} ms)")

    async def step(self, event: dict[str, Any]) -> None:
        name = f"step {event['step']}" + (f" ({event['id']})" if event.get("id") else "")
        status = event["status"]
        if status == "started":
            await self._send(f"{name} {event['tool_id']} started")
        else:
            shown = "ok" if status == "ok" else f"failed ({event.get('code', 'tool_error')})"
            await self._send(f"{name} {event['tool_id']} {shown} ({event.get('duration_ms', 0):.0f} ms)")

    def printed(self, stream: str, text: str) -> None:
        """Keep whole lines of output to send (bounded: beyond the cap, lines are only counted)."""
        parts: list[str] = (self._partial + text).split("\n")
        whole, rest = parts[:-1], parts[-1]
        self._partial = rest[-_PRINT_LINE_CHARS:]
        for line in whole:
            if len(self._lines) < _PRINT_PENDING_MAX:
                self._lines.append(f"{stream}: {line[:_PRINT_LINE_CHARS]}")
            else:
                self._dropped += 1

    async def _flush(self, *, everything: bool = False) -> None:
        if self._partial and everything:
            self._lines.append(f"stdout: {self._partial}")
            self._partial = ""
        take = len(self._lines) if everything else _PRINT_LINES_PER_FLUSH
        lines, self._lines = self._lines[:take], self._lines[take:]
        if everything and self._lines:
            self._dropped += len(self._lines)
            self._lines = []
        for line in lines:
            await self._send(line)
        if self._dropped and (everything or not self._lines):
            dropped, self._dropped = self._dropped, 0
            await self._send(f"... {dropped} more lines of output")

    async def _flush_every(self) -> None:
        while True:
            await anyio.sleep(_PRINT_EVERY_S)
            await self._flush()
