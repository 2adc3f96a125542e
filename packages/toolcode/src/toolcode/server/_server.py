"""The code-mode MCP server: the core's operations as MCP tools, in front of a :class:`~toolcode.Toolbox`.

A thin adapter: each tool parses its arguments, calls the core operation of the same name
(:class:`toolcode.CodeMode`) and returns the operation's result model as ``structuredContent``,
with a compact text rendering for the model. A failure is ``isError`` with
``structuredContent = {"ok": false, "error": {"code", "message", "line", "column", "tool_id",
"hint"}}`` in every tool.
"""

from __future__ import annotations

import fnmatch
import json
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import mcp_types as types
import structlog
from mcp.server import Server, ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, TypeAdapter

from toolcode._app import Toolbox
from toolcode._core import CodeMode, outcome_text
from toolcode._errors import error_info
from toolcode._models import (
    ChainOutcome,
    DocsResult,
    ExecuteOutcome,
    NamespacesResult,
    RunToolOutcome,
    SearchResult,
    StoredResultInfo,
    ToolListResult,
)
from toolcode._paused import DECISIONS
from toolcode._policy import Asker, PendingCall
from toolcode._results import RESULT_URI_PREFIX, result_ref_of_uri
from toolcode._types import ToolCallRecord
from toolcode.exceptions import InvalidArgumentsError, ToolCodeError, clip
from toolcode.server._descriptions import DESCRIPTIONS, INSTRUCTIONS, UNSANDBOXED_NOTE
from toolcode.server._models import INPUT_MODELS, DeleteOutcome, ResetOutcome
from toolindex import ChangeEvent, Tool

__all__ = ["EXPOSED_SEPARATOR", "CodeModeServer", "compact_schema"]

log = structlog.get_logger("toolcode.server")

EXPOSED_SEPARATOR = "__"
"""Joins namespace and name of a directly exposed upstream tool (``github__list_issues``);
``:`` is not allowed in MCP tool names and some clients reject ``.``."""

_Handler = Callable[
    [ServerRequestContext[Any], dict[str, Any]], Awaitable[types.CallToolResult | types.InputRequiredResult]
]
_CONTENT_BLOCK: TypeAdapter[types.ContentBlock] = TypeAdapter(types.ContentBlock)
_MCP_NAME_MAX = 128
_PERSON_TOOLS = frozenset({"resume_execution", "approve_tools"})
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


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _failure(exc: BaseException, codemode: CodeMode, extra: Mapping[str, Any] | None = None) -> types.CallToolResult:
    info = error_info(exc, codemode.view())
    text = f"error [{info.code}]: {info.message}" + (f"\nhint: {info.hint}" if info.hint else "")
    data: dict[str, Any] = {"ok": False, "error": info.model_dump(mode="json"), **(extra or {})}
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data, is_error=True)


def _result(model: BaseModel, text: str, *, is_error: bool = False) -> types.CallToolResult:
    data = model.model_dump(mode="json")
    content: list[types.ContentBlock] = [types.TextContent(text=text)]
    stored: Any = getattr(model, "stored", None)
    items: list[Any] = cast("list[Any]", stored) if isinstance(stored, list) else [stored]
    kept = [st for st in items if isinstance(st, StoredResultInfo)]
    # What did not fit is a resource: resources/read returns it (a page at a time).
    content.extend(types.ResourceLink(uri=st.uri, name=st.what) for st in kept)  # the cut's marker gives its size
    return types.CallToolResult(content=content, structured_content=data, is_error=is_error)


def compact_schema(schema: Any) -> Any:
    """A JSON Schema without the noise pydantic adds (titles, ``anyOf`` with null), same meaning.

    Every definition token is paid on every turn by every client, so the wire schemas are kept lean.
    """
    if isinstance(schema, list):
        return [compact_schema(s) for s in cast(list[Any], schema)]
    if not isinstance(schema, dict):
        return schema
    src = cast(dict[str, Any], schema)
    out: dict[str, Any] = {}
    for key, value in src.items():
        if key == "title":
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            props = cast(dict[str, Any], value)
            out[key] = {k: compact_schema(v) for k, v in props.items()}
        elif key == "additionalProperties" and value is True:
            continue
        else:
            out[key] = compact_schema(value)
    any_of = out.get("anyOf")
    null: dict[str, Any] = {"type": "null"}
    if isinstance(any_of, list):
        options = cast(list[Any], any_of)
        others = [o for o in options if o != null]
        simple = all(isinstance(o, dict) and set(cast(dict[str, Any], o)) <= {"type", "items"} for o in others)
        if len(others) < len(options) and simple:
            # "X or null" with a default of null: optional already says it.
            del out["anyOf"]
            types_ = [cast(dict[str, Any], o)["type"] for o in others if "type" in o]
            if len(others) == 1:
                out.update(cast(dict[str, Any], others[0]))
            elif types_:
                out["type"] = types_
    if out.get("default", ...) is None:
        del out["default"]
    return out


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace ``$ref``s to ``$defs`` by the definitions themselves (smaller and clearer on the wire)."""
    defs = cast(dict[str, Any], schema.pop("$defs", {}))

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in cast(list[Any], node)]
        if not isinstance(node, dict):
            return node
        d = cast(dict[str, Any], node)
        ref = d.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
            return walk(defs[ref[8:]])
        return {k: walk(v) for k, v in d.items()}

    return cast(dict[str, Any], walk(schema))


def _input_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = cast(dict[str, Any], compact_schema(_inline(model.model_json_schema())))
    # Unknown arguments are refused by the door itself (naming the argument): not worth tokens here.
    schema.pop("additionalProperties", None)
    return schema


class CodeModeServer:
    """An MCP server exposing code mode over a :class:`~toolcode.Toolbox`.

    Tools: the code-mode tools chosen by ``tools`` (default :data:`toolcode.DEFAULT_TOOLS`),
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
        handlers: dict[str, _Handler] = {
            "search_tools": self._search_tools,
            "list_tools": self._list_tools,
            "list_namespaces": self._list_namespaces,
            "describe_tool": self._describe_tool,
            "list_tool_examples": self._list_tool_examples,
            "run_tool": self._run_tool,
            "run_chain": self._run_chain,
            "execute_code": self._execute_code,
            "list_sessions": self._list_sessions,
            "reset_session": self._reset_session,
            "save_snippet": self._save_snippet,
            "list_snippets": self._list_snippets,
            "delete_snippet": self._delete_snippet,
            "resume_execution": self._resume_execution,
            "list_paused": self._list_paused,
            "approve_tools": self._approve_tools,
            "read_result": self._read_result,
        }
        self._handlers = {n: handlers[n] for n in self._tool_names}
        self._meta_tools = [
            types.Tool(
                name=n,
                description=DESCRIPTIONS[n],
                input_schema=_input_schema(INPUT_MODELS[n]),
                # Clients that ask their user before a tool call should ask before these: a
                # decision on a paused run, or an approval of tool definitions, is the person's.
                annotations=types.ToolAnnotations(destructive_hint=True) if n in _PERSON_TOOLS else None,
            )
            for n in self._tool_names
        ]
        self.collisions: list[str] = []
        """Exposed names that two upstream tools map to (the first by id is kept), found at start."""
        self._exposed: dict[str, Tool] = self._compute_exposed(report=True)
        instructions = INSTRUCTIONS
        if not toolbox.executor.engine.info.sandboxed:
            instructions += UNSANDBOXED_NOTE
        self.server: Server[Any] = Server(
            name,
            version=version("toolcode"),
            instructions=instructions,
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
        if not self._expose:
            return {}
        out: dict[str, Tool] = {}
        collisions: list[str] = []
        view = self.codemode.view()
        cursor: str | None = None
        while True:
            page = view.list_tools(cursor=cursor, limit=1000, namespace=None)
            for tool in page.tools:
                if not any(fnmatch.fnmatchcase(tool.key, p) or fnmatch.fnmatchcase(tool.id, p) for p in self._expose):
                    continue
                key = f"{tool.namespace}{EXPOSED_SEPARATOR}{tool.name}"
                if len(key) > _MCP_NAME_MAX or not all(c.isalnum() or c in "_.-" for c in key):
                    collisions.append(f"{tool.id}: {key!r} is not a valid MCP tool name; not exposed")
                elif key in out or key in self._handlers:
                    kept = out[key].id if key in out else "a code-mode tool"
                    collisions.append(f"{tool.id} and {kept} are both exposed as {key!r}; {kept} is kept")
                else:
                    out[key] = tool
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        if report:
            self.collisions = collisions
            for c in collisions:
                log.warning("server.expose_collision", detail=c)
        return out

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
        return list(self._tool_names) + sorted(self._exposed)

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
            unknown = sorted(set(args) - set(INPUT_MODELS[params.name].model_fields))
            if unknown:
                raise InvalidArgumentsError(clip(unknown[0], 60), f"{params.name} has no such argument")
            return await handler(ctx, args)
        except ToolCodeError as exc:
            return _failure(exc, self.codemode)

    # ----------------------------------------------------------------- the core's operations

    async def _search_tools(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        out: SearchResult = await self.codemode.search_tools(
            a.get("query"), a.get("limit", 10), a.get("detail", "summary")
        )
        lines = [f"{h.id} — {h.summary}" if h.summary else h.id for h in out.hits]
        if any(h.signature for h in out.hits):
            lines = [h.signature or h.id for h in out.hits]
        return _result(out, "\n\n".join(lines) if lines else (out.hint or ""))

    async def _list_tools(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        out: ToolListResult = await self.codemode.list_tools(a.get("namespace"), a.get("cursor"), a.get("limit", 100))
        text = "\n".join(f"{t.id} — {t.summary}" for t in out.tools)
        if out.next_cursor:
            text += f"\nnext_cursor: {out.next_cursor}"
        return _result(out, text)

    async def _list_namespaces(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        out: NamespacesResult = await self.codemode.list_namespaces()
        return _result(out, "\n".join(f"{n.name} ({n.tool_count} tools)" for n in out.namespaces))

    async def _describe_tool(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        out: DocsResult = await self.codemode.describe_tool(a.get("tool_id"), a.get("level", "schema"))
        text = out.text
        for e in out.errors:
            text += f"\nerror [{e.code}] {e.tool_id}: {e.message}" + (f" ({e.hint})" if e.hint else "")
        return _result(out, text.strip())

    async def _list_tool_examples(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        out = await self.codemode.list_tool_examples(a.get("tool_id"), a.get("max", 3))
        return _result(out, _dumps(out.model_dump(mode="json")))

    async def _run_tool(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        out: RunToolOutcome = await self.codemode.run_tool(
            a.get("tool_id"), a.get("args"), timeout=a.get("timeout"), ask=self._asker(ctx), caller=_caller_of(ctx)
        )
        return _result(out, _dumps(out.value))

    async def _run_chain(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        async with _Progress.of(ctx) as progress:
            out: ChainOutcome = await self.codemode.run_chain(
                a.get("steps"),
                ask=self._asker(ctx),
                caller=_caller_of(ctx),
                on_step=progress.step if progress.enabled else None,
            )
        text = _dumps(out.model_dump(mode="json"))
        if out.aborted:
            failed = next(s for s in reversed(out.steps) if not s.ok)
            err = failed.error
            why = f"[{err.code}] {err.message}" if err is not None else "failed"
            text = f"chain aborted at step {failed.index} ({failed.tool_id}): {why}\n{text}"
        return _result(out, text, is_error=out.aborted)

    async def _execute_code(
        self, ctx: ServerRequestContext[Any], a: dict[str, Any]
    ) -> types.CallToolResult | types.InputRequiredResult:
        options: Any = a.get("options")
        async with _Progress.of(ctx) as progress:
            return await self._execute_with(ctx, a, options, progress)

    async def _execute_with(
        self, ctx: ServerRequestContext[Any], a: dict[str, Any], options: Any, progress: _Progress
    ) -> types.CallToolResult | types.InputRequiredResult:
        on_tool_call = progress.tool_finished if progress.enabled else None
        caller = _caller_of(ctx)
        code = a.get("code")
        out: ExecuteOutcome = await self.codemode.execute(
            code,
            input=a.get("input"),
            options=options,
            on_tool_call=on_tool_call,
            caller=caller,
            session=a.get("session"),
            on_tool_start=progress.tool_started if progress.enabled else None,
            on_print=progress.printed if progress.enabled else None,
        )
        if out.approval is not None and self._can_ask_by_retry(ctx):
            return self._input_required(out, code if isinstance(code, str) else "")
        out = await self._decide_now(ctx, out, code if isinstance(code, str) else "", on_tool_call)
        return _result(out, outcome_text(out), is_error=out.status == "error")

    # ----------------------------------------------------------------- approvals

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
            f"- {p.tool_id} ({p.tier}): {clip(_dumps(p.args), 600)}\n  why asked: {clip(p.reason, 200)}"
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
        if decision == "cancel":
            paused = await self.codemode.list_paused(caller)
            text = f"the run stays paused: resume_execution(execution_id={execution_id!r}, decision=...) continues it"
            return _result(paused, text)
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

    async def _read_result(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        out = await self.codemode.read_result(a.get("ref"), a.get("offset", 0), a.get("limit"), caller=_caller_of(ctx))
        more = f"\n[next_offset: {out.next_offset}]" if out.next_offset is not None else ""
        return _result(out, out.text + more)

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

    async def _resume_execution(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        out = await self.codemode.resume(a.get("execution_id"), a.get("decision"), caller=_caller_of(ctx))
        return _result(out, outcome_text(out), is_error=out.status == "error")

    async def _list_paused(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        out = await self.codemode.list_paused(_caller_of(ctx))
        lines = [
            f"{r.execution_id}: " + ", ".join(p.tool_id for p in r.pending) + (f" at line {r.line}" if r.line else "")
            for r in out.paused
        ] or ["no paused runs"]
        return _result(out, "\n".join(lines))

    async def _approve_tools(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        out = await self.codemode.approve_tools(a.get("tools"), by=f"operator:{_caller_of(ctx)}")
        return _result(out, "approved: " + (", ".join(out.approved) or "nothing (no tool matched)"))

    async def _list_sessions(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        out = await self.codemode.list_sessions(_caller_of(ctx))
        return _result(out, _dumps(out.model_dump(mode="json")["sessions"]))

    async def _reset_session(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        name = a.get("session")
        gone = await self.codemode.reset_session(name, _caller_of(ctx))
        out = ResetOutcome(session=str(name), reset=gone)
        return _result(out, f"session {name!r} " + ("reset" if gone else "had no state"))

    async def _save_snippet(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        out = await self.codemode.save_snippet(
            a.get("name"), a.get("code"), a.get("description"), a.get("input_schema")
        )
        return _result(out, f"saved as {out.tool_id}")

    async def _list_snippets(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        out = await self.codemode.list_snippets()
        lines = [f"{e.tool_id} — {e.description}" for e in out.snippets] or ["no saved snippets"]
        return _result(out, "\n".join(lines))

    async def _delete_snippet(self, ctx: ServerRequestContext[Any], a: dict[str, Any]) -> types.CallToolResult:
        name = a.get("name")
        gone = await self.codemode.delete_snippet(name)
        out = DeleteOutcome(name=str(name), deleted=gone)
        return _result(out, f"snippets:{name} " + ("deleted" if gone else "did not exist"))

    async def _run_exposed(
        self, ctx: ServerRequestContext[Any], tool: Tool, args: dict[str, Any]
    ) -> types.CallToolResult:
        try:
            result = await self.codemode.run_result(tool.id, args, ask=self._asker(ctx), caller=_caller_of(ctx))
        except ToolCodeError as exc:
            return _failure(exc, self.codemode)
        blocks = [types.TextContent(text=_dumps(result.structured))] if not result.content else []
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
