"""The state store contract, on every implementation: a real SQLite file, a real redis-server, memory."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from toolcode.exceptions import StateConflictError, StateUnavailableError
from toolcode.state import (
    ABSENT,
    MemoryStateStore,
    RedisStateStore,
    SQLiteStateStore,
    StateStore,
    open_state_store,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "redis", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    kind = request.param
    if kind == "sqlite":
        s: StateStore = SQLiteStateStore(tmp_path / "state.sqlite3")
    elif kind == "redis":
        s = RedisStateStore(request.getfixturevalue("redis_url"), prefix="t")
    else:
        s = MemoryStateStore()
    try:
        yield s
    finally:
        await s.aclose()


async def test_versions_and_conditional_writes(store: StateStore) -> None:
    assert await store.get("session", "a") is None
    v1 = await store.put("session", "a", b"one", expect=ABSENT)
    assert v1 >= 1
    with pytest.raises(StateConflictError) as ei:
        await store.put("session", "a", b"again", expect=ABSENT)
    assert ei.value.current == v1 and ei.value.code.value == "busy"
    v2 = await store.put("session", "a", b"two", expect=v1)
    assert v2 > v1
    with pytest.raises(StateConflictError):
        await store.put("session", "a", b"stale", expect=v1)
    rec = await store.get("session", "a")
    assert rec is not None and (rec.value, rec.version, rec.size) == (b"two", v2, 3)
    assert rec.created <= rec.updated and rec.expires is None
    v3 = await store.put("session", "a", b"three")  # ANY
    assert v3 > v2
    assert not await store.delete("session", "a", expect=v2)
    assert await store.delete("session", "a", expect=v3)
    assert await store.get("session", "a") is None
    assert not await store.delete("session", "a")
    assert await store.put("session", "a", b"new", expect=ABSENT) > v3


async def test_a_record_made_again_never_takes_a_version_it_had(store: StateStore) -> None:
    # A reader that read version v of a record must never find v again after the record was
    # deleted (or expired) and made anew: its conditional write or delete would act on the new
    # record (a paused run resumed twice, a snippet re-published that other replicas miss).
    seen: set[int] = set()
    for _ in range(5):
        v = await store.put("paused", "alice/run", b"x", expect=ABSENT)
        assert v not in seen
        seen.add(v)
        assert not await store.delete("paused", "alice/run", expect=v + 1)
        assert await store.delete("paused", "alice/run", expect=v)
    await store.put("paused", "alice/short", b"x", ttl=0.2)
    old = await store.get("paused", "alice/short")
    assert old is not None
    await anyio.sleep(0.5)  # past its TTL (a busy machine only waits longer)
    assert await store.put("paused", "alice/short", b"y", expect=ABSENT) != old.version


async def test_binary_values_round_trip(store: StateStore) -> None:
    blob = bytes(range(256)) * 4096  # 1 MiB with every byte value
    await store.put("blob", "x", blob)
    rec = await store.get("blob", "x")
    assert rec is not None and rec.value == blob and rec.size == len(blob)


async def test_ttl_expires_records(store: StateStore) -> None:
    await store.put("session", "short", b"x", ttl=0.3)
    await store.put("session", "long", b"y", ttl=60)
    # Read back before its TTL: the long record (the short one may be gone already on a busy machine).
    rec = await store.get("session", "long")
    assert rec is not None and rec.expires is not None
    await anyio.sleep(0.6)  # past the short TTL (a busy machine only waits longer)
    assert await store.get("session", "short") is None
    assert [r.key for r in await store.list("session")] == ["long"]
    # An expired record is absent for conditional writes too.
    assert await store.put("session", "short", b"z", expect=ABSENT) >= 1
    # A write without a TTL removes the old one.
    await store.put("session", "long", b"y2")
    rec = await store.get("session", "long")
    assert rec is not None and rec.expires is None


async def test_listing_by_kind_and_prefix(store: StateStore) -> None:
    for key in ("alice/s1", "alice/s2", "bob/s1", "alicia/x"):
        await store.put("session", key, key.encode())
    await store.put("snippet", "alice/s1", b"other kind")
    infos = await store.list("session", prefix="alice/")
    assert [(i.key, i.size) for i in infos] == [("alice/s1", 8), ("alice/s2", 8)]
    assert [i.key for i in await store.list("session")] == ["alice/s1", "alice/s2", "alicia/x", "bob/s1"]
    assert len(await store.list("session", limit=2)) == 2


async def test_logs_append_in_order(store: StateStore) -> None:
    seqs = [await store.append("audit", f"entry {i}".encode()) for i in range(5)]
    await store.append("other", b"x")
    assert seqs == sorted(seqs) and len(set(seqs)) == 5
    entries = await store.read_log("audit")
    assert [e.value for e in entries] == [f"entry {i}".encode() for i in range(5)]
    assert [e.value for e in await store.read_log("audit", after=seqs[2])] == [b"entry 3", b"entry 4"]
    assert len(await store.read_log("audit", limit=2)) == 2
    # Backwards: the newest first, from the end or from before a seq, within the same bounds.
    back = await store.read_log("audit", limit=2, newest_first=True)
    assert [e.value for e in back] == [b"entry 4", b"entry 3"] and [e.seq for e in back] == seqs[:2:-1]
    assert [e.value for e in await store.read_log("audit", before=seqs[3], newest_first=True)] == [
        b"entry 2",
        b"entry 1",
        b"entry 0",
    ]
    between = await store.read_log("audit", after=seqs[0], before=seqs[4], limit=2, newest_first=True)
    assert [e.value for e in between] == [b"entry 3", b"entry 2"]
    assert [e.value for e in await store.read_log("audit", after=seqs[0], before=seqs[3])] == [b"entry 1", b"entry 2"]
    assert await store.read_log("audit", after=seqs[2], before=seqs[3], newest_first=True) == []
    assert await store.read_log("audit", before=seqs[0], newest_first=True) == []


async def test_concurrent_writers_never_both_win(store: StateStore) -> None:
    # 20 tasks each add 1 to a counter with compare-and-set, retrying on conflict: no update is lost.
    first = await store.put("counter", "n", b"0")

    async def add_one() -> None:
        while True:
            rec = await store.get("counter", "n")
            assert rec is not None
            try:
                await store.put("counter", "n", str(int(rec.value) + 1).encode(), expect=rec.version)
                return
            except StateConflictError:
                await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(add_one)
    rec = await store.get("counter", "n")
    assert rec is not None and rec.value == b"20" and rec.version > first


async def test_bad_kinds_keys_and_options_are_refused(store: StateStore) -> None:
    for kind, key in (("", "k"), ("k", ""), ("a b", "k"), ("k", "x" * 600), ("k", "new\nline")):
        with pytest.raises(ValueError):
            await store.put(kind, key, b"v")
    with pytest.raises(ValueError):
        await store.put("k", "k", b"v", ttl=0)
    with pytest.raises(ValueError):
        await store.put("k", "k", b"v", expect=-1)


async def test_sqlite_state_outlives_the_process(tmp_path: Path) -> None:
    path = tmp_path / "s" / "state.sqlite3"
    first = SQLiteStateStore(path)
    await first.put("session", "k", b"kept")
    await first.aclose()
    second = open_state_store(directory=tmp_path / "s")
    try:
        rec = await second.get("session", "k")
        assert rec is not None and rec.value == b"kept"
    finally:
        await second.aclose()


def test_a_writer_killed_mid_write_loses_nothing_committed(tmp_path: Path) -> None:
    # A child process writes 1 MiB records in a loop and is killed at a random moment; every
    # record the file holds afterwards is whole, and the file is usable.
    path = tmp_path / "state.sqlite3"
    child = textwrap.dedent(
        f"""
        import anyio
        from toolcode.state import SQLiteStateStore
        async def main():
            s = SQLiteStateStore({str(path)!r})
            i = 0
            while True:
                await s.put("blob", f"k{{i % 7}}", bytes([i % 251]) * (1 << 20))
                print(i, flush=True)
                i += 1
        anyio.run(main)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for _ in range(15):
        proc.stdout.readline()
    proc.kill()
    proc.wait()
    proc.stdout.close()

    async def check() -> None:
        s = SQLiteStateStore(path)
        try:
            infos = await s.list("blob")
            assert infos, "nothing was committed"
            for info in infos:
                rec = await s.get("blob", info.key)
                assert rec is not None and len(rec.value) == 1 << 20 and len(set(rec.value)) == 1
            await s.put("blob", "after", b"still writable")
        finally:
            await s.aclose()

    anyio.run(check)


async def test_redis_going_away_is_a_clear_error_and_recovery_follows(redis_url: str, redis_server: Any) -> None:
    store = RedisStateStore(redis_url, timeout=10.0)  # per command; a stopped server refuses at once
    try:
        await store.put("session", "k", b"before")
        redis_server.stop()
        with pytest.raises(StateUnavailableError) as ei:
            await store.put("session", "k", b"during")
        assert ei.value.code.value == "state_unavailable" and "redis://127.0.0.1" in str(ei.value)
        with pytest.raises(StateUnavailableError):
            await store.get("session", "k")
        redis_server.start()
        await store.put("session", "k", b"after")  # the client reconnects by itself
        rec = await store.get("session", "k")
        assert rec is not None and rec.value == b"after"
    finally:
        await store.aclose()


def test_redis_credentials_never_appear_in_errors() -> None:
    store = RedisStateStore("redis://user:hunter2secret@127.0.0.1:1/0", timeout=0.5)
    assert "hunter2secret" not in store.name

    async def fail() -> str:
        try:
            await store.get("k", "k")
        except StateUnavailableError as e:
            return str(e)
        finally:
            await store.aclose()
        return ""

    text = anyio.run(fail)
    assert text and "hunter2secret" not in text


@pytest.mark.anyio
async def test_a_new_state_database_and_its_folders_are_owner_only(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    store = SQLiteStateStore(folder / "state.sqlite3")
    try:
        await store.put("session", "s", b"secret state", ttl=60)
        release = await store.try_lock("x", ttl=5)
        assert release is not None
        await release()
        files = [p for p in folder.rglob("*") if p.is_file()]
        assert any(p.name.endswith("-wal") for p in files)  # SQLite's own files are checked too
        assert (folder.stat().st_mode & 0o777) == 0o700
        assert (folder / "state.sqlite3.locks").stat().st_mode & 0o777 == 0o700
        assert all(p.stat().st_mode & 0o077 == 0 for p in files), [(p.name, oct(p.stat().st_mode)) for p in files]
    finally:
        await store.aclose()
