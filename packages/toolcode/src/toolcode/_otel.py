"""OpenTelemetry spans: one per run (or direct call at a door), one child per tool call (docs/telemetry.md).

Active only when ``opentelemetry-api`` is installed (``toolcode[otel]``) *and* the application
set a tracer provider; otherwise every hook is a check of a module global and returns at once.
Spans carry ids, outcomes, error codes and durations — never arguments or results.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

__all__ = ["CallSpan", "RunSpan", "call_span", "run_span", "tracing"]

try:  # the extra is optional: without it every hook is a no-op
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - exercised where the extra is absent
    _trace = None


def _status(code: str | None) -> Any:
    from opentelemetry.trace import Status, StatusCode

    return Status(StatusCode.OK) if code is None else Status(StatusCode.ERROR, code)


_cache: list[Any] = [None, None]
"""The provider the tracer below was made for, and that tracer (``None``: tracing is off)."""
_NOT_READ: Any = object()
_PROVIDER_FROM_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
"""Whether a provider may come from the environment (the API loads it on first use)."""


def _tracer() -> Any:
    """The tracer, or ``None`` when tracing is off (no extra, or no provider configured)."""
    if _trace is None:
        return None
    # The common case, on every tool call: nobody set a provider. The API's own lookup reads
    # os.environ each time (a few microseconds per call, measured by bench/engine_overhead.py);
    # its module global says the same at the cost of one attribute read. If a later API
    # renames it, the full lookup below runs.
    if getattr(_trace, "_TRACER_PROVIDER", _NOT_READ) is None and not _PROVIDER_FROM_ENV:
        return None
    provider = _trace.get_tracer_provider()
    if _cache[0] is provider:
        return _cache[1]  # the common case, on every tool call: one lookup
    off = type(provider).__name__ in ("ProxyTracerProvider", "NoOpTracerProvider")
    tracer = None if off else provider.get_tracer("toolcode")  # off: nobody configured a provider
    _cache[:] = [provider, tracer]
    return tracer


class RunSpan:
    """What the executor and the doors record on a run's span."""

    __slots__ = ("span",)

    def __init__(self, span: Any) -> None:
        self.span = span

    def event(self, name: str, attributes: Mapping[str, Any]) -> None:
        """Add an event (a limit that stopped the run, the calls it paused at)."""
        if self.span is not None:
            self.span.add_event(name, dict(attributes))

    def outcome(self, code: str | None) -> None:
        """Mark the run ok, or failed with an error code."""
        if self.span is not None:
            if code is not None:
                self.span.set_attribute("toolcode.error_code", code)
            self.span.set_status(_status(code))


_OFF = RunSpan(None)


@contextmanager
def run_span(name: str, attributes: Mapping[str, Any] | None = None) -> Generator[RunSpan]:
    """A span around one run or direct call (the current span while it lasts)."""
    tracer = _tracer()
    if tracer is None:
        yield _OFF
        return
    # The run's outcome is set by the caller (a paused run is not an error; a snippet's error is
    # recorded by its code), not from the exception that leaves the block.
    with tracer.start_as_current_span(
        name, attributes=dict(attributes or {}), record_exception=False, set_status_on_exception=False
    ) as span:
        yield RunSpan(span)


class CallSpan:
    """One tool call's span (ended by :meth:`end`)."""

    __slots__ = ("span",)

    def __init__(self, span: Any) -> None:
        self.span = span

    def current(self) -> AbstractContextManager[Any]:
        """Make this call's span the current one while the upstream request is sent.

        The MCP client's own span nests under it, and the request's ``_meta`` carries its W3C
        trace context (``traceparent``), so the upstream server's spans join the trace.
        """
        from opentelemetry.trace import use_span

        return use_span(self.span, end_on_exit=False)

    def end(self, *, tool_id: str, ok: bool, code: str | None, backend_kind: str | None) -> None:
        """Record the outcome and end the span."""
        span = self.span
        span.set_attribute("toolcode.tool_id", tool_id)
        span.set_attribute("toolcode.namespace", tool_id.split(":", 1)[0])
        if backend_kind is not None:
            span.set_attribute("toolcode.backend_kind", backend_kind)
        if not ok:
            span.set_attribute("toolcode.error_code", code or "tool_error")
        span.set_status(_status(None if ok else code or "tool_error"))
        span.end()


def tracing() -> bool:
    """Whether spans are recorded now (a run's call stack asks once, as it is built)."""
    return _tracer() is not None


def call_span(tool_id: str) -> CallSpan | None:
    """Start a tool call's span, a child of the current run's; ``None`` when tracing is off."""
    tracer = _tracer()
    if tracer is None:
        return None
    return CallSpan(tracer.start_span("toolcode.tool_call", attributes={"toolcode.tool_id": tool_id}))
