"""Learned result shapes in the state store: they survive restarts and are shared by replicas."""

from __future__ import annotations

import json
from typing import Any

import anyio

from toolcode._data import as_dict
from toolcode.exceptions import StateConflictError
from toolcode.state import ABSENT, StateStore
from toolcode.state._protocol import keep_in_sync
from tooldocs import InMemoryStore, json_text
from toolindex.log import get_logger

__all__ = ["ShapeSync"]

_log = get_logger("toolcode.shapes")
_KIND, _KEY = "shapes", "learned"


class ShapeSync:
    """Keeps a docs store's learned shapes in the state store (one record, merged on write).

    Shapes only widen, so merging two replicas' shapes loses nothing and does not depend on
    the order: each save reads the stored shapes, merges them into this process's, and writes
    the union with a conditional write (retried when another replica wrote in between). Each
    shape names the tool definition it was learned from, and only shapes of the same
    definition merge (:meth:`tooldocs.InMemoryStore.restore_shapes`): a replica whose catalog
    still has a tool's old definition (a saved snippet its owner deleted, whose name another
    caller took) may write the old shape back, but no replica with the new one shows or keeps it.

    Args:
        docs: The docs store that learns shapes.
        state: Where they are kept.
    """

    def __init__(self, docs: InMemoryStore, state: StateStore) -> None:
        self._docs = docs
        self._state = state
        self._saved = -1

    async def load(self) -> int:
        """Merge the stored shapes into the docs store; returns how many tools' shapes changed."""
        rec = await self._state.get(_KIND, _KEY)
        if rec is None:
            return 0
        return self._docs.restore_shapes(_decode(rec.value))

    async def save(self) -> bool:
        """Store the shapes if they changed since the last save; ``False`` when the store refused."""
        if self._docs.shapes_version == self._saved:
            return True
        for _ in range(5):
            rec = await self._state.get(_KIND, _KEY)
            if rec is not None:
                self._docs.restore_shapes(_decode(rec.value))
            version = self._docs.shapes_version
            blob = json_text(self._docs.learned_shapes()).encode("utf-8", "surrogatepass")
            try:
                await self._state.put(_KIND, _KEY, blob, expect=rec.version if rec is not None else ABSENT)
            except StateConflictError:
                await anyio.sleep(0.05)
                continue
            self._saved = version
            return True
        return False

    async def keep_in_sync(self) -> None:
        """Save changes every two seconds until cancelled (a background task; store failures are logged)."""
        await keep_in_sync(self.save, _log, "shapes.save_failed")


def _decode(blob: bytes) -> dict[str, Any]:
    try:
        data = json.loads(blob)
    except ValueError:
        _log.warning("shapes.unreadable")
        return {}
    return as_dict(data) or {}
