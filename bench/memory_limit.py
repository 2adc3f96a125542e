"""The sandbox's memory limit: how fast computations that cannot fit it fail, and what ordinary snippets need.

Three parts (``--only`` takes their names):

* ``bombs``: each of ``10**10**8``, ``2**10**9``, ``'x' * 10**10``, ``[0] * 10**10`` and
  ``10**10**7 * 10**10**7`` run once through a ``Toolbox`` with the default engine and default
  limits: seconds to the answer, and the answer (error code and message). ``reference_ms`` is a
  run of ``__out = 1`` in the same toolbox, measured just before.
* ``needs``: the smallest ``max_memory`` (binary search, 2 % steps) at which a snippet still
  runs in pydantic-monty with the engine's other limits: a tool result of ~50,000 characters of
  JSON (the default output budget), 1 MB, 4 MiB (OpenAPI's default response cap) and 8 MB, kept
  and filtered; and a few list-building snippets.
* ``suites``: every check of the public conformance suite (``toolcode.testing``) and the demo
  walkthrough (``toolcode demo``), run with ``MontyEngine(max_memory=SMALL)`` (``--small``,
  default 4 MiB): how many pass.

Usage: ``uv run python bench/memory_limit.py [--json] [--only bombs,needs,suites] [--small BYTES]``
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import logging
import sys
import time
from typing import Any

import pydantic_monty as pm

from toolcode import Toolbox
from toolcode.engines import monty as monty_engine
from toolcode.engines.monty import MontyEngine
from toolcode.exceptions import limit_text
from toolcode.server import log_to_stderr

BOMBS = ("10**10**8", "2**10**9", "'x' * 10**10", "[0] * 10**10", "10**10**7 * 10**10**7")
MiB = 1024 * 1024
ENGINE_LIMITS: dict[str, Any] = {"max_feed_duration_secs": 60.0, "max_recursion_depth": 200, "max_suspensions": 10_000}


def _issues(n: int) -> list[dict[str, Any]]:
    """GitHub-issue-like records: the kind of tool result a snippet filters."""
    return [
        {
            "id": i,
            "number": 1000 + i,
            "title": f"Issue {i}: something is broken in module {i % 37}",
            "state": "open" if i % 3 else "closed",
            "labels": [{"name": "bug"}, {"name": f"area-{i % 7}"}],
            "user": {"login": f"user{i % 101}", "id": 5000 + i},
            "comments": i % 13,
            "body": "Steps to reproduce: run the thing and observe the failure. " * 4,
        }
        for i in range(n)
    ]


def _result_of(chars: int) -> list[dict[str, Any]]:
    n = 1
    while len(json.dumps(_issues(n))) < chars:
        n *= 2
    lo, hi = n // 2, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if len(json.dumps(_issues(mid))) < chars else (lo, mid)
    return _issues(hi)


async def bombs() -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with Toolbox([]) as box:
        await box.codemode.execute("__out = 1")  # the pool is up
        t0 = time.perf_counter()
        ref = await box.codemode.execute("__out = 1")
        out["reference_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        assert ref.ok, ref.error
        engine = box.codemode.executor.engine
        out["max_memory"] = engine.info.limits.get("max_memory")
        for code in BOMBS:
            t0 = time.perf_counter()
            try:
                got = await box.codemode.execute(f"__out = {code}")
            except Exception as e:  # the run itself failed on the host: recorded, not hidden
                out[code] = {"seconds": round(time.perf_counter() - t0, 3), "code": "crash", "message": repr(e)[:300]}
                continue
            seconds = time.perf_counter() - t0
            err = got.error
            out[code] = {
                "seconds": round(seconds, 3),
                "code": err.code if err is not None else None,
                "message": (err.message if err is not None else f"ok: {type(got.value).__name__}")[:300],
            }
    return out


async def _fits(pool: pm.AsyncMonty, code: str, value: Any, memory: int) -> bool:
    try:
        async with pool.checkout(limits={**ENGINE_LIMITS, "max_memory": memory}) as session:
            snap = await session.feed_start(code)
            while not isinstance(snap, pm.MontyComplete):
                assert isinstance(snap, pm.AsyncFunctionSnapshot)
                snap = await snap.resume({"return_value": value})
            return True
    except pm.MontyRuntimeError as e:
        if isinstance(e.exception(), MemoryError):
            return False
        raise


async def _need(pool: pm.AsyncMonty, code: str, value: Any) -> int:
    lo, hi = 64 * 1024, 4096 * MiB
    while hi - lo > max(lo // 50, 4096):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if await _fits(pool, code, value, mid) else (mid, hi)
    return hi


async def needs() -> dict[str, Any]:
    keep = "r = get()\nlen(r)"
    filtered = "r = get()\nopen_ = [{'n': x['number'], 't': x['title']} for x in r if x['state'] == 'open']\nlen(open_)"
    rows: dict[str, Any] = {}
    async with pm.AsyncMonty(min_processes=1, max_processes=2) as pool:
        for label, chars in (("50k_chars", 50_000), ("1_MB", 1_000_000), ("4_MiB", 4 * MiB), ("8_MB", 8_000_000)):
            value = _result_of(chars)
            size = len(json.dumps(value))
            for how, code in (("kept", keep), ("filtered", filtered)):
                need = await _need(pool, code, value)
                rows[f"tool_result_{label}_{how}"] = {
                    "json_bytes": size,
                    "needs_bytes": need,
                    "needs": limit_text("max_memory", need),
                    "x_json": round(need / size, 1),
                }
        for code in (
            "x = [i * i for i in range(10**6)]",
            "x = list(range(10**6))",
            "x = {i: str(i) for i in range(10**5)}",
            "x = 10**10**7",
        ):
            need = await _need(pool, code + "\n1", None)
            rows[code] = {"needs_bytes": need, "needs": limit_text("max_memory", need)}
    return rows


async def suites(small: int) -> dict[str, Any]:
    from toolcode.demo import run_demo
    from toolcode.testing import CHECKS, run_check

    engine = MontyEngine(max_memory=small)
    statuses: dict[str, int] = {}
    failed: list[str] = []
    try:
        for check in CHECKS:
            outcome = await run_check(engine, check)
            statuses[outcome.status] = statuses.get(outcome.status, 0) + 1
            if outcome.status not in ("passed", "unsupported"):
                failed.append(f"{check.id}: {outcome.detail[:120]}")
    finally:
        await engine.aclose()
    # The demo builds its own toolbox with the default engine: give that default the small limit.
    defaults = MontyEngine.__init__.__kwdefaults__
    assert defaults is not None
    saved = defaults["max_memory"]
    defaults["max_memory"] = small
    try:
        from rich.console import Console

        demo_rc = await run_demo(console=Console(file=io.StringIO()))
    finally:
        defaults["max_memory"] = saved
    return {
        "max_memory": small,
        "limit": limit_text("max_memory", small),
        "conformance": statuses,
        "conformance_failed": failed,
        "demo_exit_code": demo_rc,
    }


async def run(parts: set[str], small: int) -> dict[str, Any]:
    report: dict[str, Any] = {"default_max_memory": monty_engine.MontyEngine().info.limits["max_memory"]}
    if "bombs" in parts:
        report["bombs"] = await bombs()
    if "needs" in parts:
        report["needs"] = await needs()
    if "suites" in parts:
        report["suites"] = await suites(small)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--only", default="bombs,needs,suites", help="comma-separated parts (default: all)")
    parser.add_argument("--small", type=int, default=4 * MiB, help="max_memory for the suites part (bytes)")
    args = parser.parse_args()
    log_to_stderr(logging.WARNING)
    report = asyncio.run(run(set(args.only.split(",")), args.small))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"default max_memory: {limit_text('max_memory', report['default_max_memory'])}")
    if "bombs" in report:
        b = report["bombs"]
        print(f"\nbombs under default limits (reference run of __out = 1: {b['reference_ms']} ms)")
        for code in BOMBS:
            r = b[code]
            print(f"  {code:<24} {r['seconds']:>8.3f} s  {r['code'] or 'ok'}: {r['message'][:90]}")
    if "needs" in report:
        print("\nsmallest max_memory a snippet runs with")
        for name, r in report["needs"].items():
            extra = f" ({r['json_bytes']:,} B of JSON, {r['x_json']}x)" if "json_bytes" in r else ""
            print(f"  {name:<40} {r['needs']:>10}{extra}")
    if "suites" in report:
        s = report["suites"]
        print(f"\nwith max_memory {s['limit']}: conformance {s['conformance']}, demo exit code {s['demo_exit_code']}")
        for line in s["conformance_failed"]:
            print(f"  failed: {line}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
