"""Helpers for integration tests that start real MCP servers (imported by conftest.py and tests).

Kept out of ``conftest.py`` because several test folders have a ``conftest`` module, so
``from conftest import ...`` would be ambiguous.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
NODE_DIR = HERE / "node"
SERVERS_DIR = HERE / "servers"
FAULT_SERVER = SERVERS_DIR / "fault_server.py"
BIND_LOCALHOST = SERVERS_DIR / "bind_localhost.cjs"

_npm_lock = threading.Lock()


def _ensure_node_modules() -> None:
    with _npm_lock:
        if (NODE_DIR / "node_modules" / ".bin").is_dir():
            return
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed and tests/integration/node/node_modules is missing")
        proc = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, capture_output=True, text=True, timeout=600
        )
        if proc.returncode != 0:
            pytest.fail(f"npm ci failed in {NODE_DIR}:\n{proc.stderr[-2000:]}")


def npm_server(name: str) -> Path:
    """Path of ``node_modules/.bin/<name>`` (installing the npm servers first if needed)."""
    _ensure_node_modules()
    path = NODE_DIR / "node_modules" / ".bin" / name
    if not path.exists():
        pytest.fail(f"{name} is not in {NODE_DIR / 'node_modules' / '.bin'}; check tests/integration/node/package.json")
    return path


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def node_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for a Node server: ours plus a preload that binds listeners to 127.0.0.1."""
    env = dict(os.environ)
    env["NODE_OPTIONS"] = f"{env.get('NODE_OPTIONS', '')} --require {BIND_LOCALHOST}".strip()
    env.update(extra or {})
    return env


@dataclass
class RunningServer:
    """A server process started by :func:`http_server`."""

    url: str
    port: int
    process: subprocess.Popen[str]
    output: list[str] = field(default_factory=list[str])
    reader: threading.Thread | None = None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.reader is not None:
            self.reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_http_server(
    command: Sequence[str],
    *,
    ready: str,
    port: int | None = None,
    path: str = "/mcp",
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 30.0,
) -> RunningServer:
    """Start ``command`` and wait until a line of its output matches ``ready`` (a regex).

    ``{port}`` in the command is replaced by the port; ``PORT`` is also set in its environment.
    The process's stdout and stderr are read together; the lines are kept for diagnostics.
    """
    port = port or free_port()
    full_env = dict(os.environ if env is None else env)
    full_env["PORT"] = str(port)
    argv = [a.replace("{port}", str(port)) for a in command]
    proc = subprocess.Popen(
        argv, env=full_env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    server = RunningServer(f"http://127.0.0.1:{port}{path}", port, proc)
    is_ready = threading.Event()
    pattern = re.compile(ready)

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            server.output.append(line.rstrip())
            if pattern.search(line):
                is_ready.set()
        is_ready.set()  # EOF: the process ended; the check below reports it

    server.reader = threading.Thread(target=pump, daemon=True)
    server.reader.start()
    if not is_ready.wait(timeout) or proc.poll() is not None:
        server.stop()
        tail = "\n".join(server.output[-30:])
        raise RuntimeError(f"{argv[0]} did not become ready (exit code {proc.poll()}):\n{tail}")
    return server


# -- `toolcode serve` as a process ---------------------------------------------------------


def toolcode_serve_args(config: Path, *extra: str) -> list[str]:
    """Arguments (after the interpreter) of ``toolcode serve --config CONFIG``.

    A stdio server does not inherit the environment (the SDK passes a safe subset), so the test
    session's state folder is named on the command line: tests never touch the user's own.
    """
    state = ["--state-dir", os.environ["TOOLCODE_STATE_DIR"]] if "TOOLCODE_STATE_DIR" in os.environ else []
    return ["-m", "toolcode.cli", "serve", "--config", str(config), *state, *extra]


@dataclass
class ServedHttp:
    """A running ``toolcode serve --http 127.0.0.1:0``."""

    url: str
    log: str
    """What the server wrote to stderr up to "listening on"."""


@asynccontextmanager
async def toolcode_serve_http(config: Path, *extra: str) -> AsyncIterator[ServedHttp]:
    """Start ``toolcode serve --http 127.0.0.1:0``, wait until it listens, stop it afterwards."""
    import anyio

    proc = await anyio.open_process([sys.executable, *toolcode_serve_args(config, "--http", "127.0.0.1:0", *extra)])
    try:
        assert proc.stderr is not None
        buf = b""
        with anyio.fail_after(60):
            async for chunk in proc.stderr:
                buf += chunk
                if b"listening on " in buf and b"\n" in buf.split(b"listening on ", 1)[1]:
                    break
        url = buf.split(b"listening on ", 1)[1].split(b"\n", 1)[0].decode().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield ServedHttp(url, buf.decode(errors="replace"))
    finally:
        proc.terminate()
        with anyio.move_on_after(10):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
        await proc.aclose()


TYPE_ERROR_SNIPPET = "from tools import time_\n__out = time_.get_current_time(timezone=42)"
"""A snippet over ``time_git_config`` that fails the check before the run (``type_error``)."""
TIME_GIT_SNIPPET = """\
from tools import git, time_
paris = time_.get_current_time(timezone="Europe/Paris")
status = git.git_status(repo_path=input["repo"])
__out = {"zone": paris["timezone"], "untracked": "notes.txt" in status}
"""
"""A correct snippet over ``time_git_config`` (``input["repo"]``: the repository's path)."""


@asynccontextmanager
async def serving_http(**options: object) -> AsyncIterator[str]:
    """An in-process ``serve_http`` on 127.0.0.1 (a free port) over an empty toolbox: its MCP URL; stopped afterwards.

    ``options`` are ``serve_http``'s keyword arguments (``tokens``, the deadlines, the shares).
    """
    import anyio

    from toolcode import Toolbox
    from toolcode.server import serve_http

    ready = anyio.Event()
    urls: list[str] = []

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    async with Toolbox() as box, anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_http(box, "127.0.0.1", 0, on_ready=on_ready, **options))  # type: ignore[arg-type]
        with anyio.fail_after(60):
            await ready.wait()
        yield urls[0]
        tg.cancel_scope.cancel()


@dataclass
class ServeProcess:
    """A running ``toolcode serve`` (over HTTP: its ``url``) whose stderr is read line by line as it comes."""

    process: Any
    """The ``anyio.abc.Process``."""
    url: str
    lines: list[str] = field(default_factory=list[str])
    """Every stderr line so far."""
    more: Any = None
    """An ``anyio.Event`` set (and replaced) at each new line, and at end of output."""
    ended: bool = False

    async def line_with(self, *texts: str) -> str:
        """The first stderr line with one of ``texts`` (waiting for it); ``AssertionError`` if output ends first."""
        while True:
            found = next((ln for ln in self.lines if any(t in ln for t in texts)), None)
            if found is not None:
                return found
            assert not self.ended, f"no line with {texts!r} in:\n" + "\n".join(self.lines[-40:])
            await self.more.wait()


@asynccontextmanager
async def toolcode_serve_process(config: Path, *extra: str, http: bool = True) -> AsyncIterator[ServeProcess]:
    """Start ``toolcode serve`` (``--http 127.0.0.1:0`` unless ``http=False``; stdin and stdout piped), killed after.

    stderr is read all along (:attr:`ServeProcess.lines`): a test can signal the process and read what it logged.
    """
    import anyio

    args = toolcode_serve_args(config, *(("--http", "127.0.0.1:0") if http else ()), *extra)
    proc = await anyio.open_process([sys.executable, "-m", "toolcode.cli", "-v", *args[2:]])  # -v: info lines
    served = ServeProcess(proc, "", more=anyio.Event())

    async def pump() -> None:
        assert proc.stderr is not None
        buf = b""
        async for chunk in proc.stderr:
            buf += chunk
            *done, buf = buf.split(b"\n")
            served.lines.extend(d.decode(errors="replace") for d in done)
            served.more.set()
            served.more = anyio.Event()
        served.lines.extend([buf.decode(errors="replace")] if buf else [])
        served.ended = True
        served.more.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            if http:
                with anyio.fail_after(60):  # a hang bound
                    listening = await served.line_with("listening on ")
                served.url = listening.split("listening on ", 1)[1].strip()
            yield served
            tg.cancel_scope.cancel()
    finally:
        if proc.returncode is None:
            proc.kill()
        with anyio.CancelScope(shield=True):
            await proc.wait()
            await proc.aclose()
