"""DefaultRunner: the pipeline, validation policies, timeouts, cancellation, concurrency, precedence."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Mapping, Sequence
from typing import Annotated, Any
from urllib.parse import quote

import anyio
import pytest
import structlog
from pydantic import StringConstraints

from toolindex import AmbiguousToolIDError, BackendRef, InMemoryIndex, Tool, ToolNotFoundError
from toolrun import (
    DEFAULT_VALIDATION_POLICY,
    Backend,
    BackendResult,
    BackendUnavailableError,
    DefaultRunner,
    InputValidationError,
    InvalidSchemaError,
    LocalBackend,
    NoBackendError,
    OutputValidationError,
    Progress,
    ProgressEvent,
    ProviderBackend,
    Redactor,
    ResultRecorder,
    Runner,
    RunResult,
    StreamNotSupportedError,
    ToolExecutionError,
    ToolTimeoutError,
)

HANG_S = 60
"""Seconds after which a call counts as hung: a bound for a hang, not a speed (the calls bounded by it take
milliseconds, or their own timeout of a fraction of a second; a busy machine stretches that to seconds)."""


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def record_result(self, tool_id: str, value: Any) -> None:
        self.calls.append((tool_id, value))


class DictProvider:
    """A provider serving tools from a dict of async callables."""

    def __init__(self, tools: dict[str, tuple[dict[str, Any], Any]]) -> None:
        self.tools = tools
        self.closed = 0

    async def list_tools(self) -> Sequence[Tool | Mapping[str, Any]]:
        return [{"name": name, **meta} for name, (meta, _) in self.tools.items()]

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> Any:
        return await self.tools[name][1](**args)

    async def aclose(self) -> None:
        self.closed += 1


def local_backend() -> LocalBackend:
    local = LocalBackend()

    @local.tool(inline=True)
    def add(a: int, b: int = 1) -> int:
        """Add two integers."""
        return a + b

    @local.tool
    async def echo(text: str) -> str:
        return text

    @local.tool
    async def lies(n: int) -> int:
        return "not an int"  # type: ignore[return-value]

    @local.tool
    async def fail(msg: str) -> int:
        raise ValueError(msg)

    @local.tool
    async def hang(started: Any = None) -> int:
        await anyio.Event().wait()
        return 0

    return local


async def make_runner(**kw: Any) -> tuple[DefaultRunner, InMemoryIndex]:
    index = InMemoryIndex()
    runner = DefaultRunner(index, [local_backend()], **kw)
    await runner.attach()
    return runner, index


def test_default_runner_satisfies_the_protocols() -> None:
    runner = DefaultRunner(InMemoryIndex(), [LocalBackend()])
    assert isinstance(runner, Runner)
    assert isinstance(LocalBackend(), Backend)
    assert isinstance(ProviderBackend("p", DictProvider({})), Backend)
    assert isinstance(Recorder(), ResultRecorder)
    assert DEFAULT_VALIDATION_POLICY == "error"
    assert runner.validation == "error"


def test_constructor_rejects_bad_options() -> None:
    with pytest.raises(ValueError, match="validation"):
        DefaultRunner(InMemoryIndex(), [], validation="strict")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_chain_steps"):
        DefaultRunner(InMemoryIndex(), [], max_chain_steps=0)
    with pytest.raises(ValueError, match="default_timeout"):
        DefaultRunner(InMemoryIndex(), [], default_timeout=0)


@pytest.mark.anyio
async def test_run_returns_a_result_with_backend_and_duration() -> None:
    runner, _ = await make_runner()
    async with runner:
        result = await runner.run("local:add", {"a": 2, "b": 3})
        assert result.tool_id == "local:add"
        assert result.structured == 5
        assert result.value == 5
        assert result.backend == BackendRef.local("local:add")
        assert result.is_error is False
        assert result.content == ()
        assert result.duration_ms > 0
        # Bare names resolve when unambiguous; args default to {} and defaults apply.
        assert (await runner.run("echo", {"text": "hi"})).structured == "hi"


@pytest.mark.anyio
async def test_unknown_and_ambiguous_ids() -> None:
    runner, index = await make_runner()
    async with runner:
        with pytest.raises(ToolNotFoundError) as info:
            await runner.run("local:ad", {})
        assert "local:add" in info.value.suggestions
        index.register(Tool(name="add", namespace="other"), BackendRef.local("other:add"))
        with pytest.raises(AmbiguousToolIDError):
            await runner.run("add", {"a": 1})


@pytest.mark.anyio
async def test_except_toolrunerror_catches_every_lookup_failure() -> None:
    import toolindex
    import toolrun

    runner, index = await make_runner()
    index.register(Tool(name="add", namespace="other"), BackendRef.local("other:add"))
    async with runner:
        for tool_id, index_error, run_error in (
            ("local:ad", toolindex.ToolNotFoundError, toolrun.ToolNotFoundError),
            ("add", toolindex.AmbiguousToolIDError, toolrun.AmbiguousToolIDError),
            ("bad id!", toolindex.InvalidToolIDError, toolrun.InvalidToolIDError),
        ):
            with pytest.raises(toolrun.ToolRunError) as info:
                await runner.run(tool_id, {})
            # One root for the runner's failures, and still the toolindex class, with its message and attributes.
            assert type(info.value) is run_error and isinstance(info.value, index_error)
            assert isinstance(info.value.__cause__, index_error) and str(info.value) == str(info.value.__cause__)
            assert vars(info.value) == vars(info.value.__cause__)


@pytest.mark.anyio
async def test_input_validation_lists_every_problem_with_its_path() -> None:
    runner, _ = await make_runner()
    async with runner:
        with pytest.raises(InputValidationError) as info:
            await runner.run("local:add", {"a": "one", "b": None, "c": 3})
    err = info.value
    assert err.tool_id == "local:add"
    assert [p.path for p in err.problems] == ["$.a", "$.b", "$.c"]
    assert "local:add" in str(err) and "$.a" in str(err)


@pytest.mark.anyio
async def test_missing_required_argument_names_the_field() -> None:
    runner, _ = await make_runner()
    async with runner:
        with pytest.raises(InputValidationError) as info:
            await runner.run("local:echo")
    assert [(p.path, p.message) for p in info.value.problems] == [("$.text", "required property is missing")]


@pytest.mark.anyio
async def test_non_mapping_arguments_are_rejected() -> None:
    runner, _ = await make_runner()
    async with runner:
        with pytest.raises(InputValidationError, match="mapping"):
            await runner.run("local:echo", ["hi"])  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_input_validation_can_be_turned_off() -> None:
    runner, _ = await make_runner(validate_input=False)
    async with runner:
        # Without runner validation, pydantic's lax conversion in the local backend still applies.
        assert (await runner.run("local:add", {"a": "2"})).structured == 3


@pytest.mark.anyio
async def test_output_policy_error() -> None:
    runner, _ = await make_runner()
    async with runner:
        with pytest.raises(OutputValidationError) as info:
            await runner.run("local:lies", {"n": 1})
    assert info.value.problems[0].path == "$"
    assert "integer" in info.value.problems[0].message


@pytest.mark.anyio
async def test_output_policy_warn_logs_and_returns() -> None:
    runner, _ = await make_runner(validation="warn")
    async with runner:
        with structlog.testing.capture_logs() as logs:
            result = await runner.run("local:lies", {"n": 1})
    assert result.structured == "not an int"
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert warnings and warnings[0]["tool_id"] == "local:lies"
    assert "$" in warnings[0]["problems"][0]


@pytest.mark.anyio
async def test_output_policy_off_skips_the_check() -> None:
    runner, _ = await make_runner(validation="off")
    async with runner:
        with structlog.testing.capture_logs() as logs:
            result = await runner.run("local:lies", {"n": 1})
    assert result.structured == "not an int"
    assert logs == []


@pytest.mark.anyio
async def test_declared_output_schema_without_structured_result() -> None:
    class ContentOnly:
        kind = "provider"
        supports_progress = False

        def handles(self, ref: BackendRef) -> bool:
            return ref.kind == "provider" and ref.provider == "c"

        async def attach(self, index: Any) -> list[Tool]:
            return []

        async def call(self, ref: BackendRef, tool: Tool, args: Mapping[str, Any], **kw: Any) -> BackendResult:
            return BackendResult(None, ({"type": "text", "text": "plain words"},))

        async def aclose(self) -> None:
            return None

    index = InMemoryIndex()
    index.register(
        Tool(name="t", namespace="c", output_schema={"type": "object"}), BackendRef.of_provider("c", tool="t")
    )
    async with DefaultRunner(index, [ContentOnly()]) as runner:  # type: ignore[list-item]
        with pytest.raises(OutputValidationError, match="no structured result"):
            await runner.run("c:t")


@pytest.mark.anyio
async def test_invalid_tool_schema_is_reported_as_a_validation_error() -> None:
    local = LocalBackend()
    index = InMemoryIndex()
    index.register(
        Tool(name="broken", namespace="x", input_schema={"type": "object", "properties": {"a": {"type": 5}}}),
        BackendRef.local("x:broken"),
    )
    async with DefaultRunner(index, [local]) as runner:
        # No backend handles it, so resolution fails first; a handled tool gets the schema error.
        with pytest.raises(NoBackendError) as nb:
            await runner.run("x:broken", {})
        assert nb.value.refs == ["local:x:broken"]

    @local.tool(namespace="x")
    def broken(a: int = 0) -> int:
        return a

    index2 = InMemoryIndex()
    await local.attach(index2)
    bad = Tool(name="broken", namespace="x", input_schema={"type": "object", "properties": {"a": {"type": 5}}})
    index2.register(bad, BackendRef.local("x:broken"))
    async with DefaultRunner(index2, [local]) as runner:
        with pytest.raises(InputValidationError, match="not valid JSON Schema at properties/a/type") as info:
            await runner.run("x:broken", {})
        assert isinstance(info.value.__cause__, InvalidSchemaError)


@pytest.mark.anyio
async def test_tool_failure_raises_execution_error() -> None:
    runner, _ = await make_runner()
    async with runner:
        with pytest.raises(ToolExecutionError) as info:
            await runner.run("local:fail", {"msg": "disk full"})
    assert info.value.message == "ValueError: disk full"
    assert isinstance(info.value.__cause__, ValueError)


@pytest.mark.anyio
async def test_store_receives_only_successful_results() -> None:
    store = Recorder()
    runner, _ = await make_runner(store=store)
    async with runner:
        await runner.run("local:add", {"a": 1})
        with pytest.raises(ToolExecutionError):
            await runner.run("local:fail", {"msg": "x"})
        with pytest.raises(OutputValidationError):
            await runner.run("local:lies", {"n": 1})
        with pytest.raises(InputValidationError):
            await runner.run("local:add", {})
        await runner.run("local:echo", {"text": "t"})
    assert store.calls == [("local:add", 2), ("local:echo", "t")]


@pytest.mark.anyio
async def test_a_failing_store_does_not_fail_the_call() -> None:
    class Broken:
        def record_result(self, tool_id: str, value: Any) -> None:
            raise RuntimeError("store is broken")

    runner, _ = await make_runner(store=Broken())
    async with runner:
        with structlog.testing.capture_logs() as logs:
            assert (await runner.run("local:add", {"a": 1})).structured == 2
    assert any(e["event"] == "runner.record_result_failed" for e in logs)


@pytest.mark.anyio
async def test_timeout_raises_tool_timeout_error() -> None:
    runner, _ = await make_runner()
    async with runner:
        with anyio.fail_after(HANG_S), pytest.raises(ToolTimeoutError) as info:
            await runner.run("local:hang", timeout=0.05)
    assert info.value.tool_id == "local:hang"
    assert isinstance(info.value, TimeoutError)


@pytest.mark.anyio
async def test_default_timeout_applies_when_none_is_given() -> None:
    runner, _ = await make_runner(default_timeout=0.05)
    async with runner:
        with anyio.fail_after(HANG_S), pytest.raises(ToolTimeoutError):
            await runner.run("local:hang")
        assert (await runner.run("local:add", {"a": 1})).structured == 2


@pytest.mark.anyio
async def test_cancelling_the_caller_cancels_the_call() -> None:
    local = LocalBackend()
    started = anyio.Event()
    cancelled = anyio.Event()

    @local.tool
    async def wait_forever() -> int:
        started.set()
        try:
            await anyio.Event().wait()
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return 0

    index = InMemoryIndex()
    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        with anyio.fail_after(HANG_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(runner.run, "wait_forever")
                await started.wait()
                tg.cancel_scope.cancel()
            await cancelled.wait()
    assert cancelled.is_set()


@pytest.mark.anyio
async def test_many_concurrent_runs_overlap_and_get_their_own_results() -> None:
    local = LocalBackend()
    n = 300
    arrived = 0
    all_in = anyio.Event()

    @local.tool
    async def ident(i: int) -> dict[str, int]:
        nonlocal arrived
        arrived += 1
        if arrived == n:
            all_in.set()
        await all_in.wait()  # every call must be in flight at once for this to return
        return {"i": i}

    index = InMemoryIndex()
    results: dict[int, Any] = {}
    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()

        async def one(i: int) -> None:
            results[i] = (await runner.run("ident", {"i": i})).structured

        with anyio.fail_after(HANG_S):
            async with anyio.create_task_group() as tg:
                for i in range(n):
                    tg.start_soon(one, i)
    assert results == {i: {"i": i} for i in range(n)}


# -- backend precedence ------------------------------------------------------------


async def dual_registered() -> tuple[InMemoryIndex, LocalBackend, ProviderBackend, DictProvider]:
    local = LocalBackend()

    @local.tool(namespace="svc")
    async def where() -> str:
        return "local"

    async def remote() -> str:
        return "provider"

    provider = DictProvider({"where": ({"description": "same tool"}, remote)})
    backend = ProviderBackend("remote", provider, namespace="svc")
    index = InMemoryIndex()
    await local.attach(index)  # registered first: local ref first
    await backend.attach(index)
    assert [r.kind for r in index.backends("svc:where")] == ["local", "provider"]
    return index, local, backend, provider


@pytest.mark.anyio
async def test_precedence_follows_registration_order_by_default() -> None:
    index, local, backend, _ = await dual_registered()
    async with DefaultRunner(index, [backend, local]) as runner:
        result = await runner.run("svc:where")
    assert result.structured == "local"
    assert result.backend.kind == "local"


@pytest.mark.anyio
async def test_backend_order_overrides_precedence() -> None:
    index, local, backend, _ = await dual_registered()
    async with DefaultRunner(index, [local, backend], backend_order=["provider"]) as runner:
        result = await runner.run("svc:where")
        assert [r.kind for r, _ in runner.candidates(index.get("svc:where"), index.backends("svc:where"))] == [
            "provider",
            "local",
        ]
    assert result.structured == "provider"
    assert result.backend == BackendRef.of_provider("remote", tool="where")


@pytest.mark.anyio
async def test_only_configured_backends_are_candidates() -> None:
    index, _, backend, _ = await dual_registered()
    async with DefaultRunner(index, [backend]) as runner:
        assert (await runner.run("svc:where")).structured == "provider"


@pytest.mark.anyio
async def test_chooser_callable_decides() -> None:
    index, local, backend, _ = await dual_registered()
    seen: list[list[str]] = []

    def chooser(tool: Tool, cands: Sequence[tuple[BackendRef, Backend]]) -> tuple[BackendRef, Backend] | None:
        seen.append([r.kind for r, _ in cands])
        return cands[-1]

    async with DefaultRunner(index, [local, backend], chooser=chooser) as runner:
        assert (await runner.run("svc:where")).structured == "provider"
    assert seen == [["local", "provider"]]

    async with DefaultRunner(index, [local, backend], chooser=lambda t, c: None) as runner:
        with pytest.raises(NoBackendError) as info:
            await runner.run("svc:where")
    assert info.value.refs == ["local:svc:where", "provider:remote/where"]


@pytest.mark.anyio
async def test_resolution_is_cached_until_the_index_changes() -> None:
    index, local, backend, _ = await dual_registered()
    async with DefaultRunner(index, [local, backend]) as runner:
        assert (await runner.run("svc:where")).structured == "local"
        compiled = len(runner._schemas)  # pyright: ignore[reportPrivateUsage]
        for _ in range(5):
            await runner.run("svc:where")
        assert len(runner._schemas) == compiled  # pyright: ignore[reportPrivateUsage]
        # Re-registering the tool with only the provider is an index change: the next call follows it.
        tool = index.get("svc:where")
        index.unregister("svc:where")
        index.register(tool, BackendRef.of_provider("remote", tool="where"))
        assert (await runner.run("svc:where")).structured == "provider"


@pytest.mark.anyio
async def test_schema_change_takes_effect_on_the_next_call() -> None:
    local = LocalBackend()

    @local.tool(namespace="v")
    async def take(x: Any = None) -> Any:
        return x

    index = InMemoryIndex()
    await local.attach(index)
    async with DefaultRunner(index, [local]) as runner:
        assert (await runner.run("v:take", {"x": "s"})).structured == "s"
        strict = local.tools[0].model_copy(
            update={"input_schema": {"type": "object", "properties": {"x": {"type": "integer"}}}}
        )
        index.register(strict, BackendRef.local("v:take"))
        with pytest.raises(InputValidationError):
            await runner.run("v:take", {"x": "s"})


# -- streaming ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_stream_yields_progress_then_the_result() -> None:
    local = LocalBackend()

    @local.tool
    async def steps(n: int, progress: Progress) -> str:
        for i in range(n):
            await progress.report(i + 1, n, f"step {i + 1}")
        return "done"

    index = InMemoryIndex()
    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        items = [item async for item in runner.stream("steps", {"n": 3})]
    assert items[:3] == [ProgressEvent("local:steps", i, 3, f"step {i}") for i in (1, 2, 3)]
    assert isinstance(items[3], RunResult)
    assert items[3].structured == "done"
    assert len(items) == 4


@pytest.mark.anyio
async def test_stream_delivers_events_while_the_call_runs() -> None:
    local = LocalBackend()
    consumer_saw_first = anyio.Event()

    @local.tool
    async def gated(progress: Progress) -> str:
        await progress.report(1)
        await consumer_saw_first.wait()  # only the consumer can let the call go on
        await progress.report(2)
        return "ok"

    index = InMemoryIndex()
    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        seen: list[Any] = []
        with anyio.fail_after(HANG_S):
            async for item in runner.stream("gated"):
                seen.append(item)
                consumer_saw_first.set()
    assert [e.progress for e in seen[:2]] == [1, 2]
    assert seen[2].structured == "ok"


@pytest.mark.anyio
async def test_stream_raises_the_calls_error() -> None:
    runner, _ = await make_runner()
    async with runner:
        with pytest.raises(ToolExecutionError, match="nope"):
            async for _ in runner.stream("local:fail", {"msg": "nope"}):
                pass
        with pytest.raises(InputValidationError):
            async for _ in runner.stream("local:fail", {}):
                pass


@pytest.mark.anyio
async def test_stream_not_supported_by_the_backend() -> None:
    async def value() -> int:
        return 1

    provider = DictProvider({"one": ({}, value)})
    index = InMemoryIndex()
    async with DefaultRunner(index, [ProviderBackend("p", provider)]) as runner:
        await runner.attach()
        with pytest.raises(StreamNotSupportedError) as info:
            async for _ in runner.stream("p:one"):
                pass
        assert "p:one" in str(info.value)
        assert (await runner.run("p:one")).structured == 1


@pytest.mark.anyio
async def test_closing_a_stream_early_cancels_the_call() -> None:
    local = LocalBackend()
    cancelled = anyio.Event()

    @local.tool
    async def endless(progress: Progress) -> int:
        try:
            i = 0
            while True:
                i += 1
                await progress.report(i)
                await anyio.lowlevel.checkpoint()
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise

    index = InMemoryIndex()
    async with DefaultRunner(index, [local]) as runner:
        await runner.attach()
        with anyio.fail_after(HANG_S):
            async with contextlib.aclosing(runner.stream("endless")) as events:
                async for event in events:
                    assert isinstance(event, ProgressEvent)
                    if event.progress >= 3:
                        break
            await cancelled.wait()


@pytest.mark.anyio
async def test_stream_timeout() -> None:
    runner, _ = await make_runner()
    async with runner:
        with anyio.fail_after(HANG_S), pytest.raises(ToolTimeoutError):
            async for _ in runner.stream("local:hang", timeout=0.05):
                pass


# -- lifecycle ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_aclose_closes_every_backend_once_and_refuses_new_calls() -> None:
    async def one() -> int:
        return 1

    p1, p2 = DictProvider({"one": ({}, one)}), DictProvider({"one": ({}, one)})
    index = InMemoryIndex()
    runner = DefaultRunner(index, [ProviderBackend("a", p1), ProviderBackend("b", p2)])
    await runner.attach()
    assert (await runner.run("a:one")).structured == 1
    await runner.aclose()
    await runner.aclose()
    assert (p1.closed, p2.closed) == (1, 1)
    with pytest.raises(BackendUnavailableError, match="closed"):
        await runner.run("a:one")


@pytest.mark.anyio
async def test_aclose_closes_the_rest_when_one_backend_fails() -> None:
    class Failing(DictProvider):
        async def aclose(self) -> None:
            raise RuntimeError("cannot close")

    good = DictProvider({})
    runner = DefaultRunner(InMemoryIndex(), [ProviderBackend("bad", Failing({})), ProviderBackend("good", good)])
    with structlog.testing.capture_logs(), pytest.raises(RuntimeError, match="cannot close"):
        await runner.aclose()
    assert good.closed == 1


@pytest.mark.anyio
async def test_runner_stops_following_the_index_after_close() -> None:
    index = InMemoryIndex()
    runner = DefaultRunner(index, [LocalBackend()])
    generation = runner._generation  # pyright: ignore[reportPrivateUsage]
    await runner.aclose()
    index.register(Tool(name="t"), BackendRef.local("t"))
    assert runner._generation == generation  # pyright: ignore[reportPrivateUsage]


@pytest.mark.anyio
async def test_schemas_compile_once_per_distinct_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolrun._validation as validation

    compiled: list[Any] = []
    original = validation.CompiledSchema.__init__

    def counting(self: Any, schema: Any, *args: Any, **kwargs: Any) -> None:
        compiled.append(schema)
        original(self, schema, *args, **kwargs)

    monkeypatch.setattr(validation.CompiledSchema, "__init__", counting)
    runner, index = await make_runner()
    async with runner:
        for i in range(20):
            await runner.run("local:add", {"a": i})
        assert len(compiled) == 2  # the input schema and the output schema
        # An index change drops resolutions, not compiled schemas: nothing recompiles.
        index.register(Tool(name="unrelated"), BackendRef.local("unrelated"))
        await runner.run("local:add", {"a": 1})
        assert len(compiled) == 2
        await runner.run("local:echo", {"text": "x"})
        assert len(compiled) == 4  # echo's input and output schemas are new


class ContextBackend(LocalBackend):
    """A local backend that is also an async context manager, like MCPBackend."""

    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    async def __aenter__(self) -> ContextBackend:
        self.log.append("enter")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.log.append("exit")

    async def aclose(self) -> None:
        self.log.append("aclose")
        await super().aclose()


@pytest.mark.anyio
async def test_async_with_enters_and_exits_context_manager_backends() -> None:
    log: list[str] = []
    backend = ContextBackend(log)

    @backend.tool(inline=True)
    def double(x: int) -> int:
        return 2 * x

    async with DefaultRunner(InMemoryIndex(), [backend]) as runner:
        assert log == ["enter"]
        await runner.attach()
        assert (await runner.run("local:double", {"x": 4})).value == 8
    assert log == ["enter", "aclose", "exit"]


@pytest.mark.anyio
async def test_a_backend_failing_to_enter_exits_those_already_entered() -> None:
    log: list[str] = []

    class Broken(ContextBackend):
        async def __aenter__(self) -> ContextBackend:
            raise RuntimeError("cannot start")

    runner = DefaultRunner(InMemoryIndex(), [ContextBackend(log), Broken([])])
    with pytest.raises(RuntimeError, match="cannot start"):
        async with runner:
            pytest.fail("the body must not run")
    assert log == ["enter", "exit"]


# -- secrets -------------------------------------------------------------------------

SECRET = "runner-s3cret/+="


def leaky_backend() -> LocalBackend:
    local = LocalBackend()

    @local.tool
    async def token() -> Annotated[str, StringConstraints(pattern=r"^runner-s3cret/\+=$")]:
        """The schema accepts the secret only: "***" would not match."""
        return SECRET

    @local.tool
    async def page() -> dict[str, Any]:
        return {
            "next": f"/items?page=2&key={quote(SECRET, safe='')}",
            "auth": base64.b64encode(b"u:" + SECRET.encode()).decode(),
        }

    @local.tool
    async def wrong() -> int:
        return f"not a number: {SECRET}"  # type: ignore[return-value]

    @local.tool
    async def steps(progress: Progress) -> str:
        await progress.report(1, 1, f"using {SECRET}")
        return "done"

    return local


@pytest.mark.anyio
async def test_every_result_is_masked_once_it_is_validated() -> None:
    recorder = Recorder()
    kept = {"items": list(range(100))}

    async def clean() -> BackendResult:
        return BackendResult(kept)

    provider = ProviderBackend("p", DictProvider({"clean": ({"inputSchema": {"type": "object"}}, clean)}))
    backends = [leaky_backend(), provider]
    async with DefaultRunner(InMemoryIndex(), backends, store=recorder, redactor=Redactor([SECRET])) as runner:
        await runner.attach()
        # Checked against the schema as it came (the pattern accepts only the secret), then masked.
        assert (await runner.run("local:token")).value == "***"
        page = (await runner.run("local:page")).value
        assert page == {"next": "/items?page=2&key=***", "auth": "dT***"}  # "u:" stays readable
        # A result without a secret is the tool's own value: not copied.
        assert (await runner.run("p:clean")).structured is kept
    assert recorder.calls == [("local:token", "***"), ("local:page", page), ("p:clean", kept)]


@pytest.mark.anyio
async def test_validation_problems_that_quote_the_result_are_masked() -> None:
    index = InMemoryIndex()
    async with DefaultRunner(index, [leaky_backend()], redactor=Redactor([SECRET])) as runner:
        await runner.attach()
        with pytest.raises(OutputValidationError) as caught:
            await runner.run("local:wrong")
    assert "not a number: ***" in str(caught.value) and SECRET not in str(caught.value)
    async with DefaultRunner(InMemoryIndex(), [leaky_backend()], validation="warn", redactor=Redactor([SECRET])) as r:
        await r.attach()
        with structlog.testing.capture_logs() as logs:
            assert (await r.run("local:wrong")).value == "not a number: ***"
    (warning,) = [e for e in logs if e["event"] == "runner.output_invalid"]
    assert "not a number: ***" in warning["problems"][0] and SECRET not in str(warning)


@pytest.mark.anyio
async def test_progress_messages_are_masked() -> None:
    async with DefaultRunner(InMemoryIndex(), [leaky_backend()], redactor=Redactor([SECRET])) as runner:
        await runner.attach()
        items = [item async for item in runner.stream("local:steps")]
    assert items[0] == ProgressEvent("local:steps", 1, 1, "using ***")


@pytest.mark.anyio
async def test_a_result_that_contains_itself_and_a_secret_fails_the_call() -> None:
    loop: list[Any] = [SECRET]
    loop.append(loop)

    async def cyclic() -> BackendResult:
        return BackendResult(loop)

    backend = ProviderBackend("p", DictProvider({"cyclic": ({"inputSchema": {"type": "object"}}, cyclic)}))
    async with DefaultRunner(InMemoryIndex(), [backend], redactor=Redactor([SECRET])) as runner:
        await runner.attach()
        with pytest.raises(ToolExecutionError, match="cannot be checked for secrets"):
            await runner.run("p:cyclic")
