"""The audit log read back: the newest entries, within the memory of what is asked for."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from toolcode._audit import AuditLog
from toolcode.state import SQLiteStateStore

pytestmark = pytest.mark.anyio


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
