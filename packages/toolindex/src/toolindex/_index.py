"""The default :class:`~toolindex.Index`: everything in memory, guarded by one lock."""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import cast

from toolindex._dense import FloatArray
from toolindex._gc import collector_paused
from toolindex._ids import ToolID, validate_namespace
from toolindex._limits import MAX_ID_CHARS, MAX_QUERY_CHARS, clip
from toolindex._model import BackendRef, ChangeEvent, ChangeKind, NamespaceInfo, SearchHit, Tool, ToolPage
from toolindex._partitions import PartitionMap, Seen, check_seen
from toolindex._protocol import ChangeCallback, Unsubscribe
from toolindex._search import Prepared, SearchEngine, SearchParams, document_fields, indexing_cost
from toolindex._semantic import Embedder, PackageEmbedder
from toolindex.exceptions import AmbiguousToolIDError, DuplicateToolError, InvalidToolError, ToolNotFoundError
from toolindex.log import get_logger

__all__ = ["InMemoryIndex", "PreparedBatch"]

_log = get_logger("toolindex")


def _check_item(pos: int, item: object) -> tuple[Tool, list[BackendRef]]:
    kind = type(item).__name__
    if not isinstance(item, tuple) or len(cast("tuple[object, ...]", item)) != 2:
        raise InvalidToolError(f"item {pos}", None, f"expected a (Tool, BackendRef) pair, got {kind}")
    tool, backend = cast("tuple[object, object]", item)
    if not isinstance(tool, Tool):
        raise InvalidToolError(f"item {pos}", None, f"expected a Tool, got {type(tool).__name__}")
    if isinstance(backend, BackendRef):
        refs = [backend]
    elif isinstance(backend, (list, tuple)):
        refs = list(cast("Sequence[object]", backend))
    else:
        raise InvalidToolError(
            tool.id, "backend", f"expected a BackendRef or a list of them, got {type(backend).__name__}"
        )
    if not refs:
        raise InvalidToolError(tool.id, "backend", "at least one backend reference is required")
    for r in refs:
        if not isinstance(r, BackendRef):
            raise InvalidToolError(tool.id, "backend", f"expected a BackendRef, got {type(r).__name__}")
    return tool, cast("list[BackendRef]", refs)


_CURSOR_PREFIX = "after:"
# base64 of the prefix and the longest valid id, with room to spare.
_MAX_CURSOR_CHARS = 4 * (len(_CURSOR_PREFIX) + MAX_ID_CHARS) // 3 + 8


_Replaced = tuple[Tool, list[BackendRef], str, str | None]
"""What a batch replaced of a tool: its definition, backends, summary and partition (for a roll-back)."""

_GC_PAUSE_BATCH = 1000
_CHUNK = 1024


@dataclass(frozen=True, slots=True)
class _Ready:
    """One tool of a :class:`PreparedBatch`: checked, tokenised and summarised."""

    tool: Tool
    refs: list[BackendRef]
    ns_text: str | None
    """The namespace description it was tokenised with (tokenised again if it changed since)."""
    prepared: Prepared | None
    """``None``: tokenised when registered (:meth:`InMemoryIndex.register_many`)."""
    summary: str
    cost: int
    """Of indexing it, plus of removing the definition it replaces (see :meth:`PreparedBatch.split`)."""


class PreparedBatch:
    """A batch checked and tokenised by :meth:`InMemoryIndex.prepare_many`, to register with ``register_prepared``.

    Immutable. Preparing is the CPU work of a registration that reads no index state (checking
    the items, tokenising each tool's text, its summary, the semantic vectors), so it may run
    in a worker thread while the index serves searches; registering it is what is left, under
    the index's lock.
    """

    __slots__ = ("_items", "_owner", "_vectors", "partition")

    def __init__(
        self, owner: InMemoryIndex, items: list[_Ready], vectors: FloatArray | None, partition: str | None
    ) -> None:
        self._owner = owner
        self._items = items
        self._vectors = vectors
        self.partition = partition
        """The partition the batch registers its tools in (``None``: the public catalog)."""

    def __len__(self) -> int:
        return len(self._items)

    @property
    def cost(self) -> int:
        """The work of registering the batch, in characters of tool text indexed (or unindexed)."""
        return sum(r.cost for r in self._items)

    def split(self, max_cost: int) -> list[PreparedBatch]:
        """The batch in consecutive parts of at most ``max_cost`` each (a tool costing more is a part alone).

        Each part registers atomically; registering the parts one after another, with other
        work between them, bounds each hold of the index's lock (and of an event loop that
        registers them) by ``max_cost`` rather than by the batch.
        """
        parts: list[PreparedBatch] = []
        start = total = 0
        for i, r in enumerate(self._items):
            if i > start and total + r.cost > max_cost:
                parts.append(self._part(start, i))
                start, total = i, 0
            total += r.cost
        if start < len(self._items):
            parts.append(self._part(start, len(self._items)))
        return parts

    def _part(self, start: int, end: int) -> PreparedBatch:
        vectors = self._vectors[start:end] if self._vectors is not None else None
        return PreparedBatch(self._owner, self._items[start:end], vectors, self.partition)


def _checked_batch(
    items: Iterable[tuple[Tool, BackendRef | Sequence[BackendRef]]],
) -> list[tuple[Tool, list[BackendRef]]]:
    batch: list[tuple[Tool, list[BackendRef]]] = []
    seen: set[str] = set()
    for pos, item in enumerate(items):
        batch.append(_check_item(pos, item))
        tid = batch[-1][0].id
        if tid in seen:
            raise DuplicateToolError(tid)
        seen.add(tid)
    return batch


def _check_relevance(value: float | None, semantic: bool) -> float | None:
    if value is None:
        return None
    if not semantic:
        raise ValueError("weak_relevance needs semantic search (InMemoryIndex(semantic=True))")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"weak_relevance must be between 0 and 1, got {value}")
    return value


def _check_partition(partition: str | None) -> str | None:
    if partition is not None and (not isinstance(partition, str) or not partition):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"a partition is a non-empty string or None, got {partition!r}")
    return partition


def _normalise_tag(tag: str) -> str:
    return re.sub(r"\s+", "-", tag.strip().lower())


def _version_key(version: str | None) -> tuple[int, tuple[tuple[int, int | str], ...]]:
    # Unversioned sorts oldest; numeric parts compare as numbers ("1.10" > "1.9").
    if version is None:
        return (0, ())
    pieces = version.replace("-", ".").replace("+", ".").split(".")
    return (1, tuple((1, int(p)) if p.isdigit() else (0, p) for p in pieces))


class InMemoryIndex:
    """Thread-safe in-memory tool index with BM25F search.

    Search ranks tools with a BM25F lexical model over identifier-aware tokens
    (``list_issues``, ``getApiOverview``, ``kebab-case``, ``dotted.names``), Snowball
    stemming and per-field weights and length normalisation (name, title, description,
    parameter names, parameter descriptions, tags, namespace, namespace description,
    name word pairs), a bonus for covering more of the query, and typo and abbreviation
    tolerance against the index vocabulary. Registration is incremental: adding a tool
    appends to its terms' postings; collection statistics are refreshed lazily by the
    next query.

    A query with no searchable word (empty, whitespace, punctuation or only stopwords
    such as "the of and") returns no hits (``[]``); use :meth:`list_tools` to enumerate.
    Search never leaves out a match for being weak: with ``weak_relevance`` (semantic search)
    a weak one is marked (``SearchHit.weak``), and the caller decides.

    A tool may be registered in a *partition* (an opaque name, such as the owner of a private
    tool): it counts in none of the statistics search ranks with (so it changes nothing of any
    other search's results, scores included), and only a search naming its partition finds it,
    scored with the statistics of the public tools. Lookups, suggestions, listings and namespace
    counts given ``partitions`` read the public tools and those partitions' alone, so nothing in
    another partition is resolved, suggested, counted or paged; without it they read every tool.
    Events tell of every tool.

    All methods are thread-safe (one re-entrant lock; searches run under it too).
    See ``docs/toolindex.md`` for the search model and its measured quality.
    """

    def __init__(
        self,
        *,
        search_params: SearchParams | None = None,
        semantic: bool | Embedder = False,
        weak_relevance: float | None = None,
    ) -> None:
        """Create an empty index.

        Args:
            search_params: Ranking parameters; the defaults are tuned on real catalogs and
                suit most uses.
            semantic: ``True`` adds the semantic signal with the default model (the
                ``toolindex[semantic]`` extra, loaded by the first search, which embeds the tools
                registered before it; later ones are embedded at registration): every query is
                ranked on lexical and dense evidence fused, and hits carry a ``relevance``. An
                :class:`~toolindex.Embedder` uses that model instead.
                ``False`` (the default) keeps lexical search only.
            weak_relevance: Semantic search only: a hit whose ``relevance`` is below this is
                marked weak (``SearchHit.weak``) and returned all the same; ``None`` marks none.
                :data:`~toolindex.DEFAULT_WEAK_RELEVANCE` is measured for the default model
                (``docs/toolindex.md``).

        Raises:
            SemanticUnavailableError: If ``semantic=True`` and the extra is not installed.
            ValueError: If ``weak_relevance`` is given without the semantic signal, or is not in [0, 1].
        """
        embedder: Embedder | None
        if semantic is True:
            embedder = PackageEmbedder()
        elif semantic is False:
            embedder = None
        else:
            embedder = semantic
        self._lock = threading.RLock()
        # id (ns:name or ns:name:version) -> tool
        self._tools: dict[str, Tool] = {}
        self._backends: dict[str, list[BackendRef]] = {}
        # ns:name -> ids of every version of it
        self._by_key: dict[str, list[str]] = {}
        # bare name -> set of ns:name keys
        self._by_name: dict[str, set[str]] = {}
        # namespace -> ids of its tools
        self._by_ns: dict[str, set[str]] = {}
        # id -> one-line summary, computed once (search returns it with every hit)
        self._summaries: dict[str, str] = {}
        self._version = 0
        self._subscribers: dict[int, ChangeCallback] = {}
        self._next_sub = 0
        self._engine = SearchEngine(search_params, embedder)
        self.weak_relevance = _check_relevance(weak_relevance, embedder is not None)
        # namespace -> description (search metadata, e.g. an MCP server's instructions)
        self._ns_text: dict[str, str] = {}
        # the partition of the tools registered in one (the others are public)
        self._partitions = PartitionMap()

    # -- mutation -----------------------------------------------------------------

    def register(self, tool: Tool, backend: BackendRef | Sequence[BackendRef], *, partition: str | None = None) -> None:
        """Add a tool, or update a registered one and add backends to it.

        Args:
            tool: The tool.
            backend: One backend reference or several.
            partition: The partition the tool belongs to (see the class docstring); ``None`` for
                the public catalog.

        Raises:
            InvalidToolError: If the tool is invalid (raised when building the ``Tool``).
            ValueError: If ``partition`` is an empty string.
        """
        self.register_many([(tool, backend)], partition=partition)

    def register_many(
        self, items: Iterable[tuple[Tool, BackendRef | Sequence[BackendRef]]], *, partition: str | None = None
    ) -> None:
        """Register a batch atomically: all of it or none of it.

        Registering an id that exists replaces the tool's definition and adds the new backend
        references to its existing ones (an ``updated`` event); new ids give a ``registered``
        event. Both events follow the whole batch. Items are checked before anything changes;
        should anything fail later (say ``MemoryError`` half-way through a huge batch), the
        part already applied is rolled back before the error propagates.

        Args:
            items: Pairs of tool and backend reference(s).
            partition: The partition the batch's tools belong to from now on (a registered tool
                moves to it); ``None`` for the public catalog.

        Raises:
            InvalidToolError: If an item is not a ``(Tool, BackendRef | [BackendRef, ...])`` pair
                or has no backend; names the item. Nothing is registered.
            DuplicateToolError: If one id appears twice in the batch. Nothing is registered.
            ValueError: If ``partition`` is an empty string. Nothing is registered.
        """
        _check_partition(partition)
        batch = _checked_batch(items)
        if not batch:
            return
        # Embedding is the slow part of a semantic registration and needs no index state: it
        # runs before the lock, so searches go on meanwhile.
        vectors = self._engine.embed_tools([tool for tool, _ in batch])
        with self._lock:
            # In chunks, so the temporary token tables of a huge batch never all exist at once.
            # (prepare_many tokenises before the lock, the whole batch at once.)
            chunks = (batch[start : start + _CHUNK] for start in range(0, len(batch), _CHUNK))
            ready = (
                [_Ready(tool, refs, self._ns_text.get(tool.namespace), None, tool.summary, 0) for tool, refs in chunk]
                for chunk in chunks
            )
            self._register_ready(ready, len(batch), vectors, partition)

    def prepare_many(
        self, items: Iterable[tuple[Tool, BackendRef | Sequence[BackendRef]]], *, partition: str | None = None
    ) -> PreparedBatch:
        """Check and tokenise a batch for :meth:`register_prepared`; the index does not change.

        This is the CPU work of :meth:`register_many` that needs no index state (tokenising each
        tool's text, its summary, its semantic vectors): the lock is taken only to read the
        namespace descriptions and the definitions the batch replaces, so another thread (an
        event loop) goes on searching meanwhile. The batch is registered later by
        :meth:`register_prepared`, whole or in the parts of :meth:`PreparedBatch.split`.

        Raises:
            InvalidToolError, DuplicateToolError, ValueError: As :meth:`register_many`, and
                before anything is tokenised.
        """
        _check_partition(partition)
        batch = _checked_batch(items)
        with self._lock:
            texts = {ns: self._ns_text.get(ns) for ns in {tool.namespace for tool, _ in batch}}
            olds = [self._tools.get(tool.id) for tool, _ in batch]
        ready = [
            _Ready(
                tool,
                refs,
                texts[tool.namespace],
                document_fields(tool, texts[tool.namespace]),
                tool.summary,
                indexing_cost(tool) + (indexing_cost(old) if old is not None else 0),
            )
            for (tool, refs), old in zip(batch, olds, strict=True)
        ]
        # Embedding is the slow part of a semantic registration and needs no index state either.
        vectors = self._engine.embed_tools([tool for tool, _ in batch]) if batch else None
        return PreparedBatch(self, ready, vectors, partition)

    def register_prepared(self, batch: PreparedBatch) -> None:
        """Register a batch :meth:`prepare_many` made, atomically: as :meth:`register_many` does.

        A tool whose namespace description changed since it was prepared is tokenised again
        (under the lock).

        Raises:
            ValueError: If ``batch`` was prepared by another index.
        """
        if batch._owner is not self:  # pyright: ignore[reportPrivateUsage]
            raise ValueError("the batch was prepared by another index")
        items = batch._items  # pyright: ignore[reportPrivateUsage]
        vectors = batch._vectors  # pyright: ignore[reportPrivateUsage]
        if not items:
            return
        with self._lock:
            chunks = (items[start : start + _CHUNK] for start in range(0, len(items), _CHUNK))
            self._register_ready(chunks, len(items), vectors, batch.partition)

    def _register_ready(
        self, chunks: Iterable[list[_Ready]], size: int, vectors: FloatArray | None, partition: str | None
    ) -> None:
        # Under the lock: register the chunks of a batch of ``size`` tools, all or (rolled back) none.
        ids: list[str] = []
        with collector_paused(size >= _GC_PAUSE_BATCH):
            new_ids: list[str] = []
            replaced: dict[str, _Replaced] = {}
            try:
                start = 0
                for chunk in chunks:
                    end = start + len(chunk)
                    chunk_vectors = vectors[start:end] if vectors is not None else None
                    self._register_chunk(chunk, new_ids, replaced, chunk_vectors, partition)
                    ids.extend(r.tool.id for r in chunk)
                    start = end
            except BaseException:
                self._roll_back(new_ids, replaced)
                raise
            if new_ids:
                self._emit("registered", new_ids)
            if replaced:
                self._emit("updated", [tid for tid in ids if tid in replaced])

    def _register_chunk(
        self,
        chunk: list[_Ready],
        new_ids: list[str],
        replaced: dict[str, _Replaced],
        vectors: FloatArray | None = None,
        partition: str | None = None,
    ) -> None:
        # The work that could fail (tokenising again, for a namespace description changed since
        # the batch was prepared) comes before any change.
        texts = [self._ns_text.get(r.tool.namespace) for r in chunk]
        prepared = [
            r.prepared if r.prepared is not None and r.ns_text == text else document_fields(r.tool, text)
            for r, text in zip(chunk, texts, strict=True)
        ]
        ids = [r.tool.id for r in chunk]
        for r, tid in zip(chunk, ids, strict=True):
            tool, refs, summary = r.tool, r.refs, r.summary
            old = self._tools.get(tid)
            if old is None:
                new_ids.append(tid)
                self._by_key.setdefault(tool.key, []).append(tid)
                self._by_name.setdefault(tool.name, set()).add(tool.key)
                self._by_ns.setdefault(tool.namespace, set()).add(tid)
                self._backends[tid] = list(refs)
            else:
                have = self._backends[tid]
                replaced[tid] = (old, list(have), self._summaries[tid], self._partitions.get(tid))
                have.extend(r for r in refs if r not in have)
            self._tools[tid] = tool
            self._summaries[tid] = summary
            self._partitions.assign(tid, tool.namespace, partition)
        self._engine.add_many(
            [(tid, r.tool, text, doc) for r, tid, text, doc in zip(chunk, ids, texts, prepared, strict=True)],
            vectors,
            partition=partition,
        )

    def _roll_back(self, new_ids: list[str], replaced: dict[str, _Replaced]) -> None:
        # Undo a batch that failed half-way: drop what it added, restore what it replaced.
        for tid in new_ids:
            self._remove(tid)
        for tid, (tool, refs, summary, partition) in replaced.items():
            self._tools[tid] = tool
            self._backends[tid] = refs
            self._summaries[tid] = summary
            self._partitions.assign(tid, tool.namespace, partition)
            self._engine.add(tid, tool, self._ns_text.get(tool.namespace), partition=partition)

    def unregister(self, tool_id: str) -> None:
        """Remove a tool and all its backends.

        Args:
            tool_id: Any id form :meth:`get` accepts; without a version, every version goes.

        Raises:
            ToolNotFoundError: If no tool matches.
        """
        with self._lock:
            ids = self._resolve_all_versions(tool_id)
            for tid in ids:
                self._remove(tid)
            self._emit("unregistered", ids)

    def unregister_backend(self, backend: BackendRef) -> list[str]:
        """Detach a backend from every tool; tools left without a backend are removed.

        Args:
            backend: The reference to detach (compared by value).

        Returns:
            Ids of the tools removed. Subscribers get an ``unregistered`` event for those and an
            ``updated`` event for tools that keep other backends.
        """
        with self._lock:
            removed: list[str] = []
            detached: list[str] = []
            for tid, refs in list(self._backends.items()):
                if backend in refs:
                    refs.remove(backend)
                    if not refs:
                        self._remove(tid)
                        removed.append(tid)
                    else:
                        detached.append(tid)
            if removed:
                self._emit("unregistered", removed)
            # A tool that lost one of several backends changed too: caches of backend choice must hear of it.
            if detached:
                self._emit("updated", detached)
            return removed

    def describe_namespace(self, namespace: str, description: str | None) -> None:
        """Attach a description to a namespace (or clear it with ``None``).

        The description says what the namespace's tools are for as a whole (an MCP
        server's ``instructions`` or registry description, say). It is shown by
        :meth:`namespaces` and searched as a low-weight field of every tool in the
        namespace, so a query about the service finds its tools even when a tool's own
        description does not name it. It may be set before the namespace has tools.

        Re-indexes the namespace's tools; if it has any, subscribers get one ``updated``
        event listing them.

        Args:
            namespace: The namespace (need not have tools yet).
            description: Free text, or ``None`` (or blank) to remove it.

        Raises:
            InvalidToolIDError: If ``namespace`` is not a valid namespace.
        """
        validate_namespace(namespace)
        text = description.strip() if description else ""
        with self._lock:
            if self._ns_text.get(namespace, "") == text:
                return
            ids = sorted(self._by_ns.get(namespace, ()))
            entries = [(tid, self._tools[tid], text or None) for tid in ids]
            prepared = [document_fields(tool, ns_text) for _, tool, ns_text in entries]  # may fail: before changes
            if text:
                self._ns_text[namespace] = text
            else:
                self._ns_text.pop(namespace, None)
            # Each tool stays in its partition: one batch per partition.
            by_partition: dict[str | None, list[tuple[str, Tool, str | None, Prepared]]] = {}
            for e, doc in zip(entries, prepared, strict=True):
                by_partition.setdefault(self._partitions.get(e[0]), []).append((*e, doc))
            for partition, batch in by_partition.items():
                self._engine.add_many(batch, partition=partition)
            if ids:
                self._emit("updated", ids)

    def _remove(self, tid: str) -> None:
        tool = self._tools.pop(tid)
        del self._backends[tid]
        del self._summaries[tid]
        self._partitions.drop(tid)
        in_ns = self._by_ns[tool.namespace]
        in_ns.discard(tid)
        if not in_ns:
            del self._by_ns[tool.namespace]
        versions = self._by_key[tool.key]
        versions.remove(tid)
        if not versions:
            del self._by_key[tool.key]
            keys = self._by_name[tool.name]
            keys.discard(tool.key)
            if not keys:
                del self._by_name[tool.name]
        self._engine.remove(tid)

    # -- lookup -------------------------------------------------------------------

    def get(self, tool_id: str, *, partitions: Collection[str] | None = None) -> Tool:
        """Resolve an id to a tool.

        Args:
            tool_id: ``ns:name``, ``ns:name:version`` or a bare ``name``.
            partitions: Resolve among the public tools and those of these partitions only (a
                tool of another partition is not there: not found, no candidate, no suggestion);
                ``None`` (the default) resolves among every tool.

        Returns:
            The tool; the latest version when none is given.

        Raises:
            InvalidToolIDError: If the id is malformed.
            AmbiguousToolIDError: If a bare name exists in several namespaces.
            ToolNotFoundError: If nothing matches (with close suggestions).
            ValueError: If ``partitions`` is a string.
        """
        seen = check_seen(partitions)
        with self._lock:
            return self._tools[self._resolve(tool_id, seen)]

    def resolve(self, tool_id: str, *, partitions: Collection[str] | None = None) -> str:
        """The fully qualified id :meth:`get` would return a tool for (with the same ``partitions``).

        Raises:
            InvalidToolIDError: If the id is malformed.
            AmbiguousToolIDError: If a bare name exists in several namespaces.
            ToolNotFoundError: If nothing matches.
            ValueError: If ``partitions`` is a string.
        """
        seen = check_seen(partitions)
        with self._lock:
            return self._resolve(tool_id, seen)

    def backends(self, tool_id: str) -> list[BackendRef]:
        """The backends of a tool, in registration order.

        Raises:
            ToolNotFoundError: If no tool matches.
        """
        with self._lock:
            return list(self._backends[self._resolve(tool_id)])

    def _versions(self, key: str, seen: Seen) -> list[str]:
        """The ids of a ``ns:name`` that a reader of ``seen`` sees."""
        versions = self._by_key.get(key, [])
        if seen is None or not self._partitions:
            return versions
        return [v for v in versions if self._partitions.sees(v, seen)]

    def _resolve(self, tool_id: str, seen: Seen = None) -> str:
        tid = ToolID.parse(tool_id)
        if tid.namespace is None:
            keys = [k for k in self._by_name.get(tid.name, ()) if self._versions(k, seen)]
            if not keys:
                raise ToolNotFoundError(tool_id, self._suggest(tool_id, seen=seen))
            if len(keys) > 1:
                raise AmbiguousToolIDError(tid.name, sorted(keys))
            key = keys[0]
        else:
            key = tid.key
        versions = self._versions(key, seen)
        if not versions:
            raise ToolNotFoundError(tool_id, self._suggest(tool_id, seen=seen))
        if tid.version is not None:
            full = f"{key}:{tid.version}"
            if full not in versions:
                raise ToolNotFoundError(tool_id, sorted(versions))
            return full
        return max(versions, key=lambda i: _version_key(self._tools[i].version))

    def _resolve_all_versions(self, tool_id: str) -> list[str]:
        tid = ToolID.parse(tool_id)
        if tid.version is not None:
            return [self._resolve(tool_id)]
        latest = self._resolve(tool_id)
        return list(self._by_key[self._tools[latest].key])

    def _suggest(
        self, tool_id: str, limit: int = 3, seen: Seen = None, namespaces: frozenset[str] | None = None
    ) -> list[str]:
        if namespaces is None and (seen is None or not self._partitions):
            choices = list(self._by_key)
        else:
            choices = [
                k
                for k in self._by_key
                if (namespaces is None or k.split(":", 1)[0] in namespaces) and self._versions(k, seen)
            ]
        if not choices:
            return []
        # Fuzzy matching costs time in proportion to the id's length: an id past the longest
        # valid one is compared by its head only.
        tool_id = tool_id[:MAX_ID_CHARS]
        # Imported here: only a lookup of an unknown id needs it (about 3 MB a server need not hold).
        from rapidfuzz import process as fuzz_process

        # Compare against both full keys and bare names so "get_wether" finds "weather:get_weather".
        scored: dict[str, float] = {}
        for key, score, _ in fuzz_process.extract(tool_id, choices, limit=limit * 2, score_cutoff=60):
            scored[key] = max(scored.get(key, 0.0), score)
        bare = tool_id.rsplit(":", 1)[-1]
        names = {k.split(":", 1)[1]: k for k in choices}
        for name, score, _ in fuzz_process.extract(bare, list(names), limit=limit * 2, score_cutoff=60):
            k = names[name]
            scored[k] = max(scored.get(k, 0.0), score)
        return [k for k, _ in sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]

    def suggest(
        self,
        tool_id: str,
        limit: int = 3,
        *,
        namespaces: Sequence[str] | None = None,
        partitions: Collection[str] | None = None,
    ) -> list[str]:
        """Registered ids that look close to ``tool_id`` (for "did you mean" messages).

        Args:
            tool_id: The id that was not found (only its first 322 characters, the length of
                the longest valid id, are compared).
            limit: Maximum number of suggestions.
            namespaces: Only ids of these namespaces are compared (``None``: every namespace).
            partitions: Only the public tools and those of these partitions are compared, so a
                closer one elsewhere takes no place (``None``: every tool).

        Returns:
            Up to ``limit`` ids, best first.

        Raises:
            ValueError: If ``partitions`` is a string.
        """
        seen = check_seen(partitions)
        among = frozenset(namespaces) if namespaces is not None else None
        with self._lock:
            return self._suggest(tool_id, limit, seen, among)

    # -- search -------------------------------------------------------------------

    @property
    def semantic(self) -> bool:
        """Whether search fuses a semantic signal (and hits carry a ``relevance``)."""
        return self._engine.embedder is not None

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        namespaces: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        partitions: Collection[str] = (),
    ) -> list[SearchHit]:
        """Rank tools for a free-text query.

        A query costs bounded work whatever its size: only its first 8,192 characters are
        read, and of those its first 256 searchable words (stopwords do not count). Real
        queries are far shorter (the longest of the evaluation sets has 209 searchable words).
        A tool the query names exactly (its whole text is the tool's name or ``namespace:name``,
        or it contains such an identifier, e.g. ``list_issues``) always ranks first.

        Args:
            query: Free text or identifiers. A query with no searchable word (empty,
                whitespace, punctuation, only stopwords) returns ``[]``.
            limit: Maximum number of hits (must be >= 1).
            namespaces: Only tools in these namespaces.
            tags: Only tools carrying all of these tags (normalised like ``Tool.tags``).
            partitions: The partitions whose tools are searched too (public tools always are);
                what the others hold changes nothing of the results.

        Returns:
            Hits, best first; with ``weak_relevance``, those below it marked ``weak``.

        Raises:
            ValueError: If ``limit`` is below 1, or ``partitions`` is a string.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        parts = check_seen(partitions) or frozenset()
        weak_below = self.weak_relevance
        query = query[:MAX_QUERY_CHARS]
        if not query or not query.strip():
            return []
        ns = frozenset(namespaces) if namespaces is not None else None
        tg = frozenset(_normalise_tag(t) for t in tags) if tags else None
        with self._lock:
            ranked = self._engine.search(query, limit, ns, tg, parts)
            hits = [
                SearchHit(
                    id=r.tid,
                    namespace=t.namespace,
                    name=t.name,
                    summary=self._summaries[r.tid],
                    score=round(r.score, 6),
                    relevance=None if r.relevance is None else round(r.relevance, 4),
                    weak=weak_below is not None and r.relevance is not None and r.relevance < weak_below,
                )
                for r in ranked
                for t in (self._tools[r.tid],)
            ]
        return hits

    # -- listing ------------------------------------------------------------------

    def namespaces(self, *, partitions: Collection[str] | None = None) -> list[NamespaceInfo]:
        """The namespaces with their tool counts, sorted by name.

        Args:
            partitions: Count the public tools and those of these partitions only (a namespace
                with none of those is left out); ``None`` (the default) counts every tool.

        Raises:
            ValueError: If ``partitions`` is a string.
        """
        seen = check_seen(partitions)
        with self._lock:
            counted = ((n, self._partitions.count(n, len(ids), seen)) for n, ids in sorted(self._by_ns.items()))
            return [
                NamespaceInfo(name=n, tool_count=count, description=self._ns_text.get(n))
                for n, count in counted
                if count
            ]

    def list_tools(
        self,
        *,
        cursor: str | None = None,
        limit: int = 100,
        namespace: str | None = None,
        namespaces: Sequence[str] | None = None,
        partitions: Collection[str] | None = None,
    ) -> ToolPage:
        """A page of tools in id order.

        Args:
            cursor: ``next_cursor`` of the previous page, or ``None`` for the first page.
            limit: Page size (1-1000).
            namespace: Only tools of this namespace.
            namespaces: Only tools of these namespaces (combined with ``namespace``: both must hold).
            partitions: Only the public tools and those of these partitions, as if no other were
                registered (pages stay full, no cursor names another); ``None`` lists every tool.

        Returns:
            The page; ``next_cursor`` is ``None`` on the last one.

        Raises:
            ValueError: If the cursor is not one this index produced, ``limit`` is out of range,
                or ``partitions`` is a string.
        """
        seen = check_seen(partitions)
        if not 1 <= limit <= 1000:
            raise ValueError(f"limit must be between 1 and 1000, got {limit}")
        after = ""
        if cursor is not None:
            if len(cursor) > _MAX_CURSOR_CHARS:
                raise ValueError(f"invalid cursor {clip(cursor)!r}: longer than any cursor list_tools makes")
            try:
                raw = base64.b64decode(cursor.encode(), altchars=b"-_", validate=True).decode()
            except (ValueError, UnicodeDecodeError) as e:
                raise ValueError(f"invalid cursor {clip(cursor)!r}") from e
            if not raw.startswith(_CURSOR_PREFIX):
                raise ValueError(f"invalid cursor {clip(cursor)!r}: not made by list_tools")
            after = raw.removeprefix(_CURSOR_PREFIX)
        among = frozenset(namespaces) if namespaces is not None else None
        with self._lock:
            sees = self._partitions.sees
            ids = sorted(
                tid
                for tid, t in self._tools.items()
                if tid > after
                and (namespace is None or t.namespace == namespace)
                and (among is None or t.namespace in among)
                and sees(tid, seen)
            )
            page = ids[:limit]
            tools = tuple(self._tools[i] for i in page)
        nxt = base64.urlsafe_b64encode((_CURSOR_PREFIX + page[-1]).encode()).decode() if len(ids) > limit else None
        return ToolPage(tools=tools, next_cursor=nxt)

    # -- events -------------------------------------------------------------------

    def subscribe(self, callback: ChangeCallback) -> Unsubscribe:
        """Receive a :class:`ChangeEvent` after each mutation.

        Args:
            callback: Called synchronously, under the index lock, so it must be quick and
                must not mutate the index (schedule work instead).

        Returns:
            A function that unsubscribes; calling it again is harmless.
        """
        with self._lock:
            sid = self._next_sub
            self._next_sub += 1
            self._subscribers[sid] = callback

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers.pop(sid, None)

        return unsubscribe

    def _emit(self, kind: ChangeKind, ids: list[str]) -> None:
        self._version += 1
        event = ChangeEvent(version=self._version, kind=kind, tool_ids=tuple(ids))
        for cb in list(self._subscribers.values()):
            try:
                cb(event)
            except Exception:  # a subscriber's bug must not break the index
                _log.exception("index.subscriber_failed", version=event.version, kind=kind)

    @property
    def version(self) -> int:
        """Current version: 0 when new, +1 for every mutation."""
        return self._version

    def __len__(self) -> int:
        with self._lock:
            return len(self._tools)

    def __contains__(self, tool_id: object) -> bool:
        if not isinstance(tool_id, str):
            return False
        try:
            self.resolve(tool_id)
        except (LookupError, ValueError):
            return False
        return True
