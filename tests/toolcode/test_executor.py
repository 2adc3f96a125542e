"""Executor: configuration, discovery, error mapping, partial results, listeners, public API."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import pytest
from _toolcode_support import executor_of, make_runner

import toolcode
from toolcode import (
    DEFAULT_OPTIONS,
    CodeExecutionError,
    ConfigurationError,
    EngineError,
    EngineInfo,
    ExecuteOptions,
    ExecuteParams,
    ExecuteResult,
    Executor,
    InvalidArgumentsError,
    LimitExceededError,
    Listeners,
    MontyEngine,
    ToolCallRecord,
    ToolCodeError,
    Tools,
    UnsafeInProcessEngine,
    available_engines,
    load_engine,
)
from toolcode import exceptions as exc_module
from toolcode._options import parse_options
from toolcode.exceptions import TypeCheckError, limit_text

pytestmark = pytest.mark.anyio


@pytest.fixture
async def parts() -> AsyncIterator[tuple[Any, Any, Any]]:
    index, store, runner = await make_runner()
    yield index, store, runner
    await runner.aclose()


@pytest.fixture
async def executor(parts: tuple[Any, Any, Any]) -> AsyncIterator[Executor]:
    index, store, runner = parts
    async with executor_of(index=index, store=store, runner=runner, engine="inprocess") as ex:
        yield ex


def test_public_api_is_exported() -> None:
    public = {n for n in dir(toolcode) if not n.startswith("_") and not isinstance(getattr(toolcode, n), ModuleType)}
    assert set(toolcode.__all__) == public


def test_exception_tree() -> None:
    errors = [n for n in exc_module.__all__ if isinstance(getattr(exc_module, n), type) and n != "ErrorCode"]
    assert "ToolError" in errors and "InvalidArgumentsError" in errors
    for name in errors:
        cls = getattr(exc_module, name)
        assert issubclass(cls, ToolCodeError), name
        assert name in (exc_module.__doc__ or ""), f"{name} is not drawn in the tree"
    assert issubclass(ConfigurationError, ValueError)
    assert issubclass(toolcode.ToolError, RuntimeError)


def test_every_error_class_has_a_documented_code() -> None:
    from toolcode import ErrorCode
    from toolcode.exceptions import CodeExecutionError, EngineError, InvalidArgumentsError

    samples: list[ToolCodeError] = [
        CodeExecutionError("SyntaxError", "bad"),
        CodeExecutionError("ValueError", "bad"),
        CodeExecutionError("ToolError", "bad", tool_id="a:b", tool_code=ErrorCode.UNKNOWN_TOOL),
        InvalidArgumentsError("limit", "bad"),
        ConfigurationError("engine", "bad"),
        LimitExceededError("timeout", 1),
        LimitExceededError("max_tool_calls", 1),
        LimitExceededError("max_memory", 1),
        EngineError("monty", "bad"),
        toolcode.ToolError("a:b", "bad", "resolve"),
    ]
    codes = [e.code.value for e in samples]
    assert codes == [
        "syntax_error", "runtime_error", "unknown_tool", "invalid_arguments", "config_error", "timeout",
        "tool_call_limit", "memory_limit", "engine_error", "unknown_tool",
    ]  # fmt: skip
    assert all(set(e.to_error()) == {"code", "message", "line", "column", "tool_id", "hint"} for e in samples)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timeout", -1),
        ("timeout", float("inf")),
        ("max_tool_calls", 1.5),
        ("max_chain_steps", -1),
        ("max_output_chars", "lots"),
        ("allowed_namespaces", "t"),
        ("trace", "everything"),
        ("colour", "red"),
    ],
)
def test_option_errors_name_the_field(field: str, value: Any) -> None:
    with pytest.raises(InvalidArgumentsError) as ei:
        parse_options({field: value})
    assert ei.value.field == f"options.{field}" and ei.value.code.value == "invalid_arguments"
    assert repr(value) not in str(ei.value) or len(repr(value)) < 8  # the field is named; big values never echoed


def test_zero_or_explicit_null_switches_a_limit_off_and_unset_inherits() -> None:
    off = parse_options({"timeout": 0, "max_tool_calls": None, "max_output_chars": 0})
    r = off.resolve(ExecuteOptions(timeout=5, max_tool_calls=7))
    assert r.timeout == math.inf and r.max_tool_calls > 10**15 and r.max_output_chars > 10**15
    assert r.applied()["timeout"] == 0 and r.applied()["max_chain_steps"] == 50
    inherited = parse_options({}).resolve(ExecuteOptions(timeout=5))
    assert inherited.timeout == 5.0 and inherited.max_tool_calls == 200  # built-in defaults stay bounded
    assert DEFAULT_OPTIONS.resolve().timeout == 30.0
    beneath = ExecuteOptions(type_check="off", speculate=False, allowed_namespaces=("a",), trace="summary")
    r = parse_options({"trace": "full"}).resolve(beneath)
    assert (r.trace, r.type_check, r.speculate, r.allowed_namespaces) == ("full", "off", False, ("a",))
    r = parse_options({"type_check": "strict", "speculate": True}).resolve(beneath)
    assert (r.trace, r.type_check, r.speculate) == ("summary", "strict", True)
    r = parse_options({}).resolve()
    assert (r.trace, r.type_check, r.speculate, r.allowed_namespaces) == ("none", "strict", True, None)


def test_ceilings_refuse_more_than_the_operator_allows() -> None:
    ceilings = ExecuteOptions(timeout=60, max_tool_calls=100, max_output_chars=1_000_000)
    assert parse_options({"timeout": 10}).within(ceilings).timeout == 10
    for asked in ({"timeout": 61}, {"timeout": 0}, {"max_tool_calls": None}):
        with pytest.raises(InvalidArgumentsError, match="maximum"):
            parse_options(asked).within(ceilings)
    # Readable amounts, not 1e+06.
    with pytest.raises(InvalidArgumentsError) as ei:
        parse_options({"max_output_chars": 2_000_000}).within(ceilings)
    assert ei.value.reason == "2,000,000 is above this server's maximum of 1,000,000"
    with pytest.raises(InvalidArgumentsError) as ei:
        parse_options({"timeout": 61}).within(ceilings)
    assert ei.value.reason == "61 s is above this server's maximum of 60 s"


def test_limit_values_read_with_their_units() -> None:
    assert limit_text("max_memory", 256 * 1024 * 1024) == "256 MiB"
    assert limit_text("max_memory", 1_000_050_000) == "953.7 MiB"
    assert limit_text("max_memory", 10**10) == "9.3 GiB" and limit_text("max_memory", 512) == "512 B"
    assert limit_text("timeout", 30.0) == "30 s" and limit_text("timeout", 0.5) == "0.5 s"
    assert limit_text("max_output_chars", 50_000) == "50,000" and limit_text("max_tool_calls", 3) == "3"
    err = LimitExceededError("max_memory", 268_435_456, 1_000_050_000)
    assert str(err) == "limit max_memory exceeded: configured 256 MiB, reached 953.7 MiB"


async def test_params_errors_name_the_field(executor: Executor) -> None:
    cases: list[tuple[ExecuteParams, str]] = [
        (ExecuteParams(code="1", language="ruby"), "language"),
        (ExecuteParams(code=b"1"), "code"),  # type: ignore[arg-type]
        (ExecuteParams(code="1", input={1, 2}), "input"),
        (ExecuteParams(code="1", options={"timeout": 1}), "options"),  # type: ignore[arg-type]
    ]
    for params, field in cases:
        with pytest.raises(InvalidArgumentsError) as ei:
            await executor.execute(params)
        assert ei.value.field == field, (field, ei.value)


async def test_any_json_value_is_an_input(executor: Executor) -> None:
    for value in ([1, 2], "text", 3.5, None, {"a": [True, None]}):
        r = await executor.execute(ExecuteParams(code="input", input=value))
        assert r.value == value


async def test_an_engine_that_is_not_an_engine_is_refused(parts: tuple[Any, Any, Any]) -> None:
    index, store, runner = parts
    with pytest.raises(ConfigurationError) as ei:
        executor_of(index=index, store=store, runner=runner, engine=object())  # type: ignore[arg-type]
    assert ei.value.field == "engine" and "object" in str(ei.value)


def test_engine_discovery() -> None:
    engines = available_engines()
    assert engines["monty"] == "toolcode.engines.monty:MontyEngine"
    assert engines["inprocess"] == "toolcode.engines.inprocess:UnsafeInProcessEngine"
    assert isinstance(load_engine("monty"), MontyEngine)
    assert isinstance(load_engine("inprocess"), UnsafeInProcessEngine)
    with pytest.raises(ConfigurationError) as ei:
        load_engine("nope")
    assert ei.value.field == "engine" and "monty" in str(ei.value)


def test_entry_points_point_at_the_engines() -> None:
    from importlib.metadata import entry_points

    eps = {ep.name: ep.load() for ep in entry_points(group="toolcode.engines")}
    assert eps["monty"] is MontyEngine and eps["inprocess"] is UnsafeInProcessEngine


async def test_default_engine_is_monty(parts: tuple[Any, Any, Any]) -> None:
    index, store, runner = parts
    async with executor_of(index=index, store=store, runner=runner) as ex:
        assert ex.engine.info.name == "monty" and ex.engine.info.sandboxed
        assert (await ex.execute(ExecuteParams(code="run_tool('t:add', a=1)"))).value == 2


async def test_error_carries_partial_result(executor: Executor) -> None:
    with pytest.raises(CodeExecutionError) as ei:
        await executor.execute(ExecuteParams(code="print('hi')\nrun_tool('t:add', a=2)\n1/0"))
    err = ei.value
    assert (err.line, err.exc_type) == (3, "ZeroDivisionError")
    assert err.stdout == "hi\n" and [r.tool_id for r in err.tool_calls] == ["t:add"]
    assert err.result is not None and err.result.value is None and err.result.limits.tool_calls == 1


async def test_listener_failure_does_not_change_the_run(executor: Executor) -> None:
    async def broken(rec: ToolCallRecord) -> None:
        raise RuntimeError("listener bug")

    r = await executor.execute(ExecuteParams(code="run_tool('t:add', a=1)"), Listeners(broken))
    assert r.value == 2 and len(r.tool_calls) == 1


async def test_result_to_dict_is_json(executor: Executor) -> None:
    r = await executor.execute(ExecuteParams(code="print('x')\nrun_tool('t:echo', value={'a': [1]})"))
    data = json.loads(json.dumps(r.to_dict()))
    assert data["value"] == {"a": [1]} and data["stdout"] == "x\n"
    assert data["tool_calls"][0]["tool_id"] == "t:echo" and data["tool_calls"][0]["backend_kind"] == "local"
    assert data["limits"]["applied"]["timeout"] == 30.0


async def test_allowed_namespaces_default_from_config(parts: tuple[Any, Any, Any]) -> None:
    index, store, runner = parts
    defaults = ExecuteOptions(allowed_namespaces=("other",))
    cfg = dict(index=index, store=store, runner=runner, engine="inprocess", defaults=defaults)
    async with executor_of(**cfg) as ex:
        r = await ex.execute(ExecuteParams(code="[list_namespaces()['namespaces'], search_tools('add')['hits']]"))
        assert r.value == [[], []]
        code = "[n['name'] for n in list_namespaces()['namespaces']]"
        r = await ex.execute(ExecuteParams(code=code, options=ExecuteOptions(allowed_namespaces=("t",))))
        assert r.value == ["t"]


class _LeakyEngine:
    """A (broken) engine that leaks a plain exception: the executor reports it as EngineError."""

    info = EngineInfo(name="leaky", sandboxed=False)

    async def execute(self, params: ExecuteParams, tools: Tools) -> ExecuteResult:
        raise KeyError("internal")

    async def aclose(self) -> None:
        return None


async def test_engine_leaks_become_engine_error(parts: tuple[Any, Any, Any]) -> None:
    index, store, runner = parts
    ex = executor_of(index=index, store=store, runner=runner, engine=_LeakyEngine())
    with pytest.raises(EngineError) as ei:
        await ex.execute(ExecuteParams(code="1"))
    assert ei.value.engine == "leaky" and "KeyError" in str(ei.value)
    assert isinstance(ei.value.__cause__, KeyError)


async def test_unknown_engine_name_in_config(parts: tuple[Any, Any, Any]) -> None:
    index, store, runner = parts
    with pytest.raises(ConfigurationError) as ei:
        executor_of(index=index, store=store, runner=runner, engine="quantum")
    assert ei.value.field == "engine"


async def test_limit_error_fields(executor: Executor) -> None:
    with pytest.raises(LimitExceededError) as ei:
        await executor.execute(
            ExecuteParams(code="run_tools([('t:add', {'a': 1})] * 3)", options=ExecuteOptions(max_tool_calls=2))
        )
    assert (ei.value.limit, ei.value.configured, ei.value.reached) == ("max_tool_calls", 2, 3)
    assert "max_tool_calls" in str(ei.value)


async def test_params_already_resolved_are_taken_as_they_are(executor: Executor) -> None:
    """The core resolves a run's options once; the executor does not resolve them again over its settings."""
    code = "run_tools([('t:add', {'a': 1})] * 3)"
    resolved = ExecuteOptions(max_tool_calls=2).resolve()
    with pytest.raises(LimitExceededError) as ei:
        await executor.execute(ExecuteParams(code=code, options=ExecuteOptions(max_tool_calls=50), resolved=resolved))
    assert (ei.value.limit, ei.value.configured) == ("max_tool_calls", 2)
    unresolved = ExecuteParams(code=code, options=ExecuteOptions(max_tool_calls=50))
    assert (await executor.execute(unresolved)).value == [2] * 3


class _RangeProvider:
    """A provider whose tool takes parameters that are not Python identifiers (``from``, ``per-page``)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def list_tools(self) -> list[dict[str, Any]]:
        props = {"from": {"type": "integer"}, "to": {"type": "integer"}, "per-page": {"type": "integer"}}
        schema = {"type": "object", "properties": props, "required": ["from", "to"], "additionalProperties": False}
        return [{"name": "span", "description": "Numbers from..to.", "inputSchema": schema}]

    async def call_tool(self, name: str, args: Any) -> Any:
        self.calls.append(dict(args))
        return {"n": args["to"] - args["from"]}

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("engine", ["inprocess", "monty"])
async def test_run_tool_keywords_use_the_signature_names(engine: str) -> None:
    # describe_tool shows `def span(*, from_: int, to: int, per_page: int = ...)`: a snippet that
    # calls the tool the way its signature reads must reach the tool under the wire names.
    from tooldocs import InMemoryStore
    from toolindex import InMemoryIndex
    from toolrun import DefaultRunner, ProviderBackend

    provider = _RangeProvider()
    index = InMemoryIndex()
    runner = DefaultRunner(index, [ProviderBackend("r", provider)])
    await runner.attach()
    store = InMemoryStore(index, autosave=False)
    async with executor_of(index=index, store=store, runner=runner, engine=engine) as ex:
        doc = await ex.execute(ExecuteParams(code='describe_tool("r:span")["text"]'))
        assert "from_: int" in doc.value and "per_page" in doc.value
        code = 'run_tool("r:span", from_=2, to=7, per_page=3)["n"] + run_tool("r:span", {"from": 1, "to": 2})["n"]'
        res = await ex.execute(ExecuteParams(code=code))
        assert res.value == 6
        assert provider.calls == [{"from": 2, "to": 7, "per-page": 3}, {"from": 1, "to": 2}]
        assert res.tool_calls[0].args == {"from": 2, "to": 7, "per-page": 3}
        twice = 'run_tool("r:span", **{"from": 1}, from_=2, to=3)'
        # Found before the run, in the run's words; with the check off, the run refuses it alike.
        with pytest.raises(TypeCheckError, match=r"argument 'from' of tool 'span' is given twice"):
            await ex.execute(ExecuteParams(code=twice))
        with pytest.raises(CodeExecutionError, match=r"r:span.*'from'.*twice"):
            await ex.execute(ExecuteParams(code=twice, options=ExecuteOptions(type_check="off")))
    await runner.aclose()


@pytest.mark.parametrize("engine", ["inprocess", "monty"])
async def test_the_snippet_globals_are_values_too(engine: str) -> None:
    # `f = run_tool` was a NameError in the sandbox: a global could be called, not read.
    index, store, runner = await make_runner()
    async with executor_of(index=index, store=store, runner=runner, engine=engine) as ex:
        code = (
            "import asyncio\n"
            "call = run_tool\n"
            "by_name = {'sync': run_tool, 'async': run_tool_async, 'many': run_tools}\n"
            "a = call('t:add', a=1, b=2)\n"
            "b = await by_name['async']('t:add', a=3, b=4)\n"
            "c = by_name['many']([('t:add', {'a': 5, 'b': 6})])\n"
            "[a, b, c]"
        )
        res = await ex.execute(ExecuteParams(code=code))
        assert res.value == [3, 7, [11]]
        assert [r.tool_id for r in res.tool_calls] == ["t:add"] * 3
        # The check before the run accepts an aliased call (type_check is on by default).
        ok = await ex.execute(ExecuteParams(code="f = run_tool\nf('t:add', a=1, b=1)"))
        assert ok.value == 2
    await runner.aclose()


async def test_a_tool_called_from_a_builtins_callback_says_what_to_write_instead() -> None:
    # Monty cannot suspend inside map/filter/sorted's key: the run fails, and the error says how to
    # write the same calls so that they run.
    from toolcode._errors import error_info

    index, store, runner = await make_runner()
    async with executor_of(index=index, store=store, runner=runner, engine="monty") as ex:
        for code in (
            "list(map(lambda a: run_tool('t:add', a=a, b=1), [1, 2]))",
            "def one(a):\n    return run_tool('t:add', a=a, b=1)\nsorted([2, 1], key=one)",
        ):
            with pytest.raises(CodeExecutionError) as got:
                await ex.execute(ExecuteParams(code=code))
            info = error_info(got.value)
            assert info.code == "runtime_error" and info.hint is not None and "list comprehension" in info.hint
        written = await ex.execute(ExecuteParams(code="[run_tool('t:add', a=a, b=1) for a in [1, 2]]"))
        assert written.value == [2, 3]
    await runner.aclose()


async def test_a_global_read_as_a_value_shows_nothing_of_the_host() -> None:
    # `f = run_tool` is a host function in the sandbox: opaque, named, never a door to the host's objects.
    index, store, runner = await make_runner()
    async with executor_of(index=index, store=store, runner=runner, engine="monty") as ex:
        for attribute in ("__globals__", "__code__", "__closure__", "__self__", "__dict__", "__module__"):
            with pytest.raises(CodeExecutionError, match="AttributeError"):
                await ex.execute(ExecuteParams(code=f"f = run_tool\nf.{attribute}"))
        shown = await ex.execute(ExecuteParams(code="[repr(run_tool), {'k': run_tool_async}]"))
        assert shown.value == ["<function 'run_tool' external>", {"k": "run_tool_async"}]
    await runner.aclose()
