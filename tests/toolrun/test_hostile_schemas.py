"""Upstream tool schemas are data, never instructions: no fetching, bounded regex, bounded size.

Every "did not stall" bound here is generous (2 s) against attacks that took tens of seconds
(or forever) before: a ReDoS pattern held the event loop ~50 s, a ``$ref`` to a slow URL 90 s,
a 30,000-property schema stalled unrelated runs for 21 s.
"""

from __future__ import annotations

import gzip
import http.server
import json
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolindex import BackendRef, InMemoryIndex, Tool
from toolrun import (
    BackendResult,
    DefaultRunner,
    InputValidationError,
    InvalidSchemaError,
    SchemaLimitError,
    SchemaLimits,
    compile_schema,
)
from toolrun._mcp_wire import parse_tool
from toolrun._schema_limits import check_schema_bounds

QUICK = 2.0  # seconds of CPU time: "did not stall" (the bugs computed for minutes)
HANG_S = 60.0  # seconds of wall time: a bound for a call that never returns, not a speed


@contextmanager
def computes_within(seconds: float) -> Iterator[None]:
    """Fail when the block uses more than ``seconds`` of this process's CPU time.

    CPU time, not wall time: a busy machine stretches the wall time of a computation but not the CPU
    time it needs. Worker threads count too (they are this process).
    """
    start = time.process_time()
    yield
    used = time.process_time() - start
    assert used < seconds, f"computed for {used:.2f} s of CPU time (bound {seconds} s)"


class Recorder:
    """A real backend for provider ``p`` that records every call it gets and echoes the arguments."""

    kind = "provider"
    supports_progress = False

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def handles(self, ref: BackendRef) -> bool:
        return ref.kind == "provider" and ref.provider == "p"

    async def attach(self, index: Any) -> list[Tool]:
        return []

    async def call(self, ref: BackendRef, tool: Tool, args: Mapping[str, Any], **kw: Any) -> BackendResult:
        self.calls.append(dict(args))
        return BackendResult({"ok": True})

    async def aclose(self) -> None:
        return None


def runner_with(schema: dict[str, Any]) -> tuple[DefaultRunner, Recorder]:
    index = InMemoryIndex()
    index.register(Tool(name="t", namespace="p", input_schema=schema), BackendRef.of_provider("p", tool="t"))
    backend = Recorder()
    return DefaultRunner(index, [backend]), backend  # type: ignore[list-item]


def tool_entry(schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": "t", "inputSchema": schema}


# -- a real HTTP server on 127.0.0.1 that records every request --------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    requests: list[str]

    def do_GET(self) -> None:
        self.requests.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    handler = type("Handler", (_Handler,), {"requests": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_the_recording_server_records(http_server: tuple[str, list[str]]) -> None:
    # The zero-request assertions below mean something only if a fetch would be seen.
    import urllib.request

    base, seen = http_server
    with urllib.request.urlopen(f"{base}/probe.json", timeout=5) as r:
        assert r.read() == b'{"type": "integer"}'
    assert seen == ["/probe.json"]


@pytest.mark.parametrize(
    "shape",
    [
        lambda url: {"type": "object", "properties": {"a": {"$ref": url}}},
        lambda url: {"type": "object", "$defs": {"unused": {"$ref": url}}},
        lambda url: {"type": "object", "properties": {"a": {"items": {"allOf": [{"$ref": url + "#/x"}]}}}},
        lambda url: {"$id": url + "/root.json", "type": "object", "properties": {"a": {"$ref": "other.json"}}},
    ],
)
def test_http_ref_is_never_fetched(http_server: tuple[str, list[str]], shape: Any) -> None:
    base, seen = http_server
    schema = shape(f"{base}/schema.json")
    with pytest.raises(ValueError, match="points outside this schema") as listed:
        parse_tool(tool_entry(schema), "srv")
    assert "$ref" in str(listed.value)
    with pytest.raises(InvalidSchemaError, match="points outside this schema"):
        compile_schema(schema)
    assert seen == []


def test_unknown_dollar_schema_is_never_fetched(http_server: tuple[str, list[str]]) -> None:
    base, seen = http_server
    with pytest.raises(ValueError, match="meta-schema"):
        parse_tool(tool_entry({"$schema": f"{base}/meta.json", "type": "object"}), "srv")
    assert seen == []


@pytest.mark.anyio
async def test_runner_never_contacts_a_ref_url_and_never_calls_the_backend(
    http_server: tuple[str, list[str]],
) -> None:
    base, seen = http_server
    runner, backend = runner_with({"type": "object", "properties": {"a": {"$ref": f"{base}/schema.json"}}})
    async with runner:
        with anyio.fail_after(HANG_S), pytest.raises(InputValidationError) as info:
            await runner.run("p:t", {"a": 1})
    assert "points outside this schema" in str(info.value)
    assert backend.calls == []
    assert seen == []


def test_file_ref_never_reads_the_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"description": "TOKEN-5f3a9c-DO-NOT-LEAK"}')
    schema = {"type": "object", "properties": {"a": {"$ref": secret.as_uri()}}}
    with pytest.raises(ValueError) as listed:
        parse_tool(tool_entry(schema), "srv")
    with pytest.raises(InvalidSchemaError) as compiled:
        compile_schema(schema)
    for text in (str(listed.value), str(compiled.value)):
        assert "points outside this schema" in text
        assert "TOKEN-5f3a9c" not in text


@pytest.mark.anyio
async def test_file_ref_secret_never_reaches_a_caller(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "string", "const": "TOKEN-5f3a9c-DO-NOT-LEAK"}')
    runner, backend = runner_with({"type": "object", "properties": {"a": {"$ref": secret.as_uri()}}})
    async with runner:
        with pytest.raises(InputValidationError) as info:
            await runner.run("p:t", {"a": "guess"})
    text = str(info.value) + "".join(p.message for p in info.value.problems)
    assert "TOKEN-5f3a9c" not in text
    assert backend.calls == []


def test_ref_to_dev_zero_returns_promptly() -> None:
    with computes_within(QUICK):
        with pytest.raises(InvalidSchemaError, match="points outside this schema"):
            compile_schema({"type": "object", "properties": {"a": {"$ref": "file:///dev/zero"}}})
        with pytest.raises(ValueError, match="points outside this schema"):
            parse_tool(tool_entry({"type": "object", "$ref": "file:///dev/zero"}), "srv")


def test_catastrophic_backtracking_pattern_is_answered_fast() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
    compiled = compile_schema(schema)
    evil = {"s": "a" * 40 + "b"}
    with computes_within(QUICK):
        assert not compiled.is_valid(evil)
        problems = compiled.problems(evil)
        assert compiled.is_valid({"s": "a" * 100_000})
    assert [p.path for p in problems] == ["$.s"]
    assert "does not match" in problems[0].message


@pytest.mark.anyio
async def test_catastrophic_backtracking_pattern_through_the_runner() -> None:
    runner, backend = runner_with({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}})
    async with runner:
        with anyio.fail_after(HANG_S), computes_within(QUICK):
            for _ in range(20):
                with pytest.raises(InputValidationError, match=r"\$\.s"):
                    await runner.run("p:t", {"s": "a" * 40 + "b"})
            await runner.run("p:t", {"s": "aaaa"})
    assert backend.calls == [{"s": "aaaa"}]


def test_look_ahead_pattern_is_left_unchecked_and_says_so() -> None:
    # The linear-time engine has no look-around; the tool itself still checks its own input.
    compiled = compile_schema({"type": "object", "properties": {"id": {"type": "string", "pattern": "^(?!-)[a-z-]+$"}}})
    assert compiled.unchecked_patterns == ("/properties/id/pattern",)
    assert compiled.is_valid({"id": "-abc"})  # not checked here ...
    assert not compiled.is_valid({"id": 5})  # ... while every other keyword still is


def test_look_ahead_in_pattern_properties_makes_the_schema_invalid() -> None:
    with pytest.raises(InvalidSchemaError, match="look-around"):
        compile_schema({"type": "object", "patternProperties": {"^(?!x)": {"type": "integer"}}})


def test_invalid_regex_makes_the_schema_invalid() -> None:
    with pytest.raises(InvalidSchemaError, match="regular expression") as info:
        compile_schema({"type": "object", "properties": {"s": {"pattern": "(unclosed"}}})
    assert info.value.pointer == "/properties/s/pattern"


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def test_schema_nested_5000_levels_is_refused_quickly() -> None:
    schema = _nested(5000)
    with computes_within(QUICK):
        with pytest.raises(SchemaLimitError) as info:
            compile_schema(schema)
        with pytest.raises(ValueError, match="max_depth") as listed:
            parse_tool(tool_entry(schema), "srv")
    assert info.value.limit == "max_depth"
    assert info.value.pointer.startswith("/properties/a/properties/a")
    assert len(str(info.value)) < 500  # the pointer is clipped, not 5,000 levels long
    assert "nested deeper than 64 levels" in str(listed.value)


def test_schema_with_30000_properties_is_refused_quickly() -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(30_000)}}
    with computes_within(QUICK):
        with pytest.raises(SchemaLimitError) as info:
            compile_schema(schema)
        with pytest.raises(ValueError, match="max_properties"):
            parse_tool(tool_entry(schema), "srv")
    assert info.value.limit == "max_properties"
    assert info.value.pointer == "/properties"
    assert "30,000 members" in str(info.value)


@pytest.mark.anyio
async def test_over_bound_schema_fails_the_call_with_the_reason_and_never_calls_the_backend() -> None:
    runner, backend = runner_with(_nested(5000))
    async with runner:
        with anyio.fail_after(HANG_S), computes_within(QUICK):
            for _ in range(3):  # the verdict is kept: no second walk, same reason
                with pytest.raises(InputValidationError, match="max_depth bound"):
                    await runner.run("p:t", {})
    assert backend.calls == []


def test_exponential_ref_expansion_is_refused_quickly() -> None:
    # Each definition uses the next one twice: 2**40 subschema evaluations per check.
    defs: dict[str, Any] = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(40)}
    defs["d40"] = {"type": "integer"}
    with computes_within(QUICK):
        with pytest.raises(SchemaLimitError) as info:
            compile_schema({"$defs": defs, "$ref": "#/$defs/d0"})
    assert info.value.limit == "max_expanded_nodes"


def test_recursive_ref_applied_twice_to_one_value_is_refused() -> None:
    # Validating a value 30 levels deep against this took minutes: 2**30 evaluations.
    schema = {"type": "object", "properties": {"c": {"allOf": [{"$ref": "#"}, {"$ref": "#"}]}}}
    with computes_within(QUICK):
        with pytest.raises(SchemaLimitError) as info:
            compile_schema(schema)
    assert info.value.limit == "max_applications"
    with pytest.raises(ValueError, match="max_applications"):
        parse_tool(tool_entry(schema), "srv")


@pytest.mark.parametrize(
    "schema",
    [
        {  # any JSON value
            "$defs": {
                "json": {
                    "anyOf": [
                        {"type": "object", "additionalProperties": {"$ref": "#/$defs/json"}},
                        {"type": "array", "items": {"$ref": "#/$defs/json"}},
                        {"type": ["string", "number", "boolean", "null"]},
                    ]
                }
            },
            "$ref": "#/$defs/json",
        },
        {  # a binary tree: two recursive references, on different values
            "$defs": {
                "n": {"type": "object", "properties": {"left": {"$ref": "#/$defs/n"}, "right": {"$ref": "#/$defs/n"}}}
            },
            "$ref": "#/$defs/n",
        },
        {  # what pydantic writes for a recursive model with an optional parent
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                        "parent": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}], "default": None},
                    },
                }
            },
            "$ref": "#/$defs/Node",
        },
    ],
)
def test_ordinary_recursive_schemas_are_accepted(schema: dict[str, Any]) -> None:
    compiled = compile_schema(schema)
    assert compiled.summary.recursive
    value: Any = {}
    for _ in range(200):
        value = {"left": value, "children": [{"children": []}], "parent": None}
    with computes_within(QUICK):
        compiled.is_valid(value)


@pytest.mark.parametrize(
    ("limits", "schema", "limit"),
    [
        (SchemaLimits(max_nodes=10), {"type": "object", "properties": {"a": {"enum": list(range(20))}}}, "max_nodes"),
        (SchemaLimits(max_size=100), {"type": "object", "description": "x" * 200}, "max_size"),
        (SchemaLimits(max_refs=1), {"$defs": {"a": {}}, "allOf": [{"$ref": "#/$defs/a"}] * 2}, "max_refs"),
        (SchemaLimits(max_patterns=1), {"properties": {"a": {"pattern": "a"}, "b": {"pattern": "b"}}}, "max_patterns"),
    ],
)
def test_each_bound_is_named(limits: SchemaLimits, schema: dict[str, Any], limit: str) -> None:
    with pytest.raises(SchemaLimitError) as info:
        check_schema_bounds(schema, limits)
    assert info.value.limit == limit
    assert limit in str(info.value)


CATALOGS = Path(__file__).parents[1] / "data" / "eval"


def test_default_bounds_accept_every_real_tool_schema() -> None:
    # 3,512 input schemas from six public tool catalogs (provenance in tests/data/eval/README.md).
    schemas = []
    catalogs = 0
    for path in sorted(CATALOGS.glob("*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            tools = json.load(f).get("tools")  # a file of queries alone holds none
        if tools:
            catalogs += 1
            schemas.extend(t["input_schema"] for t in tools)
    assert catalogs == 6, f"the evaluation catalogs are missing from {CATALOGS}"
    assert len(schemas) == 3512
    invalid = 0
    for schema in schemas:
        check_schema_bounds(schema)  # never over a bound
        try:
            compiled = compile_schema(schema)
        except InvalidSchemaError as e:
            assert not isinstance(e, SchemaLimitError)
            invalid += 1  # e.g. "required": true inside a property, draft-03 style
            continue
        assert compiled.unchecked_patterns == ()
    assert invalid == 5  # what the jsonschema package refuses too


def test_default_bounds_accept_a_schema_at_the_depth_bound() -> None:
    # 31 nested "properties" objects: 1 + 2 * 31 = 63 levels, one below the bound.
    assert compile_schema(_nested(31)).summary.depth == 63


def test_refs_inside_data_keywords_are_values_not_references() -> None:
    s = compile_schema({"type": "object", "default": {"$ref": "https://example.invalid/x"}, "properties": {}})
    assert s.is_valid({})


@pytest.mark.anyio
async def test_recursive_local_ref_tree_schema_validates_through_the_runner() -> None:
    tree = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/node"}},
        "required": ["root"],
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "required": ["name"],
                "additionalProperties": False,
            }
        },
    }
    compiled = compile_schema(tree)
    assert compiled.summary.recursive
    good = {"root": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}}
    bad = {"root": {"name": "a", "children": [{"name": "b", "children": [{"nom": "c"}]}]}}
    runner, backend = runner_with(tree)
    async with runner:
        await runner.run("p:t", good)
        with pytest.raises(InputValidationError) as info:
            await runner.run("p:t", bad)
    assert {p.path for p in info.value.problems} == {
        "$.root.children[0].children[0].name",
        "$.root.children[0].children[0].nom",
    }
    assert backend.calls == [good]


# -- arguments are plain JSON before any backend sees them --------------------------------


class Opaque:
    pass


def _deep_list(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("args", "path", "words"),
    [
        ({"a": ...}, "$.a", "ellipsis is not JSON"),
        ({"a": [1, {"b": len}]}, "$.a[1].b", "builtin_function_or_method is not JSON"),
        ({"err": ValueError("boom")}, "$.err", "ValueError is not JSON"),
        ({"x": Opaque()}, "$.x", "Opaque is not JSON"),
        ({"n": float("nan")}, "$.n", "nan is not a JSON number"),
        ({"n": [float("-inf")]}, "$.n[0]", "-inf is not a JSON number"),
        ({"b": b"bytes"}, "$.b", "bytes is not JSON"),
        ({"s": {1, 2}}, "$.s", "set is not JSON"),
        ({"s": "ok \ud800 no"}, "$.s", "lone surrogate"),
        ({"l": ["fine", "\udfff"]}, "$.l[1]", "lone surrogate"),
        ({"o": {"k\ud83d": 1}}, "$.o", "lone surrogate"),
        ({"o": {1: "x"}}, "$.o", "keys must be strings"),
        ({"i": 10**5000}, "$.i", "more than 4,000 digits"),
        ({"d": _deep_list(64)}, "$.d" + "[0]" * 63, "deeper than 64 levels"),
        ({"big": "x" * (5 * 1024 * 1024)}, "$", "larger than 4,194,304 characters"),
    ],
)
@pytest.mark.anyio
async def test_non_json_arguments_are_refused_before_the_backend(args: dict[str, Any], path: str, words: str) -> None:
    runner, backend = runner_with({"type": "object"})
    async with runner:
        with pytest.raises(InputValidationError) as info:
            await runner.run("p:t", args)
    assert backend.calls == []
    [problem] = info.value.problems
    assert problem.path == path
    assert words in problem.message
    assert info.value.tool_id == "p:t"
    str(info.value).encode()  # the message itself is valid UTF-8 (no lone surrogate echoed)


@pytest.mark.anyio
async def test_non_json_arguments_are_refused_even_without_input_validation() -> None:
    index = InMemoryIndex()
    index.register(Tool(name="t", namespace="p"), BackendRef.of_provider("p", tool="t"))
    backend = Recorder()
    async with DefaultRunner(index, [backend], validate_input=False) as runner:  # type: ignore[list-item]
        with pytest.raises(InputValidationError, match="not JSON"):
            await runner.run("p:t", {"a": object()})
    assert backend.calls == []


@pytest.mark.anyio
async def test_plain_json_arguments_pass_unchanged() -> None:
    import enum

    class Color(enum.StrEnum):
        RED = "red"

    args = {
        "s": "naïve ☃ 😀",
        "n": [1, 2.5, -0.0, True, None],
        "t": (1, "two"),
        "c": Color.RED,
        "d": _deep_list(63),
        "big": 10**100,
    }
    runner, backend = runner_with({"type": "object"})
    async with runner:
        await runner.run("p:t", args)
    assert backend.calls == [args]
