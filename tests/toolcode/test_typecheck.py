"""Typed tools: namespaces as modules of the ``tools`` package, and the check before the run.

On the demo catalog (local help-desk tools and the real ``mcp-server-time``) plus local tools in
namespaces named like a standard-library module and like no identifier at all.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, ClassVar, Final, Literal

import anyio
import anyio.lowlevel
import pytest
from typing_extensions import TypedDict

from toolcode import ExecuteOptions, ExecuteOutcome, Settings, Toolbox, ToolCallRecord
from toolcode._module_views import ToolModules
from toolcode._modules import module_names
from toolcode._typecheck import TypeChecker
from toolcode._view import CatalogView
from toolcode.demo import demo_backends
from toolindex import InMemoryIndex
from toolrun import LocalBackend, ProviderBackend

pytestmark = pytest.mark.anyio


class _Entry(TypedDict):
    key: str


class _Entries(TypedDict):
    entries: list[_Entry]


# A key named like a type the keys beside it have (the class syntax would shadow ``str`` for pyright too).
_Labelled = TypedDict("_Labelled", {"label": str, "str": str, "rank": Literal[1, 2, 3]})  # noqa: UP013


class _Person(TypedDict):
    kind: Literal["person"]
    name: str


class _Company(TypedDict):
    kind: Literal["company"]
    name: str
    vat: str


class _Match(TypedDict):
    match: _Person | _Company


def _extra() -> LocalBackend:
    local = LocalBackend()

    @local.tool(namespace="kv", inline=True)
    def lookup() -> _Match:
        """A person or a company."""
        return {"match": {"kind": "person", "name": "Ada"}}

    # A tool named like a builtin: its module's function ``list`` is beside every ``list[...]`` of the stub.
    @local.tool(namespace="kv", name="list", inline=True)
    def kv_list() -> _Entries:
        """Entries of a key-value store."""
        return {"entries": [{"key": "a"}]}

    @local.tool(namespace="kv", inline=True)
    def labelled() -> _Labelled:
        """A label."""
        return {"label": "l", "str": "s", "rank": 2}

    @local.tool(namespace="json", inline=True)
    def pretty(text: str, indent: int = 2) -> str:
        """Pretend to pretty-print a JSON text."""
        return " " * indent + text

    @local.tool(namespace="my-server", inline=True)
    def greet(name: str) -> str:
        """Greet someone."""
        return f"hello {name}"

    @local.tool(namespace="my_server", inline=True)
    def wave(name: str) -> str:
        """Wave at someone."""
        return f"waves at {name}"

    return local


@pytest.fixture(params=["monty", "inprocess"], scope="module")
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def box(engine: str) -> AsyncIterator[Toolbox]:
    async with Toolbox([*demo_backends(), _extra()], engine=engine) as b:
        yield b


class _Calls:
    """Every tool call any run makes, through the core's observer (what "nothing ran" is checked on)."""

    def __init__(self, box: Toolbox) -> None:
        self.records: list[ToolCallRecord] = []
        self._stop = box.codemode.observe_tool_calls(self._seen)

    async def _seen(self, record: ToolCallRecord) -> None:
        self.records.append(record)

    def close(self) -> None:
        self._stop()


# (snippet, line, column, words of the message, code): each snippet first makes a write, then errs.
# Both call styles, every kind of mistake the check must catch; the code is the one the run fails with.
BROKEN: dict[str, tuple[str, int, int, str, str]] = {
    "unknown tool (module)": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "helpdesk.list_ticket(office='Paris')",
        3,
        1,
        "module 'tools.helpdesk' has no attribute 'list_ticket'; did you mean 'list_tickets'",
        "unknown_tool",
    ),
    "unknown tool (imported by name)": (
        "from tools.helpdesk import assign_ticket, list_ticket\nassign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "list_ticket(office='Paris')",
        1,
        1,
        "module 'tools.helpdesk' has no attribute 'list_ticket'",
        "unknown_tool",
    ),
    "unknown tool (literal id)": (
        "run_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "run_tool('helpdesk:list_tickts', office='Paris')",
        2,
        10,
        "unknown tool 'helpdesk:list_tickts'; nearest tools: helpdesk:list_tickets",
        "unknown_tool",
    ),
    "misspelt parameter (module)": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "x = helpdesk.list_tickets(ofice='Paris')",
        3,
        27,
        "invalid arguments for tool 'helpdesk:list_tickets': $.ofice: unexpected property (not in the schema); "
        "did you mean 'office'?",
        "invalid_arguments",
    ),
    "misspelt parameter (literal id)": (
        "run_tool('helpdesk:assign_ticket', {'ticket_id': 'PAR-1', 'engineer': 'Ana'})\n"
        "run_tool('helpdesk:list_tickets', {'ofice': 'Paris'})",
        2,
        36,
        "invalid arguments for tool 'helpdesk:list_tickets': $.ofice: unexpected property (not in the schema); "
        "did you mean 'office'?",
        "invalid_arguments",
    ),
    "missing parameter (module)": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\nhelpdesk.on_call()",
        3,
        1,
        "invalid arguments for tool 'helpdesk:on_call': $.office: required property is missing",
        "invalid_arguments",
    ),
    "missing parameter (literal id)": (
        "run_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\nrun_tool('helpdesk:on_call')",
        2,
        1,
        "invalid arguments for tool 'helpdesk:on_call': $.office: required property is missing",
        "invalid_arguments",
    ),
    "wrong type (module)": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "helpdesk.on_call(office=42)",
        3,
        25,
        "invalid arguments for tool 'helpdesk:on_call': $.office: 42 is not of type \"string\"",
        "invalid_arguments",
    ),
    "wrong type (literal id)": (
        "run_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "run_tool('helpdesk:on_call', office=42)",
        2,
        37,
        "invalid arguments for tool 'helpdesk:on_call': $.office: 42 is not of type \"string\"",
        "invalid_arguments",
    ),
    "wrong literal bound to a name (module)": (
        "from tools import helpdesk\nwhere = ['Paris']\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "helpdesk.on_call(office=where)",
        4,
        25,
        'invalid arguments for tool \'helpdesk:on_call\': $.office: ["Paris"] is not of type "string"',
        "invalid_arguments",
    ),
    "wrong enum value (module)": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "helpdesk.list_tickets(office='Paris', status='merged')",
        3,
        46,
        'invalid arguments for tool \'helpdesk:list_tickets\': $.status: "merged" is not one of "open" or "closed"',
        "invalid_arguments",
    ),
    "wrong enum value (literal id)": (
        "run_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "run_tool('helpdesk:list_tickets', office='Paris', status='merged')",
        2,
        58,
        '"merged" is not one of "open" or "closed"',
        "invalid_arguments",
    ),
    "wrong enum value through an annotated constant": (
        "STATUS: str = 'merged'\nrun_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "run_tool('helpdesk:list_tickets', office='Paris', status=STATUS)",
        3,
        58,
        '"merged" is not one of "open" or "closed"',
        "invalid_arguments",
    ),
    "positional argument (module)": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "helpdesk.on_call('Paris')",
        3,
        18,
        "tools.helpdesk.on_call() takes keyword arguments only (got 1 positional); name each argument as in its "
        "signature",
        "invalid_arguments",
    ),
    "unknown key of a typed result": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "for t in helpdesk.list_tickets(office='Paris'):\n    println(t['titel'])",
        4,
        15,
        'Unknown key "titel" for TypedDict `Ticket`',
        "runtime_error",
    ),
    "method the value does not have": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "offices = helpdesk.list_offices()\nnames = [o['city'].uper() for o in offices]",
        4,
        10,
        "has no attribute `uper`",
        "runtime_error",
    ),
    "unknown key of a typed result (literal id)": (
        "run_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "for t in run_tool('helpdesk:list_tickets', {'office': 'Paris'}):\n    println(t['titel'])",
        3,
        15,
        'Unknown key "titel" for TypedDict `Ticket`',
        "runtime_error",
    ),
    "a str used as a date (literal id)": (
        "run_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "now = run_tool('time:get_current_time', {'timezone': 'UTC'})\nnow['datetime'].year",
        3,
        1,
        "Object of type `str` has no attribute `year`",
        "runtime_error",
    ),
    "unknown nested key (literal id)": (
        "run_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "r = run_tool('time:convert_time', source_timezone='UTC', time='08:00', target_timezone='Asia/Tokyo')\n"
        "r['target']['date']",
        3,
        13,
        'Unknown key "date" for TypedDict',
        "runtime_error",
    ),
    "unknown key of an awaited result (literal id)": (
        "import asyncio\nrun_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "a, b = await asyncio.gather(run_tool_async('helpdesk:on_call', {'office': 'Paris'}), "
        "run_tool_async('time:get_current_time', timezone='UTC'))\nb['zone']",
        4,
        3,
        'Unknown key "zone" for TypedDict',
        "runtime_error",
    ),
    "unknown key of a function imported from a module named like the stdlib": (
        "from tools.time import get_current_time as now\n"
        "run_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\nnow(timezone='UTC')['zone']",
        3,
        21,
        'Unknown key "zone" for TypedDict `GetCurrentTimeResult`',
        "runtime_error",
    ),
    "unknown key through a module named like the stdlib, imported by its path": (
        "import tools.time as t\nrun_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "t.get_current_time(timezone='UTC')['zone']",
        3,
        36,
        'Unknown key "zone" for TypedDict `GetCurrentTimeResult`',
        "runtime_error",
    ),
    "a result's number given where a string goes (module)": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "t = helpdesk.list_tickets(office='Paris')[0]\nhelpdesk.assign_ticket(ticket_id=t['age_days'], engineer='Ana')",
        4,
        24,
        "`ticket_id` is given a value of type `int`; the tool takes `str` there",
        "invalid_arguments",
    ),
    "a result's number given where a string goes (literal id)": (
        "run_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "t = run_tool('helpdesk:list_tickets', office='Paris')[0]\n"
        "run_tool('helpdesk:assign_ticket', ticket_id=t['age_days'], engineer='Ana')",
        3,
        36,
        "`ticket_id` is given a value of type `int`; the tool takes `str` there",
        "invalid_arguments",
    ),
    "a result's number given where a string goes (literal id, arguments object)": (
        "run_tool('helpdesk:assign_ticket', {'ticket_id': 'PAR-1', 'engineer': 'Ana'})\n"
        "t = run_tool('helpdesk:list_tickets', {'office': 'Paris'})[0]\n"
        "run_tool('helpdesk:assign_ticket', {'ticket_id': t['age_days'], 'engineer': 'Ana'})",
        3,
        37,
        "`ticket_id` is given a value of type `int`; the tool takes `str` there",
        "invalid_arguments",
    ),
    "a result's count given where a string goes (arguments object over lines)": (
        "run_tool('helpdesk:assign_ticket', {'ticket_id': 'PAR-1', 'engineer': 'Ana'})\n"
        "staff = run_tool('helpdesk:list_offices', {})[0]['staff']\n"
        "run_tool(\n    'helpdesk:on_call',\n    {\n        'office': staff,  # the office\n    },\n)",
        6,
        9,
        "`office` is given a value of type `int`; the tool takes `str` there",
        "invalid_arguments",
    ),
    "a result's number given where a string goes (args= and tool_id= keywords)": (
        "run_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "t = run_tool('helpdesk:list_tickets', office='Paris')[0]\n"
        "run_tool(tool_id='helpdesk:assign_ticket', args={'engineer': 'Ana', 'ticket_id': t['age_days']})",
        3,
        69,
        "invalid arguments for `run_tool('helpdesk:assign_ticket')`: `ticket_id` is given a value of type `int`",
        "invalid_arguments",
    ),
    "a result's number given where a string goes (awaitable literal id)": (
        "run_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "t = (await run_tool_async('helpdesk:list_tickets', {'office': 'Paris'}))[0]\n"
        "await run_tool_async('helpdesk:assign_ticket', ticket_id=t['age_days'], engineer='Ana')",
        3,
        48,
        "invalid arguments for `run_tool_async('helpdesk:assign_ticket')`: `ticket_id` is given a value of type `int`",
        "invalid_arguments",
    ),
    "a result's number given where a string goes (awaitable module function)": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "t = helpdesk.list_tickets(office='Paris')[0]\n"
        "await helpdesk.assign_ticket_async(ticket_id=t['age_days'], engineer='Ana')",
        4,
        36,
        "invalid arguments for `helpdesk.assign_ticket_async`: `ticket_id` is given a value of type `int`",
        "invalid_arguments",
    ),
    "unknown key of a result, the id a name bound to a literal": (
        "LIST = 'helpdesk:list_offices'\nrun_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "run_tool(LIST)[0]['ciity']",
        3,
        19,
        'Unknown key "ciity" for TypedDict `Office`',
        "runtime_error",
    ),
    "misspelt argument, the id a name bound to a literal": (
        "ON_CALL: str = 'helpdesk:on_call'\nrun_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "run_tools([(ON_CALL, {'ofice': 'Paris'})])",
        3,
        23,
        "$.ofice: unexpected property (not in the schema); did you mean 'office'?",
        "invalid_arguments",
    ),
    "enum value given by a dict's update line": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "params = dict(office='Paris')\nparams.update(status='archived')\nhelpdesk.list_tickets(**params)",
        4,
        22,
        '$.status: "archived" is not one of',
        "invalid_arguments",
    ),
    "a number the text computes given where a string goes": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "floor = 2\nhelpdesk.on_call(office=floor * 3)",
        4,
        18,
        "`office` is given a value of type `int`; the tool takes `str` there",
        "invalid_arguments",
    ),
    "a result's count given where a string goes (module)": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "staff = helpdesk.list_offices()[0]['staff']\nhelpdesk.on_call(office=staff)",
        4,
        18,
        "`office` is given a value of type `int`; the tool takes `str` there",
        "invalid_arguments",
    ),
    "unknown key of an unpacked run_tools result": (
        "run_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "people, now = run_tools([('helpdesk:on_call', {'office': 'Paris'}), "
        "{'tool_id': 'time:get_current_time', 'args': {'timezone': 'UTC'}}])\nnow['zone']",
        3,
        5,
        'Unknown key "zone" for TypedDict `GetCurrentTimeResult`',
        "runtime_error",
    ),
    "list result indexed by a name (literal id)": (
        "run_tool('helpdesk:assign_ticket', ticket_id='PAR-1', engineer='Ana')\n"
        "offices = run_tool('helpdesk:list_offices')\noffices['Paris']['staff']",
        3,
        1,
        'cannot be called with key of type `Literal["Paris"]` on object of type `list[Office]`',
        "runtime_error",
    ),
    "unknown key, in a module with a tool named like a builtin": (
        "from tools import helpdesk, kv\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "[e['val'] for e in kv.list()['entries']]",
        3,
        4,
        'Unknown key "val" for TypedDict',
        "runtime_error",
    ),
    "method a field lacks, beside a key named like its type": (
        "from tools import helpdesk, kv\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "kv.labelled()['label'].uppercase()",
        3,
        1,
        "has no attribute `uppercase`",
        "runtime_error",
    ),
    "attribute an enum field's values lack": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "[t['priority'].value for t in helpdesk.list_tickets(office='Paris')]",
        3,
        2,
        'Object of type `Literal["low", "normal", "urgent"]` has no attribute `value`',
        "runtime_error",
    ),
    "enum field of strings added to a number": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "ts = helpdesk.list_tickets(office='Paris')\nts[0]['priority'] + 1",
        4,
        1,
        "Operator `+` is not supported",
        "runtime_error",
    ),
    "attribute an enum field of numbers lacks": (
        "from tools import helpdesk, kv\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "kv.labelled()['rank'].zfill(2)",
        3,
        1,
        "has no attribute `zfill`",
        "runtime_error",
    ),
    "key read from a number field": (
        "from tools import helpdesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "helpdesk.list_offices()[0]['staff']['count']",
        3,
        1,
        "Cannot subscript object of type `int`",
        "runtime_error",
    ),
    "list field looked up by a name": (
        "from tools import helpdesk, kv\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "r = kv.list()\nr['entries']['a']",
        4,
        1,
        "on object of type `list[",
        "runtime_error",
    ),
    "key no member of a union has": (
        "from tools import helpdesk, kv\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "m = kv.lookup()['match']\nm['title']",
        4,
        3,
        'Unknown key "title" for TypedDict `',
        "runtime_error",
    ),
    "unknown module": (
        "from tools import helpdesk, heldesk\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')",
        1,
        1,
        "no namespace module `tools.heldesk`; did you mean 'helpdesk'",
        "unknown_tool",
    ),
    "typed result of a real MCP server": (
        "from tools import helpdesk, time_\nhelpdesk.assign_ticket(ticket_id='PAR-1', engineer='Ana')\n"
        "now = time_.get_current_time(timezone='Europe/Paris')\nnow['datetme']",
        4,
        5,
        'Unknown key "datetme" for TypedDict',
        "runtime_error",
    ),
}


@pytest.mark.parametrize("name", list(BROKEN))
async def test_each_kind_of_mistake_is_caught_before_anything_runs(box: Toolbox, name: str) -> None:
    code, line, column, words, error_code = BROKEN[name]
    calls = _Calls(box)
    try:
        out = await box.codemode.execute(code, options={"trace": "full"})
    finally:
        calls.close()
    assert not out.ok and out.error is not None and out.error.code == "type_error", out
    diagnostics = out.error.diagnostics or []
    assert any((d.line, d.column, d.code) == (line, column, error_code) and words in d.message for d in diagnostics), (
        f"{name}: {[(d.line, d.column, d.code, d.message) for d in diagnostics]}"
    )
    assert words in out.error.message  # the rendered text, for a model that reads only the message
    assert calls.records == [] and out.calls.count == 0 and out.trace == [], "a tool ran before the check"


@pytest.mark.parametrize("name", list(BROKEN))
async def test_with_the_check_off_the_run_fails_with_the_same_code(box: Toolbox, name: str) -> None:
    code, _, _, words, error_code = BROKEN[name]
    out = await box.codemode.execute(code, options={"type_check": "off", "trace": "full"})
    # It runs (the first call, a write, happens) and fails where the check said, with the check's code.
    if not name.startswith("unknown module") and name != "unknown tool (imported by name)":  # those fail at import
        assert out.trace and out.trace[0].tool_id == "helpdesk:assign_ticket", out
    assert out.error is not None and out.error.code == error_code, out.error
    if words.startswith("invalid arguments for tool"):
        # The same words: the check validated the call as the run does.
        tool, problem = words.split("; did you mean")[0].split("': ", 1)
        assert f"ToolError: {tool}': " in out.error.message and problem in out.error.message, out.error.message


# Correct snippets, both call styles: the check must let every one run, unchanged.
VALID: dict[str, tuple[str, Any]] = {
    "module call": (
        "from tools import helpdesk\n[o['city'] for o in helpdesk.list_offices()][:2]",
        ["Paris", "New York"],
    ),
    "import as": ("import tools.helpdesk as hd\nlen(hd.on_call(office='Paris'))", 2),
    # An arguments object of literal keys is typed as the module function's keywords: only a type
    # no member of the parameter's takes is refused.
    "arguments object of a result's values": (
        "t = run_tool('helpdesk:list_tickets', {'office': 'Paris'})[0]\n"
        "o = run_tool('helpdesk:list_offices', {})[0]\n"
        "len(run_tool('helpdesk:on_call', {'office': str(t['age_days'])})) + len(run_tool(\n"
        "    'helpdesk:on_call', {  # where\n        'office': o['city'],\n    }  # done\n))",
        None,
    ),
    "ids bound to names, read after their line": (
        "LIST = 'helpdesk:list_offices'\nON_CALL: str = 'helpdesk:on_call'\n"
        "city = run_tool(LIST)[0]['city']\n"
        "len(run_tool(ON_CALL, {'office': city})) + len(run_tool(ON_CALL, office=city))",
        4,
    ),
    "a dict made by dict() and given keys by update lines": (
        "from tools import helpdesk\nparams = dict(office='Paris')\nparams.update({'status': 'open'})\n"
        "params.update(status='closed', **{'office': 'Paris'})\nlen(helpdesk.list_tickets(**params)) >= 0",
        True,
    ),
    "strings the text builds given where strings go": (
        "from tools import helpdesk\ncity = 'Par'\nn = len(helpdesk.on_call(office=f'{city}is'))\n"
        "n + len(helpdesk.on_call(office=city + 'is'))\n"
        "n + len(helpdesk.list_tickets(office='Paris', status=f'op{\"en\"}'))",
        None,
    ),
    "awaitable calls given a result's values, awaited later": (
        "t = (await run_tool_async('helpdesk:list_tickets', office='Paris'))[0]\n"
        "c = run_tool_async('helpdesk:on_call', {'office': str(t['age_days'])})\n"
        "d = run_tool_async(tool_id='helpdesk:on_call', args={'office': t['office']})\n"
        "len(await c) + len(await d)",
        None,
    ),
    "arguments object with a spread, a parenthesised key and value": (
        "extra = {'office': 'Paris'}\na = run_tool('helpdesk:on_call', {**extra})\n"
        "b = run_tool('helpdesk:on_call', {('office'): ('Paris')})\n"
        "c = run_tool('helpdesk:on_call', {'office': ('Paris'), })\nlen(a) + len(b) + len(c)",
        6,
    ),
    # A tools import's name bound again: to ty an import declared its type for good.
    "module name rebound to its result": (
        "from tools import helpdesk\nhelpdesk = helpdesk.list_offices()\nhelpdesk[0]['city']",
        "Paris",
    ),
    "module name rebound by a walrus": (
        "from tools import time, helpdesk\n(time := 5) + len(helpdesk.on_call(office='Paris'))",
        7,
    ),
    "aliased module rebound in a loop": (
        "import tools.helpdesk as hd\nn = len(hd.list_offices())\nfor hd in range(2):\n    n += hd\nn",
        None,
    ),
    "dotted access": ("import tools.helpdesk\ntools.helpdesk.list_tickets(office='Tokyo')[0]['office']", "Tokyo"),
    "from module import function": (
        "from tools.helpdesk import list_tickets\nlen(list_tickets(office='Nairobi', status='open'))",
        9,
    ),
    "gathered awaitable forms": (
        "import asyncio\nfrom tools import helpdesk\n"
        "offices = [o['city'] for o in helpdesk.list_offices()]\n"
        "lists = await asyncio.gather(*[helpdesk.list_tickets_async(office=c) for c in offices])\n"
        "sum(len(x) for x in lists)",
        69,
    ),
    "literal id with dict": ("len(run_tool('helpdesk:list_tickets', {'office': 'Paris'}))", 13),
    "literal id with keywords": ("run_tool('helpdesk:on_call', office='Paris')[0]['office']", "Paris"),
    "computed id": ("ns = 'helpdesk'\nlen(run_tool(ns + ':on_call', office='Tokyo'))", 2),
    "run_tools with literals": (
        "[len(r) for r in run_tools([('helpdesk:on_call', {'office': 'Paris'}), "
        "('helpdesk:list_tickets', {'office': 'Paris', 'status': 'closed'})])]",
        [2, 2],
    ),
    "values from data": (
        "from tools import helpdesk\ncities = [o['city'] for o in helpdesk.list_offices()]\n"
        "urgent = {}\nfor c in cities:\n"
        "    urgent[c] = len([t for t in helpdesk.list_tickets(office=c) if t['priority'] == 'urgent'])\n"
        "urgent['Paris']",
        4,
    ),
    "optional field of a typed result": (
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Paris')\n"
        "[t['assignee'].upper() for t in ts if t['assignee']][:1]",
        None,
    ),
    "keywords from a dict": (
        "from tools import helpdesk\nargs = {'office': 'Paris'}\nlen(helpdesk.on_call(**args))",
        2,
    ),
    "module named like the stdlib": ("from tools import json\njson.pretty(text='{}', indent=1)", " {}"),
    "module named like the stdlib, beside it": (
        "import json\nimport tools\n"
        "[json.dumps(tools.json.pretty(text='{}', indent=1)), type(json.loads('1')).__name__]",
        ['" {}"', "int"],
    ),
    "module named like the stdlib, former name": ("from tools import json_\njson_.pretty(text='{}', indent=1)", " {}"),
    "function imported from a module named like the stdlib": (
        "from tools.time import get_current_time as now, convert_time\nimport tools.time as t\nimport tools.time\n"
        "a = now(timezone='UTC')['timezone']\n"
        "b = t.convert_time(source_timezone='UTC', time='12:00', target_timezone='UTC')['target']['timezone']\n"
        "c = tools.time.get_current_time(timezone='UTC')['timezone']\nnow = len(a)\n[a, b, c, now]",
        ["UTC", "UTC", "UTC", 3],
    ),
    "results given as arguments of the types the tools take": (
        "from tools import helpdesk\nt = helpdesk.list_tickets(office='Paris')[0]\no = helpdesk.list_offices()[0]\n"
        "a = helpdesk.on_call(office=t['office'])\nb = helpdesk.list_tickets(office=o['city'], status='closed')\n"
        "c = helpdesk.on_call(office=str(o['staff']))\n"
        "try:\n    d = helpdesk.on_call(office=o['staff'])\nexcept ToolError:\n    d = []\n"
        "[len(a) > 0, len(b) > 0, type(c) is list, d]",
        [True, True, True, []],
    ),
    "module named like the stdlib, awaitable form": (
        "import asyncio\nfrom tools import time as t\n"
        "[r['timezone'] for r in await asyncio.gather(t.get_current_time_async(timezone='UTC'))]",
        ["UTC"],
    ),
    "run_tools' list kept as a list": (
        "rs = run_tools([('helpdesk:list_offices', {}), ('time:get_current_time', {'timezone': 'UTC'})])\n"
        "rs.append(rs[1]['timezone'])\n[len(rs), rs[-1]]",
        [3, "UTC"],
    ),
    "a name holding one of two results": (
        "data = run_tool('helpdesk:list_offices')\nif input:\n"
        "    data = run_tool('time:get_current_time', timezone='UTC')\ndata['timezone'] if input else len(data)",
        6,
    ),
    "literal id, typed result used well": (
        "ts = run_tool('helpdesk:list_tickets', {'office': 'Paris'})\n"
        "by_age = sorted(ts, key=lambda t: -t['age_days'])\n"
        "now = run_tool('time:get_current_time', timezone='UTC')['datetime']\n"
        "[len(by_age), now[:2], [t['assignee'].upper() for t in ts if t['assignee'] is not None][:0]]",
        [13, "20", []],
    ),
    "namespace that is no identifier": (
        "from tools import my_server, my_server_2\n[my_server.greet(name='Ana'), my_server_2.wave(name='Bo')]",
        ["hello Ana", "waves at Bo"],
    ),
    "real MCP server": (
        "from tools import time_\ntime_.convert_time(source_timezone='UTC', time='12:00', "
        "target_timezone='Asia/Tokyo')['target']['datetime'][11:16]",
        "21:00",
    ),
    # Defensive code: a path taken only when the result is not the declared dict is the run's business.
    "a result read by its type": (
        "now = run_tool('time:get_current_time', timezone='UTC')\n"
        "[now['timezone'] if type(now) is dict else now.strip(), now.strip() if type(now) != dict else 'ok']",
        ["UTC", "ok"],
    ),
    "a result misread, handled": (
        "now = run_tool('time:get_current_time', timezone='UTC')\ntry:\n    tz = now['timezone']\n"
        "except (TypeError, KeyError):\n    tz = now.strip() or now['tz']\ntz",
        "UTC",
    ),
    "a tool named like a builtin": ("from tools import kv\n[e['key'] for e in kv.list()['entries']]", ["a"]),
    "a key named like a type": (
        "from tools import kv\nr = kv.labelled()\n[r['label'].upper(), r['str'].upper(), r['rank'] + 1]",
        ["L", "S", 3],
    ),
    "enum fields used as their values' type": (
        "from tools import helpdesk, kv\nt = helpdesk.list_tickets(office='Paris')[0]\nr = kv.labelled()['rank']\n"
        "[(t['priority'].upper() + '!')[-1], t['priority'] < 'zzz', r * 2, r // 2, r + 0.5, f'{r:03}']",
        ["!", True, 4, 1, 2.5, "002"],
    ),
    "fields read by literal keys and indexes": (
        "from tools import helpdesk\noffices = helpdesk.list_offices()\n"
        "o = offices[-1]\no['staff'] = {'count': o['staff']}\n[offices[0]['city'][0], o['staff']['count']]",
        ["P", 12],
    ),
    "keys of a union's members": (
        "from tools import kv\nm = kv.lookup()['match']\n"
        "[m['name'], m['kind'], m['vat'] if m['kind'] == 'company' else m.get('vat')]",
        ["Ada", "person", None],
    ),
    "tool error caught": (
        "from tools import helpdesk\ntry:\n    helpdesk.list_tickets(office='Atlantis')\n"
        "except ToolError as e:\n    r = tool_error_info(e)['code']\nr",
        "tool_error",
    ),
}


@pytest.mark.parametrize("name", list(VALID))
async def test_valid_snippets_run_unchanged(box: Toolbox, name: str) -> None:
    code, expected = VALID[name]
    checked = await box.codemode.execute(code)
    unchecked = await box.codemode.execute(code, options={"type_check": "off"})
    assert checked.ok, (name, checked.error)
    assert checked.value == unchecked.value
    if expected is not None:
        assert checked.value == expected, checked.value


async def test_the_check_is_on_by_default_and_off_in_the_config() -> None:
    code = "from tools import helpdesk\nhelpdesk.on_call(ofice='Paris')"
    async with Toolbox(demo_backends()[:1], engine="inprocess") as strict:
        out = await strict.codemode.execute(code)
        assert out.error is not None and out.error.code == "type_error"
    settings = Settings(limits=ExecuteOptions(type_check="off"))
    async with Toolbox(demo_backends()[:1], engine="inprocess", settings=settings) as loose:
        out = await loose.codemode.execute(code)
        assert out.error is not None and out.error.code == "invalid_arguments", out.error
        out = await loose.codemode.execute(code, options={"type_check": "strict"})
        assert out.error is not None and out.error.code == "type_error"


def test_module_names_follow_the_documented_rule() -> None:
    names = module_names(["time", "json", "my-server", "my_server", "class", "github", "2fa", "_x", "a.b"])
    assert names == {
        "time": "time",
        "json": "json",
        "my-server": "my_server",
        "my_server": "my_server_2",
        "class": "class_",
        "github": "github",
        "2fa": "ns_2fa",
        "_x": "ns_x",
        "a.b": "a_b",
    }


async def test_describe_tool_shows_the_stub_the_checker_reads(box: Toolbox) -> None:
    modules = box.services.modules.seen_by(CatalogView(box.index))
    for tool_id in ("helpdesk:list_tickets", "time:convert_time"):
        tool = box.index.get(tool_id)
        stub = modules.tool_stub(tool)
        signature = modules.signature(tool)
        assert stub is not None and signature is not None
        doc = await box.codemode.describe_tool(tool_id, "schema")
        assert doc.text == f"# {tool_id}\n{stub}"
        module = modules.module(tool.namespace)
        assert module is not None
        # The import line, the classes and the function the checker loads (the awaitable form is
        # named once, in execute_code's description, not in each tool's docs).
        assert stub == f"{module.import_line}\n\n{signature}"
        assert signature in module.stub
    hits = await box.codemode.search_tools("tickets of an office", limit=1, detail="schema")
    assert hits.hits[0].signature is not None and hits.hits[0].signature in (modules.module("helpdesk") or "").stub  # type: ignore[union-attr]


async def test_describe_module_returns_a_whole_namespace_within_a_budget(box: Toolbox) -> None:
    doc = await box.codemode.describe_tool("time", "module")
    assert doc.text.startswith("# from tools import time  (namespace 'time')\n")
    assert "def convert_time(" in doc.text and "def get_current_time(" in doc.text
    # By module name, and by a tool of the namespace, too.
    assert (await box.codemode.describe_tool("time_", "module")).text == doc.text  # its former name
    assert (await box.codemode.describe_tool("time:convert_time", "module")).text == doc.text
    modules = box.services.modules.seen_by(CatalogView(box.index))
    whole = modules.module_text("helpdesk", 100_000)
    assert whole is not None and "more functions, not shown" not in whole
    small = modules.module_text("helpdesk", len(whole) // 2)
    assert small is not None and len(small) <= len(whole) // 2
    assert "more functions, not shown" in small and "helpdesk:" in small


async def test_a_namespace_outside_the_view_is_not_a_module(box: Toolbox) -> None:
    out = await box.codemode.execute(
        "from tools import helpdesk\nhelpdesk.list_offices()", options={"allowed_namespaces": ["time"]}
    )
    assert out.error is not None and out.error.code == "type_error"
    assert "no namespace module `tools.helpdesk`" in out.error.message
    out = await box.codemode.execute(
        "from tools import helpdesk\nhelpdesk.list_offices()",
        options={"allowed_namespaces": ["time"], "type_check": "off"},
    )
    assert out.error is not None and out.error.code == "unknown_tool" and "helpdesk" in out.error.message


async def _one_int_tool() -> InMemoryIndex:
    """A catalog of one tool, ``x:f(a: int) -> int``."""
    index = InMemoryIndex()
    local = LocalBackend()

    @local.tool(namespace="x")
    def f(a: int) -> int:
        return a

    await local.attach(index)
    return index


_REFUSED: Final = re.compile(r'"(\w+)" is not of type')


async def _refused_for_x_f(code: str) -> tuple[set[str], list[str]]:
    """The strings ``from tools import x`` then ``code`` is refused for giving ``x.f``, and every message found."""
    index = await _one_int_tool()
    checker = TypeChecker(ToolModules(index))
    try:
        found = await checker.check("from tools import x\n" + code, CatalogView(index, None))
    finally:
        await checker.aclose()
    messages = [d.message for d in found]
    return {v for m in messages for v in _REFUSED.findall(m)}, messages


async def test_a_checker_that_cannot_answer_lets_the_run_go_on() -> None:
    index = await _one_int_tool()
    view = CatalogView(index, None)
    answering = TypeChecker(ToolModules(index))
    try:
        [misuse] = await answering.check("from tools import x\nx.f(a=1).upper()", view)
    finally:
        await answering.aclose()
    assert misuse.code == "runtime_error" and "has no attribute `upper`" in misuse.message
    checker = TypeChecker(ToolModules(index), timeout=1e-6)
    try:
        # What ty would find (an int has no .upper): fail open, the run is not refused for the
        # checker's own failure.
        assert await checker.check("from tools import x\nx.f(a=1).upper()", view) == []
        # The arguments are checked without a worker: that part still answers.
        [found] = await checker.check("from tools import x\nx.f(a='wrong')", view)
    finally:
        await checker.aclose()
    assert found.code == "invalid_arguments" and '"wrong" is not of type "integer"' in found.message


async def test_a_problem_the_snippet_handles_is_not_refused(box: Toolbox) -> None:
    # Trying a tool and falling back to another works whatever the first call does: not refused.
    fallback = (
        "try:\n    r = run_tool('helpdesk:list_tickets_v2', {'office': 'Paris'})\nexcept ToolError:\n"
        "    r = run_tool('helpdesk:list_tickets', {'office': 'Paris'})\nlen(r)"
    )
    out = await box.codemode.execute(fallback)
    assert out.ok and out.value == 13, out.error
    # A handler for another exception does not catch it: refused, with the code the run fails with.
    out = await box.codemode.execute(fallback.replace("except ToolError", "except KeyError"))
    assert out.error is not None and out.error.code == "type_error"
    assert [d.code for d in out.error.diagnostics or []] == ["unknown_tool"]
    # A handler that catches no misread of the result: what it does with the result is still refused.
    misread = "now = run_tool('time:get_current_time', timezone='UTC')\ntry:\n    tz = now['timezone']\n"
    out = await box.codemode.execute(misread + "except ValueError:\n    tz = now.strip()\ntz")
    assert out.error is not None and out.error.code == "type_error" and "strip" in out.error.message


async def test_what_describe_tool_shows_has_no_internal_lines(box: Toolbox) -> None:
    texts = [(await box.codemode.describe_tool(t, "schema")).text for t in ("helpdesk:on_call", "time:convert_time")]
    texts += [(await box.codemode.describe_tool(ns, "module")).text for ns in ("helpdesk", "time")]
    for text in texts:
        assert "_awaitable" not in text and "ParamSpec" not in text and "TypeVar" not in text, text
    # The checker still knows the awaitable forms (the module's stub binds them).
    module = box.services.modules.seen_by(CatalogView(box.index)).module("helpdesk")
    assert module is not None and "on_call_async = _awaitable(on_call)" in module.stub


async def test_a_long_snippet_is_checked_apart_and_a_very_long_one_runs_unchecked() -> None:
    from toolcode._offload import LARGE_CHARS
    from toolcode._typecheck._ty import MAX_CHARS

    index = await _one_int_tool()
    view = CatalogView(index, None)
    checker = TypeChecker(ToolModules(index))

    def snippet(chars: int) -> str:
        filler = "".join(f"v{i} = {i}\n" for i in range(chars // 8))
        return f"from tools import x\n{filler}x.f(a='wrong')\nx.f(a=1).upper()\n"

    try:
        long = snippet(LARGE_CHARS * 2)
        assert LARGE_CHARS < len(long) < MAX_CHARS
        # Checked in a worker thread: the same findings as in place.
        found = await checker.check(long, view)
        assert [d.code for d in found] == ["invalid_arguments", "runtime_error"], found
        very_long = snippet(MAX_CHARS)
        assert len(very_long) > MAX_CHARS
        assert await checker.check(very_long, view) == []  # its calls are checked as they are made
    finally:
        await checker.aclose()


async def test_ty_is_asked_only_where_it_could_find_something_and_once_per_snippet() -> None:
    index = await _one_int_tool()
    view = CatalogView(index, None)
    checker = TypeChecker(ToolModules(index))

    async def ty_checks(code: str) -> tuple[int, list[str]]:
        found = await checker.check(code, view)
        warm = checker._ty._small.warm  # pyright: ignore[reportPrivateUsage]
        return (warm.checks if warm is not None else 0), [d.message for d in found]

    try:
        misuse = "from tools import x\nr = x.f(a=1)\nr.upper()"
        n, found = await ty_checks(misuse)
        assert n == 1 and any("has no attribute `upper`" in m for m in found)
        # The same snippet again: the same answer, without asking ty.
        assert await ty_checks(misuse) == (1, found)
        # A snippet that only calls and hands the result on: nothing ty could find, ty not asked;
        # its arguments are checked all the same.
        assert await ty_checks("from tools import x\nr = x.f(a=2)\n__out = r") == (1, [])
        n, found = await ty_checks("from tools import x\nr = x.f(a='2')\n__out = r")
        assert n == 1 and found and '"2" is not of type "integer"' in found[0]
        # Every use of a result that can fail still goes to ty, a call of it and an unpacking included.
        for code in ("r = run_tool('x:f', {'a': 1})\nr()", "a, b = run_tool('x:f', a=1)", "[*run_tool('x:f', a=1)]"):
            before = n
            n, found = await ty_checks(code)
            assert n == before + 1 and found, (code, found)
    finally:
        await checker.aclose()


async def test_a_fixed_length_array_is_used_as_the_list_it_is() -> None:
    # An array with ``prefixItems`` and no more items (or draft-04's array form of ``items``) is a
    # list at run time: typed as one, not as a tuple (which refuses ``+`` with a list, and passes
    # ``%``-formatting and hashing, which a list fails).
    from toolindex import BackendRef, Tool

    index = InMemoryIndex()
    pair = {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "items": False}
    old = {"type": "array", "items": [{"type": "number"}, {"type": "string"}]}
    out = {
        "type": "object",
        "properties": {"at": pair, "old": old, "path": {"type": "array", "items": {"type": "number"}}},
        "required": ["at", "old", "path"],
    }
    tool = Tool.validated(name="point", namespace="geo", input_schema={"type": "object"}, output_schema=out)
    index.register(tool, BackendRef.of_provider("p", tool="point"))
    modules = ToolModules(index)
    checker = TypeChecker(modules)
    view = CatalogView(index, None)
    try:
        code = "from tools import geo\np = geo.point()['at']\np.append(3.0)\np.sort()\nlen(p)"
        assert await checker.check(code, view) == []
        for code in (
            "from tools import geo\nr = geo.point()\nr['at'] + r['path']",
            "from tools import geo\nr = geo.point()\np = r['at']\np += r['path']\np",
            "from tools import geo\nr = geo.point()\nr['at'][1:] + r['old'] + r['path']",
        ):
            assert await checker.check(code, view) == [], code
        signature = modules.seen_by(view).signature(tool) or ""
        assert "at: list[float]" in signature and "old: list[float | str]" in signature, signature
        [found] = await checker.check("from tools import geo\ngeo.point()['at'].uper()", view)
        assert "uper" in found.message  # what neither a list nor a tuple has is still refused
    finally:
        await checker.aclose()


@asynccontextmanager
async def _crm_get(output_schema: dict[str, Any]) -> AsyncIterator[tuple[TypeChecker, CatalogView]]:
    """A checker over one tool, ``crm:get``, returning ``output_schema``, and the whole catalog's view."""
    from toolindex import BackendRef, Tool

    index = InMemoryIndex()
    tool = Tool.validated(name="get", namespace="crm", input_schema={"type": "object"}, output_schema=output_schema)
    index.register(tool, BackendRef.of_provider("p", tool="get"))
    checker = TypeChecker(ToolModules(index))
    try:
        yield checker, CatalogView(index, None)
    finally:
        await checker.aclose()


async def test_a_snippet_in_the_f_string_syntax_of_python_3_12_is_checked() -> None:
    # Monty reads f-strings that reuse their quote inside (PEP 701); a host on an older Python does
    # not, and a snippet it could not parse went unchecked as a whole. Positions are the snippet's.
    out = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    async with _crm_get(out) as (checker, view):
        good = """from tools import crm\nr = crm.get()\nf"{r["name"]:>{len(r['name'])}}" + f'{r["name"]!r}'"""
        assert await checker.check(good, view) == []
        bad = """from tools import crm\nr = crm.get()\nf"{r["nme"]}"\ncrm.gett()"""
        found = await checker.check(bad, view)
        assert [(d.line, d.column, d.code) for d in found] == [(3, 6, "runtime_error"), (4, 1, "unknown_tool")], found
        assert 'Unknown key "nme"' in found[0].message


def test_f_strings_whose_backslashes_are_not_plain_are_given_up() -> None:
    # The re-quoting scanner took ``\{`` for an escape and the brace after it for a field, and so read
    # text as code and code as text: the check and the early calls saw another program than the run.
    from toolcode._typecheck._syntax import readable

    nested = 'y = f"{"a"}"\n'
    for tail in (
        '__out = f"\\{{ " + str(up.add(a=5)) + " }} {up.echo(via=1)}"',
        '__out = f"\\N{BULLET} {up.echo(via=1)}"',
        '__out = rf"\\{{x}}"',
    ):
        assert readable(nested + tail) is None, tail
    assert readable(nested + '__out = f"\\n{y}"') is not None  # other escapes are read as before


async def test_a_json_number_is_used_as_the_int_it_may_be() -> None:
    # A JSON ``number`` is ``float`` in the stub; a whole one arrives as an ``int``, which repeats a
    # string or bounds a slice. What a number has in neither form is still refused.
    out = {"type": "object", "properties": {"rating": {"type": "number"}}, "required": ["rating"]}
    async with _crm_get(out) as (checker, view):
        for code in (
            "from tools import crm\n'*' * crm.get()['rating']",
            "from tools import crm\n['a', 'b', 'c'][: crm.get()['rating'] // 2]",
            "from tools import crm\nr = crm.get()['rating']\n'#' * r + '.' * (10 - r)",
        ):
            assert await checker.check(code, view) == [], code
        [found] = await checker.check("from tools import crm\ncrm.get()['rating'].upper()", view)
        assert "upper" in found.message
        # Neither form has items: a key or an index read from it fails, whichever arrives.
        for code in (
            "from tools import crm\ncrm.get()['rating']['value']",
            "from tools import crm\ncrm.get()['rating'][0]",
        ):
            [found] = await checker.check(code, view)
            assert found.message == "Cannot subscript object of type `float` with no `__getitem__` method", found


async def test_an_enum_field_is_one_type_only_where_its_values_share_one() -> None:
    # ``Literal["low", "urgent"]`` is a union of values of one type, ``str``: what ``str`` lacks,
    # each value lacks. A ``Literal`` mixing types is a union of types, left to the run; and a whole
    # JSON number may arrive as a float (``1.0`` is one of ``[1, 2]``), which has ``hex``.
    props = {"level": {"enum": ["low", "high"]}, "mixed": {"enum": ["a", 1]}, "n": {"enum": [1, 2]}}
    out = {"type": "object", "properties": props, "required": list(props)}
    async with _crm_get(out) as (checker, view):
        for code in (
            "from tools import crm\nr = crm.get()\nr['mixed'].upper()",
            "from tools import crm\nr = crm.get()\nr['mixed'] + 1",
            "from tools import crm\ncrm.get()['n'].hex()",
            "from tools import crm\nr = crm.get()\n[r['level'].title(), r['level'] * r['n'], r['n'] / 2]",
        ):
            assert await checker.check(code, view) == [], code
        for code, words in (
            ("from tools import crm\ncrm.get()['level'].value", "has no attribute `value`"),
            ("from tools import crm\ncrm.get()['n'].upper()", "has no attribute `upper`"),
            ("from tools import crm\ncrm.get()['n'] + 'x'", "Operator `+` is not supported"),
        ):
            [found] = await checker.check(code, view)
            assert words in found.message and found.code == "runtime_error", (code, found)


async def test_a_result_handed_straight_to_len_is_checked() -> None:
    # Nothing else in the snippet needs ty, so it used to be spared: ``len()`` of an int failed at run time only.
    from toolindex import BackendRef, Tool

    index = InMemoryIndex()
    for name, out in (("count", {"type": "integer"}), ("names", {"type": "array", "items": {"type": "string"}})):
        tool = Tool.validated(name=name, namespace="crm", input_schema={"type": "object"}, output_schema=out)
        index.register(tool, BackendRef.of_provider("p", tool=name))
    checker = TypeChecker(ToolModules(index))
    view = CatalogView(index, None)
    try:
        [found] = await checker.check("from tools import crm\nlen(crm.count())", view)
        assert "Sized" in found.message and found.code == "runtime_error"
        assert await checker.check("from tools import crm\nlen(crm.names())", view) == []
        assert await checker.check("from tools import crm\nsorted(crm.names())", view) == []
        # A builtin class's constructor too (``ty`` words it otherwise than a function's call).
        for built in ("list", "tuple", "set", "frozenset", "enumerate"):
            [found] = await checker.check(f"from tools import crm\nx = {built}(crm.count())", view)
            assert "Iterable" in found.message and found.code == "runtime_error", (built, found)
            assert await checker.check(f"from tools import crm\nx = {built}(crm.names())", view) == []
    finally:
        await checker.aclose()


async def test_a_kept_answer_is_for_the_same_view_only() -> None:
    index = await _one_int_tool()
    tool = index.get("x:f")
    index.register(tool, index.backends("x:f"), partition="alice")  # alice's own, as a private snippet is
    checker = TypeChecker(ToolModules(index))
    code = "r = run_tool('x:f', {'a': 1})"
    alice = CatalogView(index, None, partitions=["alice"])
    try:
        assert await checker.check(code, alice) == []
        # The same snippet for a caller who may not see the tool (another caller's private snippet,
        # a namespace outside its view): the tool does not exist for it.
        for view in (CatalogView(index, None, partitions=["bob"]), CatalogView(index, ["y"], partitions=["alice"])):
            [found] = await checker.check(code, view)
            assert found.code == "unknown_tool", found
        assert await checker.check(code, alice) == []
    finally:
        await checker.aclose()


async def test_a_ty_session_whose_worker_ended_is_replaced() -> None:
    # A session can end under the checker (a limit, a worker that died): the check in flight fails
    # open, the session is dropped, and the next check answers from a new one.
    index = await _one_int_tool()
    view = CatalogView(index, None)
    checker = TypeChecker(ToolModules(index))

    def misuse(i: int) -> str:  # a new snippet each time: an answer is kept per snippet
        return f"from tools import x\nr{i} = x.f(a=1)\nr{i}.upper()"

    def found_misuse(found: list[Any]) -> bool:
        return any("has no attribute `upper`" in d.message for d in found)

    try:
        assert found_misuse(await checker.check(misuse(0), view))
        ended = checker._ty._small.warm  # pyright: ignore[reportPrivateUsage]
        assert ended is not None
        await ended.session.__aexit__(None, None, None)  # the session's worker is gone
        first, *later = [await checker.check(misuse(i), view) for i in range(1, 4)]
        assert first == [] or found_misuse(first)  # fails open: nothing refused for the checker's own failure
        assert all(found_misuse(found) for found in later), later
        assert checker._ty._small.warm is not ended  # pyright: ignore[reportPrivateUsage]
    finally:
        await checker.aclose()


def _exponential(branches: int, tag: int = 0) -> str:
    """A short snippet whose inferred type ``ty`` doubles with each branch (from 25 on: seconds to check)."""
    ifs = "".join(f"if r:\n    y = (y, {i})\n" for i in range(branches))
    return f"from tools import x\nr = x.f(a={tag})\ny = r\n{ifs}y.uper()\n"


class _TyChecks:
    """Counts the snippets handed to ``ty`` (and sets ``slow`` once one naming ``uper`` is)."""

    def __init__(self, checker: TypeChecker, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.slow = anyio.Event()
        ty = checker._ty  # pyright: ignore[reportPrivateUsage]
        self._check = ty._check  # pyright: ignore[reportPrivateUsage]
        monkeypatch.setattr(ty, "_check", self._counted)

    async def _counted(self, warm: Any, wrapped: str) -> str:
        self.count += 1
        if "uper" in wrapped:
            self.slow.set()
        return await self._check(warm, wrapped)


async def test_a_check_ty_takes_long_over_holds_up_no_other_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    # One caller's snippet that ty takes seconds over (its types grow exponentially) goes on
    # apart: another caller's checks still answer, at once, while it goes on.
    index = await _one_int_tool()
    view = CatalogView(index, None)
    checker = TypeChecker(ToolModules(index), timeout=30.0)
    ty = _TyChecks(checker, monkeypatch)
    slow_done = anyio.Event()

    async def attacker() -> None:
        await checker.check(_exponential(40), view, caller="alice")
        slow_done.set()

    try:
        with anyio.fail_after(120):  # a hang only: the slow check alone takes the checker's 30 s
            async with anyio.create_task_group() as tg:
                tg.start_soon(attacker)
                await ty.slow.wait()
                for i in range(3):
                    found = await checker.check(
                        f"from tools import x\nr{i} = x.f(a=1)\nr{i}.upper()", view, caller="bob"
                    )
                    assert [d.code for d in found] == ["runtime_error"], found  # checked, not let through
                assert not slow_done.is_set()  # bob's checks did not wait for alice's
                tg.cancel_scope.cancel()
    finally:
        await checker.aclose()


async def test_a_check_ty_runs_out_of_time_on_lets_the_run_go_on_and_is_not_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index = await _one_int_tool()
    view = CatalogView(index, None)
    checker = TypeChecker(ToolModules(index), timeout=1.0)
    ty = _TyChecks(checker, monkeypatch)
    try:
        slow = _exponential(40)
        assert len(slow) < 1_000
        assert await checker.check(slow, view, caller="alice") == []  # unchecked, not refused
        asked = ty.count
        assert await checker.check(slow, view, caller="alice") == []
        assert ty.count == asked  # remembered: the same snippet costs ty nothing again
        # The checker goes on answering, for the same caller too.
        [found] = await checker.check("from tools import x\nx.f(a=1).upper()", view, caller="alice")
        assert found.code == "runtime_error"
    finally:
        await checker.aclose()


async def test_a_big_namespace_module_is_rendered_off_the_event_loop() -> None:
    # An upstream's catalog can make its module's stub take seconds to render (after each change):
    # the event loop goes on serving everyone else meanwhile.
    from toolcode._modules import render
    from toolindex import BackendRef, Tool

    fields = {"type": "object", "properties": {f"s{k}": {"type": "string"} for k in range(8)}}
    output = {"type": "object", "properties": {f"field_{j}_{'x' * 20}": fields for j in range(60)}}
    inputs = {"type": "object", "properties": {"a": {"type": "string"}}}
    tools = [
        Tool.validated(name=f"t{i}", namespace="heavy", input_schema=inputs, output_schema=output) for i in range(80)
    ]
    index = InMemoryIndex()
    for tool in tools:
        index.register(tool, BackendRef.of_provider("p", tool=tool.name))
    started = time.perf_counter()
    render("heavy", "heavy", tools)
    reference = time.perf_counter() - started  # the render, measured here and now
    checker = TypeChecker(ToolModules(index))
    turns: list[float] = []
    try:
        with anyio.fail_after(120):  # a hang only
            async with anyio.create_task_group() as tg:

                async def ticker() -> None:
                    while True:
                        turns.append(time.perf_counter())
                        await anyio.lowlevel.checkpoint()

                tg.start_soon(ticker)
                await anyio.lowlevel.checkpoint()
                [found] = await checker.check(
                    "from tools import heavy\nr = heavy.t1(a='x')\nr.uper()", CatalogView(index)
                )
                tg.cancel_scope.cancel()
    finally:
        await checker.aclose()
    assert found.code == "runtime_error", found
    longest = max(b - a for a, b in itertools.pairwise(turns))
    assert longest < reference / 3, (longest, reference)


_PET = {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}, "required": ["id"]}
_DEFS = {
    "Pet": _PET,
    "Dog": {"allOf": [{"$ref": "#/$defs/Pet"}, {"type": "object", "properties": {"breed": {"type": "string"}}}]},
    "Puppy": {"allOf": [{"$ref": "#/$defs/Dog"}, {"type": "object", "properties": {"age": {"type": "integer"}}}]},
    "Open": {"type": "object", "properties": {"id": {"type": "string"}}, "additionalProperties": True},
}
# Tool → (output schema, result): each result has a key the schema admits beyond the first place it looks.
_WIDE: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "chain": ({"$defs": _DEFS, "$ref": "#/$defs/Puppy"}, {"id": 1, "breed": "lab", "age": 9}),
    "root_all_of": (
        {"$defs": _DEFS, "allOf": [{"$ref": "#/$defs/Pet"}, {"properties": {"age": {"type": "integer"}}}]},
        {"id": 1, "age": 9},
    ),
    "one_of": (
        {**_PET, "oneOf": [{"properties": {"age": {"type": "integer"}}, "required": ["age"]}, {"required": ["x"]}]},
        {"id": 1, "age": 9},
    ),
    "if_then": (
        {**_PET, "if": {"required": ["name"]}, "then": {"properties": {"age": {"type": "integer"}}}},
        {"id": 1, "age": 9},
    ),
    "dependent_schemas": (
        {**_PET, "dependentSchemas": {"name": {"properties": {"age": {"type": "integer"}}}}},
        {"id": 1, "name": "Rex", "age": 9},
    ),
    "dependencies": (
        {**_PET, "dependencies": {"name": {"properties": {"age": {"type": "integer"}}}, "id": ["name"]}},
        {"id": 1, "name": "Rex", "age": 9},
    ),
    "ref_siblings": (
        {"$defs": _DEFS, "$ref": "#/$defs/Pet", "properties": {"age": {"type": "integer"}}},
        {"id": 1, "age": 9},
    ),
    "open_ref": (
        {"$defs": _DEFS, "type": "object", "properties": {"o": {"$ref": "#/$defs/Open"}}},
        {"o": {"age": 9}},
    ),
    "open_root": ({**_PET, "additionalProperties": {"type": "integer"}}, {"id": 1, "age": 9}),
    "unevaluated": ({**_PET, "unevaluatedProperties": {"type": "integer"}}, {"id": 1, "age": 9}),
    "unevaluated_true": ({**_PET, "unevaluatedProperties": True}, {"id": 1, "age": 9}),
    "required_only": ({**_PET, "required": ["id", "age"]}, {"id": 1, "age": 9}),
}


class _Wide:
    """A provider whose results have keys that only a combinator, a sibling or an open object admits."""

    async def list_tools(self) -> list[dict[str, Any]]:
        no_args = {"type": "object", "properties": {}}
        return [
            {"name": n, "description": "Wide.", "inputSchema": no_args, "outputSchema": s}
            for n, (s, _) in _WIDE.items()
        ]

    async def call_tool(self, name: str, args: Any) -> Any:
        return _WIDE[name][1]

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("name", list(_WIDE))
async def test_a_key_the_output_schema_admits_is_not_refused(name: str) -> None:
    read = "r['o']['age']" if name == "open_ref" else "r['age']"
    async with Toolbox([ProviderBackend("w", _Wide())], engine="inprocess") as wide:
        out = await wide.codemode.execute(f"from tools import w\nr = w.{name}()\n{read}")
        assert out.ok and out.value == 9, out.error
        # A key the schema closes out is still found before the run.
        out = await wide.codemode.execute("from tools import w\nw.chain()['agee']")
        assert out.error is not None and out.error.code == "type_error"
        assert 'Unknown key "agee"' in out.error.message


class _Beyond:
    """A provider whose tools return a key their output schema does not declare (one closes its object)."""

    LOGIN: ClassVar[dict[str, Any]] = {"type": "object", "properties": {"login": {"type": "string"}}}

    async def list_tools(self) -> list[dict[str, Any]]:
        no_args = {"type": "object", "properties": {}}
        closed = {**self.LOGIN, "additionalProperties": False}
        return [
            {"name": "user", "description": "A user.", "inputSchema": no_args, "outputSchema": self.LOGIN},
            {"name": "closed_user", "description": "A user.", "inputSchema": no_args, "outputSchema": closed},
        ]

    async def call_tool(self, name: str, args: Any) -> Any:
        return {"login": "octo", "company": "Acme"} if name == "user" else {"login": "octo"}

    async def aclose(self) -> None:
        return None


async def test_a_key_beyond_an_open_objects_schema_is_refused_with_the_way_to_read_it() -> None:
    # A key the schema does not declare is refused (a misread result is the usual cause), but an
    # object that does not close itself may carry it: the finding says how to read it (``.get``).
    async with Toolbox([ProviderBackend("gh", _Beyond())], engine="inprocess") as box:
        for code in ("from tools import gh\ngh.user()['company']", "run_tool('gh:user', {})['company']"):
            out = await box.codemode.execute(code)
            assert out.error is not None and out.error.code == "type_error", out
            assert 'if the tool returns it anyway, read it with .get("company")' in out.error.message
            fixed = await box.codemode.execute(code.replace("['company']", ".get('company')"))
            assert fixed.ok and fixed.value == "Acme", fixed.error
        for code in ("from tools import gh\ngh.closed_user()['company']", "from tools import gh\ngh.user()['logni']"):
            out = await box.codemode.execute(code)
            assert out.error is not None and out.error.code == "type_error", out
            assert ".get(" not in out.error.message, out.error.message  # closed, or a slip ty names


# Code the snippet's own constants rule out never runs: what it would do wrong there is no failure.
# (ruled out, live): the same program, the second with the branch taken and a call the run refuses.
RULED_OUT: dict[str, tuple[str, str]] = {
    "if ==, the other branch passes the constant on": (
        'from tools import helpdesk\nstatus = "all"\nif status == "all":\n'
        '    n = len(helpdesk.list_tickets(office="Paris"))\nelse:\n'
        '    n = len(helpdesk.list_tickets(office="Paris", status=status))\nn',
        'from tools import helpdesk\nstatus = "pending"\nif status == "all":\n'
        '    n = len(helpdesk.list_tickets(office="Paris"))\nelse:\n'
        '    n = len(helpdesk.list_tickets(office="Paris", status=status))\nn',
    ),
    "if !=, run_tool keywords": (
        'STATUS = "all"\nif STATUS != "all":\n'
        '    n = len(run_tool("helpdesk:list_tickets", office="Paris", status=STATUS))\nelse:\n'
        '    n = len(run_tool("helpdesk:list_tickets", office="Paris"))\nn',
        'STATUS = "pending"\nif STATUS != "all":\n'
        '    n = len(run_tool("helpdesk:list_tickets", office="Paris", status=STATUS))\nelse:\n'
        '    n = len(run_tool("helpdesk:list_tickets", office="Paris"))\nn',
    ),
    "if in, run_tool dict": (
        'STATUS = "all"\nargs = {"office": "Paris"}\nif STATUS in ("open", "closed"):\n'
        '    n = len(run_tool("helpdesk:list_tickets", {"office": "Paris", "status": STATUS}))\nelse:\n'
        '    n = len(run_tool("helpdesk:list_tickets", args))\nn',
        'STATUS = "pending"\nargs = {"office": "Paris"}\nif STATUS in ("open", "pending"):\n'
        '    n = len(run_tool("helpdesk:list_tickets", {"office": "Paris", "status": STATUS}))\nelse:\n'
        '    n = len(run_tool("helpdesk:list_tickets", args))\nn',
    ),
    "if not in, then elif": (
        'from tools import helpdesk\nSTATUS = "all"\nif STATUS not in ("open", "closed"):\n'
        '    n = len(helpdesk.list_tickets(office="Paris"))\nelif STATUS == "open":\n'
        "    n = 0\nelse:\n"
        '    n = len(helpdesk.list_tickets(office="Paris", status=STATUS))\nn',
        'from tools import helpdesk\nSTATUS = "pending"\nif STATUS not in ("open", "pending"):\n'
        '    n = len(helpdesk.list_tickets(office="Paris"))\nelif STATUS == "open":\n'
        "    n = 0\nelse:\n"
        '    n = len(helpdesk.list_tickets(office="Paris", status=STATUS))\nn',
    ),
    "conditional expression": (
        'from tools import helpdesk\nSTATUS = "all"\nts = helpdesk.list_tickets(office="Paris") if STATUS == "all" '
        'else helpdesk.list_tickets(office="Paris", status=STATUS)\nlen(ts)',
        'from tools import helpdesk\nSTATUS = "pending"\nts = helpdesk.list_tickets(office="Paris") if STATUS == "all" '
        'else helpdesk.list_tickets(office="Paris", status=STATUS)\nlen(ts)',
    ),
    "if on a flag": (
        "from tools import helpdesk\nDEBUG = False\nif DEBUG:\n"
        '    helpdesk.list_tickets(office="Paris", status="pending")\nlen(helpdesk.on_call(office="Paris"))',
        "from tools import helpdesk\nDEBUG = True\nif DEBUG:\n"
        '    helpdesk.list_tickets(office="Paris", status="pending")\nlen(helpdesk.on_call(office="Paris"))',
    ),
    "while false at entry": (
        "from tools import helpdesk\nRETRIES = 0\nwhile RETRIES > 0:\n"
        '    helpdesk.list_tickets(office="Paris", status="pending")\n    break\nlen(helpdesk.on_call(office="Paris"))',
        "from tools import helpdesk\nRETRIES = 1\nwhile RETRIES > 0:\n"
        '    helpdesk.list_tickets(office="Paris", status="pending")\n    break\nlen(helpdesk.on_call(office="Paris"))',
    ),
    "a tool that does not exist, behind a flag": (
        'USE_LEGACY = False\nif USE_LEGACY:\n    n = run_tool("helpdesk:legacy_count", {})\nelse:\n'
        '    n = len(run_tool("helpdesk:list_tickets", {"office": "Paris"}))\nn',
        'USE_LEGACY = True\nif USE_LEGACY:\n    n = run_tool("helpdesk:legacy_count", {})\nelse:\n'
        '    n = len(run_tool("helpdesk:list_tickets", {"office": "Paris"}))\nn',
    ),
    "a module function that does not exist, behind a flag": (
        "from tools import helpdesk\nUSE_LEGACY = False\n"
        'n = helpdesk.legacy_count() if USE_LEGACY else len(helpdesk.on_call(office="Paris"))\nn',
        "from tools import helpdesk\nUSE_LEGACY = True\n"
        'n = helpdesk.legacy_count() if USE_LEGACY else len(helpdesk.on_call(office="Paris"))\nn',
    ),
    "and": (
        'from tools import helpdesk\nDEBUG = False\nDEBUG and helpdesk.list_tickets(office="Paris", status="pending")\n'
        'len(helpdesk.on_call(office="Paris"))',
        'from tools import helpdesk\nDEBUG = True\nDEBUG and helpdesk.list_tickets(office="Paris", status="pending")\n'
        'len(helpdesk.on_call(office="Paris"))',
    ),
    "or": (
        'from tools import helpdesk\nQUIET = True\nQUIET or helpdesk.list_tickets(office="Paris", status="pending")\n'
        'len(helpdesk.on_call(office="Paris"))',
        'from tools import helpdesk\nQUIET = False\nQUIET or helpdesk.list_tickets(office="Paris", status="pending")\n'
        'len(helpdesk.on_call(office="Paris"))',
    ),
    "after a guard clause that returns": (
        'from tools import helpdesk\nSTATUS = "all"\ndef fetch(city):\n    if STATUS == "all":\n'
        "        return helpdesk.list_tickets(office=city)\n"
        '    return helpdesk.list_tickets(office=city, status=STATUS)\nlen(fetch("Paris"))',
        'from tools import helpdesk\nSTATUS = "pending"\ndef fetch(city):\n    if STATUS == "all":\n'
        "        return helpdesk.list_tickets(office=city)\n"
        '    return helpdesk.list_tickets(office=city, status=STATUS)\nlen(fetch("Paris"))',
    ),
    "after a guard clause that continues": (
        'from tools import helpdesk\nSTATUS = "all"\nn = 0\nfor city in ["Paris", "Tokyo"]:\n    if STATUS == "all":\n'
        "        n += len(helpdesk.list_tickets(office=city))\n        continue\n"
        "    n += len(helpdesk.list_tickets(office=city, status=STATUS))\nn",
        'from tools import helpdesk\nSTATUS = "pending"\nn = 0\nfor city in ["Paris", "Tokyo"]:\n'
        '    if STATUS == "all":\n'
        "        n += len(helpdesk.list_tickets(office=city))\n        continue\n"
        "    n += len(helpdesk.list_tickets(office=city, status=STATUS))\nn",
    ),
    "after a guard clause that breaks": (
        'from tools import helpdesk\nSTATUS = "all"\nwhile True:\n    if STATUS == "all":\n'
        '        n = len(helpdesk.list_tickets(office="Paris"))\n        break\n'
        '    n = len(helpdesk.list_tickets(office="Paris", status=STATUS))\n    break\nn',
        'from tools import helpdesk\nSTATUS = "pending"\nwhile True:\n    if STATUS == "all":\n'
        '        n = len(helpdesk.list_tickets(office="Paris"))\n        break\n'
        '    n = len(helpdesk.list_tickets(office="Paris", status=STATUS))\n    break\nn',
    ),
    "after a guard clause that raises": (
        'from tools import helpdesk\nSTATUS = "all"\ntry:\n    if STATUS == "all":\n        raise LookupError(STATUS)\n'
        '    n = len(helpdesk.list_tickets(office="Paris", status=STATUS))\nexcept LookupError:\n    n = 0\nn',
        'from tools import helpdesk\nSTATUS = "pending"\ntry:\n    if STATUS == "all":\n'
        "        raise LookupError(STATUS)\n"
        '    n = len(helpdesk.list_tickets(office="Paris", status=STATUS))\nexcept LookupError:\n    n = 0\nn',
    ),
    "a function called only where the test rules it out": (
        "from tools import helpdesk\nDRY = True\ndef push():\n"
        '    helpdesk.list_tickets(office="Paris", status="pending")\n'
        'if not DRY:\n    push()\nlen(helpdesk.on_call(office="Paris"))',
        "from tools import helpdesk\nDRY = False\ndef push():\n"
        '    helpdesk.list_tickets(office="Paris", status="pending")\n'
        'if not DRY:\n    push()\nlen(helpdesk.on_call(office="Paris"))',
    ),
    "a constant bound in the function": (
        "from tools import helpdesk\ndef run():\n    dry = True\n    if not dry:\n"
        '        helpdesk.list_tickets(office="Paris", status="pending")\n'
        '    return len(helpdesk.on_call(office="Paris"))\n'
        "run()",
        "from tools import helpdesk\ndef run():\n    dry = False\n    if not dry:\n"
        '        helpdesk.list_tickets(office="Paris", status="pending")\n'
        '    return len(helpdesk.on_call(office="Paris"))\n'
        "run()",
    ),
    "a result misused where the test rules it out": (
        # ``ty`` sees the list as built at run time, so it does not rule the branch out itself.
        'from tools import helpdesk\nMODE = "summary"\nn = len(helpdesk.list_offices())\nif MODE in ["full", "raw"]:\n'
        '    n = helpdesk.list_offices()[0]["citty"]\nn',
        'from tools import helpdesk\nMODE = "raw"\nn = len(helpdesk.list_offices())\nif MODE in ["full", "raw"]:\n'
        '    n = helpdesk.list_offices()[0]["citty"]\nn',
    ),
}


@pytest.mark.parametrize("name", list(RULED_OUT))
async def test_code_the_snippets_constants_rule_out_is_not_refused(box: Toolbox, name: str) -> None:
    ruled_out, live = RULED_OUT[name]
    checked = await box.codemode.execute(ruled_out)
    unchecked = await box.codemode.execute(ruled_out, options={"type_check": "off"})
    assert checked.ok and unchecked.ok, (name, checked.error, unchecked.error)
    assert checked.value == unchecked.value
    # The same program with the branch taken: still refused before it runs, and failing when run unchecked.
    refused = await box.codemode.execute(live)
    assert refused.error is not None and refused.error.code == "type_error", (name, refused)
    failed = await box.codemode.execute(live, options={"type_check": "off"})
    assert failed.error is not None, (name, failed.value)


# A test → its truth, as the text settles it (``None``: not settled).
_PRELUDE = (
    'from tools import x\nMODE = "fast"\nSAME = MODE\nLIMIT = 3\nRATIO = 0.5\nDEBUG: bool = False\nNOTHING = None\n'
    'PAIR = ("a", "b")\nNAMES = ["fast"]\nAGAIN = 1\nAGAIN = 2\n'
)
_TESTS: dict[str, bool | None] = {
    'MODE == "fast"': True,
    'MODE != "fast"': False,
    'SAME == "fast"': True,
    "LIMIT < 3": False,
    "LIMIT <= 3": True,
    "LIMIT > 2.5": True,
    "LIMIT >= 4": False,
    "0 < LIMIT < 3": False,
    "-LIMIT > 0": False,
    'MODE in ("fast", "slow")': True,
    'MODE not in ["fast"]': False,
    'MODE in {"slow"}': False,
    '"as" in MODE': True,
    "MODE in PAIR": False,
    "NOTHING is None": True,
    "DEBUG is not False": False,
    "MODE is None": False,
    "not DEBUG": True,
    "DEBUG": False,
    "MODE": True,
    "RATIO": True,
    "PAIR": True,
    "()": False,
    "DEBUG and AGAIN == 1": False,
    "AGAIN and DEBUG": False,
    "AGAIN or MODE": True,
    'LIMIT == 3 and MODE == "fast" or DEBUG': True,
    '(MODE if DEBUG else "slow") == "slow"': True,
    # Not settled: both branches are checked.
    "AGAIN == 1": None,  # bound twice
    'NAMES == ["fast"]': None,  # a list may change in place
    "MODE is MODE": None,  # two strings may or may not be one object
    'LIMIT < "a"': None,  # Python refuses the comparison
    "LIMIT in 3": None,
    "LATER == 1": None,  # bound after the test
    "len(MODE) == 4": None,
    "DEBUG or AGAIN": None,
}
_FORMS: dict[str, str] = {
    "if": "if {test}:\n    x.f(a='then')\nelse:\n    x.f(a='else')\n",
    "elif": "if AGAIN:\n    pass\nelif {test}:\n    x.f(a='then')\nelse:\n    x.f(a='else')\n",
    "conditional expression": "y = x.f(a='then') if {test} else x.f(a='else')\n",
    "while": "while {test}:\n    x.f(a='then')\n    break\nelse:\n    x.f(a='else')\n",
    "and, or": "({test}) and x.f(a='then')\n({test}) or x.f(a='else')\n",
}


@pytest.mark.parametrize("form", list(_FORMS))
async def test_a_test_settled_by_the_text_rules_out_a_branch(form: str) -> None:
    index = await _one_int_tool()
    view = CatalogView(index, None)
    checker = TypeChecker(ToolModules(index))
    try:
        for test, truth in _TESTS.items():
            found = await checker.check(_PRELUDE + _FORMS[form].format(test=test) + "LATER = 1\n", view)
            branches = {b for d in found for b in ("then", "else") if f'"{b}" is not of type' in d.message}
            # ``while`` runs its ``else`` once the test is false, after the body when it does not break.
            expected = {"then"} if truth else {"else"} if truth is False else {"then", "else"}
            assert branches == expected, (form, test, [d.message for d in found])
    finally:
        await checker.aclose()


# Code after a statement that always leaves its block never runs: snippet → whether ``x.f(a='after')``
# is still found there.
_AFTER: dict[str, tuple[str, bool]] = {
    "return": ("def g():\n    return x.f(a=1)\n    x.f(a='after')\ng()\n", False),
    "raise": ("def g():\n    raise ValueError('no')\n    x.f(a='after')\ng()\n", False),
    "break": ("for i in range(2):\n    break\n    x.f(a='after')\n", False),
    "continue": ("for i in range(2):\n    continue\n    x.f(a='after')\n", False),
    "if and else that both return": (
        "def g(n):\n    if n:\n        return 1\n    else:\n        raise ValueError(n)\n    x.f(a='after')\ng(1)\n",
        False,
    ),
    "a while True without break": ("def g():\n    while True:\n        return 1\n    x.f(a='after')\ng()\n", False),
    "assert False": ("def g():\n    assert False, 'unreachable'\n    x.f(a='after')\ng()\n", False),
    "a try whose body and handlers all leave": (
        "def g():\n    try:\n        return x.f(a=1)\n    except ToolError:\n        raise\n    x.f(a='after')\ng()\n",
        False,
    ),
    # Blocks that may complete: what follows them runs.
    "if without else": ("def g(n):\n    if n:\n        return 1\n    x.f(a='after')\ng(0)\n", True),
    "a while True with a break": ("while True:\n    break\nx.f(a='after')\n", True),
    "a loop whose body leaves": ("for i in range(0):\n    break\nx.f(a='after')\n", True),
    "a try whose handler falls through": (
        "try:\n    raise ValueError('no')\nexcept ValueError:\n    pass\nx.f(a='after')\n",
        True,
    ),
    "a with block": (
        "class C:\n    def __enter__(self):\n        return self\n    def __exit__(self, *a):\n"
        "        return True\nwith C():\n    raise ValueError('no')\nx.f(a='after')\n",
        True,
    ),
    "a nested function that returns": ("def g():\n    def h():\n        return 1\n    x.f(a='after')\ng()\n", True),
}


@pytest.mark.parametrize("name", list(_AFTER))
async def test_code_after_a_statement_that_always_leaves_its_block_is_not_refused(name: str) -> None:
    code, found_after = _AFTER[name]
    refused, messages = await _refused_for_x_f(code)
    assert ("after" in refused) is found_after, (name, messages)


# A function called only from code that cannot run does not run either; one the snippet may run
# (called from a live place, handed on, decorated, a method, ...) is checked. Snippet → whether
# ``x.f(a='in')`` in ``g`` is still found.
_UNCALLED: dict[str, tuple[str, bool]] = {
    "called only where a test rules it out": ("DRY = True\ndef g():\n    x.f(a='in')\nif not DRY:\n    g()\n", False),
    "called only after a return": ("def g():\n    x.f(a='in')\ndef k():\n    return 1\n    g()\nk()\n", False),
    "called only by a function that cannot run": (
        "DRY = True\ndef g():\n    x.f(a='in')\ndef k():\n    g()\n    g()\nif not DRY:\n    k()\n",
        False,
    ),
    "recursive, called only where a test rules it out": (
        "DRY = True\ndef g(n):\n    x.f(a='in')\n    return g(n - 1) if n else 0\nDRY or g(2)\n",
        False,
    ),
    "async, awaited only where a test rules it out": (
        "DRY = True\nasync def g():\n    x.f(a='in')\nif not DRY:\n    await g()\n",
        False,
    ),
    "nested, called only where a test rules it out": (
        "def k():\n    dry = True\n    def g():\n        x.f(a='in')\n    if not dry:\n        g()\n"
        "    return 1\nk()\n",
        False,
    ),
    "never called": ("def g():\n    x.f(a='in')\n", False),
    # It may run.
    "also called where it runs": ("DRY = True\ndef g():\n    x.f(a='in')\nif not DRY:\n    g()\ng()\n", True),
    "called where the test is not settled": (
        "import os\ndef g():\n    x.f(a='in')\nif os.getenv('X'):\n    g()\n",
        True,
    ),
    "handed on": ("DRY = True\ndef g():\n    x.f(a='in')\nh = g\nif not DRY:\n    g()\nh()\n", True),
    "returned": (
        "DRY = True\ndef g():\n    x.f(a='in')\ndef k():\n    return g\nif not DRY:\n    g()\nk()()\n",
        True,
    ),
    "decorated": (
        "DRY = True\nhooks = []\ndef hook(f):\n    hooks.append(f)\n    return f\n@hook\ndef g():\n    x.f(a='in')\n"
        "if not DRY:\n    g()\nhooks[0]()\n",
        True,
    ),
    "a method": (
        "DRY = True\nclass C:\n    def g():\n        x.f(a='in')\n    if not DRY:\n        g()\nC.g()\n",
        True,
    ),
    "called by a function that runs": (
        "DRY = True\ndef g():\n    x.f(a='in')\ndef k():\n    g()\nif not DRY:\n    g()\nk()\n",
        True,
    ),
    "called by a function never called": (
        "DRY = True\ndef g():\n    x.f(a='in')\ndef k():\n    g()\nif not DRY:\n    g()\n",
        True,
    ),
    "called from a default value": (
        "DRY = True\ndef g():\n    x.f(a='in')\ndef k(v=g()):\n    return v\nif not DRY:\n    k()\n",
        True,
    ),
    "looked up by name": (
        "DRY = True\ndef g():\n    x.f(a='in')\nif not DRY:\n    g()\nglobals()['g']()\n",
        True,
    ),
}


@pytest.mark.parametrize("name", list(_UNCALLED))
async def test_a_function_called_only_from_code_that_cannot_run_is_not_refused(name: str) -> None:
    code, found_in = _UNCALLED[name]
    refused, messages = await _refused_for_x_f(code)
    assert ("in" in refused) is found_in, (name, messages)


# A function's own constant settles a test after it in that function, as a top-level one does.
# Snippet (the body of ``g``, called) → whether ``x.f(a='in')`` is still found.
_LOCAL: dict[str, tuple[str, bool]] = {
    "a flag": ("    dry = True\n    if not dry:\n        x.f(a='in')\n", False),
    "annotated": ("    mode: str = 'all'\n    if mode != 'all':\n        x.f(a='in')\n", False),
    "from another of its constants": (
        "    mode = 'all'\n    full = mode == 'all'\n    if not full:\n        x.f(a='in')\n",
        False,
    ),
    "from a top-level constant": ("    dry = DRY\n    if not dry:\n        x.f(a='in')\n", False),
    "a guard clause": ("    mode = 'all'\n    if mode == 'all':\n        return 0\n    x.f(a='in')\n", False),
    # Not settled.
    "bound twice": ("    dry = True\n    dry = False\n    if not dry:\n        x.f(a='in')\n", True),
    "augmented": ("    n = 0\n    n += 1\n    if n:\n        x.f(a='in')\n", True),
    "bound in a loop": (
        "    for i in range(2):\n        dry = i == 0\n    if not dry:\n        x.f(a='in')\n",
        True,
    ),
    "bound in a branch": (
        "    if len(str(DRY)) > 9:\n        dry = True\n    else:\n        dry = False\n"
        "    if not dry:\n        x.f(a='in')\n",
        True,
    ),
    "read before it is bound": ("    if not dry:\n        x.f(a='in')\n    dry = True\n", True),
    "rebound by nonlocal": (
        "    dry = True\n    def flip():\n        nonlocal dry\n        dry = False\n    flip()\n"
        "    if not dry:\n        x.f(a='in')\n",
        True,
    ),
    "global": ("    global dry\n    dry = True\n    if not dry:\n        x.f(a='in')\n", True),
    "computed at run time": ("    dry = len(str(DRY)) == 4\n    if not dry:\n        x.f(a='in')\n", True),
    "a list": (
        "    modes = ['a']\n    modes.append('b')\n    if modes == ['a']:\n        return 0\n    x.f(a='in')\n",
        True,
    ),
    "read in a function inside": (
        "    dry = True\n    def h():\n        if not dry:\n            x.f(a='in')\n    h()\n",
        True,
    ),
    "read at the top level": ("    dry = True\n    return dry\nif not dry:\n    x.f(a='in')\n", True),
    "a parameter of that name elsewhere": (
        "    dry = True\n    if not dry:\n        x.f(a='in')\ndef k(dry):\n    return dry\n",
        True,
    ),
}


@pytest.mark.parametrize("name", list(_LOCAL))
async def test_a_constant_bound_in_a_function_settles_a_test_after_it_there(name: str) -> None:
    body, found_in = _LOCAL[name]
    refused, messages = await _refused_for_x_f("DRY = True\ndef g():\n" + body + "g()\n")
    assert ("in" in refused) is found_in, (name, messages)


# A function's body runs where it is called: a constant bound after the ``def`` and before every
# call settles a test in it. Snippet → the wrong calls still found.
_LATER: dict[str, tuple[str, set[str]]] = {
    "every call after it": ("MODE = 'fast'\ng()\n[g() for _ in range(2)]\n", set()),
    "called before it": ("g()\nMODE = 'fast'\ng()\n", {"else"}),
    "handed on": ("MODE = 'fast'\nh = g\nh()\n", {"else"}),
    "called by another function": ("def k():\n    return g()\nMODE = 'fast'\nk()\n", {"else"}),
    "called by a generator": ("MODE = 'fast'\nsum(g() for _ in range(2))\n", {"else"}),
}


async def test_a_constant_bound_after_a_function_settles_it_when_bound_before_every_call() -> None:
    index = await _one_int_tool()
    view = CatalogView(index, None)
    checker = TypeChecker(ToolModules(index))
    function = "from tools import x\ndef g():\n    if MODE == 'fast':\n        return x.f(a=1)\n    else:\n"
    function += "        return x.f(a='else')\n"
    try:
        for name, (calls, expected) in _LATER.items():
            found = await checker.check(function + calls, view)
            branches = {b for d in found for b in ("then", "else") if f'"{b}" is not of type' in d.message}
            assert branches == expected, (name, [d.message for d in found])
    finally:
        await checker.aclose()


# A dict the snippet makes and fills under computed keys gets keys of its own, never a result's:
# a result's unknown key is still found (it used to be spared by any computed key written anywhere).
OWN_DICTS: dict[str, tuple[str, bool]] = {
    "counted by a result's key": (
        'counts = {}\nfor o in run_tool("helpdesk:list_offices"):\n    counts[o["city"]] = o["name"]\ncounts',
        True,
    ),
    "made by dict(), filled by setdefault and update": (
        'seen = dict()\nfor o in run_tool("helpdesk:list_offices"):\n'
        '    seen.setdefault(o["city"], []).append(o["head"])\n    seen.update({o["tz"]: 1})\nseen',
        True,
    ),
    "counted, then read by its items and keys and made part of the run's value": (
        'by = {}\nfor o in run_tool("helpdesk:list_offices"):\n    by[o["city"]] = by.get(o["city"], 0) + 1\n'
        "n = sorted(by.items())\nks = [k for k in by]\nfor k in by:\n    pass\n"
        '__out = {"by": by, "n": n, "first": run_tool("helpdesk:list_offices")[0]["ciity"]}',
        True,
    ),
    "copied by dict() into a result": (
        'ts = run_tool("helpdesk:list_offices")\nx = {}\nx[input["k"]] = 1\nts.append(dict(x))\nts[-1]["note"]',
        False,
    ),
    "in a display put into a result": (
        'ts = run_tool("helpdesk:list_offices")\nx = {}\nx[input["k"]] = 1\nts.append([x][0])\nts[-1]["note"]',
        False,
    ),
    "the same name also bound to a result": (
        'counts = {}\ncounts = run_tool("helpdesk:list_offices")[0]\nk = "name"\ncounts[k] = 1\ncounts["name"]',
        False,
    ),
    "a parameter of that name": (
        'def fill(counts, k):\n    counts[k] = 1\nr = run_tool("helpdesk:list_offices")[0]\nfill(r, "name")\nr["name"]',
        False,
    ),
    "put into a result": (
        'ts = run_tool("helpdesk:list_offices")\nx = {}\nx[input["k"]] = 1\nts.append(x)\nts[-1]["note"]',
        False,
    ),
    "copied into a result": (
        'ts = run_tool("helpdesk:list_offices")\nx = {}\nx[input["k"]] = 1\nts[0].update(x.copy())\nts[0]["note"]',
        False,
    ),
    "rebound by a match capture": (
        'r = run_tool("helpdesk:list_offices")[0]\nd = {}\nmatch r:\n    case {"city": _} as d:\n        pass\n'
        'd[input["k"]] = 1\nr["note"]',
        False,
    ),
    "a loop target of that name": (
        'counts = {}\nfor counts in run_tool("helpdesk:list_offices"):\n    k = "name"\n    counts[k] = 1\n'
        '    counts["name"]',
        False,
    ),
}


@pytest.mark.parametrize("name", list(OWN_DICTS))
async def test_keys_written_to_a_dict_the_snippet_made_are_its_own(box: Toolbox, name: str) -> None:
    code, refused = OWN_DICTS[name]
    out = await box.codemode.execute(code, input={"k": "note"})
    if refused:
        assert out.error is not None and out.error.code == "type_error", (name, out)
        assert "Unknown key" in out.error.message
        unchecked = await box.codemode.execute(code, input={"k": "note"}, options={"type_check": "off"})
        assert unchecked.error is not None  # KeyError
    else:
        assert out.ok, (name, out.error)  # a result that may have been given the key: left to the run


_S = {"type": "string"}


class _Renamed:
    """Tools whose parameters' wire names are no identifiers: ``from``, ``class``, ``per-page`` beside ``per_page``."""

    async def list_tools(self) -> list[dict[str, Any]]:
        invoices = {
            "type": "object",
            "properties": {"invoices": {"type": "array", "items": _S}},
            "required": ["invoices"],
        }
        return [
            {
                "name": "list_invoices",
                "description": "Invoices since a date.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"customer_id": _S, "from": _S},
                    "required": ["customer_id"],
                    "additionalProperties": False,
                },
                "outputSchema": invoices,
            },
            {
                "name": "page",
                "description": "One page of a class.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"class": _S, "per_page": {"type": "integer"}, "per-page": {"type": "integer"}},
                    "additionalProperties": False,
                },
            },
            {
                "name": "search",
                "description": "Search, taking keys beyond its own.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"per-page": {"type": "integer"}, "from": _S},
                    "additionalProperties": True,
                },
            },
        ]

    async def call_tool(self, name: str, args: Any) -> Any:
        if name == "list_invoices":
            return {"invoices": [f"in_1 since {args.get('from', '-')}"]}
        return dict(sorted(args.items()))

    async def aclose(self) -> None:
        return None


# Correct: a dict spread as keywords may use the names the signature shows (``from_`` for ``from``,
# ``per_page_2`` for ``per-page`` beside ``per_page``), as keywords may: the run maps them to wire names.
RENAMED_VALID: dict[str, tuple[str, Any]] = {
    "spread dict of signature names": (
        'from tools import billing\nparams = {"customer_id": "c1", "from_": "2026-01-01"}\n'
        'billing.list_invoices(**params)["invoices"]',
        ["in_1 since 2026-01-01"],
    ),
    "signature name added to the dict later": (
        'from tools import billing\nparams = {"customer_id": "c1"}\nparams["from_"] = "2026-01-01"\n'
        'billing.list_invoices(**params)["invoices"]',
        ["in_1 since 2026-01-01"],
    ),
    "spread written inline, beside a keyword": (
        'from tools import billing\nbilling.list_invoices(customer_id="c1", **{"from_": "2026-01-01"})["invoices"]',
        ["in_1 since 2026-01-01"],
    ),
    "awaitable form": (
        'from tools import billing\nkw = {"customer_id": "c1", "from_": "2026-01-01"}\n'
        '(await billing.list_invoices_async(**kw))["invoices"]',
        ["in_1 since 2026-01-01"],
    ),
    "run_tool keywords from a dict": (
        'kw = {"customer_id": "c1", "from_": "2026-01-01"}\nrun_tool("billing:list_invoices", **kw)["invoices"]',
        ["in_1 since 2026-01-01"],
    ),
    "spread dict of wire names": (
        'from tools import billing\nbilling.list_invoices(**{"customer_id": "c1", "from": "2026-01-01"})["invoices"]',
        ["in_1 since 2026-01-01"],
    ),
    "names the signature gave a collision": (
        'from tools import billing\nopts = {"class_": "a", "per_page_2": 2}\nbilling.page(per_page=1, **opts)',
        {"class": "a", "per-page": 2, "per_page": 1},
    ),
    # An arguments object is keyed by wire names: ``per_page`` there is a key of its own, beyond the
    # schema, not ``per-page`` (the keyword ``per_page=`` of the module function).
    "arguments object key named like another wire name's keyword": (
        'a = run_tool("billing:search", {"per_page": "t" + "en", "from_": 1 + 1})\n'
        'b = run_tool("billing:search", args={"per_page": f"{2}"})\n'
        'c = await run_tool_async(tool_id="billing:search", args={"per_page": "x" * 2})\n'
        "[a, b, c]",
        [{"from_": 2, "per_page": "ten"}, {"per_page": "2"}, {"per_page": "xx"}],
    ),
}
# Broken twins: (code, words of the diagnostic); each fails when run with ``invalid_arguments``.
RENAMED_BROKEN: dict[str, tuple[str, str]] = {
    "signature name with a value of the wrong type": (
        'from tools import billing\nparams = {"customer_id": "c1", "from_": 20260101}\nbilling.list_invoices(**params)',
        '$.from: 20260101 is not of type "string"',
    ),
    "misspelt key of a spread dict": (
        'from tools import billing\nparams = {"customer_id": "c1", "frm_": "2026-01-01"}\n'
        "billing.list_invoices(**params)",
        "$.frm_: unexpected property (not in the schema); did you mean 'from_'?",
    ),
    "one argument under both its names": (
        'from tools import billing\nparams = {"customer_id": "c1", "from_": "2026-01-01", "from": "2026-02-01"}\n'
        "billing.list_invoices(**params)",
        "argument 'from' of tool 'list_invoices' is given twice",
    ),
    "signature name in the arguments object (keyed by wire names)": (
        'run_tool("billing:list_invoices", {"customer_id": "c1", "from_": "2026-01-01"})',
        "$.from_: unexpected property (not in the schema); did you mean 'from'?",
    ),
}


async def test_a_spread_dict_may_use_the_names_the_signature_shows(engine: str) -> None:
    async with Toolbox([ProviderBackend("billing", _Renamed())], engine=engine) as renamed:
        for name, (code, expected) in RENAMED_VALID.items():
            checked = await renamed.codemode.execute(code)
            unchecked = await renamed.codemode.execute(code, options={"type_check": "off"})
            assert checked.ok and checked.value == unchecked.value == expected, (name, checked.error, unchecked)
        for name, (code, words) in RENAMED_BROKEN.items():
            out = await renamed.codemode.execute(code)
            assert out.error is not None and out.error.code == "type_error", (name, out)
            assert [d.code for d in out.error.diagnostics or []] == ["invalid_arguments"], (name, out.error)
            assert words in out.error.message, (name, out.error.message)
            unchecked = await renamed.codemode.execute(code, options={"type_check": "off"})
            assert unchecked.error is not None and unchecked.error.code == "invalid_arguments", (name, unchecked)


# A name the catalog lacks, tried in a ``try``: the handler decides, by the exception the run raises
# there (``ImportError`` for a name imported from a module, ``ModuleNotFoundError`` for a module
# imported, ``AttributeError`` for an attribute). (code, whether the run gets through).
_FALLBACK = "    from tools.helpdesk import list_tickets as lt\nlen(lt(office='Paris'))"
HANDLED: dict[str, tuple[str, bool]] = {
    **{
        f"function imported, {handler}": (
            f"try:\n    from tools.helpdesk import list_tickets_v2 as lt\n{handler}:\n{_FALLBACK}",
            caught,
        )
        for handler, caught in [
            ("except ImportError", True),
            ("except ImportError as e", True),
            ("except (KeyError, ImportError)", True),
            ("except Exception", True),
            ("except", True),
            ("except ModuleNotFoundError", False),
            ("except AttributeError", False),
        ]
    },
    "module imported, except ModuleNotFoundError": (
        "try:\n    import tools.helpdesk_v2 as hd\nexcept ModuleNotFoundError:\n    import tools.helpdesk as hd\n"
        "len(hd.on_call(office='Paris'))",
        True,
    ),
    "module imported from the package, except ModuleNotFoundError": (
        "try:\n    from tools import helpdesk_v2 as hd\nexcept ModuleNotFoundError:\n"
        "    from tools import helpdesk as hd\n"
        "len(hd.on_call(office='Paris'))",
        False,
    ),
    "module read as an attribute, except AttributeError": (
        "import tools\ntry:\n    n = len(tools.helpdesk_v2.on_call(office='Paris'))\nexcept AttributeError:\n"
        "    n = len(tools.helpdesk.on_call(office='Paris'))\nn",
        True,
    ),
    "module read as an attribute, except ImportError": (
        "import tools\ntry:\n    n = len(tools.helpdesk_v2.on_call(office='Paris'))\nexcept ImportError:\n"
        "    n = len(tools.helpdesk.on_call(office='Paris'))\nn",
        False,
    ),
}


@pytest.mark.parametrize("name", list(HANDLED))
async def test_a_missing_name_is_the_snippets_own_where_a_handler_catches_what_the_run_raises(
    box: Toolbox, name: str
) -> None:
    code, runs = HANDLED[name]
    checked = await _checked_as_it_runs(box, name, code, runs)
    if not runs:
        assert checked.error is not None
        assert [d.code for d in checked.error.diagnostics or []] == ["unknown_tool"], checked.error


async def _checked_as_it_runs(box: Toolbox, name: str, code: str, runs: bool) -> ExecuteOutcome:
    """``code`` run unchecked (it runs, or not, as ``runs`` says), then checked: let through, or refused."""
    unchecked = await box.codemode.execute(code, options={"type_check": "off"})
    assert unchecked.ok == runs, (name, unchecked.error)  # the table says what the run does
    checked = await box.codemode.execute(code)
    if runs:
        assert checked.ok and checked.value == unchecked.value, (name, checked.error)
    else:
        assert checked.error is not None and checked.error.code == "type_error", (name, checked)
    return checked


@pytest.mark.parametrize(
    ("expected", "found", "refused"),
    [
        ("list[int | str] | None", "str", True),  # a union inside brackets is one member
        ("dict[str, int | float] | None", "float", True),
        ("int", "float", False),  # an integer takes 1.0
        ("float", "int", False),  # a number takes 1
        ("int | str", "str", False),
        ("bool", "int", True),
        ("Literal['a', 'b']", "str", False),  # an enum: the value may be one of them
        ("Filter | None", "str", False),  # a class this does not read: left to the run
        ("str", "float*", True),  # ``ty``'s ``float`` of a stub (an ``int`` too)
    ],
)
def test_an_arguments_type_is_refused_only_where_no_member_of_the_parameters_takes_it(
    expected: str, found: str, refused: bool
) -> None:
    import ast

    from toolcode._typecheck._given import argument_certain

    class Declared:
        def __init__(self, result: str | None, plain: bool = True) -> None:
            self.result, self.plain = result, plain

        def __call__(self, expr: ast.expr, /) -> str | None:
            return self.result

        def plainly_typed(self, call: ast.Call, parameter: str, *, wire: bool = False) -> bool:
            return self.plain and self.result is not None  # a call of no tool's types nothing

    call = ast.parse("ns.f(x=v)", mode="eval").body
    assert isinstance(call, ast.Call)
    message = f"Argument to function `f` is incorrect: Expected `{expected}`, found `{found}`"
    given = (call, call.keywords[0])
    wrong = argument_certain("invalid-argument-type", message, given, Declared("int"))
    assert (wrong is not None) is refused, wrong
    # Only at a tool's call: a function of the snippet's own (no declared result) is left to the run,
    # and so is a parameter the tool's schema types otherwise too (under anyOf, a condition, ...).
    assert argument_certain("invalid-argument-type", message, given, Declared(None)) is None
    assert argument_certain("invalid-argument-type", message, given, Declared("int", plain=False)) is None


async def test_a_parameter_typed_otherwise_under_a_branch_or_a_condition_takes_what_the_branch_takes() -> None:
    # The stub shows one branch's type (``n: int``); a string another branch takes is no mistake.
    from toolrun import ProviderBackend

    i, s = {"type": "integer"}, {"type": "string"}
    schemas: dict[str, dict[str, Any]] = {
        "by_anyof": {"type": "object", "anyOf": [{"properties": {"n": i}}, {"properties": {"n": s}}]},
        "by_if": {
            "type": "object",
            "properties": {"k": s},
            "if": {"properties": {"k": {"const": "a"}}},
            "then": {"properties": {"n": i}},
            "else": {"properties": {"n": s}},
        },
        "by_dep": {"type": "object", "properties": {"k": s}, "dependentSchemas": {"k": {"properties": {"n": i}}}},
        "plain": {"type": "object", "properties": {"n": i}},
    }

    class Upstream:
        async def list_tools(self) -> list[dict[str, Any]]:
            out = {"type": "object", "properties": {"name": s}, "required": ["name"]}
            tools = [
                {"name": n, "description": "t", "inputSchema": v, "outputSchema": {"type": "object"}}
                for n, v in schemas.items()
            ]
            return [
                *tools,
                {"name": "src", "description": "src", "inputSchema": {"type": "object"}, "outputSchema": out},
            ]

        async def call_tool(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
            return {"name": "five"} if name == "src" else {"got": args}

        async def aclose(self) -> None:
            return None

    async with Toolbox([ProviderBackend("t", Upstream())], engine="inprocess") as box:
        for name in ("by_anyof", "by_if", "by_dep"):
            k = "k='b', " if name == "by_if" else ""
            out = await box.codemode.execute(f"from tools import t\nr = t.src()\nt.{name}({k}n=r['name'])")
            assert out.ok, (name, out.error)
        out = await box.codemode.execute("from tools import t\nr = t.src()\nt.plain(n=r['name'])")
        assert out.error is not None and out.error.code == "type_error", out.error
        assert "`n` is given a value of type `str`" in out.error.message


_STAFF = "from tools import helpdesk\no = helpdesk.list_offices()[0]\ns = o['staff']\n"
# A test of a value's type that ``ty`` does not narrow by: where it says the value is of the type
# tested, the snippet is ready for another type than the declared one (``True``: the check lets it run).
TYPE_TESTS: dict[str, tuple[str, bool]] = {
    "type(x) == C": (_STAFF + "s.upper() if type(s) == str else s", True),
    "type(x) != C, else": (_STAFF + "s if type(s) != str else s.upper()", True),
    "type(x) == C on a key read": (_STAFF + "o['staff'].upper() if type(o['staff']) == str else 1", True),
    "type(x) in (...)": (_STAFF + "s.upper() if type(s) in (str, bytes) else s", True),
    "type(x).__name__ ==": (_STAFF + "s.upper() if type(s).__name__ == 'str' else s", True),
    "hasattr(x, name)": (_STAFF + "s.upper() if hasattr(s, 'upper') else s", True),
    "hasattr(x, name) and": (_STAFF + "hasattr(s, 'upper') and s.upper()", True),
    "hasattr, a list result": (
        "from tools import helpdesk\nr = helpdesk.list_offices()\nr.get('offices') if hasattr(r, 'get') else len(r)",
        True,
    ),
    "type(x) == C on a list result": (
        "from tools import helpdesk\nr = helpdesk.list_offices()\nr['offices'] if type(r) == dict else len(r)",
        True,
    ),
    "continue unless type(x) == C": (
        "from tools import helpdesk\nout = []\nfor o in helpdesk.list_offices():\n    v = o['staff']\n"
        "    if type(v) != str:\n        continue\n    out.append(v.upper())\nout",
        True,
    ),
    "continue unless hasattr": (
        "from tools import helpdesk\nout = []\nfor o in helpdesk.list_offices():\n    v = o['staff']\n"
        "    if not hasattr(v, 'upper'):\n        continue\n    out.append(v.upper())\nout",
        True,
    ),
    "return unless type(x) == C": (
        "from tools import helpdesk\ndef f():\n    v = helpdesk.list_offices()[0]['staff']\n    if type(v) != str:\n"
        "        return v\n    return v.upper()\nf()",
        True,
    ),
    "raise if type(x) == C": (
        _STAFF + "try:\n    if type(s) == int:\n        raise ValueError('int')\n    r = s.upper()\n"
        "except ValueError:\n    r = 'int'\nr",
        True,
    ),
    "a comprehension's if": (
        "from tools import helpdesk\n[o['staff'].upper() for o in helpdesk.list_offices() if type(o['staff']) == str]",
        True,
    ),
    "return unless, through an elif": (
        "from tools import helpdesk\ndef f():\n    v = helpdesk.list_offices()[0]['staff']\n    if type(v) == int:\n"
        "        return v\n    elif type(v) == float:\n        return int(v)\n    return v.upper()\nf()",
        True,
    ),
    # Not excused: what the test does not say of the value, another value, a branch that returns nothing.
    "type test of another value": (_STAFF + "if type(s) == int:\n    o['city'] + 1", False),
    "type(x) is C, its true branch": (_STAFF + "s.upper() if type(s) is int else s", False),
    "an if that falls through": (_STAFF + "if type(s) != str:\n    s + 1\ns.upper()", False),
}


@pytest.mark.parametrize("name", list(TYPE_TESTS))
async def test_a_value_whose_type_the_snippet_tests_is_the_runs_business_where_ty_cannot_narrow(
    box: Toolbox, name: str
) -> None:
    code, runs = TYPE_TESTS[name]
    await _checked_as_it_runs(box, name, code, runs)


_CFG = "from tools import helpdesk\nclass Cfg:\n    def __init__(self):\n        self.office = 0\ncfg = Cfg()\n"
# An attribute set on an instance from outside its class: ``ty`` keeps the type the class gave it.
OUTSIDE_ATTRIBUTES: dict[str, tuple[str, bool]] = {
    "read by a method call": (_CFG + "cfg.office = 'Paris'\ncfg.office.upper()", True),
    "handed to a tool": (_CFG + "cfg.office = 'Paris'\nlen(helpdesk.on_call(office=cfg.office))", True),
    "through a name": (_CFG + "cfg.office = 'Paris'\no = cfg.office\nlen(helpdesk.on_call(office=o))", True),
    "set by a function": (
        _CFG + "def setup(c):\n    c.office = 'Tokyo'\nsetup(cfg)\nlen(helpdesk.on_call(office=cfg.office))",
        True,
    ),
    "set in the class only": (_CFG + "cfg.office.upper()", False),
}


@pytest.mark.parametrize("name", list(OUTSIDE_ATTRIBUTES))
async def test_an_attribute_set_from_outside_its_class_has_the_type_it_was_given(box: Toolbox, name: str) -> None:
    code, runs = OUTSIDE_ATTRIBUTES[name]
    await _checked_as_it_runs(box, name, code, runs)
