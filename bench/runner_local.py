"""Overhead of ``DefaultRunner.run`` on local functions, against calling the function directly.

Usage:
    uv run python bench/runner_local.py [--json] [--calls N]

For each case the runner call and the direct call alternate, N times each, in one event
loop; the overhead is p50(runner) - p50(direct). Validation is on (input and output, the
defaults) unless the case says otherwise. The target (issue 4): overhead ≤ 25 µs p50 for an
async or inline local function with validation on.

``measure_local_overhead(n)`` is the function other benches import.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from toolindex import InMemoryIndex
from toolrun import DefaultRunner, LocalBackend

TARGET_US = 25.0


def _backend() -> tuple[LocalBackend, dict[str, Callable[..., Any]]]:
    local = LocalBackend()

    @local.tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @local.tool(inline=True)
    def add_inline(a: int, b: int) -> int:
        """Add two integers (inline)."""
        return a + b

    @local.tool
    def add_thread(a: int, b: int) -> int:
        """Add two integers (worker thread)."""
        return a + b

    @local.tool
    async def search(query: str, limit: int = 10, tags: list[str] | None = None) -> dict[str, Any]:
        """A search-shaped tool: a string, an optional int and an optional list in; an object out."""
        return {"query": query, "hits": [{"id": i, "score": 1.0 / (i + 1)} for i in range(min(limit, 3))]}

    return local, {"add": add, "add_inline": add_inline, "add_thread": add_thread, "search": search}


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def _pair(
    n: int,
    runner_call: Callable[[], Awaitable[Any]],
    direct_call: Callable[[], Awaitable[Any]],
) -> dict[str, float]:
    clock = time.perf_counter_ns
    for _ in range(min(500, n)):  # warm-up: resolution, schema compilation, caches
        await runner_call()
        await direct_call()
    runner_ns: list[float] = []
    direct_ns: list[float] = []
    gc.collect()
    for _ in range(n):
        t0 = clock()
        await runner_call()
        t1 = clock()
        await direct_call()
        t2 = clock()
        runner_ns.append(t1 - t0)
        direct_ns.append(t2 - t1)
    r50, d50 = _pct(runner_ns, 0.5) / 1e3, _pct(direct_ns, 0.5) / 1e3
    return {
        "runner_p50_us": round(r50, 2),
        "runner_p90_us": round(_pct(runner_ns, 0.9) / 1e3, 2),
        "direct_p50_us": round(d50, 2),
        "overhead_us_p50": round(r50 - d50, 2),
        "runner_mean_us": round(statistics.fmean(runner_ns) / 1e3, 2),
    }


async def _measure(n: int) -> dict[str, Any]:
    local, fns = _backend()
    index = InMemoryIndex()
    args = {"a": 1, "b": 2}
    search_args: dict[str, Any] = {"query": "weather in paris", "limit": 5, "tags": ["geo", "weather"]}
    out: dict[str, Any] = {"calls": n}
    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()

        async def direct_async() -> Any:
            return await fns["add"](**args)

        async def direct_inline() -> Any:
            return fns["add_inline"](**args)

        async def direct_thread() -> Any:
            return await anyio.to_thread.run_sync(lambda: fns["add_thread"](**args))

        async def direct_search() -> Any:
            return await fns["search"](**search_args)

        out["async"] = await _pair(n, lambda: runner.run("local:add", args), direct_async)
        out["inline"] = await _pair(n, lambda: runner.run("local:add_inline", args), direct_inline)
        out["search"] = await _pair(n, lambda: runner.run("local:search", search_args), direct_search)
        out["thread"] = await _pair(max(1, n // 10), lambda: runner.run("local:add_thread", args), direct_thread)
    async with DefaultRunner(InMemoryIndex(), [_backend()[0]], validation="off", validate_input=False) as bare:
        await bare.attach()
        out["async_validation_off"] = await _pair(n, lambda: bare.run("local:add", args), direct_async)
    out["overhead_us_p50"] = out["async"]["overhead_us_p50"]
    out["target_us"] = TARGET_US
    out["meets_target"] = max(out["async"]["overhead_us_p50"], out["inline"]["overhead_us_p50"]) <= TARGET_US
    return out


def measure_local_overhead(n: int) -> dict[str, Any]:
    """Measure ``DefaultRunner.run`` overhead on local functions.

    Args:
        n: Calls per case (runner and direct each).

    Returns:
        ``{"calls", "async", "inline", "search", "thread", "async_validation_off",
        "overhead_us_p50", "target_us", "meets_target"}``; each case holds
        ``runner_p50_us``, ``runner_p90_us``, ``direct_p50_us``, ``overhead_us_p50``,
        ``runner_mean_us``. ``overhead_us_p50`` at the top level is the async case's.
    """
    return anyio.run(_measure, n)


def _table(r: dict[str, Any]) -> str:
    rows = [f"DefaultRunner.run on local functions: {r['calls']} calls per case, interleaved with direct calls"]
    rows.append(f"{'case':<22}{'runner p50 µs':>15}{'direct p50 µs':>15}{'overhead p50 µs':>17}{'runner p90 µs':>15}")
    for case in ("async", "inline", "search", "thread", "async_validation_off"):
        c = r[case]
        rows.append(
            f"{case:<22}{c['runner_p50_us']:>15.2f}{c['direct_p50_us']:>15.2f}"
            f"{c['overhead_us_p50']:>17.2f}{c['runner_p90_us']:>15.2f}"
        )
    verdict = "meets" if r["meets_target"] else "MISSES"
    rows.append(f"target: overhead p50 ≤ {r['target_us']:g} µs (async, inline; validation on): {verdict}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--calls", type=int, default=20_000, help="calls per case (default 20000)")
    ns = parser.parse_args(argv)
    result = measure_local_overhead(ns.calls)
    print(json.dumps(result, indent=2) if ns.json else _table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
