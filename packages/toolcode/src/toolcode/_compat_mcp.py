"""The private parts of the ``mcp`` SDK that toolcode relies on, in one place.

Each is pinned by ``tests/toolcode/test_compat_mcp.py`` against the installed SDK, so an upgrade
that changes one fails there, by name, instead of somewhere inside the server.
"""

from __future__ import annotations

from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.connection import Connection

__all__ = ["CHECKED_ON", "connection_of"]

CHECKED_ON = "2.3"
"""The ``mcp`` minor version these internals were read on (``pyproject.toml`` pins it)."""


def connection_of(ctx: ServerRequestContext[Any]) -> Connection:
    """The connection a request came on (the lowlevel context keeps it in its session's private field).

    Handshake-era clients get ``list_changed`` on it, and its ``session_id`` names a 2025-11-25 HTTP session.

    Raises:
        RuntimeError: If the installed ``mcp`` no longer keeps it there.
    """
    connection = getattr(ctx.session, "_connection", None)
    if not isinstance(connection, Connection):
        raise RuntimeError(
            f"mcp's ServerSession keeps no Connection in _connection any more (toolcode._compat_mcp was checked on "
            f"mcp {CHECKED_ON})"
        )
    return connection
