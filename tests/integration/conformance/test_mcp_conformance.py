"""The MCP conformance harness (npm @modelcontextprotocol/conformance, Node 22) against `toolcode serve --http`.

Only the server scenarios that apply to a tools-only server whose tool list is its own are run;
docs/conformance.md lists the others and why they do not apply.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"

APPLICABLE = [
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
]


def _ensure_harness() -> None:
    if (BIN / "conformance").exists() and (BIN / "node").exists():
        return
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is needed to install the conformance harness (tests/integration/conformance)")
    subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE, check=True)


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _ensure_harness()
    tmp = tmp_path_factory.mktemp("conformance")
    config = tmp / "mcp.json"
    data: dict[str, object] = {"mcpServers": {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}}}
    forced = os.environ.get("TOOLCODE_TEST_SPECULATE")  # on / off: reads started early, or never (unset: default)
    if forced in ("on", "off"):
        data["toolcode"] = {"limits": {"speculate": forced == "on"}}
    config.write_text(json.dumps(data))
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolcode.cli", "serve", "--config", str(config), "--http", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        url = None
        for line in proc.stderr:  # the server prints its URL once it listens
            if "listening on " in line:
                url = line.split("listening on ", 1)[1].strip()
                break
        assert url is not None, "toolcode serve did not start"
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.mark.parametrize("scenario", APPLICABLE)
def test_harness_scenario_passes(server_url: str, scenario: str, tmp_path: Path) -> None:
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path)}
    run = subprocess.run(
        [str(BIN / "conformance"), "server", "--url", server_url, "--scenario", scenario, "-o", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=HERE,
    )
    reports = list(tmp_path.glob("*/checks.json"))
    assert reports, f"no report written\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    checks = json.loads(reports[0].read_text())
    assert checks, "the scenario ran no checks"
    failed = [c for c in checks if c["status"] == "FAILURE"]
    assert not failed, json.dumps(failed, indent=2)
    assert any(c["status"] == "SUCCESS" for c in checks)
    assert run.returncode == 0, run.stdout
