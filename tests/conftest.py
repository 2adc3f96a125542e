"""Fixtures every test folder may use: a real ``redis-server`` on a free local port.

Also the Hypothesis settings of the whole suite: property tests judge behaviour, never speed, so no
example has a deadline and data generation is never "too slow" (a busy machine must not fail them).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import structlog
from hypothesis import HealthCheck, settings

settings.register_profile("toolcode", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("toolcode")


@pytest.fixture(autouse=True)
def _logging_configuration_stays_with_its_test() -> Iterator[None]:
    # A test that runs the CLI configures structlog for the whole process (warnings only, to
    # stderr): restore what was there, so a later test in the same worker sees what it set up.
    # (``configure`` with the defaults still marks structlog configured: the packages' lines would
    # then go to its default logger, on stdout, in every later test.)
    configured, before = structlog.is_configured(), structlog.get_config()
    yield
    if configured:
        structlog.configure(**before)
    else:
        structlog.reset_defaults()


# Waits for a server to start or answer are bounds on a hang, not speeds: generous on purpose.
START_S = 60.0


@dataclass
class RedisServer:
    """A ``redis-server`` process started for the tests (append-only file in a temp folder, 127.0.0.1 only)."""

    port: int
    process: subprocess.Popen[bytes]
    directory: Path

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def start(self) -> None:
        """Start it again on the same port (after :meth:`stop`)."""
        self.process = _spawn(self.port, self.directory)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawn(port: int, directory: Path) -> subprocess.Popen[bytes]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed (.ci/run installs Debian's redis-server package)")
    # Append-only file, synced on every write: the data outlives a restart, as a state store's must.
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes"]
    args += ["--appendfsync", "always"]
    args += ["--dir", str(directory), "--protected-mode", "yes"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return proc
        except OSError:
            time.sleep(0.02)
    proc.kill()
    pytest.fail(f"redis-server did not answer on port {port} within {START_S:g} s")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One real ``redis-server`` for the test session."""
    directory = tmp_path_factory.mktemp("redis")
    port = _free_port()
    server = RedisServer(port, _spawn(port, directory), directory)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> Iterator[str]:
    """The URL of the session's Redis, emptied before each test."""
    if redis_server.process.poll() is not None:
        redis_server.start()
    with socket.create_connection(("127.0.0.1", redis_server.port), timeout=START_S) as s:
        s.sendall(b"FLUSHALL\r\n")
        s.recv(16)
    yield redis_server.url


@pytest.fixture(autouse=True, scope="session")
def _state_dir_per_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Toolboxes that open the default state store use a folder of this test session, not the user's."""
    import os

    from toolcode.state import STATE_DIR_ENV

    old = os.environ.get(STATE_DIR_ENV)
    os.environ[STATE_DIR_ENV] = str(tmp_path_factory.mktemp("state"))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(STATE_DIR_ENV, None)
        else:
            os.environ[STATE_DIR_ENV] = old


@pytest.fixture(autouse=True)
def _state_dir_per_test(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's own state folder: snippets or sessions one test saves never show in another's catalog.

    (Servers a module-scoped fixture starts share the test session's folder above.)
    """
    from toolcode.state import STATE_DIR_ENV

    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path_factory.mktemp("state")))
