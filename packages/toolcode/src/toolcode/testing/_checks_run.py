"""Conformance checks of how a run is bounded and observed: limits, trace, fan-out, the engine, escapes."""

from __future__ import annotations

import time
from functools import partial

import anyio

from toolcode._executor import Listeners
from toolcode._limits import TRUNCATION_MARKER
from toolcode._types import ExecuteParams, ExecuteResult, ToolCallRecord
from toolcode.exceptions import CodeExecutionError, LimitExceededError, ToolCodeError
from toolcode.testing._harness import HANG_S, CheckFn, ConformanceCheck, Harness, collect, value_check
from toolcode.testing._probes import PROBES, EscapeProbe, check_probe, verify_runner

__all__ = ["CHECKS"]

CHECKS: list[ConformanceCheck] = []
_MARKER_HEAD = TRUNCATION_MARKER.split("{", 1)[0]
_check = partial(collect, CHECKS)
_value = partial(value_check, CHECKS)


@_check("limits", "a CPU loop is stopped by the timeout, not before it, and the engine keeps working")
async def _timeout_cpu(h: Harness) -> None:
    t0 = time.perf_counter()
    with anyio.fail_after(1.0 + HANG_S):
        e = await h.fail("while True:\n    pass", LimitExceededError, timeout=1.0)
    elapsed = time.perf_counter() - t0
    assert e.limit == "timeout" and e.configured == 1.0, str(e)
    assert elapsed >= 1.0, f"stopped after {elapsed:.2f}s, before the 1 s timeout"
    assert (await h.run("1 + 1")).value == 2


@_check("limits", "a slow tool call is stopped by the timeout, not before it, and shows in the trace")
async def _timeout_tool(h: Harness) -> None:
    # The call would take a minute: ending in the time the check allows shows the timeout cut it. A busy
    # machine may spend the whole timeout before the snippet reaches the call; then the check tries again
    # with twice the timeout, up to 8 s (an engine that never records the cut call fails after 15 s).
    timeout = 0.5
    while True:
        t0 = time.perf_counter()
        with anyio.fail_after(timeout + HANG_S):
            e = await h.fail("run_tool('conf:nap', seconds=60)", LimitExceededError, timeout=timeout)
        elapsed = time.perf_counter() - t0
        assert e.limit == "timeout" and elapsed >= timeout, (str(e), elapsed)
        if e.tool_calls or timeout >= 8:
            break
        timeout *= 2
    assert [r.tool_id for r in e.tool_calls] == ["conf:nap"] and e.tool_calls[0].error is not None, e.tool_calls


@_check("limits", "max_tool_calls stops the run, reporting configured and reached")
async def _max_tool_calls(h: Harness) -> None:
    e = await h.fail("for i in range(10):\n    run_tool('conf:add', a=i)", LimitExceededError, max_tool_calls=3)
    assert (e.limit, e.configured, e.reached) == ("max_tool_calls", 3, 4), str(e)
    assert len(e.tool_calls) == 3 and e.result is not None and e.result.limits.stopped_by == "max_tool_calls"


@_check("limits", "catching the limit error inside the snippet does not get around it")
async def _max_tool_calls_caught(h: Harness) -> None:
    code = (
        "n = 0\nfor i in range(10):\n    try:\n        run_tool('conf:add', a=i)\n        n += 1\n"
        "    except Exception:\n        pass\nn"
    )
    e = await h.fail(code, LimitExceededError, max_tool_calls=2)
    assert e.limit == "max_tool_calls", str(e)


@_check("limits", "run_tools counts every call")
async def _max_tool_calls_fanout(h: Harness) -> None:
    e = await h.fail("run_tools([('conf:add', {'a': i}) for i in range(5)])", LimitExceededError, max_tool_calls=4)
    assert e.limit == "max_tool_calls" and e.reached == 5, str(e)


@_check("limits", "max_chain_steps refuses a longer chain")
async def _max_chain_steps(h: Harness) -> None:
    steps = "[{'tool_id': 'conf:inc', 'args': {}}] * 3"
    e = await h.fail(f"run_chain({steps})", LimitExceededError, max_chain_steps=2)
    assert (e.limit, e.configured, e.reached) == ("max_chain_steps", 2, 3), str(e)


@_check("limits", "stdout beyond the output budget is truncated with a marker")
async def _stdout_truncated(h: Harness) -> None:
    r = await h.run("for i in range(2000):\n    print('line', i, 'x' * 50)\n1", max_output_chars=2000)
    assert len(r.stdout) < 2000 + 300 and _MARKER_HEAD in r.stdout, len(r.stdout)
    assert "stdout" in r.limits.truncated and r.value == 1


@_check("limits", "an over-long result is truncated into a string with a marker")
async def _result_truncated(h: Harness) -> None:
    r = await h.run("['y' * 100 for _ in range(500)]", max_output_chars=1000)
    assert isinstance(r.value, str) and _MARKER_HEAD in r.value and len(r.value) < 1300, repr(r.value)[:200]
    assert "value" in r.limits.truncated


@_check("limits", "large tool results in the trace are truncated, the records kept")
async def _trace_truncated(h: Harness) -> None:
    r = await h.run("for i in range(3):\n    run_tool('conf:blob', n=5000)\n'done'", max_output_chars=1000)
    assert len(r.tool_calls) == 3 and r.value == "done"
    assert all(isinstance(t.structured, str) and _MARKER_HEAD in t.structured for t in r.tool_calls)
    assert "trace" in r.limits.truncated


@_check("limits", "deep recursion is stopped and the engine keeps working")
async def _recursion(h: Harness) -> None:
    e = await h.fail("def f(n):\n    return f(n + 1)\nf(0)", ToolCodeError)
    assert isinstance(e, LimitExceededError | CodeExecutionError), type(e)
    if isinstance(e, CodeExecutionError):
        assert e.exc_type == "RecursionError", e.exc_type
    assert (await h.run("2 * 21")).value == 42


@_check("limits", "the limits report lists the limits in force and the calls made")
async def _limits_report(h: Harness) -> None:
    r = await h.run("run_tool('conf:add', a=1)", timeout=7.0, max_tool_calls=9)
    assert r.limits.applied["timeout"] == 7.0 and r.limits.applied["max_tool_calls"] == 9, r.limits
    assert r.limits.tool_calls == 1 and r.limits.stopped_by is None


@_check("trace", "one record per call, in order, with args, result, backend kind and errors")
async def _trace_records(h: Harness) -> None:
    r = await h.run(
        "run_tool('conf:add', a=1, b=2)\n"
        "try:\n    run_tool('conf:fail', message='nope')\nexcept ToolError:\n    pass\n"
        "run_tool('conf:echo', value=[1])\n"
    )
    t = r.tool_calls
    assert [x.tool_id for x in t] == ["conf:add", "conf:fail", "conf:echo"], t
    assert dict(t[0].args) == {"a": 1, "b": 2} and t[0].structured == 3 and t[0].backend_kind == "local"
    assert t[0].error is None and t[0].error_op is None and t[0].duration_ms >= 0
    assert t[1].error is not None and "nope" in t[1].error and t[1].error_op == "call" and t[1].structured is None
    assert t[2].structured == [1]


@_check("trace", "chain steps each get a record with their own duration")
async def _trace_chain(h: Harness) -> None:
    steps = "[{'tool_id': 'conf:nap', 'args': {'seconds': 0.05}}, {'tool_id': 'conf:nap', 'args': {'seconds': 0.15}}]"
    r = await h.run(f"run_chain({steps})['final']")
    t = r.tool_calls
    assert [x.tool_id for x in t] == ["conf:nap", "conf:nap"] and r.value == 0.15, t
    # Each step's own interval: at least its nap, and the second starts when the first has ended (the
    # chain's total on the first step, or one start for both, would break this however slow the machine).
    spans = [(x.started_ms, x.duration_ms) for x in t]
    assert t[0].duration_ms >= 40 and t[1].duration_ms >= 140, spans
    assert t[1].started_ms >= t[0].started_ms + t[0].duration_ms - 1, spans


@_check("trace", "parallel calls are traced in call order, each with its own args")
async def _trace_parallel(h: Harness) -> None:
    r = await h.run("run_tools([('conf:nap', {'seconds': 0.01 * (5 - i)}) for i in range(5)])")
    assert [dict(x.args)["seconds"] for x in r.tool_calls] == [0.05, 0.04, 0.03, 0.02, 0.01]
    assert r.value == [0.05, 0.04, 0.03, 0.02, 0.01]


@_check("trace", "on_tool_call sees every call as it completes")
async def _on_tool_call(h: Harness) -> None:
    seen: list[str] = []

    async def listener(rec: ToolCallRecord) -> None:
        seen.append(rec.tool_id)

    r = await h.executor.execute(
        ExecuteParams(code="run_tool('conf:add', a=1)\nrun_tool('conf:echo', value=2)"), Listeners(listener)
    )
    assert seen == ["conf:add", "conf:echo"] == [x.tool_id for x in r.tool_calls], seen


# Overlap is shown by calls that each wait for all the others (conf:meet): run one at a time, the
# first never returns. The wall time of a fan-out is a benchmark's figure, not a check's.
_value("fanout.run_tools_overlap", "run_tools calls overlap in time")(
    "run_tools([('conf:meet', {'n': 10})] * 10)", [10] * 10, calls=10, timeout=2 * HANG_S
)
_value("fanout.gather_overlap", "awaitable calls with asyncio.gather overlap in time")(
    "import asyncio\nawait asyncio.gather(*[run_tool_async('conf:meet', n=10) for _ in range(10)])",
    [10] * 10,
    calls=10,
    timeout=2 * HANG_S,
)


@_check("fanout", "asyncio.sleep and awaitable calls interleave in gathered coroutines")
async def _gather_with_sleep(h: Harness) -> None:
    # Every sleep starts before any ends, and then every call is in flight at once.
    code = (
        "import asyncio\nlog = []\n"
        "async def one(i):\n    log.append(f'sleep {i}')\n    await asyncio.sleep(0.2)\n"
        "    log.append(f'woke {i}')\n    return [i, await run_tool_async('conf:meet', n=5)]\n"
        "[await asyncio.gather(*[one(i) for i in range(5)]), log]"
    )
    r = await h.run(code, timeout=2 * HANG_S)
    values, log = r.value
    assert values == [[i, 5] for i in range(5)] and len(r.tool_calls) == 5, r.value
    assert sorted(log[:5]) == [f"sleep {i}" for i in range(5)], f"the sleeps did not overlap: {log}"


@_check("fanout", "one failing call in run_tools raises ToolError after the others complete")
async def _run_tools_error(h: Harness) -> None:
    e = await h.fail("run_tools([('conf:add', {'a': 1}), ('conf:fail', {'message': 'bad'})])", CodeExecutionError)
    assert e.exc_type == "ToolError" and "bad" in str(e) and len(e.tool_calls) == 2


@_check("engine", "concurrent runs on one engine stay separate")
async def _concurrent_runs(h: Harness) -> None:
    results: dict[int, ExecuteResult] = {}

    async def one(i: int) -> None:
        results[i] = await h.run(
            f"print({i})\nrun_tool('conf:nap', seconds=0.05)\nrun_tool('conf:add', a={i})", input=i
        )

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(one, i)
    for i, r in results.items():
        assert r.value == i + 1 and r.stdout == f"{i}\n" and len(r.tool_calls) == 2, (i, r)


@_check("engine", "cancelling a run returns promptly and the engine keeps working")
async def _cancellation(h: Harness) -> None:
    # Each run would take twice HANG_S: returning within HANG_S of the cancellation shows it stopped the run.
    for code in (f"run_tool('conf:nap', seconds={2 * HANG_S})", "while True:\n    pass"):
        t0 = time.perf_counter()
        with anyio.move_on_after(0.3):
            await h.run(code, timeout=2 * HANG_S)
        elapsed = time.perf_counter() - t0
        assert elapsed < 0.3 + HANG_S, f"cancelled after 0.3 s, the run returned after {elapsed:.1f} s: {code!r}"
    assert (await h.run("3")).value == 3


@_check("engine", "the engine's declarations are consistent")
async def _declarations(h: Harness) -> None:
    info = h.engine.info
    assert info.name and isinstance(info.sandboxed, bool)
    if info.sandboxed:
        assert "escape" not in info.unsupported, "a sandboxed engine may not declare the escape probes unsupported"
    for category, reason in info.unsupported.items():
        assert reason.strip(), f"unsupported category {category!r} needs a reason"


@_check("escape", "the probe runner surfaces value, stdout and errors (so no probe passes vacuously)")
async def _probe_runner(h: Harness) -> None:
    await verify_runner(h.probe_run)


def _probe_check(probe: EscapeProbe) -> CheckFn:
    async def check(h: Harness) -> None:
        outcome = await check_probe(h.probe_run, probe)
        assert outcome.contained, str(outcome)

    check.__name__ = probe.id
    return check


CHECKS.extend(ConformanceCheck(f"escape.{p.id}", "escape", f"{p.title} ({p.source})", _probe_check(p)) for p in PROBES)
