"""An MCP server that echoes its own credential in its results, as careless API wrappers do.

Run it over stdio (``python leaky_server.py``; the credential is ``$LEAKY_TOKEN``) or streamable
HTTP on 127.0.0.1 (``python leaky_server.py --http --port 8765``, endpoint ``/mcp``; the
credential is the ``Bearer`` token of the request's ``Authorization`` header).

Tools:

- ``account()``: a successful result that carries the credential as it is, percent-encoded in a
  pagination link, base64-encoded alone and inside ``Basic base64("svc:" + credential)``, and as
  a key, in structured content, in a text block and in an embedded resource (text and URI);
  it also prints the base64 form to stderr;
- ``fail()``: an ``isError`` result whose text carries the base64 form;
- ``refuse()``: a JSON-RPC error whose message and data carry the credential as it is;
- ``configure(credential, mode)``: a tool whose definition quotes the credential in every field
  a definition has (description, title, input and output schema: ``default``, ``enum``,
  ``examples``, ``const``, ``pattern``, a property name; annotations, ``_meta``), as it is,
  percent-encoded, JSON-escaped and base64-encoded, as wrappers that document "your" key do.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from typing import Any
from urllib.parse import quote

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

_EMPTY: dict[str, Any] = {"type": "object", "properties": {}}

TOOLS = [
    types.Tool(name="account", description="The account behind the credential, with links.", input_schema=_EMPTY),
    types.Tool(name="fail", description="Fail, quoting the credential base64-encoded.", input_schema=_EMPTY),
    types.Tool(
        name="refuse", description="Refuse the call with a JSON-RPC error quoting the credential.", input_schema=_EMPTY
    ),
]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _configure(cred: str) -> types.Tool:
    """A tool whose definition quotes ``cred`` everywhere a definition can."""
    escaped = json.dumps({"token": cred}).replace("/", "\\/")  # as a JSON encoder that escapes "/" writes it
    return types.Tool(
        name="configure",
        title=f"Configure the client for {cred}",
        description=(
            f"Configures the client. Your credential is {cred}; the next page is "
            f"https://api.example.test/items?access={quote(cred, safe='')}; sample config {escaped}; "
            f"upstream auth Basic {_b64('svc:' + cred)}."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "credential": {
                    "type": "string",
                    "default": cred,
                    "enum": [cred, "anonymous"],
                    "examples": [_b64(cred)],
                    "description": f"Defaults to {cred}.",
                },
                "mode": {"type": "string", "pattern": f"^(fast|{cred})$"},
            },
        },
        output_schema={
            "type": "object",
            "properties": {
                "token": {"const": cred},
                "by_credential": {"type": "object", "properties": {cred: {"type": "string"}}, "required": [cred]},
            },
        },
        annotations=types.ToolAnnotations(title=f"configure {cred}", read_only_hint=True),
        meta={"credential": cred, "credential_b64": _b64(cred)},
    )


def _credential(ctx: ServerRequestContext[Any]) -> str:
    headers = getattr(ctx.request, "headers", None)
    if headers is not None:
        return str(headers.get("authorization", "")).removeprefix("Bearer ")
    return os.environ["LEAKY_TOKEN"]


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[*TOOLS, _configure(_credential(ctx))])


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    cred = _credential(ctx)
    if params.name == "refuse":
        raise MCPError(code=-32001, message=f"upstream refused credential {cred}", data={"credential": cred})
    if params.name == "fail":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"upstream refused credential {_b64(cred)}")], is_error=True
        )
    print(f"calling the API with credential {_b64(cred)}", file=sys.stderr, flush=True)
    account = {
        "owner": "the test suite",
        "credential": cred,
        "next": f"https://api.example.test/items?page=2&access={quote(cred, safe='')}",
        "debug": {"credential_b64": _b64(cred), "upstream_auth": f"Basic {_b64('svc:' + cred)}"},
        "by_credential": {cred: "active"},
    }
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text=json.dumps(account)),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri=f"mem://accounts?access={quote(cred, safe='')}", mime_type="text/plain", text=f"cached {cred}"
                ),
            ),
        ],
        structured_content=account,
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    a = p.parse_args(argv)
    server: Server[Any] = Server("leaky-server", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)

    async def serve_stdio() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    async def serve_http() -> None:
        import uvicorn

        app = server.streamable_http_app(host="127.0.0.1")
        # Info level prints "Uvicorn running on ...", which the test fixtures wait for.
        config = uvicorn.Config(app, host="127.0.0.1", port=a.port, log_level="info", access_log=False, lifespan="on")
        await uvicorn.Server(config).serve()

    anyio.run(serve_http if a.http else serve_stdio)


if __name__ == "__main__":
    sys.exit(main())
