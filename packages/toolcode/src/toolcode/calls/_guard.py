"""The audit guard: with ``policy.audit.required``, no call is made while the audit log cannot be written."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

from toolcode.calls._layer import Call, Layer
from toolcode.exceptions import ErrorCode, StateUnavailableError, ToolError
from toolrun import RunResult

__all__ = ["AuditGuard"]

_FRESH_S = 1.0
"""How long a successful probe of the audit log's store vouches for it."""


class AuditGuard(Layer):
    """Fails closed: no call while the audit log's store does not answer (``state_unavailable``).

    Each call, or set of calls planned together, first makes sure the store answers (at most once a
    second).
    """

    __slots__ = ("_fresh_until", "_probe")

    def __init__(self, inner: Layer, probe: Callable[[], Awaitable[None]]) -> None:
        super().__init__(inner)
        self._probe = probe
        self._fresh_until = 0.0

    async def _check(self, tool_id: str) -> None:
        now = time.monotonic()
        if now < self._fresh_until:
            return
        try:
            await self._probe()
        except StateUnavailableError as e:
            raise ToolError(
                tool_id,
                f"the audit log cannot be written ({e.reason}): calls are refused until it can (policy.audit.required)",
                "not_allowed",
                code=ErrorCode.STATE_UNAVAILABLE,
            ) from None
        self._fresh_until = now + _FRESH_S

    async def plan(self, calls: Sequence[Call]) -> None:
        if calls:
            await self._check(calls[0].tool_id)
        await self.inner.plan(calls)

    async def call(self, call: Call) -> RunResult:
        await self._check(call.tool_id)
        return await self.inner.call(call)
