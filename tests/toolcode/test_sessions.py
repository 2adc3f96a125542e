"""Sessions, saved snippets and learned shapes in the state store (real SQLite files, a real redis-server)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolcode import Settings, Toolbox
from toolcode._settings import SessionSettings, StateSettings
from toolcode.demo import helpdesk_backend
from toolcode.state import RedisStateStore, SQLiteStateStore, StateStore
from toolrun import LocalBackend

pytestmark = pytest.mark.anyio


def _settings(state_dir: Path, **sessions: Any) -> Settings:
    return Settings(state=StateSettings(dir=str(state_dir)), sessions=SessionSettings(**sessions))


class Gate:
    """A tool ``gate:hold`` that says when a run has reached it and holds the run there until released.

    Tests wait for ``held`` instead of sleeping and hoping the run got that far: a busy machine only
    makes them wait longer.
    """

    def __init__(self) -> None:
        self.held = anyio.Event()
        self.release = anyio.Event()
        self.backend = LocalBackend()

        @self.backend.tool(namespace="gate")
        async def hold() -> int:  # pyright: ignore[reportUnusedFunction]
            """Hold the run until the test releases it."""
            self.held.set()
            await self.release.wait()
            return 1

    async def wait_held(self) -> None:
        with anyio.fail_after(60):  # only a hang: the run reaches the gate in well under a second
            await self.held.wait()


def _local() -> LocalBackend:
    local = LocalBackend()

    @local.tool(namespace="data", inline=True)
    def record(n: int):  # type: ignore[no-untyped-def]  # no declared result: its shape is learned
        """A record without a declared result type (its shape is learned)."""
        return {"id": n, "name": f"item {n}", "tags": ["a", "b"]}

    @local.tool(namespace="data", inline=True)
    def customers(query: str):  # type: ignore[no-untyped-def]  # no declared result: its shape is learned
        """Customers matching a query, by e-mail address."""
        found = {"ceo.private@acme-secret.example": {"plan": "platinum-hidden-deal"}} if query == "ceo" else {}
        return {"customers": found, "count": len(found)}

    return local


@pytest.fixture
async def box(tmp_path: Path) -> AsyncIterator[Toolbox]:
    async with Toolbox([helpdesk_backend(), _local()], settings=_settings(tmp_path / "state")) as b:
        yield b


async def test_a_session_keeps_variables_functions_and_imports(box: Toolbox) -> None:
    cm = box.codemode
    first = await cm.execute(
        "from tools import helpdesk\nimport json\nx = 41\ndef double(v):\n    return 2 * v\n"
        "offices = helpdesk.list_offices()\nlen(offices)",
        session="work",
    )
    assert first.ok and first.value == 6 and first.session is not None and first.session.new
    second = await cm.execute(
        "__out = [x + 1, double(21), json.dumps({'n': len(offices)}), helpdesk.on_call(office='Paris')[0]['office']]",
        session="work",
    )
    assert second.ok, second.error
    assert second.value == [42, 42, '{"n": 6}', "Paris"]
    assert second.session is not None and not second.session.new and second.session.size_bytes > 0
    # Without a session a run is fresh, as always.
    fresh = await cm.execute("x")
    assert fresh.error is not None and "NameError" in fresh.error.message


async def test_out_and_the_trailing_expression_mean_the_same_as_in_a_fresh_run(box: Toolbox) -> None:
    cm = box.codemode
    assert (await cm.execute("__out = 5", session="o")).value == 5
    assert (await cm.execute("y = 1\ny + 1", session="o")).value == 2  # __out of the last run is gone
    assert (await cm.execute("z = 3", session="o")).value is None


async def test_the_check_before_the_run_knows_the_sessions_imports(box: Toolbox) -> None:
    cm = box.codemode
    await cm.execute("from tools import helpdesk\nn = 1", session="typed")
    bad = await cm.execute("helpdesk.list_tickets(ofice='Paris')", session="typed")
    assert bad.error is not None and bad.error.code == "type_error", bad.error
    assert bad.error.diagnostics and bad.error.diagnostics[0].line == 1
    # A refused run leaves the session as it was.
    assert (await cm.execute("n + 1", session="typed")).value == 2


async def test_the_check_knows_a_builtin_or_a_global_an_earlier_run_bound_again(box: Toolbox) -> None:
    # An earlier run's ``def list`` or ``run_tool = ...`` is what later runs call: the check must not
    # read those names as the builtin or the snippet's global (it refused correct code).
    cm = box.codemode
    setup = "from tools import helpdesk\ndef list(x):\n    return [x]\nrun_tool = lambda tool_id, **kw: tool_id"
    assert (await cm.execute(setup, session="own")).ok
    out = await cm.execute("list(helpdesk.list_offices()[0]['staff']) + [run_tool('helpdesk:nope')]", session="own")
    assert out.ok and out.value[-1] == "helpdesk:nope", out.error
    # A later run that imports the tools module under the name makes it the module again for the next.
    assert (
        await cm.execute("from tools import helpdesk as list\nn = len(list.on_call(office='Paris'))", session="own")
    ).ok
    again = await cm.execute("list.on_call(ofice='Paris')", session="own")
    assert again.error is not None and again.error.code == "type_error", again.error


async def test_the_check_knows_a_name_a_function_of_an_earlier_run_bound_with_global(box: Toolbox) -> None:
    # A function that declares a tools module's name ``global`` and binds it replaces the module in
    # the session once called: later runs must not be checked as if the name were still the module.
    cm = box.codemode
    assert (await cm.execute("from tools import helpdesk", session="g")).ok
    setup = "def reset():\n    global helpdesk\n    helpdesk = 41\nreset()"
    assert (await cm.execute(setup, session="g")).ok
    out = await cm.execute("helpdesk + 1", session="g")
    assert out.ok and out.value == 42, out.error
    # A function that only reads the module through ``global`` leaves it the module for the check.
    assert (await cm.execute("from tools import helpdesk", session="r")).ok
    assert (await cm.execute("def n():\n    global helpdesk\n    return len(helpdesk.list_offices())", session="r")).ok
    again = await cm.execute("helpdesk.on_call(ofice='Paris')", session="r")
    assert again.error is not None and again.error.code == "type_error", again.error


async def test_a_snippet_error_keeps_the_state_a_limit_resets_it(box: Toolbox) -> None:
    cm = box.codemode
    await cm.execute("kept = 'yes'", session="r")
    err = await cm.execute("partial = 1\nraise ValueError('boom')", session="r")
    assert err.error is not None and err.error.code == "runtime_error"
    assert err.session is not None and err.session.reset is None
    assert (await cm.execute("[kept, partial]", session="r")).value == ["yes", 1]
    stopped = await cm.execute("while True:\n    pass", session="r", options={"timeout": 1})
    assert stopped.error is not None and stopped.error.code == "timeout"
    assert stopped.session is not None and stopped.session.reset is not None and "limit" in stopped.session.reset
    after = await cm.execute("kept", session="r")
    assert after.error is not None and "NameError" in after.error.message
    assert after.session is not None and after.session.new


async def test_a_session_survives_a_restart(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "state")
    async with Toolbox([helpdesk_backend()], settings=settings) as first:
        assert (await first.codemode.execute("x = 41", session="s")).ok
    async with Toolbox([helpdesk_backend()], settings=settings) as second:
        out = await second.codemode.execute("__out = x + 1", session="s")
        assert out.value == 42, out.error
        assert [s.name for s in (await second.codemode.list_sessions()).sessions] == ["s"]


async def test_list_and_reset(box: Toolbox) -> None:
    cm = box.codemode
    await cm.execute("a = 1", session="one")
    await cm.execute("b = 2", session="two")
    await cm.execute("b = 3", session="two")
    listed = {s.name: s for s in (await cm.list_sessions()).sessions}
    assert set(listed) == {"one", "two"} and listed["two"].runs == 2 and listed["one"].size_bytes > 0
    assert listed["one"].expires is not None and listed["one"].expires > listed["one"].last_used
    assert await cm.reset_session("two")
    assert not await cm.reset_session("two")
    assert [s.name for s in (await cm.list_sessions()).sessions] == ["one"]


@pytest.mark.parametrize("name", ["", "a b", "x" * 65, "../etc", 7])
async def test_a_bad_session_name_is_refused(box: Toolbox, name: Any) -> None:
    out = await box.codemode.execute("1", session=name)
    assert out.error is not None and out.error.code == "invalid_arguments" and "session" in out.error.message


async def test_limits_max_sessions_and_max_bytes(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "state", max_sessions=2, max_bytes=64 * 1024)
    async with Toolbox([], settings=settings) as box:
        cm = box.codemode
        assert (await cm.execute("a = 1", session="s1")).ok
        assert (await cm.execute("a = 1", session="s2")).ok
        third = await cm.execute("a = 1", session="s3")
        assert third.error is not None and third.error.code == "session_limit" and "max_sessions" in third.error.message
        assert (await cm.execute("a = 2", session="s1")).ok  # an existing one still runs
        big = await cm.execute("blob = 'x' * 200_000\nlen(blob)", session="s1")
        assert big.error is not None and big.error.code == "session_limit" and "max_bytes" in big.error.message
        assert big.value is None
        assert (await cm.execute("a", session="s1")).value == 2  # kept its state from before
        # A session refused for max_sessions left its lock held: busy until a restart, room or not.
        assert await cm.reset_session("s2")
        fourth = await cm.execute("a = 3\na", session="s3")
        assert fourth.ok and fourth.value == 3, fourth.error


class Meeting:
    """Tools ``gate:meet`` (one backend per toolbox) that hold each run until ``expected`` runs have reached one.

    Runs on several toolboxes (servers) then go on together, each past what it checked when it started.
    """

    def __init__(self, expected: int) -> None:
        self.expected, self.arrived = expected, 0
        self.everyone = anyio.Event()

    def backend(self) -> LocalBackend:
        local = LocalBackend()

        @local.tool(namespace="gate")
        async def meet() -> int:  # pyright: ignore[reportUnusedFunction]
            """Wait until every run expected has arrived."""
            self.arrived += 1
            if self.arrived == self.expected:
                self.everyone.set()
            await self.everyone.wait()
            return 1

        return local


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_new_sessions_run_at_once_on_two_servers_stay_within_max_sessions(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    # Each run found room when it started; the sessions were written when they ended, all of them
    # (8 sessions against a quota of 2, as a review measured through two `serve --http` replicas).
    state = (
        StateSettings(url=request.getfixturevalue("redis_url")) if kind == "redis" else StateSettings(dir=str(tmp_path))
    )
    settings = Settings(state=state, sessions=SessionSettings(max_sessions=2))
    meeting = Meeting(6)
    async with (
        Toolbox([meeting.backend()], settings=settings) as a,
        Toolbox([meeting.backend()], settings=settings) as b,
    ):
        outcomes: list[Any] = []

        async def run(box: Toolbox, name: str) -> None:
            outcomes.append(
                await box.codemode.execute("run_tool('gate:meet')\nx = 1", session=name, caller="token:ann")
            )

        with anyio.fail_after(120):  # only a hang: six short runs
            async with anyio.create_task_group() as tg:
                for i in range(6):
                    tg.start_soon(run, (a, b)[i % 2], f"s{i}")
        held = await a.codemode.list_sessions(caller="token:ann")
        assert len(held.sessions) <= 2, held
        refused = [o for o in outcomes if not o.ok]
        assert len(refused) >= 4, outcomes
        for o in refused:
            assert o.error is not None and o.error.code == "session_limit", o.error
            assert "max_sessions" in o.error.message and "not saved" in o.error.message
        # A session the quota refused was taken back whole: a later run of it starts empty.
        kept = {s.name for s in held.sessions}
        for i in range(6):
            if f"s{i}" not in kept:
                assert await a.codemode.reset_session(f"s{i}", caller="token:ann") is False


async def test_an_idle_session_expires_after_its_idle_ttl(tmp_path: Path) -> None:
    async with Toolbox([], settings=_settings(tmp_path / "state", idle_ttl=1.0)) as box:
        cm = box.codemode
        assert (await cm.execute("a = 1", session="s1")).ok
        assert [s.name for s in (await cm.list_sessions()).sessions] == ["s1"]
        await anyio.sleep(1.5)  # past the idle TTL (a busy machine only waits longer)
        assert (await cm.list_sessions()).sessions == []
        expired = await cm.execute("a", session="s1")
        assert expired.session is not None and expired.session.new and expired.error is not None


async def test_runs_of_one_session_never_overlap(box: Toolbox) -> None:
    cm = box.codemode
    await cm.execute("log = []", session="q")
    results: list[Any] = []

    async def run(tag: str) -> None:
        out = await cm.execute(
            f"log.append('{tag}-start')\nimport time\ntime.sleep(0.3)\nlog.append('{tag}-end')\nlen(log)", session="q"
        )
        results.append(out.value)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "a")
        tg.start_soon(run, "b")
    log = (await cm.execute("log", session="q")).value
    assert sorted(results) == [2, 4]
    assert log in (["a-start", "a-end", "b-start", "b-end"], ["b-start", "b-end", "a-start", "a-end"])


async def test_a_session_held_by_another_server_is_busy_after_the_queue_timeout(tmp_path: Path) -> None:
    # Two toolboxes on one state file stand for two servers.
    settings = _settings(tmp_path / "state", queue_timeout=0.5)
    gate = Gate()
    async with Toolbox([gate.backend], settings=settings) as a, Toolbox([], settings=settings) as b:
        await a.codemode.execute("n = 0", session="shared")
        async with anyio.create_task_group() as tg:
            slow: list[Any] = []

            async def hold() -> None:
                slow.append(await a.codemode.execute("run_tool('gate:hold')\nn = 1", session="shared"))

            tg.start_soon(hold)
            await gate.wait_held()  # A's run holds the session until B has given up
            with anyio.fail_after(60):  # B gives up after 0.5 s; this bounds a B that waits for good
                busy = await b.codemode.execute("n", session="shared")
            gate.release.set()
        assert busy.error is not None and busy.error.code == "busy" and "in use" in busy.error.message
        assert slow[0].ok
        assert (await b.codemode.execute("n", session="shared")).value == 1


async def test_a_reset_waits_for_the_run_in_progress_and_empties_what_it_left(tmp_path: Path) -> None:
    # The reset deleted the state under a run of the session: the run's write then failed ``busy``.
    gate = Gate()
    async with Toolbox([gate.backend], settings=_settings(tmp_path / "state")) as box:
        cm = box.codemode
        await cm.execute("n = 0", session="r")
        ran: list[Any] = []
        reset: list[bool] = []
        async with anyio.create_task_group() as tg:

            async def hold() -> None:
                ran.append(await cm.execute("run_tool('gate:hold')\nn = 1", session="r"))

            async def forget() -> None:
                reset.append(await cm.reset_session("r"))

            tg.start_soon(hold)
            await gate.wait_held()  # the run holds the session
            tg.start_soon(forget)
            await anyio.wait_all_tasks_blocked()
            assert reset == []  # the reset waits for the run
            gate.release.set()
        assert ran[0].ok, ran[0].error
        assert reset == [True]
        assert (await cm.list_sessions()).sessions == []  # emptied after the run, not before
        fresh = await cm.execute("n", session="r")
        assert fresh.error is not None and "NameError" in fresh.error.message


async def test_runs_of_one_session_on_one_server_queue_in_turn(tmp_path: Path) -> None:
    gate = Gate()
    settings = _settings(tmp_path / "state", queue_timeout=0.5)
    async with Toolbox([gate.backend], settings=settings) as box:
        cm = box.codemode
        await cm.execute("n = 0", session="q")
        async with anyio.create_task_group() as tg:
            slow: list[Any] = []
            queued: list[Any] = []

            async def hold() -> None:
                slow.append(await cm.execute("run_tool('gate:hold')\nn = 1", session="q"))

            async def after_it() -> None:
                queued.append(await cm.execute("n + 10", session="q"))

            tg.start_soon(hold)
            await gate.wait_held()  # the first run holds the session
            with anyio.fail_after(60):  # the second gives up after 0.5 s; this bounds one that waits for good
                busy = await cm.execute("n", session="q")
            assert busy.error is not None and busy.error.code == "busy", busy
            assert "another run of this session did not finish within 0.5 s" in busy.error.message
            tg.start_soon(after_it)
            gate.release.set()  # a run that waits within the timeout goes on after the first, and sees its state
        assert slow[0].ok and queued[0].value == 11, (slow, queued)


async def test_sessions_belong_to_their_caller(box: Toolbox) -> None:
    cm = box.codemode
    await cm.execute("who = 'alice'", session="s", caller="token:alice")
    await cm.execute("who = 'bob'", session="s", caller="token:bob")
    assert (await cm.execute("who", session="s", caller="token:alice")).value == "alice"
    assert (await cm.execute("who", session="s", caller="token:bob")).value == "bob"
    local = await cm.execute("who", session="s")
    assert local.error is not None and local.session is not None and local.session.new
    assert [s.name for s in (await cm.list_sessions("token:alice")).sessions] == ["s"]


async def test_the_in_process_engine_says_it_keeps_no_sessions(tmp_path: Path) -> None:
    async with Toolbox([], settings=_settings(tmp_path), engine="inprocess") as box:
        out = await box.codemode.execute("x = 1", session="s")
        assert out.error is not None and out.error.code == "invalid_arguments"
        assert "does not keep sessions" in out.error.message


async def test_redis_sessions_continue_on_another_toolbox_and_survive_redis_going_away(
    redis_url: str, redis_server: Any
) -> None:
    def toolbox() -> Toolbox:
        return Toolbox([], settings=Settings(state=StateSettings(url=redis_url)))

    async with toolbox() as a, toolbox() as b:
        assert (await a.codemode.execute("x = 41", session="r")).ok
        assert (await b.codemode.execute("x + 1", session="r")).value == 42
        redis_server.stop()
        down = await b.codemode.execute("x = 100", session="r")
        assert down.error is not None and down.error.code == "state_unavailable", down.error
        redis_server.start()
        # Connections idle for a second are checked before use and replaced (a's were idle).
        await anyio.sleep(1.2)
        # Nothing was half-written: the session is as it was before Redis went away.
        back = await a.codemode.execute("x", session="r")
        assert back.value == 41, back.error


async def test_redis_going_away_mid_run_loses_nothing_committed(redis_url: str, redis_server: Any) -> None:
    settings = Settings(state=StateSettings(url=redis_url), sessions=SessionSettings(queue_timeout=5))
    gate = Gate()
    async with Toolbox([gate.backend], settings=settings) as box:
        cm = box.codemode
        assert (await cm.execute("x = 1", session="m")).ok
        outcome: list[Any] = []

        async def run() -> None:
            outcome.append(await cm.execute("run_tool('gate:hold')\nx = 2", session="m"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await gate.wait_held()  # mid-run
            redis_server.stop()
            gate.release.set()
        assert outcome[0].error is not None and outcome[0].error.code == "state_unavailable", outcome[0]
        redis_server.start()
        await anyio.sleep(1.2)
        # The run's state was never written; the session is as it was, and usable at once.
        after = await cm.execute("x", session="m")
        assert after.value == 1, after.error


async def test_saved_snippets_are_tools(box: Toolbox) -> None:
    cm = box.codemode
    entry = await cm.save_snippet(
        "urgent_count",
        "from tools import helpdesk\n"
        "len([t for t in helpdesk.list_tickets(office=input['office']) if t['priority'] == 'urgent'])",
        "Count the urgent help-desk tickets of one office.",
        {"type": "object", "properties": {"office": {"type": "string"}}, "required": ["office"]},
    )
    assert entry.tool_id == "snippets:urgent_count"
    hits = await cm.search_tools("how many urgent tickets does an office have", limit=3)
    assert "snippets:urgent_count" in [h.id for h in hits.hits]
    doc = await cm.describe_tool("snippets:urgent_count")
    assert "def urgent_count(" in doc.text and "office: str" in doc.text and "from tools import snippets" in doc.text
    out = await cm.execute(
        "from tools import snippets\n"
        "[snippets.urgent_count(office='Paris'), run_tool('snippets:urgent_count', office='Tokyo')]",
        options={"trace": "full"},
    )
    assert out.ok, out.error
    direct = [(await cm.run_tool("helpdesk:list_tickets", {"office": c})).value for c in ("Paris", "Tokyo")]
    assert out.value == [sum(t["priority"] == "urgent" for t in ts) for ts in direct]
    assert out.trace is not None
    ids = [t.tool_id for t in out.trace]
    # Each call of the snippet, and the snippet's own call inside it.
    assert ids.count("snippets:urgent_count") == 2 and ids.count("helpdesk:list_tickets") == 2
    assert (await cm.run_tool("snippets:urgent_count", {"office": "Paris"})).value == out.value[0]
    # Its arguments are checked like any tool's.
    bad = await cm.execute("run_tool('snippets:urgent_count', ofice='Paris')")
    assert bad.error is not None and bad.error.code == "type_error"
    listed = await cm.list_snippets()
    assert [s.name for s in listed.snippets] == ["urgent_count"] and listed.snippets[0].code is None
    assert (await cm.show_snippet("urgent_count")).code is not None
    assert await cm.delete_snippet("urgent_count")
    with pytest.raises(Exception) as ei:
        await cm.run_tool("snippets:urgent_count", {"office": "Paris"})
    assert "unknown" in str(ei.value)


async def test_a_snippet_is_checked_when_saved_and_bad_fields_are_named(box: Toolbox) -> None:
    cm = box.codemode
    from toolcode import InvalidArgumentsError
    from toolcode.exceptions import TypeCheckError

    with pytest.raises(TypeCheckError) as te:
        await cm.save_snippet("bad", "from tools import helpdesk\nhelpdesk.on_call(ofice='Paris')", "Broken.")
    assert te.value.diagnostics and te.value.diagnostics[0].line == 2
    cases = [
        (("Bad Name", "1", "d"), "name"),
        (("ok", "", "d"), "code"),
        (("ok", "1", ""), "description"),
        (("ok", "1", "d", {"type": "string"}), "input_schema"),
        (("ok", "1", "d", {"type": "object", "properties": {"a": {"type": "nope"}}}), "input_schema"),
        (("ok", "x = (", "d"), "code"),
    ]
    for args, field in cases:
        with pytest.raises(InvalidArgumentsError) as ei:
            await cm.save_snippet(*args)
        assert ei.value.field == field, (args, ei.value)
    assert (await cm.list_snippets()).snippets == []


async def test_a_snippet_saved_and_called_in_one_run(box: Toolbox) -> None:
    out = await box.codemode.execute(
        "save_snippet('twice', \"input['n'] * 2\", 'Double a number.')\nrun_tool('snippets:twice', n=21)"
    )
    assert out.ok and out.value == 42, out.error


async def test_a_snippet_calling_itself_stops(box: Toolbox) -> None:
    cm = box.codemode
    await cm.save_snippet("loop", "run_tool('snippets:loop')", "Calls itself.")
    out = await cm.execute("run_tool('snippets:loop')")
    assert out.error is not None and "nested" in out.error.message


async def test_snippets_saved_by_one_server_reach_another(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "state")
    async with Toolbox([], settings=settings) as a, Toolbox([], settings=settings) as b:
        await a.codemode.save_snippet("hello", "'hello ' + input['who']", "Greet someone.")
        await b.stores.snippets.sync()  # what b's background task does every 2 s
        assert (await b.codemode.run_tool("snippets:hello", {"who": "b"})).value == "hello b"
        await a.codemode.delete_snippet("hello")
        await b.stores.snippets.sync()
        assert "snippets:hello" not in [t.id for t in (await b.codemode.list_tools()).tools]


async def test_a_replica_keeps_in_step_with_the_store_by_itself_through_an_outage(
    redis_url: str, redis_server: Any
) -> None:
    # b's background task looks at the store every 2 s: a store that went away is logged and
    # the task goes on, so a snippet saved after the store came back reaches b unasked.
    failed, shown = anyio.Event(), anyio.Event()

    class Failures(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "snippets.sync_failed" in record.getMessage():
                failed.set()

    handler, logger = Failures(), logging.getLogger("toolcode.snippets")
    logger.addHandler(handler)
    settings = Settings(state=StateSettings(url=redis_url))
    try:
        async with Toolbox([], settings=settings) as b:
            b.index.subscribe(lambda e: shown.set() if "snippets:hello" in e.tool_ids else None)
            redis_server.stop()
            with anyio.fail_after(60):  # bounds a hang only: the task looks every 2 s
                await failed.wait()
            redis_server.start()
            async with Toolbox([], settings=settings) as a:  # started after the store came back
                await a.codemode.save_snippet("hello", "'hello ' + input['who']", "Greet someone.")
            with anyio.fail_after(60):
                await shown.wait()
            assert (await b.codemode.run_tool("snippets:hello", {"who": "b"})).value == "hello b"
    finally:
        logger.removeHandler(handler)


async def test_learned_shapes_persist_across_restarts(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "state")
    async with Toolbox([_local()], settings=settings) as first:
        await first.codemode.run_tool("data:record", {"n": 1})
        assert first.store.result_shape("data:record") is not None
    async with Toolbox([_local()], settings=settings) as second:
        shape = second.store.result_shape("data:record")
        assert shape is not None and set(shape["properties"]) == {"id", "name", "tags"}
        doc = await second.codemode.describe_tool("data:record", "full")
        assert "tags" in doc.text


async def test_state_stores_given_to_a_toolbox_are_not_closed_by_it(tmp_path: Path, redis_url: str) -> None:
    stores: list[StateStore] = [SQLiteStateStore(tmp_path / "s.sqlite3"), RedisStateStore(redis_url)]
    for store in stores:
        async with Toolbox([], state=store) as box:
            await box.codemode.execute("a = 1", session="s")
        assert await store.get("session", "local/s") is not None
        await store.aclose()


async def test_a_learned_shape_keeps_no_key_that_is_data(box: Toolbox) -> None:
    # Learned shapes are shown to every caller who can describe the tool: alice's result must not
    # put the address it was keyed by into what bob reads.
    cm = box.codemode
    for _ in range(3):
        out = await cm.execute("__out = run_tool('data:customers', query='ceo')['count']", caller="token:alice")
        assert out.ok and out.value == 1, out.error
    doc = (await cm.describe_tool("data:customers", "full", caller="token:bob")).text
    assert "customers" in doc and "count" in doc, doc  # the fields are learned
    assert "ceo.private" not in doc and "platinum" not in doc, doc


@pytest.mark.parametrize(
    ("rebind", "use"),
    [
        ("import time", "time.time() > 0"),
        ("def time():\n    return 1", "time() + 1"),
        ("class time:\n    pass", "time() is not None"),
        ("from datetime import time", "time(12, 0).hour"),
        ("for time in [1]:\n    pass", "time + 1"),
        ("import json as time", "time.dumps(1)"),
        ("found = [time := n for n in [1, 2]]", "time + 1"),  # a comprehension's walrus binds in the module
        ("if (time := 5) > 1:\n    pass", "time + 1"),
        ("try:\n    1 / 0\nexcept ZeroDivisionError as time:\n    pass\ntime = 3", "time + 1"),
    ],
)
async def test_a_name_a_later_run_binds_otherwise_is_no_longer_the_tools_module(
    tmp_path: Path, rebind: str, use: str
) -> None:
    # The check knew every tools import a session had made, never that a later run bound the name
    # to something else: the next run's correct use of it was refused.
    from toolcode.demo import demo_backends

    async with Toolbox(demo_backends(), settings=_settings(tmp_path / "state")) as box:
        cm = box.codemode
        assert (await cm.execute("from tools import time, helpdesk", session="s")).ok
        assert (await cm.execute(rebind, session="s")).ok
        unchecked = await cm.execute(use, session="s", options={"type_check": "off"})
        assert unchecked.ok, unchecked.error
        out = await cm.execute(use, session="s")
        assert out.ok, (rebind, out.error)
        # The other name of the same line is still the tools module, and still checked.
        wrong = await cm.execute("helpdesk.list_offices(nope=1)", session="s")
        assert wrong.error is not None and wrong.error.code == "type_error", (rebind, wrong)


async def test_a_module_a_session_imported_outside_a_later_runs_namespaces_is_unknown_tool(tmp_path: Path) -> None:
    # The call was blocked, but as "NameError: name 'tools.helpdesk.list_offices' is not defined".
    from toolcode.demo import demo_backends

    async with Toolbox(demo_backends(), settings=_settings(tmp_path / "state")) as box:
        cm = box.codemode
        assert (await cm.execute("from tools import helpdesk", session="s")).ok
        out = await cm.execute(
            "helpdesk.list_offices()", session="s", options={"allowed_namespaces": ["time"], "type_check": "off"}
        )
        assert out.error is not None and out.error.code == "unknown_tool", out.error
        assert "tools.helpdesk.list_offices is not a tool of this run" in out.error.message
