"""Fan-out: ten 200 ms calls from one snippet overlap in time, on both engines.

The wall-time figure (under 500 ms for the ten calls) is measured by ``bench/fanout.py``; this test
checks the overlap itself from the trace, which holds however loaded the machine is.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from _toolcode_support import make_runner

from toolcode import ExecuteParams, Executor, ExecutorConfig

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["monty", "inprocess"])
async def executor(request: pytest.FixtureRequest) -> AsyncIterator[Executor]:
    index, store, runner = await make_runner()
    async with Executor(ExecutorConfig(index=index, store=store, runner=runner, engine=request.param)) as ex:
        await ex.execute(ExecuteParams(code="1"))  # start the engine (the Monty worker pool) before timing
        yield ex
    await runner.aclose()


@pytest.mark.parametrize(
    "code",
    [
        "run_tools([('t:nap', {'seconds': 0.2})] * 10)",
        "import asyncio\nawait asyncio.gather(*[run_tool_async('t:nap', seconds=0.2) for _ in range(10)])",
    ],
    ids=["run_tools", "gather"],
)
async def test_ten_200ms_calls_overlap(executor: Executor, code: str) -> None:
    t0 = time.perf_counter()
    result = await executor.execute(ExecuteParams(code=code))
    elapsed = time.perf_counter() - t0
    assert result.value == [0.2] * 10
    calls = result.tool_calls
    assert len(calls) == 10 and all(r.duration_ms >= 195 for r in calls)
    # Every call started before the first one finished: they all ran at the same time.
    first_end = min(r.started_ms + r.duration_ms for r in calls)
    assert max(r.started_ms for r in calls) < first_end, [(r.started_ms, r.duration_ms) for r in calls]
    assert elapsed < 10 * 0.2, f"{elapsed:.3f}s is no faster than ten calls in a row"
