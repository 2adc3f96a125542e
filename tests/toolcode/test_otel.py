"""OpenTelemetry: a span per run and a child span per tool call, off unless a provider is configured."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import toolcode._otel as otel
from toolcode import Toolbox
from toolcode.demo import helpdesk_backend

pytestmark = pytest.mark.anyio


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    provider = TracerProvider()
    exported = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    # As if the application had called trace.set_tracer_provider(provider) (global, once per process).
    monkeypatch.setattr(otel, "_tracer", lambda: provider.get_tracer("toolcode"))
    return exported


def test_tracing_is_off_without_a_configured_provider() -> None:
    assert otel._tracer() is None  # pyright: ignore[reportPrivateUsage]
    assert otel.call_span("a:b") is None


def test_the_fast_check_sees_a_provider_set_by_the_application(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace

    provider = TracerProvider()
    # What trace.set_tracer_provider(provider) leaves behind (it may run once per process only).
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    monkeypatch.setattr(otel, "_cache", [None, None])
    tracer = otel._tracer()  # pyright: ignore[reportPrivateUsage]
    assert tracer is not None
    span = otel.call_span("a:b")
    assert span is not None and span.span.is_recording()
    span.end(tool_id="a:b", ok=True, code=None, backend_kind="local")


async def test_a_ten_call_snippet_is_one_parent_with_ten_children(exporter: InMemorySpanExporter) -> None:
    code = (
        "for office in ['Paris', 'Tokyo', 'Sydney', 'Nairobi', 'Paris', 'Tokyo', 'Sydney', 'Nairobi', 'Paris']:\n"
        "    run_tool('helpdesk:list_tickets', office=office)\n"
        "try:\n"
        "    run_tool('helpdesk:no_such_tool')\n"
        "except ToolError:\n"
        "    pass\n"
        "'done'"
    )
    async with Toolbox([helpdesk_backend()]) as box:
        out = await box.codemode.execute(code, options={"type_check": "off"})
    assert out.ok, out.error
    spans = exporter.get_finished_spans()
    runs = [s for s in spans if s.name == "toolcode.execute"]
    calls = [s for s in spans if s.name == "toolcode.tool_call"]
    assert len(runs) == 1 and len(calls) == 10
    run = runs[0]
    assert all(c.parent is not None and c.parent.span_id == run.context.span_id for c in calls)
    assert all(c.context.trace_id == run.context.trace_id for c in calls)
    ok = [c for c in calls if c.status.status_code == StatusCode.OK]
    failed = [c for c in calls if c.status.status_code == StatusCode.ERROR]
    assert len(ok) == 9 and len(failed) == 1
    attrs: Any = failed[0].attributes
    assert attrs["toolcode.tool_id"] == "helpdesk:no_such_tool" and attrs["toolcode.error_code"] == "unknown_tool"
    good: Any = ok[0].attributes
    assert good["toolcode.namespace"] == "helpdesk" and good["toolcode.backend_kind"] == "local"
    # No arguments or results on any span.
    assert not any("Paris" in str(dict(s.attributes or {})) for s in spans)
    assert run.status.status_code == StatusCode.OK


async def test_limits_and_direct_calls(exporter: InMemorySpanExporter) -> None:
    async with Toolbox([helpdesk_backend()]) as box:
        out = await box.codemode.execute(
            "for _ in range(5):\n    run_tool('helpdesk:list_tickets', office='Paris')", options={"max_tool_calls": 2}
        )
        assert out.error is not None and out.error.code == "tool_call_limit"
        await box.codemode.run_tool("helpdesk:list_tickets", {"office": "Paris"})
    spans = exporter.get_finished_spans()
    run = next(s for s in spans if s.name == "toolcode.execute")
    assert run.status.status_code == StatusCode.ERROR
    assert [e.name for e in run.events] == ["limit"]
    direct = next(s for s in spans if s.name == "toolcode.run_tool")
    child = [
        s for s in spans if s.name == "toolcode.tool_call" and s.parent and s.parent.span_id == direct.context.span_id
    ]
    assert len(child) == 1 and direct.status.status_code == StatusCode.OK


async def test_the_trace_context_reaches_the_upstream_server(exporter: InMemorySpanExporter) -> None:
    import json
    import sys
    from pathlib import Path

    fault = Path(__file__).parents[1] / "integration" / "servers" / "fault_server.py"
    cfg = {"mcpServers": {"faults": {"command": sys.executable, "args": [str(fault)]}}}
    async with Toolbox.from_config(cfg) as box:
        out = await box.codemode.execute("run_tool('faults:echo_meta')")
    assert out.ok, out.error
    meta = out.value if isinstance(out.value, dict) else json.loads(out.value)
    spans = exporter.get_finished_spans()
    call = next(s for s in spans if s.name == "toolcode.tool_call")
    trace_id, parent = meta["traceparent"].split("-")[1:3]
    # The upstream request carries the call's own span as its parent (the MCP client's span would
    # come in between were the SDK's global tracer provider set; here only toolcode traces).
    assert (trace_id, parent) == (f"{call.context.trace_id:032x}", f"{call.context.span_id:016x}")
