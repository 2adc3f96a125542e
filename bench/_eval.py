"""Shared helpers for the benchmarks: evaluation data, query sets, metrics, the reference BM25.

Catalog and query files follow ``tests/data/eval/README.md``; the repository ships them
there, gzip-compressed (:data:`DATA_DIR`), and every bench takes ``--data DIR`` for another
folder of ``.json`` or ``.json.gz`` files. Nothing here knows about a particular catalog
except :data:`DEFAULT_SETS`, which names the evaluation sets of the no-argument run (the
same selection the README's reference figures use).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolindex import BackendRef, InMemoryIndex, SearchParams, Tool

DATA_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "eval"
"""The evaluation data that ships with the repository (``tests/data/eval``, gzip-compressed)."""

K = 10


@dataclass(frozen=True)
class Query:
    qid: str
    text: str
    gold_sets: tuple[frozenset[str], ...]
    """One set per needed step; any id of a set satisfies that step."""

    @property
    def gold(self) -> frozenset[str]:
        return frozenset().union(*self.gold_sets) if self.gold_sets else frozenset()


@dataclass
class QuerySet:
    name: str
    queries: list[Query]
    catalog: list[dict[str, Any]]
    catalog_names: list[str] = field(default_factory=list[str])


@dataclass(frozen=True)
class SetSpec:
    """A named evaluation set of the no-argument run."""

    name: str
    file: str
    select: Callable[[dict[str, Any]], bool]
    limit: int | None = None
    catalog: str | None = None
    """The file whose ``tools`` the queries search (default: ``file`` itself)."""


# The sets of the README's reference figures. The README labels its MetaTool single figure
# "first 3,000"; the file's first 3,000 queries cover only 45 tools and score far lower for the
# reference (29 vs 48 MRR@10), while the whole set reproduces the README's figure, so both are
# evaluated. Each set is searched against its own catalog. MSC level 5 has no gold (out of scope).
DEFAULT_SETS: tuple[SetSpec, ...] = (
    *(SetSpec(f"MSC L{lv}", "msc_bench_mcp.json", lambda q, lv=lv: q.get("level") == lv) for lv in (1, 2, 3, 4)),
    SetSpec("LiveMCPBench", "livemcpbench.json", lambda q: True),
    SetSpec("MetaTool single", "metatool.json", lambda q: str(q["qid"]).startswith("s")),
    SetSpec("MetaTool single first 3000", "metatool.json", lambda q: str(q["qid"]).startswith("s"), limit=3000),
    SetSpec("MetaTool multi", "metatool.json", lambda q: str(q["qid"]).startswith("m")),
    SetSpec(
        "GitHub written",
        "github_written_queries.json",
        lambda q: str(q["qid"]).startswith("in"),
        catalog="github_mcp_server_tools.json",
    ),
    SetSpec(
        "Everyday written",
        "reference_servers_written_queries.json",
        lambda q: str(q["qid"]).startswith("in"),
        catalog="reference_servers_tools.json",
    ),
)
OUT_OF_CATALOG_SETS: tuple[SetSpec, ...] = (
    SetSpec(
        "GitHub written, out of catalog",
        "github_written_queries.json",
        lambda q: str(q["qid"]).startswith("out"),
        catalog="github_mcp_server_tools.json",
    ),
    SetSpec(
        "  of which plain",
        "github_written_queries.json",
        lambda q: str(q["qid"]).startswith("out") and not q.get("shares_word"),
        catalog="github_mcp_server_tools.json",
    ),
    SetSpec(
        "  of which sharing a word",
        "github_written_queries.json",
        lambda q: str(q["qid"]).startswith("out") and bool(q.get("shares_word")),
        catalog="github_mcp_server_tools.json",
    ),
    SetSpec("MSC L5 (out of scope)", "msc_bench_mcp.json", lambda q: q.get("level") == 5),
    SetSpec(
        "Everyday written, out of catalog",
        "reference_servers_written_queries.json",
        lambda q: str(q["qid"]).startswith("out"),
        catalog="reference_servers_tools.json",
    ),
)
"""Queries no tool of their catalog serves: a search that marks weak matches should mark every
hit of these weak (its caller is then told to look further). The written GitHub set is also
split into its plain requests and those written to share a word or a sense with a GitHub tool
(``shares_word``)."""
TYPO_SET = "MSC L1"
"""The set the no-argument ``--typos`` run perturbs."""


def add_data_argument(ap: argparse.ArgumentParser) -> None:
    """``--data DIR`` (``--eval-dir`` is its old name), defaulting to :data:`DATA_DIR`."""
    ap.add_argument(
        "--data",
        "--eval-dir",
        dest="data",
        type=Path,
        default=DATA_DIR,
        metavar="DIR",
        help="folder of evaluation catalogs, each as .json or .json.gz (default: the repository's tests/data/eval)",
    )


def data_file(data_dir: Path, name: str) -> Path:
    """``name`` (``metatool.json``) in ``data_dir``, plain or gzip-compressed (``metatool.json.gz``)."""
    for candidate in (data_dir / name, data_dir / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    raise SystemExit(missing_data(data_dir, [name], [name]))


def require_data(data_dir: Path, names: Iterable[str]) -> None:
    """Exit with a message naming every file of ``names`` that ``data_dir`` lacks."""
    needed = list(names)
    missing = [n for n in needed if not (data_dir / n).is_file() and not (data_dir / f"{n}.gz").is_file()]
    if missing:
        raise SystemExit(missing_data(data_dir, missing, needed))


def missing_data(data_dir: Path, missing: Sequence[str], needed: Sequence[str]) -> str:
    def files(names: Sequence[str]) -> str:
        return ", ".join(f"{n}(.gz)" for n in names)

    where = f"folder {data_dir} does not exist" if not data_dir.is_dir() else f"{data_dir} has no {files(missing)}"
    return (
        f"evaluation data missing: {where}. Pass --data DIR with a folder that holds {files(needed)}; "
        f"the repository ships them in {DATA_DIR} (see its README.md)."
    )


def load_data(data_dir: Path, name: str) -> dict[str, Any]:
    """The catalog or query file ``name`` of ``data_dir`` (``.json`` or ``.json.gz``)."""
    return load_json(data_file(data_dir, name))


def load_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; a name ending in ``.gz`` is read through gzip."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict):
        raise SystemExit(f"{path}: expected a JSON object with 'tools' and/or 'queries'")
    return data  # type: ignore[return-value]


def merge_catalogs(docs: Iterable[tuple[str, dict[str, Any]]], *, quiet: bool = False) -> list[dict[str, Any]]:
    """Tools of several catalogs; a repeated id keeps its first record (and says so on stderr)."""
    out: dict[str, dict[str, Any]] = {}
    for name, doc in docs:
        dupes = 0
        for rec in doc.get("tools", []):
            tid = rec.get("id") or f"{rec['namespace']}:{rec['name']}"
            if tid in out:
                dupes += 1
                continue
            out[tid] = rec
        if dupes and not quiet:
            print(f"note: {name}: {dupes} tool ids already seen in an earlier catalog were skipped", file=sys.stderr)
    return list(out.values())


def parse_query(rec: dict[str, Any]) -> Query:
    gold = [str(g) for g in rec.get("gold") or []]
    if rec.get("any_of"):
        sets = (frozenset(gold),) if gold else ()
    elif rec.get("gold_sets") is not None:
        sets = tuple(frozenset(str(g) for g in s) for s in rec["gold_sets"] if s)
    else:
        sets = tuple(frozenset([g]) for g in gold)
    return Query(str(rec.get("qid", "")), str(rec["query"]), sets)


# -- the two engines under test ------------------------------------------------------------


def tool_id(rec: dict[str, Any]) -> str:
    return str(rec.get("id") or f"{rec['namespace']}:{rec['name']}")


def build_toolindex(
    catalog: Sequence[dict[str, Any]],
    namespace_suffix: str = "",
    *,
    semantic: bool = False,
    params: SearchParams | None = None,
) -> InMemoryIndex:
    """An index of the catalog; every namespace with a ``server_description`` gets it as its description."""
    index = InMemoryIndex(semantic=semantic, search_params=params)
    add_to_toolindex(index, catalog, namespace_suffix)
    return index


def semantic_available() -> bool:
    """Whether ``toolindex[semantic]`` is installed (its model loads)."""
    from toolindex import SemanticUnavailableError, default_embedder

    try:
        default_embedder()
    except SemanticUnavailableError:
        return False
    return True


def catalog_items(
    catalog: Sequence[dict[str, Any]], namespace_suffix: str = ""
) -> tuple[list[tuple[Tool, BackendRef]], dict[str, str]]:
    items: list[tuple[Tool, BackendRef]] = []
    descriptions: dict[str, str] = {}
    for rec in catalog:
        ns = str(rec["namespace"]) + namespace_suffix
        rec = {**rec, "name": mcp_name(str(rec["name"]))}
        tool = Tool.from_mcp(rec, namespace=ns, tags=list(rec.get("tags") or []))
        items.append((tool, BackendRef.mcp(ns, tool.name)))
        desc = rec.get("server_description")
        if desc and ns not in descriptions:
            descriptions[ns] = str(desc)
    return items, descriptions


def mcp_name(name: str) -> str:
    """A catalog name made valid for MCP (a few MetaTool names carry ``&`` or spaces)."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", name)[:128]


def catalog_id(rec: dict[str, Any]) -> tuple[str, str]:
    """(id the index gives the record, id the catalog's gold labels use)."""
    return f"{rec['namespace']}:{mcp_name(str(rec['name']))}", tool_id(rec)


def add_to_toolindex(index: InMemoryIndex, catalog: Sequence[dict[str, Any]], namespace_suffix: str = "") -> None:
    items, descriptions = catalog_items(catalog, namespace_suffix)
    # Describe first, as a client does when it learns a server's instructions before its tools.
    for ns, desc in descriptions.items():
        index.describe_namespace(ns, desc)
    index.register_many(items)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def split_name(name: str) -> str:
    """A tool name's words: split on ``_``/``-`` and camelCase (``listPets_v2`` → ``list Pets v2``)."""
    return " ".join(w for part in re.split(r"[_\-]+", name) for w in _CAMEL.split(part) if w)


def reference_text(rec: dict[str, Any]) -> str:
    """The reference's document: id + name split on ``_``/camelCase + description + tags (eval README)."""
    split = split_name(str(rec["name"]))
    return " ".join([tool_id(rec), split, str(rec.get("description") or ""), " ".join(rec.get("tags") or [])])


class ReferenceBM25:
    """Plain BM25 from the ``bm25s`` package with English Snowball stemming and English stopwords."""

    def __init__(self, catalog: Sequence[dict[str, Any]]) -> None:
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        self.ids = [tool_id(r) for r in catalog]
        corpus = [reference_text(r) for r in catalog]
        tokens = bm25s.tokenize(corpus, stopwords="en", stemmer=self._stemmer, show_progress=False)
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)

    def search(self, query: str, k: int = K) -> list[str]:
        bm25s = self._bm25s
        qt = bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer, show_progress=False)
        if not qt.vocab:  # only stopwords
            return []
        k = min(k, len(self.ids))
        docs, scores = self.retriever.retrieve(qt, k=k, show_progress=False, n_threads=1)
        return [self.ids[int(d)] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


# -- metrics ---------------------------------------------------------------------------------


def metrics(queries: Sequence[Query], run: Callable[[str], list[str]]) -> dict[str, float | int]:
    """MRR@10, hit@1, hit@3, hit@5, recall@5 (in percent), the query count and the p50 query time.

    - MRR@10: reciprocal rank of the first gold id in the top 10 (0 if none).
    - hit@k: some gold id is in the top k.
    - recall@5: the share of needed steps (gold sets) with a member in the top 5.
    """
    mrr = hit1 = hit3 = hit5 = rec5 = 0.0
    times: list[float] = []
    n = 0
    for q in queries:
        if not q.gold_sets:
            continue
        n += 1
        t0 = time.perf_counter()
        ranked = run(q.text)[:K]
        times.append((time.perf_counter() - t0) * 1000)
        gold = q.gold
        for i, tid in enumerate(ranked):
            if tid in gold:
                mrr += 1 / (i + 1)
                break
        hit1 += bool(ranked[:1] and ranked[0] in gold)
        hit3 += bool(set(ranked[:3]) & gold)
        top5 = set(ranked[:5])
        hit5 += bool(top5 & gold)
        rec5 += sum(bool(top5 & s) for s in q.gold_sets) / len(q.gold_sets)
    if n == 0:
        return {
            "mrr@10": 0.0,
            "hit@1": 0.0,
            "hit@3": 0.0,
            "hit@5": 0.0,
            "recall@5": 0.0,
            "n_queries": 0,
            "p50_ms": 0.0,
        }
    return {
        "mrr@10": round(100 * mrr / n, 2),
        "hit@1": round(100 * hit1 / n, 2),
        "hit@3": round(100 * hit3 / n, 2),
        "hit@5": round(100 * hit5 / n, 2),
        "recall@5": round(100 * rec5 / n, 2),
        "n_queries": n,
        "p50_ms": round(statistics.median(times), 3),
    }


# -- typos -----------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z]{5,}")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def typo(word: str, salt: str = "") -> str:
    """One deterministic character edit (delete, substitute, transpose or insert) inside the word.

    The first letter is kept (people rarely mistype it, and it keeps the edit inside the word).
    """
    h = zlib.crc32(f"{salt}\x00{word}".encode())
    kind = h % 4
    pos = 1 + (h >> 2) % (len(word) - 1)  # 1 .. len-1
    letter = _LETTERS[(h >> 12) % 26]
    if kind == 0:  # delete
        return word[:pos] + word[pos + 1 :]
    if kind == 1:  # substitute (always a different letter)
        if letter == word[pos].lower():
            letter = _LETTERS[(_LETTERS.index(letter) + 1) % 26]
        return word[:pos] + letter + word[pos + 1 :]
    if kind == 2 and pos < len(word) - 1 and word[pos] != word[pos + 1]:  # transpose
        return word[:pos] + word[pos + 1] + word[pos] + word[pos + 2 :]
    return word[:pos] + letter + word[pos:]  # insert


def with_typos(text: str, salt: str = "") -> str:
    """The text with one edit in every word of five letters or more."""
    return _WORD.sub(lambda m: typo(m.group(0), salt), text)


def typo_queries(queries: Sequence[Query]) -> list[Query]:
    return [Query(q.qid, with_typos(q.text, q.qid), q.gold_sets) for q in queries]
