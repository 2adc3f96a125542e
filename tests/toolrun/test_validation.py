"""Compiled JSON Schema validation: verdicts agree with jsonschema, problems carry JSON paths."""

from __future__ import annotations

from typing import Any

import jsonschema
import jsonschema.exceptions
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrun import CompiledSchema
from toolrun._validation import SchemaCache, json_path

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
    assert s.fast
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
    assert "'string'" in by_path["$.tags[1]"]
    assert [p.path for p in problems] == sorted(p.path for p in problems)


def test_non_object_root() -> None:
    assert paths(OBJ, [1, 2]) == ["$"]
    # The fast path folds "type": "object" into the object check: a non-object is still refused.
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
    with pytest.raises(jsonschema.exceptions.SchemaError):
        CompiledSchema({"type": "no-such-type"})


def test_unknown_keywords_are_ignored_like_jsonschema_does() -> None:
    s = CompiledSchema({"type": "object", "nullable": True, "x-ui": {"widget": "text"}})
    assert s.fast
    assert s.is_valid({})
    assert not s.is_valid(None)


def test_id_keywords_fall_back_to_jsonschema() -> None:
    s = CompiledSchema({"$id": "https://example.com/s", "type": "integer"})
    assert not s.fast
    assert s.is_valid(1) and not s.is_valid("1")


def test_unsupported_keywords_fall_back_to_jsonschema() -> None:
    s = CompiledSchema({"type": "object", "patternProperties": {"^x": {"type": "integer"}}})
    assert not s.fast
    assert s.is_valid({"xa": 1})
    assert not s.is_valid({"xa": "no"})
    assert [p.path for p in s.problems({"xa": "no"})] == ["$.xa"]


def test_recursive_ref_compiles_fast() -> None:
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
    assert s.fast
    assert s.is_valid({"children": [{"children": []}]})
    assert not s.is_valid({"children": [{"children": [{"bad": 1}]}]})
    assert paths(schema, {"children": [{"children": [{"bad": 1}]}]}) == ["$.children[0].children[0].bad"]


def test_unresolvable_ref_is_a_problem_not_a_crash() -> None:
    s = CompiledSchema({"$ref": "https://example.invalid/schema.json"})
    assert not s.is_valid(1)
    assert "cannot be resolved" in s.problems(1)[0].message


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
    assert s.fast
    assert s.is_valid(value) is valid
    assert jsonschema.Draft202012Validator({"type": "integer"}).is_valid(value) is valid


@pytest.mark.parametrize(("value", "valid"), [(1, True), (True, False), (1.0, True), ([1], False)])
def test_enum_distinguishes_bool_from_int(value: Any, valid: bool) -> None:
    s = CompiledSchema({"enum": [1, "a", None]})
    assert s.is_valid(value) is valid


# -- differential check: the fast path agrees with jsonschema --------------------------

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
        # Keywords no dialect defines are ignored by jsonschema, and so by the fast path.
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


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=_schemas(), value=_values)
def test_fast_path_agrees_with_jsonschema(schema: Any, value: Any) -> None:
    compiled = CompiledSchema(schema)
    assert compiled.fast
    expected = jsonschema.Draft202012Validator(schema).is_valid(value)
    assert compiled.is_valid(value) is expected
    assert (compiled.problems(value) == []) is expected
