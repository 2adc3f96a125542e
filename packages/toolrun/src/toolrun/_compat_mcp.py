"""The private parts of the ``mcp`` SDK that toolrun relies on, in one place (checked on mcp 2.3).

The SDK validates whole responses, which a tolerant client must avoid (one malformed tool would
lose the whole catalog): toolrun sends raw requests through the session's own stamping and
dispatcher, fills the session's ``Mcp-Param-*`` header maps itself, and reads whether the
transport has closed. The stdio transport (``_mcp_stdio``) starts and stops the server with the
SDK's own process helpers and replaces only its reader. ``tests/toolrun/test_mcp_internals.py``
fails loudly when an upgrade moves any of these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp import ClientSession
from mcp.client import stdio as _stdio
from mcp.client._transport import TransportStreams  # pyright: ignore[reportPrivateImportUsage]
from mcp.client.stdio import get_default_environment
from mcp.shared.dispatcher import CallOptions

__all__ = [
    "WRITER_FLUSH_TIMEOUT",
    "TransportStreams",
    "create_process",
    "drain_stdout",
    "executable_command",
    "get_default_environment",
    "header_maps",
    "is_closed",
    "send_raw",
    "stop_server_process",
]

# The SDK's stdio process handling (start, drain, the spec's shutdown sequence), used as it is.
create_process = _stdio._create_platform_compatible_process  # pyright: ignore[reportPrivateUsage]
drain_stdout = _stdio._drain_stdout  # pyright: ignore[reportPrivateUsage]
executable_command = _stdio._get_executable_command  # pyright: ignore[reportPrivateUsage]
stop_server_process = _stdio._stop_server_process  # pyright: ignore[reportPrivateUsage]
WRITER_FLUSH_TIMEOUT: float = _stdio._WRITER_FLUSH_TIMEOUT  # pyright: ignore[reportPrivateUsage]


async def send_raw(session: ClientSession, method: str, params: Mapping[str, Any], opts: CallOptions) -> dict[str, Any]:
    """Send one request as ``ClientSession.send_request`` would write it, and return the raw JSON result."""
    data: dict[str, Any] = {"method": method, "params": dict(params)}
    session._stamp(data, opts)  # pyright: ignore[reportPrivateUsage]
    return await session._dispatcher.send_raw_request(data["method"], data.get("params"), opts)  # pyright: ignore[reportPrivateUsage]


def header_maps(session: ClientSession) -> dict[str, Any]:
    """The session's tool name → ``Mcp-Param-*`` header map (filled by its own ``list_tools()`` only)."""
    return session._x_mcp_header_maps  # pyright: ignore[reportPrivateUsage]


def is_closed(session: ClientSession) -> bool:
    """Whether the session's transport has ended (the server exited or the connection dropped)."""
    return bool(getattr(session._dispatcher, "_closed", False))  # pyright: ignore[reportPrivateUsage]
