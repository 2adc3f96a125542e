"""docs/quickstart.md, run as written on a fresh clone of this repository.

The test clones the repository (its committed state) into a temporary folder, writes the page's
``mcp.json`` and ``quickstart.py`` there, and runs every ``uv run ...`` command of the page from
that folder, as a person who just cloned it would: ``uv`` builds the clone's environment, ``uvx``
starts the real ``mcp-server-time`` and ``mcp-server-git``. The two ``serve`` commands are run
with a real MCP client in front of them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from toolcode._settings import DEFAULT_TOOLS

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "quickstart.md"
SECTION_2 = "## 2. Put code mode in front of your own MCP servers"
SECTION_3 = "## 3. From Python"


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)\n```", text, re.DOTALL)


def _commands(block: str) -> list[list[str]]:
    """The shell commands of a block, each as argv (a quoted argument may span lines; # starts a comment)."""
    out: list[list[str]] = []
    pending = ""
    for line in block.splitlines():
        pending = f"{pending}\n{line}" if pending else line
        try:
            argv = shlex.split(pending, comments=True)
        except ValueError:  # an open quote: the command goes on
            continue
        if argv:
            out.append(argv)
        pending = ""
    assert not pending, f"unbalanced quotes in {block!r}"
    return out


def _clone(folder: Path) -> Path:
    if shutil.which("uv") is None or shutil.which("git") is None:
        pytest.fail("the quickstart needs uv and git on PATH")
    clone = folder / "toolcode"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=300)
    return clone


def _env() -> dict[str, str]:
    # The user's shell: not inside this checkout's virtual environment (nor with its `toolcode` on PATH).
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_RUN_RECURSION_DEPTH")}
    ours = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != ours)
    return env


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)


def test_the_quickstart_runs_as_written_on_a_fresh_clone(tmp_path: Path) -> None:
    # One test, one clone: its environment is built once (about 20 s from uv's cache).
    page = PAGE.read_text()
    clone = _clone(tmp_path)
    section = page[page.index(SECTION_2) : page.index(SECTION_3)]
    [config] = _blocks(section, "json")
    (clone / "mcp.json").write_text(config + "\n")
    commands = [argv for block in _blocks(section, "sh") for argv in _commands(block)]
    assert commands and all(argv[:3] == ["uv", "run", "toolcode"] for argv in commands), commands
    _catalog_commands(commands, clone)
    anyio.run(_serve_commands, commands, clone)
    _python_example(page[page.index(SECTION_3) :], clone)


def _catalog_commands(commands: list[list[str]], clone: Path) -> None:
    outputs: dict[str, str] = {}
    for argv in commands:
        if argv[3] == "serve":
            continue
        done = _run(argv, clone)
        assert done.returncode == 0, f"{shlex.join(argv)}\n{done.stderr[-3000:]}"
        outputs[argv[3]] = done.stdout
    assert set(outputs) == {"namespaces", "search", "describe", "exec", "report"}
    assert "time" in outputs["namespaces"] and "git" in outputs["namespaces"]
    assert "git:git_log" in outputs["search"]
    assert "def git_log(" in outputs["describe"]
    commits = int(outputs["exec"].strip())  # piped: the value, whole
    assert 1 <= commits <= 20
    assert "definition tokens" in outputs["report"]


async def _serve_commands(commands: list[list[str]], clone: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    [stdio, http] = [argv for argv in commands if argv[3] == "serve"]
    assert "--http" not in stdio and "--http" in http
    params = StdioServerParameters(command=stdio[0], args=stdio[1:], cwd=str(clone), env=_env())
    with anyio.fail_after(300):
        async with Client(params) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
    assert listed == list(DEFAULT_TOOLS)

    address = http[http.index("--http") + 1]
    async with await anyio.open_process(http, cwd=clone, env=_env(), stdout=None) as process:
        assert process.stderr is not None
        said = BufferedByteReceiveStream(process.stderr)
        with anyio.fail_after(300):
            while b"listening on" not in (line := await said.receive_until(b"\n", 65536)):
                pass  # until the server says it listens (and where)
        assert f"http://{address}/mcp" in line.decode()
        with anyio.fail_after(120):
            async with Client(f"http://{address}/mcp") as client:
                listed = [t.name for t in (await client.list_tools()).tools]
        assert listed == list(DEFAULT_TOOLS)
        process.terminate()


def _python_example(section: str, clone: Path) -> None:
    [program] = _blocks(section, "python")
    assert "saved as `quickstart.py`" in section.lower() and "`uv run python quickstart.py`" in section
    (clone / "quickstart.py").write_text(program + "\n")
    done = _run(["uv", "run", "python", "quickstart.py"], clone)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    hits = next(line for line in lines if line.startswith("['"))  # print([h.id for h in found.hits])
    assert "time:get_current_time" in json.loads(hits.replace("'", '"'))
    assert "def get_current_time(" in done.stdout
    result = next(line for line in reversed(lines) if line.endswith("['time:get_current_time']"))
    assert result.startswith("20") and "+09:00" in result  # Tokyo's datetime, then the trace's tool ids
