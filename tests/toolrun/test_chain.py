"""run_chain: use_previous, on_error continue/abort, partial results, step limits."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from toolindex import InMemoryIndex, ToolNotFoundError
from toolrun import (
    ChainError,
    ChainStep,
    DefaultRunner,
    InputValidationError,
    LocalBackend,
    ToolExecutionError,
    ToolTimeoutError,
)

HANG_S = 60
"""Seconds after which a call counts as hung: a bound for a hang, not a speed (the calls bounded by it take
milliseconds, or their own timeout of a fraction of a second; a busy machine stretches that to seconds)."""


def backend(calls: list[str]) -> LocalBackend:
    local = LocalBackend()

    @local.tool(namespace="c", inline=True)
    def start(n: int) -> dict[str, int]:
        calls.append("start")
        return {"n": n}

    @local.tool(namespace="c", inline=True)
    def double(previous: dict[str, int]) -> dict[str, int]:
        calls.append("double")
        return {"n": previous["n"] * 2}

    @local.tool(namespace="c", inline=True)
    def show(previous: Any = None, prefix: str = "") -> str:
        calls.append("show")
        return f"{prefix}{previous}"

    @local.tool(namespace="c")
    async def fail(reason: str = "bad") -> int:
        calls.append("fail")
        raise RuntimeError(reason)

    @local.tool(namespace="c")
    async def hang() -> int:
        calls.append("hang")
        await anyio.Event().wait()
        return 0

    return local


async def runner_with(calls: list[str], **kw: Any) -> DefaultRunner:
    runner = DefaultRunner(InMemoryIndex(), [backend(calls)], **kw)
    await runner.attach()
    return runner


@pytest.mark.anyio
async def test_use_previous_passes_each_value_on() -> None:
    calls: list[str] = []
    async with await runner_with(calls) as runner:
        chain = await runner.run_chain(
            [
                ChainStep("c:start", {"n": 3}),
                ChainStep("c:double", use_previous=True),
                ChainStep("c:double", use_previous=True),
                ChainStep("c:show", {"prefix": "n="}, use_previous=True),
            ]
        )
    assert not chain.aborted
    assert [s.ok for s in chain.steps] == [True] * 4
    assert [s.index for s in chain.steps] == [0, 1, 2, 3]
    assert [s.result.structured for s in chain.steps if s.result] == [{"n": 3}, {"n": 6}, {"n": 12}, "n={'n': 12}"]
    assert chain.final is not None and chain.final.structured == "n={'n': 12}"
    assert all(s.duration_ms > 0 for s in chain.steps)
    assert chain.duration_ms >= sum(s.duration_ms for s in chain.steps) * 0.99


@pytest.mark.anyio
async def test_abort_stops_at_the_failure_and_keeps_the_partial_results() -> None:
    calls: list[str] = []
    async with await runner_with(calls) as runner:
        chain = await runner.run_chain(
            [
                ChainStep("c:start", {"n": 1}),
                ChainStep("c:fail", {"reason": "disk full"}),
                ChainStep("c:show", {"prefix": "never"}),
            ]
        )
    assert chain.aborted
    assert calls == ["start", "fail"]
    assert len(chain.steps) == 2
    assert chain.steps[0].result is not None and chain.steps[0].result.structured == {"n": 1}
    failed = chain.steps[1]
    assert not failed.ok and failed.result is None
    assert isinstance(failed.error, ToolExecutionError)
    assert "disk full" in str(failed.error)
    assert failed.duration_ms > 0
    assert chain.final is chain.steps[0].result


@pytest.mark.anyio
async def test_continue_records_the_failure_and_goes_on() -> None:
    calls: list[str] = []
    async with await runner_with(calls) as runner:
        chain = await runner.run_chain(
            [
                ChainStep("c:fail", on_error="continue"),
                ChainStep("c:nope", on_error="continue"),
                ChainStep("c:start", {"n": "x"}, on_error="continue"),
                ChainStep("c:start", {"n": 5}),
            ]
        )
    assert not chain.aborted
    assert [type(s.error).__name__ if s.error else None for s in chain.steps] == [
        "ToolExecutionError",
        "ToolNotFoundError",
        "InputValidationError",
        None,
    ]
    assert isinstance(chain.steps[1].error, ToolNotFoundError)
    assert isinstance(chain.steps[2].error, InputValidationError)
    assert chain.final is not None and chain.final.structured == {"n": 5}


@pytest.mark.anyio
async def test_use_previous_after_a_failed_step_fails_that_step() -> None:
    calls: list[str] = []
    async with await runner_with(calls) as runner:
        chain = await runner.run_chain(
            [
                ChainStep("c:fail", on_error="continue"),
                ChainStep("c:show", use_previous=True, on_error="continue"),
                ChainStep("c:show", {"prefix": "p"}),
            ]
        )
    assert isinstance(chain.steps[1].error, ChainError)
    assert "step 0 failed" in str(chain.steps[1].error)
    assert calls == ["fail", "show"]
    assert chain.steps[2].ok


@pytest.mark.anyio
async def test_max_steps_is_enforced_before_anything_runs() -> None:
    calls: list[str] = []
    async with await runner_with(calls, max_chain_steps=3) as runner:
        with pytest.raises(ChainError, match="4 steps; at most 3"):
            await runner.run_chain([ChainStep("c:start", {"n": i}) for i in range(4)])
        assert calls == []
        ok = await runner.run_chain([ChainStep("c:start", {"n": i}) for i in range(3)])
    assert len(ok.steps) == 3


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([ChainStep("c:show", use_previous=True)], "first step"),
        ([ChainStep("c:start", {"n": 1}), ChainStep("c:show", {"previous": 1}, use_previous=True)], "previous"),
        ([ChainStep("c:start", {"n": 1}), {"tool_id": "c:show"}], "not a ChainStep"),
        ([ChainStep("c:start", ["n"])], "mapping"),  # type: ignore[arg-type]
        ([ChainStep("c:start", {"n": 1}, on_error="retry")], "on_error"),  # type: ignore[arg-type]
        ([ChainStep("")], "no tool id"),
    ],
)
@pytest.mark.anyio
async def test_malformed_chains_are_rejected_before_running(steps: list[Any], message: str) -> None:
    calls: list[str] = []
    async with await runner_with(calls) as runner:
        with pytest.raises(ChainError, match=message):
            await runner.run_chain(steps)
    assert calls == []


@pytest.mark.anyio
async def test_empty_chain() -> None:
    async with await runner_with([]) as runner:
        chain = await runner.run_chain([])
    assert chain.steps == () and not chain.aborted and chain.final is None


@pytest.mark.anyio
async def test_per_step_timeout() -> None:
    calls: list[str] = []
    async with await runner_with(calls) as runner:
        with anyio.fail_after(HANG_S):
            chain = await runner.run_chain(
                [ChainStep("c:hang", on_error="continue"), ChainStep("c:start", {"n": 1})], timeout=0.05
            )
    assert isinstance(chain.steps[0].error, ToolTimeoutError)
    assert chain.steps[1].ok


@pytest.mark.anyio
async def test_chain_steps_share_the_pipeline_store() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.ids: list[str] = []

        def record_result(self, tool_id: str, value: Any) -> None:
            self.ids.append(tool_id)

    store = Recorder()
    async with await runner_with([], store=store) as runner:
        await runner.run_chain([ChainStep("c:start", {"n": 1}), ChainStep("c:fail", on_error="continue")])
    assert store.ids == ["c:start"]
