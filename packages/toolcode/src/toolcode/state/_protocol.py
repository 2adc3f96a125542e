"""The :class:`StateStore` protocol: versioned records with TTLs, and append-only logs."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, runtime_checkable

import anyio

from toolcode.exceptions import ToolCodeError
from toolindex.log import Logger

__all__ = [
    "ABSENT",
    "ANY",
    "KEY_PATTERN",
    "Expect",
    "LogEntry",
    "Record",
    "RecordInfo",
    "Release",
    "StateStore",
    "check_key",
    "check_limit",
    "check_record",
    "check_ttl",
    "keep_in_sync",
]

ANY: Final = "any"
"""``expect=ANY``: write whatever the record's current version."""
ABSENT: Final = 0
"""``expect=ABSENT``: write only if the record does not exist (versions are >= 1)."""
Expect = int | Literal["any"]
"""What a conditional write expects of the record's current version: a version, ``ABSENT`` or ``ANY``."""
KEY_PATTERN: Final = re.compile(r"^[A-Za-z0-9_.:/@+=-]{1,512}\Z")
"""Kinds and keys: printable ASCII without spaces, 1 to 512 characters."""
Release = Callable[[], Coroutine[Any, Any, None]]
"""Gives a lock back (idempotent)."""


async def keep_in_sync(sync: Callable[[], Awaitable[object]], log: Logger, failed: str) -> None:
    """Call ``sync`` every two seconds until cancelled (other replicas' writes); log a store failure as ``failed``."""
    while True:
        await anyio.sleep(2.0)
        try:
            await sync()
        except ToolCodeError as e:
            log.warning(failed, error=str(e)[:300])


def check_key(what: str, value: object) -> str:
    """Return ``value`` if it is a valid kind or key, else raise ``ValueError`` naming ``what``."""
    if not isinstance(value, str) or not KEY_PATTERN.match(value):
        raise ValueError(f"{what} must match {KEY_PATTERN.pattern}, got {value!r:.80}")
    return value


def check_record(kind: object, key: object, expect: object = ANY) -> None:
    """:func:`check_key` of a record's kind and key; ``ValueError`` unless ``expect`` is a version, ABSENT or ANY."""
    check_key("kind", kind)
    check_key("key", key)
    if expect != ANY and (not isinstance(expect, int) or isinstance(expect, bool) or expect < 0):
        raise ValueError(f"expect must be a version (>= 0), ABSENT or ANY, got {expect!r}")


def check_ttl(ttl: object) -> float | None:
    """``ttl`` as a float (``None`` stays ``None``); ``ValueError`` unless it is a number of seconds ``> 0``."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
        raise ValueError(f"ttl must be a number of seconds > 0 or None, got {ttl!r}")
    return float(ttl)


def check_limit(limit: object) -> None:
    """Raise ``ValueError`` unless ``limit`` is an int ``>= 1``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be an int >= 1, got {limit!r}")


@dataclass(frozen=True, slots=True)
class RecordInfo:
    """A record without its value (what listing returns)."""

    kind: str
    key: str
    version: int
    """Greater on every write, and never one the key had before: a record made again (after a delete
    or its expiry) takes a version above any it had, so a conditional write or delete that read
    the old record cannot act on the new one."""
    size: int
    """Bytes of the value."""
    created: float
    """Unix time of the first write."""
    updated: float
    """Unix time of the last write."""
    expires: float | None
    """Unix time the record expires at, or ``None``."""


@dataclass(frozen=True, slots=True)
class Record(RecordInfo):
    """A record with its value."""

    value: bytes = b""


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One entry of an append-only log."""

    seq: int
    """Position in the log: increasing, never reused."""
    at: float
    """Unix time it was appended."""
    value: bytes


@runtime_checkable
class StateStore(Protocol):
    """Where sessions, saved snippets, learned result shapes and logs live.

    Records are addressed by ``kind`` (``"session"``, ``"snippet"``, ...) and ``key``, carry an
    opaque ``bytes`` value, a version and an optional expiry. Logs are append-only sequences of
    values per kind (the audit log).

    Contract:
        - Atomicity: each ``put``/``delete``/``append`` either happens whole or not at all; a
          crash mid-write loses nothing already committed and never leaves a partial value.
        - Concurrency: every method may be called from many tasks, processes and (for shared
          stores) machines at once. Writes to one record are linearisable; ``expect`` makes a
          write conditional on the version read (compare-and-set), so two writers never both
          succeed from the same version: the loser gets :class:`StateConflictError`.
        - TTL: a record written with ``ttl`` seconds is absent once they have passed (``get``
          returns ``None``, ``list`` skips it); each write sets the TTL anew (``None``: none).
        - Locks: ``try_lock`` gives mutual exclusion among everyone sharing the store, cheaply
          (a file lock for SQLite, ``SET NX`` for Redis); a crashed holder's lock does not
          outlive ``ttl``.
        - Errors: a store that cannot be reached, read or written raises
          :class:`StateUnavailableError` (nothing was written); invalid kinds, keys and options
          raise ``ValueError`` (see :func:`check_key`, :func:`check_record`, :func:`check_ttl`).
        - Ownership: ``aclose`` releases connections; idempotent.
    """

    @property
    def name(self) -> str:
        """What the store is, for messages and reports (``"sqlite:/path"``, ``"redis://host:port/0"``)."""
        ...

    async def get(self, kind: str, key: str) -> Record | None:
        """The record, or ``None`` when absent or expired."""
        ...

    async def put(self, kind: str, key: str, value: bytes, *, ttl: float | None = None, expect: Expect = ANY) -> int:
        """Write a record; returns its new version.

        Raises:
            StateConflictError: If ``expect`` is not the record's current version
                (``ABSENT``: the record exists).
        """
        ...

    async def delete(self, kind: str, key: str, *, expect: Expect = ANY) -> bool:
        """Delete a record; ``False`` when it was absent (or its version was not ``expect``)."""
        ...

    async def list(self, kind: str, *, prefix: str = "", limit: int = 1000) -> list[RecordInfo]:
        """Records of a kind whose key starts with ``prefix``, in key order, without values."""
        ...

    async def append(self, kind: str, value: bytes) -> int:
        """Append to the log of ``kind``; returns the entry's sequence number."""
        ...

    async def try_lock(self, name: str, *, ttl: float) -> Release | None:
        """Take the lock ``name`` if nobody holds it (never waits); ``None`` when it is held.

        A lock excludes every other holder sharing the store (tasks, processes, replicas) until
        released, or at most ``ttl`` seconds (a store whose locks die with their process may
        release sooner: when the holder's process ends). Returns the function that releases it.
        """
        ...

    async def read_log(
        self, kind: str, *, after: int = 0, before: int | None = None, limit: int = 1000, newest_first: bool = False
    ) -> list[LogEntry]:
        """Entries of the log of ``kind`` with ``after < seq < before`` (``before=None``: no upper bound).

        The oldest ``limit`` of them, oldest first; with ``newest_first``, the newest ``limit``, newest first.
        Either way the cost follows ``limit``, not the log's length (a log is read forwards with
        ``after=`` the last ``seq`` seen, backwards with ``before=`` it).
        """
        ...

    async def aclose(self) -> None:
        """Release connections; idempotent."""
        ...
