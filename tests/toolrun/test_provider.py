"""ProviderBackend: a provider's tools run through the same pipeline as any other."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import pytest
import structlog

from toolindex import BackendRef, InMemoryIndex, Tool
from toolrun import (
    BackendResult,
    BackendUnavailableError,
    ChainStep,
    DefaultRunner,
    InputValidationError,
    OutputValidationError,
    Provider,
    ProviderBackend,
    ToolExecutionError,
    ToolTimeoutError,
    register_secrets,
)

HANG_S = 60
"""Seconds after which a call counts as hung: a bound for a hang, not a speed (the calls bounded by it take
milliseconds, or their own timeout of a fraction of a second; a busy machine stretches that to seconds)."""


class NotesProvider:
    """A small in-memory notes service: the kind of tool source a provider wraps."""

    def __init__(self) -> None:
        self.notes: dict[str, str] = {}
        self.closed = False
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def list_tools(self) -> Sequence[Tool | Mapping[str, Any]]:
        return [
            {
                "name": "put",
                "description": "Store a note under a key.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"key": {"type": "string", "minLength": 1}, "text": {"type": "string"}},
                    "required": ["key", "text"],
                    "additionalProperties": False,
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {"stored": {"type": "integer"}},
                    "required": ["stored"],
                },
            },
            {
                "name": "get",
                "description": "Read a note.",
                "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
            },
            {"name": "render", "description": "Render all notes as text blocks."},
            {"name": "count_wrong", "outputSchema": {"type": "integer"}},
            {"name": "slow"},
            Tool(name="stats", namespace="elsewhere", description="Provider-built Tool object."),
            {"name": "bad name with spaces"},
            {"name": "bad_schema", "inputSchema": {"type": "string"}},
        ]

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> Any:
        self.calls.append((name, dict(args)))
        if name == "put":
            self.notes[args["key"]] = args["text"]
            return {"stored": len(self.notes)}
        if name == "get":
            if args["key"] not in self.notes:
                raise KeyError(f"no note {args['key']!r}")
            return self.notes[args["key"]]
        if name == "render":
            blocks = tuple({"type": "text", "text": f"{k}: {v}"} for k, v in sorted(self.notes.items()))
            return BackendResult(None, blocks)
        if name == "count_wrong":
            return "three"
        if name == "slow":
            await anyio.Event().wait()
        if name == "stats":
            return BackendResult(None, ({"type": "text", "text": "stats unavailable"},), is_error=True)
        raise AssertionError(name)

    async def aclose(self) -> None:
        self.closed = True


async def setup() -> tuple[DefaultRunner, NotesProvider, ProviderBackend, InMemoryIndex]:
    provider = NotesProvider()
    backend = ProviderBackend("notes", provider)
    index = InMemoryIndex()
    runner = DefaultRunner(index, [backend])
    with structlog.testing.capture_logs():
        await runner.attach()
    return runner, provider, backend, index


def test_notes_provider_satisfies_the_protocol() -> None:
    assert isinstance(NotesProvider(), Provider)


@pytest.mark.anyio
async def test_attach_registers_tools_and_skips_malformed_ones() -> None:
    provider = NotesProvider()
    backend = ProviderBackend("notes", provider)
    index = InMemoryIndex()
    with structlog.testing.capture_logs() as logs:
        tools = await backend.attach(index)
    assert sorted(t.id for t in tools) == [
        "notes:count_wrong",
        "notes:get",
        "notes:put",
        "notes:render",
        "notes:slow",
        "notes:stats",
    ]
    assert set(backend.skipped) == {"bad name with spaces", "bad_schema"}
    assert sum(1 for e in logs if e["event"] == "provider.tool_skipped") == 2
    assert index.backends("notes:put") == [BackendRef.of_provider("notes", tool="put")]


@pytest.mark.anyio
async def test_provider_calls_go_through_the_pipeline() -> None:
    runner, provider, _, _ = await setup()
    async with runner:
        put = await runner.run("notes:put", {"key": "a", "text": "alpha"})
        assert put.structured == {"stored": 1}
        assert put.backend.kind == "provider"
        assert (await runner.run("notes:get", {"key": "a"})).value == "alpha"
        rendered = await runner.run("notes:render")
        assert rendered.structured is None
        assert rendered.value == "a: alpha"
        with pytest.raises(InputValidationError) as info:
            await runner.run("notes:put", {"key": "", "text": 3})
        assert [p.path for p in info.value.problems] == ["$.key", "$.text"]
    assert [name for name, _ in provider.calls] == ["put", "get", "render"]
    assert provider.closed


@pytest.mark.anyio
async def test_provider_failures() -> None:
    runner, _, _, _ = await setup()
    async with runner:
        with pytest.raises(ToolExecutionError) as info:
            await runner.run("notes:get", {"key": "missing"})
        assert isinstance(info.value.__cause__, KeyError)
        assert "no note 'missing'" in info.value.message
        with pytest.raises(ToolExecutionError, match="stats unavailable"):
            await runner.run("notes:stats")
        with pytest.raises(OutputValidationError):
            await runner.run("notes:count_wrong")
        with anyio.fail_after(HANG_S), pytest.raises(ToolTimeoutError):
            await runner.run("notes:slow", timeout=0.05)


@pytest.mark.anyio
async def test_provider_in_a_chain() -> None:
    runner, _, _, _ = await setup()
    async with runner:
        chain = await runner.run_chain(
            [
                ChainStep("notes:put", {"key": "k", "text": "v"}),
                ChainStep("notes:get", {"key": "k"}),
                ChainStep("notes:get", {"key": "zz"}, on_error="continue"),
                ChainStep("notes:render"),
            ]
        )
    assert [s.ok for s in chain.steps] == [True, True, False, True]
    assert chain.final is not None and chain.final.value == "k: v"


@pytest.mark.anyio
async def test_failing_list_tools_is_backend_unavailable() -> None:
    class Down:
        async def list_tools(self) -> Sequence[Tool | Mapping[str, Any]]:
            raise ConnectionError("connection refused")

        async def call_tool(self, name: str, args: Mapping[str, Any]) -> Any:
            raise AssertionError

    with pytest.raises(BackendUnavailableError, match="connection refused") as info:
        await ProviderBackend("down", Down()).attach(InMemoryIndex())
    assert isinstance(info.value.__cause__, ConnectionError)


@pytest.mark.anyio
async def test_closed_provider_backend_refuses_calls() -> None:
    runner, _, backend, index = await setup()
    await runner.aclose()
    with pytest.raises(BackendUnavailableError):
        await backend.call(BackendRef.of_provider("notes", tool="get"), index.get("notes:get"), {"key": "a"})


SECRET = "prov/Ky+4s=Tq!9wd"


class CatalogProvider:
    """A remote catalog whose definitions quote the key it is reached with (as a key holder's catalog does)."""

    def __init__(self) -> None:
        self.plain = Tool(name="ping", namespace="cat", description="Answers pong.")
        self.quoting = Tool(name="whoami", namespace="cat", description="Who holds the key.", meta={"key": SECRET})

    async def list_tools(self) -> Sequence[Tool | Mapping[str, Any]]:
        return [
            self.plain,
            self.quoting,
            {
                "name": "search",
                "description": f"Searches with key {SECRET}.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"key": {"type": "string", "pattern": f"^({SECRET}|public)$", "default": SECRET}},
                },
            },
            {"name": f"key_{SECRET}", "description": "A name that quotes the key."},
        ]

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> Any:
        return {"tool": name, "args": dict(args)}


@pytest.mark.anyio
async def test_attach_masks_registered_secrets_in_listed_definitions() -> None:
    register_secrets([SECRET])
    provider = CatalogProvider()
    backend = ProviderBackend("cat", provider)
    index = InMemoryIndex()
    tools = {t.name: t for t in await backend.attach(index)}

    assert tools["ping"] is provider.plain  # a definition without a secret is registered as it is
    assert tools["whoami"].meta == {"key": "***"}
    search = index.get("cat:search")
    assert search.description == "Searches with key ***."
    # In a regular expression the mask is a regex literal: the schema still compiles, and runs.
    assert search.input_schema["properties"]["key"] == {
        "type": "string",
        "pattern": r"^(\*\*\*|public)$",
        "default": "***",
    }
    async with DefaultRunner(index, [backend]) as runner:
        assert (await runner.run("cat:search", {"key": "public"})).value == {
            "tool": "search",
            "args": {"key": "public"},
        }
    # A name that quotes the key cannot be masked and stay a name: the tool is skipped, saying so without the key.
    assert list(backend.skipped) == ["key_***"]
    assert SECRET not in repr(backend.skipped) and SECRET not in repr(index.list_tools().tools)
