"""The record of each call, with three outputs: the run's trace, the audit trail and an OpenTelemetry span."""

from __future__ import annotations

import anyio

from toolcode._audit import AuditTrail
from toolcode._otel import call_span, tracing
from toolcode._trace import Trace
from toolcode.calls._layer import Call, Layer
from toolcode.exceptions import ToolError
from toolindex import BackendRef
from toolrun import RunResult

__all__ = ["Record"]

_NO_BACKEND = frozenset({"resolve", "validate_input"})
"""Failures before any backend was chosen: their record names none."""


class Record(Layer):
    """Records every call that passed the gate and the budget, whether it succeeds, fails or is cancelled.

    The trace keeps one record per call in the order calls started (its listeners hear of each as
    it starts and ends); the audit trail gets one ``call`` entry; the span is a child of the run's,
    current while the call is made, so an upstream's own spans join the trace.
    """

    __slots__ = ("_audit", "_kind", "_ref", "_spans", "_trace")

    def __init__(self, inner: Layer, trace: Trace, audit: AuditTrail) -> None:
        super().__init__(inner)
        self._trace = trace
        self._audit = audit
        self._spans = tracing()
        """Asked once per stack (a run's, a door call's): a provider set up meanwhile serves the next run."""
        self._ref: BackendRef | None = None
        self._kind = ""
        """The last result's backend and its kind: a model's attribute costs a plain one's several times over."""

    async def call(self, call: Call) -> RunResult:
        trace, tool_id, args = self._trace, call.tool_id, call.args
        slot, started = trace.start()
        if trace.on_start is not None:
            await trace.on_start(tool_id)
        span = call_span(tool_id) if self._spans else None
        try:
            if span is None:
                result = await self.inner.call(call)
            else:
                with span.current():
                    result = await self.inner.call(call)
        except ToolError as e:
            kind = None if e.error_op in _NO_BACKEND else e.backend_kind
            record = trace.finish(
                slot,
                started,
                tool_id,
                args,
                error=e.message,
                error_op=e.error_op,
                code=e.code.value,
                backend_kind=kind,
                early=call.early,
            )
            self._audit.call(
                tool_id,
                args,
                ok=False,
                code=e.code.value,
                duration_ms=record.duration_ms,
                result=None,
                early="used" if call.early else None,
            )
            if span is not None:
                span.end(tool_id=tool_id, ok=False, code=e.code.value, backend_kind=kind)
            if trace.has_listener:
                await trace.notify(record)
            raise
        except anyio.get_cancelled_exc_class():
            record = trace.cancelled(slot, started, tool_id, args)
            # Audited too: the backend may have received (and acted on) a call its run or client cancelled.
            early = "used" if call.early else None
            self._audit.call(tool_id, args, False, "cancelled", record.duration_ms, None, early)
            if span is not None:
                span.end(tool_id=tool_id, ok=False, code="cancelled", backend_kind=None)
            raise
        if (ref := result.backend) is not self._ref:
            self._ref, self._kind = ref, ref.kind
        early, value, kind, tool_id = call.early, result.value, self._kind, result.tool_id
        done = trace.succeeded(slot, started, tool_id, args, value, kind, early)
        used = "used" if early else None
        self._audit.call(tool_id, args, True, None, result.duration_ms, value, used)
        if span is not None:
            span.end(tool_id=tool_id, ok=True, code=None, backend_kind=kind)
        if done is not None:
            await trace.notify(done)
        return result
