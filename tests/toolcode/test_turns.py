"""A run's catalog reads take turns with other runs' (``DefaultTools._read``): one read of a run at a time.

Ordering, not timing: a run that gathers many reads at once must not put them all ahead of another
run's single read in the shared turns.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from toolcode import Toolbox
from toolcode import _tools as tools_module
from toolrun import LocalBackend

pytestmark = pytest.mark.anyio

GATHERED = 40


def _catalog() -> LocalBackend:
    local = LocalBackend()
    for i in range(50):

        async def f(x: str = "") -> str:
            return x

        local.add(f, name=f"tool_{i}", namespace="up", description=f"Tool number {i}, for the turns test.")
    return local


async def test_a_run_gathering_reads_does_not_queue_them_ahead_of_another_runs_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[tuple[str, str]] = []  # ("asked" | "done", op), in order
    first = anyio.Event()
    plain = tools_module.DefaultTools._plain  # pyright: ignore[reportPrivateUsage]
    read = tools_module.DefaultTools._read  # pyright: ignore[reportPrivateUsage]

    async def recorded(self: Any, op: str, call: Any) -> Any:
        out = await plain(self, op, call)
        events.append(("done", op))
        if op == "describe_tool":
            first.set()
        return out

    async def asked(self: Any, op: str, call: Any) -> Any:
        events.append(("asked", op))
        return await read(self, op, call)

    monkeypatch.setattr(tools_module.DefaultTools, "_plain", recorded)
    monkeypatch.setattr(tools_module.DefaultTools, "_read", asked)
    fan_out = (
        "import asyncio\n"
        "ids = ['up:tool_%d' % i for i in range(20)]\n"
        f"await asyncio.gather(*[describe_tool_async(ids, level='full') for _ in range({GATHERED})])\n"
        "__out = 1"
    )
    async with Toolbox([_catalog()]) as box, anyio.create_task_group() as tg:
        cm = box.codemode
        tg.start_soon(lambda: cm.execute(fan_out, options={"type_check": "off"}))
        with anyio.fail_after(120):  # a hang, not a speed
            await first.wait()  # the gathered reads are all waiting by now
        out = await cm.execute("__out = len(list_tools(limit=5)['tools'])", options={"type_check": "off"})
        assert out.ok and out.value == 5, out.error
    assert events.count(("done", "describe_tool")) == GATHERED
    waited = events[events.index(("asked", "list_tools")) : events.index(("done", "list_tools"))]
    # One read of the gathering run at a time in the turns: the other run's read, once asked, waits
    # for the one under way and at most one more, not for every read the first run gathered.
    assert waited.count(("done", "describe_tool")) <= 2, waited
    assert events.count(("asked", "describe_tool")) == GATHERED
