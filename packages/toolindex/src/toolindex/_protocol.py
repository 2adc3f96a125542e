"""The :class:`Index` seam."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Protocol, runtime_checkable

from toolindex._model import BackendRef, ChangeEvent, NamespaceInfo, SearchHit, Tool, ToolPage

__all__ = ["ChangeCallback", "Index", "Unsubscribe"]

ChangeCallback = Callable[[ChangeEvent], None]
"""Called with each change event, synchronously, after the change is visible."""
Unsubscribe = Callable[[], None]
"""Call to stop receiving events; calling it twice is harmless."""


@runtime_checkable
class Index(Protocol):
    """A catalog of tools that can be searched and resolved.

    Contract:
        - Concurrency: every method may be called from many threads and tasks at once.
          Methods are synchronous and do no I/O in the default implementation; a
          mutation is atomic (readers see all of it or none of it).
        - Ids: ``get`` accepts ``ns:name``, ``ns:name:version`` and a bare ``name``; a
          bare name resolves when exactly one namespace has it, a missing version
          resolves to the latest registered version (highest by version ordering,
          unversioned tools count as the oldest).
        - Errors: only :class:`~toolindex.exceptions.ToolIndexError` subclasses for bad
          ids and tool data; ``ValueError`` for out-of-range arguments (``limit``, ``cursor``).
        - Events: subscribers are called after each successful mutation with a
          :class:`ChangeEvent` whose ``version`` strictly increases; a callback that
          raises is logged and does not affect the mutation or other subscribers.
        - Ownership: tools are immutable values; the index keeps references to them.
        - Partitions: a tool registered with a ``partition`` (an opaque name; ``None`` is the
          public catalog) is found only by a search that names its partition, and changes nothing
          of what any other search returns (ids, order, scores, relevance): it counts in no
          statistic search ranks with, nor in the vocabulary that query words are corrected to.
          ``get``, ``namespaces`` and ``list_tools`` given ``partitions`` read the public tools and
          those partitions' alone, as if no other tool were registered (no candidate, suggestion,
          count, page entry or cursor comes from one); without it (``None``) they read every tool.
          Events tell of every tool.
    """

    def register(self, tool: Tool, backend: BackendRef | Sequence[BackendRef], *, partition: str | None = None) -> None:
        """Add a tool (in ``partition``), or add backends to (and update) an already registered tool."""
        ...

    def register_many(
        self, items: Iterable[tuple[Tool, BackendRef | Sequence[BackendRef]]], *, partition: str | None = None
    ) -> None:
        """Register a batch (in ``partition``) atomically: all of it or, on any error, none of it."""
        ...

    def unregister(self, tool_id: str) -> None:
        """Remove a tool (all its backends). Raises ``ToolNotFoundError`` if absent."""
        ...

    def unregister_backend(self, backend: BackendRef) -> list[str]:
        """Detach a backend from every tool; tools left with no backend are removed.

        Returns:
            Ids of the tools removed.
        """
        ...

    def get(self, tool_id: str, *, partitions: Collection[str] | None = None) -> Tool:
        """Resolve an id to a tool (see the contract for bare names, versions and partitions)."""
        ...

    def backends(self, tool_id: str) -> list[BackendRef]:
        """The backends of a tool, in registration order."""
        ...

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        namespaces: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        partitions: Collection[str] = (),
    ) -> list[SearchHit]:
        """Rank the public tools and those of ``partitions`` for a free-text query, best first, at most ``limit``."""
        ...

    def namespaces(self, *, partitions: Collection[str] | None = None) -> list[NamespaceInfo]:
        """The namespaces with their tool counts (of the public tools and ``partitions``'), sorted by name."""
        ...

    def list_tools(
        self,
        *,
        cursor: str | None = None,
        limit: int = 100,
        namespace: str | None = None,
        namespaces: Sequence[str] | None = None,
        partitions: Collection[str] | None = None,
    ) -> ToolPage:
        """A page of tools in id order (some namespaces, ``partitions`` only); ``next_cursor`` for more."""
        ...

    def subscribe(self, callback: ChangeCallback) -> Unsubscribe:
        """Receive change events; returns a function that unsubscribes."""
        ...

    @property
    def version(self) -> int:
        """Current version: 0 when empty and new, +1 for every mutation."""
        ...

    def __len__(self) -> int:
        """Number of registered tools (each version counts)."""
        ...
