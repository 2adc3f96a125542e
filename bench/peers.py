"""Fixed costs beside the peers: toolcode, FastMCP CodeMode and pydantic-ai-harness CodeMode, in one run.

The peers run in their own environment, outside the workspace lock: the first run makes it with
uv (``uv venv`` + ``uv pip install``, the newest ``fastmcp[code-mode]`` and
``pydantic-ai-harness[code-mode]`` that install, on ``pydantic-monty<1.5`` like the workspace) in
``bench/results/peers-env`` (``--peers-env DIR``; ``--refresh-peers`` upgrades it). Each peer runs
in a child process of that environment (``bench/_peers_child.py``, JSON lines); toolcode runs here.
Timed rows go in rounds, the systems one after another in each round (A, B, C, A, B, C, ...),
and every ratio is taken within a round, so that load on a shared machine cancels out.

Rows (``--only`` takes their names):

* ``definitions``: tokens (tiktoken ``cl100k_base``, offline) of each system's tool definitions
  and instructions as its MCP server lists them, on the same one-tool catalog; harness has no
  MCP server: its ``run_code`` definition as a model receives it, with one tool and with GitHub's 117;
* ``result``: tokens a successful result adds beyond its value, through each system's MCP server
  (harness: the tool-return text a model reads), for an int and a small dict;
* ``docs``: schema-level docs of GitHub's 117 tools: toolcode's ``describe_tool`` (level
  ``schema``) against FastMCP's ``get_schema`` (``detailed``), one call per tool, and harness's
  signatures in ``run_code``'s description (its description with the 117 tools minus without);
* ``warm``: a warm run of ``__out = 1``: toolcode with the check before the run on and off,
  FastMCP's ``execute`` (its server's call path, no transport), harness's ``run_code`` (through
  pydantic-ai's tool manager, its REPL warm), and for reference pydantic-monty alone: a run in a
  worker of its own (checked out ahead, given back unawaited: the least a run that shares nothing
  costs) and a feed to a REPL held across runs (what harness's warm run stands on);
* ``typecheck``: the module-style check at 117 tools (``bench/typecheck.py``'s timing: the
  check alone, and a whole run with it on minus off);
* ``bomb``: ``__out = 10**10**8`` under each system's default limits: time to the error, and the error;
* ``rss``: resident memory of the server's main process over stdio, in front of the same upstream
  (``bench/servers/github_replay.py``), after ``tools/list`` and before the first search, then
  after it: ``toolcode serve`` with semantic search on (and off, for reference), FastMCP's proxy
  with CodeMode;
* ``session``: toolcode's stored session state after 2,000 runs holding two ints, and the largest
  it was over those runs;
* ``per_call``: per call, ``(p50(N calls) - p50(0 calls)) / N``, same local tool (``f(x) = x + 1``)
  and the same snippet in each system's syntax: in process (toolcode's core, FastMCP's server
  call path, harness's tool manager) and over stdio (``toolcode serve``'s server, FastMCP's server,
  each a child process, driven by the same MCP client);
* ``search``: MRR@10 on the shared evaluation sets (``bench/search_quality.py``'s sets): toolcode
  lexical and fused against FastMCP's BM25 search and pydantic-ai's keyword tool search.

    uv run python bench/peers.py                 # every row, table
    uv run python bench/peers.py --quick --json  # small repeat counts, one JSON document
    uv run python bench/peers.py --only warm,per_call --rounds 9
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import IO, Any

import anyio
import psutil
import pydantic_monty as pm
from mcp import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _eval as E
from engine_overhead import f  # the local tool of the engine bench: async, returns x + 1
from tokens import _wire
from toolcode import Toolbox
from toolcode._settings import Settings, StateSettings
from toolcode._tokens import ENCODING, count_tokens, definitions_tokens, result_text
from toolrun import LocalBackend, ProviderBackend

SELF = Path(__file__).resolve()
HERE = SELF.parent
CHILD = HERE / "_peers_child.py"
REPLAY = HERE / "servers" / "github_replay.py"
ENV_DIR = HERE / "results" / "peers-env"
PEER_REQUIREMENTS = ("fastmcp[code-mode]", "pydantic-ai-harness[code-mode]", "pydantic-monty<1.5")
ROWS = ("definitions", "result", "docs", "warm", "typecheck", "bomb", "rss", "session", "per_call", "search")
PEERS = ("fastmcp", "harness")
BOMB = "__out = 10**10**8"
WARM = "__out = 1"
SESSION_RUNS = 2000
VALUES: dict[str, Any] = {"int": 42, "dict": {"office": "Paris", "open": 3, "ids": ["T-1", "T-2"]}}

# The same loop in each system's syntax: N calls to f, their results summed (checked).
LOOPS = {
    "toolcode": "total = 0\nfor i in range({n}):\n    total += run_tool('bench:f', {{'x': i}})\n__out = total",
    "fastmcp": (
        "total = 0\nfor i in range({n}):\n    total += (await call_tool('f', {{'x': i}}))['result']\nreturn total"
    ),
    "harness": "total = 0\nfor i in range({n}):\n    total += await f(x=i)\ntotal",
}
# What a snippet returns a value with, in each system.
RETURNS = {"toolcode": "__out = {v!r}", "fastmcp": "return {v!r}", "harness": "{v!r}"}


def bench_backend() -> LocalBackend:
    local = LocalBackend()
    local.add(f, name="f", namespace="bench")
    return local


def _p50(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def _spread(xs: Sequence[float], digits: int = 3) -> dict[str, Any]:
    """Median, range and every round's figure."""
    return {
        "median": round(statistics.median(xs), digits),
        "min": round(min(xs), digits),
        "max": round(max(xs), digits),
        "rounds": [round(x, digits) for x in xs],
    }


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}


# --------------------------------------------------------------------------- the peers' environment


def ensure_peers_env(env_dir: Path, refresh: bool) -> Path:
    """The peers' interpreter, after making (or upgrading) their environment with uv."""
    python = env_dir / "bin" / "python"
    stamp = env_dir / "bench-requirements.txt"
    wanted = "\n".join(PEER_REQUIREMENTS) + "\n"
    if python.exists() and stamp.exists() and stamp.read_text() == wanted and not refresh:
        return python
    uv = shutil.which("uv")
    if uv is None:
        raise SystemExit("uv is needed to install the peers (https://docs.astral.sh/uv/)")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    print(f"installing the peers into {env_dir} ...", file=sys.stderr)
    if not python.exists():
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        subprocess.run([uv, "venv", "--quiet", "--python", version, str(env_dir)], check=True, env=env)
    cmd = [uv, "pip", "install", "--quiet", "--python", str(python), *PEER_REQUIREMENTS]
    subprocess.run([*cmd, "--upgrade"] if refresh else cmd, check=True, env=env)
    stamp.write_text(wanted)
    return python


class Peer:
    """One peer in a child process of its environment, answering JSON lines."""

    def __init__(self, python: Path, system: str, log: IO[str]) -> None:
        self.system = system
        self._log = log
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(
            [str(python), str(CHILD), "protocol", system],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            encoding="utf-8",
        )

    def call(self, op: str, args: Mapping[str, Any]) -> Any:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        with self._lock:
            self._proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.system}: the child process ended (its stderr is in {self._log.name})")
        answer = json.loads(line)
        if not answer["ok"]:
            raise SystemExit(f"{self.system}: {op}: {answer['error']}")
        return answer["result"]

    async def request(self, op: str, **args: Any) -> Any:
        return await anyio.to_thread.run_sync(self.call, op, args)

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()


# --------------------------------------------------------------------------- rounds


Batch = Callable[[], Awaitable[float]]


async def in_rounds(systems: Mapping[str, Batch], rounds: int) -> dict[str, list[float]]:
    """Each system's figure per round, the systems in turn within each round."""
    out: dict[str, list[float]] = {name: [] for name in systems}
    for _ in range(rounds):
        for name, batch in systems.items():
            out[name].append(await batch())
    return out


def ratios(per_round: Mapping[str, list[float]], num: str, den: str) -> dict[str, Any]:
    return _spread([a / b for a, b in zip(per_round[num], per_round[den], strict=True)], 2)


# --------------------------------------------------------------------------- toolcode helpers


def _settings(state_dir: Path) -> Settings:
    return Settings(state=StateSettings(dir=str(state_dir)))


async def _timed_execute(box: Toolbox, code: str, expect: Any, **kw: Any) -> float:
    t0 = time.perf_counter()
    out = await box.codemode.execute(code, **kw)
    ms = (time.perf_counter() - t0) * 1000.0
    if not out.ok or (expect is not None and out.value != expect):
        raise SystemExit(f"toolcode: {code!r} gave {out.error or out.value!r}")
    return ms


def _github_catalog(data: Path) -> list[dict[str, Any]]:
    return E.load_data(data, "github_mcp_server_tools.json")["tools"]


def _peer_records(tools: Sequence[Mapping[str, Any]], names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Catalog records as the peers register them: name, description, input schema."""
    return [
        {
            "name": names[i] if names is not None else str(t["name"]),
            "description": str(t.get("description") or ""),
            "inputSchema": t.get("input_schema") or t.get("inputSchema") or {"type": "object", "properties": {}},
        }
        for i, t in enumerate(tools)
    ]


def _own_tokens(value: Any) -> int:
    """A value's own tokens: its cheaper JSON form (with or without spaces)."""
    spaced = json.dumps(value, ensure_ascii=False)
    compact = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return min(count_tokens(spaced), count_tokens(compact))


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --------------------------------------------------------------------------- rows


class Bench:
    def __init__(self, args: argparse.Namespace, peers: dict[str, Peer], tmp: Path, peer_python: Path) -> None:
        self.args = args
        self.peers = peers
        self.tmp = tmp
        self.peer_python = peer_python
        self.box: Toolbox | None = None

    @property
    def small(self) -> Toolbox:
        assert self.box is not None
        return self.box

    # -- tokens

    async def definitions(self) -> dict[str, Any]:
        from toolcode.server import CodeModeServer

        server = CodeModeServer(self.small)
        async with Client(server.server) as client:
            defs = [_wire(t) for t in (await client.list_tools()).tools]
        instructions = server.server.instructions or ""
        out: dict[str, Any] = {
            "toolcode": {
                "tokens": definitions_tokens(defs) + count_tokens(instructions),
                "tools": [d["name"] for d in defs],
                "instructions_tokens": count_tokens(instructions),
            }
        }
        fm = await self.peers["fastmcp"].request("definitions", catalog="small")
        out["fastmcp"] = {
            "tokens": definitions_tokens(fm["tools"]) + count_tokens(fm["instructions"]),
            "tools": [d["name"] for d in fm["tools"]],
        }
        harness = self.peers["harness"]
        small = await harness.request("definitions", catalog="small")
        await harness.request("load_catalog", key="github", tools=_peer_records(_github_catalog(self.args.data)))
        github = await harness.request("definitions", catalog="github")
        out["harness"] = {
            "tokens": definitions_tokens(small["tools"]),
            "tokens_117_tools": definitions_tokens(github["tools"]),
            "tools": [d["name"] for d in small["tools"]],
            "note": "no MCP server: run_code's definition as a model receives it (the tools' signatures inside)",
        }
        return out

    async def result(self) -> dict[str, Any]:
        from toolcode.server import CodeModeServer

        out: dict[str, Any] = {"toolcode": {}, "fastmcp": {}, "harness": {}}
        server = CodeModeServer(self.small)
        async with Client(server.server) as client:
            for kind, value in VALUES.items():
                own = _own_tokens(value)
                res = await client.call_tool("execute_code", {"code": RETURNS["toolcode"].format(v=value)})
                wire = _wire(res)
                if res.is_error or res.structured_content is None or res.structured_content.get("value") != value:
                    raise SystemExit(f"toolcode: result row: {wire}")
                out["toolcode"][kind] = {
                    "text": count_tokens(result_text(wire)) - own,
                    "structured": count_tokens(_compact(wire["structuredContent"])) - own,
                    "read": result_text(wire),
                }
        for kind, value in VALUES.items():
            own = _own_tokens(value)
            wire = await self.peers["fastmcp"].request("result", code=RETURNS["fastmcp"].format(v=value))
            row: dict[str, Any] = {"text": count_tokens(result_text(wire)) - own, "read": result_text(wire)}
            if wire.get("structuredContent") is not None:
                row["structured"] = count_tokens(_compact(wire["structuredContent"])) - own
            out["fastmcp"][kind] = row
            model = await self.peers["harness"].request("result", code=RETURNS["harness"].format(v=value))
            out["harness"][kind] = {"text": count_tokens(model["text"]) - own, "read": model["text"]}
        out["note"] = (
            "text: what a client feeds back (text content); structured: the structuredContent JSON, for a "
            "client that reads it; harness: the tool-return text a model reads (no MCP server)"
        )
        return out

    async def docs(self) -> dict[str, Any]:
        from toolcode.server import CodeModeServer
        from typecheck import AcceptAll

        tools = _github_catalog(self.args.data)
        names = [str(t["name"]) for t in tools]
        state = self.tmp / "docs-state"
        ours: list[int] = []
        backend = ProviderBackend("github", AcceptAll(tools), namespace="github")
        async with Toolbox([backend], settings=_settings(state)) as box:
            server = CodeModeServer(box)
            async with Client(server.server) as client:
                for name in names:
                    res = await client.call_tool("describe_tool", {"tool_id": f"github:{name}", "level": "schema"})
                    if res.is_error:
                        raise SystemExit(f"toolcode: describe_tool github:{name}: {_wire(res)}")
                    ours.append(count_tokens(result_text(_wire(res))))
        fastmcp = self.peers["fastmcp"]
        await fastmcp.request("load_catalog", key="github", server=True, tools=_peer_records(tools))
        wires = await fastmcp.request("docs", catalog="github", names=names, detail="detailed")
        theirs = [count_tokens(result_text(w)) for w in wires]
        harness = self.peers["harness"]
        await harness.request("load_catalog", key="github", tools=_peer_records(tools))
        await harness.request("load_catalog", key="empty", tools=[])
        with_tools = await harness.request("definitions", catalog="github")
        without = await harness.request("definitions", catalog="empty")
        harness_total = count_tokens(with_tools["tools"][0]["description"]) - count_tokens(
            without["tools"][0]["description"]
        )
        per_tool = [a / b for a, b in zip(ours, theirs, strict=True)]
        return {
            "tools": len(names),
            "toolcode_total": sum(ours),
            "fastmcp_detailed_total": sum(theirs),
            "harness_total": harness_total,
            "toolcode_over_fastmcp_total": round(sum(ours) / sum(theirs), 2),
            "toolcode_over_fastmcp_per_tool": {
                "median": round(statistics.median(per_tool), 2),
                "p10": round(statistics.quantiles(per_tool, n=10)[0], 2),
                "p90": round(statistics.quantiles(per_tool, n=10)[-1], 2),
                "min": round(min(per_tool), 2),
                "max": round(max(per_tool), 2),
            },
            "note": "toolcode: describe_tool level schema; FastMCP: get_schema detail 'detailed' (one call per tool, "
            "the result text); harness: run_code's description with the 117 tools minus without (shared type "
            "definitions written once)",
        }

    # -- time

    async def warm(self) -> dict[str, Any]:
        box, repeat = self.small, self.args.repeat

        def ours(options: dict[str, Any]) -> Batch:
            async def batch() -> float:
                return _p50([await _timed_execute(box, WARM, 1, options=options) for _ in range(repeat)])

            return batch

        def peer(name: str) -> Batch:
            async def batch() -> float:
                (times,) = await self.peers[name].request("time", codes=[WARM], repeat=repeat)
                return _p50(times)

            return batch

        async with AsyncExitStack() as stack:
            pool = await stack.enter_async_context(pm.AsyncMonty(min_processes=2))
            repl = await stack.enter_async_context(pool.checkout())

            async def fresh() -> float:
                # What a run that shares nothing needs at the least: a worker of its own, fed, given back
                # (the next checkout started as the run starts, the give-back started and not waited for,
                # as toolcode does: left unstarted, both made this floor slower than what it stands for).
                times, spare, leaving = [], asyncio.ensure_future(pool.checkout().__aenter__()), []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    worker = await spare
                    spare = asyncio.ensure_future(pool.checkout().__aenter__())
                    await worker.feed_run(WARM)
                    times.append((time.perf_counter() - t0) * 1000.0)
                    leaving.append(asyncio.ensure_future(worker.__aexit__(None, None, None)))
                await asyncio.gather(*leaving, (await spare).__aexit__(None, None, None))
                return _p50(times)

            async def held() -> float:
                # A REPL kept across runs (harness's warm run_code): one feed, nothing checked out or given back.
                times = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    await repl.feed_run(WARM)
                    times.append((time.perf_counter() - t0) * 1000.0)
                return _p50(times)

            systems = {
                "toolcode_check_on": ours({"type_check": "strict"}),
                "toolcode_check_off": ours({"type_check": "off"}),
                "fastmcp": peer("fastmcp"),
                "harness": peer("harness"),
                "monty_fresh_worker": fresh,
                "monty_held_repl": held,
            }
            for batch in systems.values():  # warm-up: pools started, checker and REPL warm
                await batch()
            per_round = await in_rounds(systems, self.args.rounds)
        return {
            "ms_p50": {name: _spread(v) for name, v in per_round.items()},
            "ratio_check_on_to_harness": ratios(per_round, "toolcode_check_on", "harness"),
            "ratio_check_off_to_harness": ratios(per_round, "toolcode_check_off", "harness"),
            "ratio_check_on_to_fastmcp": ratios(per_round, "toolcode_check_on", "fastmcp"),
            "ratio_fresh_worker_to_harness": ratios(per_round, "monty_fresh_worker", "harness"),
            "runs_per_round": repeat,
            "note": "harness type-checks only the first snippet of its REPL session: its warm run_code is unchecked; "
            "monty_fresh_worker and monty_held_repl are pydantic-monty alone, in this process: a run in a worker of "
            "its own (what a run that shares nothing costs at the least) and a feed to a REPL kept across runs",
        }

    async def typecheck(self) -> dict[str, Any]:
        from typecheck import _backends, timing

        async with Toolbox(_backends(), engine="monty", settings=_settings(self.tmp / "typecheck-state")) as box:
            await timing(box, 3)  # warm: stubs rendered, checker session started
            result = await timing(box, max(self.args.repeat, 5))
        return {**result, "tools": 117, "note": "bench/typecheck.py's timing: check alone; whole run on minus off"}

    async def bomb(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        out = await self.small.codemode.execute(BOMB)
        ms = (time.perf_counter() - t0) * 1000.0
        result: dict[str, Any] = {
            "toolcode": {
                "ms": round(ms, 1),
                "error": None if out.error is None else f"{out.error.code}: {out.error.message}"[:600],
            }
        }
        for name, peer in self.peers.items():
            got = await peer.request("bomb", code=BOMB)
            result[name] = {"ms": round(got["ms"], 1), "error": got["error"]}
        return result

    async def session(self) -> dict[str, Any]:
        sizes: dict[int, int] = {}
        async with Toolbox([], settings=_settings(self.tmp / "session-state")) as box:
            out = await box.codemode.execute("a = 0\nb = 0", session="two")
            assert out.ok and out.session is not None, out.error
            sizes[0] = largest = out.session.size_bytes
            for i in range(1, SESSION_RUNS + 1):
                out = await box.codemode.execute("a = a + 1\nb = b + 2", session="two")
                if not out.ok or out.session is None:
                    raise SystemExit(f"toolcode: session run {i}: {out.error}")
                largest = max(largest, out.session.size_bytes)
                if i in (1, 10, 100, 1000, SESSION_RUNS):
                    sizes[i] = out.session.size_bytes
            check = await box.codemode.execute("__out = [a, b]", session="two")
            assert check.value == [SESSION_RUNS, 2 * SESSION_RUNS], check.value
        return {
            "runs": SESSION_RUNS,
            "bytes_after": {str(k): v for k, v in sizes.items()},
            "bytes_per_run": round((sizes[SESSION_RUNS] - sizes[1]) / (SESSION_RUNS - 1), 1),
            "largest_bytes": largest,
            "snippet": "a = a + 1; b = b + 2 (after a = 0; b = 0)",
        }

    async def rss(self) -> dict[str, Any]:
        config = {"mcpServers": {"github": {"command": sys.executable, "args": [str(REPLAY)]}}}
        out: dict[str, Any] = {}
        for name, semantic in (("toolcode_semantic_on", True), ("toolcode_semantic_off", False)):
            path = self.tmp / f"{name}.json"
            path.write_text(json.dumps({**config, "toolcode": {"search": {"semantic": semantic}}}))
            args = ["-m", "toolcode.cli", "serve", "--config", str(path), "--state-dir", str(self.tmp / name)]
            out[name] = await _server_rss(
                StdioServerParameters(command=sys.executable, args=args, env=_env()), "search_tools"
            )
        path = self.tmp / "fastmcp-proxy.json"
        path.write_text(json.dumps(config))
        args = [str(CHILD), "serve-fastmcp-proxy", str(path)]
        out["fastmcp"] = await _server_rss(
            StdioServerParameters(command=str(self.peer_python), args=args, env=_env()), "search"
        )
        out["note"] = "main process only (the upstream github_replay.py child excluded), VmRSS"
        return out

    async def per_call(self) -> dict[str, Any]:
        n, repeat = self.args.calls, self.args.repeat
        expect = n * (n + 1) // 2
        box = self.small

        def ours() -> Batch:
            codes = [LOOPS["toolcode"].format(n=0), LOOPS["toolcode"].format(n=n)]

            async def batch() -> float:
                t0: list[float] = []
                tn: list[float] = []
                for _ in range(repeat):
                    t0.append(await _timed_execute(box, codes[0], 0))
                    tn.append(await _timed_execute(box, codes[1], expect))
                return (_p50(tn) - _p50(t0)) * 1000.0 / n

            return batch

        def peer(name: str) -> Batch:
            codes = [LOOPS[name].format(n=0), LOOPS[name].format(n=n)]

            async def batch() -> float:
                t0, tn = await self.peers[name].request("time", codes=codes, repeat=repeat, expect=[0, expect])
                return (_p50(tn) - _p50(t0)) * 1000.0 / n

            return batch

        def over_stdio(client: Client, tool: str, system: str, read: Callable[[Any], Any]) -> Batch:
            codes = [LOOPS[system].format(n=0), LOOPS[system].format(n=n)]

            async def run(code: str, want: int) -> float:
                t0 = time.perf_counter()
                res = await client.call_tool(tool, {"code": code})
                ms = (time.perf_counter() - t0) * 1000.0
                if res.is_error or read(res) != want:
                    raise SystemExit(f"{system} over stdio: {code!r} gave {_wire(res)}")
                return ms

            async def batch() -> float:
                t0: list[float] = []
                tn: list[float] = []
                for _ in range(repeat):
                    t0.append(await run(codes[0], 0))
                    tn.append(await run(codes[1], expect))
                return (_p50(tn) - _p50(t0)) * 1000.0 / n

            return batch

        def read_toolcode(res: Any) -> Any:
            return (res.structured_content or {}).get("value")

        def read_fastmcp(res: Any) -> Any:
            text = "".join(getattr(b, "text", "") for b in res.content)
            return json.loads(text) if text else None

        args = [str(SELF), "--serve-local", str(self.tmp / "serve-local")]
        ours_stdio = StdioServerParameters(command=sys.executable, args=args, env=_env())
        args = [str(CHILD), "serve-fastmcp"]
        theirs_stdio = StdioServerParameters(command=str(self.peer_python), args=args, env=_env())
        async with AsyncExitStack() as stack:
            ours_client = await stack.enter_async_context(Client(ours_stdio))
            theirs_client = await stack.enter_async_context(Client(theirs_stdio))
            systems = {
                "toolcode": ours(),
                "fastmcp": peer("fastmcp"),
                "harness": peer("harness"),
                "toolcode_stdio": over_stdio(ours_client, "execute_code", "toolcode", read_toolcode),
                "fastmcp_stdio": over_stdio(theirs_client, "execute", "fastmcp", read_fastmcp),
            }
            for batch in systems.values():
                await batch()
            per_round = await in_rounds(systems, self.args.rounds)
        return {
            "us_per_call": {name: _spread(v, 1) for name, v in per_round.items()},
            "fastmcp_over_toolcode": ratios(per_round, "fastmcp", "toolcode"),
            "harness_over_toolcode": ratios(per_round, "harness", "toolcode"),
            "fastmcp_stdio_over_toolcode_stdio": ratios(per_round, "fastmcp_stdio", "toolcode_stdio"),
            "toolcode_stdio_over_in_process": ratios(per_round, "toolcode_stdio", "toolcode"),
            "calls": n,
            "runs_per_round": repeat,
        }

    # -- search

    async def search(self) -> dict[str, Any]:
        import bm25s  # noqa: F401  (search_quality's reference BM25; its import sets its logger to DEBUG)

        from search_quality import Engines, default_sets

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        sets, _ = default_sets(self.args.data, self.args.max_queries)
        semantic = E.semantic_available()
        engines: dict[int, Engines] = {}
        loaded: dict[int, tuple[str, dict[str, str]]] = {}
        out: dict[str, Any] = {}
        for qs in sets:
            key = id(qs.catalog)
            if key not in engines:
                engines[key] = Engines(qs.catalog, semantic)
                names = _wire_names(qs.catalog)
                catalog_key = f"catalog{len(loaded)}"
                records = _peer_records(qs.catalog, names)
                for peer in self.peers.values():
                    await peer.request("load_catalog", key=catalog_key, tools=records)
                loaded[key] = (catalog_key, dict(zip(names, (E.tool_id(r) for r in qs.catalog), strict=True)))
            eng = engines[key]
            catalog_key, to_gold = loaded[key]
            row: dict[str, Any] = {"tools": len(qs.catalog)}
            for engine in ("lexical", "fused") if semantic else ("lexical",):
                row[f"toolcode_{engine}"] = E.metrics(qs.queries, eng.run(engine))
            texts = list(dict.fromkeys(q.text for q in qs.queries if q.gold_sets))
            for name, peer in self.peers.items():
                got = await peer.request("search", key=catalog_key, queries=texts, k=E.K)
                ranked = {t: [to_gold[n] for n in r] for t, r in zip(texts, got["rankings"], strict=True)}
                metrics = E.metrics(qs.queries, lambda text, ranked=ranked: ranked[text])
                row[name] = {**metrics, "p50_ms": got["p50_ms"]}
            out[qs.name] = row
        return {
            "sets": out,
            "semantic": semantic,
            "note": "fastmcp: CodeMode's search (BM25 over name, description, parameters); harness: pydantic-ai's "
            "keyword tool search (name and description); peers' tool names are namespace_name",
        }


def _wire_names(catalog: Sequence[Mapping[str, Any]]) -> list[str]:
    """One MCP-valid, unique name per record: ``namespace_name``, as a server mounted under its namespace lists it."""
    seen: set[str] = set()
    out: list[str] = []
    for rec in catalog:
        base = re.sub(r"[^A-Za-z0-9_.\-]", "_", f"{rec['namespace']}_{rec['name']}")[:120]
        name, i = base, 1
        while name in seen:
            i += 1
            name = f"{base}_{i}"
        seen.add(name)
        out.append(name)
    return out


async def _server_rss(params: StdioServerParameters, search_tool: str) -> dict[str, Any]:
    """The server's resident memory after ``tools/list``, and after one search."""
    marker = params.args[-1]  # the config file: only the server's own command line names it

    def names_marker(proc: psutil.Process) -> bool:
        try:
            return marker in proc.cmdline()
        except psutil.Error:  # a zombie or a process that just ended: not the server
            return False

    def rss_mb() -> float:
        found = [p for p in psutil.Process().children() if names_marker(p)]
        if len(found) != 1:
            raise SystemExit(f"rss: expected one server process with {marker} in its command line, found {len(found)}")
        return round(found[0].memory_info().rss / 2**20, 1)

    t0 = time.perf_counter()
    async with Client(params) as client:
        await client.list_tools()
        ready_s = time.perf_counter() - t0
        before = rss_mb()
        res = await client.call_tool(search_tool, {"query": "list issues of a repository"})
        if res.is_error:
            raise SystemExit(f"rss: {search_tool} failed: {_wire(res)}")
        after = rss_mb()
    return {"rss_mb_before_search": before, "rss_mb_after_search": after, "ready_s": round(ready_s, 2)}


# --------------------------------------------------------------------------- serve a local tool over stdio


async def serve_local(state_dir: str) -> None:
    """``toolcode serve``'s stdio server (``serve_stdio``) over a toolbox holding the local tool ``bench:f``."""
    from toolcode.server import log_to_stderr, serve_stdio

    log_to_stderr(logging.WARNING)
    async with Toolbox([bench_backend()], settings=_settings(Path(state_dir))) as box:
        await serve_stdio(box)


# --------------------------------------------------------------------------- report


async def run(args: argparse.Namespace, peer_python: Path) -> dict[str, Any]:
    rows = [r for r in ROWS if r in args.only]
    report: dict[str, Any] = {"rows": {}}
    load_start = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="toolcode-peers-") as tmpdir:
        tmp = Path(tmpdir)
        log = (tmp / "peers-stderr.log").open("w", encoding="utf-8")
        peers = {name: Peer(peer_python, name, log) for name in PEERS}
        try:
            versions = await peers["fastmcp"].request("info")
            from importlib.metadata import version

            versions["toolcode"] = version("toolcode")
            versions["workspace pydantic-monty"] = version("pydantic-monty")
            report["versions"] = versions
            bench = Bench(args, peers, tmp, peer_python)
            async with Toolbox([bench_backend()], settings=_settings(tmp / "state")) as box:
                bench.box = box
                for row in rows:
                    t0 = time.perf_counter()
                    print(f"{row} ...", file=sys.stderr, flush=True)
                    report["rows"][row] = await getattr(bench, row)()
                    print(f"{row}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        finally:
            for peer in peers.values():
                peer.close()
            log.close()
    report["config"] = {
        "rounds": args.rounds,
        "repeat": args.repeat,
        "calls": args.calls,
        "max_queries": args.max_queries,
        "tokens": ENCODING,
        "load_average_start": load_start,
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
    }
    return report


def _fmt(x: Any, spec: str = ",.2f") -> str:
    return "—" if x is None else format(x, spec)


def _range(r: Mapping[str, Any]) -> str:
    return f"{r['median']:.2f} ({r['min']:.2f}-{r['max']:.2f})"


def _cost_rows(rows: Mapping[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(fixed cost, toolcode, FastMCP, harness, ratios) for each row that ran."""
    out: list[tuple[str, str, str, str, str]] = []
    if "definitions" in rows:
        d = rows["definitions"]
        harness = f"{d['harness']['tokens']} (run_code, 1 tool); {d['harness']['tokens_117_tools']:,} at 117 tools"
        out.append(
            (f"tools/list tokens ({ENCODING})", str(d["toolcode"]["tokens"]), str(d["fastmcp"]["tokens"]), harness, "")
        )
    if "result" in rows:
        r = rows["result"]
        for kind in VALUES:
            t, fm, h = r["toolcode"][kind], r["fastmcp"][kind], r["harness"][kind]
            theirs = f"{fm['text']}" + (f" ({fm['structured']} structuredContent)" if "structured" in fm else "")
            ours = f"{t['text']} ({t['structured']} structuredContent)"
            out.append(
                (f"tokens a result adds beyond its value ({kind})", ours, theirs, f"{h['text']} (tool-return text)", "")
            )
    if "docs" in rows:
        d = rows["docs"]
        p = d["toolcode_over_fastmcp_per_tool"]
        ratio = (
            f"toolcode / FastMCP {d['toolcode_over_fastmcp_total']:.2f} in all; per tool median {p['median']:.2f}, "
            f"p10-p90 {p['p10']:.2f}-{p['p90']:.2f}"
        )
        out.append(
            (
                f"schema-level docs, GitHub's {d['tools']} tools (tokens)",
                f"{d['toolcode_total']:,}",
                f"{d['fastmcp_detailed_total']:,} (detailed)",
                f"{d['harness_total']:,} (in run_code)",
                ratio,
            )
        )
    if "warm" in rows:
        w = rows["warm"]
        ms = w["ms_p50"]
        ours = f"{ms['toolcode_check_on']['median']:.2f} check on, {ms['toolcode_check_off']['median']:.2f} off"
        ratio = (
            f"on / harness {_range(w['ratio_check_on_to_harness'])}; "
            f"off / harness {_range(w['ratio_check_off_to_harness'])}"
        )
        fm, h = f"{ms['fastmcp']['median']:.2f}", f"{ms['harness']['median']:.2f}"
        out.append(("warm run of `__out = 1` (ms p50)", ours, fm, h, ratio))
        fresh, held = ms["monty_fresh_worker"]["median"], ms["monty_held_repl"]["median"]
        floor = f"fresh worker / harness {_range(w['ratio_fresh_worker_to_harness'])}"
        alone = "pydantic-monty alone: a fresh worker per run / a held REPL (ms p50)"
        out.append((alone, f"{fresh:.2f} / {held:.2f}", "—", "—", floor))
    if "typecheck" in rows:
        t = rows["typecheck"]
        ours = f"{t['added_ms_p50']:.2f} added per run ({t['check_ms_p50']['117_tools']:.2f} the check alone)"
        out.append(("module-style type check at 117 tools (ms p50)", ours, "—", "—", ""))
    if "bomb" in rows:
        b = rows["bomb"]

        def cell(x: Mapping[str, Any]) -> str:
            return f"{x['ms'] / 1000:.2f} s: {(x['error'] or 'no error').splitlines()[0][:60]}"

        out.append(("`10**10**8`, default limits", cell(b["toolcode"]), cell(b["fastmcp"]), cell(b["harness"]), ""))
    if "rss" in rows:
        s = rows["rss"]
        on, off, fm = s["toolcode_semantic_on"], s["toolcode_semantic_off"], s["fastmcp"]
        ours = f"{on['rss_mb_before_search']:.0f} semantic on ({off['rss_mb_before_search']:.0f} off)"
        theirs = f"{fm['rss_mb_before_search']:.0f} ({fm['rss_mb_after_search']:.0f} after a search)"
        after = f"after a search: toolcode {on['rss_mb_after_search']:.0f}"
        out.append(("server main process RSS before the first search (MB)", ours, theirs, "—", after))
    if "session" in rows:
        s = rows["session"]
        ours = f"{s['bytes_after'][str(s['runs'])]:,} B (largest over the runs {s['largest_bytes']:,} B)"
        out.append((f"session state after {s['runs']:,} runs holding two ints", ours, "—", "—", ""))
    if "per_call" in rows:
        p = rows["per_call"]
        us = p["us_per_call"]
        ratio = (
            f"FastMCP / toolcode {_range(p['fastmcp_over_toolcode'])}; "
            f"harness / toolcode {_range(p['harness_over_toolcode'])}"
        )
        out.append(
            (
                f"per call in process (µs, {p['calls']} calls)",
                f"{us['toolcode']['median']:,.0f}",
                f"{us['fastmcp']['median']:,.0f}",
                f"{us['harness']['median']:,.0f}",
                ratio,
            )
        )
        ratio = (
            f"FastMCP / toolcode {_range(p['fastmcp_stdio_over_toolcode_stdio'])}; "
            f"toolcode stdio / in process {_range(p['toolcode_stdio_over_in_process'])}"
        )
        ours, theirs = f"{us['toolcode_stdio']['median']:,.0f}", f"{us['fastmcp_stdio']['median']:,.0f}"
        out.append(("per call over stdio (µs)", ours, theirs, "—", ratio))
    return out


def _search_rows(sets: Mapping[str, Any]) -> list[str]:
    lines = [
        "| search MRR@10 (p50 ms per query) | tools | queries | toolcode lexical | toolcode fused | FastMCP | "
        "pydantic-ai-harness |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in sets.items():
        cells = [name, f"{r['tools']:,}", f"{r['toolcode_lexical']['n_queries']:,}"]
        for key in ("toolcode_lexical", "toolcode_fused", "fastmcp", "harness"):
            x = r.get(key)
            cells.append("—" if x is None else f"{x['mrr@10']:.1f} ({x['p50_ms']:.2f})")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def table(report: dict[str, Any]) -> str:
    v, c = report["versions"], report["config"]
    lines = [
        f"toolcode {v['toolcode']} · FastMCP {v['fastmcp']} · pydantic-ai-harness {v['pydantic-ai-harness']} · "
        f"pydantic-monty {v['workspace pydantic-monty']} (peers {v['pydantic-monty']}) · Python {v['python']}",
        "",
        "| fixed cost | toolcode | FastMCP | pydantic-ai-harness | ratio within a round (median, range) |",
        "|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in _cost_rows(report["rows"])]
    if "search" in report["rows"]:
        lines += ["", *_search_rows(report["rows"]["search"]["sets"])]
    load = f"load average {c.get('load_average_start')} at the start, {c.get('load_average_end')} at the end"
    lines += ["", f"{c['rounds']} rounds, {c['repeat']} runs per system per round; {load}"]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    ap.add_argument("--quick", action="store_true", help="small repeat counts (3 rounds of 8 runs, 50 queries a set)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds of the timed rows (default 7; --quick 3)")
    ap.add_argument("--repeat", type=int, default=None, help="runs per system per round (default 30; --quick 8)")
    ap.add_argument("--calls", type=int, default=100, help="calls per snippet in the per-call row (default 100)")
    ap.add_argument("--max-queries", type=int, default=None, help="queries per search set (default all; --quick 50)")
    ap.add_argument("--only", default=",".join(ROWS), help=f"rows to run, comma-separated: {','.join(ROWS)}")
    ap.add_argument("--peers-env", type=Path, default=ENV_DIR, help="the peers' environment (default: %(default)s)")
    ap.add_argument("--refresh-peers", action="store_true", help="upgrade the peers to their newest versions first")
    ap.add_argument("--table", metavar="FILE", type=Path, help="print the table of a saved --json report, and exit")
    ap.add_argument("--serve-local", metavar="STATE_DIR", help=argparse.SUPPRESS)
    E.add_data_argument(ap)
    args = ap.parse_args(argv)
    args.rounds = args.rounds or (3 if args.quick else 7)
    args.repeat = args.repeat or (8 if args.quick else 30)
    if args.max_queries is None and args.quick:
        args.max_queries = 50
    only = [r.strip() for r in args.only.split(",") if r.strip()]
    unknown = sorted(set(only) - set(ROWS))
    if unknown:
        ap.error(f"unknown rows {unknown}: choose from {', '.join(ROWS)}")
    args.only = only
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_local:
        anyio.run(serve_local, args.serve_local)
        return 0
    if args.table:
        print(table(json.loads(args.table.read_text())))
        return 0
    from toolcode.server import log_to_stderr

    log_to_stderr(logging.WARNING)  # stdout carries the report
    peer_python = ensure_peers_env(args.peers_env, args.refresh_peers)
    report = anyio.run(run, args, peer_python)
    print(json.dumps(report, indent=2) if args.json else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
