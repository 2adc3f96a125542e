"""LocalBackend: schemas from type hints and docstrings, threads, inline, progress, failures."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import anyio
import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from toolindex import BackendRef, InMemoryIndex, InvalidToolError
from toolrun import (
    DefaultRunner,
    InputValidationError,
    LocalBackend,
    OutputValidationError,
    Progress,
    ProgressEvent,
    RunResult,
    ToolExecutionError,
    ToolTimeoutError,
)
from toolrun._local import parse_docstring

HANG_S = 60
"""Seconds after which a call counts as hung: a bound for a hang, not a speed (the calls bounded by it take
milliseconds, or their own timeout of a fraction of a second; a busy machine stretches that to seconds)."""


class Point(BaseModel):
    x: int
    y: int = 0


@dataclass
class Box:
    width: float
    label: str


class Opaque:
    """A type pydantic cannot describe."""


def make() -> tuple[LocalBackend, InMemoryIndex]:
    return LocalBackend(), InMemoryIndex()


def test_docstring_parsing() -> None:
    desc, params = parse_docstring(
        """Search the catalog.

        Finds things.

        Args:
            query (str): What to look for,
                over two lines.
            limit: Most hits.

        Returns:
            Hits.
        """
    )
    assert desc == "Search the catalog.\n\nFinds things."
    assert params == {"query": "What to look for, over two lines.", "limit": "Most hits."}


def test_input_and_output_schemas_come_from_hints_and_docstring() -> None:
    local = LocalBackend()

    @local.tool(tags=["Geo"])
    def move(p: Point, mode: Literal["fast", "slow"] = "fast", note: str | None = None) -> Box:
        """Move a point.

        Args:
            p: The point to move.
            mode: How fast.
        """
        return Box(1.0, "x")

    tool = local.tools[0]
    assert tool.id == "local:move"
    assert tool.description == "Move a point."
    assert tool.tags == ("geo",)
    s = tool.input_schema
    assert s["required"] == ["p"]
    assert s["additionalProperties"] is False
    assert s["properties"]["p"]["description"] == "The point to move."
    assert s["properties"]["mode"] == {
        "default": "fast",
        "description": "How fast.",
        "enum": ["fast", "slow"],
        "type": "string",
    }
    assert "Point" in s["$defs"]
    assert "title" not in s
    assert tool.output_schema is not None
    assert tool.output_schema["required"] == ["width", "label"]


def test_progress_parameter_is_not_in_the_schema() -> None:
    local = LocalBackend()

    @local.tool
    async def work(n: int, progress: Progress) -> int:
        return n

    assert list(local.tools[0].input_schema["properties"]) == ["n"]


def test_no_return_annotation_means_no_output_schema() -> None:
    local = LocalBackend()

    @local.tool
    def a(x: int):  # type: ignore[no-untyped-def]
        return x

    @local.tool
    def b(x: int) -> None:
        return None

    assert [t.output_schema for t in local.tools] == [None, None]


def test_bad_signatures_are_rejected_at_registration() -> None:
    local = LocalBackend()
    with pytest.raises(TypeError, match=r"\*args"):
        local.add(lambda *a: a, name="star")
    with pytest.raises(TypeError, match="positional-only"):

        def pos(a: int, /) -> int:
            return a

        local.add(pos)
    with pytest.raises(TypeError, match="inline"):

        def inl(progress: Progress) -> None:
            return None

        local.add(inl, inline=True)
    with pytest.raises(InvalidToolError):
        local.add(lambda: 1, name="bad name!")


def test_duplicate_registration_is_an_error() -> None:
    local = LocalBackend()

    @local.tool
    def f() -> int:
        return 1

    with pytest.raises(ValueError, match="already registered"):
        local.add(f)
    local.add(f, namespace="other")  # same name, another namespace: fine
    assert [t.id for t in local.tools] == ["local:f", "other:f"]


@pytest.mark.anyio
async def test_attach_registers_now_and_later() -> None:
    local, index = make()

    @local.tool
    def first() -> int:
        return 1

    tools = await local.attach(index)
    assert [t.id for t in tools] == ["local:first"]

    @local.tool(namespace="math")
    def second() -> int:
        return 2

    assert index.get("math:second").name == "second"
    assert index.backends("math:second") == [BackendRef.local("math:second")]


@pytest.mark.anyio
async def test_arguments_are_converted_to_the_declared_types() -> None:
    local, index = make()
    seen: list[Any] = []

    @local.tool
    async def place(p: Point, scale: float = 1.0) -> dict[str, Any]:
        seen.append((p, scale))
        return {"x": p.x * scale, "y": p.y}

    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        result = await runner.run("place", {"p": {"x": 2}, "scale": 3})
    assert seen == [(Point(x=2, y=0), 3.0)]
    assert isinstance(seen[0][1], float)
    assert result.structured == {"x": 6.0, "y": 0}


@pytest.mark.anyio
async def test_results_are_plain_json_values() -> None:
    local, index = make()

    @local.tool
    def box() -> Box:
        return Box(2.5, "b")

    @local.tool
    def pair() -> tuple[int, str]:
        return (1, "a")

    @local.tool
    def untyped():  # type: ignore[no-untyped-def]
        return {"p": Point(x=1), "t": (1, 2)}

    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        assert (await runner.run("box")).structured == {"width": 2.5, "label": "b"}
        assert (await runner.run("pair")).structured == [1, "a"]
        assert (await runner.run("untyped")).structured == {"p": {"x": 1, "y": 0}, "t": [1, 2]}


class Aliased(BaseModel):
    item_id: int = Field(alias="itemId")
    display_name: str = Field(alias="displayName")


@pytest.mark.anyio
async def test_a_result_with_aliased_fields_is_written_as_its_schema_names_them() -> None:
    # The output schema names the aliases (pydantic's serialization schema): the result must too,
    # or every call fails output validation.
    local, index = make()

    @local.tool
    def item() -> Aliased:
        return Aliased(itemId=1, displayName="x")

    @local.tool
    def items() -> list[Aliased]:
        return [Aliased(itemId=2, displayName="y")]

    async with DefaultRunner(index, [local], validation="error") as runner:
        await runner.attach()
        assert set(index.get("item").output_schema["properties"]) == {"itemId", "displayName"}
        assert (await runner.run("item")).structured == {"itemId": 1, "displayName": "x"}
        assert (await runner.run("items")).structured == [{"itemId": 2, "displayName": "y"}]


class Row(TypedDict):
    id: int
    name: str


@pytest.mark.anyio
async def test_json_text_is_parsed_when_the_tool_declares_json() -> None:
    local, index = make()
    rows = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]

    @local.tool
    def as_dict() -> dict[str, Any]:
        return json.dumps({"items": rows})  # type: ignore[return-value]

    @local.tool
    def as_rows() -> list[Row]:
        return json.dumps(rows)  # type: ignore[return-value]

    @local.tool
    def as_model_or_none() -> Point | None:
        return '{"x": 3, "y": 4}'  # type: ignore[return-value]

    @local.tool
    def as_text() -> str:
        return json.dumps({"items": rows})

    @local.tool
    def untyped():  # type: ignore[no-untyped-def]
        return "[1, 2]"

    @local.tool
    def not_json() -> dict[str, Any]:
        return "nothing to parse"  # type: ignore[return-value]

    @local.tool
    def scalar_json() -> dict[str, Any]:
        return "42"  # type: ignore[return-value]

    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        assert (await runner.run("as_dict")).structured == {"items": rows}
        assert (await runner.run("as_rows")).structured == rows
        assert (await runner.run("as_model_or_none")).structured == {"x": 3, "y": 4}
        # A tool declared to return text, or nothing, returns text.
        assert (await runner.run("as_text")).structured == json.dumps({"items": rows})
        assert (await runner.run("untyped")).structured == "[1, 2]"
        # Text that is not the JSON of an object or array stays text: the output check says so.
        for name in ("not_json", "scalar_json"):
            with pytest.raises(OutputValidationError):
                await runner.run(name)


@pytest.mark.anyio
async def test_backend_checks_types_even_when_the_runner_does_not() -> None:
    local, index = make()

    @local.tool
    def double(n: int) -> int:
        return n * 2

    async with DefaultRunner(index, [local], validate_input=False) as runner:
        await runner.attach()
        with pytest.raises(InputValidationError) as info:
            await runner.run("double", {"n": "many"})
    assert info.value.problems[0].path == "$.n"
    assert info.value.tool_id == "local:double"


@pytest.mark.anyio
async def test_exception_becomes_tool_execution_error_chained_to_it() -> None:
    local, index = make()

    @local.tool
    def explode(why: str) -> int:
        raise RuntimeError(f"boom: {why}")

    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        with pytest.raises(ToolExecutionError) as info:
            await runner.run("explode", {"why": "testing"})
    err = info.value
    assert err.tool_id == "local:explode"
    assert err.message == "RuntimeError: boom: testing"
    assert isinstance(err.__cause__, RuntimeError)
    assert err.content == ({"type": "text", "text": "RuntimeError: boom: testing"},)


@pytest.mark.anyio
async def test_unserialisable_result_is_a_tool_error() -> None:
    local, index = make()

    @local.tool
    def weird():  # type: ignore[no-untyped-def]
        return object()

    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        with pytest.raises(ToolExecutionError, match="cannot be converted to JSON"):
            await runner.run("weird")


@pytest.mark.anyio
async def test_sync_function_runs_in_a_worker_thread_and_the_loop_stays_free() -> None:
    local, index = make()
    release = threading.Event()
    loop_thread = threading.get_ident()
    threads: list[int] = []

    @local.tool
    def blocking() -> str:
        threads.append(threading.get_ident())
        # Blocks its thread until the event loop sets the event: a blocked loop would deadlock.
        if not release.wait(timeout=10):
            return "timed out"
        return "released"

    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        results: list[RunResult] = []

        async def call() -> None:
            results.append(await runner.run("blocking"))

        with anyio.fail_after(HANG_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                while not threads:
                    await anyio.lowlevel.checkpoint()
                release.set()  # the loop runs while the function blocks
    assert results[0].structured == "released"
    assert threads[0] != loop_thread


@pytest.mark.anyio
async def test_inline_function_runs_on_the_loop_thread() -> None:
    local, index = make()
    threads: list[int] = []

    @local.tool(inline=True)
    def here() -> int:
        threads.append(threading.get_ident())
        return 1

    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        await runner.run("here")
    assert threads == [threading.get_ident()]


@pytest.mark.anyio
async def test_max_threads_limits_concurrent_sync_calls() -> None:
    local, index = LocalBackend(max_threads=2), InMemoryIndex()
    lock = threading.Lock()
    running = 0
    peak = 0
    gate = threading.Event()

    @local.tool
    def work(i: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        gate.wait(timeout=10)
        with lock:
            running -= 1
        return i

    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        out: list[int] = []

        async def call(i: int) -> None:
            out.append((await runner.run("work", {"i": i})).structured)

        with anyio.fail_after(HANG_S):
            async with anyio.create_task_group() as tg:
                for i in range(6):
                    tg.start_soon(call, i)
                while peak < 2:
                    await anyio.lowlevel.checkpoint()
                gate.set()
    assert sorted(out) == list(range(6))
    assert peak == 2


@pytest.mark.anyio
async def test_sync_function_reports_progress_from_its_thread() -> None:
    local, index = make()

    @local.tool
    def count(n: int, progress: Progress) -> int:
        for i in range(n):
            progress.report_sync(i + 1, n, f"item {i + 1}")
        return n

    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        items = [x async for x in runner.stream("count", {"n": 3})]
    assert items[:-1] == [ProgressEvent("local:count", i, 3, f"item {i}") for i in (1, 2, 3)]
    assert isinstance(items[-1], RunResult) and items[-1].structured == 3


@pytest.mark.anyio
async def test_progress_is_a_no_op_without_a_stream() -> None:
    local, index = make()
    enabled: list[bool] = []

    @local.tool
    async def count(n: int, progress: Progress) -> int:
        enabled.append(progress.enabled)
        await progress.report(1, n)
        return n

    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        assert (await runner.run("count", {"n": 2})).structured == 2
    assert enabled == [False]


@pytest.mark.anyio
async def test_hung_sync_function_times_out() -> None:
    local, index = make()
    stop = threading.Event()

    @local.tool
    def hang() -> int:
        stop.wait(timeout=30)
        return 1

    try:
        async with DefaultRunner(index, [local]) as runner:
            await runner.attach()
            with anyio.fail_after(HANG_S), pytest.raises(ToolTimeoutError) as info:
                await runner.run("hang", timeout=0.2)
        assert info.value.tool_id == "local:hang"
        assert info.value.timeout == 0.2
    finally:
        stop.set()  # let the abandoned thread finish


@pytest.mark.anyio
async def test_backend_enforces_timeout_when_called_directly() -> None:
    local, _ = make()

    @local.tool
    async def hang() -> int:
        await anyio.Event().wait()
        return 1

    tool = local.tools[0]
    with anyio.fail_after(HANG_S), pytest.raises(ToolTimeoutError):
        await local.call(BackendRef.local("local:hang"), tool, {}, timeout=0.1)


@pytest.mark.anyio
async def test_annotated_field_descriptions_are_kept() -> None:
    local, _ = make()

    @local.tool
    def f(n: Annotated[int, Field(ge=1, description="How many.")] = 1) -> int:
        return n

    prop = local.tools[0].input_schema["properties"]["n"]
    assert prop["minimum"] == 1
    assert prop["description"] == "How many."


@pytest.mark.anyio
async def test_closed_backend_refuses_calls() -> None:
    local, index = make()

    @local.tool
    def f() -> int:
        return 1

    await local.attach(index)
    tool = local.tools[0]
    await local.aclose()
    await local.aclose()
    from toolrun import BackendUnavailableError

    with pytest.raises(BackendUnavailableError):
        await local.call(BackendRef.local("local:f"), tool, {})


@pytest.mark.anyio
async def test_parameter_names_that_shadow_model_attributes_work() -> None:
    local, index = make()

    @local.tool
    def check(json: str, schema: dict[str, Any], copy: bool = False) -> str:
        return f"{json}:{sorted(schema)}:{copy}"

    assert set(local.tools[0].input_schema["properties"]) == {"json", "schema", "copy"}
    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        assert (await runner.run("check", {"json": "j", "schema": {"b": 1, "a": 2}})).structured == "j:['a', 'b']:False"


def test_unsupported_functions_are_rejected_with_the_reason() -> None:
    local = LocalBackend()

    def gen() -> Any:
        yield 1

    async def agen() -> Any:
        yield 1

    def opaque(x: Opaque) -> int:
        return 1

    def returns_opaque() -> Opaque:
        return Opaque()

    with pytest.raises(TypeError, match="generator"):
        local.add(gen)
    with pytest.raises(TypeError, match="generator"):
        local.add(agen)
    with pytest.raises(TypeError, match="'opaque': the parameters"):
        local.add(opaque)
    with pytest.raises(TypeError, match="'returns_opaque': the return type"):
        local.add(returns_opaque)
    assert local.tools == []


def test_non_json_defaults_are_left_out_of_the_schema() -> None:
    local = LocalBackend()
    marker = object()

    @local.tool
    def f(x: Any = marker, y: int = 3) -> int:
        return y

    props = local.tools[0].input_schema["properties"]
    assert "default" not in props["x"]
    assert props["y"]["default"] == 3


def test_per_call_validation_is_the_adapters_own() -> None:
    # Calls validate through the adapter's core validator directly (no Python wrapper per call):
    # same accepted values, same conversions, same errors as TypeAdapter.validate_python.
    local = LocalBackend()

    def f(p: Point, n: int, scale: float = 1.0, mode: Literal["a", "b"] = "a", tags: list[str] | None = None) -> int:
        return n

    local.add(f)
    spec = local._tools["local:f"]  # pyright: ignore[reportPrivateUsage]
    assert spec.validate_args is not spec.args_adapter.validate_python
    cases: list[Any] = [
        {"p": {"x": 1}, "n": 2},
        {"p": Point(x=1), "n": "3", "scale": 2, "mode": "b", "tags": ["t"]},
        {"p": {"x": 1}, "n": 2.0},
        {"p": {"x": "no"}, "n": 2},
        {"n": 2},
        {"p": {"x": 1}, "n": 2, "extra": 1},
        {"p": {"x": 1}, "n": True, "mode": "c"},
        [("p", {"x": 1})],
        None,
    ]
    for args in cases:
        try:
            expected: Any = spec.args_adapter.validate_python(args)
        except Exception as e:  # the error itself is compared below
            expected = e
        try:
            got: Any = spec.validate_args(args)
        except Exception as e:  # as above
            got = e
        if isinstance(expected, Exception):
            assert type(got) is type(expected)
            assert got.errors() == expected.errors()  # type: ignore[attr-defined]
        else:
            assert got == expected
            assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]
