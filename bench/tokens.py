"""Context tokens: direct tool calling vs code mode through `toolcode serve`, on real servers.

For each scenario the same task is done twice, against the same real MCP servers:

- direct: a client connected to the upstream server(s) puts every tool definition of those
  servers in context, and the model makes each call itself: every call it writes and every
  full result it reads is counted;
- code mode: a client connected to `toolcode serve` (a child process over stdio, fronting all
  the servers) puts the code-mode server's definitions in context, searches, describes the
  tools it needs, and sends one snippet; the snippet runs for real and the result the server
  returns (value, stdout, trace summary) is counted.

Both sides must reach the same answer (checked), with the same number of upstream calls
(checked against the code-mode trace). Tokens: tiktoken cl100k_base (offline copy), each item
counted once — a lower bound for both sides (a real client re-sends the context every turn,
and direct calling takes more turns).

    python bench/tokens.py            # table
    python bench/tokens.py --json     # {"scenarios": {...}, "median_ratio": x, "surface": {...}}
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from toolcode._tokens import ENCODING, TokenLedger
from toolcode._tokens import definitions_tokens as count_defs

ROOT = Path(__file__).resolve().parents[1]
NPM_BIN = ROOT / "tests" / "integration" / "node" / "node_modules" / ".bin"
REPLAY = ROOT / "bench" / "servers" / "github_replay.py"

# --------------------------------------------------------------------------- fixtures on disk

AUTHORS = [
    ("Ada", "ada@example.org"),
    ("Grace", "grace@example.org"),
    ("Linus", "linus@example.org"),
    ("Ken", "ken@example.org"),
]


def make_git_repo(path: Path, commits: int = 40) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for i in range(commits):
        name, email = AUTHORS[(i * 7 + i // 3) % len(AUTHORS)]
        f = path / f"module_{i % 6}.py"
        lines = f.read_text().splitlines() if f.exists() else []
        lines += [f"def step_{i}_{k}(x):  # change {i}" for k in range(1 + i % 4)]
        lines += [f"    return x + {i * k}" for k in range(1 + i % 4)]
        f.write_text("\n".join(lines) + "\n")
        env = {**os.environ, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email}
        env |= {"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}
        env |= {
            "GIT_AUTHOR_DATE": f"2026-01-{1 + i % 28:02d}T12:{i % 60:02d}:00",
            "GIT_COMMITTER_DATE": f"2026-01-{1 + i % 28:02d}T12:{i % 60:02d}:00",
        }
        subprocess.run(["git", "-C", str(path), "add", "-A"], check=True, env=env)
        subprocess.run(
            ["git", "-C", str(path), "commit", "-q", "-m", f"Change {i}: update module_{i % 6}"], check=True, env=env
        )


def make_log_folder(path: Path, files: int = 40) -> None:
    path.mkdir(parents=True, exist_ok=True)
    levels = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"]
    for i in range(files):
        rows = []
        for k in range(30):
            level = levels[(i * 31 + k * 7) % len(levels)] if i % 3 == 0 else levels[(i + k) % 4]
            rows.append(
                f"2026-01-{1 + i % 28:02d} 12:{k:02d}:00 {level} worker-{k % 5} "
                f"processed batch {i * 100 + k} in {k * 3 + i} ms"
            )
        (path / f"service_{i:02d}.log.txt").write_text("\n".join(rows) + "\n")


_FIRST = "Ana Ben Chloe Dev Emma Farid Gia Hugo Ines Jon Kira Liam Mia Nour Omar Pia Quinn Rosa Sami Tara"
_FIRST += " Uma Vic Wen Xavi Yara"
_LAST = "Silva Okafor Martin Patel Berg Haddad Rossi Dubois Costa Kim Ivanova Murphy Novak Saleh Aziz Lund Reyes Garcia"
_LAST += " Mensah Singh Mori Hale Chen Ruiz Nasser"
_OFFICES = ["Paris", "Tokyo", "Austin", "Lagos"]
_ROLES = ["engineer", "designer", "manager", "engineer", "analyst"]
ROSTER = [
    {
        "name": f"{first} {last}",
        "office": _OFFICES[(ord(first[0]) + len(last)) % 4],
        "role": _ROLES[(ord(last[0]) + len(first)) % 5],
    }
    for first, last in zip(_FIRST.split(), _LAST.split(), strict=True)
]

ZONES = [
    "Europe/Paris", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "America/Sao_Paulo", "Africa/Nairobi",
    "Europe/London", "Asia/Kolkata", "America/Los_Angeles", "Asia/Singapore", "Europe/Berlin", "Pacific/Auckland",
]  # fmt: skip

NUMBERS = [17.5, 3, 42, 8.25, 99, 1, 64, 12, 7.75, 30, 5, 28, 19, 2.5, 77, 13, 50, 4, 11, 9, 36, 21, 6, 45, 3.5]


# --------------------------------------------------------------------------- scenarios


@dataclass
class Direct:
    """The direct side: one client per upstream server; counts what the model writes and reads."""

    clients: dict[str, Client]
    ledger: TokenLedger = field(default_factory=TokenLedger)

    async def call(self, server: str, tool: str, args: dict[str, Any]) -> Any:
        self.ledger.add_call(tool, args)
        res = await self.clients[server].call_tool(tool, args)
        wire = res.model_dump(by_alias=True, mode="json", exclude_none=True)
        self.ledger.add_result(tool, wire)
        if res.is_error:
            raise RuntimeError(f"{server}:{tool} failed: {wire}")
        # What a snippet's run_tool returns: structured content, else one JSON text block, else the text.
        if res.structured_content is not None:
            return res.structured_content
        texts = [b.text for b in res.content if b.type == "text"]  # type: ignore[union-attr]
        text = "\n".join(texts)
        if len(texts) == 1:
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                return text
        return text


@dataclass
class Scenario:
    name: str
    servers: list[str]
    search: str
    describe: list[str]
    code: str
    direct: Callable[[Direct, dict[str, Any]], Awaitable[Any]]
    input: dict[str, Any] = field(default_factory=dict[str, Any])


GITHUB_TRIAGE = """\
issues = run_tool("github:list_issues", {"owner": "acme", "repo": "toolkit", "state": "OPEN", "perPage": 30})
busy = []
for issue in issues:
    comments = run_tool("github:issue_read", {"method": "get_comments", "owner": "acme", "repo": "toolkit",
                                              "issue_number": issue["number"]})
    commenters = sorted({c["user"]["login"] for c in comments})
    busy.append({"number": issue["number"], "title": issue["title"],
                 "comments": len(comments), "people": len(commenters)})
busy.sort(key=lambda b: (-b["comments"], b["number"]))
__out = busy[:5]
"""


async def github_triage(d: Direct, inp: dict[str, Any]) -> Any:
    issues = await d.call("github", "list_issues", {"owner": "acme", "repo": "toolkit", "state": "OPEN", "perPage": 30})
    busy = []
    for issue in issues:
        comments = await d.call(
            "github",
            "issue_read",
            {"method": "get_comments", "owner": "acme", "repo": "toolkit", "issue_number": issue["number"]},
        )
        people = {c["user"]["login"] for c in comments}
        busy.append(
            {"number": issue["number"], "title": issue["title"], "comments": len(comments), "people": len(people)}
        )
    busy.sort(key=lambda b: (-b["comments"], b["number"]))
    return busy[:5]


GITHUB_FILTER = """\
commits = run_tool("github:list_commits", {"owner": "acme", "repo": "toolkit", "perPage": 100})
mine = [c for c in commits if c["user"]["login"] == "octocat" and "fix" in c["title"].lower()]
__out = {"matching": len(mine), "shas": [c["sha"][:10] for c in mine][:10]}
"""


async def github_filter(d: Direct, inp: dict[str, Any]) -> Any:
    commits = await d.call("github", "list_commits", {"owner": "acme", "repo": "toolkit", "perPage": 100})
    mine = [c for c in commits if c["user"]["login"] == "octocat" and "fix" in c["title"].lower()]
    return {"matching": len(mine), "shas": [c["sha"][:10] for c in mine][:10]}


TIME_ZONES = """\
open_now = []
for zone in input["zones"]:
    now = run_tool("time:get_current_time", {"timezone": zone})
    hour = int(now["datetime"][11:13])
    if 9 <= hour < 17:
        open_now.append(zone)
__out = {"open": open_now, "checked": len(input["zones"])}
"""


async def time_zones(d: Direct, inp: dict[str, Any]) -> Any:
    open_now = []
    for zone in inp["zones"]:
        now = await d.call("time", "get_current_time", {"timezone": zone})
        if 9 <= int(now["datetime"][11:13]) < 17:
            open_now.append(zone)
    return {"open": open_now, "checked": len(inp["zones"])}


GIT_REVIEW = """\
log = run_tool("git:git_log", {"repo_path": input["repo"], "max_count": 40})
shas, authors = [], {}
for line in log.splitlines():
    if line.startswith("Commit: "):
        shas.append(line[8:].strip())
    elif line.startswith("Author: "):
        who = line[8:].split(" <")[0].strip()
        authors[who] = authors.get(who, 0) + 1
changed = 0
for sha in shas[:8]:
    diff = run_tool("git:git_show", {"repo_path": input["repo"], "revision": sha})
    changed += sum(1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
__out = {"commits_by_author": dict(sorted(authors.items())), "lines_added_last_8": changed}
"""


async def git_review(d: Direct, inp: dict[str, Any]) -> Any:
    log = await d.call("git", "git_log", {"repo_path": inp["repo"], "max_count": 40})
    shas: list[str] = []
    authors: dict[str, int] = {}
    for line in log.splitlines():
        if line.startswith("Commit: "):
            shas.append(line[8:].strip())
        elif line.startswith("Author: "):
            who = line[8:].split(" <")[0].strip()
            authors[who] = authors.get(who, 0) + 1
    changed = 0
    for sha in shas[:8]:
        diff = await d.call("git", "git_show", {"repo_path": inp["repo"], "revision": sha})
        changed += sum(1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
    return {"commits_by_author": dict(sorted(authors.items())), "lines_added_last_8": changed}


FS_ERRORS = """\
listing = run_tool("filesystem:list_directory", {"path": input["folder"]})
names = [line[7:] for line in listing["content"].splitlines() if line.startswith("[FILE] ") and line.endswith(".txt")]
found = []
for name in sorted(names):
    text = run_tool("filesystem:read_text_file", {"path": input["folder"] + "/" + name})["content"]
    errors = [line for line in text.splitlines() if " ERROR " in line]
    if errors:
        found.append({"file": name, "errors": len(errors), "first": errors[0][:19]})
__out = {"files_scanned": len(names), "with_errors": found}
"""


async def fs_errors(d: Direct, inp: dict[str, Any]) -> Any:
    listing = await d.call("filesystem", "list_directory", {"path": inp["folder"]})
    names = [
        line[7:] for line in listing["content"].splitlines() if line.startswith("[FILE] ") and line.endswith(".txt")
    ]
    found = []
    for name in sorted(names):
        text = (await d.call("filesystem", "read_text_file", {"path": inp["folder"] + "/" + name}))["content"]
        errors = [line for line in text.splitlines() if " ERROR " in line]
        if errors:
            found.append({"file": name, "errors": len(errors), "first": errors[0][:19]})
    return {"files_scanned": len(names), "with_errors": found}


MEMORY_ROSTER = """\
entities = [{"name": p["name"], "entityType": "person",
             "observations": ["office: " + p["office"], "role: " + p["role"]]} for p in input["roster"]]
run_tool("memory:create_entities", {"entities": entities})
graph = run_tool("memory:read_graph", {})
paris = [e["name"] for e in graph["entities"]
         if "office: Paris" in e["observations"] and "role: engineer" in e["observations"]]
__out = {"people": len(graph["entities"]), "paris_engineers": sorted(paris)}
"""


async def memory_roster(d: Direct, inp: dict[str, Any]) -> Any:
    entities = [
        {"name": p["name"], "entityType": "person", "observations": ["office: " + p["office"], "role: " + p["role"]]}
        for p in inp["roster"]
    ]
    await d.call("memory", "create_entities", {"entities": entities})
    graph = await d.call("memory", "read_graph", {})
    paris = [
        e["name"]
        for e in graph["entities"]
        if "office: Paris" in e["observations"] and "role: engineer" in e["observations"]
    ]
    return {"people": len(graph["entities"]), "paris_engineers": sorted(paris)}


EVERYTHING_SUM = """\
total = input["numbers"][0]
for n in input["numbers"][1:]:
    res = run_tool("everything:get-sum", {"a": total, "b": n})
    total = float(res.split(" is ")[-1].rstrip(".")) if isinstance(res, str) else res["result"]
__out = {"total": total, "count": len(input["numbers"])}
"""


async def everything_sum(d: Direct, inp: dict[str, Any]) -> Any:
    total = inp["numbers"][0]
    for n in inp["numbers"][1:]:
        res = await d.call("everything", "get-sum", {"a": total, "b": n})
        total = float(res.split(" is ")[-1].rstrip(".")) if isinstance(res, str) else res["result"]
    return {"total": total, "count": len(inp["numbers"])}


def scenarios(repo: Path, folder: Path) -> list[Scenario]:
    return [
        Scenario("github_issue_triage", ["github"], "list issues of a repository and read issue comments",
                 ["github:list_issues", "github:issue_read"], GITHUB_TRIAGE, github_triage),
        Scenario("github_commit_filter", ["github"], "list commits of a repository", ["github:list_commits"],
                 GITHUB_FILTER, github_filter),
        Scenario("time_business_hours", ["time"], "current time in a timezone", ["time:get_current_time"],
                 TIME_ZONES, time_zones, {"zones": ZONES}),
        Scenario("git_log_review", ["git"], "commit log and show a commit diff", ["git:git_log", "git:git_show"],
                 GIT_REVIEW, git_review, {"repo": str(repo)}),
        Scenario("filesystem_error_scan", ["filesystem"], "list a directory and read text files",
                 ["filesystem:list_directory", "filesystem:read_text_file"], FS_ERRORS, fs_errors,
                 {"folder": str(folder)}),
        Scenario("memory_roster", ["memory"], "create entities and read the knowledge graph",
                 ["memory:create_entities", "memory:read_graph"], MEMORY_ROSTER, memory_roster, {"roster": ROSTER}),
        Scenario("everything_running_sum", ["everything"], "add two numbers", ["everything:get-sum"],
                 EVERYTHING_SUM, everything_sum, {"numbers": NUMBERS}),
    ]  # fmt: skip


# --------------------------------------------------------------------------- servers


def server_params(tmp: Path, memory_file: Path) -> dict[str, dict[str, Any]]:
    """`mcpServers` entries for every server the scenarios use."""
    for exe in ("mcp-server-everything", "mcp-server-filesystem", "mcp-server-memory"):
        if not (NPM_BIN / exe).exists():
            sys.exit(f"missing {NPM_BIN / exe}: run `npm ci` in tests/integration/node first")
    return {
        "github": {"command": sys.executable, "args": [str(REPLAY)]},
        "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "git": {"command": sys.executable, "args": ["-m", "mcp_server_git"]},
        "filesystem": {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(tmp / "logs")]},
        "memory": {"command": str(NPM_BIN / "mcp-server-memory"), "env": {"MEMORY_FILE_PATH": str(memory_file)}},
        "everything": {"command": str(NPM_BIN / "mcp-server-everything"), "args": []},
    }


def _stdio(entry: dict[str, Any]) -> StdioServerParameters:
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "SYSTEMROOT") if k in os.environ}
    env.update(entry.get("env", {}))
    return StdioServerParameters(command=entry["command"], args=entry.get("args", []), env=env)


def _wire(obj: Any) -> dict[str, Any]:
    return obj.model_dump(by_alias=True, mode="json", exclude_none=True)


async def run_codemode(client: Client, defs: list[dict[str, Any]], sc: Scenario) -> tuple[TokenLedger, Any, int]:
    ledger = TokenLedger()
    ledger.add_definitions(defs)

    async def call(name: str, args: dict[str, Any]) -> Any:
        ledger.add_call(name, args)
        res = await client.call_tool(name, args)
        ledger.add_result(name, _wire(res))
        if res.is_error:
            raise RuntimeError(f"{sc.name}: {name} failed: {res.content}")
        return res.structured_content

    await call("search_tools", {"query": sc.search, "limit": 5})
    for tool_id in sc.describe:
        await call("describe_tool", {"tool_id": tool_id})
    args: dict[str, Any] = {"code": sc.code}
    if sc.input:
        args["input"] = sc.input
    out = await call("execute_code", args)
    return ledger, out["value"], out["calls"]["count"]


SURFACE_CALLS = (1, 10, 100)


async def surface() -> dict[str, Any]:
    """What the model reads of `toolcode serve` itself, on the demo catalog.

    ``tools_list_tokens``: every listed definition plus the server's instructions (the same list for
    every client, whether it declares elicitation or not);
    ``stored_result_overhead_tokens``: the same for a value over the output budget (its preview
    counts as the value; the stored-result line and the resource link are the overhead).
    ``execute_result_overhead_tokens``: what an ``execute_code`` result adds to the snippet's own
    value and stdout, for 1, 10 and 100 tool calls (the text content a client feeds back).
    """
    from toolcode._tokens import count_tokens, result_text
    from toolcode.demo import demo_toolbox
    from toolcode.server import CodeModeServer
    from tooldocs import json_text  # the compact JSON a result's value is written in

    out: dict[str, Any] = {}
    async with demo_toolbox() as box:
        server = CodeModeServer(box)
        async with Client(server.server) as client:
            defs = [_wire(t) for t in (await client.list_tools()).tools]
            instructions = server.server.instructions or ""
            out["tools_list_tokens"] = count_defs(defs) + count_tokens(instructions)
            out["tools"] = [d["name"] for d in defs]
        async with Client(server.server) as client:
            overhead: dict[str, int] = {}
            for n in SURFACE_CALLS:
                code = (
                    f"tickets = [run_tool('helpdesk:list_tickets', {{'office': 'Paris'}}) for _ in range({n})]\n"
                    "println('checked', len(tickets))\n"
                    "__out = sorted({t['id'] for batch in tickets for t in batch})[:3]"
                )
                res = await client.call_tool("execute_code", {"code": code})
                wire = _wire(res)
                if res.is_error or res.structured_content is None:
                    raise SystemExit(f"surface: execute_code failed: {wire}")
                sc = res.structured_content
                own = count_tokens(json_text(sc["value"])) + count_tokens(sc.get("stdout", ""))
                overhead[str(n)] = count_tokens(result_text(wire)) - own
            out["execute_result_overhead_tokens"] = overhead
            # A value over the budget: its preview, plus the stored-result line and resource link.
            code = "__out = [run_tool('helpdesk:list_tickets', {'office': 'Paris'}) for _ in range(200)]"
            res = await client.call_tool("execute_code", {"code": code, "options": {"max_output_chars": 2000}})
            sc = res.structured_content
            if res.is_error or sc is None or not sc.get("stored"):
                raise SystemExit(f"surface: the stored-result case did not store: {_wire(res)}")
            own = count_tokens(json_text(sc["value"]))
            out["stored_result_overhead_tokens"] = count_tokens(result_text(_wire(res))) - own
    return out


async def main_async() -> dict[str, Any]:
    results: dict[str, Any] = {}
    details: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="toolcode-tokens-") as tmpdir:
        tmp = Path(tmpdir)
        make_git_repo(tmp / "repo")
        make_log_folder(tmp / "logs")
        config = {"mcpServers": server_params(tmp, tmp / "memory-codemode.jsonl")}
        (tmp / "mcp.json").write_text(json.dumps(config))
        direct_servers = server_params(tmp, tmp / "memory-direct.jsonl")
        serve = StdioServerParameters(
            command=sys.executable,
            args=["-m", "toolcode.cli", "serve", "--config", str(tmp / "mcp.json")],
            env={k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},
        )
        async with AsyncExitStack() as stack:
            codemode = await stack.enter_async_context(Client(serve))
            defs = [_wire(t) for t in (await codemode.list_tools()).tools]
            clients: dict[str, Client] = {}
            upstream_defs: dict[str, list[dict[str, Any]]] = {}
            for name, entry in direct_servers.items():
                clients[name] = await stack.enter_async_context(Client(_stdio(entry)))
                upstream_defs[name] = [_wire(t) for t in (await clients[name].list_tools()).tools]
            all_defs = [d for defs_ in upstream_defs.values() for d in defs_]
            for sc in scenarios(tmp / "repo", tmp / "logs"):
                direct = Direct(clients)
                # A direct-calling client puts every configured server's tools in context, whatever the task.
                direct.ledger.add_definitions(all_defs)
                own_defs = sum(count_defs(upstream_defs[server]) for server in sc.servers)
                answer = await sc.direct(direct, sc.input)
                cm, value, calls = await run_codemode(codemode, defs, sc)
                if json.loads(json.dumps(answer)) != value:
                    raise SystemExit(f"{sc.name}: answers differ\n direct:    {answer}\n code mode: {value}")
                if calls != direct.ledger.tool_calls:
                    raise SystemExit(f"{sc.name}: {calls} calls in code mode vs {direct.ledger.tool_calls} direct")
                own_total = direct.ledger.total - direct.ledger.definitions + own_defs
                results[sc.name] = {
                    "direct_tokens": direct.ledger.total,
                    "codemode_tokens": cm.total,
                    "ratio": round(direct.ledger.total / cm.total, 2),
                    "tool_calls": calls,
                    "direct_own_servers_tokens": own_total,
                    "ratio_own_servers": round(own_total / cm.total, 2),
                }
                details[sc.name] = {
                    "direct": direct.ledger.to_dict(),
                    "codemode": cm.to_dict(),
                    "direct_own_servers_tokens": own_total,
                    "ratio_own_servers": round(own_total / cm.total, 2),
                }
    median = round(statistics.median(r["ratio"] for r in results.values()), 2)
    own = round(statistics.median(d["ratio_own_servers"] for d in details.values()), 2)
    return {
        "scenarios": results,
        "median_ratio": median,
        "median_ratio_own_servers": own,
        "surface": await surface(),
        "_details": details,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    ns = parser.parse_args()
    import logging

    from toolcode.server import log_to_stderr

    log_to_stderr(logging.WARNING)  # stdout carries the report
    report = anyio.run(main_async)
    details = report.pop("_details")
    if ns.json:
        print(json.dumps(report, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(
        "scenario", "calls", "direct: calls+results", "direct total", "code mode: calls+results", "code mode total",
        "ratio", "direct, own server only", "ratio",
        title=f"context tokens (tiktoken {ENCODING})", title_justify="left",
    )  # fmt: skip
    for name, r in report["scenarios"].items():
        d, c = details[name]["direct"], details[name]["codemode"]
        table.add_row(
            name, str(r["tool_calls"]), f"{d['calls'] + d['results']:,}", f"{r['direct_tokens']:,}",
            f"{c['calls'] + c['results']:,}", f"{r['codemode_tokens']:,}", f"{r['ratio']:.1f}x",
            f"{details[name]['direct_own_servers_tokens']:,}", f"{details[name]['ratio_own_servers']:.1f}x",
        )  # fmt: skip
    console = Console(width=200)
    console.print(table)
    any_detail = next(iter(details.values()))
    console.print(
        f"definitions in context: direct {any_detail['direct']['definitions']:,} (all configured servers), "
        f"code mode {any_detail['codemode']['definitions']:,} (toolcode serve)"
    )
    own = report["median_ratio_own_servers"]
    console.print(
        f"median ratio: {report['median_ratio']:.1f}x (direct with only the scenario's own server: {own:.1f}x)"
    )
    sf = report["surface"]
    console.print(
        f"surface: tools/list {sf['tools_list_tokens']} tokens ({len(sf['tools'])} tools + instructions); "
        "execute_code result overhead "
        + ", ".join(f"{k} calls: {v}" for k, v in sf["execute_result_overhead_tokens"].items())
        + f" tokens; a stored result adds {sf['stored_result_overhead_tokens']} tokens"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
