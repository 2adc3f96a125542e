"""The public conformance suite, run against both built-in engines."""

from collections.abc import AsyncIterator

import pytest

from toolcode import MontyEngine, UnsafeInProcessEngine
from toolcode.testing import CHECKS, EngineConformance, run_check


class TestMontyEngine(EngineConformance):
    @pytest.fixture
    async def engine(self) -> AsyncIterator[MontyEngine]:
        engine = MontyEngine()
        yield engine
        await engine.aclose()


class TestUnsafeInProcessEngine(EngineConformance):
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
