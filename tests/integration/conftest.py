"""Shared fixtures for integration tests: real MCP servers over stdio and HTTP on 127.0.0.1.

- ``npm_bin(name)``: path of an npm server's executable (runs ``npm ci`` in ``tests/integration/node``
  once if ``node_modules`` is missing);
- ``free_port()``: a free TCP port on 127.0.0.1;
- ``http_server``: starts a server process that listens on 127.0.0.1 and waits until it is ready;
- ``mcp_servers``: ``mcpServers`` JSON entries for the real servers (time, git, everything,
  filesystem, memory, our fault server), with their own temporary repo/folder/file;
- ``fault_http`` / ``everything_http``: those two servers running over streamable HTTP.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
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


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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


@pytest.fixture(scope="session")
def npm_bin() -> Callable[[str], Path]:
    """``npm_bin("mcp-server-everything")`` → path of the executable."""
    return npm_server


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


@pytest.fixture
def http_server() -> Iterator[Callable[..., RunningServer]]:
    """Factory: ``http_server(command, ready=regex, ...)`` → :class:`RunningServer`, stopped after the test."""
    started: list[RunningServer] = []

    def start(command: Sequence[str], **kw: Any) -> RunningServer:
        s = start_http_server(command, **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def fault_http(http_server: Callable[..., RunningServer]) -> RunningServer:
    """Our fault server over streamable HTTP on 127.0.0.1."""
    return http_server(
        [sys.executable, str(FAULT_SERVER), "--http", "--port", "{port}"],
        ready=r"Uvicorn running on|Application startup",
    )


@pytest.fixture
def everything_http(http_server: Callable[..., RunningServer]) -> RunningServer:
    """npm ``server-everything`` over streamable HTTP on 127.0.0.1."""
    exe = npm_server("mcp-server-everything")
    return http_server([str(exe), "streamableHttp"], ready=r"listening on port", env=node_env())


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A git repository with one commit (``README.md``) and one untracked file."""
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.org"}
    env |= {"GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.org"}
    (repo / "README.md").write_text("hello\n")
    for cmd in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "README.md"],
        ["git", "commit", "-q", "-m", "first"],
    ):
        subprocess.run(cmd, cwd=repo, env=env, check=True)
    (repo / "notes.txt").write_text("untracked\n")
    return repo


@pytest.fixture
def files_dir(tmp_path: Path) -> Path:
    """A folder for server-filesystem, with ``a.txt`` and ``sub/b.txt``."""
    d = tmp_path / "files"
    (d / "sub").mkdir(parents=True)
    (d / "a.txt").write_text("alpha\n")
    (d / "sub" / "b.txt").write_text("beta\n")
    return d


@pytest.fixture
def mcp_servers(tmp_path: Path, git_repo: Path, files_dir: Path) -> dict[str, dict[str, Any]]:
    """``mcpServers`` entries (standard client JSON) for every real stdio server, with temp state."""
    py = sys.executable
    memory_file = tmp_path / "memory.jsonl"
    return {
        "time": {"command": py, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "git": {"command": py, "args": ["-m", "mcp_server_git", "--repository", str(git_repo)]},
        "everything": {"command": str(npm_server("mcp-server-everything")), "args": ["stdio"]},
        "filesystem": {"command": str(npm_server("mcp-server-filesystem")), "args": [str(files_dir)]},
        "memory": {"command": str(npm_server("mcp-server-memory")), "env": {"MEMORY_FILE_PATH": str(memory_file)}},
        "fault": {"command": py, "args": [str(FAULT_SERVER), "--malformed"]},
    }


@pytest.fixture
def mcp_runner() -> Callable[..., Any]:
    """Factory: ``async with mcp_runner({"name": {...}}, **runner_kw) as (runner, backends):``.

    Loads the entries as ``mcpServers``, enters one ``MCPBackend`` per server, builds a
    ``DefaultRunner`` over a fresh ``InMemoryIndex`` and attaches every backend.
    """
    from contextlib import AsyncExitStack, asynccontextmanager

    from toolindex import InMemoryIndex
    from toolrun import DefaultRunner, MCPBackend, backends_from_config, load_config

    @asynccontextmanager
    async def open_runner(servers: Mapping[str, Any], **runner_kw: Any) -> Any:
        backends = backends_from_config(load_config({"mcpServers": dict(servers)}))
        async with AsyncExitStack() as stack:
            for b in backends:
                await stack.enter_async_context(b)
            runner = await stack.enter_async_context(DefaultRunner(InMemoryIndex(), backends, **runner_kw))
            await runner.attach()
            by_name: dict[str, MCPBackend] = {b.name: b for b in backends}
            yield runner, by_name

    return open_runner
