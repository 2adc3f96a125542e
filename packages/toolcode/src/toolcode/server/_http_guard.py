"""The guard in front of the HTTP door: bearer tokens, Host and Origin checks, on every path.

:class:`HTTPGuard` is a pure ASGI middleware that wraps the whole application, so it covers the
MCP endpoint and any path added later. In this order, a request is refused with a short plain
text when:

1. its ``Host`` header is not an allowed host (``421``): this stops DNS rebinding, where a web
   page on an attacker's domain resolves that domain to this server's address;
2. it carries an ``Origin`` header that is neither same-host nor allowed (``403``);
3. tokens are configured and it carries no valid ``Authorization: Bearer TOKEN`` (``401`` with
   ``WWW-Authenticate: Bearer``).

Tokens (:class:`~toolcode.server.BearerTokens`) come from an environment variable or a file,
each optionally named (``NAME:TOKEN``). The name of the token that authenticated a request is its caller
identity, put in the ASGI scope under :data:`CALLER_SCOPE_KEY`; request handlers read it with
:func:`http_caller`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from toolcode.exceptions import ConfigurationError
from toolcode.server._http_tokens import BearerTokens
from toolindex.log import get_logger

if TYPE_CHECKING:
    from mcp.server import ServerRequestContext

__all__ = [
    "CALLER_SCOPE_KEY",
    "HTTPGuard",
    "check_bind",
    "http_caller",
    "is_loopback",
    "normalize_origin",
    "parse_http_address",
    "split_authority",
]

log = get_logger("toolcode.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CALLER_SCOPE_KEY = "toolcode.caller"
"""ASGI scope key holding the authenticated caller's identity (``str``); absent without tokens."""

_HOSTNAME_RE = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?\.?")
_PORT_RE = re.compile(r"[0-9]{1,5}")
_ORIGIN_RE = re.compile(r"([a-z][a-z0-9+.-]*)://(\[[^\]/]*\]|[^:/\[\]]+)(?::([0-9]{1,5}))?")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def _clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters: what a caller sends is echoed in errors and logs, never whole."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------------------ addresses


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address: ``localhost``, any of 127.0.0.0/8, or ``::1``.

    Args:
        host: A host name or IP address (an IPv6 address with or without brackets).

    Returns:
        ``True`` only for those; any other name, the empty host and wildcard addresses are not.
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_wildcard(host: str) -> bool:
    if not host:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def _parse_port(text: str, value: str) -> int:
    if not _PORT_RE.fullmatch(text) or int(text) > 65535:
        raise ValueError(f"port {_clip(text, 20)!r} in {_clip(value, 80)!r} is not a number from 0 to 65535")
    return int(text)


def _canon_name(name: str) -> str:
    """Lower case, IP literals in their compressed form (IPv6 in brackets), no trailing dot."""
    name = name.lower()
    try:
        ip = ipaddress.ip_address(name[1:-1] if name.startswith("[") and name.endswith("]") else name)
    except ValueError:
        return name.rstrip(".")
    return f"[{ip.compressed}]" if ip.version == 6 else ip.compressed


def split_authority(value: str) -> tuple[str, int | None]:
    """``NAME``, ``NAME:PORT``, ``[IPv6]`` or ``[IPv6]:PORT`` → canonical name and port (``None``: none given).

    Raises:
        ValueError: Not one of those forms.
    """
    text = value.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        name, rest = text[: end + 1], text[end + 1 :]
        try:
            ipaddress.IPv6Address(name[1:-1])
        except ValueError:
            raise ValueError(f"{_clip(value, 80)!r} does not hold an IPv6 address in brackets") from None
    else:
        name, sep, port = text.partition(":")
        rest = sep + port
        if ":" in port:
            raise ValueError(f"{_clip(value, 80)!r}: put an IPv6 address in brackets, e.g. [::1]:8808")
        if not _HOSTNAME_RE.fullmatch(name):
            raise ValueError(f"{_clip(value, 80)!r} is not a host name or IP address")
    if not rest:
        return _canon_name(name), None
    if not rest.startswith(":"):
        raise ValueError(f"{_clip(value, 80)!r} is not HOST or HOST:PORT")
    return _canon_name(name), _parse_port(rest[1:], value)


def parse_http_address(value: str) -> tuple[str, int]:
    """Parse the address to serve HTTP on: ``HOST:PORT``, ``[IPv6]:PORT`` or ``:PORT`` (all interfaces).

    Args:
        value: The address as given (``--http``).

    Returns:
        ``(host, port)``; the host is ``""`` for all interfaces, an IPv6 address without brackets.

    Raises:
        ValueError: Malformed, an IPv6 address without brackets, or a port outside 0-65535.
    """
    if value.startswith("["):
        end = value.find("]")
        if end < 0 or value[end + 1 : end + 2] != ":":
            raise ValueError(f"expected [IPv6]:PORT, got {_clip(value, 80)!r}")
        host, port_text = value[1:end], value[end + 2 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"{_clip(host, 80)!r} in brackets is not an IPv6 address") from None
        return host, _parse_port(port_text, value)
    host, sep, port_text = value.rpartition(":")
    if not sep:
        raise ValueError(f"expected HOST:PORT, [IPv6]:PORT or :PORT, got {_clip(value, 80)!r}")
    if ":" in host:
        raise ValueError(f"{_clip(value, 80)!r}: put an IPv6 address in brackets, e.g. [::1]:8808")
    if host and not _HOSTNAME_RE.fullmatch(host.lower()):
        raise ValueError(f"{_clip(host, 80)!r} is not a host name or IP address (use :PORT for all interfaces)")
    return host, _parse_port(port_text, value)


def _parse_origin(value: str) -> tuple[str, str, int] | None:
    """``scheme://host[:port]`` → (scheme, canonical host, port with the scheme's default filled in)."""
    m = _ORIGIN_RE.fullmatch(value.strip().lower())
    if m is None:
        return None
    scheme, name, port_text = m.group(1), m.group(2), m.group(3)
    if name.startswith("["):
        try:
            ipaddress.IPv6Address(name[1:-1])
        except ValueError:
            return None
    elif not _HOSTNAME_RE.fullmatch(name):
        return None
    if port_text is not None:
        port = int(port_text)
        if port > 65535:
            return None
    else:
        port = _DEFAULT_PORTS.get(scheme, 0)
    return scheme, _canon_name(name), port


def normalize_origin(value: str) -> str:
    """An ``--allow-origin`` value in the form browsers send: ``scheme://host[:port]`` or ``null``.

    Raises:
        ValueError: Not an origin (a path, a wildcard, no scheme).
    """
    if value.strip().lower() == "null":
        return "null"
    parsed = _parse_origin(value)
    if parsed is None:
        raise ValueError(f"{_clip(value, 80)!r} is not an origin like https://app.example.com or http://host:8080")
    scheme, name, port = parsed
    return f"{scheme}://{name}" if port == _DEFAULT_PORTS.get(scheme) else f"{scheme}://{name}:{port}"


def check_bind(host: str, tokens: BearerTokens | None, *, hint: str = "pass tokens=BearerTokens(...)") -> None:
    """Refuse a non-loopback address without authentication.

    Args:
        host: The address to bind (``""`` means every interface).
        tokens: The configured tokens, if any.
        hint: How to configure tokens, in the caller's terms (a CLI flag, a keyword argument).

    Raises:
        ConfigurationError: ``host`` is not loopback and no token is configured.
    """
    if tokens is None and not is_loopback(host):
        shown = host or "every interface"
        raise ConfigurationError(
            "tokens",
            f"refusing to serve HTTP on {shown} without authentication: anyone who can reach it could run code "
            f"with every configured server. Configure bearer tokens ({hint}), or bind to 127.0.0.1; "
            "see 'Running the HTTP door' in docs/security.md",
        )


# ------------------------------------------------------------------------------ the middleware


def _header(scope: Scope, name: bytes) -> list[str]:
    headers = cast(Iterable[tuple[bytes, bytes]], scope.get("headers") or ())
    return [v.decode("latin-1") for k, v in headers if k.lower() == name]


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

    Raises:
        ConfigurationError: A malformed ``allowed_hosts`` or ``allowed_origins`` entry.
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
    ) -> None:
        self.app = app
        self.tokens = tokens
        self._any_ip_at_port = _is_wildcard(host)
        self._port = port
        rules: set[tuple[str, int | None]] = set()
        if host and not self._any_ip_at_port:
            rules.add((_canon_name(host), port))
        if is_loopback(host):
            rules.update((name, port) for name in _LOOPBACK_NAMES)
        for value in allowed_hosts:
            try:
                rules.add(split_authority(value))
            except ValueError as exc:
                raise ConfigurationError("allowed_hosts", str(exc)) from None
        self._hosts = frozenset(rules)
        origins: set[str] = set()
        for value in allowed_origins:
            try:
                origins.add(normalize_origin(value))
            except ValueError as exc:
                raise ConfigurationError("allowed_origins", str(exc)) from None
        self._origins = frozenset(origins)

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
        if self._any_ip_at_port and port == self._port:
            try:
                ipaddress.ip_address(name.strip("[]"))
            except ValueError:
                return False
            return True
        return False

    def origin_allowed(self, origin: str, host: str) -> bool:
        """Whether an ``Origin`` header value is allowed for a request to ``host`` (its ``Host`` header)."""
        if origin.strip().lower() == "null":
            return "null" in self._origins
        parsed = _parse_origin(origin)
        if parsed is None:
            return False
        scheme, name, port = parsed
        try:
            host_name, host_port = split_authority(host)
        except ValueError:
            return False
        if host_name == name and (host_port or _DEFAULT_PORTS.get(scheme)) == port:
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
        if self.tokens is not None:
            caller = self._authenticate(scope)
            if caller is None:
                missing = not _header(scope, b"authorization")
                challenge = 'Bearer realm="toolcode"' + ("" if missing else ', error="invalid_token"')
                text = "missing bearer token" if missing else "invalid bearer token"
                await self._refuse(scope, send, 401, text, headers=[(b"www-authenticate", challenge.encode())])
                return
            scope[CALLER_SCOPE_KEY] = caller
        await self.app(scope, receive, send)

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
        client = cast(Sequence[Any] | None, scope.get("client"))
        extra = {"value": _clip(seen, 100)} if seen else {}
        log.warning(
            "http.request_refused",
            status=status,
            reason=text,
            client=str(client[0]) if client else None,
            path=_clip(str(scope.get("path", "")), 100),
            **extra,
        )
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": text})
            return
        body = (text + "\n").encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    *headers,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def http_caller(ctx: ServerRequestContext[Any, Any] | Any) -> str | None:
    """The authenticated caller of an MCP request served over HTTP.

    Args:
        ctx: The request context a low-level handler receives.

    Returns:
        The name of the bearer token that authenticated the HTTP request carrying this MCP
        request; ``None`` over stdio, in-process, or when the door has no tokens.
    """
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    if not isinstance(scope, Mapping):
        return None
    value = cast(Mapping[str, Any], scope).get(CALLER_SCOPE_KEY)
    return value if isinstance(value, str) else None
