"""Record the tool lists of the real MCP servers the integration tests start, for ``tests/data/servers``.

Usage (from the repository root): ``uv run python tests/integration/servers/record_real_servers.py``

Starts ``mcp-server-time`` and ``mcp-server-git`` (PyPI) and the npm ``server-everything``,
``server-filesystem`` and ``server-memory`` (``tests/integration/node``), lists their tools and
writes ``tests/data/servers/real_servers.json``: for each server (namespace) its tools as MCP
``tools/list`` entries (``name``, ``title``, ``description``, ``inputSchema``, ``outputSchema``,
``annotations``), with the package versions. ``tests/integration/test_recorded_servers.py``
checks that the file still says what the servers list.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from mcp_support import NODE_DIR, npm_server  # noqa: E402

from toolindex import InMemoryIndex  # noqa: E402
from toolrun import DefaultRunner, load_config, open_backends  # noqa: E402

OUT = HERE.parent.parent / "data" / "servers" / "real_servers.json"


def servers(workdir: Path) -> dict[str, dict[str, Any]]:
    """``mcpServers`` entries for the five servers, their state in ``workdir``."""
    repo, files = workdir / "repo", workdir / "files"
    files.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    py = sys.executable
    return {
        "time": {"command": py, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "git": {"command": py, "args": ["-m", "mcp_server_git", "--repository", str(repo)]},
        "everything": {"command": str(npm_server("mcp-server-everything")), "args": ["stdio"]},
        "filesystem": {"command": str(npm_server("mcp-server-filesystem")), "args": [str(files)]},
        "memory": {
            "command": str(npm_server("mcp-server-memory")),
            "env": {"MEMORY_FILE_PATH": str(workdir / "m.jsonl")},
        },
    }


async def listed(entries: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each server's tools as ``tools/list`` entries, by name."""
    index = InMemoryIndex()
    async with (
        open_backends(load_config({"mcpServers": entries})) as backends,
        DefaultRunner(index, backends) as runner,
    ):
        await runner.attach()
        out: dict[str, list[dict[str, Any]]] = {}
        for ns in sorted(n.name for n in index.namespaces()):
            tools = index.list_tools(limit=1000, namespace=ns).tools
            out[ns] = [
                {
                    "name": t.name,
                    "title": t.title,
                    "description": t.description,
                    "inputSchema": t.input_schema,
                    "outputSchema": t.output_schema,
                    "annotations": t.annotations,
                }
                for t in sorted(tools, key=lambda t: t.name)
            ]
        return out


def _npm_versions() -> dict[str, str]:
    lock = json.loads((NODE_DIR / "package-lock.json").read_text())
    names = ("server-everything", "server-filesystem", "server-memory")
    return {n: lock["packages"][f"node_modules/@modelcontextprotocol/{n}"]["version"] for n in names}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tools = anyio.run(listed, servers(Path(tmp)))
    doc = {
        "meta": {
            "source": "tools/list of the real servers, recorded by tests/integration/servers/record_real_servers.py",
            "versions": {
                "mcp-server-time": version("mcp-server-time"),
                "mcp-server-git": version("mcp-server-git"),
                **{f"@modelcontextprotocol/{k}": v for k, v in _npm_versions().items()},
            },
        },
        "servers": tools,
    }
    OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
