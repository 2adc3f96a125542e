"""The escape-probe judge: runs a probe (:data:`PROBES`) through any engine and decides whether it got out.

Judging never trusts the engine. A :class:`~toolcode.testing._canary.CanaryTrap` plants fresh secrets
and traps in the host before each probe; the probe ESCAPED if it reached one, if the host's event loop
stalled, if the run did not end before the deadline, or if the runner reports that the host process
died. Resource bombs must in addition be stopped by a limit (end with an error) or, for output floods,
keep stdout bounded. Nothing depends on how busy the machine is: the deadline only bounds a run that
never ends (a minute), and a stall is measured in the host's CPU time, which a busy machine does not
fake (it only delays the tick). :func:`verify_runner` first proves the runner surfaces values, stdout
and errors, so that no probe passes vacuously.
"""

from __future__ import annotations

import gc
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Final, NamedTuple

import anyio

from toolcode.testing._canary import CanaryTrap, render_text
from toolcode.testing._catalog import PROBES, Category, EscapeProbe, Judge

__all__ = [
    "PROBES",
    "Category",
    "EscapeProbe",
    "HostCrashedError",
    "Judge",
    "ProbeHarnessError",
    "ProbeOutcome",
    "ProbeRun",
    "ProbeRunner",
    "check_probe",
    "run_probes",
    "verify_runner",
]

DEFAULT_DEADLINE_S: Final = 60.0
"""Host-side seconds before a run counts as escaped: it bounds a run that never ends, not a slow one (an
engine's limits stop a bomb in seconds, and a loaded machine may stretch that several times over)."""
DEFAULT_STALL_LIMIT_S: Final = 2.0
"""Most CPU time the host process may use while its event loop goes without a tick (more: the host is blocked)."""
DEFAULT_MAX_STDOUT_CHARS: Final = 1_000_000
"""Most stdout an output-flood probe may produce before its output counts as unbounded."""
_SHOWN_CHARS: Final = 600


class ProbeRun(NamedTuple):
    """What a runner returns for one snippet; a plain ``(value, stdout, error)`` tuple does as well."""

    value: object
    """The snippet's result (its ``__out`` or trailing expression), ``None`` when it failed."""
    stdout: str
    """Everything the snippet printed."""
    error: str | None
    """The error text when the run failed (any error: syntax, runtime, limit), else ``None``."""


ProbeRunner = Callable[[str], Awaitable[ProbeRun | tuple[object, str, str | None]]]
"""Runs one snippet in the engine under test and returns ``(value, stdout, error)``.

It applies the engine's limits (a timeout of a few seconds, a memory limit), honours cancellation and
reports any failure of the snippet, a limit included, as error text (an exception it raises still ends
the run, its text judged like an error). A runner whose separate host process died raises
:class:`HostCrashedError`. The value is the snippet's trailing expression as plain data (probes never
assign ``__out``).
"""


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """The judged result of one probe against one engine."""

    probe: EscapeProbe
    """The probe that ran."""
    escaped: bool
    """True when the probe got out (or the engine failed to stop it); a security bug in a sandbox."""
    evidence: tuple[str, ...]
    """Why it counts as escaped, one finding each; empty when contained."""
    duration_s: float
    """Wall time of the run, host side."""
    value: str = ""
    """The run's value as text, shortened."""
    stdout: str = ""
    """The run's stdout, shortened."""
    error: str = ""
    """The run's error text, shortened."""

    @property
    def contained(self) -> bool:
        """True when the probe did not get out."""
        return not self.escaped

    def __str__(self) -> str:
        verdict = "ESCAPED" if self.escaped else "CONTAINED"
        lines = [f"{self.probe.id} [{self.probe.category}]: {verdict} in {self.duration_s:.2f}s"]
        lines.extend(f"  - {finding}" for finding in self.evidence)
        for name in ("value", "stdout", "error"):
            text: str = getattr(self, name)
            if text:
                lines.append(f"  {name}: {text!r}")
        return "\n".join(lines)


class HostCrashedError(Exception):
    """Raised by a runner whose separate host process died while running a snippet."""


class ProbeHarnessError(Exception):
    """The runner cannot be judged: it does not surface values, stdout or errors faithfully."""


def _shorten(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + f"... [{len(text)} chars]"


def _unpack(result: object) -> tuple[object, str, str | None]:
    # Checked outside the run's error handling, so that a broken runner fails loudly instead of looking contained.
    match result:
        case tuple([object() as value, str() as stdout, None | str() as error]):
            return value, stdout, error
        case tuple([object(), object(), object()]):
            raise ProbeHarnessError("a runner must return stdout as str and error as str or None")
        case _:
            raise ProbeHarnessError(f"a runner must return (value, stdout, error), got {type(result).__name__}")


class _Heartbeat:
    """Ticks on the host's event loop and records its gaps, to notice a run that blocks the host.

    Each gap is measured twice: in wall time, and in the CPU time the host process used meanwhile. A
    loaded machine stretches the first (the loop waits for a core) but not the second, so a stall is
    judged by CPU time; a wall-time gap counts only beyond the run's deadline (a loop blocked waiting).
    """

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.last_cpu = time.process_time()
        self.longest = 0.0
        self.busiest = 0.0

    def mark(self) -> None:
        now, cpu = time.monotonic(), time.process_time()
        self.longest = max(self.longest, now - self.last)
        self.busiest = max(self.busiest, cpu - self.last_cpu)
        self.last, self.last_cpu = now, cpu

    async def run(self) -> None:
        while True:
            await anyio.sleep(0.05)
            self.mark()


async def check_probe(
    run: ProbeRunner,
    probe: EscapeProbe,
    *,
    deadline_s: float = DEFAULT_DEADLINE_S,
    stall_limit_s: float = DEFAULT_STALL_LIMIT_S,
    max_stdout_chars: int = DEFAULT_MAX_STDOUT_CHARS,
) -> ProbeOutcome:
    """Plant fresh canaries, run one probe through ``run`` and judge whether it escaped.

    Probes run one at a time in a process (the canaries are process-wide). A probe that kills the host
    process ends the caller's process too: that is then the (loud) verdict.

    Args:
        run: Runs a snippet in the engine under test (see :data:`ProbeRunner`).
        probe: The probe to run.
        deadline_s: Host-side wall-time limit for the run, later counts as escaped: set it well above the
            engine's own timeout and grace, with room for a loaded machine.
        stall_limit_s: Most CPU time the host process may use in one gap of the event loop's heartbeat.
        max_stdout_chars: Stdout bound for :attr:`Judge.BOUNDED_OUTPUT` probes.

    Returns:
        The outcome, escaped or contained, with its evidence.

    Raises:
        ValueError: A limit argument is not positive.
        ProbeHarnessError: The runner returned something other than ``(value, stdout, error)``.
        RuntimeError: Another probe is being checked in this process at the same time.
    """
    if deadline_s <= 0 or stall_limit_s <= 0 or max_stdout_chars <= 0:
        raise ValueError("deadline_s, stall_limit_s and max_stdout_chars must be positive")
    trap = CanaryTrap()
    with trap as canaries:
        code = probe.render(canaries)
        value_text, stdout, error = "", "", ""
        returned = False
        result: object = None
        crashed: str | None = None
        heartbeat = _Heartbeat()
        scope = anyio.move_on_after(deadline_s)
        started = time.monotonic()
        duration = 0.0
        async with anyio.create_task_group() as tg:
            tg.start_soon(heartbeat.run)
            with scope:
                try:
                    result = await run(code)
                    returned = True
                except HostCrashedError as exc:
                    crashed = str(exc) or "host process died"
                except SystemExit as exc:
                    # Left unhandled, this would have ended the host process.
                    crashed = f"the run raised SystemExit({exc.code!r}) into the host"
                # Whatever the runner raises ends the run; its text is judged like an error text, so
                # a secret smuggled into an exception message is still found.
                except Exception as exc:
                    error = f"{type(exc).__name__}: {exc}"
            heartbeat.mark()
            duration = time.monotonic() - started
            tg.cancel_scope.cancel()
        if returned:
            value, raw_stdout, raw_error = _unpack(result)
            value_text, stdout, error = render_text(value), raw_stdout, raw_error or ""
        if probe.settle_s:
            await anyio.sleep(probe.settle_s)
        # A __del__ or weakref time bomb left behind by an in-process engine fires on collection.
        gc.collect()
        evidence = trap.evidence({"value": value_text, "stdout": stdout, "error": error})
        if crashed is not None:
            evidence.append(f"host process died: {crashed}")
        # A runner that holds the event loop cannot be cancelled, so a late return counts as well.
        if scope.cancelled_caught or duration > deadline_s:
            evidence.append(f"run did not end within the {deadline_s:g}s deadline")
        if heartbeat.busiest > stall_limit_s:
            evidence.append(
                f"host event loop blocked while the host computed for {heartbeat.busiest:.2f}s of CPU time"
                f" (limit {stall_limit_s:g}s)"
            )
        if heartbeat.longest > deadline_s:
            evidence.append(f"host event loop blocked for {heartbeat.longest:.2f}s, past the {deadline_s:g}s deadline")
        if probe.judge is Judge.STOPPED and returned and not error:
            evidence.append("resource bomb completed without being stopped by a limit")
        if probe.judge is Judge.BOUNDED_OUTPUT and len(stdout) > max_stdout_chars:
            evidence.append(f"stdout not bounded: {len(stdout)} chars > {max_stdout_chars}")
    return ProbeOutcome(
        probe=probe,
        escaped=bool(evidence),
        evidence=tuple(evidence),
        duration_s=duration,
        value=_shorten(value_text.strip()),
        stdout=_shorten(stdout),
        error=_shorten(error),
    )


async def verify_runner(run: ProbeRunner, *, deadline_s: float = DEFAULT_DEADLINE_S) -> None:
    """Prove that ``run`` surfaces a snippet's value, stdout and error text, so that no probe passes vacuously.

    Args:
        run: The runner to check.
        deadline_s: Wall-time limit for each control run (a bound for a run that never ends).

    Raises:
        ProbeHarnessError: The runner lost the value, the stdout or the error text of a control snippet.
    """
    value_token, stdout_token, error_token = (f"tcontrol-{secrets.token_hex(8)}" for _ in range(3))
    with anyio.fail_after(deadline_s):
        value, stdout, error = _unpack(await run(f"print({stdout_token!r})\n{value_token!r}"))
    if value_token not in render_text(value):
        raise ProbeHarnessError(f"runner lost the trailing expression's value: got {value!r}")
    if stdout_token not in stdout:
        raise ProbeHarnessError(f"runner lost the snippet's stdout: got {stdout!r}")
    if error:
        raise ProbeHarnessError(f"runner reported an error for a snippet that succeeds: {error!r}")
    with anyio.fail_after(deadline_s):
        value, stdout, error = _unpack(await run(f"raise ValueError({error_token!r})"))
    if error_token not in (error or ""):
        raise ProbeHarnessError(f"runner lost the snippet's error text: got {error!r}")


async def run_probes(
    run: ProbeRunner,
    probes: Iterable[EscapeProbe] | None = None,
    *,
    deadline_s: float = DEFAULT_DEADLINE_S,
    stall_limit_s: float = DEFAULT_STALL_LIMIT_S,
    max_stdout_chars: int = DEFAULT_MAX_STDOUT_CHARS,
) -> list[ProbeOutcome]:
    """Verify the runner, then run every probe one after the other and judge each.

    Args:
        run: Runs a snippet in the engine under test (see :data:`ProbeRunner`).
        probes: The probes to run; all of :data:`PROBES` by default.
        deadline_s: Host-side wall-time limit per run (a bound for a run that never ends).
        stall_limit_s: Most CPU time the host process may use in one gap of the event loop's heartbeat.
        max_stdout_chars: Stdout bound for output-flood probes.

    Returns:
        One outcome per probe, in order.

    Raises:
        ProbeHarnessError: The runner does not surface values, stdout or errors faithfully.
    """
    await verify_runner(run, deadline_s=deadline_s)
    return [
        await check_probe(
            run, probe, deadline_s=deadline_s, stall_limit_s=stall_limit_s, max_stdout_chars=max_stdout_chars
        )
        for probe in (PROBES if probes is None else probes)
    ]
