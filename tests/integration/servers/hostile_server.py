"""An MCP server that attacks its client, built on the ``mcp`` SDK's low-level ``Server``.

Run it over stdio (``python hostile_server.py``) or streamable HTTP on 127.0.0.1
(``python hostile_server.py --http --port 8765``, endpoint ``/mcp``). Everything a test needs
is chosen per call (tool arguments) or per process (flags), and the choices combine.

Well-formed tools (always listed):

- ``echo(text)``: returns ``{"text": text}`` as structured content;
- ``add(a, b)``: the sum as a single JSON text block;
- ``sleep(seconds)``: returns after ``seconds``;
- ``hang()``: never returns (until cancelled; cancellations are counted);
- ``stats()``: ``{"calls": n, "cancelled": m, "lists": k}`` since the process started;
- ``noise(lines, width)``: writes ``lines`` lines of ``width`` characters to stderr, then returns;
- ``churn(storm, tools, props)``: replaces the dynamic part of the catalog with ``tools``
  well-formed tools (``bulk_0``, ...) plus, when ``props`` > 0, one tool ``wide_dynamic`` with
  that many properties, then announces ``tools/list_changed`` ``storm`` times (at least once).

The attack tool ``reply(kind, faults, ...)`` answers at the wire level, bypassing the SDK (on
stdio the line is written as raw bytes; over HTTP it is the response body, or one SSE event per
message when there are several):

- ``faults``: messages written *before* the reply, in order: ``"garbage"`` (a line that is not
  JSON), ``"invalid_utf8"`` (a line of bytes that are not UTF-8), ``"unknown_id"`` (a response
  to a request id that was never sent), ``"not_rpc"`` (JSON that is not JSON-RPC),
  ``"big_note"`` (a ``notifications/message`` of about 1 MB, a log line no client needs);
- ``kind``: the reply itself (default ``"ok"``):

  - ``"ok"``: ``{"content": [{"type": "text", "text": "ok"}]}``;
  - ``"none"``: no reply at all (the call waits);
  - ``"error"``: a JSON-RPC error with ``code`` (default -32000, which the SDK also uses for
    "connection closed") and ``message``;
  - ``"tool_error"``: an ``isError`` result whose text is ``message``;
  - ``"truncated"``: the ok reply cut in half;
  - ``"invalid_utf8"``: a text block with bytes that are not UTF-8;
  - ``"surrogates"``: a text block with a lone surrogate escape (``\\ud800``);
  - ``"nan"``: ``NaN`` and ``-Infinity`` in the structured result (Python's ``json`` reads them; JSON has neither);
  - ``"deep"``: structured content nested ``levels`` deep (default 5000);
  - ``"huge"``: one text block of ``size`` bytes (default 8 MiB); with ``id_last`` the reply's
    ``id`` comes after its result, as the TypeScript SDK writes it;
  - ``"containers"``: structured content of ``count`` empty lists (default 1.3 million, about
    3.9 MB: far more containers than bytes would suggest); honours ``id_last``;
  - ``"records"``: structured content ``{"rows": [...]}`` of ``count`` ordinary records of
    five fields (about 100 bytes each);
  - ``"bad_shape"``: a result that is a string; ``"bad_content"``: ``content`` that is not a list;
  - ``"no_result"``: a reply with neither ``result`` nor ``error`` (``{"jsonrpc": "2.0", "id": N}``).

Over HTTP, ``gzip: true`` sends the reply gzip-compressed (``Content-Encoding: gzip``) whatever
the client's ``Accept-Encoding`` asked for.

Hostile schemas (``--schemas a,b,...`` or ``--schemas all``) add tools named ``schema_<kind>``
to the listing, between the well-formed ones: ``remote_ref`` (a ``$ref`` to ``--ref-url``),
``file_ref`` (a ``$ref`` to ``file:///etc/passwd``), ``dev_zero_ref`` (a ``$ref`` to
``file:///dev/zero``), ``redos`` (a ``pattern`` with catastrophic backtracking), ``deep``
(``--deep-levels`` nested object schemas, default 5000), ``wide`` (``--wide-props``
properties, default 30000), ``recursive_allof`` (``allOf`` of ``$ref`` s that double at each of
30 levels and loop back). Calling one answers ``{"called": name}`` without looking at arguments.
``tools/list`` is answered at the wire level too (``--page-size`` tools per page, default all).

Secrets: with ``--secret TOKEN`` (or ``HOSTILE_SECRET`` in the environment) the server prints
the token to stderr at start and on every call, as a careless server would.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.message import SessionMessage
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

SCHEMA_KINDS = ("remote_ref", "file_ref", "dev_zero_ref", "redos", "deep", "wide", "recursive_allof")
FAULTS = ("garbage", "invalid_utf8", "unknown_id", "not_rpc", "big_note")
BIG_NOTE_DATA = "note " * 200_000
"""The data of the ``big_note`` fault: about 1 MB."""
UNKNOWN_ID = 987654321

_OBJ = "object"


def _schema(props: dict[str, Any] | None = None, required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": _OBJ, "properties": props or {}}
    if required:
        out["required"] = required
    return out


def _tool(name: str, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": schema or _schema()}


WELL_FORMED: list[dict[str, Any]] = [
    _tool("echo", "Echo the text back as structured content.", _schema({"text": {"type": "string"}}, ["text"])),
    _tool("add", "Add two integers.", _schema({"a": {"type": "integer"}, "b": {"type": "integer"}}, ["a", "b"])),
    _tool("sleep", "Return after the given number of seconds.", _schema({"seconds": {"type": "number"}})),
    _tool("hang", "Never return."),
    _tool("stats", "Counters since the process started."),
    _tool(
        "noise",
        "Write lines to stderr.",
        _schema({"lines": {"type": "integer"}, "width": {"type": "integer"}}),
    ),
    _tool(
        "churn",
        "Replace the dynamic catalog and announce tools/list_changed.",
        _schema({"storm": {"type": "integer"}, "tools": {"type": "integer"}, "props": {"type": "integer"}}),
    ),
    _tool(
        "reply",
        "Answer at the wire level: faults first, then a reply of the given kind.",
        _schema(
            {
                "kind": {"type": "string"},
                "faults": {"type": "array", "items": {"type": "string"}},
                "code": {"type": "integer"},
                "message": {"type": "string"},
                "levels": {"type": "integer"},
                "size": {"type": "integer"},
                "id_last": {"type": "boolean"},
                "count": {"type": "integer"},
                "gzip": {"type": "boolean"},
            }
        ),
    ),
]
_WIRE_TOOLS = {"reply"}


def hostile_schema_json(kind: str, *, ref_url: str, deep_levels: int, wide_props: int) -> str:
    """The JSON text of a ``schema_<kind>`` tool (built as text: too deep for ``json.dumps``)."""
    name = f"schema_{kind}"
    if kind == "deep":
        level = '{"type":"object","properties":{"a":'
        schema = level * deep_levels + '{"type":"string"}' + "}}" * deep_levels
        return f'{{"name":"{name}","description":"Nested {deep_levels} levels.","inputSchema":{schema}}}'
    if kind == "remote_ref":
        schema = _schema({"x": {"$ref": ref_url}})
    elif kind == "file_ref":
        schema = _schema({"x": {"$ref": "file:///etc/passwd"}})
    elif kind == "dev_zero_ref":
        schema = _schema({"x": {"$ref": "file:///dev/zero"}})
    elif kind == "redos":
        schema = _schema({"text": {"type": "string", "pattern": "^(a+)+$"}})
    elif kind == "wide":
        schema = _schema({f"p{i}": {"type": "string"} for i in range(wide_props)})
    elif kind == "recursive_allof":
        n = 30
        defs: dict[str, Any] = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(n - 1)}
        defs[f"d{n - 1}"] = {"allOf": [{"$ref": "#/$defs/d0"}, {"type": "string"}]}
        schema = {**_schema({"x": {"$ref": "#/$defs/d0"}}), "$defs": defs}
    else:
        raise ValueError(f"unknown schema kind {kind!r}; expected one of {', '.join(SCHEMA_KINDS)}")
    return json.dumps(_tool(name, f"A hostile schema: {kind}.", schema))


def _line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _result(req_id: Any, result: Any) -> bytes:
    return _line({"jsonrpc": "2.0", "id": req_id, "result": result})


def _ok(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


def fault_message(fault: str) -> bytes:
    """One message sent before the reply (see the module docstring)."""
    if fault == "garbage":
        return b"this is not JSON at all"
    if fault == "invalid_utf8":
        return b"\xff\xfe\xfd not UTF-8 \xc3\x28"
    if fault == "unknown_id":
        return _result(UNKNOWN_ID, _ok("an answer to nothing"))
    if fault == "not_rpc":
        return _line({"hello": "world"})
    if fault == "big_note":
        params = {"level": "info", "logger": "hostile", "data": BIG_NOTE_DATA}
        return _line({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
    raise ValueError(f"unknown fault {fault!r}; expected one of {', '.join(FAULTS)}")


def reply_message(req_id: Any, args: dict[str, Any]) -> bytes | None:
    """The reply of a ``reply`` call, or ``None`` for ``kind="none"``."""
    kind = str(args.get("kind", "ok"))
    rid = json.dumps(req_id)
    if kind == "ok":
        return _result(req_id, _ok("ok"))
    if kind == "none":
        return None
    if kind == "error":
        error = {"code": int(args.get("code", -32000)), "message": str(args.get("message", "upstream failure"))}
        return _line({"jsonrpc": "2.0", "id": req_id, "error": error})
    if kind == "tool_error":
        return _result(req_id, {**_ok(str(args.get("message", "tool failure"))), "isError": True})
    if kind == "truncated":
        whole = _result(req_id, _ok("this reply is cut in half " * 4))
        return whole[: len(whole) // 2]
    if kind == "invalid_utf8":
        return b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"bad \xff\xfe bytes"}]}}' % (
            rid.encode()
        )
    if kind == "nan":
        return b'{"jsonrpc":"2.0","id":%s,"result":{"content":[],"structuredContent":{"v":NaN,"w":-Infinity}}}' % (
            rid.encode()
        )
    if kind == "surrogates":
        return b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"lone \\ud800 here"}]}}' % (
            rid.encode()
        )
    if kind == "deep":
        levels = int(args.get("levels", 5000))
        value = "[" * levels + "]" * levels
        return f'{{"jsonrpc":"2.0","id":{rid},"result":{{"content":[],"structuredContent":{{"v":{value}}}}}}}'.encode()
    if kind == "huge":
        result = _ok("x" * int(args.get("size", 8 * 1024 * 1024)))
        if args.get("id_last"):
            return _line({"jsonrpc": "2.0", "result": result, "id": req_id})
        return _result(req_id, result)
    if kind == "containers":
        value = "[" + ",".join(["[]"] * int(args.get("count", 1_300_000))) + "]"
        result = f'{{"content":[],"structuredContent":{{"v":{value}}}}}'
        if args.get("id_last"):
            return f'{{"jsonrpc":"2.0","result":{result},"id":{rid}}}'.encode()
        return f'{{"jsonrpc":"2.0","id":{rid},"result":{result}}}'.encode()
    if kind == "records":
        rows = [
            {"id": i, "name": f"user {i}", "email": f"user{i}@example.com", "active": i % 2 == 0, "score": i / 7}
            for i in range(int(args.get("count", 1000)))
        ]
        return _result(req_id, {"content": [], "structuredContent": {"rows": rows}})
    if kind == "bad_shape":
        return _result(req_id, "not an object")
    if kind == "bad_content":
        return _result(req_id, {"content": "not a list"})
    if kind == "no_result":
        return _line({"jsonrpc": "2.0", "id": req_id})
    raise ValueError(f"unknown reply kind {kind!r}")


class HostileServer:
    def __init__(self, *, schemas: list[str], ref_url: str, deep_levels: int, wide_props: int, page_size: int) -> None:
        self.page_size = page_size
        self.secret = os.environ.get("HOSTILE_SECRET", "")
        self.calls = 0
        self.cancelled = 0
        self.lists = 0
        self.dynamic: list[dict[str, Any]] = []
        # Hostile tools are kept as JSON text and spliced into the listing: some are too deep to dump.
        self.hostile = [
            (f"schema_{k}", hostile_schema_json(k, ref_url=ref_url, deep_levels=deep_levels, wide_props=wide_props))
            for k in schemas
        ]
        self.bus = InMemorySubscriptionBus()
        self.server: Server[Any] = Server(
            "hostile-server",
            version="1.0.0",
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_subscriptions_listen=ListenHandler(self.bus),
        )

    def say(self, what: str) -> None:
        if self.secret:
            print(f"hostile-server: {what} (token {self.secret})", file=sys.stderr, flush=True)

    # -- the wire-level part: tools/list, reply, schema_* --------------------------------------

    def listing(self) -> list[str]:
        """Every tool as JSON text, hostile ones between the well-formed ones."""
        plain = [json.dumps(t) for t in [*WELL_FORMED, *self.dynamic]]
        out = plain[:3]
        for _, text in self.hostile:
            out.append(text)
        return out + plain[3:]

    def intercept(self, message: Any) -> list[bytes] | None:
        """The raw messages answering ``message``, or ``None`` when the SDK should handle it."""
        if not isinstance(message, dict) or "id" not in message:
            return None
        request: dict[str, Any] = message  # pyright: ignore[reportUnknownVariableType]
        method, req_id = request.get("method"), request["id"]
        params: dict[str, Any] = request.get("params") or {}
        if method == "tools/list":
            self.lists += 1
            tools = self.listing()
            start = int(params.get("cursor") or 0)
            end = start + self.page_size if self.page_size else len(tools)
            page = ",".join(tools[start:end])
            cursor = f',"nextCursor":"{end}"' if end < len(tools) else ""
            return [f'{{"jsonrpc":"2.0","id":{json.dumps(req_id)},"result":{{"tools":[{page}]{cursor}}}}}'.encode()]
        if method != "tools/call":
            return None
        name = params.get("name")
        if name in _WIRE_TOOLS:
            self.calls += 1
            self.say(f"call {name}")
            args: dict[str, Any] = params.get("arguments") or {}
            out = [fault_message(str(f)) for f in args.get("faults", [])]
            reply = reply_message(req_id, args)
            return [*out, reply] if reply is not None else out
        if any(name == n for n, _ in self.hostile):
            self.calls += 1
            self.say(f"call {name}")
            return [_result(req_id, {"content": [], "structuredContent": {"called": name}})]
        return None

    # -- the SDK part ------------------------------------------------------------------------

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # Only reached by SDK-internal lookups: clients' tools/list requests are answered in intercept().
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in [*WELL_FORMED, *self.dynamic]])

    async def _announce(self, ctx: ServerRequestContext[Any]) -> None:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await self.bus.publish(ToolsListChanged())
        else:
            await ctx.session.send_tool_list_changed()

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        self.calls += 1
        args: dict[str, Any] = dict(params.arguments or {})
        name = params.name
        self.say(f"call {name}")

        def text(s: str) -> types.CallToolResult:
            return types.CallToolResult(content=[types.TextContent(type="text", text=s)])

        if name == "echo":
            return types.CallToolResult(content=[], structured_content={"text": args.get("text")})
        if name == "add":
            return text(json.dumps(int(args["a"]) + int(args["b"])))
        if name == "sleep":
            await anyio.sleep(float(args.get("seconds", 1)))
            return text("slept")
        if name == "hang":
            try:
                await anyio.sleep_forever()
            finally:
                self.cancelled += 1
        if name == "stats":
            counts = {"calls": self.calls, "cancelled": self.cancelled, "lists": self.lists}
            return types.CallToolResult(content=[], structured_content=counts)
        if name == "noise":
            width = int(args.get("width", 80))
            for i in range(int(args.get("lines", 100))):
                print(f"noise {i} " + "n" * width, file=sys.stderr)
            sys.stderr.flush()
            return text("noisy")
        if name == "churn":
            n, props = int(args.get("tools", 0)), int(args.get("props", 0))
            self.dynamic = [_tool(f"bulk_{i}", f"Bulk tool number {i} of {n}.") for i in range(n)]
            if props:
                wide = _schema({f"p{i}": {"type": "string"} for i in range(props)})
                self.dynamic.append(_tool("wide_dynamic", f"A tool with {props} properties.", wide))
            for _ in range(max(1, int(args.get("storm", 1)))):
                await self._announce(ctx)
            return text(f"catalog of {len(self.dynamic)} dynamic tools")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"unknown tool {name}")], is_error=True
        )


async def serve_stdio(hs: HostileServer) -> None:
    stdin = anyio.wrap_file(sys.stdin.buffer)
    stdout = anyio.wrap_file(sys.stdout.buffer)
    lock = anyio.Lock()

    async def emit(messages: list[bytes]) -> None:
        async with lock:
            for m in messages:
                await stdout.write(m + b"\n")
            await stdout.flush()

    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        async with read_send:
            async for line in stdin:
                try:
                    request = json.loads(line)
                except ValueError:
                    request = None
                raw = hs.intercept(request)
                if raw is not None:
                    await emit(raw)
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError as e:
                    await read_send.send(e)
                    continue
                await read_send.send(SessionMessage(message))

    async def writer() -> None:
        async with write_receive:
            async for m in write_receive:
                await emit([m.message.model_dump_json(by_alias=True, exclude_unset=True).encode()])

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        tg.start_soon(reader)
        await hs.server.run(read_receive, write_send, hs.server.create_initialization_options())
        tg.cancel_scope.cancel()


ASGIApp = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Any]


def wire_middleware(hs: HostileServer, app: ASGIApp) -> ASGIApp:
    """Answers what :meth:`HostileServer.intercept` claims; hands everything else to the SDK's app."""

    async def middleware(
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        try:
            request: Any = json.loads(body)
        except ValueError:
            request = None
        raw = hs.intercept(request)
        if raw is None:
            replayed = False

            async def replay() -> Any:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await app(scope, replay, send)
            return
        # intercept() answered, so this is a tools/call request with params.
        arguments: dict[str, Any] = request["params"].get("arguments") or {}
        waits = arguments.get("kind") == "none"  # a reply that never comes: the stream stays open
        if len(raw) == 1 and not waits:
            headers = [(b"content-type", b"application/json")]
            body = raw[0]
            if arguments.get("gzip"):
                body = gzip.compress(body, compresslevel=9)
                headers.append((b"content-encoding", b"gzip"))
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        for m in raw:
            await send(
                {"type": "http.response.body", "body": b"event: message\ndata: " + m + b"\n\n", "more_body": True}
            )
        if waits:
            await anyio.sleep_forever()
        await send({"type": "http.response.body", "body": b""})

    return middleware


async def serve_http(hs: HostileServer, port: int) -> None:
    import uvicorn

    app = wire_middleware(hs, hs.server.streamable_http_app(host="127.0.0.1"))
    # Info level prints "Uvicorn running on ...", which the test fixtures wait for.
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="info", access_log=False, lifespan="on")
    await uvicorn.Server(config).serve()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1")
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8765")))
    p.add_argument("--schemas", default="", help=f"comma-separated, or 'all': {', '.join(SCHEMA_KINDS)}")
    p.add_argument("--ref-url", default="http://127.0.0.1:9/schema.json", help="target of the remote_ref schema")
    p.add_argument("--deep-levels", type=int, default=5000)
    p.add_argument("--wide-props", type=int, default=30000)
    p.add_argument("--page-size", type=int, default=0, help="tools per tools/list page (0: all in one)")
    p.add_argument("--secret", default=None, help="a token printed to stderr (default: $HOSTILE_SECRET)")
    a = p.parse_args(argv)
    schemas: list[str] = list(SCHEMA_KINDS) if a.schemas == "all" else [s for s in a.schemas.split(",") if s]
    hs = HostileServer(
        schemas=schemas, ref_url=a.ref_url, deep_levels=a.deep_levels, wide_props=a.wide_props, page_size=a.page_size
    )
    if a.secret is not None:
        hs.secret = a.secret
    hs.say("starting")
    if a.http:
        anyio.run(serve_http, hs, a.port)
    else:
        anyio.run(serve_stdio, hs)


if __name__ == "__main__":
    sys.exit(main())
