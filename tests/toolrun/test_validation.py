"""Compiled JSON Schema validation (jsonschema-rs): the Python ``jsonschema`` package is the
reference its verdicts are compared with; problems carry JSON paths."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrun import CompiledSchema, InvalidSchemaError, SchemaCache, json_path

# The reference implementation (installed with the mcp SDK); only the differential tests need it.
jsonschema = pytest.importorskip("jsonschema")

OBJ = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "count": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "owner": {
            "type": "object",
            "properties": {"id": {"type": "integer"}},
            "required": ["id"],
        },
    },
    "required": ["name"],
    "additionalProperties": False,
}


def paths(schema: dict[str, Any], value: Any) -> list[str]:
    return [p.path for p in CompiledSchema(schema).problems(value)]


def test_json_path_formatting() -> None:
    assert json_path([]) == "$"
    assert json_path(["items", 2, "name"]) == "$.items[2].name"
    assert json_path(["odd key", 0]) == '$["odd key"][0]'


def test_valid_value_has_no_problems() -> None:
    s = CompiledSchema(OBJ)
    value = {"name": "x", "count": 3, "tags": ["a"], "owner": {"id": 1}}
    assert s.is_valid(value)
    assert s.problems(value) == []


def test_each_problem_has_its_json_path() -> None:
    value = {"count": -1, "tags": ["ok", 7], "owner": {}, "extra": 1, "more": 2}
    s = CompiledSchema(OBJ)
    assert not s.is_valid(value)
    problems = s.problems(value)
    by_path = {p.path: p.message for p in problems}
    assert set(by_path) == {"$.count", "$.tags[1]", "$.owner.id", "$.name", "$.extra", "$.more"}
    assert "required" in by_path["$.name"]
    assert "required" in by_path["$.owner.id"]
    assert "unexpected" in by_path["$.extra"]
    assert "integer" not in by_path["$.count"] and "minimum" in by_path["$.count"]
    assert '"string"' in by_path["$.tags[1]"]
    assert [p.path for p in problems] == sorted(p.path for p in problems)


def test_non_object_root() -> None:
    assert paths(OBJ, [1, 2]) == ["$"]
    for value in ([1, 2], "x", None, 3):
        assert not CompiledSchema(OBJ).is_valid(value)
        assert not CompiledSchema({"type": "object", "properties": {"a": {"type": "integer"}}}).is_valid(value)
    assert CompiledSchema({"type": "object", "properties": {"a": {"type": "integer"}}}).is_valid({})


def test_any_of_problem_names_the_closest_alternative() -> None:
    schema = {"type": "object", "properties": {"v": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}
    problems = CompiledSchema(schema).problems({"v": "x"})
    assert [p.path for p in problems] == ["$.v"]
    assert "closest" in problems[0].message


def test_long_messages_are_clipped() -> None:
    problems = CompiledSchema({"type": "integer"}).problems("x" * 10_000)
    assert len(problems[0].message) <= 300
    # Both ends survive: the value's start and the reason at the end.
    assert problems[0].message.startswith('"xxx')
    assert problems[0].message.endswith('is not of type "integer"')


def test_object_key_that_looks_like_an_index_keeps_its_key_path() -> None:
    s = CompiledSchema({"type": "object", "properties": {"0": {"type": "integer"}}, "items": {"type": "string"}})
    assert [p.path for p in s.problems({"0": "x"})] == ['$["0"]']


def test_2020_12_is_the_default_dialect() -> None:
    # prefixItems only exists in 2020-12; under draft-07 it would be an unknown keyword.
    schema = {"type": "array", "prefixItems": [{"type": "integer"}]}
    s = CompiledSchema(schema)
    assert s.dialect == "2020-12"
    assert not s.is_valid(["x"])


def test_draft_07_is_accepted_and_ignores_ref_siblings() -> None:
    base: dict[str, Any] = {
        "definitions": {"n": {"type": "integer"}},
        "type": "object",
        "properties": {"v": {"$ref": "#/definitions/n", "minimum": 10}},
    }
    d7 = CompiledSchema({"$schema": "http://json-schema.org/draft-07/schema#", **base})
    d2020 = CompiledSchema(base)
    assert d7.dialect == "draft7"
    # Draft 7 ignores keywords next to $ref; 2020-12 applies them.
    assert d7.is_valid({"v": 1})
    assert not d2020.is_valid({"v": 1})
    assert not d7.is_valid({"v": "x"})


def test_invalid_schema_is_rejected_at_compile_time() -> None:
    with pytest.raises(InvalidSchemaError) as info:
        CompiledSchema({"type": "object", "properties": {"a": {"type": "no-such-type"}}})
    assert info.value.pointer == "/properties/a/type"
    assert "not valid JSON Schema at properties/a/type" in str(info.value)


def test_unknown_dialect_is_refused_not_fetched() -> None:
    with pytest.raises(InvalidSchemaError, match="meta-schema"):
        CompiledSchema({"$schema": "https://example.invalid/my-dialect", "type": "object"})


@pytest.mark.parametrize(
    ("uri", "dialect"),
    [
        ("https://json-schema.org/draft/2020-12/schema", "2020-12"),
        ("https://json-schema.org/draft/2019-09/schema", "2019-09"),
        ("http://json-schema.org/draft-07/schema#", "draft7"),
        ("http://json-schema.org/draft-06/schema#", "draft6"),
        ("http://json-schema.org/draft-04/schema#", "draft4"),
    ],
)
def test_declared_dialects_are_accepted(uri: str, dialect: str) -> None:
    s = CompiledSchema({"$schema": uri, "type": "integer"})
    assert s.dialect == dialect
    assert s.is_valid(3) and not s.is_valid("3")


def test_formats_are_annotations() -> None:
    s = CompiledSchema({"type": "string", "format": "email"})
    assert s.is_valid("not an email")


def test_unknown_keywords_are_ignored_like_jsonschema_does() -> None:
    s = CompiledSchema({"type": "object", "nullable": True, "x-ui": {"widget": "text"}})
    assert s.is_valid({})
    assert not s.is_valid(None)


def test_id_keywords_are_understood() -> None:
    s = CompiledSchema({"$id": "https://example.com/s", "type": "integer"})
    assert s.is_valid(1) and not s.is_valid("1")


def test_pattern_properties() -> None:
    s = CompiledSchema({"type": "object", "patternProperties": {"^x": {"type": "integer"}}})
    assert s.is_valid({"xa": 1})
    assert not s.is_valid({"xa": "no"})
    assert [p.path for p in s.problems({"xa": "no"})] == ["$.xa"]


def test_recursive_ref() -> None:
    schema = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                "additionalProperties": False,
            }
        },
        "$ref": "#/$defs/node",
    }
    s = CompiledSchema(schema)
    assert s.summary.recursive
    assert s.is_valid({"children": [{"children": []}]})
    assert not s.is_valid({"children": [{"children": [{"bad": 1}]}]})
    assert paths(schema, {"children": [{"children": [{"bad": 1}]}]}) == ["$.children[0].children[0].bad"]


def test_external_ref_makes_the_schema_invalid() -> None:
    with pytest.raises(InvalidSchemaError, match="points outside this schema") as info:
        CompiledSchema({"type": "object", "properties": {"a": {"$ref": "https://example.invalid/schema.json"}}})
    assert info.value.pointer == "/properties/a/$ref"


def test_missing_local_ref_makes_the_schema_invalid() -> None:
    with pytest.raises(InvalidSchemaError, match="does not exist"):
        CompiledSchema({"$ref": "#/$defs/nope"})


def test_schema_cache_compiles_each_distinct_schema_once() -> None:
    cache = SchemaCache()
    a = cache.get({"type": "object", "properties": {"x": {"type": "integer"}}})
    b = cache.get({"properties": {"x": {"type": "integer"}}, "type": "object"})
    c = cache.get({"type": "object"})
    assert a is b
    assert a is not c
    assert len(cache) == 2


@pytest.mark.parametrize(
    ("value", "valid"),
    [(1, True), (1.0, True), (1.5, False), (True, False), (None, False), ("1", False)],
)
def test_integer_semantics_match_jsonschema(value: Any, valid: bool) -> None:
    s = CompiledSchema({"type": "integer"})
    assert s.is_valid(value) is valid
    assert jsonschema.Draft202012Validator({"type": "integer"}).is_valid(value) is valid


@pytest.mark.parametrize(("value", "valid"), [(1, True), (True, False), (1.0, True), ([1], False)])
def test_enum_distinguishes_bool_from_int(value: Any, valid: bool) -> None:
    s = CompiledSchema({"enum": [1, "a", None]})
    assert s.is_valid(value) is valid


@pytest.mark.parametrize(("value", "valid"), [(1, True), (1.5, True), (True, False), (False, False), ("1", False)])
def test_booleans_are_not_numbers(value: Any, valid: bool) -> None:
    assert CompiledSchema({"type": "number"}).is_valid(value) is valid


def test_one_problem_per_missing_and_per_unexpected_key() -> None:
    s = CompiledSchema(
        {"type": "object", "properties": {"a": {}}, "required": ["a", "b", "c"], "additionalProperties": False}
    )
    problems = s.problems({"x": 1, "y": 2})
    assert [(p.path, p.message) for p in problems] == [
        ("$.a", "required property is missing"),
        ("$.b", "required property is missing"),
        ("$.c", "required property is missing"),
        ("$.x", "unexpected property (not in the schema)"),
        ("$.y", "unexpected property (not in the schema)"),
    ]


def test_value_that_is_not_json_is_invalid_not_a_crash() -> None:
    s = CompiledSchema({"type": "object", "properties": {"a": {"type": "string"}}})
    assert not s.is_valid({"a": ...})
    assert [p.path for p in s.problems({"a": ...})] == ["$"]


def test_very_deep_value_against_a_recursive_schema_is_refused_not_a_crash() -> None:
    # jsonschema-rs follows a recursive schema as deep as the value goes, on the C stack.
    s = CompiledSchema({"type": "array", "items": {"$ref": "#"}})
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    assert not s.is_valid(deep)
    assert "deeper than" in s.problems(deep)[0].message
    shallow: list[Any] = []
    for _ in range(500):
        shallow = [shallow]
    assert s.is_valid(shallow)


# -- differential check: jsonschema-rs agrees with the jsonschema package --------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-5, 5, allow_nan=False),
    st.sampled_from([0.0, 1.0, 2.0]),
    st.text(alphabet="ab", max_size=3),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    ),
    max_leaves=8,
)
_types = st.sampled_from(["object", "array", "string", "integer", "number", "boolean", "null"])


def _schemas() -> st.SearchStrategy[Any]:
    leaf = st.one_of(
        st.booleans(),
        st.fixed_dictionaries({"type": _types}),
        st.fixed_dictionaries({"type": st.lists(_types, min_size=1, max_size=3, unique=True)}),
        st.fixed_dictionaries({"enum": st.lists(_scalars, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"const": _values}),
        st.fixed_dictionaries({"minimum": st.integers(-3, 3)}),
        st.fixed_dictionaries({"exclusiveMaximum": st.floats(-3, 3, allow_nan=False)}),
        st.fixed_dictionaries({"minLength": st.integers(0, 3), "maxLength": st.integers(0, 3)}),
        st.fixed_dictionaries({"pattern": st.sampled_from(["^a", "b$", "ab"])}),
        st.fixed_dictionaries({"minItems": st.integers(0, 2), "maxItems": st.integers(0, 3)}),
        # Keywords no dialect defines are ignored by both.
        st.fixed_dictionaries({"type": _types, "nullable": st.booleans(), "x-order": st.integers(0, 3)}),
    )

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            st.fixed_dictionaries(
                {
                    "type": st.just("object"),
                    "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
                },
                optional={
                    "required": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True),
                    "additionalProperties": inner,
                },
            ),
            st.fixed_dictionaries({"items": inner}),
            st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=3)}),
            st.fixed_dictionaries({"oneOf": st.lists(inner, min_size=1, max_size=3)}),
            st.fixed_dictionaries({"allOf": st.lists(inner, min_size=1, max_size=3)}),
            st.fixed_dictionaries({"not": inner}),
        )

    return st.recursive(leaf, extend, max_leaves=6)


@settings(max_examples=600)
@given(schema=_schemas(), value=_values)
def test_verdicts_agree_with_jsonschema(schema: Any, value: Any) -> None:
    compiled = CompiledSchema(schema)
    expected = jsonschema.Draft202012Validator(schema).is_valid(value)
    assert compiled.is_valid(value) is expected
    assert (compiled.problems(value) == []) is expected
