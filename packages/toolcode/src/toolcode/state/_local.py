"""The embedded state stores: :class:`SQLiteStateStore` (the default, a file) and :class:`MemoryStateStore`."""

from __future__ import annotations

import fcntl
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread

from toolcode.exceptions import StateConflictError, StateUnavailableError
from toolcode.state._protocol import (
    ABSENT,
    ANY,
    Expect,
    LogEntry,
    Record,
    RecordInfo,
    Release,
    check_key,
    check_limit,
    check_record,
    check_ttl,
)

__all__ = ["MemoryStateStore", "SQLiteStateStore"]

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    version INTEGER NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    expires REAL,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    at REAL NOT NULL,
    value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS log_kind ON log (kind, seq);
CREATE TABLE IF NOT EXISTS versions (id INTEGER PRIMARY KEY CHECK (id = 0), last INTEGER NOT NULL);
INSERT OR IGNORE INTO versions (id, last) SELECT 0, COALESCE(MAX(version), 0) FROM records;
"""
# ``versions.last``: the last version given to any record. Every write takes the next one, so a
# record made again (after a delete or its expiry) never takes a version it had: a reader of the
# old one cannot act on the new one with it. (A file from before this table starts from the
# highest version of its live records.)
_LIVE = " AND (expires IS NULL OR expires > :now)"
_UPSERT = (
    "INSERT INTO records (kind, key, value, version, created, updated, expires)"
    " VALUES (:kind, :key, :value, :version, :now, :now, :expires)"
    " ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value, updated = excluded.updated,"
    " expires = excluded.expires, version = excluded.version,"
    " created = CASE WHEN records.expires IS NOT NULL AND records.expires <= :now THEN :now ELSE records.created END"
)
"""Write a record (new, expired or live) at the version taken for it."""
_NEXT_VERSION = "UPDATE versions SET last = last + 1 WHERE id = 0 RETURNING last"
_PURGE_EVERY = 256
"""Writes between two purges of expired records."""


class SQLiteStateStore:
    """State in one SQLite file: the embedded default.

    Every write is one transaction in WAL mode with ``synchronous=NORMAL``
    on a file opened by this process only through this object: a crash loses at most the
    transactions not yet checkpointed by the OS, never a committed record's consistency, and
    several processes may share the file (SQLite's own locking; a writer waits up to
    ``busy_timeout`` seconds). Calls run in a worker thread, one at a time.

    Args:
        path: The database file (a new one, and a new folder for it, are owner-only: 0600, 0700).
        busy_timeout: Seconds a write waits for another process's write lock.

    Raises:
        StateUnavailableError: If the file cannot be opened or is not a state database.
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = 5.0) -> None:
        self._path = Path(path)
        self._lock = threading.Lock()
        self._writes = 0
        try:
            if str(path) != ":memory:":
                # Owner-only: the database holds sessions, stored results and paused runs (SQLite
                # gives its -wal and -shm files the database file's mode).
                self._path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                os.close(os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600))
            conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as e:
            raise StateUnavailableError(self.name, f"cannot open the state database: {e}") from e
        self._conn: sqlite3.Connection | None = conn

    @property
    def name(self) -> str:
        """``"sqlite:<path>"``."""
        return f"sqlite:{self._path}"

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            if self._conn is None:
                raise StateUnavailableError(self.name, "the state store is closed")
            try:
                return fn(self._conn)
            except sqlite3.Error as e:
                raise StateUnavailableError(self.name, f"{type(e).__name__}: {e}") from e

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self._call, fn)

    async def get(self, kind: str, key: str) -> Record | None:
        """See :meth:`StateStore.get`."""
        check_record(kind, key)

        def body(conn: sqlite3.Connection) -> Record | None:
            row = conn.execute(
                "SELECT value, version, created, updated, expires FROM records WHERE kind = :kind AND key = :key"
                + _LIVE,
                {"kind": kind, "key": key, "now": time.time()},
            ).fetchone()
            if row is None:
                return None
            value, version, created, updated, expires = row
            return Record(kind, key, version, len(value), created, updated, expires, bytes(value))

        return await self._run(body)

    async def put(self, kind: str, key: str, value: bytes, *, ttl: float | None = None, expect: Expect = ANY) -> int:
        """See :meth:`StateStore.put`."""
        check_record(kind, key, expect)
        ttl = check_ttl(ttl)
        data = bytes(value)

        def body(conn: sqlite3.Connection) -> int:
            # One transaction: the next version, then the conditional write (a lost race rolls both back).
            now = time.time()
            args = {"kind": kind, "key": key, "value": data, "now": now, "expires": now + ttl if ttl else None}
            conn.execute("BEGIN IMMEDIATE")
            try:
                args["version"] = conn.execute(_NEXT_VERSION).fetchone()[0]
                if expect == ANY or expect == ABSENT:
                    guard = "" if expect == ANY else " WHERE records.expires IS NOT NULL AND records.expires <= :now"
                    row = conn.execute(_UPSERT + guard + " RETURNING version", args).fetchone()
                else:
                    row = conn.execute(
                        "UPDATE records SET value = :value, version = :version, updated = :now, expires = :expires"
                        " WHERE kind = :kind AND key = :key AND version = :expect" + _LIVE + " RETURNING version",
                        {**args, "expect": expect},
                    ).fetchone()
                if row is None:
                    found = conn.execute(
                        "SELECT version FROM records WHERE kind = :kind AND key = :key" + _LIVE, args
                    ).fetchone()
                    raise StateConflictError(kind, key, expect, int(found[0]) if found else ABSENT)
                self._writes += 1
                if self._writes % _PURGE_EVERY == 0:
                    conn.execute("DELETE FROM records WHERE expires IS NOT NULL AND expires <= ?", (now,))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return int(row[0])

        return await self._run(body)

    async def delete(self, kind: str, key: str, *, expect: Expect = ANY) -> bool:
        """See :meth:`StateStore.delete`."""
        check_record(kind, key, expect)
        versioned = "" if expect == ANY else " AND version = :expect"
        sql = "DELETE FROM records WHERE kind = :kind AND key = :key" + versioned + _LIVE

        def body(conn: sqlite3.Connection) -> bool:
            return conn.execute(sql, {"kind": kind, "key": key, "expect": expect, "now": time.time()}).rowcount > 0

        return await self._run(body)

    async def list(self, kind: str, *, prefix: str = "", limit: int = 1000) -> list[RecordInfo]:
        """See :meth:`StateStore.list`."""
        check_key("kind", kind)
        check_limit(limit)

        def body(conn: sqlite3.Connection) -> list[RecordInfo]:
            rows = conn.execute(
                "SELECT key, version, length(value), created, updated, expires FROM records"
                " WHERE kind = :kind AND key >= :low AND key < :high" + _LIVE + " ORDER BY key LIMIT :limit",
                {"kind": kind, "low": prefix, "high": prefix + "\U0010ffff", "now": time.time(), "limit": limit},
            ).fetchall()
            return [RecordInfo(kind, str(k), int(v), int(n), float(c), float(u), e) for k, v, n, c, u, e in rows]

        return await self._run(body)

    async def append(self, kind: str, value: bytes) -> int:
        """See :meth:`StateStore.append`."""
        check_key("kind", kind)
        data = bytes(value)

        def body(conn: sqlite3.Connection) -> int:
            cur = conn.execute("INSERT INTO log (kind, at, value) VALUES (?, ?, ?)", (kind, time.time(), data))
            return int(cur.lastrowid or 0)

        return await self._run(body)

    async def read_log(
        self, kind: str, *, after: int = 0, before: int | None = None, limit: int = 1000, newest_first: bool = False
    ) -> list[LogEntry]:
        """See :meth:`StateStore.read_log`: a range of the ``(kind, seq)`` index, walked either way."""
        check_key("kind", kind)
        check_limit(limit)
        upper = "" if before is None else " AND seq < :before"
        sql = f"SELECT seq, at, value FROM log WHERE kind = :kind AND seq > :after{upper} ORDER BY seq"
        sql += " DESC LIMIT :limit" if newest_first else " LIMIT :limit"

        def body(conn: sqlite3.Connection) -> list[LogEntry]:
            args = {"kind": kind, "after": after, "before": before, "limit": limit}
            rows = conn.execute(sql, args).fetchall()
            return [LogEntry(int(s), float(at), bytes(v)) for s, at, v in rows]

        return await self._run(body)

    async def try_lock(self, name: str, *, ttl: float) -> Release | None:
        """See :meth:`StateStore.try_lock`: an OS file lock beside the database.

        Held by this call until released; the OS releases it when the process ends, however it
        ends, so ``ttl`` is not needed (every holder of a SQLite store is on this machine).
        """
        check_key("name", name)
        check_ttl(ttl)
        folder = self._path.parent / (self._path.name + ".locks")
        path = folder / (hashlib.sha256(name.encode()).hexdigest()[:32] + ".lock")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            raise StateUnavailableError(self.name, f"cannot open a lock file: {e}") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError as e:
            os.close(fd)
            raise StateUnavailableError(self.name, f"cannot lock: {e}") from e
        done = False

        async def release() -> None:
            nonlocal done
            if not done:
                done = True
                os.close(fd)  # closing the descriptor drops its lock

        return release

    async def aclose(self) -> None:
        """Close the database; idempotent."""

        def close() -> None:
            with self._lock:
                conn, self._conn = self._conn, None
                if conn is not None:
                    conn.close()

        await anyio.to_thread.run_sync(close)


class MemoryStateStore(SQLiteStateStore):
    """State in this process only (``--no-state``): the same contract, gone when the process ends.

    An in-memory SQLite database (the same statements as the file, so the same semantics), called
    in place: nothing in it waits for a disk. Locks are held in this process.
    """

    def __init__(self) -> None:
        super().__init__(":memory:")
        self._locks: dict[str, tuple[object, float]] = {}

    @property
    def name(self) -> str:
        """``"memory"``."""
        return "memory"

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return self._call(fn)

    async def try_lock(self, name: str, *, ttl: float) -> Release | None:
        """See :meth:`StateStore.try_lock`."""
        check_key("name", name)
        ttl = check_ttl(ttl) or 0.0
        now = time.monotonic()
        token = object()
        with self._lock:
            held = self._locks.get(name)
            if held is not None and held[1] > now:
                return None
            self._locks[name] = (token, now + ttl)

        async def release() -> None:
            with self._lock:
                if self._locks.get(name, (None, 0.0))[0] is token:
                    del self._locks[name]

        return release

    async def aclose(self) -> None:
        """Nothing to release: the data goes with the object."""
