"""The optional semantic signal: dense vectors of tools and queries from a static embedding model.

A static embedding model maps each token of its vocabulary to one vector; a text's vector
is the mean of its tokens' vectors. Nothing runs but a table lookup, so a query is embedded
in well under a millisecond on a CPU, and nothing is downloaded: the default model is the
256-dimension ``l2_supercat`` table that ships inside the ``wordllama`` wheel (MIT), installed
by the ``toolindex[semantic]`` extra.

The table and its tokenizer are read straight from the installed package's files with
``safetensors`` and ``tokenizers`` (its own dependencies): importing ``wordllama`` itself would
configure the root logger of the host application (its inference module calls
``logging.basicConfig``) and import ``requests`` for downloads that never happen here.

:class:`Embedder` is the seam: any object with ``dim`` and ``embed`` can replace the default
(a sentence-transformer, a remote service behind a cache...), see ``docs/toolindex.md``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from toolindex._limits import MAX_PARAMS
from toolindex._model import Tool
from toolindex._tokenize import quoted_pieces
from toolindex.exceptions import SemanticUnavailableError

__all__ = [
    "DEFAULT_WEAK_RELEVANCE",
    "Embedder",
    "PackageEmbedder",
    "StaticEmbedder",
    "default_embedder",
    "gist_end",
    "gist_text",
    "query_texts",
    "tool_gist",
    "tool_text",
]

FloatArray = npt.NDArray[np.float32]

EXTRA_HINT = "install the extra: pip install 'toolindex[semantic]'"

_MODEL_PACKAGE = "wordllama"
_WEIGHTS = "weights/l2_supercat_256.safetensors"
_TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
_TENSOR = "embedding.weight"

DEFAULT_WEAK_RELEVANCE = 0.2
"""The ``weak_relevance`` below which a hit of the default model is marked weak (``SearchHit.weak``):
measured with ``bench/search_quality.py`` (out-of-catalog requests whose every hit is weak
against labelled requests whose every hit is weak; ``docs/toolindex.md`` has the table)."""

MAX_TOOL_TOKENS = 512
"""Tokens of a tool's text that are embedded (its name and the head of its description)."""
MAX_QUERY_TOKENS = 256
"""Tokens of a query (or of one of its clauses) that are embedded."""
MAX_TEXT_CHARS = 2_000
"""Characters of a text handed to the tokenizer: bounds its work whatever a tool or query holds."""
MAX_CLAUSES = 4
"""Clauses of a long query embedded on their own (see :func:`query_texts`)."""
_SMALL_BATCH = 8


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors whose dot product says how close two texts are in meaning.

    Contract:
        - ``embed`` returns a ``float32`` array of shape ``(len(texts), dim)`` whose rows have
          unit length, or are all zero for a text with nothing to embed.
        - It is deterministic: the same text always gives the same vector (the index embeds a
          tool once, at registration, and compares it with queries embedded later).
        - Concurrency: ``embed`` may be called from several threads at once.
        - Cost: at registration it is called once per 512 tools (with their texts and their
          gists: twice as many texts) and once per query (with one to five short texts); a
          query's call should take well under a millisecond for search to stay fast.
        - Errors: whatever it raises propagates to the caller of ``register_many`` (nothing is
          registered) or ``search``.
        - Ownership: the caller owns the returned array.
    """

    @property
    def dim(self) -> int:
        """Length of each vector."""
        ...

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """Unit-length vectors of ``texts``, one row each."""
        ...


class StaticEmbedder:
    """Mean-pooled static token embeddings: a lookup table and a tokenizer.

    Thread-safe: the table is read-only and the tokenizer is used under a lock (its padding
    and truncation settings are shared state).
    """

    def __init__(
        self,
        table: npt.NDArray[np.float32 | np.float16],
        tokenizer: Any,
        *,
        max_tokens: int = MAX_TOOL_TOKENS,
        by_word: bool = False,
    ) -> None:
        """Wrap a token table and a ``tokenizers.Tokenizer``.

        Args:
            table: ``(vocabulary size, dim)`` vectors, one per token id; ``float16`` is kept as
                it is (a memory-mapped table stays mapped: only the rows read are resident)
                and summed in ``float32``.
            tokenizer: A ``tokenizers.Tokenizer`` whose ids index ``table``.
            max_tokens: Tokens of one text that are pooled; the rest are ignored.
            by_word: The tokenizer encodes a text of words separated by single spaces as the
                concatenation of its words' encodings, and a word its vocabulary holds as one
                token with a word boundary in front (``"▁word"``) as that token (both true of a
                SentencePiece-style BPE whose only tokens holding a boundary inside are runs of
                it, as the default model's; tests/toolindex/test_index_semantic.py checks them).
                A query's words are then looked up in those whole words and a bounded cache of
                word encodings instead of tokenizing the query: a query's embedding comes right
                after the lexical pass has pushed the tokenizer's tables out of the CPU caches,
                where a call to the tokenizer is slow.

        Raises:
            ValueError: If ``table`` is not a two-dimensional array.
        """
        if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] == 0:
            raise ValueError(f"the token table must be a non-empty 2-d array, got shape {table.shape}")
        kept = table.dtype == np.float16 or table.dtype == np.float32
        self._table = table if kept and table.flags.c_contiguous else np.ascontiguousarray(table, dtype=np.float32)
        self._tokenizer = tokenizer
        self._max_tokens = max_tokens
        self._lock = threading.Lock()
        self._by_word = by_word
        self._words: dict[str, list[int]] = {}
        """Encodings of words seen in queries (bounded: cleared when full)."""
        self._whole_words: dict[str, list[int]] = _whole_words(tokenizer) if by_word else {}
        """Words that are one token of the vocabulary (their encoding is that token)."""

    @classmethod
    def from_package(cls) -> StaticEmbedder:
        """Load the model that ships in the ``wordllama`` wheel (``toolindex[semantic]``).

        The token table (16 MB of ``float16``) is memory-mapped from the wheel's file: only the
        pages of the tokens a catalog and its queries use become resident.

        Returns:
            The embedder (the tokenizer and its whole-word table: about 25 MB; 0.1-0.3 s to load).

        Raises:
            SemanticUnavailableError: If the extra is not installed or its files are missing.
        """
        weights, tok_file = _package_files()
        from tokenizers import Tokenizer

        dtype, rows, dim, offset = _table_layout(weights)
        table = np.memmap(weights, dtype=dtype, mode="r", offset=offset, shape=(rows, dim))
        tokenizer: Any = Tokenizer.from_file(str(tok_file))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return cls(table, tokenizer, by_word=True)

    @property
    def dim(self) -> int:
        """Length of each vector (256 for the default model)."""
        return int(self._table.shape[1])

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """Unit-length mean-pooled vectors of ``texts``.

        Args:
            texts: Texts to embed; each is cut at :data:`MAX_TEXT_CHARS` characters and its
                tokens at ``max_tokens``.

        Returns:
            ``(len(texts), dim)`` float32 array; a text with no token gives a zero row.
        """
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        cut = [t[:MAX_TEXT_CHARS] for t in texts]
        with self._lock:
            # A query's few texts: one by one on this thread (the batch call hands them to a
            # thread pool, which costs more than it saves for a handful of short texts).
            encoded: list[list[int]] = (
                [self._small_ids(t) for t in cut]
                if len(cut) <= _SMALL_BATCH
                else [e.ids for e in self._tokenizer.encode_batch(cut, add_special_tokens=False)]
            )
        lengths = np.array([min(len(e), self._max_tokens) for e in encoded], dtype=np.int64)
        if not lengths.any():
            return out
        ids = np.concatenate([np.asarray(e[: self._max_tokens], dtype=np.int64) for e in encoded])
        np.clip(ids, 0, self._table.shape[0] - 1, out=ids)
        rows = np.flatnonzero(lengths)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[rows]
        # One gather and one segmented sum for the whole batch.
        sums = np.add.reduceat(self._table[ids], starts, axis=0, dtype=np.float32)  # float16 rows summed in float32
        out[rows] = sums / lengths[rows, None]
        return normalised(out)

    def _small_ids(self, text: str) -> list[int]:
        """Token ids of one text of a small batch: word by word when ``by_word``.

        A word the vocabulary holds as one token is that token; another word is tokenized
        alone once and remembered (bounded). Texts the word rule does not cover (runs of
        spaces, a space at either end, the boundary mark itself, which reads as a space, a
        ``<`` that may open a special token), and a text with more than :data:`_MAX_NEW_WORDS`
        words never seen, are tokenized whole. Called under the lock.
        """
        if (
            not self._by_word
            or not text
            or "  " in text
            or text[0] == " "
            or text[-1] == " "
            or "<" in text
            or _WORD_START in text
        ):
            return list(self._tokenizer.encode(text, add_special_tokens=False).ids)
        whole, learnt = self._whole_words, self._words
        if len(learnt) > _MAX_CACHED_WORDS:
            learnt.clear()
        out: list[int] = []
        new = 0
        for word in text.split(" "):
            ids = whole.get(word) or learnt.get(word)
            if ids is None:
                new += 1
                if new > _MAX_NEW_WORDS:
                    return list(self._tokenizer.encode(text, add_special_tokens=False).ids)
                ids = list(self._tokenizer.encode(word, add_special_tokens=False).ids)
                if len(word) <= _MAX_CACHED_WORD_CHARS:
                    learnt[word] = ids
            out += ids
            if len(out) >= self._max_tokens:
                break
        return out


_MAX_CACHED_WORDS = 20_000
_MAX_CACHED_WORD_CHARS = 64
_MAX_NEW_WORDS = 16
"""New words of one text tokenized one by one; past them the text is tokenized whole (one call)."""
_WORD_START = "\u2581"  # SentencePiece's word boundary


def _whole_words(tokenizer: Any) -> dict[str, list[int]]:
    """Words the vocabulary holds as one token with a word boundary in front (``"▁word"``).

    The default model's tokenizer encodes each of them as that token alone (checked for all
    16,393 of them by tests/toolindex/test_index_semantic.py); built once, when the model loads.
    """
    vocab: dict[str, int] = tokenizer.get_vocab()
    return {
        token[1:]: [tid]
        for token, tid in vocab.items()
        if len(token) > 1 and token[0] == _WORD_START and _WORD_START not in token[1:]
    }


def normalised(vectors: FloatArray) -> FloatArray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32, copy=False)


def _package_files() -> tuple[Path, Path]:
    """The default model's weights and tokenizer files (nothing is loaded).

    Raises:
        SemanticUnavailableError: If the extra is not installed or its files are missing.
    """
    if importlib.util.find_spec("tokenizers") is None:
        raise SemanticUnavailableError(f"semantic search needs tokenizers ({EXTRA_HINT})")
    spec = importlib.util.find_spec(_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SemanticUnavailableError(f"the embedding model package {_MODEL_PACKAGE!r} is missing ({EXTRA_HINT})")
    root = Path(next(iter(spec.submodule_search_locations)))
    weights, tok_file = root / _WEIGHTS, root / _TOKENIZER
    for path in (weights, tok_file):
        if not path.is_file():
            raise SemanticUnavailableError(
                f"{path.name} is not in the installed {_MODEL_PACKAGE} package ({EXTRA_HINT}, version <0.5)"
            )
    return weights, tok_file


_DTYPES: dict[str, type[np.float16] | type[np.float32]] = {"F16": np.float16, "F32": np.float32}


def _table_layout(weights: Path) -> tuple[type[np.float16] | type[np.float32], int, int, int]:
    """The token table's dtype, rows, columns and byte offset in a safetensors file (read from its header).

    Raises:
        SemanticUnavailableError: If the file holds no such table.
    """
    with weights.open("rb") as f:  # the header's length, then the header as JSON, then the data
        size = int.from_bytes(f.read(8), "little")
        header: Any = json.loads(f.read(size)) if 0 < size <= _MAX_HEADER else None
    try:
        entry = header[_TENSOR]
        dtype = _DTYPES[entry["dtype"]]
        rows, dim = (int(n) for n in entry["shape"])
        begin, end = (int(n) for n in entry["data_offsets"])
    except (KeyError, TypeError, ValueError) as e:
        raise SemanticUnavailableError(f"{weights.name} holds no {_TENSOR!r} table of 16- or 32-bit floats") from e
    if rows <= 0 or dim <= 0 or end - begin != rows * dim * np.dtype(dtype).itemsize:
        raise SemanticUnavailableError(f"{weights.name}: the {_TENSOR!r} table's shape does not match its data")
    return dtype, rows, dim, 8 + size + begin


_MAX_HEADER = 1 << 20


class PackageEmbedder:
    """The default model, loaded by its first :meth:`embed` (the search engine defers tools' vectors till then).

    A server that never searches, or has not searched yet, holds none of the model's memory (its
    tokenizer and its vocabulary, and the table's pages the catalog's tokens touch). Shares the one process-wide
    model of :func:`default_embedder`.

    Raises:
        SemanticUnavailableError: If ``toolindex[semantic]`` is not installed (at construction).
    """

    def __init__(self) -> None:
        weights, _ = _package_files()
        self._dim = _table_layout(weights)[2]

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (embedding now costs no load)."""
        return bool(_loaded)

    @property
    def dim(self) -> int:
        """Length of each vector (256)."""
        return self._dim

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """Unit-length vectors of ``texts`` (see :meth:`StaticEmbedder.embed`); the first call loads the model."""
        return default_embedder().embed(texts)


_loaded: list[StaticEmbedder] = []
_load_lock = threading.Lock()


def default_embedder() -> StaticEmbedder:
    """The process-wide default model, loaded on first use (indexes share its read-only table).

    Raises:
        SemanticUnavailableError: If ``toolindex[semantic]`` is not installed.
    """
    with _load_lock:
        if not _loaded:
            _loaded.append(StaticEmbedder.from_package())
        return _loaded[0]


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[_\-.:/]+")


def _words(identifier: str) -> str:
    # "get_file_contents" / "getFileContents" -> "get file contents": the words a person reads.
    return " ".join(w for part in _SEPARATORS.split(identifier) for w in _CAMEL.split(part) if w)


def _param_names(schema: Mapping[str, Any]) -> Iterable[str]:
    props = schema.get("properties")
    if isinstance(props, dict):
        for i, name in enumerate(props):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            if i >= MAX_PARAMS:
                break
            yield _words(str(name)[:128])  # pyright: ignore[reportUnknownArgumentType]


def tool_text(tool: Tool) -> str:
    """What a tool's vector is made of: its name in words, its title, its description's head, its parameters' names.

    Parameter descriptions and the namespace's description are left out: measured on the
    shared evaluation sets, both dilute the vector more than they add.
    """
    head = tool.title or ""
    description = tool.description[:1000] if tool.description else ""
    params = " ".join(_param_names(tool.input_schema)) if tool.input_schema.get("properties") else ""
    return f"{_words(tool.name)}. {head} {description} {params}"[:MAX_TEXT_CHARS]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_GIST_SEARCH = 400
_GIST_CHARS = 200


def gist_end(tool: Tool, text: str) -> int:
    """Where a tool's gist ends in its :func:`tool_text`: its name, then its first sentence.

    A long description averages into a vector that is close to little; the gist (the text up
    to its first sentence end after the name, at most :data:`_GIST_CHARS` characters after it
    when no sentence ends in the first 400) keeps what the tool is for. Search scores its best
    candidates against both vectors and keeps the closer.
    """
    start = len(_words(tool.name)) + 2
    end = _SENTENCE_END.search(text, start, start + _GIST_SEARCH)
    return min(len(text), end.start() if end else start + _GIST_CHARS)


def gist_text(tool: Tool, text: str) -> str:
    """A tool's gist, from its :func:`tool_text`: the head :func:`gist_end` marks, then its namespace in words.

    The namespace is usually the server's name (``memory``, ``git``, ``weather``), which says in
    one word what its tools are about when their own words do not ("remember that ..." for a
    tool that creates entities in a knowledge graph). It goes in the gist alone: the gist is only
    read for a query's best candidates, where the closer of the two vectors counts, so it can
    lift a tool without diluting its main vector. Measured with ``bench/search_quality.py``: the
    fused engine gains on every set but one (MSC L3, -0.07 MRR@10).
    """
    return f"{text[: gist_end(tool, text)]} {_words(tool.namespace)}"


def tool_gist(tool: Tool) -> str:
    """A tool's gist: the head of its :func:`tool_text` that :func:`gist_end` marks, and its namespace."""
    return gist_text(tool, tool_text(tool))


# Where a request of several steps splits into its steps: after a sentence, or at "then",
# "after that", "finally", "next", "also" joining clauses.
_CLAUSE = re.compile(
    r"(?<=[.!?;])\s+|,\s*(?:and\s+)?(?:then|after that|finally|next|also)\b|\b(?:and then|then)\b",
    re.IGNORECASE,
)


def query_texts(query: str) -> list[str]:
    """The texts a query is embedded as: the whole query, then each of its clauses of 3+ words.

    A request of several steps ("find X, then do Y and save it to Z") averages into a vector
    close to none of the tools it needs; each clause alone is close to one of them. The clauses
    are read from the request's own words: a quoted value (a name, a title, a note's text) is an
    argument of a step, not a step, so it is left out of them (its full stops end no clause and
    its words do not pull a clause's vector away from the tool the step needs). The whole query
    keeps it: a request that quotes what it looks for still finds it. A query with no letter
    outside its quotes is a quotation of the request itself, and its clauses are read from it.

    Returns:
        ``[query]``, or ``[query, clause, ...]`` with at most :data:`MAX_CLAUSES` clauses.
    """
    query = query[:MAX_TEXT_CHARS]
    own = " ".join(text for text, quoted in quoted_pieces(query) if not quoted)
    clauses = [c.strip() for c in _CLAUSE.split(own) if c and c.strip()]
    clauses = [c for c in clauses if len(c.split()) >= 3]
    if len(clauses) < 2:
        return [query]
    return [query, *clauses[:MAX_CLAUSES]]
