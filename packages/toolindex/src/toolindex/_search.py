"""Lexical search engine behind :class:`~toolindex.InMemoryIndex` (first cut: plain BM25)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

from toolindex._model import Tool

__all__ = ["SearchEngine", "tokenize"]

_SPLIT = re.compile(r"[^A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def tokenize(text: str) -> list[str]:
    """Split text and identifiers (snake, camel, kebab, dotted) into lower-case words."""
    out: list[str] = []
    for piece in _SPLIT.split(text):
        if piece:
            out.extend(w.lower() for w in _CAMEL.split(piece) if w)
    return out


class SearchEngine:
    """Incremental BM25 over name + description + tags. Not thread-safe: the index locks."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._docs: dict[str, Counter[str]] = {}
        self._lens: dict[str, int] = {}
        self._df: Counter[str] = Counter()
        self._total_len = 0

    def add(self, tid: str, tool: Tool) -> None:
        """Index (or re-index) one tool."""
        if tid in self._docs:
            self.remove(tid)
        text = " ".join([tool.namespace, tool.name, tool.title or "", tool.description, " ".join(tool.tags)])
        tf = Counter(tokenize(text))
        self._docs[tid] = tf
        n = sum(tf.values())
        self._lens[tid] = n
        self._total_len += n
        self._df.update(tf.keys())

    def remove(self, tid: str) -> None:
        """Drop one tool from the index."""
        tf = self._docs.pop(tid, None)
        if tf is None:
            return
        self._total_len -= self._lens.pop(tid)
        self._df.subtract(tf.keys())

    def search(self, query: str, limit: int, accept: Callable[[str], bool] | None) -> list[tuple[str, float]]:
        """Return ``(id, score)`` pairs, best first."""
        terms = tokenize(query)
        n = len(self._docs)
        if not terms or n == 0:
            return []
        avg = self._total_len / n
        scores: dict[str, float] = {}
        for tid, tf in self._docs.items():
            if accept is not None and not accept(tid):
                continue
            s = 0.0
            for t in terms:
                f = tf.get(t, 0)
                if f:
                    idf = math.log(1 + (n - self._df[t] + 0.5) / (self._df[t] + 0.5))
                    s += idf * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * self._lens[tid] / avg))
            if s > 0:
                scores[tid] = s
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
