"""The code-mode MCP server (``toolcode serve``): metatools in front of upstream MCP servers.

>>> from toolcode import Toolbox
>>> from toolcode.server import serve_stdio
>>> async def main() -> None:  # doctest: +SKIP
...     async with Toolbox.from_config("mcp.json") as box:
...         await serve_stdio(box)
"""

from toolcode.server._descriptions import DESCRIPTIONS, INSTRUCTIONS
from toolcode.server._serve import serve_http, serve_stdio
from toolcode.server._server import EXPOSED_SEPARATOR, CodeModeServer

__all__ = ["DESCRIPTIONS", "EXPOSED_SEPARATOR", "INSTRUCTIONS", "CodeModeServer", "serve_http", "serve_stdio"]
