"""The private parts of the ``mcp`` SDK that toolrun and toolcode rely on are still there.

They are used in one module each (``toolrun/_mcp_wire.py``; ``ctx.session._connection`` in
``toolcode/server/_server.py``), and the dependency is pinned to the minor version they were
checked on. This test fails the day an upgrade moves them, before anything else breaks subtly.
"""

from __future__ import annotations

import inspect
import re
from importlib.metadata import version
from pathlib import Path

from mcp import ClientSession
from mcp.server.session import ServerSession
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_mcp_is_the_pinned_minor_version() -> None:
    pins = []
    for package in ("toolrun", "toolcode"):
        text = (ROOT / "packages" / package / "pyproject.toml").read_text()
        m = re.search(r'"mcp>=(\d+)\.(\d+)(?:\.\d+)?,<(\d+)\.(\d+)"', text)
        assert m, f"{package} must pin mcp to one minor version"
        pins.append(tuple(int(g) for g in m.groups()))
    assert len(set(pins)) == 1
    lo_major, lo_minor, hi_major, hi_minor = pins[0]
    assert (hi_major, hi_minor) == (lo_major, lo_minor + 1), "the pin must cover exactly one minor version"
    major, minor = (int(p) for p in version("mcp").split(".")[:2])
    assert (major, minor) == (lo_major, lo_minor), version("mcp")


def test_client_session_private_seams() -> None:
    # raw_request: the session stamps a request (``self._stamp(data, opts)``) and hands it to its
    # dispatcher unvalidated; learn_param_headers fills ``self._x_mcp_header_maps``.
    init = inspect.getsource(ClientSession.__init__)
    for attribute in ("self._stamp", "self._dispatcher", "self._x_mcp_header_maps"):
        assert attribute in init, attribute
    assert "self._stamp(data, opts)" in inspect.getsource(ClientSession)
    # The dispatcher sends a raw request and knows when its transport has closed.
    params = list(inspect.signature(JSONRPCDispatcher.send_raw_request).parameters)
    assert params[1:4] == ["method", "params", "opts"], params
    sources = "".join(inspect.getsource(c) for c in JSONRPCDispatcher.__mro__ if c.__module__.startswith("mcp."))
    assert "self._closed = True" in sources


def test_stdio_process_helpers() -> None:
    # toolrun/_mcp_stdio.py starts and stops a server with the SDK's own helpers and reads its stdout itself.
    from mcp.client import stdio

    create = inspect.signature(stdio._create_platform_compatible_process)  # pyright: ignore[reportPrivateUsage]
    assert list(create.parameters) == ["command", "args", "env", "errlog", "cwd"]
    for name in ("_drain_stdout", "_stop_server_process", "_get_executable_command"):
        assert len(inspect.signature(getattr(stdio, name)).parameters) == 1, name
    assert isinstance(stdio._WRITER_FLUSH_TIMEOUT, float)  # pyright: ignore[reportPrivateUsage]


def test_server_session_keeps_its_connection() -> None:
    assert "self._connection" in inspect.getsource(ServerSession.__init__)
