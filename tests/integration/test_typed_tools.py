"""Typed tools on real MCP servers: ``mcp-server-time`` (PyPI), ``server-memory`` and ``server-everything`` (npm).

Each namespace is a module of the sandbox's ``tools`` package; a snippet that calls a tool wrongly
is refused before anything runs (no call reaches a server), and a correct one runs unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from toolcode import Toolbox, ToolCallRecord

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
async def box(mcp_servers: dict[str, dict[str, Any]]) -> AsyncIterator[Toolbox]:
    servers = {name: mcp_servers[name] for name in ("time", "memory", "everything")}
    async with Toolbox.from_config({"mcpServers": servers}, strict=True) as b:
        yield b


# (snippet, line, words of the diagnostic): each makes a write (memory) first, then errs.
WRITE = "memory.create_entities(entities=[{'name': 'probe', 'entityType': 'test', 'observations': ['x']}])\n"
BROKEN: dict[str, tuple[str, int, str]] = {
    "unknown tool": (
        "from tools import memory, everything\n" + WRITE + "everything.echoo(message='hi')",
        3,
        "module 'tools.everything' has no attribute 'echoo'; did you mean 'echo'",
    ),
    "misspelt parameter": (
        "from tools import memory, time_\n" + WRITE + "time_.get_current_time(timezon='UTC')",
        3,
        "did you mean 'timezone'",
    ),
    "missing parameter": (
        "from tools import memory, time_\n" + WRITE + "time_.convert_time(source_timezone='UTC', time='10:00')",
        3,
        "invalid arguments for tool 'time:convert_time': $.target_timezone: required property is missing",
    ),
    "wrong type": (
        "from tools import memory, everything\n" + WRITE + "everything.get_sum(a='1', b=2)",
        3,
        'invalid arguments for tool \'everything:get-sum\': $.a: "1" is not of type "number"',
    ),
    "enum value": (
        "from tools import memory, everything\n" + WRITE + "everything.get_structured_content(location='Paris')",
        3,
        '$.location: "Paris" is not one of',
    ),
    "nested object key": (
        "from tools import memory\n" + WRITE + "memory.create_entities(entities=[{'name': 'a', 'entity_type': 'b', "
        "'observations': []}])",
        3,
        "$.entities[0].entityType: required property is missing",
    ),
    "typed result key": (
        "from tools import memory\n" + WRITE + "g = memory.read_graph()\nprintln(g['entitys'])",
        4,
        'Unknown key "entitys" for TypedDict `ReadGraphResult`',
    ),
    "literal id": (
        "from tools import memory\n" + WRITE + "run_tool('time:get_current_time', timezone='UTC', tz='x')",
        3,
        "invalid arguments for tool 'time:get_current_time': $.tz: unexpected property (not in the schema)",
    ),
}


@pytest.mark.parametrize("name", list(BROKEN))
async def test_a_wrong_call_to_a_real_server_is_refused_before_anything_runs(box: Toolbox, name: str) -> None:
    code, line, words = BROKEN[name]
    seen: list[ToolCallRecord] = []

    async def record(r: ToolCallRecord) -> None:
        seen.append(r)

    stop = box.codemode.observe_tool_calls(record)
    try:
        out = await box.codemode.execute(code)
    finally:
        stop()
    assert out.error is not None and out.error.code == "type_error", out
    found = [(d.line, d.message) for d in out.error.diagnostics or []]
    assert any(ln == line and words.replace("'", '"') in msg.replace("'", '"') for ln, msg in found), found
    assert seen == [] and out.calls.count == 0
    graph = await box.codemode.run_tool("memory:read_graph", {})
    assert all(e["name"] != "probe" for e in graph.value["entities"]), "the write before the mistake happened"


VALID: dict[str, str] = {
    "module style": (
        "from tools import memory, time_, everything\n"
        "memory.create_entities(entities=[{'name': 'ada', 'entityType': 'person', 'observations': ['math']}])\n"
        "memory.add_observations(observations=[{'entityName': 'ada', 'contents': ['engines']}])\n"
        "node = memory.open_nodes(names=['ada'])['entities'][0]\n"
        "now = time_.get_current_time(timezone='UTC')\n"
        "s = everything.get_structured_content(location='Chicago')\n"
        "__out = [node['observations'], now['timezone'], sorted(s)]"
    ),
    "literal ids": (
        "run_tool('memory:create_entities', {'entities': [{'name': 'ada', 'entityType': 'person', "
        "'observations': ['math']}]})\n"
        "run_tool('memory:add_observations', observations=[{'entityName': 'ada', 'contents': ['engines']}])\n"
        "node = run_tool('memory:open_nodes', names=['ada'])['entities'][0]\n"
        "now = run_tool('time:get_current_time', timezone='UTC')\n"
        "s = run_tool('everything:get-structured-content', location='Chicago')\n"
        "__out = [node['observations'], now['timezone'], sorted(s)]"
    ),
    "gathered": (
        "import asyncio\nfrom tools import time_, everything\n"
        "a, b, c = await asyncio.gather(time_.get_current_time_async(timezone='UTC'), "
        "everything.get_sum_async(a=1, b=2.5), everything.echo_async(message='hi'))\n"
        "__out = [a['timezone'], b, c]"
    ),
}


@pytest.mark.parametrize("name", list(VALID))
async def test_correct_snippets_run_on_real_servers_in_both_styles(box: Toolbox, name: str) -> None:
    out = await box.codemode.execute(VALID[name])
    assert out.ok, out.error
    if name == "gathered":
        assert out.value[0] == "UTC" and out.calls.count == 3
    else:
        assert out.value == [["math", "engines"], "UTC", ["conditions", "humidity", "temperature"]]


async def test_a_server_named_like_a_sandbox_module_is_tools_time(box: Toolbox) -> None:
    doc = await box.codemode.describe_tool("time:get_current_time")
    assert "from tools import time\n" in doc.text
    out = await box.codemode.execute(
        "import time as t\nfrom tools import time\n[type(t.time()).__name__, "
        "time.get_current_time(timezone='UTC')['timezone']]"
    )
    assert out.value == ["float", "UTC"], out.error
    # Its former name still answers.
    out = await box.codemode.execute("from tools import time_\ntime_.get_current_time(timezone='UTC')['timezone']")
    assert out.value == "UTC", out.error


@pytest.mark.parametrize(
    "code",
    [
        "import tools.time\n__out = tools.time.get_current_time(timezone='UTC')['timezone']",
        "import tools.time as t, json\n__out = json.loads(json.dumps(t.get_current_time(timezone='UTC')))['timezone']",
        "from tools.time import get_current_time\n__out = get_current_time(timezone='UTC')['timezone']",
        "def f():\n    from tools.time import (\n        convert_time,\n        get_current_time as now,\n    )\n"
        "    return now(timezone='UTC')['timezone']\n__out = f()",
    ],
    ids=["import", "import as", "from import", "from import in a function"],
)
async def test_every_import_form_of_a_namespace_named_like_a_sandbox_module_runs(box: Toolbox, code: str) -> None:
    # The sandbox keeps the module name 'time' for itself; the engine gives the namespace under it all the same.
    out = await box.codemode.execute(code)
    assert out.ok and out.value == "UTC", out.error


async def test_an_error_after_a_long_import_of_such_a_namespace_names_its_own_line(box: Toolbox) -> None:
    code = "from tools.time import (\n    get_current_time,\n    convert_time,\n)\nx = 1\nraise ValueError('here')\n"
    out = await box.codemode.execute(code)
    assert out.error is not None and out.error.line == 6 and "here" in out.error.message, out.error


@pytest.mark.parametrize("tail", ["x = " + "-" * 100_000 + "1", "x = " + "1+" * 200_000 + "1"])
async def test_a_hostile_snippet_importing_such_a_namespace_fails_as_any_other_would(box: Toolbox, tail: str) -> None:
    # The import forms are written anew on the host before the run: a snippet too deep for the host's
    # parser must fail as the same snippet importing another namespace does, not as an engine failure.
    options = {"type_check": "off"}
    out = await box.codemode.execute("import tools.time\n" + tail, options=options)
    reference = await box.codemode.execute("import tools.memory\n" + tail, options=options)
    assert out.error is not None and reference.error is not None
    assert out.error.code == reference.error.code != "engine_error", (out.error, reference.error)
