"""Bystander latency: a trivial run while another caller attacks the same `toolcode serve`.

One real `toolcode serve --http` process fronts our hostile MCP server (tests/integration/servers)
with a ReDoS-pattern tool, an echo tool and a catalog it can churn (the policy asks about
`hostile:add`). A bystander client runs `from tools import hostile` + `__out = 6 * 7` (checked
before it runs, as every run that imports a tool module) through `execute_code` over and over and
records each latency, first alone, then while an attacker client (on its own MCP session) runs, in
a loop (measuring on until at least one round of the attack has finished), each of:

- ``cpu``: two CPU-bound snippets (`while True: pass`, 5 s timeout) at once;
- ``redos``: `run_tool` on a tool whose schema has a catastrophic-backtracking `pattern`,
  with an argument made to trigger it;
- ``search_4mb``: `search_tools` with a 4 MB query;
- ``relist``: the upstream server re-announces a catalog of 3,000 tools (`list_changed` storms);
- ``arg_flood``: a snippet that passes 1 MB of arguments to a tool 400 times (the server's peak
  resident memory is reported too);
- ``typecheck_flood``: two snippets at once, each as long as a checked snippet may be (420 ``if``
  branches over a tool module, under 20,000 characters), each taking a long time to check;
- ``pause_flood``: runs that pause at a call the policy asks about (until the caller's paused-run
  quota answers ``quota_exceeded``);
- ``result_flood``: runs whose 200,000-character output is kept as a stored result;
- ``big_result``: runs that call an upstream tool whose reply is 50 MB (over the server's
  ``maxResponseBytes``, 4 MiB by default);
- ``big_allowed``: runs that call an upstream tool whose reply is just under that bound (and use it);
- ``discovery_flood``: three runs at once (the bystander shares their caller's four), each listing
  a catalog of 3,000 tools 1,000 at a time
  (``list_tools(limit=1000)``) in a loop until its 20 s timeout;
- ``fan_out``: two runs at once, each fanning out 8,000 calls of the upstream's echo tool
  (``run_tools`` of a list of 8,000 calls).

Goal (the hardening issue): the bystander's p95 stays within 5x its solo p95 and under 250 ms in
every case. The solo p95 each attack is compared with is measured right before that attack (the
first one is reported as "alone").

    uv run python bench/bystander.py            # table
    uv run python bench/bystander.py --json     # {"solo": {...}, "attacks": {...}, "goal_met": bool}
    uv run python bench/bystander.py --only typecheck_flood,cpu   # some attacks
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import psutil
from mcp import Client, MCPError

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "integration" / "servers" / "hostile_server.py"
TRIVIAL = {"code": "from tools import hostile\n__out = 6 * 7"}
_ROUND_WAIT_S = 300.0
"""Longest the bystander goes on measuring for the attacker's first round to finish."""


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def _serve(config: Path) -> tuple[anyio.abc.Process, str]:
    proc = await anyio.open_process(
        [sys.executable, "-m", "toolcode.cli", "serve", "--config", str(config), "--http", "127.0.0.1:0"],
        stdout=subprocess.DEVNULL,
    )
    assert proc.stderr is not None
    buf = b""
    with anyio.fail_after(120):
        async for chunk in proc.stderr:
            buf += chunk
            if b"listening on " in buf and b"\n" in buf.split(b"listening on ", 1)[1]:
                break
        else:
            raise SystemExit(f"toolcode serve exited: {buf.decode(errors='replace')[-2000:]}")
    url = buf.split(b"listening on ", 1)[1].split(b"\n", 1)[0].decode().strip()
    return proc, url


async def _bystander(client: Client, n: int) -> list[float]:
    out: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        res = await client.call_tool("execute_code", TRIVIAL)
        out.append((time.perf_counter() - t0) * 1000)
        if res.is_error or (res.structured_content or {}).get("value") != 42:
            raise SystemExit(f"the bystander's run failed: {res.content}")
        await anyio.sleep(0.005)
    return out


def _attacks() -> dict[str, tuple[int, Callable[[Client], Awaitable[Any]]]]:
    """Each attack: how many run at once, and one round of it (which must fail or finish cleanly)."""

    async def cpu(c: Client) -> Any:
        return await c.call_tool("execute_code", {"code": "while True:\n    pass", "options": {"timeout": 5}})

    async def redos(c: Client) -> Any:
        return await c.call_tool("run_tool", {"tool_id": "hostile:schema_redos", "args": {"text": "a" * 40 + "!"}})

    query = "find " + "x" * (4 * 1024 * 1024)

    async def search_4mb(c: Client) -> Any:
        return await c.call_tool("search_tools", {"query": query})

    async def relist(c: Client) -> Any:
        res = await c.call_tool("run_tool", {"tool_id": "hostile:churn", "args": {"storm": 3, "tools": 3000}})
        await anyio.sleep(0.2)
        return res

    flood = "blob = 'x' * 1_000_000\nfor i in range(400):\n    run_tool('hostile:echo', text=blob)\n__out = 400"

    async def arg_flood(c: Client) -> Any:
        options = {"max_tool_calls": 400, "timeout": 120}
        return await c.call_tool("execute_code", {"code": flood, "options": options})

    branches = "from tools import hostile\nx = int(input or 0)\ny = 0\n"
    # As long as a checked snippet may be (under 20,000 characters; a longer one runs unchecked).
    branches += "".join(f"if x == {i}:\n    y = hostile.echo(text='{i}')\n" for i in range(420))

    async def typecheck_flood(c: Client) -> Any:
        return await c.call_tool("execute_code", {"code": branches})

    async def pause_flood(c: Client) -> Any:
        return await c.call_tool("execute_code", {"code": "run_tool('hostile:add', a=1, b=2)"})

    async def result_flood(c: Client) -> Any:
        return await c.call_tool("execute_code", {"code": "print('x' * 200_000)"})

    big = "r = run_tool('hostile:reply', kind='huge', size={size})\n__out = len(r)"

    async def big_result(c: Client) -> Any:
        code = big.format(size=50_000_000)
        return await c.call_tool("execute_code", {"code": code, "options": {"timeout": 120}})

    async def big_allowed(c: Client) -> Any:
        code = big.format(size=4 * 1024 * 1024 - 1024)  # the JSON-RPC envelope counts too
        return await c.call_tool("execute_code", {"code": code, "options": {"timeout": 120}})

    listing = "while True:\n    list_tools(limit=1000)"

    async def discovery_flood(c: Client) -> Any:
        await c.call_tool("run_tool", {"tool_id": "hostile:churn", "args": {"storm": 1, "tools": 3000}})
        return await c.call_tool("execute_code", {"code": listing, "options": {"timeout": 20}})

    fanned = "run_tools([('hostile:echo', {'text': 'x'}) for i in range(8000)])\n__out = 8000"

    async def fan_out(c: Client) -> Any:
        options = {"max_tool_calls": 8000, "timeout": 120}
        return await c.call_tool("execute_code", {"code": fanned, "options": options})

    futures = (
        "import asyncio\nr = await asyncio.gather(*[run_tool_async('hostile:echo', text='x') for i in range(100_000)])"
    )

    async def future_flood(c: Client) -> Any:
        return await c.call_tool("execute_code", {"code": futures, "options": {"timeout": 60, "type_check": "off"}})

    raising = "raise ValueError('x' * 60_000_000)"

    async def raise_flood(c: Client) -> Any:
        return await c.call_tool("execute_code", {"code": raising})

    return {
        "cpu": (2, cpu),
        "redos": (1, redos),
        "search_4mb": (1, search_4mb),
        "relist": (1, relist),
        "arg_flood": (1, arg_flood),
        "typecheck_flood": (2, typecheck_flood),
        "pause_flood": (1, pause_flood),
        "result_flood": (1, result_flood),
        "big_result": (1, big_result),
        "big_allowed": (1, big_allowed),
        "discovery_flood": (3, discovery_flood),
        "fan_out": (2, fan_out),
        "future_flood": (2, future_flood),
        "raise_flood": (4, raise_flood),
    }


async def _attack_loop(name: str, url: str) -> None:
    """Run one attack in a loop (in its own process, so the attacker's own work cannot slow the
    bystander's measuring client); print each round's outcome on a line."""
    width, attack = _attacks()[name]

    async def one() -> None:
        async with Client(url) as client:
            while True:
                try:
                    res = await attack(client)
                except MCPError as e:  # refused at the protocol level (e.g. a request too large)
                    print(f"mcp error {e.code}", flush=True)
                    continue
                sc = getattr(res, "structured_content", None) or {}
                err = sc.get("error") if isinstance(sc, dict) else None
                print(err["code"] if isinstance(err, dict) else "ok", flush=True)

    async with anyio.create_task_group() as tg:
        for _ in range(width):
            tg.start_soon(one)


async def _measure(url: str, server: psutil.Process, n: int, only: list[str]) -> dict[str, Any]:
    report: dict[str, Any] = {"attacks": {}}
    async with Client(url) as bystander:
        await _bystander(bystander, 10)  # warm up
        solo = await _bystander(bystander, n)
        report["solo"] = {"p50_ms": round(_pct(solo, 0.5), 2), "p95_ms": round(_pct(solo, 0.95), 2), "n": n}
        for name in only:
            # The reference is measured again right before each attack: an earlier attack can leave
            # the server in another state (the relist attack leaves a 3,000-tool namespace that the
            # bystander imports), which the first solo figure would charge to the later attacks.
            alone = _pct(await _bystander(bystander, n), 0.95)
            peak = [server.memory_info().rss]
            out = bytearray()
            attacker = await anyio.open_process(
                [sys.executable, __file__, "--attack", name, "--url", url], stderr=subprocess.DEVNULL
            )

            async def watch_memory(peak: list[int] = peak) -> None:
                while True:
                    peak[0] = max(peak[0], server.memory_info().rss)
                    await anyio.sleep(0.05)

            async def collect(proc: anyio.abc.Process = attacker, out: bytearray = out) -> None:
                assert proc.stdout is not None
                async for chunk in proc.stdout:
                    out.extend(chunk)

            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(watch_memory)
                    tg.start_soon(collect)
                    await anyio.sleep(1.5)  # let the attack take hold
                    lat = await _bystander(bystander, n)
                    # A slow attack (a 50 MB reply) is measured over at least one whole round of it.
                    with anyio.move_on_after(_ROUND_WAIT_S):
                        while not out.strip():
                            lat += await _bystander(bystander, 10)
                    tg.cancel_scope.cancel()
            finally:
                attacker.terminate()
                await attacker.wait()
            peak_rss = peak[0]
            rounds = out.decode(errors="replace").split()
            p95 = _pct(lat, 0.95)
            report["attacks"][name] = {
                "p50_ms": round(_pct(lat, 0.5), 2),
                "p95_ms": round(p95, 2),
                "max_ms": round(max(lat), 2),
                "solo_p95_ms": round(alone, 2),
                "ratio_p95": round(p95 / alone, 2),
                "goal_met": p95 <= 5 * alone and p95 < 250,
                "attacker_rounds": len(rounds),
                "attacker_outcomes": sorted(set(" ".join(rounds).replace("mcp error", "mcp_error").split())),
                "server_peak_rss_mb": round(peak_rss / 2**20, 1),
            }
            await anyio.sleep(1.0)  # let the attack's leftovers finish before the next one
    report["goal_met"] = all(a["goal_met"] for a in report["attacks"].values())
    return report


async def main_async(n: int, only: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="toolcode-bystander-") as tmp:
        config = Path(tmp) / "mcp.json"
        hostile = {"command": sys.executable, "args": [str(HOSTILE), "--schemas", "redos"]}
        settings = {
            "tools": ["*"],
            "policy": {"rules": [{"tools": "hostile:add", "decision": "ask"}]},
            "state": {"dir": str(Path(tmp) / "state")},
        }
        config.write_text(json.dumps({"mcpServers": {"hostile": hostile}, "toolcode": settings}))
        proc, url = await _serve(config)
        try:
            report = await _measure(url, psutil.Process(proc.pid), n, only)
        finally:
            proc.terminate()
            with anyio.move_on_after(10):
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
    report["machine"] = {"cpus": os.cpu_count(), "loadavg_1m": round(os.getloadavg()[0], 2)}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("-n", type=int, default=100, help="bystander runs per case (default: %(default)s)")
    parser.add_argument("--only", help="comma-separated attacks to run (default: every one): " + ",".join(_attacks()))
    parser.add_argument("--attack", help=argparse.SUPPRESS)  # internal: run one attacker
    parser.add_argument("--url", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.attack:
        anyio.run(_attack_loop, ns.attack, ns.url)
        return 0
    only = ns.only.split(",") if ns.only else list(_attacks())
    unknown = sorted(set(only) - set(_attacks()))
    if unknown:
        parser.error(f"unknown attack(s): {', '.join(unknown)}")
    report = anyio.run(main_async, ns.n, only)
    if ns.json:
        print(json.dumps(report, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    solo = report["solo"]
    table = Table(
        "case", "p50 ms", "p95 ms", "max ms", "solo p95 ms", "p95 / solo p95", "goal", "attacker outcomes",
        "server RSS MB",
        title=f"bystander `__out = 6 * 7`, checked (n={solo['n']}); goal: p95 <= 5x solo and < 250 ms",
        title_justify="left",
    )  # fmt: skip
    table.add_row("alone", f"{solo['p50_ms']:.1f}", f"{solo['p95_ms']:.1f}", "", "", "1.0", "", "", "")
    for name, a in report["attacks"].items():
        table.add_row(
            name, f"{a['p50_ms']:.1f}", f"{a['p95_ms']:.1f}", f"{a['max_ms']:.1f}", f"{a['solo_p95_ms']:.1f}",
            f"{a['ratio_p95']:.1f}",
            "met" if a["goal_met"] else "MISSED", ", ".join(a["attacker_outcomes"]), f"{a['server_peak_rss_mb']:.0f}",
        )  # fmt: skip
    Console(width=160).print(table)
    print(f"machine: {report['machine']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
