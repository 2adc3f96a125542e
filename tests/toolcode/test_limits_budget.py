"""The output budget and the JSON check, on their own."""

from __future__ import annotations

import random
from typing import Any

import pytest

from toolcode import ExecuteOptions, ExecuteParams, Executor, Services, ToolCallRecord, UnsafeInProcessEngine
from toolcode._data import check_json
from toolcode._limits import (  # pyright: ignore[reportPrivateUsage]
    TRUNCATION_MARKER,
    OutputBuffer,
    PayloadBudget,
    _size,
    fit_output_budget,
    record_chars,
)
from toolcode._trace import Trace
from tooldocs import json_text
from toolindex import InMemoryIndex
from toolrun import DefaultRunner, LocalBackend

MARK = TRUNCATION_MARKER.split("{", 1)[0]


def test_check_json_names_the_path() -> None:
    assert check_json({"a": [1, "x", None, 2.5, True]}) is None
    bad = check_json({"a": [1, {"b": object()}]})
    assert bad is not None and "$.a[1].b is a object" in bad
    assert check_json({1: "x"}) is not None and "keys must be strings" in (check_json({1: "x"}) or "")
    assert "nan" in (check_json(float("nan")) or "")


def test_everything_fits_untouched() -> None:
    rec = ToolCallRecord("t:x", {}, {"k": 1}, "local", None, None, 1.0)
    out = fit_output_budget({"v": 1}, "out", "", (rec,), 1000)
    assert (out.value, out.stdout, out.tool_calls, out.truncated) == ({"v": 1}, "out", (rec,), ())


def test_trace_payloads_go_first_then_streams_then_value() -> None:
    recs = tuple(ToolCallRecord("t:x", {}, "p" * 400, "local", None, None, 1.0) for _ in range(3))
    out = fit_output_budget("v" * 100, "s" * 100, "", recs, 600)
    assert out.truncated == ("trace",) and out.value == "v" * 100 and out.stdout == "s" * 100
    assert all(MARK in str(r.structured) for r in out.tool_calls) and len(out.tool_calls) == 3

    out = fit_output_budget("v" * 5000, "s" * 5000, "", (), 1000)
    assert set(out.truncated) == {"stdout", "value"}
    assert isinstance(out.value, str) and MARK in out.value and MARK in out.stdout
    assert len(out.value) + len(out.stdout) < 1000 + 2 * len(TRUNCATION_MARKER) + 20


def test_output_buffer_keeps_cap_and_counts_the_rest() -> None:
    buf = OutputBuffer(10)
    for _ in range(5):
        buf.write("stdout", "abcd")
    assert buf.text("stdout") == "abcdabcdab" and buf.total("stdout") == 20 and buf.dropped["stdout"] == 10
    out = fit_output_budget(None, buf.text("stdout"), "", (), 1000, buf.dropped)
    assert out.truncated == ("stdout",) and MARK in out.stdout and out.total_chars >= 20


@pytest.mark.anyio
async def test_trace_builds_records_lazily_without_a_listener_and_eagerly_with_one() -> None:

    quiet = Trace()
    a, b, c = quiet.start(), quiet.start(), quiet.start()
    assert quiet.succeeded(a[0], a[1], "t:a", {"x": 1}, 2, "local") is None  # no listener: nothing built yet
    quiet.finish(b[0], b[1], "t:b", {}, error="boom", error_op="call")
    assert quiet.succeeded(c[0], c[1], "t:c", {}, [3], "mcp") is None
    recs = quiet.records()
    assert [(r.tool_id, r.args, r.structured, r.backend_kind, r.error, r.error_op) for r in recs] == [
        ("t:a", {"x": 1}, 2, "local", None, None),
        ("t:b", {}, None, None, "boom", "call"),
        ("t:c", {}, [3], "mcp", None, None),
    ]
    assert all(r.duration_ms >= 0 and r.started_ms >= 0 for r in recs)
    assert recs[0].started_ms <= recs[2].started_ms
    assert all(x is y for x, y in zip(quiet.records(), recs, strict=True))  # built once

    seen: list[ToolCallRecord] = []

    async def listener(record: ToolCallRecord) -> None:
        seen.append(record)

    loud = Trace(listener)
    slot, started = loud.start()
    record = loud.succeeded(slot, started, "t:a", {}, 1, "local")
    assert record is not None and record.structured == 1
    await loud.notify(record)
    assert seen == [record] and loud.records() == (record,)


def test_trace_payload_sizes_are_the_json_lengths_whatever_the_values() -> None:
    # Flat payloads are measured without serialising them; the count must be the serialiser's.
    tricky: list[Any] = [
        {"x": 1},
        {"a": 'b"c', "b": "\\", "c": "\x01", "d": "\u2028", "e": "\xa0", "f": "é"},
        {"n": float("nan"), "i": float("inf"), "f": 1e300, "z": -0.0, "big": 10**30},
        [None, True, False, 1.5, "x"],
        (),
        {},
        {1: 2},
        {"nested": {"a": [1]}},
        [[1], {"a": 1}],
        {"ünï": "ok", "k": "line\nbreak"},
        "line\nbreak",  # a result that is one string: its escapes count too
        'say "hi"',
        float("nan"),
    ]
    rnd = random.Random(7)
    alphabet = 'ab"\\\x01é\u2028\xa0 -_'

    def text() -> str:
        return "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 5)))

    for _ in range(5_000):
        scalars = [None, True, False, rnd.randint(-(10**6), 10**6), rnd.random() * 10 ** rnd.randint(-5, 20), text()]
        d = {text(): rnd.choice(scalars) for _ in range(rnd.randint(0, 4))}
        tricky += [d, list(d.values()), tuple(d.values())]
    for value in tricky:
        assert _size(value) == len(json_text(value)), value


@pytest.mark.anyio
async def test_a_result_grown_by_the_snippet_after_the_call_is_still_cut_to_the_budget() -> None:
    # The in-process engine hands the snippet the very object the tool returned. A flat result is
    # kept as a copy (the trace shows what the tool returned); a nested one is the object itself,
    # and what the records count is measured again at the end, not taken from when the call returned.
    local = LocalBackend()

    @local.tool(namespace="t")
    async def rows() -> list[str]:
        """Three rows."""
        return ["a", "b", "c"]

    @local.tool(namespace="t")
    async def nested() -> list[dict[str, int]]:
        """One nested row."""
        return [{"n": 1}]

    @local.tool(namespace="t")
    async def echo(n: str) -> str:
        """Its argument."""
        return n

    index = InMemoryIndex()
    await local.attach(index)
    runner = DefaultRunner(index, [local])
    executor = Executor(Services.of(index, runner, engine=UnsafeInProcessEngine()))
    options = ExecuteOptions(max_output_chars=2_000)
    # Arguments the snippet still holds and changes after the call: the trace keeps them as passed.
    code = 'd = {"n": "x"}\nrun_tool("t:echo", d)\nd["n"] = "y" * 100_000\n1'
    result = await executor.execute(ExecuteParams(code, options=options))
    assert result.value == 1 and result.tool_calls[0].args == {"n": "x"}
    assert result.limits.output_chars == 1 + sum(map(record_chars, result.tool_calls))
    code = 'got = run_tool("t:rows")\nfor i in range(5000):\n    got.append("row" + str(i))\nlen(got)'
    result = await executor.execute(ExecuteParams(code, options=options))
    assert result.value == 5003 and result.tool_calls[0].structured == ["a", "b", "c"]
    assert result.limits.truncated == () and result.limits.output_chars == 4 + sum(map(record_chars, result.tool_calls))
    code = 'got = run_tool("t:nested")\nfor i in range(5000):\n    got.append({"n": i})\nlen(got)'
    result = await executor.execute(ExecuteParams(code, options=options))
    assert result.value == 5001
    assert "trace" in result.limits.truncated
    assert sum(map(record_chars, result.tool_calls)) <= 2_000
    await runner.aclose()


# fmt: off
_PAYLOADS: list[Any] = [
    None, 0, -7, 2**64, 10**5000, 1.5, float("nan"), float("inf"), True, False, "", "plain", 'q"uote', "back\\slash",
    "tab\there", "é ü", "\u2028", "\x00", [], [1, "a", None], ("t", 2), {"k": "v", "n": 1.25}, {"é": "ü"},
    [[1]], {"deep": {"er": 1}}, ["x" * 300],
]
# fmt: on


def test_what_a_call_counts_when_it_is_recorded_is_what_its_record_counts_at_the_end() -> None:
    # The trace counts a call whose payloads cannot change when it is recorded (and not again at the
    # end): that count must be the record's exact size, whatever the payloads hold.
    rng = random.Random(7)
    for _ in range(400):
        args = {f"a{i}": rng.choice(_PAYLOADS) for i in range(rng.randrange(0, 4))}
        structured = rng.choice(_PAYLOADS)
        trace = Trace(payloads=PayloadBudget(rng.choice([10, 100, 10**6])))
        slot, started = trace.start()
        trace.succeeded(slot, started, "ns:tool", args, structured, "local")
        (record,) = trace.records()
        assert trace.output_chars() == record_chars(record), (args, structured)


def test_a_value_counts_in_the_output_budget_as_its_json_text() -> None:
    # The value is measured without serialising it where it can be: the count is its JSON text's length.
    for value in [*_PAYLOADS, {"k": _PAYLOADS[:12]}, [{"a": [1, {"b": None}]}]]:
        fitted = fit_output_budget(value, "", "", (), 10**9)
        assert fitted.total_chars == len(json_text(value)), value
        assert fitted.truncated == () and fitted.value is value
    cut = fit_output_budget("x" * 1_000, "", "", (), 100)
    assert cut.truncated == ("value",) and isinstance(cut.value, str) and len(cut.value) < 1_000


def test_the_arguments_left_out_of_a_record_are_its_own() -> None:
    # What stands for arguments past the allowance is a dict of each record's own: changing one
    # record's (a library user may) changes no other record, in this run or a later one.
    def dropped_args() -> dict[str, Any]:
        trace = Trace(payloads=PayloadBudget(10))
        for _ in range(2):
            slot, started = trace.start()
            trace.succeeded(slot, started, "ns:tool", {"text": "x" * 50}, 1, "local")
        first, second = trace.records()
        assert first.args == second.args and first.args is not second.args
        return dict(first.args)

    before = dropped_args()
    trace = Trace(payloads=PayloadBudget(10))
    slot, started = trace.start()
    trace.succeeded(slot, started, "ns:tool", {"text": "x" * 50}, 1, "local")
    (record,) = trace.records()
    record.args["text"] = "changed"  # type: ignore[index]
    assert dropped_args() == before
