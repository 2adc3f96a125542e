"""The audit log: read back (the newest entries, at the cost of those entries, not of the log's length), and
bounded per run (arguments clipped, refused calls counted, long trails written in pieces).

Each store is a real one (a SQLite file, a redis-server, memory) that counts the log entries it hands out.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio.lowlevel
import pytest

from toolcode import ExecuteOptions, Settings, Toolbox
from toolcode._audit import AUDIT_KIND, CLIP_CHARS, WRITE_CHUNK, AuditLog
from toolcode._settings import PolicySettings, StateSettings
from toolcode.state import LogEntry, MemoryStateStore, RedisStateStore, SQLiteStateStore
from tooldocs import json_text
from toolrun import LocalBackend

pytestmark = pytest.mark.anyio


class _Counted:
    """Counts the log entries (appends) a store's ``read_log`` returned."""

    rows = 0

    async def read_log(self, kind: str, **options: Any) -> list[LogEntry]:
        page: list[LogEntry] = await super().read_log(kind, **options)  # type: ignore[misc]
        self.rows += len(page)
        return page


class _SQLite(_Counted, SQLiteStateStore):
    pass


class _Redis(_Counted, RedisStateStore):
    pass


class _Memory(_Counted, MemoryStateStore):
    pass


Counted = _SQLite | _Redis | _Memory


@pytest.fixture(params=["sqlite", "redis", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Counted]:
    if request.param == "sqlite":
        s: Counted = _SQLite(tmp_path / "state.sqlite3")
    elif request.param == "redis":
        s = _Redis(request.getfixturevalue("redis_url"), prefix="audit-test")
    else:
        s = _Memory()
    try:
        yield s
    finally:
        await s.aclose()


async def _as_before(store: Counted, since: float | None, limit: int) -> list[dict[str, Any]]:
    """What ``AuditLog.read`` answered before it read from the end: every append from the start, the last ``limit``."""
    out: list[dict[str, Any]] = []
    after = 0
    while page := await store.read_log(AUDIT_KIND, after=after, limit=1000):
        for entry in page:
            after = entry.seq
            try:
                items = json.loads(entry.value)
            except ValueError:
                continue
            dicts = [d for d in items if isinstance(d, dict)] if isinstance(items, list) else []
            out += [d for d in dicts if since is None or float(d.get("at", 0)) >= since]
    return out[-limit:] if limit else out


async def test_the_newest_entries_are_read_from_the_end_of_the_log(store: Counted) -> None:
    log = AuditLog(store)
    for i in range(3000):
        await log.write([{"at": 1000.0 + i, "tool_id": f"t:{i}", "decision": "call"}])
    store.rows = 0
    newest = await log.read(limit=10)
    assert [e["tool_id"] for e in newest] == [f"t:{i}" for i in range(2990, 3000)]
    # Two reads (8 appends, then 16), whatever the log's length: it was all 3,000 appends.
    assert store.rows <= 24, store.rows


async def test_since_ends_the_walk_at_the_first_append_made_before_it(store: Counted) -> None:
    log = AuditLog(store, clock_skew=0.0)  # one writer, one clock
    for i in range(2000):
        await log.write([{"at": time.time(), "tool_id": f"old:{i}", "decision": "call"}])
    since = (await store.read_log(AUDIT_KIND, limit=1, newest_first=True))[0].at + 0.001
    while time.time() <= since:  # the clock moves past it (a millisecond)
        await anyio.lowlevel.checkpoint()
    for i in range(3):
        await log.write([{"at": time.time(), "tool_id": f"new:{i}", "decision": "call"}])
    store.rows = 0
    assert [e["tool_id"] for e in await log.read(since=since)] == ["new:0", "new:1", "new:2"]
    assert store.rows <= 8, store.rows  # one read of 8 appends; all 2,003 before


async def test_the_same_entries_in_the_same_order_as_reading_the_whole_log(store: Counted) -> None:
    log = AuditLog(store)
    for run in range(60):  # runs of 1 to 7 calls, one append each, as the core writes them
        await log.write(
            [{"at": 100.0 + run + i / 10, "tool_id": f"r{run}:{i}", "decision": "call"} for i in range(run % 7 + 1)]
        )
        if run == 20:
            await store.append(AUDIT_KIND, b"not json")
            await store.append(AUDIT_KIND, b'{"not": "a list"}')
            await store.append(AUDIT_KIND, b'[1, "x", {"at": 121.0, "tool_id": "among:junk", "decision": "deny"}]')
        if run == 40:  # a long run appended late: its entries are older than those before it
            await log.write([{"at": 130.0 + i, "tool_id": f"late:{i}", "decision": "call"} for i in range(3)])
    for since in (None, 99.0, 120.5, 131.0, 159.6, 200.0):
        for limit in (0, 1, 7, 50, 1000):
            assert await log.read(since=since, limit=limit) == await _as_before(store, since, limit), (since, limit)


async def test_reading_the_newest_entries_holds_only_those_in_memory(tmp_path: Path) -> None:
    store = SQLiteStateStore(tmp_path / "state.sqlite3")
    try:
        log = AuditLog(store)
        for run in range(40):  # 40 runs of 500 calls each, as the core writes them: one append per run
            await log.write([{"at": run + i / 1000, "tool_id": f"t:{i}", "decision": "call"} for i in range(500)])

        async def peak(limit: int) -> tuple[int, list[dict[str, object]]]:
            tracemalloc.start()
            try:
                entries = await log.read(limit=limit)
                return tracemalloc.get_traced_memory()[1], entries
            finally:
                tracemalloc.stop()

        everything, all_entries = await peak(0)
        newest, last = await peak(10)
        assert len(all_entries) == 20_000 and last == all_entries[-10:]
        assert last[-1] == {"at": 39.499, "tool_id": "t:499", "decision": "call"}
        # The whole log was held to keep its last ten: now a few pages' worth at the most.
        assert newest < everything / 5, (newest, everything)
        assert [e["tool_id"] for e in await log.read(since=39.495, limit=3)] == ["t:497", "t:498", "t:499"]
    finally:
        await store.aclose()


async def test_a_long_trail_is_written_in_appends_of_bounded_size(store: Counted) -> None:
    log = AuditLog(store)
    entries = [{"at": 1.0 + i / 10_000, "tool_id": f"t:{i}", "decision": "call"} for i in range(2 * WRITE_CHUNK + 1)]
    await log.write(entries)
    appends = await store.read_log(AUDIT_KIND, limit=1000)
    assert [len(json.loads(a.value)) for a in appends] == [WRITE_CHUNK, WRITE_CHUNK, 1]
    assert await log.read(limit=0) == entries


def _box(policy: dict[str, Any], tmp_path: Path) -> Toolbox:
    local = LocalBackend()

    @local.tool(namespace="notes")
    def read(text: str) -> str:
        """Read a note."""
        return text[:10]

    @local.tool(namespace="notes")
    def wipe(text: str) -> str:
        """Wipe a note."""
        return "wiped"

    settings = Settings(policy=PolicySettings.model_validate(policy), state=StateSettings(dir=str(tmp_path / "state")))
    return Toolbox([local], settings=settings)


async def test_arguments_are_clipped_like_results_even_for_a_call_refused_for_its_size(tmp_path: Path) -> None:
    # With audit.args on, arguments were kept whole: a run of calls with 20 MB strings, refused by the
    # runner for their size, appended hundreds of MB to the log and held them in the server until then.
    code = (
        "refused = 0\n"
        "for text in ['x' * 5_000_000, 'y' * 3_000, 'z']:\n"
        "    try:\n"
        "        run_tool('notes:read', text=text)\n"
        "    except ToolError:\n"
        "        refused += 1\n"
        "__out = refused"
    )
    policy = {"preset": "allow-all", "audit": {"args": True, "results": True}}
    async with _box(policy, tmp_path) as box:
        out = await box.codemode.execute(code)
        assert out.ok and out.value == 1, out  # the first is over the runner's 4 MiB argument limit
        assert box.stores is not None
        calls = [e for e in await box.stores.audit.read() if e["decision"] == "call"]
    assert [e["ok"] for e in calls] == [False, True, True]
    for entry, letter in zip(calls[:2], "xy", strict=True):
        assert entry["args"] == json_text({"text": letter * 5_000_000})[:CLIP_CHARS] + "…"
    assert calls[2]["args"] == {"text": "z"} and calls[2]["result"] == "z"


async def test_a_refused_call_counts_against_max_tool_calls(tmp_path: Path) -> None:
    # A call the policy refused was audited but not counted: a snippet catching the refusal in a
    # loop piled up entries until its timeout, all held in the server until the run ended.
    code = (
        "for i in range(50):\n"
        "    try:\n"
        "        run_tool('notes:wipe', text=str(i))\n"
        "    except ToolError:\n"
        "        pass\n"
        "    try:\n"
        "        run_tools([('notes:read', {'text': 'a'}), ('notes:wipe', {'text': 'b'})])\n"
        "    except ToolError:\n"
        "        pass\n"
        "__out = 'done'"
    )
    policy = {"rules": [{"tools": "notes:wipe", "decision": "deny"}]}
    async with _box(policy, tmp_path) as box:
        out = await box.codemode.execute(code, options=ExecuteOptions(max_tool_calls=10))
        assert out.error is not None and out.error.code == "tool_call_limit", out
        assert "max_tool_calls" in out.error.message
        assert box.stores is not None
        entries = await box.stores.audit.read()
    # Five single calls and four plans refused, one call each; the fifth plan no longer fit the budget.
    assert [(e["tool_id"], e["decision"]) for e in entries] == [("notes:wipe", "deny")] * 9, entries


async def test_a_call_that_paused_is_counted_once_when_it_is_made(tmp_path: Path) -> None:
    code = "a = run_tool('notes:wipe', text='a')\nb = run_tool('notes:read', text='b')\n__out = [a, b]"
    policy = {"rules": [{"tools": "notes:wipe", "decision": "ask"}]}
    async with _box(policy, tmp_path) as box:
        out = await box.codemode.execute(code, options=ExecuteOptions(max_tool_calls=2))
        assert out.approval is not None, out
        done = await box.codemode.resume(out.approval.execution_id, "approve")
        assert done.ok and done.value == ["wiped", "b"], done


def _slow_box(tmp_path: Path, made: list[str], started: anyio.Event) -> Toolbox:
    local = LocalBackend()

    @local.tool(namespace="notes")
    async def slow_write(text: str) -> str:
        """Write a note (made at once), then take forever to answer."""
        made.append(text)
        started.set()
        await anyio.sleep_forever()
        return "never"

    settings = Settings(state=StateSettings(dir=str(tmp_path / "state")))
    return Toolbox([local], settings=settings)


def _calls(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["tool_id"], e["decision"], e["ok"], e.get("code")) for e in entries if e["decision"] == "call"]


@pytest.mark.parametrize("door", ["execute", "run_tool"])
async def test_a_call_cancelled_in_flight_is_audited(tmp_path: Path, door: str) -> None:
    # A client that cancelled its request (notifications/cancelled, or a dropped HTTP connection)
    # while a write was in flight left no audit entry for it, though the upstream had received it.
    made: list[str] = []
    started = anyio.Event()
    async with _slow_box(tmp_path, made, started) as box:
        async with anyio.create_task_group() as tg:
            if door == "execute":
                tg.start_soon(box.codemode.execute, "run_tool('notes:slow_write', text='a')")
            else:
                tg.start_soon(box.codemode.run_tool, "notes:slow_write", {"text": "a"})
            await started.wait()
            tg.cancel_scope.cancel()
        assert box.stores is not None
        entries = await box.stores.audit.read()
    assert made == ["a"]
    assert _calls(entries) == [("notes:slow_write", "call", False, "cancelled")], entries


async def test_a_call_in_flight_when_the_run_times_out_is_audited(tmp_path: Path) -> None:
    made: list[str] = []
    async with _slow_box(tmp_path, made, anyio.Event()) as box:
        code = "run_tool('notes:slow_write', text='a')"
        out = await box.codemode.execute(code, options=ExecuteOptions(timeout=1))
        assert out.error is not None and out.error.code == "timeout", out
        assert box.stores is not None
        entries = await box.stores.audit.read()
    assert made == ["a"]
    assert _calls(entries) == [("notes:slow_write", "call", False, "cancelled")], entries
