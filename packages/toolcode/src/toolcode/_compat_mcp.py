"""The private parts of the ``mcp`` SDK that toolcode relies on, in one place.

Each is pinned by ``tests/toolcode/test_compat_mcp.py`` against the installed SDK, so an upgrade
that changes one fails there, by name, instead of somewhere inside the server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["CHECKED_ON", "connection_of", "session_ender"]

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


def session_ender(manager: StreamableHTTPSessionManager) -> Callable[[str], Awaitable[bool]]:
    """A function that ends one of ``manager``'s 2025-11-25 HTTP sessions by its id, as its client's ``DELETE`` would.

    The SDK ends a session only on its client's ``DELETE``, its idle timeout or shutdown; the manager's private
    ``_discard_session`` is what each of them calls: the id is forgotten at once (its requests answer 404 from then
    on) and its transport terminated, which closes its streams and ends its server task. The returned function
    answers whether there was such a session. It is checked here, when the server is built, not when it is first
    needed.

    Raises:
        RuntimeError: If the installed ``mcp`` no longer keeps its sessions and their end where this reads them.
    """
    sessions: object = getattr(manager, "_server_instances", None)
    discard: Callable[[str, Any], Awaitable[None]] | None = getattr(manager, "_discard_session", None)
    if not isinstance(sessions, dict) or not callable(discard):
        raise RuntimeError(
            f"mcp's StreamableHTTPSessionManager has no _server_instances dict and _discard_session any more "
            f"(toolcode._compat_mcp was checked on mcp {CHECKED_ON})"
        )
    open_sessions: dict[str, Any] = sessions  # pyright: ignore[reportUnknownVariableType]

    async def end(session_id: str) -> bool:
        transport = open_sessions.get(session_id)
        if transport is None:
            return False
        await discard(session_id, transport)
        return True

    return end
