from __future__ import annotations

from typing import Any

import pytest

from toolindex import BackendRef
from toolrun import BackendResult, MCPBackend, StdioServerConfig, backends_from_config, load_config
from toolrun._mcp_wire import error_text, normalise_result, parse_tool


def test_structured_content_wins() -> None:
    raw = {"content": [{"type": "text", "text": '{"a": 2}'}], "structuredContent": {"a": 1}}
    assert normalise_result(raw) == BackendResult({"a": 1}, ({"type": "text", "text": '{"a": 2}'},), False)


@pytest.mark.parametrize(
    ("text", "value"),
    [('{"a": [1, 2]}', {"a": [1, 2]}), ("[1]", [1]), ("42", 42), ("  true", True), ('"s"', "s"), ("null", None)],
)
def test_single_json_text_block_is_parsed(text: str, value: Any) -> None:
    res = normalise_result({"content": [{"type": "text", "text": text}]})
    assert res.structured == value
    assert res.content == ({"type": "text", "text": text},)


@pytest.mark.parametrize("text", ["hello", "42 apples", "{broken", ""])
def test_plain_text_is_not_structured(text: str) -> None:
    assert normalise_result({"content": [{"type": "text", "text": text}]}).structured is None


def test_several_blocks_are_kept_in_wire_form() -> None:
    blocks = [
        {"type": "text", "text": "1"},
        {"type": "image", "data": "iVBOR", "mimeType": "image/png"},
        {"type": "audio", "data": "UklG", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "mem://x", "text": "t"}},
        {"type": "resource_link", "uri": "file:///x", "name": "x"},
    ]
    res = normalise_result({"content": blocks})
    assert res.structured is None
    assert res.content == tuple(blocks)


def test_is_error() -> None:
    res = normalise_result({"content": [{"type": "text", "text": "boom"}], "isError": True})
    assert res.is_error
    assert error_text(res.content) == "boom"
    assert "without a message" in error_text(())


@pytest.mark.parametrize("raw", [{"content": "x"}, {"content": [1]}, {"content": [{"text": "no type"}]}])
def test_malformed_results(raw: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="content"):
        normalise_result(raw)


def test_parse_tool() -> None:
    t = parse_tool(
        {
            "name": "get_weather",
            "description": "Weather.",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
            "outputSchema": {"type": "object"},
            "icons": [{"src": "x"}],
        },
        "weather",
    )
    assert t.id == "weather:get_weather"
    assert t.output_schema == {"type": "object"}


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"name": "x"}, "missing inputSchema"),
        ({"name": "x", "inputSchema": {"type": "string"}}, "type 'object'"),
        ({"name": "x", "inputSchema": []}, "must be an object"),
        ({"name": "x", "inputSchema": {"type": "object", "properties": {"a": {"type": 5}}}}, "not a valid JSON Schema"),
        ({"name": "x", "inputSchema": {"type": "object"}, "outputSchema": {"type": "nope"}}, "outputSchema"),
        ({"name": "bad name!", "inputSchema": {"type": "object"}}, "name"),
        ("just a string", "must be an object"),
    ],
)
def test_parse_tool_rejects(raw: Any, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_tool(raw, "ns")


def test_backend_identity() -> None:
    b = MCPBackend("git", StdioServerConfig(command="uvx"))
    assert (b.kind, b.supports_progress, b.name, b.label) == ("mcp", True, "git", "mcp:git")
    assert b.handles(BackendRef.mcp("git", tool="git_status"))
    assert not b.handles(BackendRef.mcp("time"))
    assert not b.handles(BackendRef.local("git"))
    assert b.protocol_version is None


def test_backends_from_config_skips_disabled() -> None:
    cfg = load_config({"mcpServers": {"a": {"command": "x"}, "b": {"command": "y", "disabled": True}}})
    assert [b.name for b in backends_from_config(cfg)] == ["a"]


def test_invalid_x_mcp_header_is_dropped_only_on_2026() -> None:
    raw = {
        "name": "t",
        "inputSchema": {"type": "object", "properties": {"cfg": {"type": "object", "x-mcp-header": "Cfg"}}},
    }
    assert parse_tool(raw, "ns").name == "t"  # 2025-11-25: the annotation means nothing
    with pytest.raises(ValueError, match="x-mcp-header"):
        parse_tool(raw, "ns", modern=True)


def test_backend_name_must_be_a_namespace() -> None:
    from toolrun import ConfigError

    with pytest.raises(ConfigError) as ei:
        MCPBackend("a:b", StdioServerConfig(command="x"))
    assert ei.value.server == "a:b"


@pytest.mark.anyio
async def test_backends_entered_by_open_backends_can_be_handed_to_an_entered_runner() -> None:
    # The documented pattern: `open_backends(...) as backends, DefaultRunner(index, backends) as runner`.
    # The runner enters context-manager backends too; an already-entered backend must not refuse.
    from toolindex import InMemoryIndex
    from toolrun import DefaultRunner, open_backends

    cfg = load_config({"mcpServers": {"a": {"command": "x"}}})  # entering connects nothing
    async with open_backends(cfg) as backends, DefaultRunner(InMemoryIndex(), backends):
        pass
    with pytest.raises(RuntimeError, match="already entered"):
        async with backends[0]:  # an exited backend stays closed
            pass
