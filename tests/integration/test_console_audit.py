"""The console's audit page over real HTTP: the newest entries, page by page, read from the end of the log.

A real `serve --http` with the console on; the log is filled through the toolbox's own audit log.
"""

from __future__ import annotations

import json
import re
import time
import tracemalloc
from typing import Any

import httpx2
import pytest
from console_support import ALICE, OPS, console_client, served

from toolcode._audit import AuditLog
from toolcode._settings import StateSettings

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

_TOOL = re.compile(r"<td><code>([^<]*)</code></td>")


def _tools(page: str) -> list[str]:
    """The tool ids of an audit page's rows, top to bottom."""
    return _TOOL.findall(page)


async def _fill(log: AuditLog, runs: range, calls: int = 3) -> None:
    """Runs of ``calls`` calls each, one append per run, alternating between alice and bob."""
    for run in runs:
        caller = "token:alice" if run % 2 else "token:bob"
        rows = [
            {"at": 1000.0 + run, "tool_id": f"r{run}:{i}", "decision": "call", "caller": caller} for i in range(calls)
        ]
        await log.write(rows)


def _newest(runs: range, calls: int = 3, caller: str | None = None) -> list[str]:
    """The tool ids :func:`_fill` wrote, newest first (of one caller, when given)."""
    who = {"token:alice": 1, "token:bob": 0}
    return [
        f"r{run}:{i}"
        for run in reversed(runs)
        for i in reversed(range(calls))
        if caller is None or run % 2 == who[caller]
    ]


async def _page(http: httpx2.AsyncClient, **query: Any) -> str:
    res = await http.get("/console/audit", params=query)
    assert res.status_code == 200, res.text[:300]
    return res.text


async def test_the_audit_page_shows_the_newest_entries_page_by_page(tmp_path: Any) -> None:
    async with (
        served(tmp_path, state=StateSettings(memory=True)) as s,
        console_client(s.base, OPS) as ops,
        console_client(s.base, ALICE) as alice,
    ):
        await _fill(s.box.stores.audit, range(40))  # 120 entries
        newest = _newest(range(40))
        first = await _page(ops)
        assert _tools(first) == newest[:50] and 'rel="next"' in first
        second = await _page(ops, page=1)
        assert _tools(second) == newest[50:100] and 'rel="next"' in second and 'rel="prev"' in second
        last = await _page(ops, page=2)
        assert _tools(last) == newest[100:] and 'rel="next"' not in last
        assert "entries 1-50 · page 1" in first and "entries 101-120 · page 3" in last
        # A filter pages through its own matches: alice's, and a tool glob.
        assert _tools(await _page(alice)) == _newest(range(40), caller="token:alice")[:50]
        mine = await _page(alice, page=1)
        assert _tools(mine) == _newest(range(40), caller="token:alice")[50:] and 'rel="next"' not in mine
        assert _tools(await _page(ops, tool="r3*")) == [t for t in newest if t.startswith("r3")]
        # Time range: since and until (Unix seconds) keep runs 10 to 12.
        assert _tools(await _page(ops, since="1010", until="1012")) == _newest(range(10, 13))
        # The export carries every match, newest first.
        export = await ops.get("/console/audit.jsonl", params={"tool": "r1*"})
        assert [json.loads(line)["tool_id"] for line in export.text.splitlines()] == [
            t for t in newest if t.startswith("r1")
        ]


async def test_the_audit_page_takes_as_long_on_a_long_log_as_on_a_short_one(tmp_path: Any) -> None:
    async with served(tmp_path, state=StateSettings(memory=True)) as s, console_client(s.base, OPS) as ops:
        log = s.box.stores.audit

        async def fastest() -> float:
            best = float("inf")
            for _ in range(7):
                start = time.perf_counter()
                page = await _page(ops)
                best = min(best, time.perf_counter() - start)
            assert len(_tools(page)) == 50
            return best

        await _fill(log, range(500), calls=1)
        short = await fastest()
        await _fill(log, range(500, 30_500), calls=1)
        long = await fastest()
        assert _tools(await _page(ops)) == _newest(range(30_500), calls=1)[:50]
        # The same page over 60 times the log: it read the whole log on every request (~30x slower).
        assert long < 4 * short, (long, short)


async def test_an_export_and_a_deep_page_hold_a_few_entries_not_every_match(tmp_path: Any) -> None:
    # The export built every match (up to 100,000) and then one string of them all; a deep page kept every
    # match before it to show 50: a few requests of one caller took hundreds of MB of the server's memory.
    async with served(tmp_path, state=StateSettings(memory=True)) as s, console_client(s.base, ALICE) as alice:
        entries = [
            {"at": 1000.0 + i / 1000, "tool_id": "ledger:read_notes", "decision": "call", "caller": "token:alice",
             "execution_id": f"{i:032x}", "ok": True, "duration_ms": 1.5}
            for i in range(30_000)
        ]  # fmt: skip
        await s.box.stores.audit.write(entries)
        del entries
        await _page(alice)  # what a first request loads, loaded
        tracemalloc.start()
        try:
            lines = 0
            async with alice.stream("GET", "/console/audit.jsonl") as res:
                async for chunk in res.aiter_bytes():
                    lines += chunk.count(b"\n")
            _, export_peak = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            deep = await _page(alice, page=598)
            _, page_peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert res.status_code == 200 and lines == 30_000
        assert "entries 29,901-29,950 · page 599" in deep and len(_tools(deep)) == 50 and 'rel="next"' in deep
        # Every match held at once is ~30 MB here; a page of the log read at a time is ~1 MB.
        assert export_peak < 8 << 20 and page_peak < 8 << 20, (export_peak >> 20, page_peak >> 20)
