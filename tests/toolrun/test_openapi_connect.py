"""The connections to a server an OpenAPI document chose: only to globally reachable addresses, checked when connecting.

No network: the resolver is patched for the names used here, and the backend under the check is a
stand-in that records where it was asked to connect. Calls over real HTTP are in
tests/integration/test_openapi_service.py.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from typing import Any

import httpcore2
import httpx2
import pytest

from toolrun._openapi_connect import AddressRefused, PublicOnlyBackend, public_client
from toolrun._openapi_target import non_public_address, non_public_host

pytestmark = pytest.mark.anyio

NAME = "api.chosen.test"


@pytest.fixture
def resolves_to(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Make :data:`NAME` resolve to the given addresses (in that order), and only that name."""

    def setup(*addresses: str) -> None:
        real = socket.getaddrinfo

        def getaddrinfo(host: bytes | str | None, port: Any, *args: Any, **kwargs: Any) -> Any:
            name = host.decode() if isinstance(host, bytes) else host
            if name != NAME:
                return real(host, port, *args, **kwargs)
            if not addresses:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            out: list[Any] = []
            for a in addresses:
                if ":" in a:
                    out.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (a, port, 0, 0)))
                else:
                    out.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)))
            return out

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    return setup


class _Stream(httpcore2.AsyncNetworkStream):
    def __init__(self, peer: tuple[Any, ...] | None) -> None:
        self.peer = peer
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True

    def get_extra_info(self, info: str) -> Any:
        return self.peer if info == "server_addr" else None


class _Inner(httpcore2.AsyncNetworkBackend):
    """Records each connect; ``refuse`` fail to connect, the others answer from ``peers`` (default: themselves)."""

    def __init__(self, refuse: Iterable[str] = (), peers: dict[str, tuple[Any, ...] | None] | None = None) -> None:
        self.calls: list[tuple[str, int]] = []
        self.refuse = set(refuse)
        self.peers = peers or {}
        self.streams: list[_Stream] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        self.calls.append((host, port))
        if host in self.refuse:
            raise httpcore2.ConnectError("connection refused")
        self.streams.append(_Stream(self.peers.get(host, (host, port))))
        return self.streams[-1]


@pytest.mark.parametrize(
    "addresses",
    [
        ("93.184.216.34", "169.254.169.254"),  # one public, one the metadata service: refused all the same
        ("127.0.0.1",),
        ("10.1.2.3",),
        ("100.64.0.1",),  # shared (carrier-grade NAT)
        ("0.0.0.0",),
        ("::1",),
        ("::ffff:169.254.169.254",),  # IPv4-mapped
        ("::127.0.0.1",),  # IPv4-compatible
        ("64:ff9b::a9fe:a9fe",),  # NAT64 of 169.254.169.254
        ("2002:a9fe:a9fe::1",),  # 6to4 of 169.254.169.254
        ("fe80::1%1",),
        ("fd00::1",),
    ],
)
async def test_a_name_with_any_address_in_this_host_s_network_is_refused_before_connecting(
    resolves_to: Callable[..., None], addresses: tuple[str, ...]
) -> None:
    resolves_to(*addresses)
    inner = _Inner()
    with pytest.raises(AddressRefused) as caught:
        await PublicOnlyBackend(inner).connect_tcp(NAME, 80, timeout=5)
    assert caught.value.host == NAME and caught.value.address == addresses[-1]
    assert inner.calls == []  # not even a connection attempt


async def test_the_addresses_checked_are_the_ones_connected_to(resolves_to: Callable[..., None]) -> None:
    # Never the name again (a second lookup could be answered otherwise): each checked address, in order.
    resolves_to("93.184.216.34", "2606:4700::1111")
    inner = _Inner(refuse={"93.184.216.34"})
    stream = await PublicOnlyBackend(inner).connect_tcp(NAME, 443, timeout=5)
    assert inner.calls == [("93.184.216.34", 443), ("2606:4700::1111", 443)]
    assert stream is inner.streams[-1] and not inner.streams[-1].closed


async def test_a_connection_whose_peer_is_in_this_host_s_network_is_closed_and_refused(
    resolves_to: Callable[..., None],
) -> None:
    # Whatever sits under the check (a transparent redirect), the socket's own peer address decides.
    resolves_to("93.184.216.34")
    for peer in (("127.0.0.1", 80), ("::ffff:127.0.0.1", 80, 0, 0), None):
        inner = _Inner(peers={"93.184.216.34": peer})
        with pytest.raises(AddressRefused):
            await PublicOnlyBackend(inner).connect_tcp(NAME, 80, timeout=5)
        assert inner.streams[-1].closed


async def test_a_name_that_does_not_resolve_cannot_be_connected_to(resolves_to: Callable[..., None]) -> None:
    resolves_to()
    with pytest.raises(httpcore2.ConnectError, match=r"cannot resolve 'api\.chosen\.test'"):
        await PublicOnlyBackend(_Inner()).connect_tcp(NAME, 80, timeout=5)
    with pytest.raises(AddressRefused):
        await PublicOnlyBackend(_Inner()).connect_unix_socket("/run/docker.sock")


async def test_the_client_refuses_through_its_transport_and_never_follows_a_redirect(
    resolves_to: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        for variant in (name, name.lower()):
            monkeypatch.delenv(variant, raising=False)
    resolves_to("169.254.169.254")
    async with public_client(httpx2.Timeout(5), {}) as client:
        assert client.follow_redirects is False
        with pytest.raises(AddressRefused) as caught:
            await client.get(f"http://{NAME}/latest/meta-data/")
    assert caught.value.address == "169.254.169.254"
    # An environment proxy would resolve the name itself: refused, whatever the name resolves to here.
    monkeypatch.setenv("HTTPS_PROXY", "http://user:proxy-secret@proxy.internal:3128")
    resolves_to("93.184.216.34")
    async with public_client(httpx2.Timeout(5), {}) as client:
        with pytest.raises(AddressRefused) as caught:
            await client.get(f"https://{NAME}/v1")
    assert caught.value.address is None and "proxy-secret" not in str(caught.value)


def test_host_names_and_addresses_in_this_host_s_network() -> None:
    for address in ("169.254.169.254", "::ffff:7f00:1", "64:ff9b::7f00:1", "224.0.0.1", "not an address"):
        assert non_public_address(address), address
    for address in ("93.184.216.34", "2606:4700::1111", "64:ff9b::808:808"):
        assert not non_public_address(address), address
    assert non_public_host("http://[::ffff:169.254.169.254]/") == "::ffff:169.254.169.254"
    assert non_public_host("http://0xa9.0xfe.0xa9.0xfe/") is not None
    assert non_public_host("http://metadata.attacker.example/") is None  # a name: checked when connecting
