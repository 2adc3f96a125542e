"""OpenAPI documents as tools: names, schemas, references, configuration, and hostile documents.

Calls over real HTTP are in tests/integration/test_openapi_service.py.
"""

from __future__ import annotations

import ast
import gzip
import json
import sys
from pathlib import Path
from typing import Any

import httpx2
import jsonschema_rs
import pytest
import structlog

from tooldocs import STUB_IMPORTS, render_module, tool_signature
from toolindex import InMemoryIndex, Tool
from toolrun import (
    BackendUnavailableError,
    ConfigError,
    OpenAPIProvider,
    OpenAPIServerConfig,
    ProviderBackend,
    _openapi_tools,
    backends_from_config,
    compile_schema,
    load_config,
    open_backends,
    redact,
)
from toolrun._openapi_target import PathError, PathTemplate
from toolrun._validation import json_path

pytestmark = pytest.mark.anyio


def doc(paths: dict[str, Any], *, version: str = "3.0.3", **components: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"openapi": version, "info": {"title": "t", "version": "1"}, "paths": paths}
    out["servers"] = [{"url": "https://api.example.org/v1"}]
    if components:
        out["components"] = components
    return out


def ok(schema: dict[str, Any] | None = None) -> dict[str, Any]:
    if schema is None:
        return {"200": {"description": "ok"}}
    return {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}


async def tools_of(document: dict[str, Any], **kw: Any) -> tuple[dict[str, Tool], OpenAPIProvider]:
    provider = OpenAPIProvider("api", document, **kw)
    backend = ProviderBackend("api", provider)
    with structlog.testing.capture_logs():
        tools = await backend.attach(InMemoryIndex())
    assert not backend.skipped, backend.skipped  # every tool the provider made is a valid Tool
    return {t.name: t for t in tools}, provider


PETSTORE = doc(
    {
        "/pets/{petId}": {
            "parameters": [{"name": "petId", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "get": {
                "operationId": "pets/get",
                "summary": "Get a pet",
                "tags": ["Pets"],
                "parameters": [
                    {"$ref": "#/components/parameters/Fields"},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                    {"name": "Accept", "in": "header", "schema": {"type": "string"}},
                    {"name": "petId", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": {"$ref": "#/components/responses/Pet"},
                    "404": {"description": "no"},
                },
            },
            "put": {
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewPet"}}},
                },
                "responses": {"204": {"description": "done"}},
            },
        },
        "/trees": {
            "post": {
                "operationId": "pets/get",  # a duplicate: gets a suffix
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Tree"}}}},
                "responses": ok({"$ref": "#/components/schemas/Tree"}),
            }
        },
    },
    parameters={"Fields": {"name": "fields", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}}},
    responses={
        "Pet": {
            "description": "a pet",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}},
        }
    },
    schemas={
        "NewPet": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string"},
                "tag": {"type": "string", "nullable": True},
                "age": {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "example": 3},
            },
        },
        "Pet": {"allOf": [{"$ref": "#/components/schemas/NewPet"}, {"properties": {"id": {"type": "integer"}}}]},
        "Tree": {
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#/components/schemas/Tree"}}},
        },
    },
)


async def test_every_operation_becomes_a_tool_with_mcp_names() -> None:
    tools, provider = await tools_of(PETSTORE)
    assert sorted(tools) == ["pets_get", "pets_get_2", "put_pets_petId"]
    get = tools["pets_get"]
    assert get.title == "Get a pet" and get.tags == ("pets",)
    assert get.description.endswith("HTTP: GET /pets/{petId}")
    assert get.annotations is not None and get.annotations["readOnlyHint"] is True
    op = provider.operations["pets_get"]
    assert (op.method, op.path, op.operation_id) == ("GET", "/pets/{petId}", "pets/get")
    assert op.server == "https://api.example.org/v1"


async def test_parameters_are_arguments_and_a_name_used_twice_gets_its_location() -> None:
    tools, _ = await tools_of(PETSTORE)
    schema = tools["pets_get"].input_schema
    # Path parameter from the path item, the query one renamed; Accept is the client's (ignored).
    assert list(schema["properties"]) == ["path_petId", "fields", "X-Trace", "query_petId"]
    assert schema["required"] == ["path_petId"]
    assert schema["additionalProperties"] is False


async def test_a_plain_object_body_is_flattened_and_openapi_30_becomes_json_schema() -> None:
    tools, provider = await tools_of(PETSTORE)
    schema = tools["put_pets_petId"].input_schema
    assert list(schema["properties"]) == ["petId", "name", "tag", "age"]
    assert schema["required"] == ["petId", "name"]
    assert schema["properties"]["tag"] == {"type": ["string", "null"]}
    assert schema["properties"]["age"] == {"type": "integer", "exclusiveMinimum": 0}
    body = provider.operations["put_pets_petId"].body
    assert body is not None and body.arg is None and body.fields == ("name", "tag", "age")
    validator = compile_schema(schema)
    assert validator.is_valid({"petId": 1, "name": "Rex", "tag": None})
    assert not validator.is_valid({"petId": 1, "name": "Rex", "age": 0})


async def test_references_become_defs_and_recursive_schemas_stay_finite() -> None:
    tools, _ = await tools_of(PETSTORE)
    out = tools["pets_get"].output_schema
    assert out is not None
    assert out["$ref"] == "#/$defs/Pet" and set(out["$defs"]) == {"Pet", "NewPet"}
    tree = tools["pets_get_2"]
    # The body is a reference to a recursive object: flattened, its recursion kept in $defs.
    assert tree.input_schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert set(tree.input_schema["$defs"]) == {"Tree"}
    validator = compile_schema(tree.input_schema)
    assert validator.is_valid({"children": [{"children": [{"children": []}]}]})
    assert not validator.is_valid({"children": [{"children": [1]}]})


async def test_signatures_render_as_python() -> None:
    tools, _ = await tools_of(PETSTORE)
    module = render_module(list(tools.values()))
    ast.parse(module.text)
    sig = tool_signature(tools["put_pets_petId"])
    ast.parse(f"{STUB_IMPORTS}\n{sig.text}")
    assert "name: str" in sig.text and "tag: str | None" in sig.text


async def test_openapi_31_keeps_siblings_of_ref_and_type_lists() -> None:
    document = doc(
        {
            "/a": {
                "get": {
                    "operationId": "a",
                    "parameters": [
                        {
                            "name": "when",
                            "in": "query",
                            "schema": {"$ref": "#/components/schemas/When", "description": "Pick a day."},
                        }
                    ],
                    "responses": ok({"type": ["object", "null"]}),
                }
            }
        },
        version="3.1.0",
        schemas={"When": {"type": ["string", "null"], "format": "date"}},
    )
    tools, _ = await tools_of(document)
    when = tools["a"].input_schema["properties"]["when"]
    assert when == {"$ref": "#/$defs/When", "description": "Pick a day."}
    assert tools["a"].output_schema == {"type": ["object", "null"]}


async def test_a_body_that_is_not_a_plain_object_is_the_body_argument() -> None:
    document = doc(
        {
            "/x/{body}": {
                "post": {
                    "operationId": "x",
                    "parameters": [{"name": "body", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {}}}}},
                    "responses": ok(),
                }
            },
            "/y": {
                "post": {
                    "operationId": "y",
                    "requestBody": {
                        "required": True,
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                    "responses": ok(),
                }
            },
        }
    )
    tools, provider = await tools_of(document)
    assert list(tools["x"].input_schema["properties"]) == ["body", "request_body"]
    y = provider.operations["y"].body
    assert y is not None and (y.arg, y.media_type, y.required) == ("body", "text/plain", True)
    assert tools["y"].input_schema["required"] == ["body"]


async def test_include_and_tags_choose_operations() -> None:
    tools, _ = await tools_of(PETSTORE, include=["put_*"])
    assert list(tools) == ["put_pets_petId"]
    tools, _ = await tools_of(PETSTORE, tags=["PETS"])
    assert list(tools) == ["pets_get"]
    tools, _ = await tools_of(PETSTORE, output_schemas=False)
    assert all(t.output_schema is None for t in tools.values())


# -- hostile documents ------------------------------------------------------------------------


def op_with_schema(schema: Any) -> dict[str, Any]:
    return {"get": {"parameters": [{"name": "p", "in": "query", "schema": schema}], "responses": ok()}}


async def test_schema_keywords_are_kept_converted_or_dropped_each_as_its_kind() -> None:
    schema = {
        "type": "object",
        "description": "kept as it is",
        "x-internal": True,  # an extension: dropped
        "example": {"a": 1},  # documentation only: dropped
        "xml": {"name": "p"},
        "properties": {
            "f": {"type": "file"},  # Swagger 2's "file": no JSON type, so none is checked
            "n": {"type": "integer", "nullable": True, "enum": [1, 2]},
        },
        "additionalProperties": {"type": "string", "x-note": "dropped too"},
        "anyOf": [{"required": ["n"]}, {"required": ["f"]}],
    }
    tools, _ = await tools_of(doc({"/a": op_with_schema(schema)}))
    assert tools["get_a"].input_schema["properties"]["p"] == {
        "type": "object",
        "description": "kept as it is",
        "properties": {"f": {}, "n": {"type": ["integer", "null"], "enum": [1, 2, None]}},
        "additionalProperties": {"type": "string"},
        "anyOf": [{"required": ["n"]}, {"required": ["f"]}],
    }


@pytest.mark.parametrize(
    "wrapped",
    [
        {"allOf": [{"$ref": "#/components/schemas/User"}], "nullable": True, "description": "who"},
        {"oneOf": [{"$ref": "#/components/schemas/User"}], "nullable": True},
        {"type": "object", "allOf": [{"$ref": "#/components/schemas/User"}], "nullable": True},
    ],
)
async def test_nullable_beside_a_combinator_admits_null_and_nothing_else(wrapped: dict[str, Any]) -> None:
    # OpenAPI 3.0's way to make a referenced object nullable (siblings of $ref are ignored):
    # null is an alternative to the whole schema, not a type added beside its members.
    user = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
    answer = {"type": "object", "properties": {"assignee": wrapped}, "required": ["assignee"]}
    document = doc({"/t": {"get": {"responses": ok(answer)}}}, schemas={"User": user})
    tools, _ = await tools_of(document)
    check = jsonschema_rs.validator_for(tools["get_t"].output_schema)
    assert check.is_valid({"assignee": None})
    assert check.is_valid({"assignee": {"id": 1}})
    assert not check.is_valid({"assignee": {"name": "x"}})
    assert not check.is_valid({"assignee": 3})
    assignee = tools["get_t"].output_schema["properties"]["assignee"]
    assert "nullable" not in json.dumps(assignee)
    if "description" in wrapped:
        assert assignee["description"] == "who"


@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        ("https://evil.example/schema.json", "leaves the document (nothing is fetched)"),
        ("file:///etc/passwd", "leaves the document"),
        ("other.yaml#/components/schemas/X", "leaves the document"),
        ("#/components/schemas/Missing", "points at nothing in the document"),
    ],
)
async def test_references_outside_the_document_skip_only_their_operation(ref: str, reason: str) -> None:
    document = doc({"/bad": op_with_schema({"$ref": ref}), "/good": op_with_schema({"type": "string"})})
    provider = OpenAPIProvider("api", document)
    with structlog.testing.capture_logs() as logs:
        tools = await provider.list_tools()
    assert [t["name"] for t in tools] == ["get_good"]
    assert reason in provider.skipped["GET /bad"]
    assert any(e["event"] == "openapi.operation_skipped" for e in logs)


async def test_reference_loops_and_deep_nesting_are_refused() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(200):
        deep = {"type": "array", "items": deep}
    document = doc(
        {
            "/loop": {"get": {"parameters": [{"$ref": "#/components/parameters/A"}], "responses": ok()}},
            "/deep": op_with_schema(deep),
            "/self": op_with_schema({"$ref": "#/components/schemas/Self"}),
        },
        parameters={"A": {"$ref": "#/components/parameters/B"}, "B": {"$ref": "#/components/parameters/A"}},
        schemas={"Self": {"$ref": "#/components/schemas/Self"}},
    )
    provider = OpenAPIProvider("api", document)
    with structlog.testing.capture_logs():
        tools = await provider.list_tools()
    assert "more than 32 references in a row" in provider.skipped["GET /loop"]
    assert "nests deeper than 64 levels" in provider.skipped["GET /deep"]
    # A schema that is only a reference to itself is a definition that refers to itself: finite.
    assert [t["name"] for t in tools] == ["get_self"]


async def test_a_chain_of_thousands_of_references_does_not_exhaust_the_stack() -> None:
    n = 5000
    schemas = {
        f"S{i}": {"type": "object", "properties": {"next": {"$ref": f"#/components/schemas/S{i + 1}"}}}
        for i in range(n)
    }
    schemas[f"S{n}"] = {"type": "string"}
    document = doc({"/chain": op_with_schema({"$ref": "#/components/schemas/S0"})}, schemas=schemas)
    provider = OpenAPIProvider("api", document)
    with structlog.testing.capture_logs():
        assert await provider.list_tools() == []
    assert "more than 1,000 definitions" in provider.skipped["GET /chain"]


async def test_sizes_through_reference_cycles_are_measured_as_the_runner_measures_them() -> None:
    # A uses B once and B uses A a hundred times. Expanded from A, B's references back to A are
    # recursive and count once; expanded from B (as its $defs entry is), each A expands in full:
    # over the runner's bound of 50,000 values. The provider must not keep a schema the runner
    # then refuses on every call (it kept them when it reused B's size measured from inside A).
    # Only a schema that is a reference to A stays within it: the runner walks its $defs while
    # A is being inlined, so there B's references to A count once.
    a_ref = {"$ref": "#/components/schemas/A"}
    schemas = {
        "A": {
            "type": "object",
            "properties": {
                "b": {"$ref": "#/components/schemas/B"},
                "kind": {"type": "string", "enum": [f"v{i}" for i in range(500)]},
            },
        },
        "B": {"type": "object", "properties": {f"a{i}": a_ref for i in range(100)}},
        "Pair": {"type": "object", "properties": {"left": {"$ref": "#/components/schemas/Pair"}}},
    }
    document = doc(
        {
            "/a": {
                "post": {
                    "operationId": "write_a",
                    "requestBody": {"content": {"application/json": {"schema": a_ref}}},
                    "responses": ok(),
                },
                "get": {"operationId": "list_a", "responses": ok({"type": "array", "items": a_ref})},
            },
            "/a/{id}": {"get": {"operationId": "read_a", "responses": ok(a_ref)}},
            "/pair": {"get": {"operationId": "read_pair", "responses": ok({"$ref": "#/components/schemas/Pair"})}},
        },
        schemas=schemas,
    )
    provider = OpenAPIProvider("api", document)
    with structlog.testing.capture_logs() as logs:
        tools = {t["name"]: t for t in await provider.list_tools()}
    assert "values with references expanded (bound: 50,000)" in provider.skipped["POST /a"]
    assert "outputSchema" not in tools["list_a"]
    assert list(provider.trimmed) == ["list_a"] and "values with references expanded" in provider.trimmed["list_a"]
    summary = [e for e in logs if e["event"] == "openapi.tools_without_output_schema"]
    assert [(e["log_level"], e["tools"], e["first"]) for e in summary] == [("warning", 1, ["list_a"])]
    assert "outputSchema" in tools["read_a"] and "outputSchema" in tools["read_pair"]
    for tool in tools.values():
        compile_schema(tool["inputSchema"])
        if "outputSchema" in tool:
            compile_schema(tool["outputSchema"])


async def test_reference_cycles_too_intricate_to_measure_skip_only_what_goes_through_them() -> None:
    # 400 definitions, each using the next three: one cycle with more paths through it than
    # measuring may follow (its steps are bounded per document); a tool that does not go
    # through it is unaffected.
    n = 400
    schemas = {
        f"S{i}": {
            "type": "object",
            "properties": {f"p{k}": {"$ref": f"#/components/schemas/S{(i + k) % n}"} for k in (1, 2, 3)},
        }
        for i in range(n)
    }
    s0 = {"$ref": "#/components/schemas/S0"}
    document = doc(
        {
            "/s": {
                "get": {"responses": ok({"type": "array", "items": s0})},
                "post": {"requestBody": {"content": {"application/json": {"schema": s0}}}, "responses": ok()},
            },
            "/plain": {"get": {"responses": ok({"type": "string"})}},
        },
        schemas=schemas,
    )
    provider = OpenAPIProvider("api", document)
    with structlog.testing.capture_logs() as logs:
        tools = {t["name"]: t for t in await provider.list_tools()}
    assert "reference cycles take more than 1,000,000 steps to measure" in provider.skipped["POST /s"]
    assert set(tools) == {"get_s", "get_plain"}
    assert "outputSchema" not in tools["get_s"] and "outputSchema" in tools["get_plain"]
    assert list(provider.trimmed) == ["get_s"]
    assert [e["tools"] for e in logs if e["event"] == "openapi.tools_without_output_schema"] == [1]


async def test_yaml_alias_bombs_and_recursive_aliases_are_refused(tmp_path: Path) -> None:
    lines = ['openapi: "3.0.3"', 'a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\npaths: {}\n")
    with pytest.raises(ConfigError, match=r"server 'api' field 'openapi'.*more than 5,000,000 values"):
        await OpenAPIProvider("api", bomb).list_tools()
    loop = tmp_path / "loop.yaml"
    loop.write_text('openapi: "3.0.3"\npaths: &p {x: *p}\n')
    with pytest.raises(ConfigError, match="nests deeper than 256 levels"):
        await OpenAPIProvider("api", loop).list_tools()


async def test_a_document_with_more_operations_than_the_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each tool costs memory and start-up time: a 64 MiB document of tiny operations made about a
    # million (minutes of start-up, gigabytes). The bound counts what include and tags choose.
    monkeypatch.setattr(_openapi_tools, "MAX_OPERATIONS", 10)
    document = doc({f"/p{i}": {"get": {"operationId": f"op{i}", "responses": ok()}} for i in range(11)})
    with pytest.raises(ConfigError) as caught:
        await OpenAPIProvider("api", document).list_tools()
    assert caught.value.field == "openapi"
    assert "more than 10 operations (after 'include' and 'tags')" in caught.value.reason
    tools, _ = await tools_of(document, include=["op1", "op1?"])
    assert sorted(tools) == ["op1", "op10"]


async def test_documents_that_are_not_openapi_3_or_too_large_are_config_errors(tmp_path: Path) -> None:
    cases = {
        "swagger.json": (json.dumps({"swagger": "2.0", "paths": {}}), "Swagger 2.0 documents are not supported"),
        "none.json": (json.dumps({"paths": {}}), "not an OpenAPI 3.0 or 3.1 document"),
        "list.yaml": ("- 1\n- 2\n", "must be an object"),
        "broken.yaml": ("openapi: [\n", "not valid YAML"),
        "broken.json": ('{"openapi": ', "not valid JSON"),
        "nan.json": ('{"openapi": "3.0.0", "x": NaN}', "not valid JSON"),
        "deep.json": ("{" + '"a":[' * 100_000, "nests too deeply|not valid JSON"),
        "latin1.yaml": (b"openapi: \xe9".decode("latin-1"), "not UTF-8"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(text.encode("latin-1") if name == "latin1.yaml" else text.encode())
        with pytest.raises(ConfigError, match=message):
            await OpenAPIProvider("api", path).list_tools()
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"openapi": "3.0.3", "paths": {}, "pad": "x" * 5000}))
    with pytest.raises(ConfigError, match="larger than 1,000 bytes"):
        await OpenAPIProvider("api", big, max_document_bytes=1000).list_tools()
    with pytest.raises(ConfigError, match="cannot read"):
        await OpenAPIProvider("api", tmp_path / "missing.yaml").list_tools()


async def test_a_gzip_document_is_read_within_the_byte_cap_of_what_it_holds(tmp_path: Path) -> None:
    document = doc({"/pets": {"get": {"operationId": "listPets", "responses": ok()}}})
    packed = tmp_path / "pets.json.gz"
    packed.write_bytes(gzip.compress(json.dumps(document).encode()))
    yaml_named_oddly = tmp_path / "pets.yaml"  # told by its first bytes, not its name
    yaml_named_oddly.write_bytes(gzip.compress(b"openapi: 3.0.3\nservers: [{url: 'http://x'}]\npaths: {}\n"))
    tools, _ = await tools_of(document)
    assert [t["name"] for t in await OpenAPIProvider("api", packed).list_tools()] == list(tools)
    assert await OpenAPIProvider("api", yaml_named_oddly).list_tools() == []
    # A bomb: 30 KB that unpack to 30 MB stop at the cap, having unpacked no more than it.
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b'{"openapi": "3.0.3", "x": "' + b"0" * 30_000_000 + b'"}'))
    assert bomb.stat().st_size < 100_000
    with pytest.raises(ConfigError, match="unpacks to more than 1,000,000 bytes"):
        await OpenAPIProvider("api", bomb, max_document_bytes=1_000_000).list_tools()
    whole = packed.read_bytes()
    for name, data, message in [
        ("truncated.gz", whole[: len(whole) // 2], "truncated gzip file"),
        ("corrupt.gz", whole[:10] + b"\xff" * 40, "not a valid gzip file"),
        ("two.gz", whole + whole, "data after its gzip member"),
    ]:
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ConfigError, match=message):
            await OpenAPIProvider("api", tmp_path / name).list_tools()


def test_json_the_fast_parser_refuses_is_read_as_the_standard_library_reads_it() -> None:
    # Integers over 64 bits, lone surrogates, a byte-order mark: the same values either way.
    from toolrun._openapi_document import parse_document

    text = '{"openapi": "3.0.3", "big": 123456789012345678901234567890, "s": "\\ud800", "f": 1e400, "d": [1, 2]}'
    expected = json.loads(text)
    assert parse_document(text.encode(), server="api") == expected
    assert parse_document(b"\xef\xbb\xbf" + text.encode(), server="api") == expected
    assert parse_document(b" \n" + json.dumps({"openapi": "3.1.0", "x": "\u00e9"}).encode(), server="api") == {
        "openapi": "3.1.0",
        "x": "\u00e9",
    }
    with pytest.raises(ConfigError, match=r"not valid JSON: Expecting"):
        parse_document(b'{"openapi": "3.0.3",}', server="api")
    with pytest.raises(ConfigError, match=r"not UTF-8 text \(byte 15\)"):
        parse_document(b'{"openapi": "3.\xff"}', server="api")


async def test_yaml_documents_read_status_codes_and_dates_as_json(tmp_path: Path) -> None:
    path = tmp_path / "api.yaml"
    path.write_text(
        "openapi: 3.0.3\nservers: [{url: 'https://x.example'}]\npaths:\n  /d:\n    get:\n      operationId: d\n"
        "      parameters: [{name: since, in: query, schema: {type: string, default: 2024-01-31}}]\n"
        "      responses:\n        200:\n          description: ok\n"
        "          content: {application/json: {schema: {type: integer}}}\n"
    )
    provider = OpenAPIProvider("api", path)
    with structlog.testing.capture_logs():
        [tool] = await provider.list_tools()
    assert tool["inputSchema"]["properties"]["since"]["default"] == "2024-01-31"
    assert tool["outputSchema"] == {"type": "integer"}


async def test_a_document_without_a_server_needs_a_base_url() -> None:
    document = doc({"/a": {"get": {"operationId": "a", "responses": ok()}}})
    del document["servers"]
    with pytest.raises(ConfigError, match=r"server 'api' field 'baseUrl': the document declares no server URL"):
        await OpenAPIProvider("api", document).list_tools()
    with structlog.testing.capture_logs():
        assert len(await OpenAPIProvider("api", document, base_url="http://127.0.0.1:1").list_tools()) == 1


async def test_an_operation_whose_own_server_cannot_be_used_is_skipped_alone() -> None:
    # One operation declares a server that is no http(s) URL: it goes, the others stay.
    bad = {"get": {"operationId": "bad", "servers": [{"url": "file:///etc/passwd"}], "responses": ok()}}
    document = doc({"/a": {"get": {"operationId": "a", "responses": ok()}}, "/bad": bad})
    provider = OpenAPIProvider("api", document)
    with structlog.testing.capture_logs() as logs:
        tools = await provider.list_tools()
    assert [t["name"] for t in tools] == ["a"] and list(provider.operations) == ["a"]
    assert "not an http(s) URL" in provider.skipped["GET /bad"]
    assert any(e["event"] == "openapi.operation_skipped" and e["operation"] == "GET /bad" for e in logs)
    # When no operation has a usable server, the configuration is what is wrong.
    only_bad = doc({"/bad": bad})
    del only_bad["servers"]
    with pytest.raises(ConfigError, match="baseUrl"):
        await OpenAPIProvider("api", only_bad).list_tools()


async def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "referencing", None)
    with pytest.raises(ConfigError, match=r"pip install 'toolrun\[openapi\]'"):
        await OpenAPIProvider("api", PETSTORE).list_tools()
    monkeypatch.setitem(sys.modules, "yaml", None)
    path = tmp_path / "api.yaml"
    path.write_text("openapi: 3.0.3\n")
    with pytest.raises(ConfigError, match=r"pip install 'toolrun\[openapi\]'"):
        await OpenAPIProvider("api", path).list_tools()


# -- configuration ----------------------------------------------------------------------------


def test_config_entries_with_openapi_are_apis(tmp_path: Path) -> None:
    config_file = tmp_path / "mcp.json"
    servers = {
        "time": {"command": "mcp-server-time"},
        "pets": {
            "openapi": "specs/pets.yaml",
            "baseUrl": "https://pets.example/v1",
            "headers": {"Authorization": "Bearer ${PETS_TOKEN}"},
            "query": {"appid": "${PETS_KEY}"},
            "include": ["pets_*"],
            "timeout": 5,
            "maxResponseBytes": 1000,
            "outputSchema": False,
        },
        "off": {"openapi": "off.yaml", "disabled": True},
    }
    config_file.write_text(json.dumps({"mcpServers": servers}))
    cfg = load_config(config_file, env={"PETS_TOKEN": "tok-5f2e8a1b9c", "PETS_KEY": "qkey-77aa01"})
    assert list(cfg.servers) == ["time"] and list(cfg.openapi) == ["pets", "off"]
    pets = cfg.openapi["pets"]
    assert isinstance(pets, OpenAPIServerConfig)
    assert pets.openapi == str(tmp_path / "specs" / "pets.yaml")  # from the config file's folder
    assert (pets.timeout, pets.max_response_bytes, pets.output_schema, pets.include) == (5, 1000, False, ("pets_*",))
    assert "tok-5f2e8a1b9c" not in repr(pets) and redact("sent tok-5f2e8a1b9c") == "sent ***"
    # A query value is a secret whatever its name ("appid" does not look like one).
    assert pets.query == {"appid": "qkey-77aa01"} and "qkey-77aa01" not in repr(pets)
    assert redact("GET /pets?appid=qkey-77aa01&page=2") == "GET /pets?appid=***&page=2"
    assert list(cfg.enabled_openapi()) == ["pets"]
    backends = backends_from_config(cfg)
    assert [type(b).__name__ for b in backends] == ["MCPBackend", "ProviderBackend"]
    assert isinstance(backends[1], ProviderBackend) and backends[1].namespace == "pets"


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        ({"openapi": "a.yaml", "baseUrl": "ftp://x"}, "baseUrl", "must be an http:// or https:// URL"),
        ({"openapi": "a.yaml", "baseUrl": "https://x/v1?key=k"}, "baseUrl", "must not have a query or fragment"),
        ({"openapi": "file:///etc/x.yaml"}, "openapi", "file path or an http:// or https:// URL"),
        ({"openapi": "a.yaml", "command": "x"}, "command", "give one of"),
        ({"openapi": "a.yaml", "include": "x*"}, "include", "must be a list of strings"),
        ({"openapi": "a.yaml", "maxResponseBytes": 0}, "maxResponseBytes", "greater than 0"),
        ({"openapi": "a.yaml", "headers": {"X-Key": "${NOPE}"}}, "headers.X-Key", "'NOPE' is not set"),
        ({"openapi": "a.yaml", "query": {"key": 5}}, "query.key", "string"),
        ({"type": "openapi"}, "openapi", "Field required"),
    ],
)
def test_config_errors_name_the_server_and_the_field(entry: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"mcpServers": {"pets": entry}}, env={})
    assert caught.value.server == "pets" and caught.value.field == field
    assert message in caught.value.reason


async def test_open_backends_opens_and_closes_openapi_backends() -> None:
    cfg = load_config({"mcpServers": {"pets": {"openapi": "x.yaml", "baseUrl": "http://127.0.0.1:1"}}})
    async with open_backends(cfg) as backends:
        [backend] = backends
        assert isinstance(backend, ProviderBackend)
    provider = backend.provider
    assert isinstance(provider, OpenAPIProvider)
    with pytest.raises(BackendUnavailableError, match="closed"):
        await provider.list_tools()


async def test_requests_encode_values_and_refuse_header_injection() -> None:
    from toolrun._openapi import _Request  # pyright: ignore[reportPrivateUsage]

    _, provider = await tools_of(PETSTORE)
    get = provider.operations["pets_get"]
    req = _Request.build(
        get,
        {"path_petId": "a/admin?x=1", "fields": ["a", "b"], "query_petId": None, "X-Trace": "t1"},
        PathTemplate("https://api.example.org/v1/", get.path),
        {"X-Trace": "from-config"},
    )
    # The value stays one path segment; None leaves a parameter out; the config's headers win.
    assert req.url == "https://api.example.org/v1/pets/a%2Fadmin%3Fx%3D1"
    assert req.params == [("fields", "a"), ("fields", "b")]
    assert req.headers["X-Trace"] == "from-config" and req.headers["Accept"] == "application/json"
    with pytest.raises(ValueError, match="line break"):
        _Request.build(get, {"path_petId": 1, "X-Trace": "a\r\nX-Evil: 1"}, PathTemplate("https://h", get.path), {})
    # A character no header carries is the argument's fault (invalid_arguments at the call), not a crash.
    from toolrun import InputValidationError

    with pytest.raises(InputValidationError, match=r"\$\[\"X-Trace\"\]: header parameter 'X-Trace' holds 'é'"):
        await provider.call_tool("pets_get", {"path_petId": 1, "X-Trace": "café"})
    put = provider.operations["put_pets_petId"]
    req = _Request.build(put, {"petId": 7, "name": "Rex", "tag": None}, PathTemplate("https://h", put.path), {})
    assert req.content == b'{"name":"Rex","tag":null}' and req.headers["Content-Type"] == "application/json"


# -- where a call goes ------------------------------------------------------------------------


def test_the_url_check_accepts_only_the_template_with_each_segment_filled_once() -> None:
    # The check looks at the URL the HTTP client is about to send, however it was built.
    target = PathTemplate("http://api.example/v1/", "/tenants/{tenant}/items/{id}.json")
    target.check(httpx2.URL("http://api.example/v1/tenants/acme/items/a%2F.b%2Fc..json?page=2"))
    target.check(httpx2.URL("http://API.example:80/v1/tenants/%2E%2E%2E/items/.json"))  # '...', and '' before '.json'
    both = ("tenant", "id")
    refused = {
        # The client collapses a '..' it is given: the path has a segment too few.
        "http://api.example/v1/tenants/acme/items/x.json/..": both,
        "http://api.example/v1/tenants/acme/items/a/b.json": both,
        "http://api.example/v1/tenants/%2e%2E/items/x.json": ("tenant",),
        # A move between encoded separators, which nginx, IIS or an NFKC step decode and resolve.
        "http://api.example/v1/tenants/acme/items/a%2F..%2Fb.json": ("id",),
        "http://api.example/v1/tenants/x%5C..%5C../items/x.json": ("tenant",),
        "http://api.example/v1/tenants/%EF%BC%8E%EF%BC%8E/items/x.json": ("tenant",),
        "http://api.example/v1/tenants/./items/x.json": both,  # collapsed too
        "http://api.example/v1/tenants//items/x.json": ("tenant",),
        "http://api.example/v1/tenants/acme/items/x.txt": ("id",),
        "http://api.example/v1/tenants/acme/things/x.json": (),
        "http://api.example/v2/tenants/acme/items/x.json": both,
        "http://api.example:8080/v1/tenants/acme/items/x.json": both,
        "https://api.example/v1/tenants/acme/items/x.json": both,
        "http://evil.example/v1/tenants/acme/items/x.json": both,
    }
    for url, params in refused.items():
        with pytest.raises(PathError) as caught:
            target.check(httpx2.URL(url))
        assert caught.value.params == params, url


def test_filling_a_segment_refuses_what_a_url_reads_as_a_move() -> None:
    target = PathTemplate("http://api.example", "/a/{x}/b/{y}{z}")
    assert target.fill({"x": "...", "y": "%252E", "z": "."}) == "http://api.example/a/.../b/%252E."
    for values, params in [
        ({"x": "..", "y": "1", "z": "2"}, ("x",)),
        ({"x": ".", "y": "1", "z": "2"}, ("x",)),
        ({"x": "", "y": "1", "z": "2"}, ("x",)),
        ({"x": "1", "y": ".", "z": "."}, ("y", "z")),
        ({"x": "1", "y": "%2E", "z": "."}, ("y", "z")),  # what URLs read as '..' too
        ({"x": "1", "y": "", "z": ""}, ("y", "z")),
        ({"x": "a%2F..%2Fb", "y": "1", "z": "2"}, ("x",)),  # decoded, '..' between slashes
        ({"x": "a%5C.", "y": "1", "z": "2"}, ("x",)),
        ({"x": "%E2%80%A5", "y": "1", "z": "2"}, ("x",)),  # the two-dot leader, '..' under NFKC
    ]:
        with pytest.raises(PathError) as caught:
            target.fill(values)
        assert caught.value.params == params
        assert "fills exactly one segment" in caught.value.reason


async def test_paths_that_are_not_plain_templates_are_skipped() -> None:
    document = doc(
        {
            "/a/../admin/{id}": {"get": {"operationId": "up", "responses": ok()}},
            "relative/{id}": {"get": {"operationId": "rel", "responses": ok()}},
            "/fine/{id}": {"get": {"operationId": "fine", "responses": ok()}},
        }
    )
    provider = OpenAPIProvider("api", document)
    with structlog.testing.capture_logs():
        tools = await provider.list_tools()
    assert [t["name"] for t in tools] == ["fine"]
    assert provider.skipped == {
        "/a/../admin/{id}": "the path has a '.' or '..' segment",
        "relative/{id}": "the path does not start with '/'",
    }


async def test_credentials_need_the_origin_the_configuration_names(tmp_path: Path) -> None:
    # A document given as a mapping or read from a file names no origin: its server URLs are the
    # document's word, not the configuration's. With credentials, baseUrl says where they go.
    (tmp_path / "api.json").write_text(json.dumps(PETSTORE))
    cases = [
        (document, creds)
        for document in (PETSTORE, tmp_path / "api.json")
        for creds in ({"headers": {"Authorization": "Bearer tok-6a1f09c2"}}, {"query": {"api_key": "key-3d9e7b10"}})
    ]
    for document, creds in cases:
        with pytest.raises(ConfigError) as caught:
            await OpenAPIProvider("api", document, **creds).list_tools()
        assert caught.value.field == "baseUrl"
        assert "this document was not fetched from a URL" in caught.value.reason
        assert "https://api.example.org" in caught.value.reason
        with structlog.testing.capture_logs():
            assert await OpenAPIProvider("api", document, base_url="https://api.example.org/v1", **creds).list_tools()
    # Without credentials, the document's server URLs are used as they are.
    with structlog.testing.capture_logs():
        assert await OpenAPIProvider("api", PETSTORE).list_tools()


async def test_headers_the_client_owns_are_never_arguments() -> None:
    # A document declaring ``Host`` as a header parameter let a snippet send the configured
    # credentials to another virtual host behind the same address; an override header turns a GET
    # (judged a read) into a DELETE at services that honour it. What a web page's script may not
    # set (the Fetch standard's forbidden request headers) a snippet may not either.
    owned = [
        "Host", "connection", "Content-Length", "Transfer-Encoding", "Expect", "Upgrade", "TE", "Trailer",
        "Keep-Alive", "Cookie", "Origin", "Referer", "Via", "Date", "Proxy-Authorization", "Sec-Fetch-Site",
        "X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "Accept-Encoding",
        "Forwarded", "X-Forwarded-Host", "X-Forwarded-For", "X-Original-URL", "X-Rewrite-URL",
    ]  # fmt: skip
    params = [{"name": n, "in": "header", "schema": {"type": "string"}} for n in [*owned, "X-Request-Id"]]
    document = doc({"/items": {"get": {"operationId": "items", "parameters": params, "responses": ok()}}})
    tools, _ = await tools_of(document)
    assert list(tools["items"].input_schema["properties"]) == ["X-Request-Id"]


# -- names an argument may not give the request -------------------------------------------------

OPTIONS = {"name": "options", "in": "query", "schema": {"type": "object"}}
"""A free-form object in the query (style form, explode: the defaults): its keys are query names."""

NOTES = doc(
    {
        "/notes/{id}/archive": {
            "post": {
                "operationId": "archive",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                    OPTIONS,
                    {"name": "filter", "in": "query", "style": "deepObject", "schema": {"type": "object"}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 50}},
                ],
                "responses": ok(),
            }
        },
        "/notes": {
            "post": {
                "operationId": "importNotes",
                "requestBody": {
                    "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object"}}},
                },
                "responses": ok(),
            },
            "put": {
                "operationId": "replaceNotes",
                "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
                "responses": ok(),
            },
        },
    }
)


async def test_an_object_s_keys_never_override_the_method_or_another_query_parameter() -> None:
    from toolrun import InputValidationError
    from toolrun._openapi import _Request  # pyright: ignore[reportPrivateUsage]

    base = "https://api.example.org/v1"
    _, provider = await tools_of(NOTES, base_url=base, query={"api_key": "key-5c0e1d72a9"})
    archive = provider.operations["archive"]
    target = PathTemplate(base, archive.path)
    # The object's other keys are query names; a deepObject's keys stay under its own name.
    args = {"id": "7", "options": {"color": "red"}, "filter": {"_method": "x", "limit": 2}}
    req = _Request.build(archive, args, target, {}, {"api_key": "key-5c0e1d72a9"})
    assert req.params == [
        ("color", "red"),
        ("filter[_method]", "x"),
        ("filter[limit]", "2"),
        ("api_key", "key-5c0e1d72a9"),
    ]
    refused = {
        # Servers (Laravel, Symfony, Rails) run this POST, which the policy judged a write, as a DELETE.
        "_method": "the request's method (a method override)",
        "_METHOD": "the request's method (a method override)",
        ".method": "the request's method (a method override)",  # PHP reads it as _method
        "_method[x]": "the request's method (a method override)",
        "X-HTTP-Method-Override": "the request's method (a method override)",
        "x_http_method": "the request's method (a method override)",
        # A second value for a parameter the schema bounds, or for the configured credential.
        "limit": "the call has a query parameter of that name",
        "API_KEY": "the call has a query parameter of that name",
    }
    for key, why in refused.items():
        with pytest.raises(InputValidationError) as caught:
            await provider.call_tool("archive", {"id": "7", "options": {"color": "red", key: "DELETE"}})
        [problem] = caught.value.problems
        assert problem.path == json_path(["options", key]), key
        assert f"the key {key!r} would be sent as a query parameter of its own" in problem.message, key
        assert why in problem.message and "'options'" in problem.message, key
        assert caught.value.tool_id == "api:archive"
    # A body object's keys are its fields' names: a form's, or a JSON object's (Laravel reads both).
    for tool in ("importNotes", "replaceNotes"):
        with pytest.raises(InputValidationError) as caught:
            await provider.call_tool(tool, {"body": {"text": "hi", "_Method": "DELETE"}})
        [problem] = caught.value.problems
        assert problem.path == "$.body._Method" and "a field of the request body" in problem.message
        assert "a method override" in problem.message
    await provider.aclose()


async def test_parameters_that_override_the_method_are_never_arguments() -> None:
    params = [
        {"name": "_method", "in": "query", "schema": {"type": "string"}},
        {"name": "X_HTTP_METHOD_OVERRIDE", "in": "header", "schema": {"type": "string"}},
        {"name": "page", "in": "query", "schema": {"type": "integer"}},
    ]
    document = doc({"/items": {"post": {"operationId": "items", "parameters": params, "responses": ok()}}})
    tools, _ = await tools_of(document)
    assert list(tools["items"].input_schema["properties"]) == ["page"]


async def test_an_http_status_error_redacts_and_clips_the_reason_phrase() -> None:
    from toolrun import HTTPStatusError

    token = "tok-reason-8e1f22c0b7"

    def echo(request: httpx2.Request) -> httpx2.Response:
        # A proxy that puts what it was sent into its status line.
        reason = f"bad {request.headers['authorization']} " + "x" * 300
        return httpx2.Response(502, extensions={"reason_phrase": reason.encode()})

    provider = OpenAPIProvider(
        "api", PETSTORE, base_url="https://api.example.org/v1", headers={"Authorization": f"Bearer {token}"}
    )
    with structlog.testing.capture_logs():
        await provider.list_tools()
    provider._client = httpx2.AsyncClient(transport=httpx2.MockTransport(echo))  # pyright: ignore[reportPrivateUsage]
    result = await provider.call_tool("pets_get", {"path_petId": 1})
    err = result.error
    assert isinstance(err, HTTPStatusError) and err.status == 502
    assert token not in str(err) and token not in repr(err.args) and str(err).startswith("HTTP 502 bad *** x")
    assert err.reason.startswith("bad *** x") and len(err.reason) == 100 and err.reason.endswith("…")
    await provider.aclose()
