"""The conformance suite as a pytest base class: subclass it and provide an ``engine`` fixture."""

from __future__ import annotations

import pytest

from toolcode._types import Engine
from toolcode.testing._harness import ConformanceCheck, Harness
from toolcode.testing._suite import CHECKS

__all__ = ["EngineConformance"]


class EngineConformance:
    """Subclass in your tests to run every conformance check against your engine.

    Provide an ``engine`` fixture (function-scoped, closing the engine after the test) and an
    ``anyio_backend`` fixture returning ``"asyncio"``::

        class TestMyEngine(EngineConformance):
            @pytest.fixture
            async def engine(self):
                engine = MyEngine()
                yield engine
                await engine.aclose()

    Each check is one test, named by its id (``test_conformance[limits.timeout_cpu]``). A
    check in a category the engine declares unsupported (``engine.info.unsupported``) is
    reported as skipped with the engine's stated reason. Override the ``speculate`` fixture to run
    the checks with reads started before the code reaches them (see :class:`Harness`).
    """

    @pytest.fixture
    def speculate(self) -> bool:
        """Whether the checks' runs start known reads early (default off: the engine's own behaviour)."""
        return False

    @pytest.mark.anyio
    @pytest.mark.parametrize("check", CHECKS, ids=[c.id for c in CHECKS])
    async def test_conformance(self, engine: Engine, check: ConformanceCheck, speculate: bool) -> None:
        """Run one conformance check."""
        reason = engine.info.unsupported.get(check.category)
        if reason is not None:
            pytest.skip(f"declared unsupported by engine {engine.info.name!r}: {reason}")
        async with Harness(engine, speculate=speculate) as h:
            await check.fn(h)
