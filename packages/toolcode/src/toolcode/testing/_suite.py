"""The engine conformance suite: :data:`CHECKS` any :class:`~toolcode.Engine` must pass, with or without pytest.

Each check runs snippets through a :class:`~toolcode.testing.Harness` and raises ``AssertionError`` when
the engine misbehaves. An engine may declare a category unsupported in ``engine.info.unsupported``; its
checks are then reported as *unsupported*, with the engine's reason, never silently skipped. No check
depends on how busy the machine is: overlap is shown by calls that wait for each other (``conf:meet``)
and by the order of events, a limit must fire no earlier than configured, and the time it may take
beyond that only bounds a run that never stops (``HANG_S``). How fast an engine is belongs in a benchmark.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from toolcode._types import Engine
from toolcode.testing._checks_run import CHECKS as RUN_CHECKS
from toolcode.testing._checks_snippet import CHECKS as SNIPPET_CHECKS
from toolcode.testing._harness import ConformanceCheck, Harness

__all__ = ["CHECKS", "CheckOutcome", "ConformanceCheck", "ConformanceReport", "run_check", "run_conformance"]

Status = Literal["passed", "failed", "unsupported"]

CHECKS: list[ConformanceCheck] = [*SNIPPET_CHECKS, *RUN_CHECKS]
"""Every check, by category: result, api, errors, limits, trace, fanout, engine, escape."""


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """The result of one check against one engine."""

    check: ConformanceCheck
    status: Status
    detail: str = ""
    duration_s: float = 0.0


@dataclass(frozen=True, slots=True)
class ConformanceReport:
    """Every check's outcome for one engine."""

    engine: str
    outcomes: tuple[CheckOutcome, ...]

    @property
    def failed(self) -> list[CheckOutcome]:
        """The checks that failed."""
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def ok(self) -> bool:
        """Whether no check failed (unsupported ones are declared, not failures)."""
        return not self.failed

    def summary(self) -> str:
        """One line per check: status, id and detail."""
        return "\n".join(f"{o.status:11} {o.check.id}{': ' + o.detail if o.detail else ''}" for o in self.outcomes)


async def run_check(engine: Engine, check: ConformanceCheck) -> CheckOutcome:
    """Run one check against an engine.

    Args:
        engine: The engine under test.
        check: The check.

    Returns:
        ``passed``, ``failed`` (with the assertion text) or ``unsupported`` (with the engine's reason).
    """
    reason = engine.info.unsupported.get(check.category)
    if reason is not None:
        return CheckOutcome(check, "unsupported", f"declared by engine {engine.info.name!r}: {reason}")
    t0 = time.perf_counter()
    try:
        async with Harness(engine) as h:
            await check.fn(h)
    except AssertionError as e:
        return CheckOutcome(check, "failed", str(e) or "assertion failed", time.perf_counter() - t0)
    except Exception as e:  # any other failure of the engine is a failed check, reported with its type
        return CheckOutcome(check, "failed", f"{type(e).__name__}: {e}", time.perf_counter() - t0)
    return CheckOutcome(check, "passed", "", time.perf_counter() - t0)


async def run_conformance(
    engine: Engine, *, categories: Sequence[str] | None = None, checks: Sequence[ConformanceCheck] | None = None
) -> ConformanceReport:
    """Run the conformance suite against an engine, one check after another.

    Args:
        engine: The engine under test (not closed).
        categories: Only these categories (default: all).
        checks: Only these checks (default: :data:`CHECKS`).

    Returns:
        The report; ``report.ok`` is ``False`` when any check failed.
    """
    selected = [c for c in (checks or CHECKS) if categories is None or c.category in categories]
    outcomes = [await run_check(engine, c) for c in selected]
    return ConformanceReport(engine.info.name, tuple(outcomes))
