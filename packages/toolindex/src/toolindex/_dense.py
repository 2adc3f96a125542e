"""Dense vectors of the indexed tools, one row per search-engine slot.

Rows live in one contiguous ``float32`` matrix aligned with the lexical engine's slots, so
fusing the two signals is elementwise work on arrays of the same length. Up to
``SearchParams.dense_exact_max`` tools a query is scored exactly against every row. Above it,
a query is first scored against each row's first :data:`PREFIX_DIM` dimensions, normalised
(the default model is trained so that a prefix of its vectors is a smaller embedding of its
own; an eighth of the memory to read), and only the best rows (:func:`pool_size`), with the
lexical candidates, are scored in full. ``bench/search_latency.py`` measures both regimes and
how often the second finds the first's top five, and ``bench/search_quality.py
--dense-exact-max 0`` the quality of the second.

Each tool also has a second, short vector, its *gist* (name and first sentence, see
``tool_gist``), kept in ``float16``: a query's best candidates are scored against both vectors
and keep the closer (:meth:`DenseVectors.closer_cosines`), which a catalog-wide pass never reads.

Removal zeroes a row (the engine's alive mask hides it) and compaction renumbers rows with
the engine's slots. The catalog's mean counts only the rows of public tools: a partitioned tool's
row (see ``_search.py``) is searched like any other but counts in the mean as a dead slot does.
Tools registered while the model is not loaded yet (``PackageEmbedder``) are *deferred*: their
rows stay zero until the engine's first semantic search embeds them all at once.

Not thread-safe: the owning engine serialises calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from toolindex._model import Tool
from toolindex._semantic import Embedder, normalised

__all__ = ["Candidates", "DenseVectors"]

FloatArray = npt.NDArray[np.float32]


class DenseVectors:
    """A growable matrix of unit-length tool vectors, indexed by slot."""

    __slots__ = ("_centre", "_deferred", "_gist", "_matrix", "_prefix", "_sum", "embedder")

    def __init__(self, embedder: Embedder, capacity: int) -> None:
        self.embedder = embedder
        self._matrix: FloatArray = np.zeros((capacity, embedder.dim), dtype=np.float32)
        self._prefix: FloatArray = np.zeros((capacity, min(PREFIX_DIM, embedder.dim)), dtype=np.float32)
        self._gist: npt.NDArray[np.float16] = np.zeros((capacity, embedder.dim), dtype=np.float16)
        self._sum = np.zeros(embedder.dim, dtype=np.float64)
        """Sum of the counted vectors: the live public tools' (dead slots hold zeros)."""
        self._centre: FloatArray | None = None
        """Mean of the counted vectors (computed from ``_sum`` when first needed after a change)."""
        self._deferred: dict[int, Tool] = {}
        """Slots whose tool is not embedded yet (their rows are zero)."""

    def defer(self, first: int, tools: Sequence[Tool]) -> None:
        """Leave ``tools`` (slots ``first``, ``first + 1``, ...) to be embedded by :meth:`take_deferred`'s caller."""
        self._deferred.update(enumerate(tools, first))

    def take_deferred(self) -> dict[int, Tool]:
        """The deferred tools by slot; they are no longer deferred."""
        out, self._deferred = self._deferred, {}
        return out

    @property
    def dim(self) -> int:
        """Vector length."""
        return int(self._matrix.shape[1])

    def nbytes(self) -> int:
        """Memory held by the vectors (capacity included)."""
        return int(self._matrix.nbytes + self._prefix.nbytes + self._gist.nbytes)

    def grow(self, capacity: int) -> None:
        """Make room for ``capacity`` slots, keeping every row."""
        if capacity <= self._matrix.shape[0]:
            return
        old = self._matrix.shape[0]
        bigger = np.zeros((capacity, self.dim), dtype=np.float32)
        bigger[:old] = self._matrix
        prefix = np.zeros((capacity, self._prefix.shape[1]), dtype=np.float32)
        prefix[:old] = self._prefix
        gist = np.zeros((capacity, self.dim), dtype=np.float16)
        gist[:old] = self._gist
        self._matrix, self._prefix, self._gist = bigger, prefix, gist

    def put(self, first: int, vectors: FloatArray, gists: FloatArray, *, counted: bool = True) -> None:
        """Store ``vectors`` and their tools' ``gists`` in slots ``first``, ``first + 1``, ...

        ``counted``: whether they count in the catalog's mean (public tools), the slots' old rows too.

        Raises:
            ValueError: If the vectors do not have the embedder's dimension.
        """
        if vectors.ndim != 2 or vectors.shape[1] != self.dim or gists.shape != vectors.shape:
            raise ValueError(f"expected vectors of dimension {self.dim}, got shapes {vectors.shape}, {gists.shape}")
        self._gist[first : first + len(gists)] = gists
        if counted:
            self._sum -= self._matrix[first : first + len(vectors)].sum(axis=0)
            self._sum += vectors.sum(axis=0)
            self._centre = None
        self._matrix[first : first + len(vectors)] = vectors
        self._prefix[first : first + len(vectors)] = normalised(vectors[:, : self._prefix.shape[1]])

    def clear(self, slot: int, *, counted: bool = True) -> None:
        """Forget one slot's vector (``counted``: as :meth:`put` stored it)."""
        self._deferred.pop(slot, None)
        if counted:
            self._sum -= self._matrix[slot]
            self._centre = None
        self._matrix[slot] = 0.0
        self._prefix[slot] = 0.0
        self._gist[slot] = 0.0

    def compact(self, live: npt.NDArray[np.intp], counted: npt.NDArray[np.bool_] | None = None) -> None:
        """Keep the rows of ``live`` slots, renumbered ``0 .. len(live) - 1``.

        ``counted``: which of them (in their new order) count in the mean; ``None``: all of them.
        """
        kept = np.zeros_like(self._matrix)
        kept[: len(live)] = self._matrix[live]
        prefix = np.zeros_like(self._prefix)
        prefix[: len(live)] = self._prefix[live]
        gist = np.zeros_like(self._gist)
        gist[: len(live)] = self._gist[live]
        self._matrix, self._prefix, self._gist = kept, prefix, gist
        if self._deferred:
            self._deferred = {
                new: self._deferred[old] for new, old in enumerate(live.tolist()) if old in self._deferred
            }
        rows = kept[: len(live)]
        self._sum = (rows if counted is None else rows[counted]).sum(axis=0, dtype=np.float64)
        self._centre = None

    def candidates(
        self,
        queries: FloatArray,
        n: int,
        n_alive: int,
        clause_weight: float,
        *,
        exact_max: int,
        keep: npt.NDArray[np.intp],
        eligible: npt.NDArray[np.bool_] | None,
        counted: npt.NDArray[np.bool_] | None = None,
    ) -> Candidates:
        """The tools closest to the query, with their exact cosines, and the catalog's mean cosine.

        A query's score for a tool is its cosine with the whole query, mixed with its cosine
        with the closest clause (``clause_weight``) when the query has clauses.

        Args:
            queries: The query's vectors: the whole query first, then its clauses (if any).
            n: Slots in use.
            n_alive: Counted tools among them: live tools that count in the mean (dead slots hold
                zero vectors and score 0). The regime and the pool's size follow it too, so tools
                that do not count change neither.
            clause_weight: Share of the closest clause in the score of a query with clauses.
            exact_max: Up to this many counted tools every tool is scored exactly; above it the
                first pass reads only each vector's prefix.
            keep: Slots that must be among the candidates (the lexical ones).
            eligible: Slots that may be candidates (a namespace or tag filter), or ``None``.
            counted: The slots that count in the mean, or ``None`` when every one of the ``n`` does
                (the caller passes it whenever some slot is dead or does not count).

        Returns:
            The best :func:`pool_size` eligible slots and the ``keep`` ones (sorted), with their
            cosines with each of the query's vectors, their scores, and the mean score over the
            counted tools.
        """
        exact_regime = n_alive <= exact_max
        if exact_regime:
            products = _products(self._matrix, queries, n)
            scores = _mix(products, clause_weight)
            # Over the counted rows alone, in slot order: the same float32 sum (to the last bit) as
            # an index that never held the rows that do not count.
            mean = float((scores if counted is None else scores[counted]).sum()) / max(n_alive, 1)
        else:
            products = None
            scores = _mix(_products(self._prefix, normalised(queries[:, : self._prefix.shape[1]]), n), clause_weight)
            # The prefix's cosines have a scale of their own: the mean of the full cosines comes
            # from the running sum of the live vectors (exact for a query without clauses).
            centre = self._centre
            if centre is None:
                centre = self._centre = (self._sum / max(n_alive, 1)).astype(np.float32)
            along = queries @ centre
            mean = (
                float((1.0 - clause_weight) * along[0] + clause_weight * along[1:].max())
                if len(queries) > 1
                else float(along[0])
            )
        if eligible is not None:
            scores = np.where(eligible, scores, -np.inf).astype(np.float32)
        chosen = np.zeros(n, dtype=np.bool_)
        size = pool_size(n_alive)
        chosen[np.argpartition(scores, n - size)[n - size :] if n > size else slice(None)] = True
        chosen[keep] = True
        if eligible is not None:
            chosen &= eligible
        pool = np.flatnonzero(chosen)
        sims = products[:, pool] if products is not None else queries @ self._matrix[pool].T
        return Candidates(pool, sims, scores[pool] if exact_regime else _mix(sims, clause_weight), mean)

    def closer_cosines(
        self, rows: npt.NDArray[np.intp], sims: FloatArray, queries: FloatArray, clause_weight: float
    ) -> FloatArray:
        """The scores of ``rows`` as :meth:`candidates` gives them, with the closer of each tool's two vectors.

        Each of the query's vectors meets the closer of the tool's full vector (``sims``: the
        rows' columns of :attr:`Candidates.sims`) and its gist.
        """
        if len(rows) == 0:
            return np.zeros(0, dtype=np.float32)
        gists = self._gist[rows].astype(np.float32)
        return _mix(np.maximum(sims, queries @ gists.T), clause_weight)


class Candidates(NamedTuple):
    """What :meth:`DenseVectors.candidates` finds for a query."""

    slots: npt.NDArray[np.intp]
    """Candidate slots, sorted."""
    sims: FloatArray
    """Cosine of each of the query's vectors (rows) with each candidate's vector (columns)."""
    scores: FloatArray
    """Each candidate's score: its cosine with the whole query, mixed with its closest clause's."""
    mean: float
    """The mean score over all live tools."""


def _mix(sims: FloatArray, clause_weight: float) -> FloatArray:
    """One score per tool: the whole query's, mixed with its closest clause's by ``clause_weight``.

    ``sims`` has a row per query vector: the whole query, then its clauses.
    """
    if len(sims) == 1:
        return sims[0]
    whole = sims[0] * np.float32(1.0 - clause_weight)
    closest = sims[1] if len(sims) == 2 else np.maximum.reduce(sims[1:], axis=0)
    whole += closest * np.float32(clause_weight)
    return whole


def _products(matrix: FloatArray, queries: FloatArray, n: int) -> FloatArray:
    """``queries @ matrix[:n].T``: one row of scores per query vector, a block of rows at a time.

    Blocks of at most ``_BLOCK_VALUES`` values keep OpenBLAS on the calling thread: a larger
    product is split across threads, and on a busy machine waiting for them turned a 0.2 ms
    product into 10-40 ms at the 95th percentile. Each of the query's vectors meets the block
    alone (a matrix-vector product), while the block is still in the cache: a matrix product
    with three to five columns took about twice as long on a 2-core machine, as BLAS packs the
    block for it (``bench/search_latency.py``: 10k p95 2.0 → 1.8 ms).

    Every block has a multiple of :data:`_ROW_ALIGN` rows (the matrix's capacity is one): BLAS
    takes the rows past its kernel's unroll with another kernel that rounds differently, so
    without this a tool's cosine changed in its last bits with the number of rows before it
    (a partitioned tool's, too: see ``_search.py``).
    """
    padded = min(-(-n // _ROW_ALIGN) * _ROW_ALIGN, matrix.shape[0])
    out = np.empty((len(queries), padded), dtype=np.float32)
    rows = max(_ROW_ALIGN, _BLOCK_VALUES // matrix.shape[1] // _ROW_ALIGN * _ROW_ALIGN)
    for start in range(0, padded, rows):
        end = min(start + rows, padded)
        block = matrix[start:end]
        for j, vector in enumerate(queries):
            np.matmul(block, vector, out=out[j, start:end])
    return out[:, :n]


_BLOCK_VALUES = 262_144
_ROW_ALIGN = 16
"""Rows of a block of :func:`_products` are a multiple of this (the engine's capacity is a multiple of 1024)."""
PREFIX_DIM = 32
"""Dimensions of the first, cheap pass over a large catalog (half of the model's trained 64-dimension
prefix: half the memory to read). At 10,000 tools the two-pass top five holds 99.2 % of the exact
search's (``bench/search_latency.py``, which reports it at every size above ``dense_exact_max``)."""
PREFIX_POOL = 100
"""Fewest rows the first pass keeps for exact scoring."""
PREFIX_POOL_SHARE = 250
"""Above 25,000 tools the first pass keeps one row in this many (400 at 100,000 tools: with 100
there, the two-pass top five held 97.0 % of the exact search's in ``bench/search_latency.py``)."""


def pool_size(n: int) -> int:
    """Rows of ``n`` that the first pass keeps for exact scoring."""
    return max(PREFIX_POOL, n // PREFIX_POOL_SHARE)
