"""Local processes the benchmarks start: a free port on 127.0.0.1, a ``redis-server``."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(folder: Path, *, appendonly: bool = False) -> tuple[subprocess.Popen[bytes], str] | None:
    """A ``redis-server`` on a free local port, keeping its files in ``folder``, and its URL (``None``: not installed).

    Raises:
        SystemExit: If it does not answer within 10 s.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    port = free_port()
    aof = "yes" if appendonly else "no"
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", aof]
    proc = subprocess.Popen([*args, "--dir", str(folder)], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.02)
    proc.kill()
    raise SystemExit("redis-server did not start")
