"""The lexical search engine behind :class:`~toolindex.InMemoryIndex`.

Model: BM25F. Each tool is a document with several fields (name, title, description,
parameter names, parameter descriptions, tags, namespace, namespace description, and
name/title word pairs). A term's frequency is length-normalised per field, weighted per
field and summed into one pseudo-frequency, which is then saturated once (so a term
repeated across fields does not count many times over). On top of that:

- a coverage factor favours tools that match more of the query's (idf-weighted) terms;
- query words the index has never seen are expanded to close vocabulary words (typos:
  a deletion-neighbourhood index proposes candidates, rapidfuzz's OSA distance confirms
  them) or to words they begin (abbreviations: ``repo`` → ``repository``), at a discount.

Layout: inverted postings per term, one packed integer per (tool, field) appended on
registration (``array`` buffers); the saturated per-tool weights of a term are computed
with numpy the first time a query needs them after a change, and cached; scores accumulate
with one ``bincount`` per query. Removal is lazy: a removed tool's slot is marked dead (its
normalisers drop to zero) and the postings are compacted once dead slots outnumber live ones.

The engine is not thread-safe; :class:`~toolindex.InMemoryIndex` serialises access.
"""

from __future__ import annotations

import itertools
import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
from rapidfuzz.distance import OSA

from toolindex._limits import MAX_FIELD_CHARS, MAX_PARAM_CHARS, MAX_PARAMS, MAX_QUERY_CHARS, MAX_QUERY_WORDS
from toolindex._model import Tool
from toolindex._tokenize import STOPWORDS, split_words, stem, terms_of

__all__ = ["FIELDS", "Prepared", "SearchEngine", "SearchParams", "document_fields"]

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


_DENSE_COVERAGE_MAX = 50_000
"""Up to this many postings per query, coverage is accumulated like the scores."""
_MIN_FUZZY = 4
"""Shortest query word corrected for typos (shorter words have too many neighbours)."""
_MAX_PREFIX = 8
"""Longest abbreviation expanded by prefix."""


def _deletes(word: str) -> set[str]:
    return {word, *(word[:i] + word[i + 1 :] for i in range(len(word)))}


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


def _pairs(terms: list[str]) -> list[str]:
    # Adjacent term pairs; a space cannot occur inside a term, so pairs never collide with words.
    return [f"{a} {b}" for a, b in itertools.pairwise(terms) if a != b]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A tool turned into field → term counts, ready to be added without further failure."""

    fields: dict[int, dict[str, int]]
    words: frozenset[str]


@lru_cache(maxsize=4096)
def _namespace_terms(namespace: str, text: str | None) -> tuple[list[str], list[str], frozenset[str]]:
    # Shared by every tool of the namespace: tokenise once, not once per tool.
    words: set[str] = set()
    return terms_of(namespace, words), terms_of(text, words) if text else [], frozenset(words)


def document_fields(tool: Tool, namespace_text: str | None) -> Prepared:
    """The field → term counts of a tool, and its unstemmed words.

    The cost is bounded whatever the tool holds: each text field is read up to
    :data:`MAX_FIELD_CHARS` characters and at most :data:`MAX_PARAMS` schema parameters are
    read (real tools stay far below both).
    """
    ns_text = namespace_text[:MAX_FIELD_CHARS] if namespace_text else namespace_text
    ns_terms, ns_text_terms, ns_words = _namespace_terms(tool.namespace, ns_text)
    words: set[str] = set(ns_words)
    name = terms_of(tool.name, words)
    title = terms_of(tool.title[:MAX_FIELD_CHARS], words) if tool.title else []
    schema = tool.input_schema
    params = list(itertools.islice(_schema_params(schema), MAX_PARAMS)) if schema.get("properties") else []
    # Parameter texts are joined with a separator no identifier contains, so names never run together.
    texts = (
        (_F["name"], name),
        (_F["title"], title),
        (_F["description"], terms_of(tool.description[:MAX_FIELD_CHARS], words) if tool.description else []),
        (_F["param_names"], terms_of(_joined(p for p, _ in params), words) if params else []),
        (_F["param_text"], terms_of(_joined(d for _, d in params if d), words) if params else []),
        (_F["tags"], terms_of(_joined(tool.tags), words) if tool.tags else []),
        (_F["namespace"], ns_terms),
        (_F["ns_text"], ns_text_terms),
        (_F["phrase"], _pairs(name) + _pairs(title)),
    )
    return Prepared({f: _count(terms) for f, terms in texts if terms}, frozenset(words))


def _count(terms: list[str]) -> dict[str, int]:
    # A plain dict: Counter's constructor costs more than the counting for short lists.
    counts: dict[str, int] = {}
    get = counts.get
    for t in terms:
        counts[t] = get(t, 0) + 1
    return counts


class SearchEngine:
    """Incremental BM25F index over tools. Not thread-safe: the owning index serialises calls."""

    def __init__(self, params: SearchParams | None = None) -> None:
        self.params = params or SearchParams()
        nf = len(FIELDS)
        if len(self.params.weights) != nf or len(self.params.b) != nf:
            raise ValueError(f"weights and b need {nf} values each, in the order {FIELDS}")
        self._weights = np.array(self.params.weights, dtype=np.float32)
        self._b = np.array(self.params.b, dtype=np.float32)
        self._postings: dict[str, _Postings] = {}
        self._df: Counter[str] = Counter()
        self._slot_of: dict[str, int] = {}
        self._docs: list[_Doc | None] = []
        self._cap = 1024
        self._lens = np.zeros((nf, self._cap), dtype=np.float32)
        self._alive = np.zeros(self._cap, dtype=bool)
        self._len_sum = np.zeros(nf, dtype=np.float64)
        self._n_alive = 0
        self._norm: FloatArray | None = None  # weight / length normaliser, per field and slot
        self._gen = 0  # bumped whenever the normalisers are recomputed (term caches key on it)
        # Typo vocabulary: unstemmed word -> number of live tools using it.
        self._words: Counter[str] = Counter()
        # One-deletion variants and prefixes of the vocabulary, for typos and abbreviations.
        self._deletes: dict[str, set[str]] = {}
        self._prefixes: dict[str, set[str]] = {}
        self._typo_ready = False
        self._expansions: dict[str, list[tuple[str, float]]] = {}
        self._ns_slots: dict[str, set[int]] = {}
        self._tag_slots: dict[str, set[int]] = {}

    def __len__(self) -> int:
        return self._n_alive

    def stats(self) -> dict[str, int]:
        """Sizes: live tools, slots (live + dead until compaction), terms, postings, vocabulary words."""
        return {
            "tools": self._n_alive,
            "slots": len(self._docs),
            "terms": len(self._postings),
            "postings": sum(len(p.codes) for p in self._postings.values()),
            "words": len(self._words),
        }

    # -- mutation -------------------------------------------------------------------------

    def add(self, tid: str, tool: Tool, namespace_text: str | None = None, prepared: Prepared | None = None) -> None:
        """Index (or re-index) one tool; touches only its own terms.

        ``prepared`` (from :func:`document_fields`) lets a caller do the fallible work first.
        """
        if prepared is None:
            prepared = document_fields(tool, namespace_text)
        self.add_many([(tid, tool, namespace_text, prepared)])

    def add_many(self, entries: Sequence[tuple[str, Tool, str | None, Prepared]]) -> None:
        """Index (or re-index) several tools: ``(id, tool, namespace text, prepared fields)``."""
        for tid, *_ in entries:
            if tid in self._slot_of:
                self.remove(tid)
        first = len(self._docs)
        while first + len(entries) > self._cap:
            self._grow()
        # Gather the batch's postings per term, then extend each term's buffer once.
        batch: defaultdict[str, list[int]] = defaultdict(list)
        len_fields: list[int] = []
        len_slots: list[int] = []
        len_values: list[int] = []
        df, vocab, max_tf = self._df, self._words, _MAX_TF
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
            new_words = [w for w in prepared.words if w not in vocab]
            vocab.update(prepared.words)
            if new_words:
                self._add_vocab(new_words)
            self._docs.append(_Doc(tid, tool, ns_text))
            self._slot_of[tid] = slot
            self._ns_slots.setdefault(tool.namespace, set()).add(slot)
            for tag in tool.tags:
                self._tag_slots.setdefault(tag, set()).add(slot)
        lens = self._lens
        lens[len_fields, len_slots] = len_values
        postings = self._postings
        for term, codes in batch.items():
            p = postings.get(term)
            if p is None:
                p = postings[term] = _Postings()
            p.codes.extend(codes)
        end = first + len(entries)
        self._len_sum += lens[:, first:end].sum(axis=1)
        self._alive[first:end] = True
        self._n_alive += len(entries)
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
        self._len_sum -= self._lens[:, slot]
        # Tokenising again is cheaper in memory than keeping every tool's terms around.
        prepared = document_fields(doc.tool, doc.ns_text)
        terms = {t for counts in prepared.fields.values() for t in counts}
        self._df.subtract(terms)
        for t in terms:
            if self._df[t] <= 0:
                del self._df[t]
        self._words.subtract(prepared.words)
        gone = [w for w in prepared.words if self._words[w] <= 0]
        for w in gone:
            del self._words[w]
        if gone:
            self._drop_vocab(gone)
        self._ns_slots[doc.tool.namespace].discard(slot)
        if not self._ns_slots[doc.tool.namespace]:
            del self._ns_slots[doc.tool.namespace]
        for tag in doc.tool.tags:
            self._tag_slots[tag].discard(slot)
            if not self._tag_slots[tag]:
                del self._tag_slots[tag]
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
        self._lens, self._alive, self._cap = lens, alive, cap

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
        self._ns_slots = {}
        self._tag_slots = {}
        for i, d in enumerate(docs):
            assert d is not None
            self._ns_slots.setdefault(d.tool.namespace, set()).add(i)
            for tag in d.tool.tags:
                self._tag_slots.setdefault(tag, set()).add(i)
        self._norm = None

    def _vocab_keys(self, word: str) -> Iterator[tuple[dict[str, set[str]], str]]:
        # The typo-index entries of one word: its deletion neighbourhood and its prefixes.
        if not word.isalpha():
            return
        if len(word) >= _MIN_FUZZY - 1:
            for key in _deletes(word):
                yield self._deletes, key
        for i in range(3, min(len(word), _MAX_PREFIX + 1)):
            yield self._prefixes, word[:i]

    def _add_vocab(self, words: Iterable[str]) -> None:
        self._expansions.clear()
        if not self._typo_ready:
            return
        for w in words:
            for table, key in self._vocab_keys(w):
                table.setdefault(key, set()).add(w)

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
                bucket = table.get(key)
                if bucket is not None:
                    bucket.discard(w)
                    if not bucket:
                        del table[key]

    # -- query ----------------------------------------------------------------------------

    def _normalisers(self) -> FloatArray:
        if self._norm is None:
            n = len(self._docs)
            avg = np.where(self._len_sum > 0, self._len_sum / max(self._n_alive, 1), 1.0).astype(np.float32)
            b = self._b[:, None]
            denom = 1.0 - b + b * (self._lens[:, :n] / avg[:, None])
            norm = np.zeros((len(FIELDS), self._cap), dtype=np.float32)
            norm[:, :n] = self._weights[:, None] / denom
            norm[:, :n] *= self._alive[:n]
            self._norm = norm
            self._gen += 1
        return self._norm

    def _idf(self, term: str) -> float:
        df = self._df.get(term, 0)
        n = self._n_alive
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def _expand(self, word: str) -> list[tuple[str, float]]:
        """Vocabulary stems an unknown query word may stand for, with their discount."""
        cached = self._expansions.get(word)
        if cached is not None:
            return cached
        self._ensure_typo_index()
        p = self.params
        out: dict[str, float] = {}
        if word.isalpha() and len(word) >= _MIN_FUZZY:
            # Candidates share a one-deletion variant with the word (covers one insertion,
            # deletion, substitution or transposition); rapidfuzz confirms the distance.
            cands: set[str] = set()
            for key in _deletes(word):
                hit = self._deletes.get(key)
                if hit:
                    cands.update(hit)
            scored = [(w, OSA.distance(word, w)) for w in cands]
            scored = [(w, d) for w, d in scored if 0 < d <= 1 + (len(word) >= 8)]
            scored.sort(key=lambda m: (m[1], -self._words[m[0]], m[0]))
            for w, dist in scored[: p.max_expansions]:
                s = stem(w)
                weight = p.fuzzy_discount * (1.0 - dist / (len(word) + 1))
                out[s] = max(out.get(s, 0.0), weight)
        if word.isalpha() and len(word) >= 3 and not out:
            longer = sorted(self._prefixes.get(word, ()), key=lambda w: (-self._words[w], w))
            for w in longer[: p.max_expansions]:
                s = stem(w)
                out[s] = max(out.get(s, 0.0), p.prefix_discount * len(word) / len(w))
        result = sorted(out.items())
        if len(self._expansions) > 10_000:
            self._expansions.clear()
        self._expansions[word] = result
        return result

    def query_terms(self, query: str) -> dict[str, float]:
        """Weighted query terms: exact stems, word pairs, and expansions of unknown words.

        Only the first :data:`MAX_QUERY_CHARS` characters and, of those, the first
        :data:`MAX_QUERY_WORDS` searchable words are read, so a query costs a bounded amount
        of work whatever its size.
        """
        weights: dict[str, float] = {}
        stems: list[str] = []
        considered = 0
        for w in split_words(query[:MAX_QUERY_CHARS]):
            if w in STOPWORDS:
                continue
            considered += 1
            if considered > MAX_QUERY_WORDS:
                break
            s = stem(w)
            if s in self._df:
                stems.append(s)
                weights[s] = weights.get(s, 0.0) + 1.0
                continue
            for t, wt in self._expand(w):
                if t in self._df:
                    weights[t] = max(weights.get(t, 0.0), wt)
        for pair in _pairs(stems):
            if pair in self._df:
                weights[pair] = 1.0
        # Repeating a word in a query should not double its pull.
        return {t: 1.0 + 0.5 * math.log(w) if w > 1.0 else w for t, w in weights.items()}

    def search(
        self,
        query: str,
        limit: int,
        namespaces: frozenset[str] | None = None,
        tags: frozenset[str] | None = None,
    ) -> list[tuple[str, float]]:
        """``(id, score)`` pairs, best first, ties by id."""
        if self._n_alive == 0:
            return []
        terms = self.query_terms(query)
        if not terms:
            return []
        norm = self._normalisers()
        n = len(self._docs)
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
        mask = self._filter(namespaces, tags, n)
        if mask is not None:
            raw *= mask
        cand = np.flatnonzero(raw)
        if len(cand) == 0:
            return []
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
            covered = np.zeros(len(cand), dtype=np.float64)
            for uniq, idf in zip(slot_parts, idfs, strict=True):
                pos = np.searchsorted(uniq, cand)
                hit = pos < len(uniq)
                hit[hit] = uniq[pos[hit]] == cand[hit]
                covered += hit * idf
        final = raw_c * (1.0 + coverage * covered / total)
        ranked = sorted(
            ((float(s), self._docs[int(c)].tid) for c, s in zip(cand, final, strict=True)),  # type: ignore[union-attr]
            key=lambda x: (-x[0], x[1]),
        )
        return [(tid, s) for s, tid in ranked[:limit]]

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
