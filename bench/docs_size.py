"""Documentation size and cost (tooldocs).

For each catalog of the evaluation data (``tests/data/eval``, or ``--data DIR`` with the
same files as ``.json`` or ``.json.gz``), renders every tool at each detail level and compares
the `schema` doc with the tool's raw JSON definition (the MCP wire form: name, title,
description, inputSchema; compact JSON, and as `json.dumps` prints it by default). Also
times `describe` and `record_result` (a ~2 KB result, steady state and when every result
is inspected) against `json.dumps` of the same data (a reference
measured in the same run).

    uv run python bench/docs_size.py            # table
    uv run python bench/docs_size.py --json     # one JSON document
    uv run python bench/docs_size.py --data DIR # catalogs from another folder
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from tooldocs import InMemoryStore
from toolindex import BackendRef, InMemoryIndex, Tool

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _eval as E

CATALOGS = {"github": "github_mcp_server_tools.json", "mcp_bench": "mcp_bench_tools.json"}


def load(data_dir: Path, file: str) -> list[Tool]:
    records = E.load_data(data_dir, file)["tools"]
    return [Tool.from_mcp(r, namespace=r["namespace"], tags=r.get("tags") or []) for r in records]


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def timed(fn: Any, repeat: int) -> float:
    """Median microseconds per call over `repeat` batches of 20 calls."""
    samples: list[float] = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(20):
            fn()
        samples.append((time.perf_counter() - t0) / 20 * 1e6)
    return statistics.median(samples)


def measure(name: str, tools: list[Tool]) -> dict[str, Any]:
    index = InMemoryIndex()
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in tools])
    store = InMemoryStore(index)
    raw_compact, raw_default, summary, schema, full, ratios, ratios_default = [], [], [], [], [], [], []
    for t in tools:
        wire = t.to_mcp()
        rc = len(json.dumps(wire, separators=(",", ":"), ensure_ascii=False))
        rd = len(json.dumps(wire))
        s = len(store.describe(t.id, "schema").render())
        raw_compact.append(rc)
        raw_default.append(rd)
        summary.append(len(store.describe(t.id, "summary").render()))
        schema.append(s)
        full.append(len(store.describe(t.id, "full").render()))
        ratios.append(s / rc)
        ratios_default.append(s / rd)
    # Timings: one mid-sized tool; a result of ~2 KB of JSON with a stable shape.
    tool = sorted(tools, key=lambda t: len(json.dumps(t.input_schema)))[len(tools) // 2]
    result = {"items": [{"id": i, "title": f"item {i}", "labels": ["a", "b"], "open": i % 2 == 0} for i in range(25)]}
    store.record_result(tool.id, result)
    every = InMemoryStore(index, learn_every=1)  # inspects every result: the cost before a shape is stable
    every.record_result(tool.id, result)
    n = len(tools)
    return {
        "catalog": name,
        "tools": n,
        "raw_json_chars_median": statistics.median(raw_compact),
        "raw_json_default_chars_median": statistics.median(raw_default),
        "summary_chars_max": max(summary),
        "schema_chars_median": statistics.median(schema),
        "schema_chars_p90": pct([float(x) for x in schema], 90),
        "schema_chars_max": max(schema),
        "full_chars_median": statistics.median(full),
        "schema_to_raw_ratio_median": round(statistics.median(ratios), 3),
        "schema_to_raw_ratio_p90": round(pct(ratios, 90), 3),
        "schema_to_raw_default_ratio_median": round(statistics.median(ratios_default), 3),
        "catalog_raw_json_chars": sum(raw_compact),
        "catalog_summary_chars": sum(summary),
        "timing_tool": tool.id,
        "describe_schema_cold_us": round(timed(lambda: InMemoryStore(index).describe(tool.id), 15), 1),
        "describe_schema_cached_us": round(timed(lambda: store.describe(tool.id), 15), 1),
        "record_result_us": round(timed(lambda: store.record_result(tool.id, result), 15), 1),
        "record_result_every_call_us": round(timed(lambda: every.record_result(tool.id, result), 15), 1),
        "reference_json_dumps_result_us": round(timed(lambda: json.dumps(result), 15), 1),
    }


COLUMNS = [
    ("catalog", "catalog"),
    ("tools", "tools"),
    ("raw_json_chars_median", "raw JSON (median)"),
    ("schema_chars_median", "schema doc (median)"),
    ("schema_to_raw_ratio_median", "schema/raw (median)"),
    ("schema_to_raw_ratio_p90", "schema/raw (p90)"),
    ("schema_to_raw_default_ratio_median", "schema/raw pretty (median)"),
    ("summary_chars_max", "summary (max)"),
    ("full_chars_median", "full (median)"),
    ("describe_schema_cold_us", "describe cold µs"),
    ("describe_schema_cached_us", "describe cached µs"),
    ("record_result_us", "record_result µs (stable shape)"),
    ("record_result_every_call_us", "record_result µs (inspecting)"),
    ("reference_json_dumps_result_us", "json.dumps(result) µs"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of a table")
    E.add_data_argument(parser)
    args = parser.parse_args()
    E.require_data(args.data, CATALOGS.values())
    rows = [measure(name, load(args.data, file)) for name, file in CATALOGS.items()]
    if args.json:
        print(json.dumps({"bench": "docs_size", "python": sys.version.split()[0], "results": rows}, indent=2))
        return 0
    print("| " + " | ".join(h for _, h in COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k, _ in COLUMNS) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
