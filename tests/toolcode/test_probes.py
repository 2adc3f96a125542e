"""The escape probes are real (they escape plain CPython exec) and pydantic-monty contains every one of them.

Plain ``exec`` runs in a child process, never in the test process: the probes kill their host, read its
environment and leave time bombs in it. The child is the "host" there, so the canaries reach it through
its inherited environment and a memory secret handed over on stdin.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import anyio
import pydantic_monty
import pytest
from anyio.abc import Process

from toolcode.testing import _canary
from toolcode.testing._probes import (
    PROBES,
    Category,
    EscapeProbe,
    HostCrashedError,
    Judge,
    ProbeRun,
    check_probe,
    verify_runner,
)

pytestmark = pytest.mark.anyio

CANARY_MODULE_FILE = Path(_canary.__file__)
# Plain exec has no limits of its own, so for a bomb it does not stop the deadline is the verdict: such a
# probe escapes once it has run past it, which no load can make it miss. Every other probe must end on
# its own; its deadline only bounds a hang, generously, since a loaded machine stretches a run many times.
PLAIN_EXEC_RUNS_ON_S = 2.0
PLAIN_EXEC_DEADLINE_S = 60.0
CHILD_ADDRESS_SPACE = 1 << 28  # caps the memory bombs in the plain-exec child; they then fail with MemoryError
CHILD_STDOUT_CAP = 2_000_000

# The child: loads the canary module under its real name (without importing the whole toolcode stack,
# which would make every probe cost a second), plants the memory secret, and runs the probe with
# plain exec in a fresh namespace. Results go to a file, so whatever the probe writes to fd 1 stays apart.
DRIVER = rf"""
import ast, contextlib, importlib.util, io, json, resource, subprocess, sys, traceback
resource.setrlimit(resource.RLIMIT_AS, ({CHILD_ADDRESS_SPACE}, {CHILD_ADDRESS_SPACE}))
request = json.loads(sys.stdin.readline())
spec = importlib.util.spec_from_file_location("toolcode.testing._canary", request["canary_module"])
_canary = importlib.util.module_from_spec(spec)
sys.modules["toolcode.testing._canary"] = _canary
spec.loader.exec_module(_canary)
_canary.HOST_MEMORY_SECRET = request["memory_secret"]

def run(code):
    tree = ast.parse(code)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    namespace = {{"__name__": "__main__"}}
    exec(compile(tree, "<probe>", "exec"), namespace)
    return eval(compile(ast.Expression(last.value), "<probe>", "eval"), namespace) if last else None

buffer = io.StringIO()
value, error = None, None
try:
    with contextlib.redirect_stdout(buffer):
        value = run(request["code"])
except Exception as exc:  # as naive exec() hosts do: SystemExit ends this process
    error = "".join(traceback.format_exception_only(type(exc), exc))
try:
    value_text = repr(value)
except Exception as exc:
    value_text = "<unprintable: %s>" % exc
stdout = buffer.getvalue()
del buffer
with open(request["result"], "w") as f:
    json.dump({{"value": value_text, "stdout": stdout[:{CHILD_STDOUT_CAP}], "error": error}}, f)
"""


async def _drain(stream: anyio.abc.ByteReceiveStream | None, into: list[bytes]) -> None:
    if stream is None:
        return
    async for chunk in stream:
        if sum(map(len, into)) < CHILD_STDOUT_CAP:
            into.append(chunk)


async def run_plain_exec(code: str) -> ProbeRun:
    """Run a snippet with plain CPython exec in a child process that inherits the planted canaries."""
    with tempfile.TemporaryDirectory(prefix="tc-plain-exec-") as tmp:
        result_path = Path(tmp) / "result.json"
        request = {
            "code": code,
            "result": str(result_path),
            "canary_module": str(CANARY_MODULE_FILE),
            "memory_secret": _canary.HOST_MEMORY_SECRET,
        }
        process: Process = await anyio.open_process(
            [sys.executable, "-c", DRIVER], start_new_session=True, env=dict(os.environ)
        )
        out: list[bytes] = []
        try:
            assert process.stdin is not None
            await process.stdin.send(json.dumps(request).encode() + b"\n")
            await process.stdin.aclose()
            async with anyio.create_task_group() as tg:
                tg.start_soon(_drain, process.stdout, out)
                tg.start_soon(_drain, process.stderr, out)
                await process.wait()
        finally:
            # A cancelled run (deadline) or a probe that spawned children: end the whole process group.
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            with anyio.CancelScope(shield=True):
                await process.wait()
        if not result_path.exists():
            raise HostCrashedError(f"plain-exec host exited with status {process.returncode} and no result")
        data = json.loads(result_path.read_text())
        raw = b"".join(out).decode("utf-8", "replace")
        return ProbeRun(data["value"], data["stdout"] + raw, data["error"])


MONTY_LIMITS: pydantic_monty.ResourceLimits = {
    "max_feed_duration_secs": 2.0,
    "max_memory": 256 * 1024 * 1024,
    "max_recursion_depth": 500,
    "max_total_sleep_secs": 2.0,
    "max_suspensions": 100,
}
MONTY_DEADLINE_S = 60.0  # only a hang: the limits above and the pool's kill stop every bomb in seconds
MONTY_STDOUT_BYTES = 1_000_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def monty_pool() -> AsyncIterator[pydantic_monty.AsyncMonty]:
    # request_timeout is the host-side kill: a worker stuck in one C-level operation dies after it.
    async with pydantic_monty.AsyncMonty(min_processes=1, max_processes=2, request_timeout=6.0) as pool:
        yield pool


def monty_runner(pool: pydantic_monty.AsyncMonty) -> Callable[[str], Awaitable[ProbeRun]]:
    async def run(code: str) -> ProbeRun:
        out = pydantic_monty.CollectString(max_bytes=MONTY_STDOUT_BYTES)
        try:
            async with pool.checkout(limits=MONTY_LIMITS) as session:
                value = await session.feed_run(code, print_callback=out)
        except pydantic_monty.MontyError as exc:
            return ProbeRun(None, out.output, f"{type(exc).__name__}: {exc}")
        return ProbeRun(value, out.output, None)

    return run


# --- the catalogue -----------------------------------------------------------------------------------------------


def test_catalogue_has_forty_probes_beyond_resource_bombs() -> None:
    assert len(PROBES) >= 40
    assert sum(probe.category is not Category.RESOURCE for probe in PROBES) >= 40
    assert len({probe.id for probe in PROBES}) == len(PROBES)


def test_catalogue_covers_every_family_the_issue_names() -> None:
    counts = Counter(probe.category for probe in PROBES)
    for category in Category:
        assert counts[category] >= 1, category
    # Several independent routes for the families seen most in public escapes.
    for category in (Category.DUNDER_WALK, Category.FORMAT_STRING, Category.DEL_TIMEBOMB, Category.MODULE_WALK):
        assert counts[category] >= 4, category
    resource_titles = " ".join(p.title for p in PROBES if p.category is Category.RESOURCE)
    for bomb in ("while True", "10**10**8", "'a' * 10**10", "recursion", "print"):
        assert bomb in resource_titles


def test_every_probe_cites_a_source_and_uses_only_known_placeholders() -> None:
    for probe in PROBES:
        assert probe.source.strip() and probe.title.strip(), probe.id
        stripped = probe.code
        for token in ("__CANARY_PATH__", "__WITNESS_PATH__", "__CANARY_PORT__"):
            stripped = stripped.replace(token, "")
        assert "__CANARY" not in stripped and "__WITNESS" not in stripped, probe.id
        compile(probe.code, probe.id, "exec")  # every probe is valid Python 3.11


def test_large_majority_of_non_resource_probes_escape_plain_exec() -> None:
    non_resource = [p for p in PROBES if p.category is not Category.RESOURCE]
    escaping = [p for p in non_resource if p.escapes_plain_exec]
    assert len(escaping) >= 0.9 * len(non_resource)


# --- the probes are real: plain CPython exec does not contain them ------------------------------------------------


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.id)
async def test_probe_against_plain_exec(probe: EscapeProbe) -> None:
    runs_on = probe.judge is Judge.STOPPED and probe.escapes_plain_exec  # a bomb plain exec never stops
    outcome = await check_probe(
        run_plain_exec, probe, deadline_s=PLAIN_EXEC_RUNS_ON_S if runs_on else PLAIN_EXEC_DEADLINE_S
    )
    if probe.escapes_plain_exec:
        assert outcome.escaped, f"probe does not escape plain exec, so it proves nothing:\n{outcome}"
    else:
        assert outcome.contained, f"probe declared contained by plain exec (under rlimits) but:\n{outcome}"


async def test_plain_exec_runner_surfaces_value_stdout_and_error() -> None:
    await verify_runner(run_plain_exec)


# --- pydantic-monty contains every probe --------------------------------------------------------------------------


async def test_monty_runner_surfaces_value_stdout_and_error(monty_pool: pydantic_monty.AsyncMonty) -> None:
    await verify_runner(monty_runner(monty_pool))


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.id)
async def test_probe_contained_by_raw_monty(monty_pool: pydantic_monty.AsyncMonty, probe: EscapeProbe) -> None:
    # A failure here is a sandbox escape in pydantic-monty: a security bug, never to be marked xfail.
    outcome = await check_probe(monty_runner(monty_pool), probe, deadline_s=MONTY_DEADLINE_S)
    assert outcome.contained, f"SANDBOX ESCAPE in pydantic-monty:\n{outcome}"
    if probe.judge is Judge.STOPPED:
        assert outcome.error, outcome
