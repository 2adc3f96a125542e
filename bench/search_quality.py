"""Search quality: toolindex against a reference BM25 (bm25s + stemming) on labelled queries.

    uv run python bench/search_quality.py                      # every set in tests/data/eval
    uv run python bench/search_quality.py --data DIR           # the same sets from another folder
    uv run python bench/search_quality.py --typos              # + MSC L1 with one typo per long word
    uv run python bench/search_quality.py --catalog A.json [--catalog B.json] --queries Q.json [--json]

The no-argument run reads the evaluation data that ships with the repository
(``tests/data/eval``, ``.json.gz``); ``--data DIR`` reads the same files, as ``.json`` or
``.json.gz``, from another folder. ``--catalog`` and ``--queries`` files may be ``.json.gz`` too.

Metrics (percent): MRR@10; hit@k = some gold id in the top k; recall@5 = share of the
query's needed steps (``gold_sets``; a query with ``"any_of": true`` has one step that any
gold id satisfies) with a member in the top 5. Queries without gold are skipped. ``p50_ms``
is the median time of one query. With ``--catalog`` given several times the catalogs are
merged into one index; a queries file may be a catalog file that holds ``queries``.
Queries carrying ``level`` are grouped into one set per level.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _eval as E

METRIC_KEYS = ("mrr@10", "hit@1", "hit@5", "recall@5", "n_queries", "p50_ms")


def default_sets(data_dir: Path, max_queries: int | None) -> list[E.QuerySet]:
    E.require_data(data_dir, dict.fromkeys(spec.file for spec in E.DEFAULT_SETS))
    cache: dict[str, dict[str, Any]] = {}
    out: list[E.QuerySet] = []
    for spec in E.DEFAULT_SETS:
        if spec.file not in cache:
            cache[spec.file] = E.load_data(data_dir, spec.file)
        doc = cache[spec.file]
        queries = [E.parse_query(q) for q in doc.get("queries", []) if spec.select(q)]
        limit = spec.limit if max_queries is None else max_queries
        if limit:
            queries = queries[:limit]
        out.append(E.QuerySet(spec.name, queries, doc["tools"], [spec.file]))
    return out


def explicit_sets(catalogs: list[Path], query_files: list[Path], max_queries: int | None) -> list[E.QuerySet]:
    for p in [*catalogs, *query_files]:
        if not p.is_file():
            raise SystemExit(f"{p}: no such file")
    docs = {p: E.load_json(p) for p in [*catalogs, *query_files]}
    cat_paths = catalogs or [p for p in query_files if docs[p].get("tools")]
    if not cat_paths:
        raise SystemExit("no catalog: pass --catalog, or a --queries file that also holds 'tools'")
    catalog = E.merge_catalogs((p.name, docs[p]) for p in cat_paths)
    sources = query_files or [p for p in catalogs if docs[p].get("queries")]
    if not sources:
        raise SystemExit("no queries: pass --queries, or a --catalog file that holds 'queries'")
    out: list[E.QuerySet] = []
    for path in sources:
        groups: dict[str, list[E.Query]] = {}
        for rec in docs[path].get("queries", []):
            stem = path.name.removesuffix(".gz").removesuffix(".json")
            name = stem if rec.get("level") is None else f"{stem} L{rec['level']}"
            groups.setdefault(name, []).append(E.parse_query(rec))
        for name, queries in groups.items():
            if not any(q.gold_sets for q in queries):
                print(f"note: {name}: no query has gold ids (out of scope); skipped", file=sys.stderr)
                continue
            if max_queries:
                queries = queries[:max_queries]
            out.append(E.QuerySet(name, queries, catalog, [p.name for p in cat_paths]))
    return out


def evaluate(sets: list[E.QuerySet], typo_sets: set[str]) -> dict[str, dict[str, dict[str, float | int]]]:
    results: dict[str, dict[str, dict[str, float | int]]] = {}
    engines: dict[int, tuple[Any, E.ReferenceBM25]] = {}
    for qs in sets:
        key = id(qs.catalog)
        if key not in engines:
            engines[key] = (E.build_toolindex(qs.catalog), E.ReferenceBM25(qs.catalog))
        index, ref = engines[key]
        to_gold = dict(E.catalog_id(r) for r in qs.catalog)

        def ours(text: str, index: Any = index, to_gold: dict[str, str] = to_gold) -> list[str]:
            return [to_gold.get(h.id, h.id) for h in index.search(text, limit=E.K)]

        variants = [(qs.name, qs.queries)]
        if qs.name in typo_sets:
            variants.append((f"{qs.name} (typos)", E.typo_queries(qs.queries)))
        for name, queries in variants:
            results[name] = {"toolindex": E.metrics(queries, ours), "reference": E.metrics(queries, ref.search)}
    return results


def typo_summary(results: dict[str, dict[str, dict[str, float | int]]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, r in results.items():
        if name.endswith(" (typos)"):
            clean = results[name.removesuffix(" (typos)")]
            row: dict[str, float] = {}
            for engine in ("toolindex", "reference"):
                c, t = float(clean[engine]["hit@5"]), float(r[engine]["hit@5"])
                row[f"{engine}_kept"] = round(100 * t / c, 2) if c else 0.0
            out[name.removesuffix(" (typos)")] = row
    return out


def print_table(results: dict[str, dict[str, dict[str, float | int]]], typos: dict[str, dict[str, float]]) -> None:
    head = f"{'set':<28} {'n':>6} | {'MRR@10':>6} {'hit@1':>6} {'hit@5':>6} {'R@5':>6} {'p50ms':>6} |"
    head += f" {'refMRR':>6} {'hit@1':>6} {'hit@5':>6} {'R@5':>6} {'p50ms':>6} | {'ΔMRR':>6}"
    print("toolindex (left) vs reference bm25s BM25 + stemming (right); metrics in percent")
    print(head)
    print("-" * len(head))
    for name, r in results.items():
        a, b = r["toolindex"], r["reference"]
        line = f"{name:<28} {a['n_queries']:>6} |"
        line += "".join(f" {a[k]:>6.1f}" for k in ("mrr@10", "hit@1", "hit@5", "recall@5")) + f" {a['p50_ms']:>6.2f} |"
        line += "".join(f" {b[k]:>6.1f}" for k in ("mrr@10", "hit@1", "hit@5", "recall@5")) + f" {b['p50_ms']:>6.2f} |"
        line += f" {float(a['mrr@10']) - float(b['mrr@10']):>+6.1f}"
        print(line)
    for name, row in typos.items():
        print(
            f"typos on {name}: toolindex keeps {row['toolindex_kept']:.1f}% of its clean hit@5, "
            f"reference keeps {row['reference_kept']:.1f}%"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--catalog", action="append", type=Path, default=[], help="catalog JSON (repeatable: merged)")
    ap.add_argument("--queries", action="append", type=Path, default=[], help="queries JSON (repeatable)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    ap.add_argument("--typos", action="store_true", help="also run queries with one edit in each word of 5+ letters")
    ap.add_argument("--max-queries", type=int, default=None, help="evaluate at most N queries per set (0: all)")
    E.add_data_argument(ap)
    args = ap.parse_args(argv)

    if args.catalog or args.queries:
        sets = explicit_sets(args.catalog, args.queries, args.max_queries)
        typo_sets = {s.name for s in sets} if args.typos else set()
    else:
        sets = default_sets(args.data, args.max_queries)
        typo_sets = {E.TYPO_SET} if args.typos else set()
    results = evaluate(sets, typo_sets)
    typos = typo_summary(results)
    if args.json:
        doc: dict[str, Any] = {"sets": results}
        if typos:
            doc["typos"] = typos
        print(json.dumps(doc, indent=2))
    else:
        print_table(results, typos)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
