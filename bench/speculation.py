"""Reads started before the code reaches them, against a real stdio MCP server (``bench/servers/slow_store.py``).

The server's read tool (``readOnlyHint``) takes 100 ms; its write tool appends every call it receives to a
file. Each scenario runs with speculation on and off, in alternating rounds of one run (medians):

- ``one_call``: one read, off: the reference every wall time is divided by;
- ``a_sequential``: 8 reads with literal arguments, one after another: on <= 2x one call;
- ``b_comprehension``: a read, then a comprehension of 10 reads over its result: on <= 3x one call;
- ``c_false_write``: a write behind a condition that is false: the write tool receives nothing;
- ``d_no_speculable``: three writes whose arguments the loop computes (nothing may start early): runs
  with speculation on are at most 2 % slower than off (``on_vs_off``: the median ratio of each run on to
  the run off made beside it, minus one).

Usage: ``uv run python bench/speculation.py [--json] [--rounds N]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from toolcode import ExecuteOptions, Toolbox
from toolcode._settings import StateSettings

SERVER = Path(__file__).resolve().parent / "servers" / "slow_store.py"

_S = "from tools import slow_store as s\n"
SNIPPETS = {
    "one_call": _S + "s.get_item(n=99)['n']",
    "a_sequential": _S
    + "".join(f"v{i} = s.get_item(n={i})\n" for i in range(1, 9))
    + "["
    + ", ".join(f"v{i}['n']" for i in range(1, 9))
    + "]",
    "b_comprehension": _S + "r = s.get_item(n=0)\n[s.get_item(n=i)['n'] for i in r['items']]",
    "c_false_write": _S + "r = s.get_item(n=1)\nif r['n'] > 5:\n    s.put_item(n=r['n'])\nr['n']",
    "d_no_speculable": _S + "out = []\nfor i in range(3):\n    out.append(s.put_item(n=i))\nlen(out)",
}
TARGETS = {"a_sequential": 2.0, "b_comprehension": 3.0}
OVERHEAD_TARGET = 0.02


async def bench(rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "writes.txt"
        log.touch()
        config = {"mcpServers": {"slow_store": {"command": sys.executable, "args": [str(SERVER), "--log", str(log)]}}}
        async with Toolbox.from_config(config, state=StateSettings(memory=True)) as box:
            times: dict[str, dict[str, list[float]]] = {name: {"on": [], "off": []} for name in SNIPPETS}
            values: dict[str, dict[str, Any]] = {name: {} for name in SNIPPETS}
            writes: dict[str, int] = {}

            async def once(name: str, on: bool) -> None:
                opts = ExecuteOptions(speculate=on)
                t0 = time.perf_counter()
                r = await box.execute(SNIPPETS[name], options=opts)
                times[name]["on" if on else "off"].append(time.perf_counter() - t0)
                values[name]["on" if on else "off"] = r.value

            for name in SNIPPETS:
                await once(name, False)  # warm-up: the server's session, the worker, the module
                await once(name, True)
                times[name] = {"on": [], "off": []}
                before = len(log.read_text().splitlines())
                n = rounds * 5 if name == "d_no_speculable" else rounds
                for i in range(n):
                    for on in (True, False) if i % 2 == 0 else (False, True):
                        await once(name, on)
                writes[name] = len(log.read_text().splitlines()) - before
    ref = statistics.median(times["one_call"]["off"])
    out: dict[str, Any] = {"one_call_ms": round(ref * 1000, 1), "scenarios": {}}
    for name, t in times.items():
        on, off = statistics.median(t["on"]), statistics.median(t["off"])
        out["scenarios"][name] = {
            "on_ms": round(on * 1000, 1),
            "off_ms": round(off * 1000, 1),
            "on_x_one_call": round(on / ref, 2),
            "off_x_one_call": round(off / ref, 2),
            # Each run with speculation on was made beside one with it off: the median of their ratios
            # leaves out what drifts over the whole run (the machine's other work).
            "on_vs_off": round(statistics.median(a / b for a, b in zip(t["on"], t["off"], strict=True)) - 1, 4),
            "same_value": values[name]["on"] == values[name]["off"],
            "writes_received": writes[name],
            "runs_each": len(t["on"]),
        }
    return out


def verdicts(r: dict[str, Any]) -> list[str]:
    s = r["scenarios"]
    lines = [
        f"{name}: on = {s[name]['on_x_one_call']:.2f}x one call (target <= {t:g}x) "
        f"{'OK' if s[name]['on_x_one_call'] <= t else 'MISSED'}"
        for name, t in TARGETS.items()
    ]
    c = s["c_false_write"]["writes_received"]
    lines.append(f"c_false_write: the write tool received {c} calls (target 0) {'OK' if c == 0 else 'MISSED'}")
    d = s["d_no_speculable"]["on_vs_off"]
    lines.append(
        f"d_no_speculable: on vs off {d * 100:+.2f} % (target <= {OVERHEAD_TARGET * 100:g} %) "
        f"{'OK' if d <= OVERHEAD_TARGET else 'MISSED'}"
    )
    same = all(v["same_value"] for v in s.values())
    lines.append(f"values identical on and off: {'yes' if same else 'NO'}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--rounds", type=int, default=10, help="runs per scenario and setting (default 10; d: 5x)")
    args = parser.parse_args()
    results = anyio.run(bench, args.rounds)
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return
    print(f"one read, speculation off: {results['one_call_ms']} ms (the reference)")
    cols = ["on_ms", "off_ms", "on_x_one_call", "off_x_one_call", "on_vs_off", "writes_received", "runs_each"]
    print(f"{'scenario':<18}" + "".join(f"{c:>16}" for c in cols))
    for name, row in results["scenarios"].items():
        print(f"{name:<18}" + "".join(f"{row[c]:>16}" for c in cols))
    print()
    for line in verdicts(results):
        print(line)


if __name__ == "__main__":
    main()
