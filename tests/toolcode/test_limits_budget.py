"""The output budget and the JSON check, on their own."""

from __future__ import annotations

from toolcode import TRUNCATION_MARKER, ToolCallRecord
from toolcode._limits import OutputBuffer, check_json, fit_output_budget

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
