"""The private parts of dependencies that toolcode and toolrun rely on are still where they were.

Each lives behind one compat module (``toolcode._compat_monty``, ``toolrun._compat_mcp``,
``toolrun._compat_referencing``, ``toolrun._compat_httpx``, ``toolcode.server._compat_uvicorn``, the provider peek in
``toolcode._otel``); these tests fail loudly on an upgrade that moves one, before anything else breaks in a subtler way.
"""

from __future__ import annotations

import inspect
from importlib.metadata import version
from pathlib import Path

import opentelemetry.trace
import pytest
from mcp import ClientSession
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

from toolcode._compat_monty import find_monty_binary
from toolcode.server._compat_uvicorn import CHECKED_ON as UVICORN_CHECKED_ON
from toolrun._compat_httpx import CHECKED_ON as HTTPX_CHECKED_ON
from toolrun._compat_httpx import environment_proxies, wrap_network_backend
from toolrun._compat_mcp import TransportStreams
from toolrun._compat_referencing import Resolver, base_uri


def test_pydantic_monty_resolves_its_worker_binary() -> None:
    binary = find_monty_binary(None)
    assert Path(binary).is_file(), binary
    assert version("pydantic-monty").startswith("1.4."), version("pydantic-monty")


def test_the_mcp_client_session_seams_are_there() -> None:
    source = inspect.getsource(ClientSession)
    for seam in ("self._dispatcher:", "self._x_mcp_header_maps:", "self._stamp:"):
        assert seam in source, seam
    dispatcher = inspect.getsource(JSONRPCDispatcher)
    assert "def send_raw_request(" in dispatcher and "self._closed" in dispatcher
    assert TransportStreams is not None
    assert version("mcp").startswith("2.3."), version("mcp")


def test_referencing_resolvers_have_a_base_uri() -> None:
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012

    registry = Registry().with_resource("urn:doc", DRAFT202012.create_resource({"$defs": {"a": {}}}))
    resolver = registry.resolver("urn:doc")
    assert isinstance(resolver, Resolver)
    assert base_uri(resolver) == "urn:doc"
    assert version("referencing").startswith("0.3"), version("referencing")


def test_the_httpx2_transport_opens_its_connections_through_a_backend_it_can_be_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # toolrun._openapi_connect checks the address of every connection to a server a document chose.
    import anyio
    import httpcore2
    import httpx2

    class Asked(Exception):
        pass

    class Backend(httpcore2.AsyncNetworkBackend):
        def __init__(self, inner: httpcore2.AsyncNetworkBackend) -> None:
            assert isinstance(inner, httpcore2.AsyncNetworkBackend)

        async def connect_tcp(self, host: str, port: int, **kwargs: object) -> httpcore2.AsyncNetworkStream:
            raise Asked(host, port)

    async def main() -> None:
        transport = httpx2.AsyncHTTPTransport()
        wrap_network_backend(transport, Backend)
        async with httpx2.AsyncClient(transport=transport) as client:
            with pytest.raises(Asked) as caught:  # raised as it is, not mapped to an httpx2 error
                await client.get("http://api.example.test:8080/x")
        assert caught.value.args == ("api.example.test", 8080)

    anyio.run(main)
    with pytest.raises(TypeError):
        wrap_network_backend(httpx2.AsyncHTTPTransport(proxy="http://proxy.test:3128"), Backend)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        for variant in (name, name.lower()):
            monkeypatch.delenv(variant, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "proxy.test:3128")
    monkeypatch.setenv("NO_PROXY", "internal.test")
    assert environment_proxies() == {"https://": "http://proxy.test:3128", "all://*internal.test": None}
    for package in ("httpx2", "httpcore2"):
        assert version(package).startswith(HTTPX_CHECKED_ON + "."), version(package)


def test_the_opentelemetry_provider_peek_is_there() -> None:
    # toolcode._otel reads this module global on every call to skip the API's own lookup.
    assert hasattr(opentelemetry.trace, "_TRACER_PROVIDER")


def test_the_uvicorn_h11_protocol_seams_are_there() -> None:
    # toolcode.server._compat_uvicorn subclasses H11Protocol and reads these to time a request's arrival.
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    source = inspect.getsource(H11Protocol)
    for seam in (
        "def connection_made(",
        "def data_received(",
        "def connection_lost(",
        "self.conn = h11.Connection(",
        "self.transport = transport",
        "self.loop = ",
    ):
        assert seam in source, seam
    assert h11.IDLE is not h11.SEND_BODY
    assert version("uvicorn").startswith(UVICORN_CHECKED_ON + "."), version("uvicorn")


def test_the_uvicorn_stop_seams_are_there() -> None:
    # toolcode.server._compat_uvicorn closes uvicorn's listeners and keeps it from raising a handled signal again.
    import signal
    from types import SimpleNamespace

    import uvicorn

    from toolcode.server._compat_uvicorn import take_signals

    assert "in reversed(self._captured_signals)" in inspect.getsource(uvicorn.Server.capture_signals)
    assert "self.servers" in inspect.getsource(uvicorn.Server.startup)
    server = SimpleNamespace(_captured_signals=[signal.SIGTERM.value])
    assert take_signals(server) == [signal.SIGTERM]  # type: ignore[arg-type]
    assert server._captured_signals == []  # cleared: not raised again


def test_sse_starlette_leaves_its_streams_to_the_door_while_held() -> None:
    # sse_starlette ends every event stream when uvicorn is told to exit unless its switch is off.
    from sse_starlette.sse import AppStatus

    from toolcode.server._compat_uvicorn import streams_left_to_the_door

    assert "enable_automatic_graceful_drain" in inspect.getsource(AppStatus.handle_exit)
    assert AppStatus.enable_automatic_graceful_drain
    with streams_left_to_the_door():
        with streams_left_to_the_door():  # two doors in one process
            assert not AppStatus.enable_automatic_graceful_drain
        assert not AppStatus.enable_automatic_graceful_drain  # the other still serves
    assert AppStatus.enable_automatic_graceful_drain
