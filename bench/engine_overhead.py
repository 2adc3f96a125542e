"""Engine overhead: per-execution and per-tool-call cost of each engine, against raw references.

Runs a snippet making 0, 10 and 100 calls to one async local tool (``bench:f(x) -> x + 1``) through

* ``monty``      — ``Executor`` + ``MontyEngine``: snippet → Tools → DefaultRunner → LocalBackend → f;
* ``raw_monty``  — pydantic-monty alone: a checkout and ``feed_run`` per execution, the same ``f``
  as an external function (``await f(i)`` in the snippet);
* ``inprocess``  — ``Executor`` + ``UnsafeInProcessEngine``, the same whole path as ``monty``;
* ``raw_exec``   — CPython ``exec`` of the same loop calling ``f`` directly (driven to completion in place).

``per_call_us_p50`` is ``(p50(100 calls) - p50(0 calls)) / 100``. Targets: monty per call <= 1.15 x
raw_monty per call; inprocess per call <= 15 us (the one-call-stack goals).

OpenTelemetry: ``monty`` and ``inprocess`` run as an application without a tracer provider
does (the hooks look the provider up and return). ``monty_no_otel`` and ``inprocess_no_otel``
run the same executors as if ``opentelemetry-api`` were not installed at all (the extra absent:
``toolcode._otel`` without its module, every hook returns at its first check); it cannot be
uninstalled here, since the mcp SDK depends on it. The two pairs are interleaved in one run.

Usage: ``uv run python bench/engine_overhead.py [--json] [--repeat N]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pydantic_monty as pm

import toolcode._otel as otel
from toolcode import ExecuteOptions, ExecuteParams, Executor, MontyEngine, Services, UnsafeInProcessEngine
from toolindex import InMemoryIndex
from toolrun import DefaultRunner, LocalBackend

MANY_CALLS = ExecuteOptions(max_tool_calls=1000)

CALLS = (0, 10, 100)
MONTY_RATIO_TARGET = 1.15
INPROCESS_US_TARGET = 15.0


async def f(x: int) -> int:
    """Return x + 1."""
    return x + 1


def tool_snippet(n: int) -> str:
    return f"for i in range({n}):\n    run_tool('bench:f', x=i)\n{n}"


def raw_snippet(n: int) -> str:
    return f"for i in range({n}):\n    await f(i)\n{n}"


def drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends, without an event loop (what raw exec can do)."""
    try:
        coro.send(None)
    except StopIteration as e:
        return e.value
    raise RuntimeError("the coroutine suspended")


async def measure(runs: dict[str, Callable[[int], Awaitable[Any]]], repeat: int) -> dict[str, dict[str, float]]:
    """Time every engine on every snippet size, interleaved in a shuffled order so that noise hits all alike."""
    out: dict[str, dict[str, float]] = {name: {} for name in runs}
    for n in CALLS:
        times: dict[str, list[float]] = {name: [] for name in runs}
        for run in runs.values():  # warm-up
            for _ in range(3):
                await run(n)
        reps = repeat
        names = list(runs)
        order = random.Random(n)
        for _ in range(reps):
            # A fresh order each repetition: a run after another engine's pays for cold caches,
            # and a fixed order would charge that to the same engines every time.
            order.shuffle(names)
            for name in names:
                run = runs[name]
                t0 = time.perf_counter()
                await run(n)
                times[name].append(time.perf_counter() - t0)
        for name in runs:
            out[name][f"calls_{n}_p50_ms"] = round(statistics.median(times[name]) * 1000.0, 4)
    for row in out.values():
        row["per_call_us_p50"] = round((row["calls_100_p50_ms"] - row["calls_0_p50_ms"]) * 1000.0 / 100, 2)
    return out


async def local_runner() -> tuple[InMemoryIndex, DefaultRunner]:
    """The catalog and runner every engine here calls ``bench:f`` through."""
    index = InMemoryIndex()
    local = LocalBackend()
    local.add(f, name="f", namespace="bench")
    await local.attach(index)
    return index, DefaultRunner(index, [local])


async def bench(repeat: int) -> dict[str, dict[str, float]]:
    index, runner = await local_runner()
    monty_ex = Executor(Services.of(index, runner, engine=MontyEngine()))
    inproc_ex = Executor(Services.of(index, runner, engine=UnsafeInProcessEngine()))
    codes = {n: compile(f"for i in range({n}):\n    g(i)\n", "<raw>", "exec") for n in CALLS}

    async with pm.AsyncMonty(min_processes=1) as pool, monty_ex, inproc_ex:

        async def run_monty(n: int) -> None:
            r = await monty_ex.execute(ExecuteParams(code=tool_snippet(n), options=MANY_CALLS))
            assert r.value == n and len(r.tool_calls) == n

        async def run_raw_monty(n: int) -> None:
            async with pool.checkout(limits={"max_suspensions": 1_000_000}) as session:
                assert await session.feed_run(raw_snippet(n), external_lookup={"f": f}) == n

        async def run_inprocess(n: int) -> None:
            r = await inproc_ex.execute(ExecuteParams(code=tool_snippet(n), options=MANY_CALLS))
            assert r.value == n and len(r.tool_calls) == n

        async def run_exec(n: int) -> None:
            exec(codes[n], {"g": lambda x: drive(f(x))})

        def without_otel(run: Callable[[int], Awaitable[None]]) -> Callable[[int], Awaitable[None]]:
            async def run_without(n: int) -> None:
                module = otel._trace  # pyright: ignore[reportPrivateUsage]
                otel._trace = None  # as if opentelemetry-api were not installed
                try:
                    await run(n)
                finally:
                    otel._trace = module

            return run_without

        runs = {
            "monty": run_monty,
            "monty_no_otel": without_otel(run_monty),
            "raw_monty": run_raw_monty,
            "inprocess": run_inprocess,
            "inprocess_no_otel": without_otel(run_inprocess),
            "raw_exec": run_exec,
        }
        results = await measure(runs, repeat)
    await runner.aclose()
    return results


def verdicts(r: dict[str, dict[str, float]]) -> list[str]:
    ratio = r["monty"]["per_call_us_p50"] / max(r["raw_monty"]["per_call_us_p50"], 1e-9)
    ok1 = ratio <= MONTY_RATIO_TARGET
    ok2 = r["inprocess"]["per_call_us_p50"] <= INPROCESS_US_TARGET
    otel_lines = [
        f"{engine}: per call {r[engine]['per_call_us_p50']:.1f} us with the OpenTelemetry hooks (no provider), "
        f"{r[engine + '_no_otel']['per_call_us_p50']:.1f} us as if opentelemetry-api were absent"
        for engine in ("monty", "inprocess")
    ]
    return [
        f"monty per call / raw_monty per call = {ratio:.2f} (target <= {MONTY_RATIO_TARGET}) "
        f"{'OK' if ok1 else 'MISSED'}",
        f"inprocess per call = {r['inprocess']['per_call_us_p50']:.1f} us (target <= {INPROCESS_US_TARGET:g}) "
        f"{'OK' if ok2 else 'MISSED'}",
        *otel_lines,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--repeat", type=int, default=40, help="runs per snippet size (default 40)")
    args = parser.parse_args()
    results = asyncio.run(bench(args.repeat))
    if args.json:
        json.dump({"engines": results}, sys.stdout, indent=2)
        print()
        return
    cols = ["calls_0_p50_ms", "calls_10_p50_ms", "calls_100_p50_ms", "per_call_us_p50"]
    print(f"{'engine':<18}" + "".join(f"{c:>18}" for c in cols))
    for name, row in results.items():
        print(f"{name:<18}" + "".join(f"{row[c]:>18.3f}" for c in cols))
    print()
    for line in verdicts(results):
        print(line)


if __name__ == "__main__":
    main()
