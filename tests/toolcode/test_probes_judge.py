"""The probe judge: every kind of evidence is caught, a clean run is contained, and the runner check bites.

The runners here stand in for an engine on purpose: each one does exactly one thing an escaping engine
would do (read a canary, create a file, hang, block the loop...), so that each finding is shown to fire.
"""

from __future__ import annotations

import ast
import os
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from toolcode.testing import _canary
from toolcode.testing._canary import CANARY_ENV_VAR, CanaryTrap, render_text
from toolcode.testing._probes import (
    PROBES,
    Category,
    EscapeProbe,
    HostCrashedError,
    Judge,
    ProbeHarnessError,
    ProbeRun,
    check_probe,
    run_probes,
    verify_runner,
)

pytestmark = pytest.mark.anyio

# The placeholders on three lines, so a runner can learn the paths and port the way a probe would.
LOCATOR = EscapeProbe(
    id="locator",
    category=Category.OPEN_IO,
    title="names the canary locations",
    source="test",
    code="__CANARY_PATH__\n__WITNESS_PATH__\n__CANARY_PORT__\n",
)


def locations(code: str) -> tuple[Path, Path, int]:
    canary, witness, port = (ast.literal_eval(line) for line in code.splitlines())
    return Path(canary), Path(witness), int(port)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def clean(code: str) -> ProbeRun:
    return ProbeRun("ok", "printed\n", None)


async def test_clean_run_is_contained() -> None:
    outcome = await check_probe(clean, LOCATOR)
    assert outcome.contained and not outcome.evidence
    assert outcome.value == "ok" and outcome.stdout == "printed\n"


@pytest.mark.parametrize(
    ("runner_output", "finding"),
    [
        (lambda: ProbeRun(os.environ[CANARY_ENV_VAR], "", None), "environment secret found in value"),
        (lambda: ProbeRun(None, f"x{_canary.HOST_MEMORY_SECRET}x", None), "host memory secret found in stdout"),
        (lambda: ProbeRun(None, "", f"KeyError: {os.environ[CANARY_ENV_VAR]!r}"), "environment secret found in error"),
        (lambda: ProbeRun({"k": [b"a", (os.environ[CANARY_ENV_VAR].encode(),)]}, "", None), "environment secret"),
    ],
)
async def test_a_secret_in_any_channel_is_an_escape(runner_output: Callable[[], ProbeRun], finding: str) -> None:
    async def leak(code: str) -> ProbeRun:
        return runner_output()

    outcome = await check_probe(leak, LOCATOR)
    assert outcome.escaped
    assert any(finding in item for item in outcome.evidence), outcome


async def test_file_secret_read_through_the_path_is_an_escape() -> None:
    async def read(code: str) -> ProbeRun:
        canary, _, _ = locations(code)
        return ProbeRun(canary.read_text(), "", None)

    outcome = await check_probe(read, LOCATOR)
    assert outcome.evidence == ("file secret found in value",)


async def test_secret_in_a_raised_exception_is_an_escape() -> None:
    async def raise_secret(code: str) -> ProbeRun:
        raise RuntimeError(os.environ[CANARY_ENV_VAR])

    outcome = await check_probe(raise_secret, LOCATOR)
    assert outcome.evidence == ("environment secret found in error",)


async def test_side_effects_in_the_host_are_escapes() -> None:
    ports: list[int] = []

    async def touch(code: str) -> ProbeRun:
        canary, witness, port = locations(code)
        ports.append(port)
        witness.write_text("x")
        (canary.parent / "other").write_text("x")
        canary.write_text("changed")
        os.environ[CANARY_ENV_VAR] = "changed"
        _canary.HOST_MEMORY_SECRET = "changed"  # pyright: ignore[reportConstantRedefinition]
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return ProbeRun(None, "", "contained-looking error")

    outcome = await check_probe(touch, LOCATOR)
    assert set(outcome.evidence) == {
        "witness file created",
        "file 'other' created in the canary directory",
        "canary file modified",
        f"host environment variable {CANARY_ENV_VAR} modified",
        "host memory canary modified",
        f"network connection made to the host canary port {ports[0]}",
    }


async def test_canary_file_removed_is_an_escape() -> None:
    async def remove(code: str) -> ProbeRun:
        locations(code)[0].unlink()
        return ProbeRun(None, "", None)

    outcome = await check_probe(remove, LOCATOR)
    assert outcome.evidence == ("canary file removed or made unreadable",)


async def test_del_time_bomb_left_in_the_host_fires_during_judging() -> None:
    class Bomb:
        def __init__(self, path: Path) -> None:
            self.path = path
            self.cycle = self

        def __del__(self) -> None:
            self.path.write_text("boom")

    async def plant(code: str) -> ProbeRun:
        Bomb(locations(code)[1])
        return ProbeRun("planted", "", None)

    outcome = await check_probe(plant, LOCATOR)
    assert outcome.evidence == ("witness file created",)


async def test_host_crash_reported_by_the_runner_is_an_escape() -> None:
    async def crash(code: str) -> ProbeRun:
        raise HostCrashedError("killed by signal 9")

    outcome = await check_probe(crash, LOCATOR)
    assert outcome.evidence == ("host process died: killed by signal 9",)


async def test_run_past_the_deadline_is_an_escape_and_is_cut_off() -> None:
    async def hang(code: str) -> ProbeRun:
        await anyio.Event().wait()
        raise AssertionError("unreachable")

    with anyio.fail_after(60):  # only a real hang: the judge cancels the run at 0.3 s
        outcome = await check_probe(hang, LOCATOR, deadline_s=0.3)
    assert outcome.evidence == ("run did not end within the 0.3s deadline",)
    assert outcome.duration_s >= 0.3


async def test_computing_on_the_host_event_loop_is_an_escape() -> None:
    async def block(code: str) -> ProbeRun:
        # The behaviour under test: a synchronous engine that computes on the host's event loop. It
        # burns CPU time, not wall time, so that a loaded machine cannot make it block for less.
        end = time.process_time() + 0.5
        while time.process_time() < end:
            pass
        return ProbeRun(None, "", "TimeoutError")

    outcome = await check_probe(block, LOCATOR, stall_limit_s=0.2)
    assert len(outcome.evidence) == 1, outcome.evidence
    assert outcome.evidence[0].startswith("host event loop blocked while the host computed for")


async def test_waiting_on_the_host_event_loop_past_the_deadline_is_an_escape() -> None:
    async def block(code: str) -> ProbeRun:
        # A synchronous engine waiting for its worker: no CPU time, and no cancellation can stop it.
        time.sleep(0.6)  # noqa: ASYNC251 - the blocked loop is the behaviour under test
        return ProbeRun(None, "", "TimeoutError")

    outcome = await check_probe(block, LOCATOR, deadline_s=0.3)
    assert outcome.evidence[0] == "run did not end within the 0.3s deadline"
    assert outcome.evidence[1].startswith("host event loop blocked for")
    assert outcome.evidence[1].endswith("past the 0.3s deadline")
    assert len(outcome.evidence) == 2, outcome.evidence


async def test_a_loop_that_waits_for_a_busy_machine_is_not_blocked() -> None:
    async def descheduled(code: str) -> ProbeRun:
        # What a loaded machine does to the host: the loop gets no tick for a while, and computes nothing.
        time.sleep(0.5)  # noqa: ASYNC251 - stands for the time the host waits for a core
        return ProbeRun(None, "", "TimeoutError")

    outcome = await check_probe(descheduled, LOCATOR, stall_limit_s=0.2)
    assert outcome.contained, outcome.evidence


async def test_resource_bomb_must_be_stopped_by_an_error() -> None:
    bomb = next(p for p in PROBES if p.id == "resource-cpu-loop")
    assert bomb.judge is Judge.STOPPED

    async def finishes(code: str) -> ProbeRun:
        return ProbeRun(None, "", None)

    async def stopped(code: str) -> ProbeRun:
        return ProbeRun(None, "", "LimitExceededError: timeout 1s")

    assert (await check_probe(finishes, bomb)).evidence == ("resource bomb completed without being stopped by a limit",)
    assert (await check_probe(stopped, bomb)).contained


async def test_output_flood_must_stay_bounded() -> None:
    flood = next(p for p in PROBES if p.id == "resource-output-flood-single")
    assert flood.judge is Judge.BOUNDED_OUTPUT

    async def unbounded(code: str) -> ProbeRun:
        return ProbeRun("printed", "x" * 1001, None)

    async def truncated(code: str) -> ProbeRun:
        return ProbeRun("printed", "x" * 1000, None)

    assert (await check_probe(unbounded, flood, max_stdout_chars=1000)).evidence == (
        "stdout not bounded: 1001 chars > 1000",
    )
    assert (await check_probe(truncated, flood, max_stdout_chars=1000)).contained


async def test_canaries_are_removed_and_the_environment_restored() -> None:
    os.environ[CANARY_ENV_VAR] = "previous"
    try:
        seen: list[Path] = []

        async def record(code: str) -> ProbeRun:
            seen.append(locations(code)[0].parent)
            assert os.environ[CANARY_ENV_VAR] != "previous"
            assert _canary.HOST_MEMORY_SECRET.startswith("tcanary-memory-")
            return ProbeRun(None, "", None)

        await check_probe(record, LOCATOR)
        assert os.environ[CANARY_ENV_VAR] == "previous"
        assert _canary.HOST_MEMORY_SECRET == ""
        assert not seen[0].exists()
    finally:
        del os.environ[CANARY_ENV_VAR]


def test_probe_code_never_contains_a_secret_and_every_placeholder_is_replaced() -> None:
    with CanaryTrap() as canaries:
        for probe in PROBES:
            code = probe.render(canaries)
            for secret in canaries.secrets().values():
                assert secret not in code, probe.id
            for token in canaries.substitutions():
                assert token not in code, probe.id
            compile(code, probe.id, "exec")


def test_fresh_secrets_and_locations_for_every_trap() -> None:
    with CanaryTrap() as first:
        pass
    with CanaryTrap() as second:
        pass
    assert first.env_secret != second.env_secret and first.file_secret != second.file_secret
    assert first.memory_secret != second.memory_secret and first.directory != second.directory
    assert not first.witness_path.exists() and not first.directory.exists()


def test_render_text_finds_secrets_without_running_the_values_code() -> None:
    calls: list[str] = []

    class Sneaky(str):
        def __str__(self) -> str:
            calls.append("str")
            return "hidden"

    class Loud:
        def __repr__(self) -> str:
            calls.append("repr")
            return "SECRET-FROM-REPR"

    class Iterating(list[object]):
        def __iter__(self) -> Iterator[object]:
            calls.append("iter")
            return iter(["SECRET-FROM-ITER"])

    text = render_text({"a": Sneaky("SECRET-1"), "b": [Loud(), Iterating(["SECRET-2"])], 3: b"SECRET-3", 4: 10**5000})
    assert "SECRET-1" in text and "SECRET-2" in text and "SECRET-3" in text
    assert "SECRET-FROM" not in text and not calls


async def test_verify_runner_accepts_a_faithful_runner() -> None:
    async def faithful(code: str) -> ProbeRun:
        lines = code.splitlines()
        if lines[0].startswith("raise ValueError("):
            return ProbeRun(None, "", f"ValueError: {ast.literal_eval(lines[0][len('raise ValueError(') : -1])}")
        printed = ast.literal_eval(lines[0][len("print(") : -1])
        return ProbeRun(ast.literal_eval(lines[-1]), printed + "\n", None)

    await verify_runner(faithful)


@pytest.mark.parametrize("drop", ["value", "stdout", "error", "spurious-error"])
async def test_verify_runner_rejects_a_runner_that_loses_output(drop: str) -> None:
    async def lossy(code: str) -> ProbeRun:
        lines = code.splitlines()
        if lines[0].startswith("raise ValueError("):
            message = ast.literal_eval(lines[0][len("raise ValueError(") : -1])
            return ProbeRun(None, "", "error" if drop == "error" else f"ValueError: {message}")
        value = None if drop == "value" else ast.literal_eval(lines[-1])
        stdout = "" if drop == "stdout" else ast.literal_eval(lines[0][len("print(") : -1])
        return ProbeRun(value, stdout, "warning" if drop == "spurious-error" else None)

    with pytest.raises(ProbeHarnessError):
        await verify_runner(lossy)
    with pytest.raises(ProbeHarnessError):
        await run_probes(lossy, PROBES[:1])


async def test_run_probes_judges_each_probe_in_order() -> None:
    async def leaky(code: str) -> ProbeRun:
        lines = code.splitlines()
        if lines[0].startswith("raise ValueError("):
            return ProbeRun(None, "", lines[0])
        if lines[0].startswith("print("):
            return ProbeRun(ast.literal_eval(lines[-1]), ast.literal_eval(lines[0][len("print(") : -1]), None)
        return ProbeRun(os.environ[CANARY_ENV_VAR], "", None)

    chosen = [p for p in PROBES if p.judge is Judge.LEAK][:3]
    outcomes = await run_probes(leaky, chosen)
    assert [o.probe for o in outcomes] == chosen
    assert all(o.escaped for o in outcomes)


async def test_check_probe_rejects_nonpositive_limits() -> None:
    with pytest.raises(ValueError, match="positive"):
        await check_probe(clean, LOCATOR, deadline_s=0)


@pytest.mark.parametrize("returned", [None, ("value", "stdout"), ("value", None, None), ("v", "", 3)])
async def test_a_runner_returning_the_wrong_shape_fails_loudly(returned: object) -> None:
    async def broken(code: str) -> ProbeRun:
        return returned  # type: ignore[return-value]  # pyright: ignore[reportReturnType]

    with pytest.raises(ProbeHarnessError):
        await check_probe(broken, LOCATOR)


async def test_overlapping_probe_checks_are_refused() -> None:
    async def nested(code: str) -> ProbeRun:
        await check_probe(clean, LOCATOR)
        return ProbeRun(None, "", None)

    # The refusal surfaces as the outer run's error text: a runner's exception ends its run.
    outcome = await check_probe(nested, LOCATOR)
    assert "one at a time" in outcome.error
    with CanaryTrap(), pytest.raises(RuntimeError, match="one at a time"), CanaryTrap():
        pass
    assert CANARY_ENV_VAR not in os.environ and _canary.HOST_MEMORY_SECRET == ""
