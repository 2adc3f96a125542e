"""Fan-out wall time: ten 200 ms tool calls from one snippet, on each engine, against the same ten in a row.

Each engine runs three snippets against a local tool ``t:nap(seconds)`` that sleeps:

* ``run_tools``  — ``run_tools([("t:nap", {"seconds": 0.2})] * 10)``;
* ``gather``     — ``await asyncio.gather(*[run_tool_async("t:nap", seconds=0.2) for _ in range(10)])``;
* ``sequential`` — a loop of ten ``run_tool`` calls: the reference, measured in the same run.

Target (issue 5): the fan-out forms finish in under 500 ms of wall time (the sequential form takes
about 2 s). Prints a table, or ``{"engines": {NAME: {FORM: {"p50_ms": x, "max_ms": x}}}}`` with ``--json``.

Usage: ``uv run python bench/fanout.py [--json] [--repeat N]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time

from toolcode import ExecuteParams, Executor, Services
from toolindex import InMemoryIndex
from toolrun import DefaultRunner, LocalBackend

FORMS = {
    "run_tools": "run_tools([('t:nap', {'seconds': 0.2})] * 10)",
    "gather": "import asyncio\nawait asyncio.gather(*[run_tool_async('t:nap', seconds=0.2) for _ in range(10)])",
    "sequential": "[run_tool('t:nap', seconds=0.2) for _ in range(10)]",
}
TARGET_MS = 500.0


async def nap(seconds: float) -> float:
    """Sleep, then return the seconds slept."""
    await asyncio.sleep(seconds)
    return seconds


async def bench(repeat: int) -> dict[str, dict[str, dict[str, float]]]:
    index = InMemoryIndex()
    local = LocalBackend()
    local.add(nap, name="nap", namespace="t")
    out: dict[str, dict[str, dict[str, float]]] = {}
    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        for engine in ("monty", "inprocess"):
            async with Executor(Services.of(index, runner, engine=engine)) as ex:
                await ex.execute(ExecuteParams(code="1"))  # start the engine before timing
                out[engine] = {}
                for form, code in FORMS.items():
                    times: list[float] = []
                    for _ in range(repeat if form != "sequential" else max(1, repeat // 4)):
                        t0 = time.perf_counter()
                        r = await ex.execute(ExecuteParams(code=code))
                        times.append((time.perf_counter() - t0) * 1000.0)
                        assert r.value == [0.2] * 10 and len(r.tool_calls) == 10
                    out[engine][form] = {"p50_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--repeat", type=int, default=12, help="runs per fan-out form (default 12)")
    args = parser.parse_args()
    results = asyncio.run(bench(args.repeat))
    if args.json:
        json.dump({"engines": results}, sys.stdout, indent=2)
        print()
        return
    print(f"{'engine':<11}{'form':<12}{'p50 ms':>10}{'max ms':>10}")
    for engine, forms in results.items():
        for form, row in forms.items():
            print(f"{engine:<11}{form:<12}{row['p50_ms']:>10.1f}{row['max_ms']:>10.1f}")
    print()
    for engine, forms in results.items():
        for form in ("run_tools", "gather"):
            p50 = forms[form]["p50_ms"]
            verdict = "OK" if p50 < TARGET_MS else "MISSED"
            print(f"{engine} {form}: p50 {p50:.0f} ms (target < {TARGET_MS:.0f}) {verdict}")


if __name__ == "__main__":
    main()
