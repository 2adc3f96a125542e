"""Instructions per tool call on the in-process engine's whole path, counted by valgrind: a figure load cannot move.

``bench/engine_overhead.py`` times the same path, and on a busy machine its per-call figure moves
with the load (it printed 16 to 30 us per call on one morning as other jobs came and went). This
counts instead: each child process makes 20 runs of the snippet with 0 calls, or with 100 calls to
``bench:f``, under ``valgrind --tool=callgrind``; the difference of the two totals over 2,000 calls
is the instructions one call costs, start-up and run overhead cancelled out. Python's hash seed and
the BLAS threads are fixed so two counts of one build agree to about 1%.

    uv run python bench/call_instructions.py [--json]   # needs valgrind (apt-get install valgrind)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

RUNS = 20
CALLS = 100


async def child(n: int) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from engine_overhead import MANY_CALLS, local_runner, tool_snippet
    from toolcode import ExecuteParams, Executor, Services, UnsafeInProcessEngine

    index, runner = await local_runner()
    executor = Executor(Services.of(index, runner, engine=UnsafeInProcessEngine()))
    for warm in (0, CALLS):
        await executor.execute(ExecuteParams(code=tool_snippet(warm), options=MANY_CALLS))
    for _ in range(RUNS):
        result = await executor.execute(ExecuteParams(code=tool_snippet(n), options=MANY_CALLS))
        assert result.value == n and len(result.tool_calls) == n


def instructions(script: str, *child: str) -> int:
    """What valgrind counts for one run of ``script --child CHILD...`` (hash seed and BLAS threads fixed).

    Raises:
        SystemExit: If the run fails or valgrind prints no count.
    """
    env = {**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, script, "--child", *child]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"valgrind run of {Path(script).name} {' '.join(child)} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def count(n: int) -> int:
    return instructions(__file__, str(n))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        asyncio.run(child(args.child))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    none, many = count(0), count(CALLS)
    report = {
        "instructions_per_call": round((many - none) / (RUNS * CALLS)),
        "runs": RUNS,
        "calls_per_run": CALLS,
        "totals": {"0_calls": none, f"{CALLS}_calls": many},
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print("| engine | instructions per tool call | runs x calls |")
    print("|---|---|---|")
    print(f"| inprocess (whole path) | {report['instructions_per_call']:,} | {RUNS} x {CALLS} |")


if __name__ == "__main__":
    main()
