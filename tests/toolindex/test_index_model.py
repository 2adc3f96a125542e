import pytest

from toolindex import BackendRef, InvalidToolError, Tool, summarize

WIRE = {
    "name": "search_issues",
    "title": "Search issues",
    "description": "Search issues across repositories. Supports the GitHub query syntax.",
    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    "outputSchema": {"type": "object", "properties": {"total": {"type": "integer"}}},
    "annotations": {"readOnlyHint": True},
    "_meta": {"origin": "test"},
    "icons": [{"src": "x.png"}],
}


def test_from_mcp_accepts_camel_case_wire_json() -> None:
    tool = Tool.from_mcp(WIRE, namespace="github", tags=["Code Review", " GitHub "])
    assert tool.id == "github:search_issues"
    assert tool.input_schema["required"] == ["q"]
    assert tool.output_schema == WIRE["outputSchema"]
    assert tool.annotations == {"readOnlyHint": True}
    assert tool.meta == {"origin": "test"}
    assert tool.tags == ("code-review", "github")
    assert tool.summary == "Search issues across repositories."


def test_from_mcp_accepts_snake_case() -> None:
    data = {
        "name": "search_issues",
        "description": None,
        "input_schema": {"type": "object", "properties": {}},
        "output_schema": None,
    }
    tool = Tool.from_mcp(data, namespace="gh", version="2.0")
    assert tool.id == "gh:search_issues:2.0"
    assert tool.description == ""
    assert tool.summary == "search_issues"  # no description: falls back to the name


def test_to_mcp_round_trips() -> None:
    tool = Tool.from_mcp(WIRE, namespace="github")
    again = Tool.from_mcp(tool.to_mcp(), namespace="github")
    assert again == tool


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"name": "bad name!"}, "name", "contains"),
        ({"name": "ok", "inputSchema": {"type": "string"}}, "input_schema", "must describe an object"),
        ({"name": "ok", "inputSchema": {"type": "object", "properties": []}}, "input_schema", "properties"),
        ({"name": "ok", "tags": [1]}, "tags", "strings"),
        ({"description": "no name"}, "name", "required"),
    ],
)
def test_bad_fields_name_the_tool_and_field(data: dict[str, object], field: str, words: str) -> None:
    with pytest.raises(InvalidToolError) as info:
        Tool.from_mcp(data, namespace="ns")
    assert info.value.field == field
    assert words in info.value.reason
    assert info.value.tool == str(data.get("name", "?"))
    assert field in str(info.value)


def test_bad_namespace_is_named() -> None:
    with pytest.raises(InvalidToolError) as info:
        Tool.from_mcp({"name": "x"}, namespace="a:b")
    assert info.value.field == "namespace"
    assert "':'" in info.value.reason


def test_backend_refs() -> None:
    assert str(BackendRef.local("fn")) == "local:fn"
    assert str(BackendRef.mcp("github", "search")) == "mcp:github/search"
    assert BackendRef.of_provider("p1").owner == "p1"
    with pytest.raises(ValueError, match="needs 'server'"):
        BackendRef(kind="mcp")


def test_summarize_takes_the_first_sentence_and_caps_length() -> None:
    text = "Get the current weather for a city. Then more text follows here."
    assert summarize(text) == "Get the current weather for a city."
    assert summarize("Too short. Kept whole then.") == "Too short. Kept whole then."  # no stub sentences
    assert summarize("Line one\n\nsecond paragraph") == "Line one"
    long = summarize("word " * 100, limit=40)
    assert len(long) <= 40
    assert long.endswith("…")
    assert summarize(None) == ""
