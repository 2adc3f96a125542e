"""Addresses of the HTTP door: the address to bind, ``Host`` values and ``Origin`` s, checked and made canonical."""

from __future__ import annotations

import ipaddress
import re

from toolcode.exceptions import ConfigurationError, clip

__all__ = [
    "DEFAULT_PORTS",
    "LOOPBACK_NAMES",
    "allowed_host",
    "canon_name",
    "check_bind",
    "ip_of",
    "is_loopback",
    "is_wildcard",
    "normalize_origin",
    "parse_http_address",
    "parse_origin",
    "split_authority",
]

_HOSTNAME_RE = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?\.?")
_PORT_RE = re.compile(r"[0-9]{1,5}")
_ORIGIN_RE = re.compile(r"([a-z][a-z0-9+.-]*)://(\[[^\]/]*\]|[^:/\[\]]+)(?::([0-9]{1,5}))?")
DEFAULT_PORTS = {"http": 80, "https": 443}
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def ip_of(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address ``text`` spells (no brackets), or ``None`` when it is not one."""
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _is_ipv6(text: str) -> bool:
    return isinstance(ip_of(text), ipaddress.IPv6Address)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address: ``localhost``, any of 127.0.0.0/8, or ``::1``.

    Args:
        host: A host name or IP address (an IPv6 address with or without brackets).

    Returns:
        ``True`` only for those; any other name, the empty host and wildcard addresses are not.
    """
    ip = ip_of(host.strip("[]"))
    return host.lower() == "localhost" or (ip is not None and ip.is_loopback)


def is_wildcard(host: str) -> bool:
    ip = ip_of(host.strip("[]"))
    return not host or (ip is not None and ip.is_unspecified)


def _parse_port(text: str, value: str) -> int:
    if not _PORT_RE.fullmatch(text) or int(text) > 65535:
        raise ValueError(f"port {clip(text, 20)!r} in {clip(value, 80)!r} is not a number from 0 to 65535")
    return int(text)


def canon_name(name: str) -> str:
    """Lower case, IP literals in their compressed form (IPv6 in brackets), no trailing dot."""
    name = name.lower()
    ip = ip_of(name[1:-1] if name.startswith("[") and name.endswith("]") else name)
    if ip is None:
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
        if not _is_ipv6(name[1:-1]):
            raise ValueError(f"{clip(value, 80)!r} does not hold an IPv6 address in brackets")
    else:
        name, sep, port = text.partition(":")
        rest = sep + port
        if ":" in port:
            raise ValueError(f"{clip(value, 80)!r}: put an IPv6 address in brackets, e.g. [::1]:8808")
        if not _HOSTNAME_RE.fullmatch(name):
            raise ValueError(f"{clip(value, 80)!r} is not a host name or IP address")
    if not rest:
        return canon_name(name), None
    if not rest.startswith(":"):
        raise ValueError(f"{clip(value, 80)!r} is not HOST or HOST:PORT")
    return canon_name(name), _parse_port(rest[1:], value)


def allowed_host(value: str) -> str:
    """An ``--allow-host`` value, checked (:func:`split_authority`).

    Raises:
        ValueError: Not a host, or not ``HOST:PORT``.
    """
    split_authority(value)
    return value


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
            raise ValueError(f"expected [IPv6]:PORT, got {clip(value, 80)!r}")
        host, port_text = value[1:end], value[end + 2 :]
        if not _is_ipv6(host):
            raise ValueError(f"{clip(host, 80)!r} in brackets is not an IPv6 address")
        return host, _parse_port(port_text, value)
    host, sep, port_text = value.rpartition(":")
    if not sep:
        raise ValueError(f"expected HOST:PORT, [IPv6]:PORT or :PORT, got {clip(value, 80)!r}")
    if ":" in host:
        raise ValueError(f"{clip(value, 80)!r}: put an IPv6 address in brackets, e.g. [::1]:8808")
    if host and not _HOSTNAME_RE.fullmatch(host.lower()):
        raise ValueError(f"{clip(host, 80)!r} is not a host name or IP address (use :PORT for all interfaces)")
    return host, _parse_port(port_text, value)


def parse_origin(value: str) -> tuple[str, str, int] | None:
    """``scheme://host[:port]`` → (scheme, canonical host, port with the scheme's default filled in)."""
    m = _ORIGIN_RE.fullmatch(value.strip().lower())
    if m is None:
        return None
    scheme, name, port_text = m.group(1), m.group(2), m.group(3)
    if not (_is_ipv6(name[1:-1]) if name.startswith("[") else _HOSTNAME_RE.fullmatch(name)):
        return None
    if port_text is not None:
        port = int(port_text)
        if port > 65535:
            return None
    else:
        port = DEFAULT_PORTS.get(scheme, 0)
    return scheme, canon_name(name), port


def normalize_origin(value: str) -> str:
    """An ``--allow-origin`` value in the form browsers send: ``scheme://host[:port]`` or ``null``.

    Raises:
        ValueError: Not an origin (a path, a wildcard, no scheme).
    """
    if value.strip().lower() == "null":
        return "null"
    parsed = parse_origin(value)
    if parsed is None:
        raise ValueError(f"{clip(value, 80)!r} is not an origin like https://app.example.com or http://host:8080")
    scheme, name, port = parsed
    return f"{scheme}://{name}" if port == DEFAULT_PORTS.get(scheme) else f"{scheme}://{name}:{port}"


def check_bind(host: str, tokens: object | None, *, hint: str = "pass tokens=BearerTokens(...)") -> None:
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
            f"with every configured server. Configure the tokens callers must present ({hint}), or bind to 127.0.0.1; "
            "see 'Running the HTTP door' in docs/security.md",
        )
