"""Fail closed: with `policy.audit.required`, no call is made while the audit log cannot be written (real Redis)."""

from __future__ import annotations

from typing import Any

import pytest

from toolcode import Settings, Toolbox
from toolcode._settings import AuditSettings, PolicySettings, StateSettings
from toolcode.exceptions import ErrorCode, ToolError
from toolrun import LocalBackend

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


def _backend(made: list[str]) -> LocalBackend:
    local = LocalBackend()

    @local.tool(namespace="notes")
    def add(text: str) -> str:
        """Add a note."""
        made.append(text)
        return "added"

    return local


@pytest.mark.parametrize("required", [True, False])
async def test_calls_are_refused_while_the_audit_log_cannot_be_written(
    redis_url: str, redis_server: Any, required: bool
) -> None:
    made: list[str] = []
    policy = PolicySettings(audit=AuditSettings(required=required))
    settings = Settings(policy=policy, state=StateSettings(url=redis_url))
    async with Toolbox([_backend(made)], settings=settings, engine="inprocess") as box:
        cm = box.codemode
        assert (await cm.execute("run_tool('notes:add', text='one')")).ok
        redis_server.stop()
        try:
            out = await cm.execute("run_tool('notes:add', text='two')")
            if required:
                assert out.error is not None and out.error.code == ErrorCode.STATE_UNAVAILABLE.value, out
                with pytest.raises(ToolError) as info:  # a door's direct call too
                    await cm.run_tool("notes:add", {"text": "three"})
                assert info.value.code == ErrorCode.STATE_UNAVAILABLE
                assert made == ["one"]
            else:  # off: calls go on, and the entries that cannot be written are logged as lost
                assert out.ok, out
                assert made == ["one", "two"]
        finally:
            redis_server.start()
        assert (await cm.execute("run_tool('notes:add', text='four')")).ok  # back: calls go again
        assert made[-1] == "four"


async def test_a_store_that_answers_reads_but_refuses_writes_refuses_calls(redis_url: str) -> None:
    # A primary without its replicas (min-replicas-to-write), or one demoted after a failover,
    # answers reads and refuses writes: the guard read its probe, let the call through, and the
    # run's entries were lost at its end.
    import redis.asyncio as aioredis

    made: list[str] = []
    policy = PolicySettings(audit=AuditSettings(required=True))
    settings = Settings(policy=policy, state=StateSettings(url=redis_url))
    client = aioredis.from_url(redis_url)
    async with Toolbox([_backend(made)], settings=settings, engine="inprocess") as box:
        cm = box.codemode
        assert (await cm.execute("run_tool('notes:add', text='one')")).ok
        await client.config_set("min-replicas-to-write", 1)  # no replica: every write is refused
        try:
            out = await cm.execute("run_tool('notes:add', text='two')")
            assert out.error is not None and out.error.code == ErrorCode.STATE_UNAVAILABLE.value, out
            assert made == ["one"]
        finally:
            await client.config_set("min-replicas-to-write", 0)
            await client.aclose()
        assert (await cm.execute("run_tool('notes:add', text='three')")).ok
        assert made == ["one", "three"]


async def test_no_definition_is_approved_while_its_audit_entry_cannot_be_written(redis_url: str) -> None:
    import redis.asyncio as aioredis

    from toolcode.exceptions import StateUnavailableError

    made: list[str] = []
    policy = PolicySettings(audit=AuditSettings(required=True), quarantine=True)
    settings = Settings(policy=policy, state=StateSettings(url=redis_url))
    client = aioredis.from_url(redis_url)
    async with Toolbox([_backend(made)], settings=settings, engine="inprocess") as box:
        cm = box.codemode
        await client.config_set("min-replicas-to-write", 1)
        try:
            with pytest.raises(StateUnavailableError):
                await cm.approve_tools(cm.quarantined_tools().digests(), by="person:ops")
        finally:
            await client.config_set("min-replicas-to-write", 0)
            await client.aclose()
        assert [t.tool_id for t in cm.quarantined_tools().tools] == ["notes:add"]  # still blocked
        assert (await cm.approve_tools(cm.quarantined_tools().digests(), by="person:ops")).approved == ["notes:add"]
