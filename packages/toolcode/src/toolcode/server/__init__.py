"""The code-mode MCP server (``toolcode serve``): metatools in front of upstream MCP servers.

>>> from toolcode import Toolbox
>>> from toolcode.server import log_to_stderr, serve_stdio
>>> async def main() -> None:  # doctest: +SKIP
...     log_to_stderr()  # stdout carries the protocol; upstream connections are logged
...     async with Toolbox.from_config("mcp.json") as box:
...         await serve_stdio(box)

Over HTTP off loopback, callers need a bearer token (see :class:`BearerTokens`)::

    await serve_http(box, "0.0.0.0", 8808, tokens=BearerTokens.load(file="/etc/toolcode/tokens"))
"""

from toolcode._chain import CHAIN_SCHEMA
from toolcode._door import EXPOSED_SEPARATOR
from toolcode._metatools import DESCRIPTIONS, INSTRUCTIONS
from toolcode._settings import DEFAULT_TOOLS, META_TOOLS, SETTINGS_SCHEMA
from toolcode.server._http_address import is_loopback, parse_http_address
from toolcode.server._http_guard import CALLER_SCOPE_KEY, HTTPGuard, http_caller
from toolcode.server._http_tokens import MIN_TOKEN_LENGTH, TOKENS_ENV, BearerTokens
from toolcode.server._serve import log_to_stderr, serve_http, serve_stdio
from toolcode.server._server import CodeModeServer

__all__ = [
    "CALLER_SCOPE_KEY",
    "CHAIN_SCHEMA",
    "DEFAULT_TOOLS",
    "DESCRIPTIONS",
    "EXPOSED_SEPARATOR",
    "INSTRUCTIONS",
    "META_TOOLS",
    "MIN_TOKEN_LENGTH",
    "SETTINGS_SCHEMA",
    "TOKENS_ENV",
    "BearerTokens",
    "CodeModeServer",
    "HTTPGuard",
    "http_caller",
    "is_loopback",
    "log_to_stderr",
    "parse_http_address",
    "serve_http",
    "serve_stdio",
]
