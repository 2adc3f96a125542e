"""End to end: snippets that search, describe and call tools on real MCP servers and local functions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import anyio
import pytest

from toolcode import (
    CodeExecutionError,
    ExecuteOptions,
    ExecuteParams,
    Executor,
    Listeners,
    Services,
    ToolCallRecord,
    load_engine,
)
from tooldocs import InMemoryStore
from toolindex import InMemoryIndex
from toolrun import DefaultRunner, LocalBackend, backends_from_config, load_config

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


@pytest.fixture(params=["monty", "inprocess"])
async def executor(request: pytest.FixtureRequest, mcp_servers: dict[str, Any]) -> AsyncIterator[Executor]:
    servers = {name: mcp_servers[name] for name in ("time", "everything", "memory")}
    backends = backends_from_config(load_config({"mcpServers": servers}))
    local = LocalBackend()

    @local.tool(namespace="local")
    async def double(x: int) -> int:
        """Double a number."""
        return 2 * x

    index = InMemoryIndex()
    async with AsyncExitStack() as stack:
        for b in backends:
            await stack.enter_async_context(b)
        runner = await stack.enter_async_context(DefaultRunner(index, [*backends, local]))
        await runner.attach()
        engine = load_engine(request.param)
        ex = Executor(Services.of(index, runner, docs=InMemoryStore(index, autosave=False), engine=engine))
        try:
            yield ex
        finally:
            await engine.aclose()


SNIPPET = """
hits = search_tools('current time in a timezone', limit=3)['hits']
tid = hits[0]['id']
doc = describe_tool(tid)
zones = {}
for tz in input['zones']:
    zones[tz] = run_tool(tid, timezone=tz)['timezone']
echo = run_tool('everything:echo', message='hello')
total = run_tool('everything:get-sum', a=2, b=40)
entity = {'name': 'toolcode', 'entityType': 'project', 'observations': ['runs snippets']}
run_tool('memory:create_entities', entities=[entity])
graph = run_tool('memory:read_graph')
try:
    run_tool('time:get_current_time', timezone='Not/AZone')
    bad = None
except ToolError as e:
    bad = str(e)
print('zones done:', len(zones))
__out = {
    'tool': tid,
    'has_signature': 'def get_current_time' in doc['text'],
    'zones': zones,
    'echo': echo,
    'total': total,
    'entities': [e['name'] for e in graph['entities']],
    'bad': bad,
    'local': run_tool('local:double', x=21),
}
"""


async def test_snippet_over_real_servers_and_local_functions(executor: Executor) -> None:
    seen: list[ToolCallRecord] = []

    async def listener(rec: ToolCallRecord) -> None:
        seen.append(rec)

    with anyio.fail_after(120):  # a hang bound: the first call starts the npm servers
        result = await executor.execute(
            ExecuteParams(code=SNIPPET, input={"zones": ["UTC", "Asia/Tokyo"]}), Listeners(listener)
        )
    v = result.value
    assert v["tool"] == "time:get_current_time" and v["has_signature"]
    assert v["zones"] == {"UTC": "UTC", "Asia/Tokyo": "Asia/Tokyo"}
    assert v["echo"] == "Echo: hello" and "42" in str(v["total"])
    assert v["entities"] == ["toolcode"]
    assert "time:get_current_time" in v["bad"] and "Not/AZone" in v["bad"]
    assert v["local"] == 42
    assert result.stdout == "zones done: 2\n"

    trace = result.tool_calls
    assert [t.tool_id for t in trace] == [
        "time:get_current_time",
        "time:get_current_time",
        "everything:echo",
        "everything:get-sum",
        "memory:create_entities",
        "memory:read_graph",
        "time:get_current_time",
        "local:double",
    ]
    assert [t.backend_kind for t in trace] == ["mcp"] * 7 + ["local"]
    assert [dict(t.args) for t in trace[:3]] == [{"timezone": "UTC"}, {"timezone": "Asia/Tokyo"}, {"message": "hello"}]
    assert trace[0].structured["timezone"] == "UTC" and trace[2].structured == "Echo: hello"
    assert [t.error is None for t in trace] == [True] * 6 + [False, True]
    assert trace[6].error_op == "call" and "Not/AZone" in (trace[6].error or "")
    assert trace[7].structured == 42
    assert all(t.duration_ms > 0 for t in trace)
    assert [t.started_ms for t in trace] == sorted(t.started_ms for t in trace)
    assert [t.tool_id for t in seen] == [t.tool_id for t in trace]
    assert result.limits.tool_calls == 8 and result.limits.stopped_by is None


async def test_fan_out_and_chain_over_mcp(executor: Executor) -> None:
    code = """
zones = ['UTC', 'Europe/Paris', 'Asia/Tokyo']
times = run_tools([('time:get_current_time', {'timezone': z}) for z in zones])
chain = run_chain([
    {'tool_id': 'local:double', 'args': {'x': 5}},
    {'tool_id': 'everything:echo', 'args': {'message': 'chained'}},
])
[[t['timezone'] for t in times], chain['final'], [s['ok'] for s in chain['steps']]]
"""
    with anyio.fail_after(120):  # a hang bound: the first call starts the npm servers
        result = await executor.execute(ExecuteParams(code=code))
    assert result.value == [["UTC", "Europe/Paris", "Asia/Tokyo"], "Echo: chained", [True, True]]
    assert [dict(t.args).get("timezone") for t in result.tool_calls[:3]] == ["UTC", "Europe/Paris", "Asia/Tokyo"]
    assert [t.tool_id for t in result.tool_calls[3:]] == ["local:double", "everything:echo"]
    assert [t.backend_kind for t in result.tool_calls[3:]] == ["local", "mcp"]


async def test_uncaught_mcp_tool_error_names_tool_and_message(executor: Executor) -> None:
    with pytest.raises(CodeExecutionError) as ei:
        code = "x = 1\nrun_tool('time:convert_time', source_timezone='UTC')"
        await executor.execute(ExecuteParams(code=code, options=ExecuteOptions(type_check="off")))
    err = ei.value
    assert err.exc_type == "ToolError" and err.tool_id == "time:convert_time" and err.line == 2
    assert "target_timezone" in err.message and "time" in err.message
    assert [t.error_op for t in err.tool_calls] == ["validate_input"]
