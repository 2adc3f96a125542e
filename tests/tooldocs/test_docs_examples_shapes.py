from __future__ import annotations

import doctest
import importlib
import inspect
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tooldocs
from tooldocs import (
    ArgsTooLargeError,
    DocNotFoundError,
    ExampleCaps,
    InvalidDetailLevelError,
    InvalidExampleError,
    SchemaRenderError,
    ShapeLimits,
    ToolDocsError,
    ToolExample,
    cap_text,
    infer_shape,
    merge_shapes,
)

# -- examples --------------------------------------------------------------------------


def test_text_fields_are_capped_with_a_marker() -> None:
    ex = ToolExample(title="t" * 200, description="d" * 1000, result_hint="r" * 1000, args={})
    assert len(ex.title) == 80 and ex.title.endswith("…")
    assert len(ex.description) == 300 and ex.description.endswith("…")
    assert ex.result_hint is not None and len(ex.result_hint) == 300 and ex.result_hint.endswith("…")


def test_caps_never_split_a_character_from_its_combining_marks() -> None:
    text = "e\u0301" * 100  # "é" as base + combining acute
    out = cap_text(text, 11)
    body = out[:-1]
    assert out.endswith("…") and len(out) <= 11
    assert body[-1] == "\u0301"  # the cut falls after a complete "é"
    family = "👨\u200d👩\u200d👧" * 10
    cut = cap_text(family, 7)
    assert not cut[:-1].endswith("\u200d")
    cut.encode("utf-8")


def test_non_string_result_hints_become_compact_json() -> None:
    assert ToolExample(args={}, result_hint={"ok": True, "n": [1, 2]}).result_hint == '{"ok":true,"n":[1,2]}'  # type: ignore[arg-type]


def test_args_over_the_caps_raise() -> None:
    deep: dict[str, Any] = {"v": 1}
    for _ in range(6):
        deep = {"k": deep}
    with pytest.raises(ArgsTooLargeError) as info:
        ToolExample(args=deep)
    assert info.value.cap == "depth" and info.value.limit == 5
    assert info.value.path == "/k/k/k/k/k"
    with pytest.raises(ArgsTooLargeError, match="keys"):
        ToolExample(args={f"k{i}": i for i in range(65)})
    with pytest.raises(ArgsTooLargeError, match="chars"):
        ToolExample(args={"text": "x" * 3000})
    # Caps are configurable.
    assert ToolExample(args={"text": "x" * 3000}, caps=ExampleCaps(max_args_chars=5000)).args["text"] == "x" * 3000


def test_args_must_be_json() -> None:
    with pytest.raises(InvalidExampleError, match="must be JSON"):
        ToolExample(args={"when": object()})
    with pytest.raises(InvalidExampleError, match="string keys"):
        ToolExample(args={1: "x"})  # type: ignore[dict-item]
    with pytest.raises(InvalidExampleError, match="must be JSON"):
        ToolExample(args={"x": float("nan")})


def test_example_ids_are_stable_and_args_are_copied() -> None:
    args = {"q": ["a"]}
    a = ToolExample(title="Search", args=args)
    args["q"].append("b")
    assert a.args == {"q": ["a"]}
    assert a.id == ToolExample(title="Search", args={"q": ["a"]}).id
    assert a.id != ToolExample(title="Search", args={"q": ["b"]}).id
    assert ToolExample.from_dict(a.to_dict()) == a


# -- shapes -----------------------------------------------------------------------------


def test_infer_shape() -> None:
    assert infer_shape({"a": 1, "b": [True], "c": None, "d": 1.5, "e": "x"}) == {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "array", "items": {"type": "boolean"}},
            "c": {"type": "null"},
            "d": {"type": "number"},
            "e": {"type": "string"},
        },
        "required": ["a", "b", "c", "d", "e"],
    }
    assert infer_shape([]) == {"type": "array"}
    assert infer_shape(object()) == {}
    # Mappings with many keys (ids, dates...) become dict[str, V].
    assert infer_shape({str(i): {"n": i} for i in range(100)}) == {
        "type": "object",
        "additionalProperties": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    }


@pytest.mark.parametrize(
    "key",
    [
        "ceo.private@acme-secret.example",
        "2024-01-31",
        "42",
        "Acme Corp",
        "3f2a9c1e-0b7d-4e5f-9a8b-1c2d3e4f5a6b",
        "https://example.com/a",
        "a3f9c2e81b7d4f60",
        "/home/user",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "AKIAIOSFODNN7EXAMPLE",
    ],
)
def test_keys_that_are_data_make_a_mapping_not_fields(key: str) -> None:
    # Field names are learned and shown to everyone who describes the tool; a key that is data (an
    # address, a date, an id, a name) is not: the object is a mapping of such keys.
    shape = infer_shape({"customers": {key: {"plan": "gold"}}, "count": 1})
    assert key not in json.dumps(shape)
    assert shape["properties"]["customers"] == {
        "type": "object",
        "additionalProperties": {"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"]},
    }
    fields = [
        "id",
        "createdAt",
        "user_name",
        "x-rate-limit",
        "@type",
        "$ref",
        "_links",
        "v2",
        "oauth2_token_url",
        "MAX_RETRIES",
    ]
    assert sorted(infer_shape({k: 1 for k in fields})["properties"]) == sorted(fields)


def test_infer_shape_samples_long_lists() -> None:
    value = [{"a": 1}] * 10_000 + [{"a": 1, "b": 2}]
    shape = infer_shape(value)
    # The tail is sampled too, so the odd last item is seen.
    assert shape["items"]["properties"].keys() == {"a", "b"}
    assert shape["items"]["required"] == ["a"]


def test_merge_shapes() -> None:
    i, f, s, n = ({"type": t} for t in ("integer", "number", "string", "null"))
    assert merge_shapes(i, f) == f
    assert merge_shapes(n, s) == {"anyOf": [s, n]}
    assert merge_shapes(merge_shapes(s, i), n) == {"anyOf": [s, i, n]}
    limits = ShapeLimits(max_union=2)
    assert merge_shapes(merge_shapes(s, i, limits), {"type": "boolean"}, limits) == {}
    assert merge_shapes(s, {}) == {}
    arr = merge_shapes({"type": "array"}, {"type": "array", "items": s})
    assert arr == {"type": "array", "items": s}


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)),
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.text(max_size=4), c, max_size=5)),
    max_leaves=25,
)


@settings(max_examples=300)
@given(json_values, json_values, json_values)
def test_merging_is_idempotent_so_learning_converges(a: Any, b: Any, c: Any) -> None:
    m = merge_shapes(merge_shapes(infer_shape(a), infer_shape(b)), infer_shape(c))
    # Seeing any already-seen value again changes nothing: no write, no new doc.
    for v in (a, b, c):
        assert merge_shapes(m, infer_shape(v)) == m


# -- public API ---------------------------------------------------------------------------


def test_all_is_the_public_api() -> None:
    public = {n for n in dir(tooldocs) if not n.startswith("_")} - {"exceptions"}
    assert set(tooldocs.__all__) == public


def test_error_tree() -> None:
    for cls in (ArgsTooLargeError, DocNotFoundError, InvalidDetailLevelError, InvalidExampleError, SchemaRenderError):
        assert issubclass(cls, ToolDocsError)
    doc = inspect.getdoc(importlib.import_module("tooldocs.exceptions")) or ""
    for cls in (ArgsTooLargeError, DocNotFoundError, InvalidDetailLevelError, InvalidExampleError, SchemaRenderError):
        assert cls.__name__ in doc


@pytest.mark.parametrize(
    "module", ["tooldocs", "tooldocs._render", "tooldocs._names", "tooldocs._store", "tooldocs._text"]
)
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
