"""Depth limits raise the documented error with the path where the limit was hit, never cut silently."""

from __future__ import annotations

from typing import Any

import pytest

from toolcode import Toolbox
from toolrun import ProviderBackend

pytestmark = pytest.mark.anyio


class _Deep:
    """A provider whose tool returns a list nested ``n`` levels deep, and an echo."""

    async def list_tools(self) -> list[dict[str, Any]]:
        deep = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        return [
            {"name": "deep", "description": "Nested lists.", "inputSchema": deep},
            {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}},
        ]

    async def call_tool(self, name: str, args: Any) -> Any:
        if name == "echo":
            return {"ok": True}
        v: list[Any] = []
        for _ in range(args["n"]):
            v = [v]
        return {"v": v}

    async def aclose(self) -> None:
        return None


async def test_a_result_too_deep_to_leave_the_sandbox_is_an_error_with_its_path() -> None:
    async with Toolbox([ProviderBackend("p", _Deep())]) as box:
        ok = await box.codemode.execute("run_tool('p:deep', n=150)", options={"max_output_chars": 0})
        assert ok.ok and ok.value is not None
        depth, v = 0, ok.value["v"]
        while v:
            v, depth = v[0], depth + 1
        assert depth == 150  # returned whole, not cut
        out = await box.codemode.execute("run_tool('p:deep', n=210)")
        assert not out.ok and out.error is not None and out.value is None
        assert "nested deeper than the sandbox's 200 levels at $.v[0][0]" in out.error.message
        # Inside the sandbox the whole value is there: the snippet can walk it.
        walk = "v = run_tool('p:deep', n=210)['v']\nd = 0\nwhile v:\n    v = v[0]\n    d += 1\nd"
        assert (await box.codemode.execute(walk)).value == 210


async def test_arguments_too_deep_to_leave_the_sandbox_are_refused_before_the_call() -> None:
    async with Toolbox([ProviderBackend("p", _Deep())]) as box:
        code = (
            "v = []\nfor i in range(250):\n    v = [v]\n"
            "try:\n    run_tool('p:echo', {'x': v})\n    r = 'called'\n"
            "except ToolError as e:\n    r = tool_error_info(e)\nr"
        )
        out = await box.codemode.execute(code)
        assert out.ok and out.value["code"] == "invalid_arguments", out
        assert "nested deeper than 200 levels at $.x[0]" in out.value["message"]
        assert out.calls.count == 0


# A value of shared parts is small in the sandbox and huge once written out: ``[a] * 10_000`` of a
# 1,000-item ``a`` is 10 million items to the host. Counted the host's way, it is refused before
# the host walks or copies it whole (which held every other caller's run for seconds, and grew the
# process by gigabytes). The bound is about items, so the time it takes is not measured here.
SHARED = "a = [[]] * 1000\nb = [a] * 100\n"


async def test_a_result_of_too_many_shared_items_is_refused_before_it_is_written_out() -> None:
    async with Toolbox([ProviderBackend("p", _Deep())]) as box:
        out = await box.codemode.execute(SHARED + "[b] * 100")
        assert out.error is not None and out.error.code == "output_limit", out
        assert "1,000,000" in out.error.message and "items" in out.error.message
        small = await box.codemode.execute(SHARED + "[b] * 2")  # 200,000 items: within the bound
        assert small.ok, small.error


async def test_arguments_of_too_many_shared_items_are_refused_before_the_call() -> None:
    async with Toolbox([ProviderBackend("p", _Deep())]) as box:
        code = (
            SHARED + "try:\n    run_tool('p:echo', {'x': [b] * 100})\n    r = 'called'\n"
            "except ToolError as e:\n    r = tool_error_info(e)\nr"
        )
        out = await box.codemode.execute(code)
        assert out.ok and out.value["code"] == "invalid_arguments", out
        assert "1,000,000 items" in out.value["message"]
        assert out.calls.count == 0
