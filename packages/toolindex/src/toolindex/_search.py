"""The lexical search engine behind :class:`~toolindex.InMemoryIndex`.

Model: BM25F. Each tool is a document with several fields (name, title, description,
parameter names, parameter descriptions, tags, namespace, namespace description, and
name/title word pairs). A term's frequency is length-normalised per field, weighted per
field and summed into one pseudo-frequency, which is then saturated once (so a term
repeated across fields does not count many times over). On top of that:

- query words pair up like the name/title words: adjacent ones at full weight, two words one
  word apart at half weight (a looser phrase: "create a new folder" meets ``create_folder``);
- a coverage factor favours tools that match more of the query's (idf-weighted) terms;
- query words the index has never seen are expanded to close vocabulary words (typos:
  a deletion-neighbourhood index proposes candidates, rapidfuzz's OSA distance confirms
  them) or to words they begin (abbreviations: ``repo`` → ``repository``), at a discount.
  The words these tables hold are bounded whatever the catalog says (see "Typo vocabulary").

Layout: inverted postings per term, one packed integer per (tool, field) appended on
registration (``array`` buffers); the saturated per-tool weights of a term are computed
with numpy the first time a query needs them after a change, and cached; scores accumulate
with one ``bincount`` per query. Removal is lazy: a removed tool's slot is marked dead (its
normalisers drop to zero) and the postings are compacted once dead slots outnumber live ones.

Partitions: a tool may belong to a partition (an opaque name; ``None``, the default, is the
public catalog). A partitioned tool counts in none of the catalog's statistics: document
frequencies and the number of tools (idf), average field lengths, the vocabulary a query's words
are looked up in and corrected against, the dense side's mean; a search finds it only when it
names its partition, and scores it with the public statistics (a term no public tool has gets
the idf of a term that no tool has). So what one partition holds changes nothing another search
returns, while its own searches rank its tools among the public ones. What the engine keeps of
a partition besides its slots: which terms its tools have, so a query word only they hold is
looked up, not corrected, in a search that names it.

Typo vocabulary: the words typo correction and abbreviation expansion reach are a tool's words
of 3 to :data:`MAX_TYPO_WORD_CHARS` letters. A word new to the vocabulary is charged to the
namespace whose tool brought it, under two budgets of :data:`MAX_TYPO_NAMESPACE_ENTRIES` table
entries (a word of n letters makes n + 1): one for words of names, titles and parameter names,
one for the rest of the text, so a namespace's descriptions never crowd out its names and one
namespace never crowds out another; and under :data:`MAX_TYPO_ENTRIES` for all namespaces
together. A word past a budget is found as written, not corrected; the charge is given back
when the word leaves the vocabulary. A key held by one word stores the word itself (most do),
not a set.

The engine is not thread-safe; :class:`~toolindex.InMemoryIndex` serialises access.
"""

from __future__ import annotations

import itertools
import math
import re
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from toolindex._dense import DenseVectors
from toolindex._limits import (
    MAX_FIELD_CHARS,
    MAX_PARAM_CHARS,
    MAX_PARAMS,
    MAX_QUERY_CHARS,
    MAX_QUERY_WORDS,
    MAX_TYPO_ENTRIES,
    MAX_TYPO_NAMESPACE_ENTRIES,
    MAX_TYPO_WORD_CHARS,
)
from toolindex._model import Tool
from toolindex._semantic import Embedder, gist_text, query_texts, tool_text
from toolindex._tokenize import STOPWORDS, quoted_pieces, split_words, stem, terms_of

__all__ = ["FIELDS", "Prepared", "Ranked", "SearchEngine", "SearchParams", "document_fields", "indexing_cost"]

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int32]

FIELDS = ("name", "title", "description", "param_names", "param_text", "tags", "namespace", "ns_text", "phrase")
"""Document fields, in the order of :class:`SearchParams` weights."""
_F = {f: i for i, f in enumerate(FIELDS)}


@dataclass(frozen=True, slots=True)
class SearchParams:
    """Ranking parameters: one set of defaults for every catalog."""

    k1: float = 1.2
    """Term-frequency saturation."""
    weights: tuple[float, ...] = (3.0, 2.0, 0.6, 0.6, 0.45, 1.0, 0.8, 0.25, 0.7)
    """Per-field weights, in :data:`FIELDS` order."""
    b: tuple[float, ...] = (0.5, 0.5, 0.75, 0.6, 0.75, 0.3, 0.3, 0.75, 0.5)
    """Per-field length normalisation, in :data:`FIELDS` order."""
    coverage: float = 0.5
    """How much matching more of the query's idf mass multiplies the score."""
    fuzzy_discount: float = 0.6
    """Weight of a typo correction relative to an exact term."""
    prefix_discount: float = 0.4
    """Weight of an abbreviation (prefix) expansion relative to an exact term."""
    max_expansions: int = 3
    """Vocabulary words an unknown query word may expand to."""
    dense_weight: float = 0.6
    """Semantic search: share of the dense signal in the fused score (the lexical one has the rest)."""
    lexical_floor: float = 0.3
    """Semantic search: lexical scores are divided by the larger of the best lexical score and
    this share of the query's idf mass, so a query whose best lexical match covers little of it
    (weak lexical evidence) leans on the dense side."""
    clause_weight: float = 0.5
    """Semantic search: share of the best clause in the dense score of a query of several clauses."""
    fusion_depth: int = 50
    """Semantic search: lexical hits considered in the fusion (the dense side scores every tool)."""
    dense_exact_max: int = 4096
    """Semantic search: up to this many tools every tool is scored exactly; above it, a cheap
    first pass on a prefix of each vector picks the tools scored in full (see ``_dense.py``)."""
    gist_pool: int = 50
    """Semantic search: the best fused candidates whose dense score is also taken against each
    tool's gist vector (name and first sentence), the closer of the two counting; 0 for none."""


_SLOT_SHIFT = 12
_FIELD_SHIFT = 8
_MAX_TF = 255


class _Postings:
    """One term's postings: codes ``slot << 12 | field << 8 | tf``, slots non-decreasing.

    One packed integer per (tool, field) keeps registration to a single append per entry
    and memory to 8 bytes per entry.
    """

    __slots__ = ("codes", "gen", "sat", "uniq")

    def __init__(self) -> None:
        self.codes = array("q")
        self.gen = -1
        self.uniq: IntArray | None = None
        self.sat: FloatArray | None = None

    def saturated(self, gen: int, norm: FloatArray, k1: float) -> tuple[IntArray, FloatArray]:
        """(slots, saturated BM25F term weight per slot), cached until the index changes."""
        if self.gen != gen or self.uniq is None or self.sat is None:
            codes = np.frombuffer(self.codes, dtype=np.int64).copy() if self.codes else np.zeros(0, np.int64)
            slots = (codes >> _SLOT_SHIFT).astype(np.int32)
            fields = ((codes >> _FIELD_SHIFT) & 15).astype(np.int8)
            weighted = (codes & _MAX_TF).astype(np.float32) * norm[fields, slots]
            if len(slots) < 2 or bool((slots[1:] != slots[:-1]).all()):
                pseudo = weighted
            else:
                starts = np.flatnonzero(np.concatenate(([True], slots[1:] != slots[:-1])))
                pseudo = np.add.reduceat(weighted, starts)
                slots = slots[starts]
            self.uniq = slots
            self.sat = ((k1 + 1.0) * pseudo / (k1 + pseudo)).astype(np.float32)
            self.gen = gen
        return self.uniq, self.sat


@dataclass(slots=True)
class _Doc:
    tid: str
    tool: Tool
    ns_text: str | None
    """The namespace description the tool was indexed with."""
    partition: str | None = None
    """The partition the tool belongs to (``None``: the public catalog)."""
    typo_words: frozenset[str] | None = None
    """The tool's typo words admitted to the vocabulary, when its namespace's budget had no room
    for all of them (``None``: all; see :meth:`SearchEngine._admit`)."""


class _TypoBudget:
    """What one namespace's tools brought to the typo vocabulary.

    The entries of the words they added to it (a word already there costs nothing), charged
    until the word leaves it.
    """

    __slots__ = ("names", "namespace", "used")

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.names: set[str] = set()  # the words charged to the names budget
        self.used = [0, 0]  # entries charged: names, the rest


@dataclass(frozen=True, slots=True)
class _Query:
    """A query's weighted terms and the corrections of its misspelt words."""

    terms: dict[str, float]
    fixes: dict[str, str]
    """Query word -> the vocabulary word one typo away that stands in for it."""


@dataclass(frozen=True, slots=True)
class Ranked:
    """One hit of :meth:`SearchEngine.search`."""

    tid: str
    score: float
    relevance: float | None
    """Semantic search: cosine of the tool with the query (or the query's clause it is closest
    to), clipped to [0, 1] (1 for an exact name); ``None`` for lexical search."""


# Identifier-looking tokens of a query: ``list_issues``, ``github:get_me``, ``getApiOverview``.
_IDENTIFIER = re.compile(r"[A-Za-z0-9_.:\-]{2,300}")
_IDENTIFIER_SHAPE = re.compile(r"[_.:\-]|[a-z][A-Z]")
_ALPHA_WORD = re.compile(r"[A-Za-z]{5,64}")
_MAX_FIXED_CHARS = 2_000
"""Characters of a query searched for misspelt words to correct for the dense side."""
_MAX_EXACT_TOKENS = 64
"""Tokens of a query looked up as exact tool names (bounds the work of a huge query)."""


def _name_keys(tool: Tool) -> tuple[str, str]:
    return tool.name.lower(), f"{tool.namespace}:{tool.name}".lower()


_EMBED_SLICE = 512
"""Tools embedded per call to the model at registration (bounds its intermediate arrays)."""
_DENSE_COVERAGE_MAX = 50_000
"""Up to this many postings per query, coverage is accumulated like the scores."""
_MIN_FUZZY = 4
"""Shortest query word corrected for typos (shorter words have too many neighbours)."""
_MAX_PREFIX = 8
"""Longest abbreviation expanded by prefix."""


def _deletes(word: str) -> set[str]:
    return {word, *(word[:i] + word[i + 1 :] for i in range(len(word)))}


def _prefixes(word: str) -> list[str]:
    return [word[:i] for i in range(3, min(len(word), _MAX_PREFIX + 1))]


def _typo_cost(word: str) -> int:
    """Typo-table entries a word is charged: its one-deletion variants and itself.

    Its prefixes (at most :data:`_MAX_PREFIX` - 2 more entries) are not counted.
    """
    return len(word) + 1


def _typo_words(words: Iterable[str]) -> frozenset[str]:
    """The words typo correction may reach: letters only, 3 to :data:`MAX_TYPO_WORD_CHARS` of them."""
    return frozenset(w for w in words if 3 <= len(w) <= MAX_TYPO_WORD_CHARS and w.isalpha())


TypoTable = dict[str, "str | list[str]"]
"""Key -> the word that has it, or the words (a list) when several do: most keys have one."""


def _table_drop(table: TypoTable, key: str, word: str) -> None:
    held = table.get(key)
    if held is None:
        return
    if isinstance(held, str):
        if held == word:
            del table[key]
        return
    if word in held:
        held.remove(word)
        if len(held) == 1:
            table[key] = held[0]


def _table_get(table: TypoTable, key: str) -> Sequence[str]:
    held = table.get(key)
    if held is None:
        return ()
    return (held,) if isinstance(held, str) else held


def _schema_params(schema: Mapping[str, Any], depth: int = 0) -> Iterable[tuple[str, str]]:
    """(name, description) of each property, nested objects and array items included (2 levels).

    Lazy, so a caller that takes the first :data:`MAX_PARAMS` never walks the rest; a
    description (with its enum values) is cut at :data:`MAX_PARAM_CHARS` characters.
    """
    props = schema.get("properties")
    # Plain dict checks: JSON schemas are dicts, and ABC isinstance checks are slow in bulk.
    if not isinstance(props, dict):
        return
    for name, sub in props.items():  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(sub, dict):
            yield str(name), ""  # pyright: ignore[reportUnknownArgumentType]
            continue
        desc = sub.get("description")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        enum = sub.get("enum")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        text = desc[:MAX_PARAM_CHARS] if isinstance(desc, str) else ""
        if isinstance(enum, list) and len(enum) <= 30:  # pyright: ignore[reportUnknownArgumentType]
            values = (e[:MAX_PARAM_CHARS] for e in enum if isinstance(e, str))  # pyright: ignore[reportUnknownVariableType]
            text += " " + " ".join(values)
            if len(text) > MAX_PARAM_CHARS:
                text = text[:MAX_PARAM_CHARS]
        yield str(name), text  # pyright: ignore[reportUnknownArgumentType]
        if depth < 1:
            yield from _schema_params(sub, depth + 1)  # pyright: ignore[reportUnknownArgumentType]
            items = sub.get("items")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if isinstance(items, dict):
                yield from _schema_params(items, depth + 1)  # pyright: ignore[reportUnknownArgumentType]


def _joined(parts: Iterable[str], limit: int = MAX_FIELD_CHARS) -> str:
    """``" ; ".join(parts)``, stopping at ``limit`` characters (a separator no identifier contains)."""
    out: list[str] = []
    size = 0
    for part in parts:
        if size >= limit:
            break
        out.append(part[: limit - size])
        size += len(out[-1]) + 3
    return " ; ".join(out)


def _pairs(terms: Sequence[str], step: int = 1) -> list[str]:
    # Term pairs ``step`` apart (1: adjacent); a space cannot occur inside a term, so pairs never
    # collide with words.
    return [f"{a} {b}" for a, b in zip(terms, terms[step:], strict=False) if a != b]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A tool turned into field → term counts, ready to be added without further failure."""

    fields: dict[int, dict[str, int]]
    words: frozenset[str]
    """The words typo correction may reach (see :func:`_typo_words`)."""
    names: frozenset[str]
    """Those of them from the tool's name, title, parameter names or namespace name."""


@lru_cache(maxsize=4096)
def _namespace_terms(
    namespace: str, text: str | None
) -> tuple[dict[str, int], dict[str, int], frozenset[str], frozenset[str]]:
    # Shared by every tool of the namespace (the counts are never changed): tokenised once.
    # Its typo words: of its name, of its description.
    name_words: set[str] = set()
    text_words: set[str] = set()
    name_terms = _count(terms_of(namespace, name_words))
    text_terms = _count(terms_of(text, text_words)) if text else {}
    return name_terms, text_terms, _typo_words(name_words), _typo_words(text_words)


_SHARED_CHARS = 2_000
"""Longest text whose terms are kept for the next tool that has the same (bounds the cache)."""


@dataclass(frozen=True, slots=True)
class _Shared:
    """A text's terms, their counts and its words; shared by every tool repeating the text."""

    terms: Sequence[str]
    counts: dict[str, int]  # never changed once made: tools holding it share it
    words: frozenset[str]


@lru_cache(maxsize=1024)
def _shared_text(text: str) -> _Shared:
    words: set[str] = set()
    terms = tuple(terms_of(text, words))
    return _Shared(terms, _count(terms), frozenset(words))


def _text_terms(text: str, words: set[str]) -> _Shared:
    # Texts that many tools of a catalog repeat (titles, parameter lists, tags; Microsoft Graph:
    # 13,000 distinct of 43,000) are tokenised and counted once while they keep coming.
    if len(text) > _SHARED_CHARS:
        terms = terms_of(text, words)
        return _Shared(terms, _count(terms), frozenset())
    shared = _shared_text(text)
    words |= shared.words
    return shared


_NO_TEXT = _Shared((), {}, frozenset())


def document_fields(tool: Tool, namespace_text: str | None) -> Prepared:
    """The field → term counts of a tool, and its unstemmed words.

    The cost is bounded whatever the tool holds: each text field is read up to
    :data:`MAX_FIELD_CHARS` characters and at most :data:`MAX_PARAMS` schema parameters are
    read (real tools stay far below both).
    """
    ns_text = namespace_text[:MAX_FIELD_CHARS] if namespace_text else namespace_text
    ns_terms, ns_text_terms, ns_names, ns_words = _namespace_terms(tool.namespace, ns_text)
    # Words of the name, title and parameter names, then of the rest (each budgeted apart).
    words: set[str] = set()
    name = terms_of(tool.name, words)
    title = _text_terms(tool.title[:MAX_FIELD_CHARS], words) if tool.title else _NO_TEXT
    schema = tool.input_schema
    params = list(itertools.islice(_schema_params(schema), MAX_PARAMS)) if schema.get("properties") else []
    # Parameter texts are joined with a separator no identifier contains, so names never run together.
    param_names = _text_terms(_joined(p for p, _ in params), words).counts if params else {}
    names = _typo_words(words) | ns_names
    words = set()
    counted: tuple[tuple[int, dict[str, int]], ...] = (
        (_F["name"], _count(name)),
        (_F["title"], title.counts),
        (_F["description"], _count(terms_of(tool.description[:MAX_FIELD_CHARS], words)) if tool.description else {}),
        (_F["param_names"], param_names),
        (_F["param_text"], _text_terms(_joined(d for _, d in params if d), words).counts if params else {}),
        (_F["tags"], _text_terms(_joined(tool.tags), words).counts if tool.tags else {}),
        (_F["namespace"], ns_terms),
        (_F["ns_text"], ns_text_terms),
        (_F["phrase"], _count(_pairs(name) + _pairs(title.terms))),
    )
    return Prepared({f: counts for f, counts in counted if counts}, _typo_words(words) | ns_words | names, names)


def indexing_cost(tool: Tool) -> int:
    """The work of indexing ``tool`` (or of removing it), in characters of its text that are read.

    Each field counts as far as :func:`document_fields` reads it, so the figure is bounded
    whatever the tool holds. Cheap (no tokenising): callers use it to cut a large registration
    into parts of similar cost.
    """
    cost = 64 + len(tool.name) + min(len(tool.title or ""), MAX_FIELD_CHARS)
    cost += min(len(tool.description), MAX_FIELD_CHARS) + len(_joined(tool.tags))
    if tool.input_schema.get("properties"):
        params = list(itertools.islice(_schema_params(tool.input_schema), MAX_PARAMS))
        cost += len(_joined(p for p, _ in params)) + len(_joined(d for _, d in params if d))
    return cost


def _count(terms: Iterable[str]) -> dict[str, int]:
    # A plain dict: Counter's constructor costs more than the counting for short lists.
    counts: dict[str, int] = {}
    get = counts.get
    for t in terms:
        counts[t] = get(t, 0) + 1
    return counts


class SearchEngine:
    """Incremental BM25F index over tools. Not thread-safe: the owning index serialises calls."""

    def __init__(self, params: SearchParams | None = None, embedder: Embedder | None = None) -> None:
        self.params = params or SearchParams()
        nf = len(FIELDS)
        if len(self.params.weights) != nf or len(self.params.b) != nf:
            raise ValueError(f"weights and b need {nf} values each, in the order {FIELDS}")
        self._weights = np.array(self.params.weights, dtype=np.float32)
        self._b = np.array(self.params.b, dtype=np.float32)
        self._postings: dict[str, _Postings] = {}
        # Document frequencies of the public tools; a partition's own, per partition.
        self._df: Counter[str] = Counter()
        self._part_df: dict[str, Counter[str]] = {}
        self._slot_of: dict[str, int] = {}
        self._docs: list[_Doc | None] = []
        self._cap = 1024
        self._lens = np.zeros((nf, self._cap), dtype=np.float32)
        self._alive = np.zeros(self._cap, dtype=bool)
        self._partitioned = np.zeros(self._cap, dtype=bool)
        self._len_sum = np.zeros(nf, dtype=np.float64)  # public tools only, as every statistic
        self._n_alive = 0
        self._n_public = 0
        self._part_slots: dict[str, set[int]] = {}
        self._norm: FloatArray | None = None  # weight / length normaliser, per field and slot
        self._gen = 0  # bumped whenever the normalisers are recomputed (term caches key on it)
        # Typo vocabulary: unstemmed word -> number of live public tools it was admitted for (and
        # its words as a set, which a set difference reads quickly); the budget each word is
        # charged to, each namespace's budget, the entries charged (see the module docstring).
        self._words: Counter[str] = Counter()
        self._word_set: set[str] = set()
        self._owner: dict[str, _TypoBudget] = {}
        self._typo_budgets: dict[str, _TypoBudget] = {}
        self._typo_cost = 0
        # One-deletion variants and prefixes of the vocabulary, for typos and abbreviations.
        self._deletes: TypoTable = {}
        self._prefixes: TypoTable = {}
        self._typo_ready = False
        # Unknown query word -> (expansions, the vocabulary word one typo away that stands in for it).
        self._expansions: dict[str, tuple[list[tuple[str, float]], str | None]] = {}
        self._ns_slots: dict[str, set[int]] = {}
        self._tag_slots: dict[str, set[int]] = {}
        # Lower-case names and ``ns:name`` keys -> slots: an exact name in a query ranks first.
        self._names: dict[str, set[int]] = {}
        self._dense = DenseVectors(embedder, self._cap) if embedder is not None else None

    @property
    def embedder(self) -> Embedder | None:
        """The model of the semantic signal, or ``None`` for lexical search only."""
        return self._dense.embedder if self._dense is not None else None

    def embed_tools(self, tools: Sequence[Tool]) -> FloatArray | None:
        """The dense vectors of ``tools`` (``None`` without a semantic signal); no state changes.

        One row per tool: its vector, then its gist's (``2 x dim`` values).
        """
        if self._dense is None or not tools or not getattr(self._dense.embedder, "loaded", True):
            return None  # none yet: the first search embeds the tools (see DenseVectors.defer)
        return self._vectors(tools)

    def _vectors(self, tools: Sequence[Tool]) -> FloatArray:
        assert self._dense is not None
        dim = self._dense.dim
        out = np.empty((len(tools), 2 * dim), dtype=np.float32)
        # In slices: a model's intermediate arrays grow with the tokens of a call (a token
        # vector each), and a catalog of thousands of tools would hold hundreds of megabytes.
        for start in range(0, len(tools), _EMBED_SLICE):
            part = tools[start : start + _EMBED_SLICE]
            texts = [tool_text(t) for t in part]
            texts += [gist_text(t, text) for t, text in zip(part, texts, strict=True)]
            vectors = self._dense.embedder.embed(texts)
            if vectors.shape != (len(texts), dim):
                raise ValueError(f"the embedder returned shape {vectors.shape} for {len(texts)} texts")
            out[start : start + len(part), :dim] = vectors[: len(part)]
            out[start : start + len(part), dim:] = vectors[len(part) :]
        return out

    def __len__(self) -> int:
        return self._n_alive

    def stats(self) -> dict[str, int]:
        """Sizes: live tools (and those in partitions), slots (live + dead until compaction), terms, postings, words.

        ``words`` are the typo words, ``typo_entries`` the table entries they are charged and
        ``typo_keys`` the keys the tables hold (none before a query builds them).
        """
        return {
            "tools": self._n_alive,
            "partitioned": self._n_alive - self._n_public,
            "slots": len(self._docs),
            "terms": len(self._postings),
            "postings": sum(len(p.codes) for p in self._postings.values()),
            "words": len(self._words),
            "typo_entries": self._typo_cost,
            "typo_keys": len(self._deletes) + len(self._prefixes),
            "dense_bytes": self._dense.nbytes() if self._dense is not None else 0,
        }

    # -- mutation -------------------------------------------------------------------------

    def add(
        self,
        tid: str,
        tool: Tool,
        namespace_text: str | None = None,
        prepared: Prepared | None = None,
        *,
        partition: str | None = None,
    ) -> None:
        """Index (or re-index) one tool; touches only its own terms.

        ``prepared`` (from :func:`document_fields`) lets a caller do the fallible work first.
        """
        if prepared is None:
            prepared = document_fields(tool, namespace_text)
        self.add_many([(tid, tool, namespace_text, prepared)], partition=partition)

    def add_many(
        self,
        entries: Sequence[tuple[str, Tool, str | None, Prepared]],
        vectors: FloatArray | None = None,
        *,
        partition: str | None = None,
    ) -> None:
        """Index (or re-index) several tools: ``(id, tool, namespace text, prepared fields)``.

        ``vectors`` (from :meth:`embed_tools`, one row per entry) lets a caller embed before it
        takes its lock; without them a semantic engine embeds the tools here. ``partition``: the
        partition the tools belong to (see the module docstring); ``None`` for the public catalog.
        """
        public = partition is None
        if self._dense is not None and vectors is None:
            vectors = self.embed_tools([tool for _, tool, _, _ in entries])
        for tid, *_ in entries:
            if tid in self._slot_of:
                self.remove(tid)
        first = len(self._docs)
        while first + len(entries) > self._cap:
            self._grow()
        if self._dense is not None and vectors is not None:
            dim = self._dense.dim
            self._dense.put(first, vectors[:, :dim], vectors[:, dim:], counted=public)
        elif self._dense is not None:
            self._dense.defer(first, [tool for _, tool, _, _ in entries])
        # Gather the batch's postings per term, then extend each term's buffer once.
        batch: defaultdict[str, list[int]] = defaultdict(list)
        len_fields: list[int] = []
        len_slots: list[int] = []
        len_values: list[int] = []
        df = self._df if partition is None else self._part_df.setdefault(partition, Counter())
        max_tf = _MAX_TF
        new_words: list[str] = []
        for i, (tid, tool, ns_text, prepared) in enumerate(entries):
            slot = first + i
            fields = prepared.fields
            # Postings stay sorted by slot because slots only grow; entries of one slot are adjacent.
            for f, counts in fields.items():
                len_fields.append(f)
                len_slots.append(slot)
                len_values.append(sum(counts.values()))
                base = (slot << _SLOT_SHIFT) | (f << _FIELD_SHIFT)
                for term, tf in counts.items():
                    batch[term].append(base | (tf if tf <= max_tf else max_tf))
            df.update(set[str]().union(*fields.values()))
            # A partition's words are no typo targets: a correction to one would tell it exists.
            admitted = self._admit(tool.namespace, prepared, new_words) if public else None
            self._docs.append(_Doc(tid, tool, ns_text, partition, admitted))
            self._slot_of[tid] = slot
            self._ns_slots.setdefault(tool.namespace, set()).add(slot)
            for tag in tool.tags:
                self._tag_slots.setdefault(tag, set()).add(slot)
            for key in _name_keys(tool):
                self._names.setdefault(key, set()).add(slot)
        lens = self._lens
        lens[len_fields, len_slots] = len_values
        postings = self._postings
        for term, codes in batch.items():
            p = postings.get(term)
            if p is None:
                p = postings[term] = _Postings()
            p.codes.extend(codes)
        if new_words:
            self._add_vocab(new_words)
        end = first + len(entries)
        self._alive[first:end] = True
        self._n_alive += len(entries)
        if partition is None:
            self._len_sum += lens[:, first:end].sum(axis=1)
            self._n_public += len(entries)
        else:
            self._partitioned[first:end] = True
            self._part_slots.setdefault(partition, set()).update(range(first, end))
        self._norm = None

    def remove(self, tid: str) -> None:
        """Drop one tool (lazily: its slot goes dead, postings are compacted later)."""
        slot = self._slot_of.pop(tid, None)
        if slot is None:
            return
        doc = self._docs[slot]
        assert doc is not None
        self._docs[slot] = None
        self._alive[slot] = False
        self._n_alive -= 1
        # Tokenising again is cheaper in memory than keeping every tool's terms around.
        prepared = document_fields(doc.tool, doc.ns_text)
        terms = {t for counts in prepared.fields.values() for t in counts}
        part = doc.partition
        df = self._df if part is None else self._part_df[part]
        df.subtract(terms)
        for t in terms:
            if df[t] <= 0:
                del df[t]
        if part is None:
            self._n_public -= 1
            self._len_sum -= self._lens[:, slot]
            self._release(prepared.words if doc.typo_words is None else doc.typo_words)
        else:
            self._partitioned[slot] = False
            self._part_slots[part].discard(slot)
            if not self._part_slots[part]:
                del self._part_slots[part], self._part_df[part]
        self._ns_slots[doc.tool.namespace].discard(slot)
        if not self._ns_slots[doc.tool.namespace]:
            del self._ns_slots[doc.tool.namespace]
        for tag in doc.tool.tags:
            self._tag_slots[tag].discard(slot)
            if not self._tag_slots[tag]:
                del self._tag_slots[tag]
        for key in _name_keys(doc.tool):
            self._names[key].discard(slot)
            if not self._names[key]:
                del self._names[key]
        if self._dense is not None:
            self._dense.clear(slot, counted=part is None)
        self._norm = None
        dead = len(self._docs) - self._n_alive
        if dead > 1024 and dead > self._n_alive:
            self._compact()

    def _grow(self) -> None:
        cap = self._cap * 2
        lens = np.zeros((len(FIELDS), cap), dtype=np.float32)
        lens[:, : self._cap] = self._lens
        alive = np.zeros(cap, dtype=bool)
        alive[: self._cap] = self._alive
        partitioned = np.zeros(cap, dtype=bool)
        partitioned[: self._cap] = self._partitioned
        self._lens, self._alive, self._partitioned, self._cap = lens, alive, partitioned, cap
        if self._dense is not None:
            self._dense.grow(cap)

    def _compact(self) -> None:
        # Renumber live slots densely and drop dead postings; O(index size), amortised by the
        # rule that it only runs once dead slots outnumber live ones.
        live = np.flatnonzero(self._alive[: len(self._docs)])
        remap = np.full(len(self._docs), -1, dtype=np.int32)
        remap[live] = np.arange(len(live), dtype=np.int32)
        for term, p in list(self._postings.items()):
            codes = np.frombuffer(p.codes, dtype=np.int64).copy() if p.codes else np.zeros(0, np.int64)
            new_slots = remap[(codes >> _SLOT_SHIFT).astype(np.int64)]
            keep = new_slots >= 0
            if not keep.any():
                del self._postings[term]
                continue
            q = _Postings()
            low = codes[keep] & ((1 << _SLOT_SHIFT) - 1)
            q.codes = array("q", ((new_slots[keep].astype(np.int64) << _SLOT_SHIFT) | low).tobytes())
            self._postings[term] = q
        docs = [self._docs[int(i)] for i in live]
        self._docs = docs
        self._slot_of = {d.tid: i for i, d in enumerate(docs) if d is not None}
        lens = np.zeros_like(self._lens)
        lens[:, : len(live)] = self._lens[:, live]
        self._lens = lens
        self._alive[:] = False
        self._alive[: len(live)] = True
        self._partitioned[:] = False
        self._ns_slots = {}
        self._tag_slots = {}
        self._names = {}
        self._part_slots = {}
        for i, d in enumerate(docs):
            assert d is not None
            if d.partition is not None:
                self._partitioned[i] = True
                self._part_slots.setdefault(d.partition, set()).add(i)
            self._ns_slots.setdefault(d.tool.namespace, set()).add(i)
            for tag in d.tool.tags:
                self._tag_slots.setdefault(tag, set()).add(i)
            for key in _name_keys(d.tool):
                self._names.setdefault(key, set()).add(i)
        if self._dense is not None:
            self._dense.compact(live, ~self._partitioned[: len(live)])
        self._norm = None

    def _admit(self, namespace: str, prepared: Prepared, new_words: list[str]) -> frozenset[str] | None:
        """Count a public tool's typo words in; returns those admitted when some were left out, else ``None``.

        A word new to the vocabulary is charged to the tool's namespace (to its names budget
        when it comes from the tool's name, title or parameter names) and left out when that
        budget, or the global one, has no room for it; a word already there is free. New words
        are appended to ``new_words``: admission is bookkeeping, :meth:`_add_vocab` extends
        the tables themselves (once built).
        """
        words = prepared.words
        if not words:
            return None
        fresh = words - self._word_set
        admitted = None
        if fresh:
            budget = self._typo_budgets.get(namespace)
            if budget is None:
                budget = self._typo_budgets[namespace] = _TypoBudget(namespace)
            fresh_names = fresh & prepared.names
            taken: list[str] = []
            for kind, group in enumerate((fresh_names, fresh - fresh_names)):
                if not group:
                    continue
                room = min(MAX_TYPO_NAMESPACE_ENTRIES - budget.used[kind], MAX_TYPO_ENTRIES - self._typo_cost)
                if sum(map(len, group)) + len(group) <= room:
                    order: Iterable[str] = group  # all of them fit: the order does not matter
                elif min(map(len, group)) + 1 > room:
                    continue  # none fits
                else:  # shortest first, ties by spelling: which words fit never depends on set order
                    order = sorted(group, key=lambda w: (len(w), w))
                owner = self._owner
                for w in order:
                    cost = _typo_cost(w)
                    if cost > room:
                        break
                    room -= cost
                    budget.used[kind] += cost
                    self._typo_cost += cost
                    owner[w] = budget
                    if kind == 0:
                        budget.names.add(w)
                    taken.append(w)
            if not taken:
                if budget.used == [0, 0]:
                    del self._typo_budgets[namespace]
            else:
                new_words.extend(taken)
                self._word_set.update(taken)
            if len(taken) < len(fresh):
                words = admitted = (words - fresh).union(taken)
        self._words.update(words)
        return admitted

    def _release(self, words: frozenset[str]) -> None:
        """Count a removed public tool's admitted typo words out; words no tool holds any more leave the tables."""
        if not words:
            return
        vocab = self._words
        vocab.subtract(words)
        gone = [w for w in words if vocab[w] <= 0]
        for w in gone:
            del vocab[w]
            self._word_set.discard(w)
            cost = _typo_cost(w)
            self._typo_cost -= cost
            budget = self._owner.pop(w)
            if w in budget.names:
                budget.names.discard(w)
                budget.used[0] -= cost
            else:
                budget.used[1] -= cost
            if budget.used == [0, 0]:
                del self._typo_budgets[budget.namespace]
        if gone:
            self._drop_vocab(gone)

    def _vocab_keys(self, word: str) -> Iterator[tuple[TypoTable, str]]:
        # The typo-index entries of one word: its deletion neighbourhood and its prefixes.
        for key in _deletes(word):
            yield self._deletes, key
        for key in _prefixes(word):
            yield self._prefixes, key

    def _add_vocab(self, words: Iterable[str]) -> None:
        self._expansions.clear()
        if not self._typo_ready:
            return
        # _table_add inlined: this loop is most of what building the tables costs.
        for table, keys_of in ((self._deletes, _deletes), (self._prefixes, _prefixes)):
            for w in words:
                for key in keys_of(w):
                    held = table.setdefault(key, w)
                    if held is w:
                        continue
                    if isinstance(held, str):
                        if held != w:
                            table[key] = [held, w]
                    elif w not in held:
                        held.append(w)

    def _ensure_typo_index(self) -> None:
        # Built on the first query that needs it, then kept up to date incrementally.
        if not self._typo_ready:
            self._typo_ready = True
            self._add_vocab(list(self._words))

    def _drop_vocab(self, words: list[str]) -> None:
        self._expansions.clear()
        if not self._typo_ready:
            return
        for w in words:
            for table, key in self._vocab_keys(w):
                _table_drop(table, key, w)

    # -- query ----------------------------------------------------------------------------

    def _normalisers(self) -> FloatArray:
        if self._norm is None:
            n = len(self._docs)
            avg = np.where(self._len_sum > 0, self._len_sum / max(self._n_public, 1), 1.0).astype(np.float32)
            b = self._b[:, None]
            denom = 1.0 - b + b * (self._lens[:, :n] / avg[:, None])
            norm = np.zeros((len(FIELDS), self._cap), dtype=np.float32)
            norm[:, :n] = self._weights[:, None] / denom
            norm[:, :n] *= self._alive[:n]
            self._norm = norm
            self._gen += 1
        return self._norm

    def _idf(self, term: str) -> float:
        # Public statistics only: a term only partitioned tools have is as rare as one no tool has.
        df = self._df.get(term, 0)
        n = self._n_public
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def _expand(self, word: str) -> tuple[list[tuple[str, float]], str | None]:
        """Vocabulary stems an unknown query word may stand for, with their discount; and its correction.

        The correction is the vocabulary word one typo away that stands in for it (``None``: none).
        Only public tools' words are candidates, so the answer is the same for every search.
        """
        cached = self._expansions.get(word)
        if cached is not None:
            return cached
        self._ensure_typo_index()
        if len(self._expansions) >= 10_000:
            self._expansions.clear()
        p = self.params
        out: dict[str, float] = {}
        fix: str | None = None
        # Vocabulary words have at most MAX_TYPO_WORD_CHARS letters: a longer word has no neighbour.
        if word.isalpha() and _MIN_FUZZY <= len(word) <= MAX_TYPO_WORD_CHARS + 1:
            # Candidates share a one-deletion variant with the word (covers one insertion,
            # deletion, substitution or transposition); rapidfuzz confirms the distance.
            cands: set[str] = set()
            table = self._deletes
            for key in _deletes(word):
                cands.update(_table_get(table, key))
            from rapidfuzz.distance import OSA  # here: a query's unknown word is the first to need it

            scored = [(w, OSA.distance(word, w)) for w in cands]
            scored = [(w, d) for w, d in scored if 0 < d <= 1 + (len(word) >= 8)]
            scored.sort(key=lambda m: (m[1], -self._words[m[0]], m[0]))
            if scored:
                fix = scored[0][0]
            for w, dist in scored[: p.max_expansions]:
                s = stem(w)
                weight = p.fuzzy_discount * (1.0 - dist / (len(word) + 1))
                out[s] = max(out.get(s, 0.0), weight)
        if word.isalpha() and len(word) >= 3 and not out:
            longer = sorted(_table_get(self._prefixes, word), key=lambda w: (-self._words[w], w))
            for w in longer[: p.max_expansions]:
                s = stem(w)
                out[s] = max(out.get(s, 0.0), p.prefix_discount * len(word) / len(w))
        result = (sorted(out.items()), fix)
        self._expansions[word] = result
        return result

    def query_terms(self, query: str, partitions: frozenset[str] = frozenset()) -> dict[str, float]:
        """Weighted query terms: exact stems, word pairs, and expansions of unknown words.

        Only the first :data:`MAX_QUERY_CHARS` characters and, of those, the first
        :data:`MAX_QUERY_WORDS` searchable words are read, so a query costs a bounded amount
        of work whatever its size. A term is known when a public tool or a tool of one of
        ``partitions`` has it; an unknown word is expanded to public words only.
        """
        return self._query(query, partitions).terms

    def _query(self, query: str, partitions: frozenset[str]) -> _Query:
        own = [self._part_df[p] for p in partitions if p in self._part_df]
        df = self._df

        def known_too(term: str) -> bool:  # by a public tool or one of the named partitions'
            return term in df or any(term in d for d in own)

        known: Callable[[str], bool] = known_too if own else df.__contains__
        weights: dict[str, float] = {}
        fixes: dict[str, str] = {}
        stems: list[str] = []
        considered = 0
        head = query[:MAX_QUERY_CHARS]
        # A quoted value is a literal (a name, a file), not a misspelt word: it is never expanded.
        literal = {w for text, quoted in quoted_pieces(head) if quoted for w in split_words(text)}
        for w in split_words(head):
            if w in STOPWORDS:
                continue
            considered += 1
            if considered > MAX_QUERY_WORDS:
                break
            s = stem(w)
            if known(s):
                stems.append(s)
                weights[s] = weights.get(s, 0.0) + 1.0
                continue
            if w in literal:
                continue
            expansions, fix = self._expand(w)
            if fix is not None:
                fixes[w] = fix
            for t, wt in expansions:
                if t in df:
                    weights[t] = max(weights.get(t, 0.0), wt)
        for pair in _pairs(stems):
            if known(pair):
                weights[pair] = 1.0
        # Two words one word apart ("create a new folder": create_folder) make a looser phrase:
        # half an adjacent pair's weight (1 / (1 + words between), as sloppy phrase matches count).
        for pair in _pairs(stems, 2):
            if pair not in weights and known(pair):
                weights[pair] = 0.5
        # Repeating a word in a query should not double its pull.
        terms = {t: 1.0 + 0.5 * math.log(w) if w > 1.0 else w for t, w in weights.items()}
        return _Query(terms, fixes)

    def search(
        self,
        query: str,
        limit: int,
        namespaces: frozenset[str] | None = None,
        tags: frozenset[str] | None = None,
        partitions: frozenset[str] = frozenset(),
    ) -> list[Ranked]:
        """Hits, best first, ties by id.

        Lexical only: BM25F scores. With a semantic signal: the fused score in [0, 1] (see
        :meth:`_fused`), and each hit's ``relevance``, the cosine of the tool with the query.
        A tool whose name (or ``namespace:name``) the query gives exactly ranks first either way.
        Partitioned tools are searched only when ``partitions`` names theirs.
        """
        if self._n_alive == 0:
            return []
        q = self._query(query, partitions)
        terms = q.terms
        if not terms and (self._dense is None or not self._has_words(query)):
            return []
        n = len(self._docs)
        mask = self._visible(self._filter(namespaces, tags, n), partitions, n)
        exact = self._exact(query, mask)
        depth = limit + len(exact)
        if self._dense is None:
            slots, scores, _ = self._lexical(terms, depth, mask, n)
            ranked = [Ranked(self._tid(c), float(sc), None) for c, sc in zip(slots, scores, strict=True)]
        else:
            ranked = self._fused(self._with_fixes(query, q.fixes), terms, depth, mask, n)
        if exact:
            first = {self._tid(c) for c in exact}
            top = ranked[0].score if ranked else 1.0
            promoted = [r for r in ranked if r.tid in first]
            missing = first - {r.tid for r in promoted}
            promoted += [Ranked(tid, 0.0, None) for tid in sorted(missing)]
            ranked = [Ranked(r.tid, top + 1.0, 1.0 if self._dense is not None else None) for r in promoted] + [
                r for r in ranked if r.tid not in first
            ]
        return ranked[:limit]

    @staticmethod
    def _with_fixes(query: str, fixes: Mapping[str, str]) -> str:
        """The query with the correction of each misspelt word after it ("wether (weather)").

        A static embedding model reads a typo as unrelated word pieces; the lexical engine's
        correction (``fixes``, found while the query's terms were looked up) gives the dense side
        the word that was meant, and the original stays for the words the vocabulary lacks.
        Quoted values are literals and stay as written, as on the lexical side.
        """
        if not fixes:
            return query

        def fix(m: re.Match[str]) -> str:
            word = m.group(0)
            right = fixes.get(word.lower())
            return f"{word} ({right})" if right else word

        pieces = quoted_pieces(query[:_MAX_FIXED_CHARS])
        return "".join(text if quoted else _ALPHA_WORD.sub(fix, text) for text, quoted in pieces)

    def _tid(self, slot: int) -> str:
        doc = self._docs[slot]
        assert doc is not None
        return doc.tid

    def _has_words(self, query: str) -> bool:
        return any(w not in STOPWORDS for w in split_words(query[:MAX_QUERY_CHARS]))

    def _exact(self, query: str, mask: FloatArray | None) -> list[int]:
        """Slots of tools the query names exactly: the whole query, or an identifier in it."""
        if not self._names:
            return []
        head = query[:MAX_QUERY_CHARS]
        keys = [head.strip().strip("`'\"").lower()]
        for token in itertools.islice(_IDENTIFIER.finditer(head), _MAX_EXACT_TOKENS):
            word = token.group(0).strip(".:-")
            if _IDENTIFIER_SHAPE.search(word):
                keys.append(word.lower())
        found: set[int] = set()
        for key in keys:
            slots = self._names.get(key)
            if slots:
                found.update(slots)
        if mask is not None:
            found = {c for c in found if mask[c] > 0}
        return sorted(found, key=self._tid)

    def _lexical(
        self, terms: Mapping[str, float], limit: int, mask: FloatArray | None, n: int, *, ordered: bool = True
    ) -> tuple[list[int], list[float], float]:
        """The lexical top ``limit``: (slots, BM25F scores), best first, ties by id; and the query's idf mass.

        ``ordered=False`` (for the fusion, which ranks again) leaves the top unsorted, ties at
        the cut included.
        """
        if not terms:
            return [], [], 0.0
        norm = self._normalisers()
        k1 = self.params.k1
        slot_parts: list[IntArray] = []
        sat_parts: list[FloatArray] = []
        idfs: list[float] = []
        sizes: list[int] = []
        for term, qw in terms.items():
            uniq, sat = self._postings[term].saturated(self._gen, norm, k1)
            slot_parts.append(uniq)
            sat_parts.append(sat)
            idfs.append(self._idf(term) * qw)
            sizes.append(len(uniq))
        total = float(sum(idfs))
        slots = np.concatenate(slot_parts)
        idf_each = np.repeat(np.array(idfs, dtype=np.float32), sizes)
        # One accumulation for all terms: numpy call overhead stays flat in the query length.
        raw = np.bincount(slots, weights=idf_each * np.concatenate(sat_parts), minlength=n)
        if mask is not None:
            raw *= mask
        cand = np.flatnonzero(raw)
        if len(cand) == 0:
            return [], [], total
        coverage = self.params.coverage
        raw_c = raw[cand]
        if len(cand) > limit:
            # The coverage factor lies in [1, 1 + coverage], so only tools whose best case reaches
            # the limit-th raw score can make the cut; the factor is computed for those alone.
            kth = np.partition(raw_c, len(raw_c) - limit)[len(raw_c) - limit]
            keep = raw_c * (1.0 + coverage) >= kth
            cand, raw_c = cand[keep], raw_c[keep]
        if len(slots) <= _DENSE_COVERAGE_MAX:
            covered = np.bincount(slots, weights=idf_each, minlength=n)[cand]
        else:
            # Many postings: a binary search per candidate and term beats a second pass over them
            # (each term's slots are sorted).
            # The idfs as the bincount above weighs them (float32), so both ways give the same sums:
            # which way a query takes depends on postings that other partitions' tools add too.
            covered = np.zeros(len(cand), dtype=np.float64)
            for uniq, idf in zip(slot_parts, idfs, strict=True):
                pos = np.searchsorted(uniq, cand)
                hit = pos < len(uniq)
                hit[hit] = uniq[pos[hit]] == cand[hit]
                covered += hit * np.float32(idf)
        final = raw_c * (1.0 + coverage * covered / total)
        if len(cand) > limit:
            # Only the best `limit` (and any tied with the last of them) are sorted in Python.
            kth = np.partition(final, len(final) - limit)[len(final) - limit]
            keep = final >= kth
            cand, final = cand[keep], final[keep]
        if not ordered:
            return cand.tolist(), final.tolist(), total
        ranked = sorted(
            ((float(sc), self._tid(int(c)), int(c)) for c, sc in zip(cand, final, strict=True)),
            key=lambda x: (-x[0], x[1]),
        )[:limit]
        return [c for _, _, c in ranked], [sc for sc, _, _ in ranked], total

    def _fused(
        self, query: str, terms: Mapping[str, float], limit: int, mask: FloatArray | None, n: int
    ) -> list[Ranked]:
        """Lexical and dense evidence in one score in [0, 1].

        - lexical: the BM25F scores of the lexical top :attr:`SearchParams.fusion_depth`,
          divided by the larger of the best one and ``lexical_floor`` x the query's idf mass,
          so weak lexical evidence (the best match covers little of the query) counts for less;
        - dense: each tool's cosine with the query, rescaled so the catalog's mean cosine is 0
          and the best eligible tool's is 1 (below the mean counts 0);
        - fused: ``(1 - dense_weight) x lexical + dense_weight x dense``.

        ``query`` is the text the model reads: the query with its words' corrections (:meth:`_with_fixes`).
        """
        assert self._dense is not None
        deferred = self._dense.take_deferred()
        if deferred:  # the model's first use: the tools registered before it get their vectors
            slots = sorted(deferred)
            vectors = self._vectors([deferred[slot] for slot in slots])
            dim = self._dense.dim
            for i, slot in enumerate(slots):
                counted = not self._partitioned[slot]
                self._dense.put(slot, vectors[i : i + 1, :dim], vectors[i : i + 1, dim:], counted=counted)
        p = self.params
        lex_slots, lex_scores, total = self._lexical(terms, max(limit, p.fusion_depth), mask, n, ordered=False)
        # Removed tools keep their (zero) rows until compaction: they are no candidates.
        eligible = None if mask is None else self._alive[:n] & (mask > 0)
        if eligible is None and self._n_alive < n:
            eligible = self._alive[:n]
        if eligible is not None and not eligible.any():
            return []
        queries = self._dense.embedder.embed(query_texts(query)).astype(np.float32, copy=False)
        keep = np.asarray(lex_slots, dtype=np.intp)
        # The catalog's mean cosine is the live public tools' (see DenseVectors.candidates).
        counted = self._alive[:n] & ~self._partitioned[:n] if self._n_public < n else None
        pool, sims, cos, mean = self._dense.candidates(
            queries,
            n,
            self._n_public,
            p.clause_weight,
            exact_max=p.dense_exact_max,
            keep=keep,
            eligible=eligible,
            counted=counted,
        )
        if len(pool) == 0:
            return []
        # Only the candidates are scored: a tool outside them has no lexical score and a lower
        # cosine than every candidate, so it cannot rank above them.
        lexical = np.zeros(len(pool), dtype=np.float32)
        if lex_slots:
            scale = max(max(lex_scores), p.lexical_floor * total)
            lexical[np.searchsorted(pool, keep)] = (1.0 - p.dense_weight) * np.asarray(lex_scores, np.float32) / scale
        fused = self._fuse(cos, mean, lexical)
        if p.gist_pool > 0:
            # The best candidates' dense scores also meet each tool's gist (the closer counts).
            top = np.lexsort((-cos, -fused))[: p.gist_pool]  # ties (below the mean: 0) by cosine
            cos = cos.copy()
            cos[top] = self._dense.closer_cosines(pool[top], sims[:, top], queries, p.clause_weight)
            fused = self._fuse(cos, mean, lexical)
        if len(pool) > limit:
            kth = max(float(np.partition(fused, len(fused) - limit)[len(fused) - limit]), np.finfo(np.float32).tiny)
            chosen = np.flatnonzero(fused >= kth)  # ties at the cut stay, and are broken by id below
        else:
            chosen = np.flatnonzero(fused > 0)
        # Relevance is absolute, not relative to the catalog: a tool is as relevant as its
        # cosine with the whole query or with the clause of it that it serves best.
        best: list[float] = sims[:, chosen].max(axis=0).tolist() if len(chosen) else []
        ranked = sorted(
            (
                (sc, self._tid(c), rel)
                for c, sc, rel in zip(pool[chosen].tolist(), fused[chosen].tolist(), best, strict=True)
            ),
            key=lambda x: (-x[0], x[1]),
        )[:limit]
        return [Ranked(tid, sc, min(max(rel, 0.0), 1.0)) for sc, tid, rel in ranked]

    def _fuse(self, cos: FloatArray, mean: float, lexical: FloatArray) -> FloatArray:
        # The dense score rescaled from the catalog's mean cosine (0) to the best candidate's (1),
        # weighted, plus the weighted lexical score.
        span = max(float(cos.max()) - mean, 1e-6)
        return np.clip((cos - mean) / span, 0.0, None) * np.float32(self.params.dense_weight) + lexical

    def _visible(self, mask: FloatArray | None, partitions: frozenset[str], n: int) -> FloatArray | None:
        """``mask`` (``None``: every tool) without the partitioned tools of partitions not named."""
        if self._n_public == self._n_alive:
            return mask
        shown = ~self._partitioned[:n]
        for p in partitions:
            own = self._part_slots.get(p)
            if own:
                shown[list(own)] = True
        return shown.astype(np.float32) if mask is None else mask * shown

    def _filter(self, namespaces: frozenset[str] | None, tags: frozenset[str] | None, n: int) -> FloatArray | None:
        if namespaces is None and not tags:
            return None
        mask = np.zeros(n, dtype=np.float32)
        if namespaces is None:
            mask[:] = 1.0
        else:
            for ns in namespaces:
                slots = self._ns_slots.get(ns)
                if slots:
                    mask[list(slots)] = 1.0
        for tag in tags or ():
            slots = self._tag_slots.get(tag)
            keep = np.zeros(n, dtype=np.float32)
            if slots:
                keep[list(slots)] = 1.0
            mask *= keep
        return mask
