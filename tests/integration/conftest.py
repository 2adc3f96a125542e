"""Shared fixtures for integration tests: real MCP servers over stdio and HTTP on 127.0.0.1.

- ``npm_bin(name)``: path of an npm server's executable (runs ``npm ci`` in ``tests/integration/node``
  once if ``node_modules`` is missing);
- ``free_port``: ``free_port()`` gives a free TCP port on 127.0.0.1;
- ``http_server``: starts a server process that listens on 127.0.0.1 and waits until it is ready;
- ``mcp_servers``: ``mcpServers`` JSON entries for the real servers (time, git, everything,
  filesystem, memory, our fault server), with their own temporary repo/folder/file;
- ``fault_http`` / ``everything_http``: those two servers running over streamable HTTP;
- ``mcp_runner``: a ``DefaultRunner`` over ``MCPBackend`` s for given ``mcpServers`` entries.

Plain helpers (``start_http_server``, ``free_port``, ``npm_server``, ``node_env``, ``FAULT_SERVER``)
live in ``mcp_support.py``: import them from there (``from mcp_support import ...``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp_support import FAULT_SERVER, RunningServer, node_env, npm_server, start_http_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def npm_bin() -> Callable[[str], Path]:
    """``npm_bin("mcp-server-everything")`` → path of the executable."""
    return npm_server


@pytest.fixture
def free_port() -> Callable[[], int]:
    """``free_port()`` → a TCP port that was free on 127.0.0.1 a moment ago."""
    from mcp_support import free_port as pick

    return pick


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

    Loads the entries as ``mcpServers``, enters one ``MCPBackend`` per server (``open_backends``),
    builds a ``DefaultRunner`` over a fresh ``InMemoryIndex`` and attaches every backend.
    """
    from contextlib import asynccontextmanager

    from toolindex import InMemoryIndex
    from toolrun import DefaultRunner, MCPBackend, load_config, open_backends

    @asynccontextmanager
    async def open_runner(servers: Mapping[str, Any], **runner_kw: Any) -> Any:
        config = load_config({"mcpServers": dict(servers)})
        async with open_backends(config) as backends, DefaultRunner(InMemoryIndex(), backends, **runner_kw) as runner:
            await runner.attach()
            by_name: dict[str, MCPBackend] = {b.name: b for b in backends}
            yield runner, by_name

    return open_runner


@pytest.fixture
def time_git_config(git_repo: Path) -> dict[str, Any]:
    """A config with the real ``mcp-server-time`` and ``mcp-server-git`` (on ``git_repo``), state in memory."""
    py = sys.executable
    return {
        "mcpServers": {
            "time": {"command": py, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
            "git": {"command": py, "args": ["-m", "mcp_server_git", "--repository", str(git_repo)]},
        },
        "toolcode": {"state": {"memory": True}},
    }
