"""Hard stops: CPU loops, huge integers, huge strings and sleeps are stopped by their limit, and the host survives.

A limit must fire, and no earlier than configured. How long stopping takes beyond that is bounded only
generously (``HANG_S``): these bombs otherwise run for minutes, while a loaded machine may stretch the
stop by seconds. The time to stop on a quiet machine is a benchmark's figure (``bench/limits.py``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _toolcode_support import executor_of, make_runner

from toolcode import (
    CodeExecutionError,
    ExecuteOptions,
    ExecuteParams,
    Executor,
    LimitExceededError,
    Settings,
    Toolbox,
    load_engine,
)
from toolcode._settings import StateSettings, WorkerSettings
from toolcode.exceptions import ErrorCode
from toolcode.testing import _harness
from toolrun import LocalBackend

pytestmark = pytest.mark.anyio

HANG_S = 30.0
"""Seconds past its timeout after which a run counts as never stopped."""


@pytest.fixture(params=["monty", "inprocess"])
async def executor(request: pytest.FixtureRequest) -> AsyncIterator[Executor]:
    index, store, runner = await make_runner()
    async with executor_of(index=index, store=store, runner=runner, engine=request.param) as ex:
        yield ex
    await runner.aclose()


@pytest.fixture
async def monty() -> AsyncIterator[Executor]:
    index, store, runner = await make_runner()
    engine = load_engine("monty")  # an engine handed over stays its owner's to close
    async with executor_of(index=index, store=store, runner=runner, engine=engine) as ex:
        yield ex
    await engine.aclose()
    await runner.aclose()


async def _stopped(ex: Executor, code: str, timeout: float = 1.0) -> tuple[LimitExceededError, float]:
    t0 = time.perf_counter()
    with anyio.fail_after(timeout + HANG_S), pytest.raises(LimitExceededError) as ei:
        await ex.execute(ExecuteParams(code=code, options=ExecuteOptions(timeout=timeout)))
    return ei.value, time.perf_counter() - t0


async def test_cpu_loop_is_stopped_by_its_1s_timeout(executor: Executor) -> None:
    err, elapsed = await _stopped(executor, "x = 0\nwhile True:\n    x += 1")
    assert err.limit == "timeout" and err.configured == 1.0 and elapsed >= 1.0
    assert err.result is not None and err.result.limits.stopped_by == "timeout"
    assert (await executor.execute(ExecuteParams(code="6 * 7"))).value == 42


@pytest.mark.parametrize(
    ("code", "limit"),
    [
        ("x = 10**10**8", "max_memory"),  # Monty's estimate (191 MiB) is over the limit: refused before computing
        ("x = 10**(3 * 10**7)", "timeout"),  # its estimate (57 MiB) fits: computed, too slow for 1 s
        ("x = 'a' * 10**10", "max_memory"),
        ("x = 7 ** (10**7)\nlen(str(x))", "timeout"),
        ("x = []\nwhile True:\n    x.append('y' * 10**6)", "max_memory"),
        ("import time\ntime.sleep(30)", "timeout"),
    ],
)
async def test_bombs_are_stopped_and_the_host_survives(monty: Executor, code: str, limit: str) -> None:
    # A memory bomb's timeout only bounds a hang: the limit fires when the memory is used, and a
    # busy machine (the workers run niced) can take tens of seconds of wall time to get there.
    timeout = 120.0 if limit == "max_memory" else 1.0
    err, elapsed = await _stopped(monty, code, timeout)
    assert err.limit == limit, str(err)
    if limit == "timeout":
        assert elapsed >= timeout
    assert (await monty.execute(ExecuteParams(code="sum(range(10))"))).value == 45


async def test_memory_limit_reports_configured_reached_and_what_was_too_big(monty: Executor) -> None:
    err, _ = await _stopped(monty, "n = 10\nx = 'a' * 10**n")
    assert err.configured == 128 * 1024 * 1024 and err.reached is not None and err.reached >= 10**10
    assert str(err).startswith("limit max_memory exceeded: configured 128 MiB, reached ") and " GiB" in str(err)
    assert str(err).endswith("(line 2: 'a' * 10**n)"), str(err)
    assert err.code == ErrorCode.MEMORY_LIMIT
    assert err.result is not None and err.result.limits.applied["max_memory"] == 128 * 1024 * 1024


@pytest.mark.parametrize("code", ["10**10**8", "2**10**9", "'x' * 10**10", "[0] * 10**10"])
async def test_what_cannot_fit_the_memory_limit_fails_at_once_under_default_limits(monty: Executor, code: str) -> None:
    # Default limits (30 s): before, 10**10**8 computed until the host killed it at the timeout.
    with anyio.fail_after(25):  # a hang bound only; these fail in milliseconds
        err, _ = await _stopped(monty, f"__out = {code}", timeout=30.0)
    assert err.limit == "max_memory" and err.code == ErrorCode.MEMORY_LIMIT, str(err)
    assert f"(line 1: {code})" in str(err)
    assert (await monty.execute(ExecuteParams(code="6 * 7"))).value == 42  # the worker was not killed


async def test_the_default_memory_limit_holds_a_large_tool_result(tmp_path: Path) -> None:
    # 4 MiB of JSON (OpenAPI's default response cap) takes ~50 MiB of the sandbox's heap.
    local = LocalBackend()
    records = [
        {
            "id": i,
            "title": f"issue {i}",
            "state": "open" if i % 3 else "closed",
            "labels": [{"name": "bug"}, {"name": f"area-{i % 7}"}],
            "user": {"login": f"user{i % 101}", "id": 5000 + i},
            "body": "steps to reproduce: run it and watch it fail. " * 4,
        }
        for i in range(14_000)
    ]
    assert len(json.dumps(records)) > 4 * 1024 * 1024

    @local.tool(namespace="big")
    def issues() -> list[dict[str, Any]]:
        """Many records."""
        return records

    async with Toolbox([local], settings=Settings(state=StateSettings(dir=str(tmp_path)))) as box:
        out = await box.codemode.execute(
            "r = run_tool('big:issues')\n__out = sum(1 for x in r if x['state'] == 'open')"
        )
    assert out.ok and out.value == sum(1 for x in records if x["state"] == "open"), out.error


async def test_workers_max_memory_sets_the_engines_limit(tmp_path: Path) -> None:
    settings = Settings(state=StateSettings(dir=str(tmp_path)), workers=WorkerSettings(max_memory=32 * 1024 * 1024))
    async with Toolbox([], settings=settings) as box:
        assert box.codemode.executor.engine.info.limits["max_memory"] == 32 * 1024 * 1024
        out = await box.codemode.execute("x = [0] * (8 * 1024 * 1024)\nlen(x)")  # 64 MiB of list slots
    assert out.error is not None and out.error.code == "memory_limit" and "configured 32 MiB" in out.error.message


async def test_an_int_too_long_to_print_is_a_clear_error_not_a_crash(executor: Executor) -> None:
    with pytest.raises(CodeExecutionError) as ei:
        await executor.execute(ExecuteParams(code="__out = [1, 10**5000]"))
    assert "$[1] is an int of about 5,001 digits" in str(ei.value)
    assert (await executor.execute(ExecuteParams(code="__out = 10**4000 // 10**3990"))).value == 10**10


@pytest.mark.parametrize(
    "code",
    [
        "run_tool('t:add', a=10**5000)",  # an argument no JSON text can hold: refused by toolrun
        "run_tool('t:echo', value={'n': 10**5000})",  # nested
        "x = run_tool('t:pow', digits=5000)\n__out = 1",  # a tool's result
    ],
)
async def test_an_int_too_long_to_print_in_a_call_fails_that_call_not_the_host(code: str, tmp_path: Path) -> None:
    local = LocalBackend()
    for tool in (_harness.add, _harness.echo):
        local.add(tool, namespace="t")

    @local.tool(namespace="t")
    async def pow(digits: int) -> Any:
        """Return {"n": 10**digits}."""
        return {"n": 10**digits}

    policy = {"audit": {"args": True, "results": True}}
    settings = Settings.model_validate({"state": {"dir": str(tmp_path)}, "policy": policy, "engine": "monty"})
    async with Toolbox([local], settings=settings) as box:
        out = await box.codemode.execute(code)  # an outcome, never an exception out of the library
        assert out.status in ("ok", "error"), out
        if out.error is not None:
            assert out.error.code in ("invalid_arguments", "runtime_error", "tool_error"), out.error
        json.dumps(out.model_dump(mode="json"))  # every record of it prints
        assert (await box.codemode.execute("__out = run_tool('t:add', a=1)")).value == 2
        entries = await box.stores.audit.read() if box.stores is not None else []
        assert entries, "the calls were audited"


async def test_a_result_too_big_to_return_names_the_result_not_the_engines_lines(monty: Executor) -> None:
    # Before, the error quoted the engine's own code after the snippet: "(line 8: __toolcode_json.dumps(...))".
    err, _ = await _stopped(monty, '__out = "x" * 100_000_000', timeout=120.0)
    assert err.limit == "max_memory", str(err)
    assert str(err).endswith("(returning the result)"), str(err)
    assert "__toolcode" not in str(err)


async def test_a_huge_exception_message_is_read_once_and_off_the_event_loop(
    monty: Executor, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each read of a sandbox error's message copies it whole holding the interpreter lock: a 30 MB
    # message read on the event loop, four times, stalled every other caller for half a second a run.
    from toolcode.engines import _monty_errors as monty_errors

    reads: list[bool] = []
    loop_thread = threading.get_ident()
    read = monty_errors.Failure.of

    def counted(e: Any) -> Any:
        reads.append(threading.get_ident() == loop_thread)
        return read(e)

    monkeypatch.setattr(monty_errors.Failure, "of", counted)
    with pytest.raises(CodeExecutionError) as ei:
        await monty.execute(ExecuteParams(code='raise ValueError("x" * 30_000_000)'))
    assert reads == [False], "read once, in a worker thread"
    err = ei.value
    assert err.exc_type == "ValueError" and err.line == 1
    assert len(err.message) <= 2_000 and err.traceback is not None and len(err.traceback) <= 4_000
    assert 'raise ValueError("x" * 30_000_000)' in err.traceback
