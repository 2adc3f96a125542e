"""Testing helpers: the engine conformance suite and the sandbox-escape probes.

Run every check against an engine, with pytest::

    from toolcode.testing import EngineConformance

    class TestMyEngine(EngineConformance):
        @pytest.fixture
        async def engine(self):
            ...

or without it: ``report = await run_conformance(MyEngine()); assert report.ok, report.summary()``.
``EngineConformance`` needs pytest (and its anyio plugin) installed; the rest does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcode.testing._harness import Harness
from toolcode.testing._probes import PROBES, EscapeProbe, ProbeOutcome, ProbeRun, check_probe, run_probes, verify_runner
from toolcode.testing._suite import (
    CHECKS,
    CheckOutcome,
    ConformanceCheck,
    ConformanceReport,
    run_check,
    run_conformance,
)

if TYPE_CHECKING:
    from toolcode.testing._suite_pytest import EngineConformance

__all__ = [
    "CHECKS",
    "PROBES",
    "CheckOutcome",
    "ConformanceCheck",
    "ConformanceReport",
    "EngineConformance",
    "EscapeProbe",
    "Harness",
    "ProbeOutcome",
    "ProbeRun",
    "check_probe",
    "run_check",
    "run_conformance",
    "run_probes",
    "verify_runner",
]


def __getattr__(name: str) -> Any:
    # Imported on demand so that the suite runs without pytest installed.
    if name == "EngineConformance":
        from toolcode.testing._suite_pytest import EngineConformance

        return EngineConformance
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
