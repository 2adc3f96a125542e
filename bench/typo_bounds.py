"""The typo tables' cost on hostile catalogs, against the real catalogs' in the same run.

    uv run python bench/typo_bounds.py [--data DIR] [--json]

Typo correction keeps one-deletion variants of the vocabulary's words in tables that the first
query with an unknown word builds and that every later registration extends. Their size is
bounded whatever the catalog says (see ``docs/toolindex.md``, "Bounds on hostile tool
definitions"); this measures what that bound costs. Cases:

- ``real`` (the reference): every tool of the evaluation data (``tests/data/eval``, 3,512 tools);
- ``long_words``: one upstream of 200 tools whose descriptions are 16 KB of distinct 39-letter
  words (3.3 MB, the shape of the finding that made the bound: the tables took about 1 GB);
- ``budget_words``: the same with 12-letter words, which the bound admits until the namespace's
  budget is spent;
- ``names_and_text``: 200 tools whose titles and descriptions both hold 16 KB of distinct
  12-letter words (both of the namespace's budgets spent);
- ``eight_upstreams``: 8 such namespaces of 20 tools each (the global bound).

Per case: ``tools``; ``words`` and ``entries`` (typo words and the table entries they are
charged) and ``keys`` (keys the tables hold); ``build_ms``: CPU time of building the tables (what
the first query with an unknown word does before anything else); ``tables_mb``: their memory
(dicts, keys and lists; the words are the vocabulary's); ``relist_ms`` and ``relist_tables_mb``:
the CPU time spent extending the tables when the same catalog is registered into an index whose
tables exist (a re-listing), and their memory after it; ``register_s``: CPU time of registering
the catalog without tables, the work a listing costs anyway (the reference, with ``real``). CPU
times are this process's (``time.process_time``), which other load changes far less than wall time.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _eval as E
from toolindex import BackendRef, InMemoryIndex, Tool

CATALOGS = (
    "msc_bench_mcp.json",
    "livemcpbench.json",
    "metatool.json",
    "mcp_bench_tools.json",
    "github_mcp_server_tools.json",
    "reference_servers_tools.json",
)


def _words(n: int, length: int, rnd: random.Random) -> list[str]:
    return ["".join(rnd.choices(string.ascii_lowercase, k=length)) for _ in range(n)]


def flood(namespace: str, n_tools: int, length: int, *, titles: bool = False, seed: int = 7) -> list[Tool]:
    """``n_tools`` tools whose descriptions (and titles) are 16 KB of distinct ``length``-letter words."""
    rnd = random.Random(seed)
    per = 16_384 // (length + 1)

    def text() -> str:
        return " ".join(_words(per, length, rnd))

    return [
        Tool(name=f"t{i}", namespace=namespace, description=text(), title=text() if titles else None)
        for i in range(n_tools)
    ]


def real(data_dir: Path) -> tuple[list[tuple[Tool, BackendRef]], dict[str, str]]:
    catalog = E.merge_catalogs(((name, E.load_data(data_dir, name)) for name in CATALOGS), quiet=True)
    return E.catalog_items(catalog)


def _index(items: list[tuple[Tool, BackendRef]], descriptions: dict[str, str]) -> InMemoryIndex:
    index = InMemoryIndex()
    for ns, desc in descriptions.items():
        index.describe_namespace(ns, desc)
    index.register_many(items)
    return index


def _engine(index: InMemoryIndex) -> Any:
    return index._engine  # pyright: ignore[reportPrivateUsage]


def tables_mb(engine: Any) -> float:
    """Memory of the typo tables: the dicts, their keys and their lists (the words are the vocabulary's)."""
    total = 0
    tables: tuple[dict[str, str | list[str]], ...] = (engine._deletes, engine._prefixes)
    for table in tables:
        total += sys.getsizeof(table)
        for key, held in table.items():
            total += sys.getsizeof(key) + (0 if isinstance(held, str) else sys.getsizeof(held))
    return total / 2**20


def measure(items: list[tuple[Tool, BackendRef]], descriptions: dict[str, str]) -> dict[str, Any]:
    gc.collect()
    t0 = time.process_time()
    index = _index(items, descriptions)
    register_s = time.process_time() - t0
    engine = _engine(index)
    gc.collect()
    t0 = time.process_time()
    engine._ensure_typo_index()  # what the first query with an unknown word does first
    build_ms = (time.process_time() - t0) * 1000
    stats = engine.stats()
    built_mb = tables_mb(engine)
    del index, engine
    # A listing that arrives once the tables exist: the time spent extending them.
    warm = InMemoryIndex()
    warm.register(Tool(name="get_weather", namespace="zz", description="Current weather."), BackendRef.mcp("zz"))
    warm.search("wether")
    engine = _engine(warm)
    spent = [0.0]
    extend = engine._add_vocab

    def timed(words: Any) -> None:
        t = time.process_time()
        extend(words)
        spent[0] += time.process_time() - t

    engine._add_vocab = timed
    for ns, desc in descriptions.items():
        warm.describe_namespace(ns, desc)
    warm.register_many(items)
    return {
        "tools": len(items),
        "words": stats["words"],
        "entries": stats["typo_entries"],
        "keys": stats["typo_keys"],
        "build_ms": round(build_ms, 1),
        "tables_mb": round(built_mb, 1),
        "relist_ms": round(spent[0] * 1000, 1),
        "relist_tables_mb": round(tables_mb(engine), 1),
        "register_s": round(register_s, 2),
    }


def cases(data_dir: Path) -> dict[str, Callable[[], tuple[list[tuple[Tool, BackendRef]], dict[str, str]]]]:
    def hostile(tools: list[Tool]) -> tuple[list[tuple[Tool, BackendRef]], dict[str, str]]:
        return [(t, BackendRef.mcp(t.namespace)) for t in tools], {}

    return {
        "real": lambda: real(data_dir),
        "long_words": lambda: hostile(flood("evil", 200, 39)),
        "budget_words": lambda: hostile(flood("evil", 200, 12)),
        "names_and_text": lambda: hostile(flood("evil", 200, 12, titles=True)),
        "eight_upstreams": lambda: hostile(
            [t for n in range(8) for t in flood(f"evil{n}", 20, 12, titles=True, seed=n)]
        ),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    E.add_data_argument(ap)
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = ap.parse_args(argv)
    E.require_data(args.data, CATALOGS)
    rows = {name: measure(*make()) for name, make in cases(args.data).items()}
    if args.json:
        print(json.dumps({"cases": rows, "loadavg_1m": round(os.getloadavg()[0], 2)}, indent=2))
        return 0
    cols = ("tools", "words", "entries", "keys", "build_ms", "tables_mb", "relist_ms", "relist_tables_mb", "register_s")
    print(f"{'case':<16}" + "".join(f"{c:>17}" for c in cols))
    for name, row in rows.items():
        print(f"{name:<16}" + "".join(f"{row[c]:>17}" for c in cols))
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
