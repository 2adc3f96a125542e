"""The tools the type-check corpus runs against: the demo, and real servers' recorded schemas with local fakes.

``real_backends()`` serves the tools of ``mcp-server-git``, npm ``server-filesystem``,
``server-memory`` and ``server-everything`` exactly as the servers list them (recorded in
``tests/data/servers/real_servers.json``; ``tests/integration/test_recorded_servers.py`` keeps the
recording true), each answered by a small local fake of the server's behaviour: an in-memory
knowledge graph, an in-memory folder under ``/data``, a repository whose answers are the
server's texts. ``mcp-server-time`` is the real server (the demo's). Results follow the servers'
shapes (``{"content": text}`` for the filesystem, plain text for git), and a declared output
schema is checked by the runner as for any tool.

``doc_backends()`` adds the tools the docs' own examples call beyond those: ``math:add``
(docs/executor.md), ``desk:holidays`` (docs/pydantic-ai.md) and the pet shop of docs/openapi.md
(its OpenAPI document converted as ``toolcode`` converts it, answered by a fake).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolcode.demo import demo_backends
from toolrun import LocalBackend, OpenAPIProvider, ProviderBackend

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "tests" / "data" / "servers" / "real_servers.json"
PETS_SPEC = ROOT / "tests" / "integration" / "servers" / "openapi_service.yaml"
REPO = "/home/user/project"
"""The repository the fake git server answers for (any path works the same)."""
DATA = "/data"
"""The fake filesystem server's allowed directory."""

Handler = Callable[[Mapping[str, Any]], Any]


def recorded() -> dict[str, list[dict[str, Any]]]:
    """The recorded ``tools/list`` of each real server, by namespace."""
    return json.loads(RECORDED.read_text())["servers"]


class FakeServer:
    """A provider serving recorded tool definitions, each answered by a handler (a tool without one fails).

    ``handlers()`` builds the server's state and its handlers; :meth:`reset` starts them afresh, so
    every run of a snippet meets the same state.
    """

    def __init__(self, tools: Sequence[Mapping[str, Any]], handlers: Callable[[], Mapping[str, Handler]]) -> None:
        self._tools = [{k: v for k, v in t.items() if v is not None} for t in tools]
        self._make = handlers
        self._handlers = dict(handlers())

    def reset(self) -> None:
        self._handlers = dict(self._make())

    async def list_tools(self) -> Sequence[Mapping[str, Any]]:
        return self._tools

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> Any:
        handler = self._handlers.get(name)
        if handler is None:
            raise RuntimeError(f"the fake server does not implement {name}")
        return handler(args)


class Memory:
    """``server-memory``: a knowledge graph of entities (name, type, observations) and relations."""

    def __init__(self) -> None:
        self.entities: dict[str, dict[str, Any]] = {
            "Ada": {"name": "Ada", "entityType": "person", "observations": ["writes the billing service"]},
            "billing": {"name": "billing", "entityType": "service", "observations": ["runs on port 8080"]},
        }
        self.relations: list[dict[str, str]] = [{"from": "Ada", "to": "billing", "relationType": "maintains"}]

    def handlers(self) -> dict[str, Handler]:
        return {
            "create_entities": self.create_entities,
            "create_relations": self.create_relations,
            "add_observations": self.add_observations,
            "delete_entities": self.delete_entities,
            "delete_observations": self.delete_observations,
            "delete_relations": self.delete_relations,
            "read_graph": lambda a: self._graph(self.entities.values()),
            "search_nodes": self.search_nodes,
            "open_nodes": lambda a: self._graph(self.entities[n] for n in a["names"] if n in self.entities),
        }

    def _graph(self, entities: Any) -> dict[str, Any]:
        chosen = [dict(e) for e in entities]
        names = {e["name"] for e in chosen}
        relations = [r for r in self.relations if r["from"] in names or r["to"] in names]
        return {"entities": chosen, "relations": relations}

    def create_entities(self, a: Mapping[str, Any]) -> dict[str, Any]:
        new = [dict(e) for e in a["entities"] if e["name"] not in self.entities]
        for e in new:
            self.entities[e["name"]] = {
                "name": e["name"],
                "entityType": e["entityType"],
                "observations": e["observations"],
            }
        return {"entities": [self.entities[e["name"]] for e in new]}

    def create_relations(self, a: Mapping[str, Any]) -> dict[str, Any]:
        new = [{"from": r["from"], "to": r["to"], "relationType": r["relationType"]} for r in a["relations"]]
        new = [r for r in new if r not in self.relations]
        self.relations.extend(new)
        return {"relations": new}

    def add_observations(self, a: Mapping[str, Any]) -> dict[str, Any]:
        results = []
        for o in a["observations"]:
            entity = self.entities.get(o["entityName"])
            if entity is None:
                raise ValueError(f"Entity with name {o['entityName']} not found")
            added = [c for c in o["contents"] if c not in entity["observations"]]
            entity["observations"] = [*entity["observations"], *added]
            results.append({"entityName": o["entityName"], "addedObservations": added})
        return {"results": results}

    def delete_entities(self, a: Mapping[str, Any]) -> dict[str, Any]:
        for n in a["entityNames"]:
            self.entities.pop(n, None)
        return {"success": True, "message": "Entities deleted successfully"}

    def delete_observations(self, a: Mapping[str, Any]) -> dict[str, Any]:
        for d in a["deletions"]:
            entity = self.entities.get(d["entityName"])
            if entity is not None:
                entity["observations"] = [o for o in entity["observations"] if o not in d["observations"]]
        return {"success": True, "message": "Observations deleted successfully"}

    def delete_relations(self, a: Mapping[str, Any]) -> dict[str, Any]:
        gone = [dict(r) for r in a["relations"]]
        self.relations = [r for r in self.relations if r not in gone]
        return {"success": True, "message": "Relations deleted successfully"}

    def search_nodes(self, a: Mapping[str, Any]) -> dict[str, Any]:
        q = str(a["query"]).lower()
        hits = [
            e
            for e in self.entities.values()
            if q in e["name"].lower() or q in e["entityType"].lower() or any(q in o.lower() for o in e["observations"])
        ]
        return self._graph(hits)


class Files:
    """``server-filesystem``: a folder under :data:`DATA`, answers as ``{"content": text}``."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {
            f"{DATA}/README.md": "# Project\n\nTODO: write the docs\n",
            f"{DATA}/notes.txt": "alpha\nbeta\nTODO: ship\n",
            f"{DATA}/src/app.py": "print('hello')\n# TODO: tests\n",
            f"{DATA}/src/util.py": "def add(a, b):\n    return a + b\n",
        }
        self.dirs: set[str] = {DATA, f"{DATA}/src"}

    def handlers(self) -> dict[str, Handler]:
        def text(f: Callable[[Mapping[str, Any]], str]) -> Handler:
            return lambda a: {"content": f(a)}

        return {
            "read_text_file": text(self.read),
            "read_file": text(self.read),
            "read_multiple_files": text(self.read_many),
            "write_file": text(self.write),
            "edit_file": text(self.edit),
            "create_directory": text(self.mkdir),
            "list_directory": text(lambda a: "\n".join(f"[{k}] {n}" for k, n, _ in self._entries(a["path"]))),
            "list_directory_with_sizes": text(self.sizes),
            "directory_tree": text(lambda a: json.dumps(self._tree(self._path(a["path"])))),
            "move_file": text(self.move),
            "search_files": text(self.search),
            "get_file_info": text(self.info),
            "list_allowed_directories": text(lambda a: f"Allowed directories:\n{DATA}"),
            "read_media_file": lambda a: {
                "content": [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]
            },
        }

    def _path(self, p: str) -> str:
        path = p if p.startswith("/") else f"{DATA}/{p}"
        path = path.rstrip("/") or "/"
        if not (path == DATA or path.startswith(DATA + "/")):
            raise PermissionError(f"Access denied - path outside allowed directories: {p}")
        return path

    def _entries(self, p: str) -> list[tuple[str, str, int]]:
        base = self._path(p)
        if base not in self.dirs:
            raise FileNotFoundError(f"ENOENT: no such file or directory, scandir '{p}'")
        out = [("DIR", d.rsplit("/", 1)[1], 0) for d in self.dirs if d.rsplit("/", 1)[0] == base]
        out += [("FILE", f.rsplit("/", 1)[1], len(t)) for f, t in self.files.items() if f.rsplit("/", 1)[0] == base]
        return sorted(out, key=lambda e: e[1])

    def read(self, a: Mapping[str, Any]) -> str:
        path = self._path(a["path"])
        if path not in self.files:
            raise FileNotFoundError(f"ENOENT: no such file or directory, open '{a['path']}'")
        lines = self.files[path].splitlines(keepends=True)
        if a.get("head"):
            lines = lines[: int(a["head"])]
        if a.get("tail"):
            lines = lines[-int(a["tail"]) :]
        return "".join(lines)

    def read_many(self, a: Mapping[str, Any]) -> str:
        parts = []
        for p in a["paths"]:
            try:
                parts.append(f"{p}:\n{self.read({'path': p})}\n")
            except FileNotFoundError as e:
                parts.append(f"{p}: Error - {e}")
        return "\n---\n".join(parts)

    def write(self, a: Mapping[str, Any]) -> str:
        path = self._path(a["path"])
        if path.rsplit("/", 1)[0] not in self.dirs:
            raise FileNotFoundError(f"ENOENT: no such file or directory, open '{a['path']}'")
        self.files[path] = a["content"]
        return f"Successfully wrote to {a['path']}"

    def edit(self, a: Mapping[str, Any]) -> str:
        path = self._path(a["path"])
        text = self.read(a)
        diff = []
        for e in a["edits"]:
            if e["oldText"] not in text:
                raise ValueError(f"Could not find exact match for edit:\n{e['oldText']}")
            text = text.replace(e["oldText"], e["newText"], 1)
            diff.append(f"-{e['oldText']}\n+{e['newText']}")
        if not a.get("dryRun"):
            self.files[path] = text
        return "```diff\n" + "\n".join(diff) + "\n```"

    def mkdir(self, a: Mapping[str, Any]) -> str:
        path = self._path(a["path"])
        while path != DATA:
            self.dirs.add(path)
            path = path.rsplit("/", 1)[0]
        return f"Successfully created directory {a['path']}"

    def sizes(self, a: Mapping[str, Any]) -> str:
        entries = self._entries(a["path"])
        if a.get("sortBy") == "size":
            entries.sort(key=lambda e: -e[2])
        rows = [f"[{k}] {n:<30} {'' if k == 'DIR' else f'{s} B':>10}" for k, n, s in entries]
        files = sum(1 for k, *_ in entries if k == "FILE")
        return "\n".join([*rows, "", f"Total: {files} files, {len(entries) - files} directories"])

    def _tree(self, base: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for kind, name, _ in self._entries(base):
            node: dict[str, Any] = {"name": name, "type": "directory" if kind == "DIR" else "file"}
            if kind == "DIR":
                node["children"] = self._tree(f"{base}/{name}")
            out.append(node)
        return out

    def move(self, a: Mapping[str, Any]) -> str:
        src, dst = self._path(a["source"]), self._path(a["destination"])
        if src not in self.files:
            raise FileNotFoundError(f"ENOENT: no such file or directory, rename '{a['source']}'")
        self.files[dst] = self.files.pop(src)
        return f"Successfully moved {a['source']} to {a['destination']}"

    def search(self, a: Mapping[str, Any]) -> str:
        base = self._path(a["path"])
        pattern = re.compile(re.escape(str(a["pattern"])).replace(r"\*", ".*"), re.IGNORECASE)
        hits = [p for p in sorted(self.files) if p.startswith(base + "/") and pattern.search(p.rsplit("/", 1)[1])]
        return "\n".join(hits) if hits else "No matches found"

    def info(self, a: Mapping[str, Any]) -> str:
        path = self._path(a["path"])
        if path in self.dirs:
            return "size: 4096\ncreated: 2026-01-05T10:00:00.000Z\nisDirectory: true\nisFile: false"
        size = len(self.read(a).encode())
        return f"size: {size}\ncreated: 2026-01-05T10:00:00.000Z\nisDirectory: false\nisFile: true"


class Git:
    """``mcp-server-git``: a repository on ``main``, answered in the server's texts."""

    def __init__(self) -> None:
        self.branch = "main"
        self.branches = ["main", "feature/search"]
        self.staged: list[str] = []
        self.commits = [
            ("5c1e9a2", "Ada Lovelace", "2026-11-20 10:02:11+00:00", "Add the billing export"),
            ("a83f0d4", "Grace Hopper", "2026-11-18 16:40:05+00:00", "Fix the date parser"),
            ("19be7c3", "Ada Lovelace", "2026-11-17 09:15:42+00:00", "Initial commit"),
        ]

    def handlers(self) -> dict[str, Handler]:
        return {
            "git_status": lambda a: (
                f"Repository status:\nOn branch {self.branch}\nChanges not staged for commit:\n"
                "  modified:   README.md\nUntracked files:\n  notes.txt"
            ),
            "git_log": self.log,
            "git_add": self.add,
            "git_commit": self.commit,
            "git_reset": self.reset,
            "git_diff_unstaged": lambda a: "diff --git a/README.md b/README.md\n-hello\n+hello world",
            "git_diff_staged": lambda a: "\n".join(f"diff --git a/{f} b/{f}" for f in self.staged),
            "git_diff": lambda a: f"Diff with {a['target']}:\ndiff --git a/README.md b/README.md\n-hello\n+hello world",
            "git_show": lambda a: (
                f"Commit: {a['revision']!r}\nAuthor: Ada Lovelace\nMessage: 'Add the billing export'\n"
            ),
            "git_create_branch": self.create_branch,
            "git_checkout": self.checkout,
            "git_branch": lambda a: "\n".join(("* " if b == self.branch else "  ") + b for b in self.branches),
        }

    def log(self, a: Mapping[str, Any]) -> str:
        shown = self.commits[: int(a.get("max_count") or 10)]
        entries = [f"Commit: {h!r}\nAuthor: {who}\nDate: {when}\nMessage: {msg!r}\n" for h, who, when, msg in shown]
        return "Commit history:\n" + "\n".join(entries)

    def add(self, a: Mapping[str, Any]) -> str:
        self.staged.extend(f for f in a["files"] if f not in self.staged)
        return "Files staged successfully"

    def commit(self, a: Mapping[str, Any]) -> str:
        digest = f"{abs(hash(a['message'])) % 0xFFFFFFF:07x}"
        self.commits.insert(0, (digest, "Ada Lovelace", "2026-11-26 12:00:00+00:00", a["message"]))
        self.staged.clear()
        return f"Changes committed successfully with hash {digest}"

    def reset(self, a: Mapping[str, Any]) -> str:
        self.staged.clear()
        return "All staged changes reset"

    def create_branch(self, a: Mapping[str, Any]) -> str:
        if a["branch_name"] not in self.branches:
            self.branches.append(a["branch_name"])
        return f"Created branch '{a['branch_name']}' from '{a.get('base_branch') or self.branch}'"

    def checkout(self, a: Mapping[str, Any]) -> str:
        if a["branch_name"] not in self.branches:
            raise ValueError(f"Reference at 'refs/heads/{a['branch_name']}' does not exist")
        self.branch = a["branch_name"]
        return f"Switched to branch '{a['branch_name']}'"


def _everything() -> dict[str, Handler]:
    return {
        "echo": lambda a: f"Echo: {a['message']}",
        "get-sum": lambda a: f"The sum of {a['a']} and {a['b']} is {a['a'] + a['b']}.",
        "get-structured-content": lambda a: {"temperature": 22.5, "conditions": "Partly cloudy", "humidity": 65},
        "get-annotated-message": lambda a: f"{a['messageType']}: this is a demo message",
        "get-env": lambda a: json.dumps({"HOME": "/home/user", "LANG": "C.UTF-8"}),
        "get-tiny-image": lambda a: "This is a tiny image",
        "get-resource-links": lambda a: [f"Resource {i}" for i in range(1, int(a.get("count") or 3) + 1)],
        "get-resource-reference": lambda a: f"Resource {a.get('resourceId', 1)}",
        "toggle-simulated-logging": lambda a: "Started simulated, random-leveled logging",
        "toggle-subscriber-updates": lambda a: "Started simulated resource updates",
        "trigger-long-running-operation": lambda a: (
            f"Long running operation completed. Duration: {a.get('duration', 10)}"
        ),
        "simulate-research-query": lambda a: f"Research on {a['topic']}: 3 sources found",
        "gzip-file-as-resource": lambda a: f"Compressed {a.get('name', 'README.md.gz')}",
    }


def real_backends() -> list[ProviderBackend]:
    """git, filesystem, memory and everything: recorded definitions, fake behaviour (see :func:`reset`)."""
    tools = recorded()
    servers: dict[str, Callable[[], Mapping[str, Handler]]] = {
        "git": lambda: Git().handlers(),
        "filesystem": lambda: Files().handlers(),
        "memory": lambda: Memory().handlers(),
        "everything": _everything,
    }
    return [ProviderBackend(ns, FakeServer(tools[ns], make), namespace=ns) for ns, make in servers.items()]


def reset(backends: Sequence[Any]) -> None:
    """Start every fake server of ``backends`` afresh (the state a snippet meets)."""
    for b in backends:
        provider = getattr(b, "provider", None)
        if isinstance(provider, FakeServer | Pets):
            provider.reset()


class Pets:
    """The pet shop of docs/openapi.md, its tools converted from its OpenAPI document."""

    def __init__(self) -> None:
        self.reset()
        self._spec = OpenAPIProvider("pets", str(PETS_SPEC), base_url="http://127.0.0.1:9")

    def reset(self) -> None:
        self.pets: dict[int, dict[str, Any]] = {
            1: {"id": 1, "name": "Rex", "tag": "dog"},
            2: {"id": 2, "name": "Tom", "tag": "cat"},
        }

    async def list_tools(self) -> Sequence[Any]:
        return await self._spec.list_tools()

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> Any:
        if name == "listPets":
            return list(self.pets.values())[: int(args.get("limit", 20))]
        if name == "pets_create":
            pet = {"id": max(self.pets) + 1, **args}
            self.pets[pet["id"]] = pet
            return pet
        if name == "weather":
            return {"city": args["city"], "temp_c": 21, "appid": args["appid"]}
        if name == "getPet":
            if args["petId"] not in self.pets:
                raise RuntimeError(f'HTTP 404 Not Found: {{"message":"no pet {args["petId"]}"}}')
            return self.pets[args["petId"]]
        raise RuntimeError(f"the fake pet shop does not implement {name}")

    async def aclose(self) -> None:
        await self._spec.aclose()


def doc_backends() -> list[Any]:
    """The tools the docs' examples call beyond the demo and the real servers."""
    local = LocalBackend()

    @local.tool(namespace="math")
    async def add(a: int, b: int = 1) -> int:
        """Add two integers."""
        return a + b

    @local.tool(namespace="desk")
    def holidays(city: str) -> list[str]:
        """Public holidays of the office in a city, as ISO dates."""
        return {"Paris": ["2026-07-14", "2026-08-15"]}.get(city, [])

    return [local, ProviderBackend("pets", Pets(), namespace="pets")]


def corpus_backends() -> list[Any]:
    """Every backend the corpus needs: the demo (help desk, real time server), the real servers, the docs' tools."""
    return [*demo_backends(), *real_backends(), *doc_backends()]
