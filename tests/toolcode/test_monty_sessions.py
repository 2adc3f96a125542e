"""A Monty session's stored state stays the size of what it holds: rebuilt from its namespace, exactly or not at all."""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pydantic_monty as pm
import pytest

from toolcode import Settings, Toolbox
from toolcode._sessions import _encode, _Meta  # pyright: ignore[reportPrivateUsage]
from toolcode._settings import StateSettings
from toolcode.demo import helpdesk_backend
from toolcode.engines import TOOL_ERROR_INFO_SOURCE
from toolcode.engines._monty_state import FLOOR

pytestmark = pytest.mark.anyio

PAD = "  # " + "p" * 400
"""A comment that makes each run's snippet ~400 characters: the history grows fast, the state does not."""


def _settings(tmp_path: Path) -> Settings:
    return Settings(state=StateSettings(dir=str(tmp_path / "state")))


@pytest.fixture
async def box(tmp_path: Path) -> AsyncIterator[Toolbox]:
    async with Toolbox([helpdesk_backend()], settings=_settings(tmp_path)) as b:
        yield b


async def _runs(box: Toolbox, session: str, code: str, n: int) -> list[int]:
    sizes: list[int] = []
    for i in range(n):
        out = await box.codemode.execute(code, session=session)
        assert out.ok and out.session is not None, (i, out.error)
        sizes.append(out.session.size_bytes)
    return sizes


async def test_a_session_holding_two_ints_stays_small_however_many_runs(box: Toolbox) -> None:
    first = await box.codemode.execute("a = 0\nb = 0", session="two")
    assert first.session is not None
    sizes = await _runs(box, "two", "a = a + 1\nb = b + 2", 400)
    # Before: every run's snippet stayed in the state (~60 B a run: 400 runs added ~24 KB).
    assert max(sizes) <= first.session.size_bytes + FLOOR + 512, (first.session.size_bytes, max(sizes))
    assert any(later < earlier for earlier, later in itertools.pairwise(sizes))  # it was rebuilt
    # __out means what it means in a fresh run: a trailing expression, or nothing.
    assert (await box.codemode.execute("if a < 0:\n    __out = 'negative'\na + b", session="two")).value == 1200
    assert (await box.codemode.execute("__out = [a, b]", session="two")).value == [400, 800]
    assert (await box.codemode.execute("c = 1", session="two")).value is None


async def test_each_run_of_a_session_gets_the_whole_sleep_budget_of_its_timeout(box: Toolbox) -> None:
    # A session's runs share one sandbox worker while it stays hot, and pydantic-monty counts sleeps
    # (and suspensions) per worker: its limit added the runs up, so the third run failed with
    # "sleep limit exceeded: 2.1s > 2s". A run is bounded by its own timeout, on the host.
    for i in range(3):
        out = await box.codemode.execute("import time\ntime.sleep(0.7)\n__out = 1", session="s", options={"timeout": 2})
        assert out.ok and out.value == 1, (i, out.error)
    # Within one run the timeout still stops sleeping, with the limit's code.
    out = await box.codemode.execute("import time\ntime.sleep(30)", session="s", options={"timeout": 0.5})
    assert out.error is not None and out.error.code == "timeout", out.error


SETUP = """\
from tools import helpdesk
import json
import datetime
from decimal import Decimal
scale = 3
def scaled(v, by=None):
    return v * (by or scale)
async def twice(v):
    return 2 * v
square = lambda x, p=2: x ** p
a = [1, 2]
b = a
when = datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc)
price = Decimal('1.50')
nested = {'k': (1, 2.5, None, True, b'x'), 's': {1, 2}, 'f': frozenset([3]), 'big': 10**30}
try:
    raise ValueError('boom')
except ValueError as e:
    info = tool_error_info(e)
n = 0
"""
CHECK = (
    "b.append(len(b))\n"
    "__out = [scaled(2), scaled(2, 5), square(4), await twice(5), json.dumps({'x': 1}),"
    " len(helpdesk.list_offices()), b is a, a, str(when), str(price + 1), repr(nested), info['message'], n]"
)


async def test_functions_imports_and_values_work_after_the_session_is_rebuilt(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    async with Toolbox([helpdesk_backend()], settings=settings) as box:
        assert (await box.codemode.execute(SETUP, session="f")).ok
        sizes = await _runs(box, "f", "n = n + 1\nscale = 3" + PAD, 60)
        assert any(later < earlier for earlier, later in itertools.pairwise(sizes))  # rebuilt
        hot = await box.codemode.execute(CHECK, session="f")  # the rebuilt worker, kept checked out
    assert hot.ok, hot.error
    assert hot.value == [
        6,
        10,
        16,
        10,
        '{"x": 1}',
        6,
        True,
        [1, 2, 2],
        "2024-05-01 00:00:00+00:00",
        "2.50",
        "{'k': (1, 2.5, None, True, b'x'), 's': {1, 2}, 'f': frozenset({3}), 'big': 1000000000000000000000000000000}",
        "boom",
        60,
    ]
    async with Toolbox([helpdesk_backend()], settings=settings) as box:  # restored from the store
        cold = await box.codemode.execute(CHECK, session="f")
    assert cold.ok and cold.value is not None and cold.value[7] == [1, 2, 2, 3], cold.error


@pytest.mark.parametrize(
    ("setup", "step", "check", "expected"),
    [
        # A class instance cannot cross to the host.
        ("class Box:\n    def __init__(self):\n        self.n = 0\nbox = Box()", "box.n += 1", "box.n", 20),
        # A cycle would come back cut.
        ("loop = []\nloop.append(loop)\nk = 0", "k += 1", "[loop[0] is loop, k]", [True, 20]),
        # A mutable default is state a replayed def would reset.
        ("def count(seen=[]):\n    seen.append(1)\n    return len(seen)", "count()", "count()", 21),
        # A def after the error never ran: the function is still the one from before.
        ("def f():\n    return 1", "raise ValueError('stop')\ndef f():\n    return 2", "f()", 1),
        # A function a call re-bound through `global`, after its top-level def.
        (
            "def swap():\n    global g\n    def g():\n        return 2\n    return 0\ndef g():\n    return 1\nswap()",
            "0",
            "g()",
            2,
        ),
        # An alias: replaying `def f` would not re-create `h`.
        ("def f():\n    return 1\nh = f", "0", "h()", 1),
    ],
)
async def test_what_cannot_be_rebuilt_exactly_keeps_its_history(
    box: Toolbox, setup: str, step: str, check: str, expected: object
) -> None:
    assert (await box.codemode.execute(setup, session="x")).ok
    sizes: list[int] = []
    for _ in range(20):
        out = await box.codemode.execute(step + PAD, session="x")
        assert out.session is not None
        sizes.append(out.session.size_bytes)
    got = await box.codemode.execute(check, session="x")
    assert got.ok and got.value == expected, got.error
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0] + FLOOR  # never rebuilt: all its history is kept


# The definitions sessions started with before the stored state had a head.
_OLD_PRELUDE = (
    "ToolError = RuntimeError\ndef println(*args):\n    print(*args)\n"
    + TOOL_ERROR_INFO_SOURCE
    + "class _ToolcodeNoOut:\n    pass\n__toolcode_no_out = _ToolcodeNoOut()\n__out = __toolcode_no_out\n"
)


async def test_a_session_stored_as_a_bare_dump_still_continues_and_is_rebuilt(box: Toolbox) -> None:
    async with pm.AsyncMonty(min_processes=1, max_processes=1) as pool, pool.checkout() as session:
        await session.feed_run(_OLD_PRELUDE)
        await session.feed_run("x = 41\n__toolcode_out = (True, 'old')")
        dump = await session.dump()
    await box.stores.sessions.store.put("session", "local/old", _encode(_Meta(time.time()), dump))
    out = await box.codemode.execute("__out = x + 1", session="old")
    assert out.ok and out.value == 42 and out.session is not None and not out.session.new, out.error
    sizes = await _runs(box, "old", "x = x + 1" + PAD, 30)
    assert any(later < earlier for earlier, later in itertools.pairwise(sizes)), sizes  # rebuilt
    after = await box.codemode.execute("println('hi')\n__out = x", session="old")
    assert after.ok and after.value == 71 and after.stdout == "hi\n", after.error
