"""The command line in front of real servers: their ordinary stderr stays out of the way, failures explain."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_support import npm_server

pytestmark = pytest.mark.integration


def _toolcode(*argv: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("toolcode")
    return subprocess.run([str(exe), *argv], capture_output=True, text=True, timeout=180)


def _config(tmp_path: Path, servers: dict[str, Any]) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers, "toolcode": {"state": {"memory": True}}}))
    return str(path)


def test_a_servers_ordinary_stderr_shows_only_with_v(tmp_path: Path, files_dir: Path) -> None:
    # server-filesystem announces itself on stderr ("Secure MCP Filesystem Server running on stdio").
    config = _config(
        tmp_path, {"files": {"command": str(npm_server("mcp-server-filesystem")), "args": [str(files_dir)]}}
    )
    quiet = _toolcode("namespaces", "--config", config, "--json")
    assert quiet.returncode == 0, quiet.stderr
    assert json.loads(quiet.stdout)["namespaces"] == [{"name": "files", "tool_count": 14, "unavailable": None}]
    assert quiet.stderr == ""  # no warnings: nothing went wrong
    verbose = _toolcode("-v", "namespaces", "--config", config, "--json")
    assert verbose.returncode == 0
    assert "mcp.stderr" in verbose.stderr and "running on stdio" in verbose.stderr


def test_a_server_that_cannot_start_says_why_and_what_to_do(tmp_path: Path) -> None:
    config = _config(tmp_path, {"bad": {"command": "no-such-server-xyz"}})
    strict = _toolcode("namespaces", "--config", config, "--strict")
    assert strict.returncode == 5
    assert "cannot start 'no-such-server-xyz': command not found" in strict.stderr
    assert "hint: install 'no-such-server-xyz', or give its full path as \"command\"" in strict.stderr
    assert "restarting" not in strict.stderr  # it never started: trying again changes nothing
    # A server that exits at once: the warning carries its last words, and the error names the environment.
    code = "import sys; sys.stderr.write('error: set WIDGET_API_KEY\\n'); sys.exit(1)"
    config = _config(tmp_path, {"widgets": {"command": sys.executable, "args": ["-c", code]}})
    done = _toolcode("namespaces", "--config", config, "--strict")
    assert done.returncode == 5
    assert "error: set WIDGET_API_KEY" in done.stderr  # in the mcp.unavailable warning, for the operator
    assert "stdio servers start with a minimal environment" in done.stderr
    assert 'add it to the server\'s "env", or set "inheritEnv": true' in done.stderr


def test_the_chain_example_of_the_snippet_api_page_runs_against_the_memory_server(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "snippet-api.md").read_text()
    section = page[page.index("## Chains without code") :]
    steps = tmp_path / "steps.json"
    example = re.search(r"```json\n(.*?)\n```", section, re.DOTALL)
    assert example is not None
    steps.write_text(example.group(1))
    memory = {"command": str(npm_server("mcp-server-memory")), "env": {"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")}}
    config = _config(tmp_path, {"memory": memory})
    done = _toolcode("chain", "--config", config, "--steps", f"@{steps}", "--json")
    assert done.returncode == 0, done.stderr
    chain = json.loads(done.stdout)
    assert not chain["aborted"] and [s["ok"] for s in chain["steps"]] == [True, True, True]
    assert chain["final"] == {"results": [{"entityName": "Ada", "addedObservations": ["found as Ada"]}]}
