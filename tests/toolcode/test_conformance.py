"""The public conformance suite, run against both built-in engines."""

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, cast

import anyio
import pytest

from toolcode import ExecuteParams, ExecuteResult, MontyEngine, Tools, UnsafeInProcessEngine
from toolcode.testing import CHECKS, EngineConformance, _harness, run_check

SPECULATE = os.environ.get("TOOLCODE_TEST_SPECULATE", "off") == "on"
"""``TOOLCODE_TEST_SPECULATE=on`` runs every check with known reads started early (CI runs the suite both ways)."""


class _Conformance(EngineConformance):
    @pytest.fixture
    def speculate(self) -> bool:
        return SPECULATE


class TestMontyEngine(_Conformance):
    @pytest.fixture
    async def engine(self) -> AsyncIterator[MontyEngine]:
        engine = MontyEngine()
        yield engine
        await engine.aclose()


class TestUnsafeInProcessEngine(_Conformance):
    @pytest.fixture
    async def engine(self) -> AsyncIterator[UnsafeInProcessEngine]:
        engine = UnsafeInProcessEngine()
        yield engine
        await engine.aclose()


def test_suite_has_every_category_and_40_probes() -> None:
    categories = {c.category for c in CHECKS}
    assert categories == {"result", "api", "errors", "limits", "trace", "fanout", "engine", "escape"}
    assert sum(c.category == "escape" for c in CHECKS) >= 41  # the runner check plus at least 40 probes
    assert len({c.id for c in CHECKS}) == len(CHECKS)


@pytest.mark.anyio
async def test_inprocess_declares_escape_probes_unsupported_with_a_reason() -> None:
    engine = UnsafeInProcessEngine()
    probe = next(c for c in CHECKS if c.category == "escape" and c.id != "escape.probe_runner")
    outcome = await run_check(engine, probe)
    assert outcome.status == "unsupported"
    assert "not a sandbox" in outcome.detail


class _OneCallAtATime:
    """The built-in tools environment, with every tool call made under one lock: no two overlap."""

    def __init__(self, tools: Tools) -> None:
        self._tools = tools
        self._lock = anyio.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tools, name)

    async def run_tool(self, tool_id: Any, args: Any = None, **kwargs: Any) -> Any:
        async with self._lock:
            return await self._tools.run_tool(tool_id, args, **kwargs)

    async def run_tools(self, calls: Sequence[Any]) -> list[Any]:
        results: list[Any] = []
        for call in calls:
            async with self._lock:
                results.extend(await self._tools.run_tools([call]))
        return results

    async def call_function(self, module: str, function: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        async with self._lock:
            return await self._tools.call_function(module, function, args, kwargs)


class _SerialEngine(UnsafeInProcessEngine):
    """An engine whose fan-out does not overlap: what the fan-out checks must catch."""

    async def execute(self, params: ExecuteParams, tools: Tools) -> ExecuteResult:
        return await super().execute(params, cast(Tools, _OneCallAtATime(tools)))


@pytest.mark.anyio
@pytest.mark.parametrize(
    "check_id",
    ["fanout.run_tools_overlap", "fanout.gather_overlap", "fanout.gather_with_sleep", "api.namespace_modules_async"],
)
async def test_overlap_checks_fail_an_engine_that_makes_one_call_at_a_time(
    monkeypatch: pytest.MonkeyPatch, check_id: str
) -> None:
    # The checks hold however busy the machine is: calls wait for one another, with no wall-time figure.
    # A short wait keeps this test quick; the suite waits HANG_S.
    monkeypatch.setattr(_harness, "HANG_S", 0.5)
    check = next(c for c in CHECKS if c.id == check_id)
    engine = _SerialEngine()
    try:
        assert (await run_check(UnsafeInProcessEngine(), check)).status == "passed"
        outcome = await run_check(engine, check)
    finally:
        await engine.aclose()
    assert outcome.status == "failed"
    assert "calls were in flight at once" in outcome.detail, outcome.detail


class _SlowToStartEngine(UnsafeInProcessEngine):
    """An engine on a busy machine: each run takes 0.7 s to reach the snippet."""

    async def execute(self, params: ExecuteParams, tools: Tools) -> ExecuteResult:
        await anyio.sleep(0.7)
        return await super().execute(params, tools)


@pytest.mark.anyio
async def test_a_timeout_that_fires_before_the_snippet_reaches_its_call_is_tried_again_longer() -> None:
    # With the 0.5 s timeout the run ends before its tool call starts; the check does not fail the
    # engine for that, it tries again with a longer timeout and then finds the cut call in the trace.
    check = next(c for c in CHECKS if c.id == "limits.timeout_tool")
    engine = _SlowToStartEngine()
    try:
        outcome = await run_check(engine, check)
    finally:
        await engine.aclose()
    assert outcome.status == "passed", outcome.detail
