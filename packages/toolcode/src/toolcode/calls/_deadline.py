"""A door's bound on a direct call (inside a run, the run's own deadline bounds every call)."""

from __future__ import annotations

import anyio

from toolcode.calls._layer import Call, Layer
from toolcode.exceptions import ToolError
from toolrun import RunResult

__all__ = ["Deadline"]


class Deadline(Layer):
    """Ends a call that gave no timeout of its own after ``seconds`` (``timeout``, naming the bound)."""

    __slots__ = ("_seconds",)

    def __init__(self, inner: Layer, seconds: float) -> None:
        super().__init__(inner)
        self._seconds = seconds

    async def call(self, call: Call) -> RunResult:
        if call.timeout is not None:
            return await self.inner.call(call)
        try:
            with anyio.fail_after(self._seconds):
                return await self.inner.call(call)
        except TimeoutError:
            raise ToolError(call.tool_id, f"the call did not finish within {self._seconds:g} s", "timeout") from None
