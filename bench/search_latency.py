"""Search latency and memory at 1k, 10k and 100k tools, against a reference BM25 (bm25s).

    uv run python bench/search_latency.py [--sizes 1000,10000,100000] [--search lexical,semantic] [--data DIR] [--json]

The catalog is every tool of the evaluation data (``tests/data/eval``, or ``--data DIR``
with the same files as ``.json`` or ``.json.gz``; about 3,500 real tools), replicated under
new namespaces (``<namespace>-r2``, ``-r3``, ...) until it has the wanted size. Each size runs
in a fresh process so that its memory figure is its own.

Per size:
- ``build_s``: ``register_many`` of all tools plus their namespace descriptions, and the
  first query (which settles the collection statistics); fastest of 3 builds (1 at 100k);
- ``p50_ms``/``p95_ms``: one ``search(limit=10)`` each for up to 2,000 distinct real queries
  (MSC levels 1-4, LiveMCPBench, MetaTool multi), after 100 warm-up queries;
- ``rss_mb``: resident memory of the process after the queries (index, tools and Python);
  ``kb_per_tool``: what the build and the queries added to it, per tool; ``dense_mb``: the
  semantic signal's vectors (capacity included);
- ``semantic`` rows: ``InMemoryIndex(semantic=True)``, where build includes embedding every
  tool and each query includes embedding it; ``model_load_s`` is the model's one-time load;
- ``register_one_ms``: median time to register one new tool into the built index (50 tools);
- ``query_after_register_ms``: median time of the first query after such a registration
  (it refreshes length normalisers and the cached postings of the query's terms).
- ``two_pass_top5``: semantic rows above ``SearchParams.dense_exact_max`` tools, where a query's
  first pass reads a prefix of each vector: the share of the exact search's top five (the
  same index searched with every vector read in full) that the two-pass search also returns,
  over the first 500 timed queries (after the timings).
``cpu`` repeats build, p50, p95 and register_one as thread CPU time, which other load on a
shared machine disturbs far less than wall time; ``loadavg_1m`` says how busy the machine was.
The reference (``bm25s`` with stemming, as in the quality bench) is timed on the same
queries over the same tools; it has no incremental registration.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _eval as E

CATALOGS = (
    "msc_bench_mcp.json",
    "livemcpbench.json",
    "metatool.json",
    "mcp_bench_tools.json",
    "github_mcp_server_tools.json",
)
QUERY_SETS = ("msc_bench_mcp.json", "livemcpbench.json", "metatool.json")
N_QUERIES = 2000
N_WARMUP = 100
N_REGISTER = 50


def replicated_catalog(data_dir: Path, size: int) -> list[dict[str, Any]]:
    base = E.merge_catalogs(((name, E.load_data(data_dir, name)) for name in CATALOGS), quiet=True)
    out: list[dict[str, Any]] = []
    replica = 1
    while len(out) < size:
        suffix = "" if replica == 1 else f"-r{replica}"
        for rec in base:
            if len(out) == size:
                break
            ns = f"{rec['namespace']}{suffix}"
            out.append({**rec, "namespace": ns, "id": f"{ns}:{rec['name']}"})
        replica += 1
    return out


def real_queries(data_dir: Path) -> list[str]:
    texts: list[str] = []
    for name in QUERY_SETS:
        doc = E.load_data(data_dir, name)
        for q in doc.get("queries", []):
            if name == "metatool.json" and str(q.get("qid", "")).startswith("s"):
                continue  # MetaTool's 20k single-tool queries would crowd out the rest
            texts.append(str(q["query"]))
    # Interleave the sets deterministically so every prefix mixes short and long queries.
    texts = sorted(set(texts), key=lambda t: (hash_str(t), t))
    return texts[: N_WARMUP + N_QUERIES]


def hash_str(text: str) -> int:
    return zlib.crc32(text.encode())


def rss_mb() -> float:
    import psutil

    return round(psutil.Process().memory_info().rss / 2**20, 1)


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def measure(size: int, data_dir: Path, semantic: bool = False) -> dict[str, Any]:
    from toolindex import InMemoryIndex, default_embedder

    model_load_s = 0.0
    if semantic:
        t0 = time.perf_counter()
        default_embedder()  # loaded once per process; not part of an index's build
        model_load_s = time.perf_counter() - t0
    catalog = replicated_catalog(data_dir, size)
    extra = replicated_catalog(data_dir, size + N_REGISTER)[size:]
    queries = real_queries(data_dir)
    warm, timed = queries[:N_WARMUP], queries[N_WARMUP:]
    items, descriptions = E.catalog_items(catalog)
    extra_items, _ = E.catalog_items([{**r, "namespace": r["namespace"] + "-new"} for r in extra])

    # The machine is shared: build a few times and keep the fastest (as timeit does); CPU time too.
    builds: list[tuple[float, float]] = []
    gc.collect()
    rss_before = rss_mb()
    index = InMemoryIndex(semantic=semantic)
    for _ in range(3 if size <= 10_000 else 1):
        del index
        gc.collect()
        index = InMemoryIndex(semantic=semantic)
        t0, c0 = time.perf_counter(), time.thread_time()
        for ns, desc in descriptions.items():
            index.describe_namespace(ns, desc)
        index.register_many(items)
        index.search(warm[0])
        builds.append((time.perf_counter() - t0, time.thread_time() - c0))

    n_tools = len(index)
    for q in warm:
        index.search(q)
    times: list[float] = []
    cpu: list[float] = []
    for q in timed:
        t, c = time.perf_counter(), time.thread_time()
        index.search(q)
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.thread_time() - c) * 1000)

    reg: list[float] = []
    reg_cpu: list[float] = []
    after: list[float] = []
    for i, (tool, ref) in enumerate(extra_items):
        t, c = time.perf_counter(), time.thread_time()
        index.register(tool, ref)
        reg.append((time.perf_counter() - t) * 1000)
        reg_cpu.append((time.thread_time() - c) * 1000)
        t = time.perf_counter()
        index.search(timed[i])
        after.append((time.perf_counter() - t) * 1000)
    rss = rss_mb()
    exact_max = index._engine.params.dense_exact_max  # pyright: ignore[reportPrivateUsage]
    two_pass = two_pass_agreement(index, timed[:500]) if semantic and n_tools > exact_max else None

    ref_result = measure_reference(catalog, warm, timed)
    return {
        "semantic": semantic,
        "model_load_s": round(model_load_s, 3),
        "build_s": round(min(b[0] for b in builds), 3),
        "kb_per_tool": round((rss - rss_before) * 1024 / max(n_tools, 1), 2),
        "dense_mb": round(index._engine.stats()["dense_bytes"] / 2**20, 1),  # pyright: ignore[reportPrivateUsage]
        "p50_ms": round(statistics.median(times), 3),
        "p95_ms": round(percentile(times, 95), 3),
        "rss_mb": rss,
        "register_one_ms": round(statistics.median(reg), 3),
        "query_after_register_ms": round(statistics.median(after), 3),
        "cpu": {
            "build_s": round(min(b[1] for b in builds), 3),
            "p50_ms": round(statistics.median(cpu), 3),
            "p95_ms": round(percentile(cpu, 95), 3),
            "register_one_ms": round(statistics.median(reg_cpu), 3),
        },
        "two_pass_top5": two_pass,
        "build_runs_s": [round(b[0], 3) for b in builds],
        "n_tools": n_tools,
        "n_queries": len(timed),
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "reference": ref_result,
    }


def two_pass_agreement(index: Any, queries: list[str]) -> float:
    """Percent of the exact search's top five that the two-pass search returns too."""
    engine = index._engine  # pyright: ignore[reportPrivateUsage]
    two_pass = [{h.id for h in index.search(q, limit=5)} for q in queries]
    params = engine.params
    engine.params = dataclasses.replace(params, dense_exact_max=sys.maxsize)
    try:
        exact = [{h.id for h in index.search(q, limit=5)} for q in queries]
    finally:
        engine.params = params
    found = sum(len(a & b) for a, b in zip(exact, two_pass, strict=True))
    return round(100 * found / max(sum(len(a) for a in exact), 1), 2)


def measure_reference(catalog: list[dict[str, Any]], warm: list[str], timed: list[str]) -> dict[str, float]:
    builds: list[float] = []
    for _ in range(3 if len(catalog) <= 10_000 else 1):
        gc.collect()
        t0 = time.perf_counter()
        ref = E.ReferenceBM25(catalog)
        builds.append(time.perf_counter() - t0)
    build_s = min(builds)
    for q in warm:
        ref.search(q)
    times: list[float] = []
    for q in timed:
        t = time.perf_counter()
        ref.search(q)
        times.append((time.perf_counter() - t) * 1000)
    return {
        "build_s": round(build_s, 3),
        "p50_ms": round(statistics.median(times), 3),
        "p95_ms": round(percentile(times, 95), 3),
    }


def print_table(sizes: dict[str, dict[str, Any]]) -> None:
    head = (
        f"{'tools':>7} {'search':>8} | {'build s':>7} {'p50 ms':>7} {'p95 ms':>7} {'RSS MB':>7} {'KB/tool':>7}"
        f" {'reg1 ms':>7} {'q-after':>7} | {'cpu build':>9} {'cpu p50':>7} {'cpu p95':>7} |"
        f" {'ref build':>9} {'ref p50':>7} {'ref p95':>7} | load"
    )
    print(
        "toolindex (left; lexical, and semantic = toolindex[semantic] fused) vs reference bm25s BM25 + stemming (right)"
    )
    print(head)
    print("-" * len(head))
    for s in sizes.values():
        r, c = s["reference"], s["cpu"]
        kind = "semantic" if s.get("semantic") else "lexical"
        print(
            f"{s['n_tools']:>7} {kind:>8} | {s['build_s']:>7.2f} {s['p50_ms']:>7.3f} {s['p95_ms']:>7.3f}"
            f" {s['rss_mb']:>7.0f} {s['kb_per_tool']:>7.2f}"
            f" {s['register_one_ms']:>7.3f} {s['query_after_register_ms']:>7.3f} |"
            f" {c['build_s']:>9.2f} {c['p50_ms']:>7.3f} {c['p95_ms']:>7.3f} |"
            f" {r['build_s']:>9.2f} {r['p50_ms']:>7.3f} {r['p95_ms']:>7.3f} | {s['loadavg_1m']:.1f}"
        )
    loads = {s["model_load_s"] for s in sizes.values() if s.get("semantic")}
    if loads:
        print(f"semantic: the model loads once per process in {min(loads):.2f}-{max(loads):.2f} s (not in build s)")
    for s in sizes.values():
        if s.get("two_pass_top5") is not None:
            share = s["two_pass_top5"]
            print(f"semantic at {s['n_tools']}: the two-pass search returns {share:.2f} % of the exact top five")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000", help="comma-separated catalog sizes")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    E.add_data_argument(ap)
    ap.add_argument(
        "--search",
        default="lexical,semantic",
        help="comma-separated: lexical, semantic (needs toolindex[semantic]; skipped with a note without it)",
    )
    ap.add_argument("--one-size", type=int, help=argparse.SUPPRESS)  # internal: measure in this process
    ap.add_argument("--semantic", action="store_true", help=argparse.SUPPRESS)  # internal, with --one-size
    args = ap.parse_args(argv)

    E.require_data(args.data, dict.fromkeys([*CATALOGS, *QUERY_SETS]))
    if args.one_size:
        print(json.dumps(measure(args.one_size, args.data, args.semantic)))
        return 0
    kinds = [k.strip() for k in args.search.split(",") if k.strip()]
    if "semantic" in kinds and not E.semantic_available():
        print("note: toolindex[semantic] is not installed: semantic rows left out", file=sys.stderr)
        kinds.remove("semantic")
    sizes: dict[str, dict[str, Any]] = {}
    for n in (int(s) for s in args.sizes.split(",") if s.strip()):
        for kind in kinds:
            cmd = [sys.executable, __file__, "--one-size", str(n), "--data", str(args.data)]
            out = subprocess.run(
                [*cmd, "--semantic"] if kind == "semantic" else cmd, check=True, stdout=subprocess.PIPE, text=True
            )
            sizes[f"{n} {kind}"] = json.loads(out.stdout)
    if args.json:
        print(json.dumps({"sizes": sizes}, indent=2))
    else:
        print_table(sizes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
