"""The code-mode MCP server (``toolcode serve``): metatools in front of upstream MCP servers.

>>> from toolcode import Toolbox
>>> from toolcode.server import log_to_stderr, serve_stdio
>>> async def main() -> None:  # doctest: +SKIP
...     log_to_stderr()  # stdout carries the protocol; upstream connections are logged
...     async with Toolbox.from_config("mcp.json") as box:
...         await serve_stdio(box)
"""

from toolcode.server._descriptions import DESCRIPTIONS, INSTRUCTIONS
from toolcode.server._serve import log_to_stderr, serve_http, serve_stdio
from toolcode.server._server import EXPOSED_SEPARATOR, CodeModeServer

__all__ = [
    "DESCRIPTIONS",
    "EXPOSED_SEPARATOR",
    "INSTRUCTIONS",
    "CodeModeServer",
    "log_to_stderr",
    "serve_http",
    "serve_stdio",
]
