"""Conformance checks of what a snippet sees: the result convention, the snippet API and error mapping."""

from __future__ import annotations

from functools import partial

from toolcode.exceptions import CodeExecutionError, InvalidArgumentsError
from toolcode.testing._harness import HANG_S, ConformanceCheck, Harness, collect, value_check

__all__ = ["CHECKS"]

CHECKS: list[ConformanceCheck] = []
_check = partial(collect, CHECKS)
_value = partial(value_check, CHECKS)

_value("result.trailing_expression", "the trailing expression's value is the result")("a = 20\na + 22", 42)
_value("result.out_wins", "__out wins over the trailing expression")(
    "__out = {'k': [1, 'two', None, True, 1.5]}\n5", {"k": [1, "two", None, True, 1.5]}
)
_value("result.out_none", "__out = None is a result, not 'unset'")("__out = None\n5", None)
_value("result.no_result", "no __out and no trailing expression gives None")(
    "x = 1\nfor i in range(3):\n    x += i\n", None
)
_value("result.input_global", "the input parameter is the global 'input'")(
    "input['items'][1]['name']", "b", input={"items": [{"name": "a"}, {"name": "b"}]}
)


@_check("result", "a result that is not JSON-serialisable is a clear CodeExecutionError")
async def _not_json(h: Harness) -> None:
    e = await h.fail("{'a': {1, 2}}", CodeExecutionError)
    assert "JSON" in str(e) and "$.a" in str(e), str(e)


@_check("result", "print and println are captured in stdout, in order")
async def _print_captured(h: Harness) -> None:
    r = await h.run("print('a', 1)\nprintln('b', 2)\nprint('c', end='')\n0")
    assert r.stdout == "a 1\nb 2\nc", repr(r.stdout)


_value("result.plain_data", "tool results are plain Python data")(
    "v = run_tool('conf:echo', value={'a': [1, 2], 'b': 'x'})\n[type(v).__name__, v['a'][1], v['b']]", ["dict", 2, "x"]
)


@_check("api", "search_tools ranks the catalog")
async def _search_tools(h: Harness) -> None:
    r = await h.run("hits = search_tools('add two integers', limit=3)['hits']\n[h['id'] for h in hits]")
    assert r.value and r.value[0] == "conf:add", r.value
    r = await h.run("search_tools('zzqx wubble', detail='name')")
    assert r.value["hits"] == [] and r.value["hint"], r.value


_value("api.list_namespaces", "list_namespaces lists namespaces with counts")(
    "{n['name']: n['tool_count'] for n in list_namespaces()['namespaces']}", {"conf": 7, "other": 1}
)


@_check("api", "describe_tool returns the tool's documentation")
async def _describe_tool(h: Harness) -> None:
    r = await h.run("d = describe_tool('conf:add')\ns = describe_tool('conf:add', level='summary')\n[d, s]")
    doc, summary = r.value
    assert doc["docs"][0]["id"] == "conf:add" and "a: int" in doc["text"], doc
    assert "def " not in summary["text"] and "Add two integers." in summary["text"], summary
    r = await h.run("describe_tool(['conf:add', 'conf:nope'])")
    assert [d["id"] for d in r.value["docs"]] == ["conf:add"] and r.value["errors"][0]["code"] == "unknown_tool"
    e = await h.fail("describe_tool('conf:add', level='everything')", CodeExecutionError)
    assert e.exc_type == "ToolError" and e.code.value == "invalid_arguments" and "level" in e.message, str(e)


@_check("api", "list_tool_examples returns the store's examples")
async def _list_tool_examples(h: Harness) -> None:
    h.store.add_example("conf:add", {"title": "one plus two", "args": {"a": 1, "b": 2}})
    r = await h.run("[(e['title'], e['args']) for e in list_tool_examples('conf:add', max=2)['examples']]")
    assert r.value == [["one plus two", {"a": 1, "b": 2}]], r.value


_value("api.run_tool_forms", "run_tool takes a dict, keywords, or both")(
    "[run_tool('conf:add', {'a': 1, 'b': 2}), run_tool('conf:add', a=3), run_tool('conf:add', {'a': 1}, b=9)]",
    [3, 4, 10],
)
_value("api.run_chain", "run_chain passes the previous result and returns every step")(
    "c = run_chain([{'tool_id': 'conf:inc', 'args': {'by': 2}},"
    " {'tool_id': 'conf:inc', 'args': {'by': 3}, 'use_previous': True}])\n"
    "[c['final'], [s['value'] for s in c['steps']], c['aborted']]",
    [5, [2, 5], False],
)


@_check("api", "allowed_namespaces hides other namespaces from search and run")
async def _allowed_namespaces(h: Harness) -> None:
    r = await h.run("[h['id'] for h in search_tools('pong ping answer')['hits']]", allowed_namespaces=["conf"])
    assert all(i.startswith("conf:") for i in r.value), r.value
    r = await h.run("[t['id'] for t in list_tools()['tools']]", allowed_namespaces=["conf"])
    assert r.value and all(i.startswith("conf:") for i in r.value), r.value
    e = await h.fail("run_tool('other:ping')", CodeExecutionError, allowed_namespaces=["conf"])
    assert e.exc_type == "ToolError" and e.code.value == "unknown_tool" and "other:ping" in str(e), str(e)


@_check("api", "each namespace is a module of the tools package, its tools functions taking keywords")
async def _namespace_modules(h: Harness) -> None:
    r = await h.run(
        "from tools import conf\n"
        "import tools.other as o\n"
        "import tools.conf\n"
        "from tools.conf import echo\n"
        "[conf.add(a=1, b=2), o.ping(), tools.conf.add(a=5), echo(value='x')]"
    )
    assert r.value == [3, "pong", 6, "x"], r.value
    assert [c.tool_id for c in r.tool_calls] == ["conf:add", "other:ping", "conf:add", "conf:echo"], r.tool_calls


_value("api.namespace_modules_async", "a module function's _async form is awaitable, and gathered calls overlap")(
    "import asyncio\nfrom tools import conf\nawait asyncio.gather(*[conf.meet_async(n=3) for _ in range(3)])",
    [3, 3, 3],
    timeout=2 * HANG_S,
)


@_check("api", "a module function refuses positional arguments with a ToolError, and only visible modules import")
async def _namespace_modules_errors(h: Harness) -> None:
    e = await h.fail("from tools import conf\nconf.add(1, 2)", CodeExecutionError)
    assert e.exc_type == "ToolError" and "keyword arguments only" in str(e), str(e)
    r = await h.run(
        "try:\n    from tools import other\n    seen = True\nexcept ImportError:\n    seen = False\nseen",
        allowed_namespaces=["conf"],
    )
    assert r.value is False, r.value


@_check("errors", "a syntax error is a CodeExecutionError with its line")
async def _syntax_error(h: Harness) -> None:
    e = await h.fail("x = 1\ny = (\n", CodeExecutionError)
    assert e.exc_type == "SyntaxError" and e.line in (2, 3), (e.exc_type, e.line)


@_check("errors", "a runtime error names its type, message, line and column in the snippet")
async def _runtime_error(h: Harness) -> None:
    e = await h.fail("a = 1\nb = 0\nc = a / b\n", CodeExecutionError)
    assert e.exc_type == "ZeroDivisionError" and e.line == 3 and e.column is not None, (e.exc_type, e.line, e.column)


@_check("errors", "a failing tool raises ToolError inside the snippet, where it can be caught")
async def _tool_error_caught(h: Harness) -> None:
    code = "try:\n    run_tool('conf:fail', message='disk on fire')\nexcept ToolError as e:\n    m = str(e)\nm"
    r = await h.run(code)
    assert "conf:fail" in r.value and "disk on fire" in r.value, r.value
    assert r.tool_calls[0].error is not None and "disk on fire" in r.tool_calls[0].error


@_check("errors", "an uncaught tool failure names the tool id and the tool's message")
async def _tool_error_uncaught(h: Harness) -> None:
    e = await h.fail("x = 1\nrun_tool('conf:fail', message='disk on fire')", CodeExecutionError)
    assert e.exc_type == "ToolError" and e.tool_id == "conf:fail" and "disk on fire" in e.message, str(e)
    assert e.line == 2, e.line


@_check("errors", "an unknown tool id suggests the closest ids")
async def _unknown_tool(h: Harness) -> None:
    e = await h.fail("run_tool('conf:ad', a=1)", CodeExecutionError)
    assert "conf:add" in str(e) and e.code.value == "unknown_tool", str(e)


@_check("errors", "a failed run keeps its stdout and the trace up to the failure")
async def _partial_result(h: Harness) -> None:
    e = await h.fail("print('before')\nrun_tool('conf:add', a=1)\nraise ValueError('late')", CodeExecutionError)
    assert e.exc_type == "ValueError" and e.stdout == "before\n", (e.exc_type, e.stdout)
    assert [r.tool_id for r in e.tool_calls] == ["conf:add"], e.tool_calls


@_check("errors", "invalid parameters are an InvalidArgumentsError naming the field")
async def _configuration(h: Harness) -> None:
    for params, fld in (
        ({"timeout": -1}, "options.timeout"),
        ({"language": "js"}, "language"),
        ({"max_tool_calls": -1}, "options.max_tool_calls"),
        ({"input": {"a": {1, 2}}}, "input"),
    ):
        e = await h.fail("1", InvalidArgumentsError, **params)
        assert e.field == fld and e.code.value == "invalid_arguments", (e.field, fld)


_value("errors.invalid_arguments_caught", "a wrong argument to a snippet global is a ToolError the snippet can catch")(
    "out = []\n"
    "for call in (lambda: search_tools('add', limit=float('inf')), lambda: list_tools(limit=0),\n"
    "             lambda: run_tool(42), lambda: run_tools('conf:add'), lambda: run_chain({'x': 1})):\n"
    "    try:\n        call()\n        out.append('no error')\n"
    "    except ToolError as e:\n        out.append(tool_error_info(e)['code'])\n"
    "out",
    ["invalid_arguments"] * 5,
    calls=0,
)
_value("errors.tool_error_info", "tool_error_info gives the code and the tool id of a caught failure")(
    "try:\n    run_tool('conf:fail', message='disk on fire')\nexcept ToolError as e:\n    a = tool_error_info(e)\n"
    "try:\n    run_tool('conf:nope')\nexcept ToolError as e:\n    b = tool_error_info(e)\n"
    "[a['code'], a['tool_id'], 'disk on fire' in a['message'], b['code'], b['tool_id']]",
    ["tool_error", "conf:fail", True, "unknown_tool", "conf:nope"],
)
