"""Audit reads: the newest entries of a short and of a long audit log, on every state store.

For each store (memory; a SQLite file in a temporary folder; a ``redis-server`` this script starts
on a free local port) and each log length (``--short`` and ``--long`` appends of one entry each, as
the core writes a one-call run), the p50 of:

* ``newest_10_ms``: ``AuditLog.read(limit=10)`` (``toolcode audit --limit 10``);
* ``page_51_ms``: the newest 51 entries through ``AuditLog.newest()`` (what the console's first
  audit page reads: its 50 rows and one more);
* ``reference_walk_ms``: the reference, measured in the same run: the whole log walked from its
  start, 1,000 appends a page, keeping the last 10 (how ``AuditLog.read`` worked before it read
  from the end).

Goal: ``newest_10_ms`` on the long log within 2x the short log's (the cost follows what is read,
not the log's length).

Usage: ``uv run python bench/audit_read.py [--json] [--repeat N] [--short N] [--long N]`` (Redis is
skipped, and said so, when ``redis-server`` is not installed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any

from _procs import start_redis
from toolcode._audit import AUDIT_KIND, AuditLog
from toolcode.state import MemoryStateStore, RedisStateStore, SQLiteStateStore, StateStore

GOAL_RATIO = 2.0


async def _walk_from_start(store: StateStore) -> list[dict[str, Any]]:
    """The reference: every append read from the start, the last 10 entries kept."""
    out: deque[dict[str, Any]] = deque(maxlen=10)
    after = 0
    while page := await store.read_log(AUDIT_KIND, after=after, limit=1000):
        for entry in page:
            after = entry.seq
            out.extend(json.loads(entry.value))
    return list(out)


async def _page(log: AuditLog) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    async with aclosing(log.newest()) as entries:
        async for entry in entries:
            out.append(entry)
            if len(out) == 51:
                break
    return out


async def _p50(repeat: int, read: Callable[[], Awaitable[list[dict[str, Any]]]], n: int) -> float:
    times: list[float] = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        got = await read()
        times.append((time.perf_counter() - t0) * 1000)
        assert len(got) == n, len(got)
    return round(statistics.median(times), 3)


async def measure(name: str, store: StateStore, lengths: list[int], repeat: int) -> dict[str, Any]:
    log = AuditLog(store)
    rows: dict[int, dict[str, float]] = {}
    written = 0
    for length in lengths:
        for i in range(written, length):
            await log.write([{"at": time.time(), "tool_id": f"bench:t{i % 50}", "decision": "call", "ok": True}])
        written = length
        rows[length] = {
            "newest_10_ms": await _p50(repeat, lambda: log.read(limit=10), 10),
            "page_51_ms": await _p50(repeat, lambda: _page(log), 51),
            "reference_walk_ms": await _p50(max(3, repeat // 5), lambda: _walk_from_start(store), 10),
        }
    short, long = rows[lengths[0]], rows[lengths[-1]]
    ratio = round(long["newest_10_ms"] / short["newest_10_ms"], 2)
    ref_ratio = round(long["reference_walk_ms"] / short["reference_walk_ms"], 2)
    return {
        "store": name,
        "lengths": {str(k): v for k, v in rows.items()},
        "newest_10_long_over_short": ratio,
        "reference_long_over_short": ref_ratio,
        "goal_met": ratio <= GOAL_RATIO,
    }


async def run(lengths: list[int], repeat: int) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, store in (("memory", MemoryStateStore()), ("sqlite", SQLiteStateStore(folder / "state.sqlite3"))):
            try:
                results.append(await measure(name, store, lengths, repeat))
            finally:
                await store.aclose()
        started = start_redis(folder)
        if started is None:
            skipped["redis"] = "redis-server is not installed"
        else:
            proc, url = started
            redis = RedisStateStore(url, prefix="bench")
            try:
                results.append(await measure("redis", redis, lengths, repeat))
            finally:
                await redis.aclose()
                proc.terminate()
                proc.wait()
    goal = f"newest_10 on the long log <= {GOAL_RATIO:g} x on the short one"
    return {"stores": results, "skipped": skipped, "goal": goal}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--repeat", type=int, default=30, help="timed reads per case (default: %(default)s)")
    parser.add_argument("--short", type=int, default=500, help="appends in the short log (default: %(default)s)")
    parser.add_argument("--long", type=int, default=50_000, help="appends in the long log (default: %(default)s)")
    args = parser.parse_args()
    report = asyncio.run(run([args.short, args.long], args.repeat))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    cols = ("newest_10_ms", "page_51_ms", "reference_walk_ms")
    print(f"{'store':<8}{'appends':>10}" + "".join(f"{c:>20}" for c in cols))
    for r in report["stores"]:
        for length, row in r["lengths"].items():
            print(f"{r['store']:<8}{int(length):>10,}" + "".join(f"{row[c]:>20}" for c in cols))
        print(
            f"{r['store']}: newest 10, long/short {r['newest_10_long_over_short']}x "
            f"(reference {r['reference_long_over_short']}x): goal {'met' if r['goal_met'] else 'NOT met'}"
        )
    for name, why in report["skipped"].items():
        print(f"{name}: skipped ({why})")
    print(f"goal: {report['goal']}")


if __name__ == "__main__":
    main()
