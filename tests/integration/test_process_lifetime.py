"""`toolcode serve` leaves no process behind however it ends; `toolcode exec` exits cleanly.

A real server (stdio, driven by the mcp ``Client``) with real upstream stdio servers
(mcp-server-time, once directly and once behind a wrapper shell) runs a CPU-bound snippet; then
the server is killed (SIGKILL, SIGTERM) or its stdin is closed. Every process it started — Monty
workers, the upstream servers and the wrapper's child, the watchdog launchers in front of them —
must be gone, checked in the process table by the pids recorded while the server ran. They go in
well under a second; the bound is generous (a busy machine) and still far below the spinning
run's own 120 s timeout, the next thing that would end a worker left behind.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import psutil
import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform != "linux", reason="the watchdog launcher is Linux-only"),
]

# A tool call first: its progress notification says the snippet has reached the loop.
SPIN = 'run_tool("time:get_current_time", {"timezone": "UTC"})\nwhile True:\n    pass\n'
# The MCP client, in a process of its own so that the test can also kill it (the server's stdin
# then closes). It starts the server through a shim that records the server's pid and becomes it.
CLIENT = """
import os, sys, anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

SHIM = "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); os.execv(sys.argv[2], sys.argv[2:])"
pidfile, config, code = sys.argv[1:4]

async def main():
    serve = [sys.executable, "-m", "toolcode.cli", "serve", "--config", config, "--no-state"]
    params = StdioServerParameters(command=sys.executable, args=["-c", SHIM, pidfile, *serve])
    spinning = anyio.Event()

    async def on_progress(progress, total, message):
        spinning.set()

    async def spin(client):
        args = {"code": code, "options": {"timeout": 120}}
        await client.call_tool("execute_code", args, progress_callback=on_progress)

    async with Client(params) as client, anyio.create_task_group() as tg:
        tg.start_soon(spin, client)
        await spinning.wait()
        print("spinning", flush=True)
        await anyio.sleep(600)

anyio.run(main)
"""
GONE_WITHIN_S = 30.0


@pytest.fixture
def config(tmp_path: Path) -> Path:
    time_server = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
    cfg = {
        "mcpServers": {
            "time": {"command": time_server[0], "args": time_server[1:]},
            # An npx-style wrapper: `sh` stays the server's parent (the trailing `exit` keeps it from exec'ing).
            "wrapped": {"command": "sh", "args": ["-c", f'{shlex.join(time_server)}; exit "$?"']},
        }
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(cfg))
    return path


@asynccontextmanager
async def spinning_server(
    config: Path, tmp_path: Path
) -> AsyncIterator[tuple[anyio.abc.Process, psutil.Process, list[psutil.Process]]]:
    """A `toolcode serve` whose sandbox runs a CPU-bound snippet: its client, itself, and all it started."""
    pidfile = tmp_path / "serve.pid"
    client = await anyio.open_process([sys.executable, "-c", CLIENT, str(pidfile), str(config), SPIN])
    try:
        assert client.stdout is not None
        with anyio.fail_after(60):
            line = await client.stdout.receive()
        assert line.strip() == b"spinning", line
        server = psutil.Process(int(pidfile.read_text()))
        started = server.children(recursive=True)
        names = [" ".join(p.cmdline()) for p in started]
        assert any("monty" in n for n in names), names
        assert sum("mcp_server_time" in n for n in names) >= 3, names  # time, the wrapper and its child
        yield client, server, started
    finally:
        if client.returncode is None:
            client.kill()
        await client.aclose()


async def wait_gone(procs: list[psutil.Process], timeout: float) -> list[str]:
    """Wait (on pidfds, no polling) until every process has exited; return the survivors' command lines."""
    fds: list[int] = []
    for p in procs:
        try:
            fds.append(os.pidfd_open(p.pid))
        except ProcessLookupError:
            continue
    try:
        with anyio.move_on_after(timeout):
            for fd in fds:
                await anyio.wait_readable(fd)
    finally:
        for fd in fds:
            os.close(fd)
    survivors: list[str] = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                survivors.append(f"{p.pid} {' '.join(p.cmdline())}")
        except psutil.NoSuchProcess:
            pass
    return survivors


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
async def test_killed_server_leaves_no_worker_or_upstream(config: Path, tmp_path: Path, sig: signal.Signals) -> None:
    async with spinning_server(config, tmp_path) as (_, server, started):
        server.send_signal(sig)
        assert await wait_gone([server], GONE_WITHIN_S) == []
        assert await wait_gone(started, GONE_WITHIN_S) == []


async def test_closed_stdin_leaves_no_server_worker_or_upstream(config: Path, tmp_path: Path) -> None:
    # The client dies: the server's stdin closes, and nobody sends it a signal.
    async with spinning_server(config, tmp_path) as (client, server, started):
        client.kill()
        assert await wait_gone([server, *started], GONE_WITHIN_S) == []


@pytest.mark.slow
def test_exec_exits_cleanly_every_time() -> None:
    # The Monty pool's native threads once raced interpreter shutdown: SIGABRT in ~1 of 7 runs.
    # 20 runs at ~1.5 s of CPU each (interpreter and pool start), four at a time: one after the
    # other they made the longest test of the suite (nine minutes on a busy machine).
    def exec_once(_: int) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "toolcode.cli", "exec", "-c", "1", "--json"]
        return subprocess.run(command, capture_output=True, text=True, timeout=300)  # a hang bound

    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(exec_once, range(20)))
    assert [proc.returncode for proc in runs] == [0] * 20, [proc.stderr[-500:] for proc in runs if proc.returncode]
    assert all(json.loads(proc.stdout)["value"] == 1 for proc in runs)
