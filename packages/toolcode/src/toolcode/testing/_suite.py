"""The engine conformance suite: checks any :class:`~toolcode.Engine` must pass, runnable with or without pytest.

Each :class:`ConformanceCheck` runs snippets through a real :class:`~toolcode.Executor` over a
real index, runner and local backend (:class:`Harness`) and raises ``AssertionError`` when the
engine misbehaves. Categories: ``result`` (result convention), ``api`` (snippet globals),
``errors`` (error mapping), ``limits``, ``trace``, ``fanout`` (parallel calls overlap),
``engine`` (concurrency, cancellation, declarations) and ``escape`` (one check per sandbox-escape
probe from :mod:`toolcode.testing._probes`). An engine may declare a category unsupported in
``engine.info.unsupported``; those checks are then reported as *unsupported*, with the engine's
reason, never silently skipped.

No check depends on how busy the machine is: overlap is shown by calls that wait for each other
(``conf:meet``) and by the order of events, never by a wall-time figure; a limit must fire no earlier
than configured, and the time it may take beyond that only bounds a run that never stops, generously
(:data:`HANG_S`). How fast an engine is belongs in a benchmark.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from toolcode._executor import Executor, Listeners
from toolcode._limits import TRUNCATION_MARKER
from toolcode._options import ExecuteOptions, parse_options
from toolcode._services import Services
from toolcode._settings import Settings
from toolcode._types import Engine, ExecuteParams, ExecuteResult, ToolCallRecord
from toolcode.exceptions import CodeExecutionError, InvalidArgumentsError, LimitExceededError, ToolCodeError
from toolcode.testing._probes import PROBES, EscapeProbe, ProbeRun, check_probe, verify_runner
from tooldocs import InMemoryStore
from toolindex import InMemoryIndex
from toolrun import DefaultRunner, LocalBackend

__all__ = [
    "CHECKS",
    "CheckOutcome",
    "ConformanceCheck",
    "ConformanceReport",
    "Harness",
    "run_check",
    "run_conformance",
]

Status = Literal["passed", "failed", "unsupported"]
_MARKER_HEAD = TRUNCATION_MARKER.split("{", 1)[0]

HANG_S = 30.0
"""Seconds past a limit, or past a cancellation, after which a run counts as never stopped.

Far above what stopping takes on a busy machine, far below the runs these checks start (a minute):
a check fails only when the engine did not stop a run, never because the machine was slow.
"""


class Harness:
    """A real executor around the engine under test, with a small local tool set in namespace ``conf``.

    Tools: ``conf:add(a, b=1)``, ``conf:echo(value)``, ``conf:fail(message)`` (raises),
    ``conf:nap(seconds)`` (async sleep, returns seconds), ``conf:inc(previous=0, by=1)``,
    ``conf:blob(n)`` (a string of ``n`` characters), ``conf:meet(n)`` (returns ``n`` once ``n``
    calls to it are in flight at once; fails after :data:`HANG_S`); and ``other:ping()`` in
    another namespace.
    Use as an async context manager. Runs have ``type_check="off"`` unless a check asks for it:
    the suite checks what the engine does with a snippet, and the check before the run is the
    executor's, the same for every engine.

    Args:
        engine: The engine under test (not closed by the harness).
        timeout: Default timeout of each run.
    """

    def __init__(self, engine: Engine, *, timeout: float = 10.0) -> None:
        self.engine = engine
        self.index = InMemoryIndex()
        self.local = LocalBackend()
        self._timeout = timeout
        self._meeting = 0
        self._met = anyio.Event()
        self._define_tools()
        self.runner = DefaultRunner(self.index, [self.local])
        self.store = InMemoryStore(self.index, autosave=False)
        settings = Settings(limits=ExecuteOptions(timeout=timeout, type_check="off"))
        self.executor = Executor(
            Services.of(self.index, self.runner, docs=self.store, engine=engine, settings=settings)
        )

    def _define_tools(self) -> None:
        local = self.local

        @local.tool(namespace="conf")
        async def add(a: int, b: int = 1) -> int:  # pyright: ignore[reportUnusedFunction]
            """Add two integers.

            Args:
                a: The first number.
                b: The second number.
            """
            return a + b

        @local.tool(namespace="conf")
        async def echo(value: Any) -> Any:  # pyright: ignore[reportUnusedFunction]
            """Return the value unchanged."""
            return value

        @local.tool(namespace="conf")
        async def fail(message: str) -> str:  # pyright: ignore[reportUnusedFunction]
            """Always fail with the given message."""
            raise ValueError(message)

        @local.tool(namespace="conf")
        async def nap(seconds: float) -> float:  # pyright: ignore[reportUnusedFunction]
            """Sleep for a number of seconds and return it."""
            await anyio.sleep(seconds)
            return seconds

        @local.tool(namespace="conf")
        async def inc(previous: int = 0, by: int = 1) -> int:  # pyright: ignore[reportUnusedFunction]
            """Increment the previous chain result."""
            return previous + by

        @local.tool(namespace="conf")
        async def blob(n: int) -> str:  # pyright: ignore[reportUnusedFunction]
            """Return a string of n characters."""
            return "x" * n

        @local.tool(namespace="conf")
        async def meet(n: int) -> int:  # pyright: ignore[reportUnusedFunction]
            """Wait until n calls to meet are in flight at once, then return n."""
            self._meeting += 1
            try:
                if self._meeting >= n:
                    self._met.set()
                with anyio.move_on_after(HANG_S):
                    await self._met.wait()
                if not self._met.is_set():
                    raise RuntimeError(f"only {self._meeting} of {n} calls were in flight at once")
            finally:
                self._meeting -= 1
                if not self._meeting:
                    self._met = anyio.Event()
            return n

        @local.tool(namespace="other")
        async def ping() -> str:  # pyright: ignore[reportUnusedFunction]
            """Answer pong."""
            return "pong"

    async def __aenter__(self) -> Harness:
        await self.local.attach(self.index)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.runner.aclose()

    async def run(self, code: str, **params: Any) -> ExecuteResult:
        """Execute a snippet; raises what the executor raises.

        ``params`` are :class:`~toolcode.ExecuteParams` fields (``input``, ``language``) and
        :class:`~toolcode.ExecuteOptions` fields (``timeout``, ``max_tool_calls``, ...).
        """
        fields = {k: params.pop(k) for k in ("input", "language") if k in params}
        return await self.executor.execute(ExecuteParams(code=code, options=parse_options(params), **fields))

    async def fail(self, code: str, expected: type[ToolCodeError] = ToolCodeError, **params: Any) -> Any:
        """Execute a snippet that must fail with ``expected``; return the error."""
        try:
            result = await self.run(code, **params)
        except expected as e:
            return e
        raise AssertionError(f"expected {expected.__name__}, the run succeeded with value {result.value!r}")

    async def probe_run(self, code: str) -> ProbeRun:
        """Run a probe snippet: ``(value, stdout, error text)``, never raising for a snippet failure."""
        try:
            r = await self.run(code, timeout=5.0)
        except ToolCodeError as e:
            return ProbeRun(None, e.stdout, f"{type(e).__name__}: {e}")
        return ProbeRun(r.value, r.stdout, None)


CheckFn = Callable[[Harness], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ConformanceCheck:
    """One conformance check."""

    id: str
    """Stable id, ``category.name``."""
    category: str
    description: str
    fn: CheckFn = field(repr=False)


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """The result of one check against one engine."""

    check: ConformanceCheck
    status: Status
    detail: str = ""
    duration_s: float = 0.0


@dataclass(frozen=True, slots=True)
class ConformanceReport:
    """Every check's outcome for one engine."""

    engine: str
    outcomes: tuple[CheckOutcome, ...]

    @property
    def failed(self) -> list[CheckOutcome]:
        """The checks that failed."""
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def ok(self) -> bool:
        """Whether no check failed (unsupported ones are declared, not failures)."""
        return not self.failed

    def summary(self) -> str:
        """One line per check: status, id and detail."""
        return "\n".join(f"{o.status:11} {o.check.id}{': ' + o.detail if o.detail else ''}" for o in self.outcomes)


CHECKS: list[ConformanceCheck] = []


def _check(category: str, description: str) -> Callable[[CheckFn], CheckFn]:
    def register(fn: CheckFn) -> CheckFn:
        name = fn.__name__.removeprefix("_")
        CHECKS.append(ConformanceCheck(f"{category}.{name}", category, description, fn))
        return fn

    return register


# -- result convention ----------------------------------------------------------------


@_check("result", "the trailing expression's value is the result")
async def _trailing_expression(h: Harness) -> None:
    r = await h.run("a = 20\na + 22")
    assert r.value == 42, r.value


@_check("result", "__out wins over the trailing expression")
async def _out_wins(h: Harness) -> None:
    r = await h.run("__out = {'k': [1, 'two', None, True, 1.5]}\n5")
    assert r.value == {"k": [1, "two", None, True, 1.5]}, r.value


@_check("result", "__out = None is a result, not 'unset'")
async def _out_none(h: Harness) -> None:
    r = await h.run("__out = None\n5")
    assert r.value is None, r.value


@_check("result", "no __out and no trailing expression gives None")
async def _no_result(h: Harness) -> None:
    r = await h.run("x = 1\nfor i in range(3):\n    x += i\n")
    assert r.value is None, r.value


@_check("result", "the input parameter is the global 'input'")
async def _input_global(h: Harness) -> None:
    r = await h.run("input['items'][1]['name']", input={"items": [{"name": "a"}, {"name": "b"}]})
    assert r.value == "b", r.value


@_check("result", "a result that is not JSON-serialisable is a clear CodeExecutionError")
async def _not_json(h: Harness) -> None:
    e = await h.fail("{'a': {1, 2}}", CodeExecutionError)
    assert "JSON" in str(e) and "$.a" in str(e), str(e)


@_check("result", "print and println are captured in stdout, in order")
async def _print_captured(h: Harness) -> None:
    r = await h.run("print('a', 1)\nprintln('b', 2)\nprint('c', end='')\n0")
    assert r.stdout == "a 1\nb 2\nc", repr(r.stdout)


@_check("result", "tool results are plain Python data")
async def _plain_data(h: Harness) -> None:
    r = await h.run("v = run_tool('conf:echo', value={'a': [1, 2], 'b': 'x'})\n[type(v).__name__, v['a'][1], v['b']]")
    assert r.value == ["dict", 2, "x"], r.value


# -- snippet API ------------------------------------------------------------------------


@_check("api", "search_tools ranks the catalog")
async def _search_tools(h: Harness) -> None:
    r = await h.run("hits = search_tools('add two integers', limit=3)['hits']\n[h['id'] for h in hits]")
    assert r.value and r.value[0] == "conf:add", r.value
    r = await h.run("search_tools('zzqx wubble', detail='name')")
    assert r.value["hits"] == [] and r.value["hint"], r.value


@_check("api", "list_namespaces lists namespaces with counts")
async def _list_namespaces(h: Harness) -> None:
    r = await h.run("{n['name']: n['tool_count'] for n in list_namespaces()['namespaces']}")
    assert r.value == {"conf": 7, "other": 1}, r.value


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


@_check("api", "run_tool takes a dict, keywords, or both")
async def _run_tool_forms(h: Harness) -> None:
    r = await h.run(
        "[run_tool('conf:add', {'a': 1, 'b': 2}), run_tool('conf:add', a=3), run_tool('conf:add', {'a': 1}, b=9)]"
    )
    assert r.value == [3, 4, 10], r.value


@_check("api", "run_chain passes the previous result and returns every step")
async def _run_chain(h: Harness) -> None:
    code = (
        "c = run_chain([{'tool_id': 'conf:inc', 'args': {'by': 2}},"
        " {'tool_id': 'conf:inc', 'args': {'by': 3}, 'use_previous': True}])\n"
        "[c['final'], [s['value'] for s in c['steps']], c['aborted']]"
    )
    r = await h.run(code)
    assert r.value == [5, [2, 5], False], r.value


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
    code = (
        "from tools import conf\n"
        "import tools.other as o\n"
        "import tools.conf\n"
        "from tools.conf import echo\n"
        "[conf.add(a=1, b=2), o.ping(), tools.conf.add(a=5), echo(value='x')]"
    )
    r = await h.run(code)
    assert r.value == [3, "pong", 6, "x"], r.value
    assert [c.tool_id for c in r.tool_calls] == ["conf:add", "other:ping", "conf:add", "conf:echo"], r.tool_calls


@_check("api", "a module function's _async form is awaitable, and gathered calls overlap")
async def _namespace_modules_async(h: Harness) -> None:
    code = "import asyncio\nfrom tools import conf\nawait asyncio.gather(*[conf.meet_async(n=3) for _ in range(3)])"
    r = await h.run(code, timeout=2 * HANG_S)
    assert r.value == [3, 3, 3], r.value


@_check("api", "a module function refuses positional arguments with a ToolError, and only visible modules import")
async def _namespace_modules_errors(h: Harness) -> None:
    e = await h.fail("from tools import conf\nconf.add(1, 2)", CodeExecutionError)
    assert e.exc_type == "ToolError" and "keyword arguments only" in str(e), str(e)
    r = await h.run(
        "try:\n    from tools import other\n    seen = True\nexcept ImportError:\n    seen = False\nseen",
        allowed_namespaces=["conf"],
    )
    assert r.value is False, r.value


# -- errors ---------------------------------------------------------------------------


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


@_check("errors", "a wrong argument to a snippet global is a ToolError the snippet can catch")
async def _invalid_arguments_caught(h: Harness) -> None:
    code = (
        "out = []\n"
        "for call in (lambda: search_tools('add', limit=float('inf')), lambda: list_tools(limit=0),\n"
        "             lambda: run_tool(42), lambda: run_tools('conf:add'), lambda: run_chain({'x': 1})):\n"
        "    try:\n        call()\n        out.append('no error')\n"
        "    except ToolError as e:\n        out.append(error_info(e)['code'])\n"
        "out"
    )
    r = await h.run(code)
    assert r.value == ["invalid_arguments"] * 5 and r.tool_calls == (), r.value


@_check("errors", "error_info gives the code and the tool id of a caught failure")
async def _error_info(h: Harness) -> None:
    code = (
        "try:\n    run_tool('conf:fail', message='disk on fire')\nexcept ToolError as e:\n    a = error_info(e)\n"
        "try:\n    run_tool('conf:nope')\nexcept ToolError as e:\n    b = error_info(e)\n"
        "[a['code'], a['tool_id'], 'disk on fire' in a['message'], b['code'], b['tool_id']]"
    )
    r = await h.run(code)
    assert r.value == ["tool_error", "conf:fail", True, "unknown_tool", "conf:nope"], r.value


# -- limits ---------------------------------------------------------------------------


@_check("limits", "a CPU loop is stopped by the timeout, not before it, and the engine keeps working")
async def _timeout_cpu(h: Harness) -> None:
    t0 = time.perf_counter()
    with anyio.fail_after(1.0 + HANG_S):
        e = await h.fail("while True:\n    pass", LimitExceededError, timeout=1.0)
    elapsed = time.perf_counter() - t0
    assert e.limit == "timeout" and e.configured == 1.0, str(e)
    assert elapsed >= 1.0, f"stopped after {elapsed:.2f}s, before the 1 s timeout"
    assert (await h.run("1 + 1")).value == 2


@_check("limits", "a slow tool call is stopped by the timeout, not before it, and shows in the trace")
async def _timeout_tool(h: Harness) -> None:
    # The call would take a minute: ending in the time the check allows shows the timeout cut it. A busy
    # machine may spend the whole timeout before the snippet reaches the call; then the check tries again
    # with twice the timeout, up to 8 s (an engine that never records the cut call fails after 15 s).
    timeout = 0.5
    while True:
        t0 = time.perf_counter()
        with anyio.fail_after(timeout + HANG_S):
            e = await h.fail("run_tool('conf:nap', seconds=60)", LimitExceededError, timeout=timeout)
        elapsed = time.perf_counter() - t0
        assert e.limit == "timeout" and elapsed >= timeout, (str(e), elapsed)
        if e.tool_calls or timeout >= 8:
            break
        timeout *= 2
    assert [r.tool_id for r in e.tool_calls] == ["conf:nap"] and e.tool_calls[0].error is not None, e.tool_calls


@_check("limits", "max_tool_calls stops the run, reporting configured and reached")
async def _max_tool_calls(h: Harness) -> None:
    e = await h.fail("for i in range(10):\n    run_tool('conf:add', a=i)", LimitExceededError, max_tool_calls=3)
    assert (e.limit, e.configured, e.reached) == ("max_tool_calls", 3, 4), str(e)
    assert len(e.tool_calls) == 3 and e.result is not None and e.result.limits.stopped_by == "max_tool_calls"


@_check("limits", "catching the limit error inside the snippet does not get around it")
async def _max_tool_calls_caught(h: Harness) -> None:
    code = (
        "n = 0\nfor i in range(10):\n    try:\n        run_tool('conf:add', a=i)\n        n += 1\n"
        "    except Exception:\n        pass\nn"
    )
    e = await h.fail(code, LimitExceededError, max_tool_calls=2)
    assert e.limit == "max_tool_calls", str(e)


@_check("limits", "run_tools counts every call")
async def _max_tool_calls_fanout(h: Harness) -> None:
    e = await h.fail("run_tools([('conf:add', {'a': i}) for i in range(5)])", LimitExceededError, max_tool_calls=4)
    assert e.limit == "max_tool_calls" and e.reached == 5, str(e)


@_check("limits", "max_chain_steps refuses a longer chain")
async def _max_chain_steps(h: Harness) -> None:
    steps = "[{'tool_id': 'conf:inc', 'args': {}}] * 3"
    e = await h.fail(f"run_chain({steps})", LimitExceededError, max_chain_steps=2)
    assert (e.limit, e.configured, e.reached) == ("max_chain_steps", 2, 3), str(e)


@_check("limits", "stdout beyond the output budget is truncated with a marker")
async def _stdout_truncated(h: Harness) -> None:
    r = await h.run("for i in range(2000):\n    print('line', i, 'x' * 50)\n1", max_output_chars=2000)
    assert len(r.stdout) < 2000 + 300 and _MARKER_HEAD in r.stdout, len(r.stdout)
    assert "stdout" in r.limits.truncated and r.value == 1


@_check("limits", "an over-long result is truncated into a string with a marker")
async def _result_truncated(h: Harness) -> None:
    r = await h.run("['y' * 100 for _ in range(500)]", max_output_chars=1000)
    assert isinstance(r.value, str) and _MARKER_HEAD in r.value and len(r.value) < 1300, repr(r.value)[:200]
    assert "value" in r.limits.truncated


@_check("limits", "large tool results in the trace are truncated, the records kept")
async def _trace_truncated(h: Harness) -> None:
    r = await h.run("for i in range(3):\n    run_tool('conf:blob', n=5000)\n'done'", max_output_chars=1000)
    assert len(r.tool_calls) == 3 and r.value == "done"
    assert all(isinstance(t.structured, str) and _MARKER_HEAD in t.structured for t in r.tool_calls)
    assert "trace" in r.limits.truncated


@_check("limits", "deep recursion is stopped and the engine keeps working")
async def _recursion(h: Harness) -> None:
    e = await h.fail("def f(n):\n    return f(n + 1)\nf(0)", ToolCodeError)
    assert isinstance(e, LimitExceededError | CodeExecutionError), type(e)
    if isinstance(e, CodeExecutionError):
        assert e.exc_type == "RecursionError", e.exc_type
    assert (await h.run("2 * 21")).value == 42


@_check("limits", "the limits report lists the limits in force and the calls made")
async def _limits_report(h: Harness) -> None:
    r = await h.run("run_tool('conf:add', a=1)", timeout=7.0, max_tool_calls=9)
    assert r.limits.applied["timeout"] == 7.0 and r.limits.applied["max_tool_calls"] == 9, r.limits
    assert r.limits.tool_calls == 1 and r.limits.stopped_by is None


# -- trace ----------------------------------------------------------------------------


@_check("trace", "one record per call, in order, with args, result, backend kind and errors")
async def _trace_records(h: Harness) -> None:
    code = (
        "run_tool('conf:add', a=1, b=2)\n"
        "try:\n    run_tool('conf:fail', message='nope')\nexcept ToolError:\n    pass\n"
        "run_tool('conf:echo', value=[1])\n"
    )
    r = await h.run(code)
    t = r.tool_calls
    assert [x.tool_id for x in t] == ["conf:add", "conf:fail", "conf:echo"], t
    assert dict(t[0].args) == {"a": 1, "b": 2} and t[0].structured == 3 and t[0].backend_kind == "local"
    assert t[0].error is None and t[0].error_op is None and t[0].duration_ms >= 0
    assert t[1].error is not None and "nope" in t[1].error and t[1].error_op == "call" and t[1].structured is None
    assert t[2].structured == [1]


@_check("trace", "chain steps each get a record with their own duration")
async def _trace_chain(h: Harness) -> None:
    steps = "[{'tool_id': 'conf:nap', 'args': {'seconds': 0.05}}, {'tool_id': 'conf:nap', 'args': {'seconds': 0.15}}]"
    r = await h.run(f"run_chain({steps})['final']")
    t = r.tool_calls
    assert [x.tool_id for x in t] == ["conf:nap", "conf:nap"] and r.value == 0.15, t
    # Each step's own interval: at least its nap, and the second starts when the first has ended (the
    # chain's total on the first step, or one start for both, would break this however slow the machine).
    spans = [(x.started_ms, x.duration_ms) for x in t]
    assert t[0].duration_ms >= 40 and t[1].duration_ms >= 140, spans
    assert t[1].started_ms >= t[0].started_ms + t[0].duration_ms - 1, spans


@_check("trace", "parallel calls are traced in call order, each with its own args")
async def _trace_parallel(h: Harness) -> None:
    r = await h.run("run_tools([('conf:nap', {'seconds': 0.01 * (5 - i)}) for i in range(5)])")
    assert [dict(x.args)["seconds"] for x in r.tool_calls] == [0.05, 0.04, 0.03, 0.02, 0.01]
    assert r.value == [0.05, 0.04, 0.03, 0.02, 0.01]


@_check("trace", "on_tool_call sees every call as it completes")
async def _on_tool_call(h: Harness) -> None:
    seen: list[str] = []

    async def listener(rec: ToolCallRecord) -> None:
        seen.append(rec.tool_id)

    r = await h.executor.execute(
        ExecuteParams(code="run_tool('conf:add', a=1)\nrun_tool('conf:echo', value=2)"), Listeners(listener)
    )
    assert seen == ["conf:add", "conf:echo"] == [x.tool_id for x in r.tool_calls], seen


# -- fan-out --------------------------------------------------------------------------


# Overlap is shown by calls that each wait for all the others (conf:meet): run one at a time, the
# first never returns. The wall time of a fan-out is a benchmark's figure, not a check's.


@_check("fanout", "run_tools calls overlap in time")
async def _run_tools_overlap(h: Harness) -> None:
    r = await h.run("run_tools([('conf:meet', {'n': 10})] * 10)", timeout=2 * HANG_S)
    assert r.value == [10] * 10 and len(r.tool_calls) == 10, r.value


@_check("fanout", "awaitable calls with asyncio.gather overlap in time")
async def _gather_overlap(h: Harness) -> None:
    code = "import asyncio\nawait asyncio.gather(*[run_tool_async('conf:meet', n=10) for _ in range(10)])"
    r = await h.run(code, timeout=2 * HANG_S)
    assert r.value == [10] * 10 and len(r.tool_calls) == 10, r.value


@_check("fanout", "asyncio.sleep and awaitable calls interleave in gathered coroutines")
async def _gather_with_sleep(h: Harness) -> None:
    # Every sleep starts before any ends, and then every call is in flight at once.
    code = (
        "import asyncio\nlog = []\n"
        "async def one(i):\n    log.append(f'sleep {i}')\n    await asyncio.sleep(0.2)\n"
        "    log.append(f'woke {i}')\n    return [i, await run_tool_async('conf:meet', n=5)]\n"
        "[await asyncio.gather(*[one(i) for i in range(5)]), log]"
    )
    r = await h.run(code, timeout=2 * HANG_S)
    values, log = r.value
    assert values == [[i, 5] for i in range(5)] and len(r.tool_calls) == 5, r.value
    assert sorted(log[:5]) == [f"sleep {i}" for i in range(5)], f"the sleeps did not overlap: {log}"


@_check("fanout", "one failing call in run_tools raises ToolError after the others complete")
async def _run_tools_error(h: Harness) -> None:
    e = await h.fail("run_tools([('conf:add', {'a': 1}), ('conf:fail', {'message': 'bad'})])", CodeExecutionError)
    assert e.exc_type == "ToolError" and "bad" in str(e) and len(e.tool_calls) == 2


# -- engine ---------------------------------------------------------------------------


@_check("engine", "concurrent runs on one engine stay separate")
async def _concurrent_runs(h: Harness) -> None:
    results: dict[int, ExecuteResult] = {}

    async def one(i: int) -> None:
        results[i] = await h.run(
            f"print({i})\nrun_tool('conf:nap', seconds=0.05)\nrun_tool('conf:add', a={i})", input=i
        )

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(one, i)
    for i, r in results.items():
        assert r.value == i + 1 and r.stdout == f"{i}\n" and len(r.tool_calls) == 2, (i, r)


@_check("engine", "cancelling a run returns promptly and the engine keeps working")
async def _cancellation(h: Harness) -> None:
    # Each run would take twice HANG_S: returning within HANG_S of the cancellation shows it stopped the run.
    for code in (f"run_tool('conf:nap', seconds={2 * HANG_S})", "while True:\n    pass"):
        t0 = time.perf_counter()
        with anyio.move_on_after(0.3):
            await h.run(code, timeout=2 * HANG_S)
        elapsed = time.perf_counter() - t0
        assert elapsed < 0.3 + HANG_S, f"cancelled after 0.3 s, the run returned after {elapsed:.1f} s: {code!r}"
    assert (await h.run("3")).value == 3


@_check("engine", "the engine's declarations are consistent")
async def _declarations(h: Harness) -> None:
    info = h.engine.info
    assert info.name and isinstance(info.sandboxed, bool)
    if info.sandboxed:
        assert "escape" not in info.unsupported, "a sandboxed engine may not declare the escape probes unsupported"
    for category, reason in info.unsupported.items():
        assert reason.strip(), f"unsupported category {category!r} needs a reason"


# -- escape probes --------------------------------------------------------------------


@_check("escape", "the probe runner surfaces value, stdout and errors (so no probe passes vacuously)")
async def _probe_runner(h: Harness) -> None:
    await verify_runner(h.probe_run)


def _probe_check(probe: EscapeProbe) -> CheckFn:
    async def check(h: Harness) -> None:
        outcome = await check_probe(h.probe_run, probe)
        assert outcome.contained, str(outcome)

    check.__name__ = probe.id
    return check


CHECKS.extend(ConformanceCheck(f"escape.{p.id}", "escape", f"{p.title} ({p.source})", _probe_check(p)) for p in PROBES)


async def run_check(engine: Engine, check: ConformanceCheck) -> CheckOutcome:
    """Run one check against an engine.

    Args:
        engine: The engine under test.
        check: The check.

    Returns:
        ``passed``, ``failed`` (with the assertion text) or ``unsupported`` (with the engine's reason).
    """
    reason = engine.info.unsupported.get(check.category)
    if reason is not None:
        return CheckOutcome(check, "unsupported", f"declared by engine {engine.info.name!r}: {reason}")
    t0 = time.perf_counter()
    try:
        async with Harness(engine) as h:
            await check.fn(h)
    except AssertionError as e:
        return CheckOutcome(check, "failed", str(e) or "assertion failed", time.perf_counter() - t0)
    except Exception as e:  # any other failure of the engine is a failed check, reported with its type
        return CheckOutcome(check, "failed", f"{type(e).__name__}: {e}", time.perf_counter() - t0)
    return CheckOutcome(check, "passed", "", time.perf_counter() - t0)


async def run_conformance(
    engine: Engine, *, categories: Sequence[str] | None = None, checks: Sequence[ConformanceCheck] | None = None
) -> ConformanceReport:
    """Run the conformance suite against an engine, one check after another.

    Args:
        engine: The engine under test (not closed).
        categories: Only these categories (default: all).
        checks: Only these checks (default: :data:`CHECKS`).

    Returns:
        The report; ``report.ok`` is ``False`` when any check failed.
    """
    selected = [c for c in (checks or CHECKS) if categories is None or c.category in categories]
    outcomes = [await run_check(engine, c) for c in selected]
    return ConformanceReport(engine.info.name, tuple(outcomes))
