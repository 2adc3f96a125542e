"""MontyEngine's pool: CPU-bound runs cannot starve others; per-caller and pool caps fail clearly."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator

import anyio
import anyio.abc
import psutil
import pytest
from _toolcode_support import executor_of, make_runner

from toolcode import (
    CodeExecutionError,
    EngineError,
    ExecuteOptions,
    ExecuteParams,
    Executor,
    LimitExceededError,
    Listeners,
    MontyEngine,
    Services,
    ToolCallRecord,
)
from toolindex import InMemoryIndex
from toolrun import DefaultRunner, LocalBackend

pytestmark = pytest.mark.anyio

# The tool call announces (through on_tool_call) that the run holds a worker and has reached the loop.
SPIN = 'run_tool("t:add", {"a": 1})\nwhile True:\n    pass'
TRIVIAL = ExecuteParams("__out = 6 * 7", options=ExecuteOptions(timeout=60))
# The spinners' timeout, and the bound on anything that must not wait for it: far apart, so that a
# run that waited for a spinner to time out fails, and a run that was only slowed by load does not.
SPIN_TIMEOUT_S = 600
HANG_S = 60


@pytest.fixture
async def parts() -> AsyncIterator[tuple[object, object, object]]:
    index, store, runner = await make_runner()
    yield index, store, runner
    await runner.aclose()


async def start_spinning(ex: Executor, tg: anyio.abc.TaskGroup, caller: str | None = None) -> None:
    """Start a CPU-bound run and return once it computes (its first tool call is done)."""
    busy = anyio.Event()

    async def on_call(record: ToolCallRecord) -> None:
        busy.set()

    async def spin() -> None:
        params = ExecuteParams(SPIN, options=ExecuteOptions(timeout=SPIN_TIMEOUT_S))
        if caller is None:
            await ex.execute(params, Listeners(on_call))
        else:
            with MontyEngine.caller(caller):
                await ex.execute(params, Listeners(on_call))

    tg.start_soon(spin)
    with anyio.fail_after(HANG_S):
        await busy.wait()


async def test_trivial_run_answers_while_cpu_bound_runs_hold_workers(parts: tuple[object, object, object]) -> None:
    # More CPU-bound runs than cores: the old pool (one worker per core) made every other run wait
    # for one of them to time out.
    index, store, runner = parts
    spinners = min((os.cpu_count() or 1) + 1, 8)
    async with executor_of(index=index, store=store, runner=runner) as ex:  # type: ignore[arg-type]
        async with anyio.create_task_group() as tg:
            for _ in range(spinners):
                await start_spinning(ex, tg)
            with anyio.fail_after(HANG_S):
                assert (await ex.execute(TRIVIAL)).value == 42
            tg.cancel_scope.cancel()


async def test_one_caller_cannot_take_every_worker(parts: tuple[object, object, object]) -> None:
    index, store, runner = parts
    engine = MontyEngine(max_processes=3, max_runs_per_caller=1, queue_timeout=0.5)
    try:
        ex = executor_of(index=index, store=store, runner=runner, engine=engine)  # type: ignore[arg-type]
        async with anyio.create_task_group() as tg:
            await start_spinning(ex, tg, caller="greedy")
            with MontyEngine.caller("greedy"), pytest.raises(EngineError) as ei:
                await ex.execute(TRIVIAL)
            assert "'greedy' already has 1 runs in progress (max_runs_per_caller)" in str(ei.value)
            with MontyEngine.caller("other"), anyio.fail_after(HANG_S):
                assert (await ex.execute(TRIVIAL)).value == 42
            tg.cancel_scope.cancel()
    finally:
        await engine.aclose()


async def test_a_full_pool_fails_clearly_after_the_queue_timeout(parts: tuple[object, object, object]) -> None:
    index, store, runner = parts
    engine = MontyEngine(max_processes=1, queue_timeout=0.3)
    try:
        ex = executor_of(index=index, store=store, runner=runner, engine=engine)  # type: ignore[arg-type]
        async with anyio.create_task_group() as tg:
            await start_spinning(ex, tg)
            with anyio.fail_after(HANG_S), pytest.raises(EngineError) as ei:
                await ex.execute(TRIVIAL)
            assert "all 1 sandbox workers are busy (max_processes); none became free within 0.3 s" in str(ei.value)
            tg.cancel_scope.cancel()
        # The slot comes back once the CPU-bound run is gone.
        with anyio.fail_after(HANG_S):
            assert (await ex.execute(TRIVIAL)).value == 42
    finally:
        await engine.aclose()


@pytest.mark.skipif(sys.platform != "linux", reason="workers run under the watchdog launcher on Linux only")
async def test_workers_run_at_a_lower_priority_under_the_watchdog(parts: tuple[object, object, object]) -> None:
    index, store, runner = parts
    engine = MontyEngine(worker_nice=7)
    # Other tests' engines may still have workers alive in this process: look at this engine's only.
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    try:
        ex = executor_of(index=index, store=store, runner=runner, engine=engine)  # type: ignore[arg-type]
        assert (await ex.execute(TRIVIAL)).value == 42
        started = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
        workers = [p for p in started if p.cmdline()[0].endswith("monty")]
        assert workers
        for worker in workers:
            assert worker.nice() == os.getpriority(os.PRIO_PROCESS, 0) + 7
            assert any(arg.endswith("_watchdog.py") for arg in worker.parent().cmdline())
    finally:
        await engine.aclose()


@pytest.mark.parametrize(
    "kwargs",
    [{"max_processes": 0}, {"min_processes": 3, "max_processes": 2}, {"queue_timeout": -1}, {"worker_nice": 20}],
)
def test_bad_pool_settings_are_refused(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        MontyEngine(**kwargs)  # type: ignore[arg-type]


async def two_namespaces() -> tuple[InMemoryIndex, DefaultRunner]:
    index, local = InMemoryIndex(), LocalBackend()

    @local.tool(namespace="a")
    async def one() -> int:
        """Return 1."""
        return 1

    @local.tool(namespace="b")
    async def two() -> int:
        """Return 2."""
        return 2

    await local.attach(index)
    return index, DefaultRunner(index, [local])


async def test_the_spare_worker_serves_only_runs_of_its_own_shape() -> None:
    # The pool checks a worker out ahead for the last run's shape (its limits, its `tools` package);
    # a run of another shape must not get it: its namespaces, its time limit and nothing else.
    index, runner = await two_namespaces()
    engine = MontyEngine(max_processes=4)
    # The check before the run is off: the sandbox itself must refuse a namespace outside the view.
    only = {name: ExecuteOptions(allowed_namespaces=(name,), type_check="off") for name in ("a", "b")}
    try:
        ex = Executor(Services.of(index, runner, engine=engine))
        for _ in range(3):
            assert (
                await ex.execute(ExecuteParams("from tools import a\n__out = a.one()", options=only["a"]))
            ).value == 1
            assert (
                await ex.execute(ExecuteParams("from tools import b\n__out = b.two()", options=only["b"]))
            ).value == 2
            with pytest.raises(CodeExecutionError):
                await ex.execute(ExecuteParams("from tools import a\n__out = a.one()", options=only["b"]))
            assert (await ex.execute(ExecuteParams("__out = 6 * 7"))).value == 42
        # A spare checked out for a 30-second run does not carry its limit into a 1-second one.
        t0 = time.monotonic()
        with pytest.raises(LimitExceededError) as ei:
            await ex.execute(
                ExecuteParams("while True:\n    pass", options=ExecuteOptions(timeout=1, type_check="off"))
            )
        assert ei.value.limit == "timeout" and time.monotonic() - t0 < HANG_S
    finally:
        await engine.aclose()
        await runner.aclose()


async def test_one_shot_runs_share_nothing_and_give_every_worker_back() -> None:
    index, runner = await two_namespaces()
    engine = MontyEngine(max_processes=3)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    try:
        ex = Executor(Services.of(index, runner, engine=engine))
        for i in range(40):
            assert (await ex.execute(ExecuteParams(f"secret = {i}\n__out = {i}"))).value == i
            with pytest.raises(CodeExecutionError) as ei:
                await ex.execute(ExecuteParams("__out = secret"))
            assert ei.value.exc_type == "NameError"
        started = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
        workers = [p for p in started if p.cmdline()[0].endswith("monty")]
        assert 1 <= len(workers) <= 3
    finally:
        await engine.aclose()
        await runner.aclose()
    # Closed: every worker was given back and the pool ended them.
    _, alive = await anyio.to_thread.run_sync(lambda: psutil.wait_procs(workers, timeout=HANG_S))
    assert not alive
