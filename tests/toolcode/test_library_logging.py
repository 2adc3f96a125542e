"""Used as a library, the packages never write to stdout: logs go through the host's configuration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HOST = """
import json, sys, anyio
from toolcode import Settings, Toolbox
from toolcode._settings import StateSettings

async def main():
    config = json.loads(sys.argv[1])
    settings = Settings(state=StateSettings(memory=True))
    async with Toolbox.from_config(config, settings=settings) as box:
        out = await box.codemode.execute("__out = 6 * 7")
        assert out.ok, out
anyio.run(main)
"""


def _host(tmp_path: Path, preamble: str = "") -> subprocess.CompletedProcess[bytes]:
    noisy = tmp_path / "noisy.py"
    # An upstream that writes to its stderr at start, as most do.
    noisy.write_text(
        "import sys\nsys.stderr.write('upstream says hello on stderr\\n'); sys.stderr.flush()\n"
        "from mcp_server_time import main\nmain()\n"
    )
    config = {
        "mcpServers": {
            "missing": {"command": "no-such-server-xyz-toolcode-test"},
            "noisy": {"command": sys.executable, "args": [str(noisy)]},
        }
    }
    return subprocess.run(
        [sys.executable, "-c", preamble + HOST, json.dumps(config)],
        capture_output=True,
        timeout=300,  # bounds only a hang
        check=False,
    )


def test_a_host_without_logging_configuration_gets_nothing_on_stdout(tmp_path: Path) -> None:
    done = _host(tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""
    # Warnings still reach a person: Python's last-resort handler writes them to stderr.
    assert b"toolbox.backend_failed" in done.stderr and b"no-such-server-xyz" in done.stderr


def test_a_host_logging_configuration_decides_where_lines_go(tmp_path: Path) -> None:
    log_file = tmp_path / "host.log"
    preamble = f"import logging\nlogging.basicConfig(filename={str(log_file)!r}, level=logging.DEBUG)\n"
    done = _host(tmp_path, preamble)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""
    text = log_file.read_text()
    assert "toolbox.backend_failed" in text and "WARNING:toolcode.app" in text
    assert "upstream says hello on stderr" in text  # the upstream's stderr, under toolrun's logger
    assert "toolbox.backend_ready" in text  # info lines too, at the level the host chose


def test_a_host_structlog_configuration_is_used(tmp_path: Path) -> None:
    preamble = (
        "import structlog, sys\n"
        "structlog.configure(processors=[structlog.processors.JSONRenderer()], "
        "logger_factory=structlog.PrintLoggerFactory(sys.stderr))\n"
    )
    done = _host(tmp_path, preamble)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""
    events = [json.loads(line) for line in done.stderr.decode().splitlines() if line.startswith("{")]
    assert any(e.get("event") == "toolbox.backend_failed" for e in events)
