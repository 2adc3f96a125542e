"""Which partition each partitioned tool is in, and what a set of partitions sees of the catalog.

A tool registered without a partition is public: every reader sees it. One registered in a
partition is seen by a reader that names the partition, or by one that names none at all
(``None``: a plain user of the index, who sees every tool). :class:`PartitionMap` answers both
per tool and, for namespace counts, per namespace without a pass over its tools.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection

from toolindex._limits import clip

__all__ = ["PartitionMap", "Seen", "check_seen"]

Seen = frozenset[str] | None
"""The partitions a reader sees besides the public tools; ``None``: every tool, partitioned or not."""


def check_seen(partitions: Collection[str] | None) -> Seen:
    """``partitions`` as a reader's :data:`Seen`.

    Raises:
        ValueError: If ``partitions`` is a string (one name would be read as one-letter partitions).
    """
    if partitions is None:
        return None
    if isinstance(partitions, str):
        raise ValueError(f"partitions is a collection of partition names, got the string {clip(partitions)!r}")
    return frozenset(partitions)


class PartitionMap:
    """The partition of every partitioned tool, with their counts by namespace (not locked: the index's lock)."""

    __slots__ = ("_by_ns", "_of", "_totals")

    def __init__(self) -> None:
        self._of: dict[str, tuple[str, str]] = {}  # id -> (namespace, partition)
        self._by_ns: dict[str, Counter[str]] = {}  # namespace -> partition -> tools
        self._totals: Counter[str] = Counter()  # namespace -> partitioned tools

    def __bool__(self) -> bool:
        return bool(self._of)

    def get(self, tool_id: str) -> str | None:
        """The tool's partition; ``None`` when it is public (or not registered)."""
        hit = self._of.get(tool_id)
        return hit[1] if hit is not None else None

    def assign(self, tool_id: str, namespace: str, partition: str | None) -> None:
        """Put a registered tool in ``partition`` (``None``: make it public)."""
        self.drop(tool_id)
        if partition is not None:
            self._of[tool_id] = (namespace, partition)
            self._by_ns.setdefault(namespace, Counter())[partition] += 1
            self._totals[namespace] += 1

    def drop(self, tool_id: str) -> None:
        """Forget a tool (removed, or made public)."""
        hit = self._of.pop(tool_id, None)
        if hit is None:
            return
        namespace, partition = hit
        counts = self._by_ns[namespace]
        counts[partition] -= 1
        self._totals[namespace] -= 1
        if not counts[partition]:
            del counts[partition]
            if not counts:
                del self._by_ns[namespace], self._totals[namespace]

    def sees(self, tool_id: str, seen: Seen) -> bool:
        """Whether a reader of ``seen`` sees the tool."""
        if seen is None:
            return True
        hit = self._of.get(tool_id)
        return hit is None or hit[1] in seen

    def count(self, namespace: str, tools: int, seen: Seen) -> int:
        """How many of a namespace's ``tools`` a reader of ``seen`` sees (in the partitions it names)."""
        counts = self._by_ns.get(namespace)
        if seen is None or counts is None:
            return tools
        return tools - self._totals[namespace] + sum(counts[p] for p in seen if p in counts)
