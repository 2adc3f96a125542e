"""Where an OpenAPI call goes: an origin, a base path, and exactly the segments of the operation's path template.

A path parameter is data: its value fills one segment of the template, never more and never a
move through the path. The value comes percent-encoded (``/`` is ``%2F``), and a segment that a
value fills may not be empty, ``.`` or ``..``: HTTP clients collapse ``items/..`` to its parent,
servers merge ``//``, and encoding the dots would not help, since RFC 3986 (section 6.2.2.2)
and the WHATWG URL standard read ``%2E%2E`` as ``..`` too. Nor may a value hold ``.`` or ``..``
between separators (``x/../..`` is the segment ``x%2F..%2F..``): nginx decodes ``%2F`` before it
resolves dot segments, IIS reads a backslash as ``/``, some applications apply NFKC (full-width dots
and slashes), and each of them turns such a segment into a move. :meth:`PathTemplate.fill` refuses
such a value, naming its parameter; :meth:`PathTemplate.check` then verifies that the URL the HTTP
client is about to send, however it was built, has the template's origin, its base path, and
exactly the template's segments, each one filled by its values alone.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import unicodedata
from collections.abc import Mapping
from typing import Final, NamedTuple
from urllib.parse import unquote

import httpx2

__all__ = ["PathError", "PathTemplate", "non_public_address", "non_public_host", "origin", "template_problem"]

_PLACEHOLDER: Final = re.compile(r"\{([^{}/]+)\}")
_MOVES: Final = frozenset({"", ".", "..", "%2e", ".%2e", "%2e.", "%2e%2e"})
"""Segments a URL reads as a move through the path (compared in lower case); ``""`` merges with its neighbour."""
_SEPARATORS: Final = re.compile(r"[/\\]")
"""What servers and proxies read as a separator in a decoded path (IIS and nginx on Windows: ``\\``)."""
_SHOWN: Final = 60


def origin(url: str | httpx2.URL) -> str:
    """A URL's origin as ``scheme://host[:port]``: lower case, no default port, no user information.

    >>> origin("HTTPS://API.Example.org:443/v1?x=1"), origin("http://user:pw@[::1]:8080/")
    ('https://api.example.org', 'http://[::1]:8080')

    Raises:
        httpx2.InvalidURL: If ``url`` is not a URL.
    """
    parsed = url if isinstance(url, httpx2.URL) else httpx2.URL(url)
    host = parsed.host
    if ":" in host:
        host = f"[{host}]"
    return f"{parsed.scheme}://{host}{f':{parsed.port}' if parsed.port is not None else ''}"


def non_public_host(url: str | httpx2.URL) -> str | None:
    """The host of ``url`` when it names a special-purpose address (``None`` for a public one).

    ``localhost`` and ``*.localhost``, and every address :func:`non_public_address` refuses, also
    in the forms the resolver accepts (``2130706433``, ``0x7f.1``). A name that only resolves to
    such an address is not seen here: the connection is checked for that
    (:mod:`~toolrun._openapi_connect`).

    >>> non_public_host("http://169.254.169.254/latest"), non_public_host("https://api.example.org")
    ('169.254.169.254', None)

    Raises:
        httpx2.InvalidURL: If ``url`` is not a URL.
    """
    host = (url if isinstance(url, httpx2.URL) else httpx2.URL(url)).host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return host
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        try:  # what getaddrinfo reads as IPv4 too: one number, octal or hex parts
            address = ipaddress.ip_address(socket.inet_aton(host))
        except OSError:
            return None
    return host if non_public_address(address) else None


_NAT64: Final = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
"""IPv6 prefixes that a NAT64 gateway turns into the IPv4 address in their last 32 bits."""
_IPV4_COMPATIBLE: Final = ipaddress.IPv6Network("::/96")
"""The deprecated IPv4-compatible IPv6 addresses (``::127.0.0.1``)."""


def non_public_address(address: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether ``address`` (an IP address) is not globally reachable: a connection into this host's network.

    Loopback, private, link-local such as the cloud metadata service ``169.254.169.254``, shared,
    unspecified, reserved and multicast addresses; an IPv6 address that carries an IPv4 address
    (IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible ``::a.b.c.d``, 6to4, NAT64 ``64:ff9b::/96``)
    as that IPv4 address. An IPv6 zone (``fe80::1%eth0``) is ignored; what is not an IP address
    counts as not public.

    >>> non_public_address("::ffff:169.254.169.254"), non_public_address("93.184.216.34")
    (True, False)
    """
    if isinstance(address, str):
        try:
            address = ipaddress.ip_address(address.partition("%")[0])
        except ValueError:
            return True
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and (address in _IPV4_COMPATIBLE or any(address in n for n in _NAT64)):
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            address = embedded
    return not address.is_global or address.is_multicast


def template_problem(template: str) -> str | None:
    """Why an OpenAPI path cannot be a path template (``None`` when it can).

    A template starts with ``/`` and none of its own segments is ``.`` or ``..``.
    """
    if not template.startswith("/"):
        return "the path does not start with '/'"
    path = template[: _path_end(template)]
    if ("." in path or "%" in path) and any(s and s.lower() in _MOVES for s in path.split("/")):
        return "the path has a '.' or '..' segment"
    return None


def _path_end(template: str) -> int:
    # A query or fragment some documents write into a path is not part of its segments.
    return min((i for i in (template.find("?"), template.find("#")) if i >= 0), default=len(template))


class PathError(ValueError):
    """A request URL that is not its operation's path template with its segments filled.

    Attributes:
        params: The path parameters (names on the wire) whose segment is wrong; every path
            parameter of the template when the segments cannot be matched up; empty when the
            fault is in the template's own text.
        reason: What is wrong.
    """

    def __init__(self, params: tuple[str, ...], reason: str) -> None:
        self.params = params
        self.reason = reason
        super().__init__(reason)


class _Segment(NamedTuple):
    text: str
    """As the template has it."""
    params: tuple[str, ...]
    """The parameters it holds (none: a literal segment)."""
    pattern: re.Pattern[str] | None
    """For a segment with parameters: its literal parts fixed, each parameter any text (decoded)."""


def _segment(text: str) -> _Segment:
    params = tuple(_PLACEHOLDER.findall(text))
    if not params:
        return _Segment(text, (), None)
    parts = _PLACEHOLDER.split(text)[::2]  # the literal text around the placeholders
    return _Segment(text, params, re.compile(".*".join(re.escape(unquote(p)) for p in parts), re.DOTALL))


def _move_inside(segment: str) -> bool:
    """Whether ``segment`` (as sent) is or holds ``.`` or ``..`` between separators once decoded and NFKC-normalised."""
    decoded = unquote(segment)
    if not decoded.isascii():
        decoded = unicodedata.normalize("NFKC", decoded)  # full-width dots and slashes, the two-dot leader
    return "." in decoded and any(p in (".", "..") for p in _SEPARATORS.split(decoded))


def _shown(segment: str) -> str:
    return segment if len(segment) <= _SHOWN else segment[: _SHOWN - 1] + "…"


class PathTemplate:
    """An operation's URL: a base URL, then the segments of its path template.

    Built once per operation and base; :meth:`fill` makes the URL of a call, :meth:`check`
    verifies the URL a request is about to go to.
    """

    __slots__ = ("_base", "_base_path", "_segments", "_suffix", "origin", "params", "template")

    def __init__(self, base: str, template: str) -> None:
        """Parse the base URL and the template.

        Args:
            base: The base URL (scheme, host, and an optional path prefix; no query).
            template: The operation's path, e.g. ``/tenants/{tenant}/items/{id}``.

        Raises:
            httpx2.InvalidURL: If ``base`` is not a URL.
        """
        url = httpx2.URL(base)
        self.origin = origin(url)
        """The origin every call goes to."""
        self.template = template
        """The operation's path template."""
        self._base = base.rstrip("/")
        self._base_path = url.raw_path.decode("ascii").partition("?")[0].rstrip("/")
        # A query or fragment some documents write into a path stays as it is, after the segments.
        cut = _path_end(template)
        path, self._suffix = template[:cut], template[cut:]
        self._segments = tuple(_segment(s) for s in path.split("/")[1:])
        self.params = tuple(p for s in self._segments for p in s.params)
        """The path parameters, in template order."""

    def fill(self, values: Mapping[str, str]) -> str:
        """The URL of a call: the base, then each segment with its parameters' values in place.

        Args:
            values: Each path parameter's value, serialised and percent-encoded.

        Returns:
            The URL (without the call's query parameters).

        Raises:
            PathError: If a segment a value fills would be empty, ``.`` or ``..``, or would hold a
                ``.`` or ``..`` between separators once decoded.
            ValueError: If a parameter of the template has no value.
        """

        def value(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in values:
                raise ValueError(f"path parameter {name!r} is missing")
            return values[name]

        filled: list[str] = []
        for seg in self._segments:
            if not seg.params:
                filled.append(seg.text)
                continue
            text = _PLACEHOLDER.sub(value, seg.text)
            if text.lower() in _MOVES:
                raise PathError(
                    seg.params,
                    f"the value makes the path segment {_shown(text)!r}, which a URL reads as a move through the "
                    "path, not as a name: a path parameter fills exactly one segment, never empty, '.' or '..'",
                )
            if _move_inside(text):
                raise PathError(
                    seg.params,
                    f"the value makes the path segment {_shown(text)!r}, which holds '.' or '..' between slashes: "
                    "a server or proxy that decodes the path first (nginx, IIS) reads it as a move through the path; "
                    "a path parameter fills exactly one segment",
                )
            filled.append(text)
        return self._base + "/" + "/".join(filled) + _PLACEHOLDER.sub(value, self._suffix)

    def check(self, url: httpx2.URL) -> None:
        """Verify that ``url`` is this template's origin and base path, then exactly its segments.

        Each literal segment must be the template's (compared decoded), and each segment with
        parameters one segment matching the template's literal parts, never empty, ``.`` or
        ``..`` (nor their percent-encoded forms), and holding no ``.`` or ``..`` between
        separators once decoded.

        Args:
            url: The URL a request is about to be sent to.

        Raises:
            PathError: If it is not.
        """
        got = origin(url)
        if got != self.origin:
            raise PathError(self.params, f"the request would go to {got}, not to {self.origin}")
        raw = url.raw_path.decode("ascii").partition("?")[0]
        if not raw.startswith(self._base_path + "/"):
            raise PathError(self.params, f"the request path {_shown(raw)!r} is not under the base path")
        sent = raw[len(self._base_path) + 1 :].split("/")
        if len(sent) != len(self._segments):
            raise PathError(
                self.params,
                f"the request path {_shown(raw)!r} has {len(sent)} segments after the base path where "
                f"{self.template!r} has {len(self._segments)}",
            )
        for seg, text in zip(self._segments, sent, strict=True):
            if seg.pattern is None:
                fits = unquote(text) == unquote(seg.text)
            else:
                fits = (
                    text.lower() not in _MOVES
                    and not _move_inside(text)
                    and seg.pattern.fullmatch(unquote(text)) is not None
                )
            if not fits:
                raise PathError(
                    seg.params, f"the request path has {_shown(text)!r} where {self.template!r} has {seg.text!r}"
                )
