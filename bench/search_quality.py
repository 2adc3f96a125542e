"""Search quality: toolindex against a reference BM25 (bm25s + stemming) on labelled queries.

    uv run python bench/search_quality.py                      # every set in tests/data/eval
    uv run python bench/search_quality.py --data DIR           # the same sets from another folder
    uv run python bench/search_quality.py --typos              # + MSC L1 with one typo per long word
    uv run python bench/search_quality.py --catalog A.json [--catalog B.json] --queries Q.json [--json]

The no-argument run reads the evaluation data that ships with the repository
(``tests/data/eval``, ``.json.gz``); ``--data DIR`` reads the same files, as ``.json`` or
``.json.gz``, from another folder. ``--catalog`` and ``--queries`` files may be ``.json.gz`` too.

Metrics (percent): MRR@10; hit@k (k = 1, 3, 5) = some gold id in the top k; recall@5 = share of the
query's needed steps (``gold_sets``; a query with ``"any_of": true`` has one step that any
gold id satisfies) with a member in the top 5. Queries without gold are skipped. ``p50_ms``
is the median time of one query. With ``--catalog`` given several times the catalogs are
merged into one index; a queries file may be a catalog file that holds ``queries``.
Queries carrying ``level`` are grouped into one set per level.

Engines, side by side in one run: ``lexical`` (toolindex's default BM25F), ``dense`` (the
semantic signal alone: ``SearchParams(dense_weight=1.0)``), ``fused`` (``semantic=True``, the
default fusion) and the ``reference``. ``dense`` and ``fused`` need ``toolindex[semantic]``;
without it they are left out and said so.

Weak matches (with the extra): search never leaves a hit out; a hit whose ``relevance`` is below
``weak_relevance`` is marked weak, and when every hit of a query is weak toolcode's
``search_tools`` tells the caller the catalog may have no tool for it and how to look further.
For each threshold ``t`` of a grid, the fused engine's hits are marked as
``InMemoryIndex(weak_relevance=t)`` marks them; for the out-of-catalog sets
(:data:`_eval.OUT_OF_CATALOG_SETS`: written requests no GitHub tool serves, MSC level 5, and
written requests none of the four everyday servers serves) it reports the share of requests
whose every hit is weak (told to look further: the goal), and for every labelled set the share
whose every hit is weak although a gold tool is in the top 5 (told to look further needlessly:
the cost; the hits are returned all the same). The default threshold
(``toolindex.DEFAULT_WEAK_RELEVANCE``, which toolcode uses) is marked.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _eval as E

METRIC_KEYS = ("mrr@10", "hit@1", "hit@3", "hit@5", "recall@5", "n_queries", "p50_ms")


def _spec_set(data_dir: Path, spec: E.SetSpec, cache: dict[str, dict[str, Any]], limit: int | None) -> E.QuerySet:
    for file in (spec.file, spec.catalog or spec.file):
        if file not in cache:
            cache[file] = E.load_data(data_dir, file)
    queries = [E.parse_query(q) for q in cache[spec.file].get("queries", []) if spec.select(q)]
    if limit:
        queries = queries[:limit]
    catalog_file = spec.catalog or spec.file
    return E.QuerySet(spec.name, queries, cache[catalog_file]["tools"], [catalog_file])


def default_sets(data_dir: Path, max_queries: int | None) -> tuple[list[E.QuerySet], list[E.QuerySet]]:
    specs = (*E.DEFAULT_SETS, *E.OUT_OF_CATALOG_SETS)
    E.require_data(data_dir, dict.fromkeys(f for spec in specs for f in (spec.file, spec.catalog or spec.file)))
    cache: dict[str, dict[str, Any]] = {}
    labelled = [
        _spec_set(data_dir, spec, cache, spec.limit if max_queries is None else max_queries) for spec in E.DEFAULT_SETS
    ]
    outside = [_spec_set(data_dir, spec, cache, max_queries) for spec in E.OUT_OF_CATALOG_SETS]
    return labelled, outside


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


ENGINES = ("lexical", "dense", "fused", "reference")
THRESHOLDS = (0.15, 0.18, 0.2, 0.22, 0.25, 0.28, 0.3, 0.35)


class Engines:
    """The engines of one catalog, built once and shared by the sets that search it."""

    def __init__(self, catalog: list[dict[str, Any]], semantic: bool, dense_exact_max: int | None = None) -> None:
        from toolindex import SearchParams

        exact = {} if dense_exact_max is None else {"dense_exact_max": dense_exact_max}
        self.to_gold = dict(E.catalog_id(r) for r in catalog)
        self.indexes: dict[str, Any] = {"lexical": E.build_toolindex(catalog)}
        if semantic:
            dense = SearchParams(dense_weight=1.0, **exact)
            self.indexes["dense"] = E.build_toolindex(catalog, semantic=True, params=dense)
            self.indexes["fused"] = E.build_toolindex(catalog, semantic=True, params=SearchParams(**exact))
        self.reference = E.ReferenceBM25(catalog)
        self.relevance: dict[str, list[float]] = {}
        """Fused engine: query -> relevance of each of its hits (for the weak-match grid)."""

    def run(self, engine: str) -> Any:
        if engine == "reference":
            return self.reference.search
        index = self.indexes[engine]

        def search(text: str) -> list[str]:
            hits = index.search(text, limit=E.K)
            if engine == "fused":
                self.relevance[text] = [h.relevance if h.relevance is not None else 0.0 for h in hits]
            return [self.to_gold.get(h.id, h.id) for h in hits]

        return search


def evaluate(
    sets: list[E.QuerySet],
    typo_sets: set[str],
    semantic: bool,
    outside: list[E.QuerySet] | None = None,
    dense_exact_max: int | None = None,
) -> tuple[dict[str, dict[str, dict[str, float | int]]], dict[str, Any] | None]:
    results: dict[str, dict[str, dict[str, float | int]]] = {}
    engines: dict[int, Engines] = {}
    ranked: dict[str, dict[str, list[str]]] = {}  # set -> query -> fused ids (for the weak-match grid)
    names = [e for e in ENGINES if semantic or e not in ("dense", "fused")]
    for qs in sets:
        key = id(qs.catalog)
        if key not in engines:
            engines[key] = Engines(qs.catalog, semantic, dense_exact_max)
        eng = engines[key]
        variants = [(qs.name, qs.queries)]
        if qs.name in typo_sets:
            variants.append((f"{qs.name} (typos)", E.typo_queries(qs.queries)))
        for name, queries in variants:
            row: dict[str, dict[str, float | int]] = {}
            for engine in names:
                run = eng.run(engine)
                if engine == "fused":
                    seen: dict[str, list[str]] = ranked.setdefault(name, {})

                    def keep(text: str, run: Any = run, seen: dict[str, list[str]] = seen) -> list[str]:
                        seen[text] = out = run(text)
                        return out

                    row[engine] = E.metrics(queries, keep)
                else:
                    row[engine] = E.metrics(queries, run)
            results[name] = row
    weak = None
    if semantic and outside is not None:
        weak = weak_marking(sets, outside, engines, ranked)
    return results, weak


def weak_marking(
    sets: list[E.QuerySet],
    outside: list[E.QuerySet],
    engines: dict[int, Engines],
    ranked: dict[str, dict[str, list[str]]],
) -> dict[str, Any]:
    """For each threshold: the out-of-catalog share whose every hit is weak, and the labelled share
    whose every hit is weak with a gold tool in the top 5."""
    from toolindex import DEFAULT_WEAK_RELEVANCE

    grid: dict[str, dict[str, float]] = {}
    for qs in outside:
        key = id(qs.catalog)
        if key not in engines:
            engines[key] = Engines(qs.catalog, True)
        index = engines[key].indexes["fused"]
        # Every hit is weak exactly when the best hit's relevance is below the threshold.
        best = [max((h.relevance or 0.0 for h in index.search(q.text, limit=E.K)), default=0.0) for q in qs.queries]
        grid[qs.name] = {str(t): round(100 * sum(b < t for b in best) / max(len(best), 1), 1) for t in THRESHOLDS}
    needless: dict[str, dict[str, float]] = {}
    for qs in sets:
        eng = engines[id(qs.catalog)]
        labelled = [q for q in qs.queries if q.gold_sets]
        row: dict[str, float] = {}
        for t in THRESHOLDS:
            count = 0
            for q in labelled:
                ids = ranked[qs.name][q.text][:5]
                count += bool(set(ids) & q.gold) and max(eng.relevance[q.text], default=0.0) < t
            row[str(t)] = round(100 * count / max(len(labelled), 1), 2)
        needless[qs.name] = row
    return {
        "thresholds": list(THRESHOLDS),
        "default": DEFAULT_WEAK_RELEVANCE,
        "all_weak": grid,
        "all_weak_gold_in_top5": needless,
    }


def typo_summary(results: dict[str, dict[str, dict[str, float | int]]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, r in results.items():
        if name.endswith(" (typos)"):
            clean = results[name.removesuffix(" (typos)")]
            row: dict[str, float] = {}
            for engine in r:
                c, t = float(clean[engine]["hit@5"]), float(r[engine]["hit@5"])
                row[f"{engine}_kept"] = round(100 * t / c, 2) if c else 0.0
            out[name.removesuffix(" (typos)")] = row
    return out


def print_table(
    results: dict[str, dict[str, dict[str, float | int]]],
    typos: dict[str, dict[str, float]],
    weak: dict[str, Any] | None,
) -> None:
    engines = [e for e in ENGINES if any(e in r for r in results.values())]
    print("MRR@10 / hit@3 / hit@5 in percent; lexical = toolindex default, dense = semantic signal alone,")
    print("fused = toolindex semantic=True, reference = bm25s BM25 + stemming; p50 = ms per query")
    head = f"{'set':<28} {'n':>6} |" + "".join(f" {e[:9]:>9} {'hit@3':>5} {'hit@5':>5} {'p50':>5} |" for e in engines)
    print(head)
    print("-" * len(head))
    for name, r in results.items():
        line = f"{name:<28} {r[engines[0]]['n_queries']:>6} |"
        for e in engines:
            m = r[e]
            line += (
                f" {float(m['mrr@10']):>9.1f} {float(m['hit@3']):>5.1f} {float(m['hit@5']):>5.1f}"
                f" {float(m['p50_ms']):>5.2f} |"
            )
        print(line)
    for name, row in typos.items():
        kept = ", ".join(f"{e} {row[f'{e}_kept']:.1f}%" for e in engines)
        print(f"typos on {name}: share of the clean hit@5 kept: {kept}")
    if weak is not None:
        print()
        print(f"weak matches: fused engine, hits below relevance t marked weak (default: {weak['default']})")
        ts = weak["thresholds"]
        print(f"{'t':<60}" + "".join(f" {t:>6}" for t in ts))
        for name, row in weak["all_weak"].items():
            print(f"{'every hit weak, ' + name:<60}" + "".join(f" {row[str(t)]:>6.1f}" for t in ts))
        for name, row in weak["all_weak_gold_in_top5"].items():
            label = "every hit weak, gold in top 5, " + name
            print(f"{label:<60}" + "".join(f" {row[str(t)]:>6.2f}" for t in ts))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--catalog", action="append", type=Path, default=[], help="catalog JSON (repeatable: merged)")
    ap.add_argument("--queries", action="append", type=Path, default=[], help="queries JSON (repeatable)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    ap.add_argument("--typos", action="store_true", help="also run queries with one edit in each word of 5+ letters")
    ap.add_argument("--max-queries", type=int, default=None, help="evaluate at most N queries per set (0: all)")
    ap.add_argument("--lexical-only", action="store_true", help="leave out the dense and fused engines")
    ap.add_argument(
        "--dense-exact-max",
        type=int,
        default=None,
        help="SearchParams.dense_exact_max (0: the two-pass dense search of large catalogs on every set)",
    )
    E.add_data_argument(ap)
    args = ap.parse_args(argv)

    semantic = not args.lexical_only and E.semantic_available()
    if not semantic and not args.lexical_only:
        print("note: toolindex[semantic] is not installed: dense and fused engines left out", file=sys.stderr)
    outside: list[E.QuerySet] | None = None
    if args.catalog or args.queries:
        sets = explicit_sets(args.catalog, args.queries, args.max_queries)
        typo_sets = {s.name for s in sets} if args.typos else set()
    else:
        sets, outside = default_sets(args.data, args.max_queries)
        typo_sets = {E.TYPO_SET} if args.typos else set()
    results, weak = evaluate(sets, typo_sets, semantic, outside, args.dense_exact_max)
    typos = typo_summary(results)
    if args.json:
        doc: dict[str, Any] = {"sets": results}
        if typos:
            doc["typos"] = typos
        if weak is not None:
            doc["weak"] = weak
        print(json.dumps(doc, indent=2))
    else:
        print_table(results, typos, weak)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
