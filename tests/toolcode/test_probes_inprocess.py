"""The probes catch escapes through toolcode's own executor path: UnsafeInProcessEngine is not a sandbox.

The conformance suite declares the escape probes unsupported for that engine; here they run anyway, through
the suite's own ``Harness.probe_run``, to show the judge sees escapes end to end (executor, result
convention, error mapping). The engine runs in a child process: the probes kill their host.
"""

from __future__ import annotations

import json
import sys

import anyio
import pytest

from toolcode.testing._probes import PROBES, Category, Judge

pytestmark = pytest.mark.anyio

# Fires when the host process exits, after the judge has looked: visible only with a child-process host.
FIRES_AT_HOST_EXIT = {"timebomb-atexit"}
# These end the host process itself, so the child's exit status is the verdict.
KILLS_HOST = {"signal-kill-host", "os-exit-host", "recursion-limit-crash"}

CHILD = """
import anyio, json, sys
from toolcode import UnsafeInProcessEngine
from toolcode.testing import Harness
from toolcode.testing._probes import PROBES, check_probe, verify_runner

wanted = set(json.loads(sys.argv[1]))

async def main():
    engine = UnsafeInProcessEngine()
    try:
        async with Harness(engine) as harness:
            await verify_runner(harness.probe_run)
            for probe in PROBES:
                if probe.id in wanted:
                    outcome = await check_probe(harness.probe_run, probe)
                    line = {"id": probe.id, "escaped": outcome.escaped, "report": str(outcome)}
                    print(json.dumps(line), flush=True)
    finally:
        await engine.aclose()

anyio.run(main)
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def run_child(ids: list[str]) -> tuple[int, dict[str, dict[str, object]]]:
    # Bounds a hang only: the child runs some forty probes, ~15 s on a quiet machine, several times that on a busy one.
    with anyio.fail_after(600):
        done = await anyio.run_process([sys.executable, "-c", CHILD, json.dumps(ids)], check=False)
    lines = [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]
    return done.returncode, {line["id"]: line for line in lines}


async def test_inprocess_engine_is_escaped_by_every_leak_probe() -> None:
    ids = [
        p.id
        for p in PROBES
        if p.judge is Judge.LEAK and p.category is not Category.HOST_CRASH and p.id not in KILLS_HOST
    ]
    returncode, outcomes = await run_child(ids)
    assert returncode == 0
    assert set(outcomes) == set(ids)
    for probe_id, outcome in outcomes.items():
        if probe_id in FIRES_AT_HOST_EXIT:
            assert not outcome["escaped"], outcome["report"]
        else:
            assert outcome["escaped"], f"the judge missed an escape through the in-process engine:\n{outcome['report']}"


@pytest.mark.parametrize("probe_id", sorted(KILLS_HOST))
async def test_probe_kills_an_inprocess_host(probe_id: str) -> None:
    returncode, outcomes = await run_child([probe_id])
    assert returncode != 0 and probe_id not in outcomes
