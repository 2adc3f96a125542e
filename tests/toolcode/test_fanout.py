"""Fan-out: ten calls from one snippet overlap in time, on both engines.

The wall-time figure (under 500 ms for ten 200 ms calls) is measured by ``bench/fanout.py``. This test
checks the overlap itself: each call (``t:meet``) returns only once all ten are in flight, so calls
made one after the other never finish. That holds however loaded the machine is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from _toolcode_support import executor_of, make_runner

from toolcode import CodeExecutionError, ExecuteOptions, ExecuteParams, Executor
from toolcode.testing import _harness

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["monty", "inprocess"])
async def executor(request: pytest.FixtureRequest) -> AsyncIterator[Executor]:
    index, store, runner = await make_runner()
    async with executor_of(index=index, store=store, runner=runner, engine=request.param) as ex:
        yield ex
    await runner.aclose()


@pytest.mark.parametrize(
    "code",
    [
        "run_tools([('t:meet', {'n': 10})] * 10)",
        "import asyncio\nawait asyncio.gather(*[run_tool_async('t:meet', n=10) for _ in range(10)])",
    ],
    ids=["run_tools", "gather"],
)
async def test_ten_calls_overlap(executor: Executor, code: str) -> None:
    options = ExecuteOptions(timeout=2 * _harness.HANG_S)  # so that calls that never meet fail as such
    result = await executor.execute(ExecuteParams(code=code, options=options))
    assert result.value == [10] * 10
    calls = result.tool_calls
    assert len(calls) == 10 and all(r.error is None for r in calls)
    # Every call started before the first one finished: they all ran at the same time.
    first_end = min(r.started_ms + r.duration_ms for r in calls)
    assert max(r.started_ms for r in calls) < first_end, [(r.started_ms, r.duration_ms) for r in calls]


async def test_calls_made_one_after_the_other_do_not_meet(executor: Executor, monkeypatch: pytest.MonkeyPatch) -> None:
    # The meeting bites: a loop of calls is not a fan-out.
    monkeypatch.setattr(_harness, "HANG_S", 0.2)
    with pytest.raises(CodeExecutionError, match="only 1 of 2 calls were in flight at once"):
        await executor.execute(ExecuteParams(code="[run_tool('t:meet', n=2) for _ in range(2)]"))


@pytest.mark.parametrize(
    "code",
    [
        "run_tools([('t:meet', {'n': N})] * CALLS)",
        "import asyncio\nawait asyncio.gather(*[run_tool_async('t:meet', n=N) for _ in range(CALLS)])",
    ],
    ids=["run_tools", "gather"],
)
async def test_a_runs_calls_in_flight_at_once_are_bounded(
    executor: Executor, code: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Thousands of calls fanned out at once started every one of them together: one run held the
    # event loop and every upstream, and other callers' runs waited.
    from toolcode.calls import CALLS_AT_ONCE

    monkeypatch.setattr(_harness, "HANG_S", 1.0)
    n = CALLS_AT_ONCE
    fits = await executor.execute(ExecuteParams(code=code.replace("N", str(n)).replace("CALLS", str(n))))
    assert fits.value == [n] * n
    # One more never meets: never more than n in flight (the first to give up says how many were left).
    with pytest.raises(CodeExecutionError, match=rf"only \d+ of {n + 1} calls were in flight at once"):
        await executor.execute(ExecuteParams(code=code.replace("N", str(n + 1)).replace("CALLS", str(n + 1))))


async def test_a_waiting_call_that_is_cancelled_gives_its_turn_on() -> None:
    # A place handed to a call cancelled while it waited must go on to the next call, or the run's
    # calls would lose places one by one until none could be made.
    import anyio

    from toolcode.calls import CALLS_AT_ONCE, Call, Layer
    from toolcode.calls._at_once import AtOnce, Places

    opened = anyio.Event()
    made: list[str] = []

    class Held(Layer):
        async def call(self, call: Call) -> Any:
            await opened.wait()
            made.append(call.tool_id)

    stack = AtOnce(Held(Layer.__new__(Layer)), Places())
    cancelled = anyio.CancelScope()

    async def cancellable() -> None:
        with cancelled:
            await stack.call(Call("t:cancelled", {}))

    async with anyio.create_task_group() as tg:
        for i in range(CALLS_AT_ONCE):
            tg.start_soon(stack.call, Call(f"t:{i}", {}))
        tg.start_soon(cancellable)
        tg.start_soon(stack.call, Call("t:last", {}))
        await anyio.wait_all_tasks_blocked()
        cancelled.cancel()  # the first waiting call, cancelled while it waited for a place
        await anyio.wait_all_tasks_blocked()
        opened.set()
    assert sorted(made) == sorted([f"t:{i}" for i in range(CALLS_AT_ONCE)] + ["t:last"])
    for i in range(2 * CALLS_AT_ONCE):  # every place is free again
        await stack.call(Call(f"t:after{i}", {}))
    assert len(made) == 3 * CALLS_AT_ONCE + 1


@pytest.mark.parametrize("engine", ["monty", "inprocess"])
async def test_a_fan_out_of_calls_that_never_wait_gives_the_event_loop_back(engine: str) -> None:
    # A local tool answers without waiting: run_tools of thousands of them took every call in one
    # step of the event loop, and every other caller's run waited for all of them.
    import anyio

    from toolcode import Toolbox
    from toolrun import LocalBackend

    ticks = 0
    seen: list[int] = []

    async def quick() -> int:
        """Answers at once, with how often the other task has run so far."""
        seen.append(ticks)
        return ticks

    async def other_caller() -> None:
        nonlocal ticks
        while True:
            await anyio.lowlevel.checkpoint()
            ticks += 1

    local = LocalBackend()
    local.add(quick, name="quick", namespace="up")
    async with Toolbox([local], engine=engine) as box, anyio.create_task_group() as tg:
        tg.start_soon(other_caller)
        out = await box.codemode.execute(
            "run_tools([('up:quick', {}) for i in range(2000)])\n__out = 1", options={"max_tool_calls": 2000}
        )
        tg.cancel_scope.cancel()
    assert out.ok, out.error
    assert len(seen) == 2000
    # The other task ran between the calls, again and again, not once before and once after them.
    assert seen[-1] - seen[0] >= 2000 // 128, (seen[0], seen[-1])


async def test_the_arguments_of_a_large_fan_out_are_walked_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The depth check of run_tools' list of thousands of calls took tens of ms on the event loop.
    import threading

    from toolcode.engines import _leaving, _monty_drive

    threads: list[str] = []
    walk = _leaving.check_depth

    def recorded(*args: Any, **kwargs: Any) -> None:
        threads.append(threading.current_thread().name)
        walk(*args, **kwargs)

    monkeypatch.setattr(_monty_drive, "check_depth", recorded)
    index, store, runner = await make_runner()
    async with executor_of(index=index, store=store, runner=runner, engine="monty") as ex:
        small = await ex.execute(ExecuteParams(code="run_tools([('t:echo', {'value': 'a'})] * 3)"))
        n = _leaving.APART_ITEMS + 1
        large = await ex.execute(
            ExecuteParams(
                code=f"len(run_tools([('t:echo', {{'value': 'a'}})] * {n}))", options=ExecuteOptions(max_tool_calls=n)
            )
        )
        apart = len(threads)
        # Large below its top too: one argument holding one list of them.
        nested = await ex.execute(ExecuteParams(code=f"len(run_tool('t:echo', value=[list(range({n}))])[0])"))
    await runner.aclose()
    assert small.value == ["a"] * 3 and large.value == n and nested.value == n
    main = threading.current_thread().name
    assert threads[0] == main and threads[apart - 1] != main and threads[-1] != main, threads
