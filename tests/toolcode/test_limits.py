"""Hard stops: CPU loops, huge integers, huge strings and sleeps are stopped by their limit, and the host survives.

A limit must fire, and no earlier than configured. How long stopping takes beyond that is bounded only
generously (``HANG_S``): these bombs otherwise run for minutes, while a loaded machine may stretch the
stop by seconds. The time to stop on a quiet machine is a benchmark's figure (``bench/limits.py``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import anyio
import pytest
from _toolcode_support import make_runner

from toolcode import ExecuteOptions, ExecuteParams, Executor, ExecutorConfig, LimitExceededError, load_engine

pytestmark = pytest.mark.anyio

HANG_S = 30.0
"""Seconds past its timeout after which a run counts as never stopped."""


@pytest.fixture(params=["monty", "inprocess"])
async def executor(request: pytest.FixtureRequest) -> AsyncIterator[Executor]:
    index, store, runner = await make_runner()
    async with Executor(ExecutorConfig(index=index, store=store, runner=runner, engine=request.param)) as ex:
        yield ex
    await runner.aclose()


@pytest.fixture
async def monty() -> AsyncIterator[Executor]:
    index, store, runner = await make_runner()
    async with Executor(ExecutorConfig(index=index, store=store, runner=runner, engine=load_engine("monty"))) as ex:
        yield ex
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
        ("x = 10**10**8", "timeout"),  # 41 MB of digits: under the memory limit, too slow for 1 s
        ("x = 'a' * 10**10", "max_memory"),
        ("x = 7 ** (10**7)\nlen(str(x))", "timeout"),
        ("x = []\nwhile True:\n    x.append('y' * 10**6)", "max_memory"),
        ("import time\ntime.sleep(30)", "timeout"),
    ],
)
async def test_bombs_are_stopped_and_the_host_survives(monty: Executor, code: str, limit: str) -> None:
    # A memory bomb gets time enough to reach the memory limit on a busy machine too (under
    # load, appending 1 MB strings took longer than 1 s and the timeout stopped it first).
    timeout = 10.0 if limit == "max_memory" else 1.0
    err, elapsed = await _stopped(monty, code, timeout)
    assert err.limit == limit, str(err)
    if limit == "timeout":
        assert elapsed >= timeout
    assert (await monty.execute(ExecuteParams(code="sum(range(10))"))).value == 45


async def test_memory_limit_reports_configured_and_reached(monty: Executor) -> None:
    err, _ = await _stopped(monty, "x = 'a' * 10**10")
    assert err.configured == 256 * 1024 * 1024 and err.reached is not None and err.reached >= 10**10
    assert str(err).startswith("limit max_memory exceeded: configured 256 MiB, reached ") and " GiB" in str(err)
    assert err.result is not None and err.result.limits.applied["max_memory"] == 256 * 1024 * 1024
