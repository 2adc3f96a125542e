"""Instructions the host spends on one warm run of ``__out = 1`` on the monty engine, counted by valgrind.

``bench/peers.py``'s ``warm`` row times the same run beside pydantic-ai-harness; its figure moves
with the machine's load. This counts what toolcode's own process executes for a run, a figure load
cannot move: each child process makes a toolbox (the monty engine, one local tool), warms it with
20 runs, then makes 0 or ``RUNS`` more under ``valgrind --tool=callgrind``; the difference of the
two totals over ``RUNS`` runs is the instructions one run costs the host, start-up cancelled out.
The sandbox workers are processes of their own and are not counted (their cost is Monty's, the same
for every host). Python's hash seed and the BLAS threads are fixed so two counts of one build agree
closely.

    uv run python bench/run_instructions.py [--json]   # needs valgrind (apt-get install valgrind)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
from pathlib import Path

from call_instructions import instructions

RUNS = 200
WARM = "__out = 1"
CHECKS = ("off", "strict")


async def child(n: int, check: str) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from peers import _settings, bench_backend
    from toolcode import Toolbox

    with tempfile.TemporaryDirectory() as tmp:
        async with Toolbox([bench_backend()], settings=_settings(Path(tmp) / "state")) as box:
            for i in range(20 + n):
                out = await box.codemode.execute(WARM, options={"type_check": check})
                assert out.ok and out.value == 1, (i, out.error)


def count(n: int, check: str) -> int:
    return instructions(__file__, str(n), check)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        asyncio.run(child(int(args.child[0]), args.child[1]))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    report: dict[str, object] = {"runs": RUNS, "snippet": WARM}
    for check in CHECKS:
        none, many = count(0, check), count(RUNS, check)
        report[f"instructions_per_run_check_{check}"] = round((many - none) / RUNS)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print("| type check | host instructions per warm run of `__out = 1` (monty engine) | runs |")
    print("|---|---|---|")
    for check in CHECKS:
        print(f"| {check} | {report[f'instructions_per_run_check_{check}']:,} | {RUNS} |")


if __name__ == "__main__":
    main()
