"""The HTTP client for the servers a document chooses: it connects only to globally reachable addresses.

Without ``baseUrl``, an OpenAPI call goes to the server URL the document names. On the document's
own origin that is the configuration's word (the operator named the document's URL); on another
origin it is the document's alone, and the document is hostile input. Its host may be a *name*
that resolves into this host's network (``metadata.attacker.example`` → ``169.254.169.254``), or
one that resolves elsewhere when checked and there when connected (DNS rebinding), which no check
of the URL can see. So the check is made where the address is known, when connecting:

- :class:`PublicOnlyBackend` resolves the name itself, refuses it when *any* of its addresses is
  not globally reachable (:func:`~toolrun._openapi_target.non_public_address`: loopback, private,
  link-local, shared, reserved, multicast, and the IPv6 forms that carry such an IPv4 address),
  then connects to those checked addresses themselves (never to the name again, so nothing can
  be rebound in between), and checks the peer address of the socket it got. Nothing is sent, and
  no connection is attempted, before the check. TLS still verifies the certificate against the
  host name (httpcore passes the origin's name to ``start_tls``).
- Redirects are not followed (``follow_redirects=False``): no request leaves for another URL.
- Connection reuse: the pool keeps a connection per origin and opens each one through this
  backend; a kept connection is one to an address that was checked, whatever the name resolves
  to later. The client is not shared with the one for trusted origins (``baseUrl``, the
  document's own), so no connection crosses between them.
- A proxy from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``) would resolve the
  name itself, where no check here can see the address: a call it would carry is refused before
  anything is sent (:class:`AddressRefused` with ``address=None``). A host in ``NO_PROXY`` is
  connected to directly, and checked.

A refusal raises :class:`AddressRefused`, which is no ``httpx2`` error: the provider turns it into
:class:`~toolrun.AddressRefusedError` naming the tool and the host.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

import anyio
import httpcore2
import httpx2

from toolrun._compat_httpx import environment_proxies, wrap_network_backend
from toolrun._openapi_target import non_public_address

__all__ = ["AddressRefused", "PublicOnlyBackend", "public_client"]

_SHOWN_HOST: Final = 100


class AddressRefused(Exception):  # internal: the provider raises AddressRefusedError in its place
    """A connection to a server a document chose was refused before anything was sent.

    Attributes:
        host: The host of the URL (clipped to 100 characters).
        address: The address that is not globally reachable; ``None`` when the call would go
            through a proxy of the environment, where the address cannot be checked.
    """

    def __init__(self, host: str, address: str | None) -> None:
        self.host = host[:_SHOWN_HOST]
        self.address = address
        super().__init__(f"{self.host!r}: {address or 'through a proxy'}")


class PublicOnlyBackend(httpcore2.AsyncNetworkBackend):
    """A network backend that connects only to globally reachable addresses (see the module)."""

    def __init__(self, inner: httpcore2.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = await _resolve(host, port, timeout)
        for address in addresses:
            if non_public_address(address):
                raise AddressRefused(host, address)
        failed: Exception | None = None
        for address in addresses:  # in the resolver's order of preference
            try:
                stream = await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as e:
                failed = e
                continue
            peer: object = stream.get_extra_info("server_addr")
            connected = str(cast(tuple[object, ...], peer)[0]) if isinstance(peer, tuple) and peer else None
            if connected is None or non_public_address(connected):
                await stream.aclose()
                raise AddressRefused(host, connected or "an address the connection does not tell")
            return stream
        assert failed is not None
        raise failed

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.AsyncNetworkStream:
        raise AddressRefused(path, "a Unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


async def _resolve(host: str, port: int, timeout: float | None) -> list[str]:
    """Every address ``host`` resolves to for TCP, in the resolver's order, each once."""
    try:
        with anyio.fail_after(timeout):
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except TimeoutError:
        raise httpcore2.ConnectTimeout(f"resolving {host[:_SHOWN_HOST]!r} took longer than {timeout} s") from None
    except (OSError, UnicodeError) as e:
        raise httpcore2.ConnectError(f"cannot resolve {host[:_SHOWN_HOST]!r}: {e}") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise httpcore2.ConnectError(f"{host[:_SHOWN_HOST]!r} resolves to no address")
    return addresses


class _ThroughProxy(httpx2.AsyncBaseTransport):
    """Where the environment would send a call through a proxy: refused (the proxy would resolve the name)."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        raise AddressRefused(request.url.host, None)


def public_client(timeout: httpx2.Timeout, headers: Mapping[str, str]) -> httpx2.AsyncClient:
    """An HTTP client that connects only to globally reachable addresses, never through a proxy.

    Otherwise as the provider's client for trusted origins: no redirects followed, the
    environment's certificate settings (``SSL_CERT_FILE``, ``SSL_CERT_DIR``) read.
    """
    transport = httpx2.AsyncHTTPTransport(trust_env=True)
    wrap_network_backend(transport, PublicOnlyBackend)
    # A pattern without a proxy (from NO_PROXY) takes the transport above; one with a proxy is refused.
    mounts = {p: None if proxy is None else _ThroughProxy() for p, proxy in environment_proxies().items()}
    return httpx2.AsyncClient(
        timeout=timeout, follow_redirects=False, headers=headers, transport=transport, mounts=mounts
    )
