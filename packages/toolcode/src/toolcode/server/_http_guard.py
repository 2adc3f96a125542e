"""The guard in front of the HTTP door: bearer tokens, Host and Origin checks, on every path.

:class:`HTTPGuard` is a pure ASGI middleware that wraps the whole application, so it covers the
MCP endpoint and any path added later. In this order, a request is refused with a short plain
text when:

1. its ``Host`` header is not an allowed host (``421``): this stops DNS rebinding, where a web
   page on an attacker's domain resolves that domain to this server's address;
2. it carries an ``Origin`` header that is neither same-host nor allowed (``403``);
3. tokens are configured and it carries no valid ``Authorization: Bearer TOKEN`` (``401`` with
   ``WWW-Authenticate: Bearer``);
4. tokens are configured and its caller already has :data:`MAX_IN_FLIGHT_PER_CALLER` requests in
   flight (``429``; a session's ``GET`` stream is not counted);
5. tokens are configured and it names an MCP session (``Mcp-Session-Id``) that another caller
   opened, or one this guard does not know (``404``, as for a session that ended): a session's
   requests, its answers to the server's questions and its end are its caller's alone.

The sessions a caller holds are bounded by its share (``sessions_per_caller``): past it, its least
recently used session is forgotten, and ended in the server behind the guard (``end_session``), so
that no caller's sessions fill the server's table for the others.

Tokens (:class:`~toolcode.server.BearerTokens`) come from an environment variable or a file,
each optionally named (``NAME:TOKEN``). The name of the token that authenticated a request is its caller
identity, put in the ASGI scope under :data:`CALLER_SCOPE_KEY`; request handlers read it with
:func:`http_caller`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from typing import Any, TypeVar

import anyio
from mcp.server import ServerRequestContext

from toolcode.exceptions import ConfigurationError, clip
from toolcode.server._http_address import (
    DEFAULT_PORTS,
    LOOPBACK_NAMES,
    canon_name,
    ip_of,
    is_loopback,
    is_wildcard,
    normalize_origin,
    parse_origin,
    split_authority,
)
from toolcode.server._http_tokens import BearerTokens
from toolindex.log import get_logger

__all__ = ["CALLER_SCOPE_KEY", "HTTPGuard", "http_caller"]

log = get_logger("toolcode.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

T = TypeVar("T")

_SESSION_HEADER = b"mcp-session-id"
MAX_SESSIONS = 10_000
"""Sessions whose caller the guard remembers, by default; past it the least recently used is forgotten
(and ended: its requests are refused from then on, and its client opens another)."""
MAX_SESSIONS_PER_CALLER = 100
"""A caller's share of sessions, by default: its least recently used is forgotten and ended when it
opens more (never another caller's)."""

MAX_IN_FLIGHT_PER_CALLER = 32
"""Requests (other than a session's ``GET`` stream) one caller may have in flight at once; one more
is refused (``429``): answers a caller never reads cannot hold the server's memory without bound."""

CALLER_SCOPE_KEY = "toolcode.caller"
"""ASGI scope key holding the authenticated caller's identity (``str``); absent without tokens."""


def _header(scope: Scope, name: bytes) -> list[str]:
    headers: Iterable[tuple[bytes, bytes]] = scope.get("headers") or ()
    return [v.decode("latin-1") for k, v in headers if k.lower() == name]


async def _kept_elsewhere(session_id: str) -> None:
    """The default ``end_session``: the application behind the guard ends its sessions itself."""


def _checked(field: str, check: Callable[[str], T], values: Iterable[str]) -> list[T]:
    try:
        return [check(value) for value in values]
    except ValueError as exc:
        raise ConfigurationError(field, str(exc)) from None


class HTTPGuard:
    """ASGI middleware that checks Host, Origin and the bearer token of every HTTP and WebSocket request.

    Allowed ``Host`` values: the bound ``host:port``; with a loopback bind also ``localhost``,
    ``127.0.0.1`` and ``[::1]`` at that port; with a wildcard bind (``0.0.0.0``, ``::``) any IP
    address at that port (an IP literal cannot be rebound to another server); and every
    ``allowed_hosts`` entry: ``NAME`` (any port, or none) or ``NAME:PORT``.

    An ``Origin`` header, when present, must name the same host as the request's ``Host`` (any
    scheme), or be one of ``allowed_origins``.

    Args:
        app: The application to protect.
        host: The bound address (``""`` for every interface).
        port: The bound port (the real one, not 0).
        tokens: The accepted bearer tokens; ``None`` lets any caller through (loopback only,
            see :func:`check_bind`).
        allowed_hosts: Extra ``Host`` values (a reverse proxy's public name).
        allowed_origins: Extra origins (``https://app.example.com``; ``null`` for that literal).
        signs_in: Path prefixes (``/console``) whose application signs its users in itself: no bearer
            token is asked there; Host and Origin are checked as everywhere.
        end_session: Ends an MCP session in ``app`` by its id, called (shielded from cancellation)
            for each session the guard forgets to make room; without it such a session lives on in
            ``app`` until ``app`` ends it (its idle timeout), unreachable and counted there.
        sessions_per_caller: A caller's share of the sessions the guard remembers.
        max_sessions: The sessions the guard remembers, all callers together.

    Raises:
        ConfigurationError: A malformed ``allowed_hosts`` or ``allowed_origins`` entry; a bound
            below 1.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        host: str,
        port: int,
        tokens: BearerTokens | None = None,
        allowed_hosts: Sequence[str] = (),
        allowed_origins: Sequence[str] = (),
        signs_in: Sequence[str] = (),
        end_session: Callable[[str], Awaitable[object]] = _kept_elsewhere,
        sessions_per_caller: int = MAX_SESSIONS_PER_CALLER,
        max_sessions: int = MAX_SESSIONS,
    ) -> None:
        for field, bound in (("sessions_per_caller", sessions_per_caller), ("max_sessions", max_sessions)):
            if bound < 1:
                raise ConfigurationError(field, f"{bound!r} is not a number of sessions >= 1")
        self.app = app
        self.tokens = tokens
        self._signs_in = tuple(signs_in)
        self._any_ip_at_port = is_wildcard(host)
        self._port = port
        rules = set(_checked("allowed_hosts", split_authority, allowed_hosts))
        if host and not self._any_ip_at_port:
            rules.add((canon_name(host), port))
        if is_loopback(host):
            rules.update((name, port) for name in LOOPBACK_NAMES)
        self._hosts = frozenset(rules)
        self._origins = frozenset(_checked("allowed_origins", normalize_origin, allowed_origins))
        self._end_session = end_session
        self._share = sessions_per_caller
        self._max_sessions = max_sessions
        self._sessions: OrderedDict[str, str] = OrderedDict()
        """MCP session id → the caller that opened it, least recently used first."""
        self._in_flight: dict[str, int] = {}
        """Each caller's requests in flight (its sessions' ``GET`` streams aside)."""
        self._held: dict[str, OrderedDict[str, None]] = {}
        """Caller → the ids of its sessions, least recently used first (the same order as above)."""

    def host_allowed(self, value: str) -> bool:
        """Whether a ``Host`` header value is allowed."""
        try:
            name, port = split_authority(value)
        except ValueError:
            return False
        if (name, None) in self._hosts or (name, port) in self._hosts:
            return True
        if port is None and (name, 80) in self._hosts:
            return True
        return self._any_ip_at_port and port == self._port and ip_of(name.strip("[]")) is not None

    def origin_allowed(self, origin: str, host: str) -> bool:
        """Whether an ``Origin`` header value is allowed for a request to ``host`` (its ``Host`` header)."""
        if origin.strip().lower() == "null":
            return "null" in self._origins
        parsed = parse_origin(origin)
        if parsed is None:
            return False
        scheme, name, port = parsed
        try:
            host_name, host_port = split_authority(host)
        except ValueError:
            return False
        if host_name == name and (host_port or DEFAULT_PORTS.get(scheme)) == port:
            return True
        return normalize_origin(origin) in self._origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request, then pass it on or answer it."""
        kind = scope.get("type")
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        hosts = _header(scope, b"host")
        if len(hosts) != 1 or not self.host_allowed(hosts[0]):
            await self._refuse(scope, send, 421, "invalid Host header", seen=hosts[0] if hosts else "")
            return
        origins = _header(scope, b"origin")
        if len(origins) > 1 or (origins and not self.origin_allowed(origins[0], hosts[0])):
            await self._refuse(scope, send, 403, "invalid Origin header", seen=origins[0])
            return
        path = str(scope.get("path", ""))
        if self.tokens is not None and not any(path == p or path.startswith(p + "/") for p in self._signs_in):
            caller = self._authenticate(scope)
            if caller is None:
                missing = not _header(scope, b"authorization")
                challenge = 'Bearer realm="toolcode"' + ("" if missing else ', error="invalid_token"')
                text = "missing bearer token" if missing else "invalid bearer token"
                await self._refuse(scope, send, 401, text, headers=[(b"www-authenticate", challenge.encode())])
                return
            scope[CALLER_SCOPE_KEY] = caller
            if kind == "http":
                await self._counted(caller, scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _counted(self, caller: str, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass on a request of ``caller``'s while it is within its share of requests in flight."""
        if scope.get("method") == "GET":  # a session's stream: bounded by its share of sessions
            await self._in_session(caller, scope, receive, send)
            return
        if self._in_flight.get(caller, 0) >= MAX_IN_FLIGHT_PER_CALLER:
            text = "too many requests in flight for this caller: read the answers of earlier ones first"
            await self._refuse(scope, send, 429, text, headers=[(b"retry-after", b"1")])
            return
        self._in_flight[caller] = self._in_flight.get(caller, 0) + 1
        try:
            await self._in_session(caller, scope, receive, send)
        finally:
            if (left := self._in_flight[caller] - 1) > 0:
                self._in_flight[caller] = left
            else:
                del self._in_flight[caller]

    async def _in_session(self, caller: str, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass on a request of ``caller``'s: in a session it opened, or one that may open a session."""
        named = _header(scope, _SESSION_HEADER)
        if named:
            sid = named[0]
            if len(named) != 1 or self._sessions.get(sid) != caller:
                await self._refuse(scope, send, 404, "session not found")
                return
            self._sessions.move_to_end(sid)
            self._held[caller].move_to_end(sid)
            ending = scope.get("method") == "DELETE"

            async def ended(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    # Ended by its client, or gone from the server (its idle timeout): forgotten here too.
                    if (ending and 200 <= status < 300) or status == 404:
                        self._forget(sid)
                await send(message)

            await self.app(scope, receive, ended)
            return

        async def opened(message: Message) -> None:
            if message["type"] == "http.response.start" and 200 <= int(message["status"]) < 300:
                # The server names a session on its errors too, and drops it: only a session it
                # answered with success is one the caller holds.
                headers: Iterable[tuple[bytes, bytes]] = message.get("headers") or ()
                for key, value in headers:
                    if key.lower() == _SESSION_HEADER:
                        await self._remember(value.decode("latin-1"), caller)
            await send(message)

        await self.app(scope, receive, opened)

    async def _remember(self, sid: str, caller: str) -> None:
        """Keep a new session's caller, and end the sessions that leave room for it.

        A caller's own least recently used is ended past its share, so that no caller's new sessions
        push another's out; past the whole bound, the least recently used of all. They are ended in
        the application too, before the new session's answer goes out: what the application holds
        stays within what the guard remembers.
        """
        self._sessions[sid] = caller
        mine = self._held.setdefault(caller, OrderedDict())
        mine[sid] = None
        dropped: list[str] = []
        if len(mine) > self._share:
            dropped.append(next(iter(mine)))
            self._forget(dropped[-1])
        if len(self._sessions) > self._max_sessions:
            dropped.append(next(iter(self._sessions)))
            self._forget(dropped[-1])
        # Shielded: a session forgotten here and left open in the application would be out of every bound.
        with anyio.CancelScope(shield=True):
            for old in dropped:
                await self._end_session(old)
                log.debug("http.session_ended", reason="room for a newer session")

    def _forget(self, sid: str) -> None:
        caller = self._sessions.pop(sid, None)
        if caller is None:
            return
        mine = self._held[caller]
        del mine[sid]
        if not mine:
            del self._held[caller]

    def _authenticate(self, scope: Scope) -> str | None:
        assert self.tokens is not None
        values = _header(scope, b"authorization")
        if len(values) != 1:
            return None
        scheme, _, credential = values[0].strip().partition(" ")
        credential = credential.strip()
        if scheme.lower() != "bearer" or not credential:
            return None
        return self.tokens.verify(credential)

    async def _refuse(
        self,
        scope: Scope,
        send: Send,
        status: int,
        text: str,
        *,
        seen: str = "",
        headers: Sequence[tuple[bytes, bytes]] = (),
    ) -> None:
        client: Sequence[Any] | None = scope.get("client")
        extra = {"value": clip(seen, 100)} if seen else {}
        log.warning(
            "http.request_refused",
            status=status,
            reason=text,
            client=str(client[0]) if client else None,
            path=clip(str(scope.get("path", "")), 100),
            **extra,
        )
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": text})
            return
        body = (text + "\n").encode()
        # A refused request's body is never read: its connection is closed after the answer, so
        # that no caller can hold it open by sending that body slowly.
        closing = [(b"connection", b"close")] if _declares_body(scope) else []
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    *headers,
                    *closing,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _declares_body(scope: Scope) -> bool:
    """Whether a request's head announces a body (a non-zero ``Content-Length``, or chunks)."""
    if _header(scope, b"transfer-encoding"):
        return True
    return any(value.strip() not in ("", "0") for value in _header(scope, b"content-length"))


def http_caller(ctx: ServerRequestContext[Any, Any] | Any) -> str | None:
    """The authenticated caller of an MCP request served over HTTP.

    Args:
        ctx: The request context a low-level handler receives.

    Returns:
        The name of the bearer token that authenticated the HTTP request carrying this MCP
        request; ``None`` over stdio, in-process, or when the door has no tokens.
    """
    scope: Any = getattr(getattr(ctx, "request", None), "scope", None)
    try:
        value = scope[CALLER_SCOPE_KEY]  # an ASGI scope (a dict); no request, or no key: no caller
    except (TypeError, KeyError):
        return None
    return value if isinstance(value, str) else None
