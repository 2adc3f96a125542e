"""Sessions: what continuing a stored session costs, on SQLite and on Redis, against a fresh run.

For each store (a SQLite file in a temporary folder; a ``redis-server`` this script starts on a
free local port):

* ``fresh_ms_p50``: a run without a session (``x = 1``) — the reference fixed cost;
* ``session_small_ms_p50``: the same kind of run continuing a session that holds a few variables;
* ``session_1mb_ms_p50``: a run continuing a session that holds ~1 MB of data;
* ``growth_bytes_per_run_short`` / ``growth_bytes_per_run_ten_lines``: how much a session's stored
  state grows per run until it is rebuilt (the median step of the outcome's ``session.size_bytes``),
  for ``b = a + 1`` and for a ten-line snippet;
* ``two_ints``: a session holding two ints after 2,000 runs of ``a = a + 1; b = b + 2``: the state's
  size (the outcome's ``session.size_bytes``) after 1, 10, 100, 1,000 and 2,000 runs, the largest
  over all runs, the stored record's size at the end (``list_sessions``), and the mean run time
  over the 2,000 runs (the occasional rebuild of the state included);
* ``dump_store_ms_p50`` / ``load_restore_ms_p50``: the two halves of keeping that 1 MB session:
  dumping the interpreter state and writing it to the store, reading it back and restoring it in
  a fresh worker (measured on pydantic-monty and the store directly).

Goals: ``session_small_ms_p50 <= 2 x fresh_ms_p50``; two ints after 2,000 runs ``<= 8 KB``.

Usage: ``uv run python bench/sessions.py [--json] [--repeat N]`` (Redis is skipped, and said so,
when ``redis-server`` is not installed).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pydantic_monty as pm

from _procs import start_redis
from toolcode import Settings, Toolbox
from toolcode._settings import SessionSettings, StateSettings
from toolcode.server import log_to_stderr
from toolcode.state import RedisStateStore, SQLiteStateStore, StateStore

GOAL_RATIO = 2.0
GOAL_TWO_INTS_BYTES = 8_000
TWO_INTS_RUNS = 2000
MB = "big = ['x' * 1000 + str(i) for i in range(1000)]"
SHORT = "b = a + 1"
"""The growth measurements' one-line snippet (9 characters)."""
TEN_LINES = "\n".join(f"v{i} = a * {i} + len(str(a))  # step {i}" for i in range(10))
"""Their ten-line snippet (about 340 characters)."""


def _p50(xs: list[float]) -> float:
    return round(statistics.median(xs), 3)


async def _timed(box: Toolbox, code: str, session: str | None, repeat: int) -> float:
    times: list[float] = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = await box.codemode.execute(code, session=session)
        times.append((time.perf_counter() - t0) * 1000)
        assert out.ok, out.error
    return _p50(times)


async def _components(store: StateStore, repeat: int) -> dict[str, float]:
    """Dump + store, and load + restore, of a ~1 MB session, on pydantic-monty and the store directly."""
    dump_store: list[float] = []
    load_restore: list[float] = []
    size = 0
    async with pm.AsyncMonty(min_processes=2, max_processes=2) as pool:
        async with pool.checkout() as session:
            await session.feed_run(MB)
            for i in range(repeat):
                t0 = time.perf_counter()
                state = await session.dump()
                await store.put("bench", "big", state)
                dump_store.append((time.perf_counter() - t0) * 1000)
                size = len(state)
                t0 = time.perf_counter()
                rec = await store.get("bench", "big")
                assert rec is not None
                async with pool.checkout() as other:
                    await other.load_session(rec.value)
                    load_restore.append((time.perf_counter() - t0) * 1000)
                    assert await other.feed_run("len(big)") == 1000, i
    return {"state_bytes": size, "dump_store_ms_p50": _p50(dump_store), "load_restore_ms_p50": _p50(load_restore)}


async def _growth(box: Toolbox, runs: int) -> dict[str, float]:
    """Bytes a session's stored state grows by per run (the outcome's ``session.size_bytes``), per snippet."""
    out: dict[str, float] = {}
    for label, code in (("short", SHORT), ("ten_lines", TEN_LINES)):
        first = await box.codemode.execute("a = 1", session=f"grow-{label}")
        assert first.ok, first.error
        sizes: list[int] = []
        for _ in range(runs):
            o = await box.codemode.execute(code, session=f"grow-{label}")
            assert o.ok and o.session is not None, o.error
            sizes.append(o.session.size_bytes)
        # The median step: what one run adds to the history (a rebuild of the state, when one falls in
        # the window, is one step down among many).
        out[f"growth_bytes_per_run_{label}"] = statistics.median(b - a for a, b in itertools.pairwise(sizes))
    return out


async def _two_ints(box: Toolbox, runs: int) -> dict[str, Any]:
    """A session holding two ints, run ``runs`` times: its state's size along the way, and the mean run time."""
    out = await box.codemode.execute("a = 0\nb = 0", session="two")
    assert out.ok and out.session is not None, out.error
    marks = {1, 10, 100, 1000, runs}
    after: dict[str, int] = {}
    largest = 0
    t0 = time.perf_counter()
    for i in range(1, runs + 1):
        out = await box.codemode.execute("a = a + 1\nb = b + 2", session="two")
        assert out.ok and out.session is not None, out.error
        largest = max(largest, out.session.size_bytes)
        if i in marks:
            after[str(i)] = out.session.size_bytes
    mean_ms = (time.perf_counter() - t0) * 1000 / runs
    check = await box.codemode.execute("__out = [a, b]", session="two")
    assert check.value == [runs, 2 * runs], check.value
    record = next(s.size_bytes for s in (await box.codemode.list_sessions()).sessions if s.name == "two")
    return {
        "runs": runs,
        "bytes_after": after,
        "largest_bytes": largest,
        "record_bytes": record,
        "mean_run_ms": round(mean_ms, 3),
        "goal_met": after[str(runs)] <= GOAL_TWO_INTS_BYTES and largest <= GOAL_TWO_INTS_BYTES,
    }


async def measure(name: str, settings: Settings, store: StateStore, repeat: int) -> dict[str, Any]:
    async with Toolbox([], settings=settings) as box:
        await box.codemode.execute("x = 0", session="small")
        await box.codemode.execute(MB, session="big")
        for _ in range(3):  # warm the worker pool and the checker
            await box.codemode.execute("x = 1")
        fresh = await _timed(box, "x = 1", None, repeat)
        small = await _timed(box, "x = x + 1", "small", repeat)
        big = await _timed(box, "n = len(big)", "big", repeat)
        growth = await _growth(box, max(10, repeat // 2))
        two_ints = await _two_ints(box, TWO_INTS_RUNS)
    parts = await _components(store, max(5, repeat // 4))
    return {
        "store": name,
        "fresh_ms_p50": fresh,
        "session_small_ms_p50": small,
        "session_1mb_ms_p50": big,
        "ratio_small_to_fresh": round(small / fresh, 2),
        **growth,
        "two_ints": two_ints,
        **parts,
        "goal_met": small <= GOAL_RATIO * fresh,
    }


async def run(repeat: int) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sessions = SessionSettings(max_bytes=64 * 1024 * 1024)
        sqlite = Settings(state=StateSettings(dir=str(folder / "sqlite")), sessions=sessions)
        store: StateStore = SQLiteStateStore(folder / "parts.sqlite3")
        try:
            results.append(await measure("sqlite", sqlite, store, repeat))
        finally:
            await store.aclose()
        started = start_redis(folder, appendonly=True)
        if started is None:
            skipped["redis"] = "redis-server is not installed"
        else:
            proc, url = started
            try:
                store = RedisStateStore(url, prefix="parts")
                try:
                    results.append(
                        await measure("redis", Settings(state=StateSettings(url=url), sessions=sessions), store, repeat)
                    )
                finally:
                    await store.aclose()
            finally:
                proc.terminate()
                proc.wait()
    goal = (
        f"session_small <= {GOAL_RATIO:g} x fresh; two ints after {TWO_INTS_RUNS:,} runs <= {GOAL_TWO_INTS_BYTES:,} B"
    )
    return {"stores": results, "skipped": skipped, "goal": goal}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--repeat", type=int, default=40, help="timed runs per case (default: %(default)s)")
    args = parser.parse_args()
    log_to_stderr(logging.WARNING)
    report = asyncio.run(run(args.repeat))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    cols = [
        "fresh_ms_p50",
        "session_small_ms_p50",
        "ratio_small_to_fresh",
        "session_1mb_ms_p50",
        "dump_store_ms_p50",
        "load_restore_ms_p50",
    ]
    print(f"{'store':<8}" + "".join(f"{c:>24}" for c in cols) + f"{'goal':>10}")
    for r in report["stores"]:
        print(
            f"{r['store']:<8}" + "".join(f"{r[c]:>24}" for c in cols) + f"{'met' if r['goal_met'] else 'NOT met':>10}"
        )
    for name, why in report["skipped"].items():
        print(f"{name}: skipped ({why})")
    print(f"1 MB session state: {report['stores'][0]['state_bytes']:,} bytes; goal: {report['goal']}")
    growth = report["stores"][0]
    print(
        f"stored state grows per run: {growth['growth_bytes_per_run_short']:g} B for {SHORT!r}, "
        f"{growth['growth_bytes_per_run_ten_lines']:g} B for a ten-line snippet of {len(TEN_LINES)} characters"
    )
    for r in report["stores"]:
        t = r["two_ints"]
        marks = ", ".join(f"{k}: {v:,}" for k, v in t["bytes_after"].items())
        print(
            f"{r['store']}: two ints, state bytes after runs {marks}; largest {t['largest_bytes']:,}; "
            f"record {t['record_bytes']:,} B; {t['mean_run_ms']:.2f} ms a run; "
            f"goal {'met' if t['goal_met'] else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
