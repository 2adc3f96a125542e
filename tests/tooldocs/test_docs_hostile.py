"""Hostile tool definitions and results: rendering, docs and learned shapes stay bounded.

Upstream servers choose tool names, descriptions, schemas and results. Each case here once
cost minutes or gigabytes (a recursive ``allOf`` of ``$ref``s ran 20+ minutes at 18 GB; a
30,000-property tool stalled other callers for 21 s). The time bounds are generous: they
prove "did not stall", not speed.
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tooldocs import (
    STUB_IMPORTS,
    DocNotFoundError,
    InMemoryStore,
    InvalidDetailLevelError,
    InvalidExampleError,
    SchemaRenderError,
    ShapeLimits,
    infer_shape,
    merge_shapes,
    render_module,
    schema_to_python,
    tool_signature,
)
from toolindex import BackendRef, InMemoryIndex, Tool

# Far above what any case here needs (milliseconds), far below what the bugs took.
BOUND_S = 2.0
RECURSIVE_BOUND_S = 1.0


@contextmanager
def computes_within(seconds: float) -> Iterator[None]:
    """Fail when the block uses more than ``seconds`` of this process's CPU time.

    CPU time, not wall time: the bugs guarded against here computed for seconds to minutes, and a busy
    machine stretches the wall time of a computation but not the CPU time it needs.
    """
    start = time.process_time()
    yield
    used = time.process_time() - start
    assert used < seconds, f"computed for {used:.2f} s of CPU time (bound {seconds} s)"


def parses(text: str) -> ast.Module:
    source = f"{STUB_IMPORTS}\n{text}\n"
    compile(source, "<signature>", "exec")
    return ast.parse(source)


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def obj(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **extra}


def with_defs(defs: dict[str, Any], **props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "$defs": defs}


def store_of(*tools: Tool) -> InMemoryStore:
    index = InMemoryIndex()
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in tools])
    return InMemoryStore(index)


# -- recursive references -----------------------------------------------------------------

# The shapes the property test found, and their relatives: allOf lists of $refs that refer
# back to themselves, directly, through each other, through anyOf, or to the root.
RECURSIVE: dict[str, dict[str, Any]] = {
    "self_allof": with_defs({"Node": {"allOf": [ref("Node")] * 3}}, x=ref("Node")),
    "self_allof_50_branches": with_defs({"Node": {"allOf": [ref("Node")] * 50}}, x=ref("Node")),
    "pair_allof": with_defs(
        {"User": {"allOf": [ref("Item"), ref("Item"), ref("User")]}, "Item": {"allOf": [ref("User")] * 3}},
        x=ref("User"),
        y={"allOf": [ref("Item"), ref("User")]},
    ),
    "mutual_anyof_allof_many_branches": with_defs(
        {
            "A": {"anyOf": [*[ref("B")] * 40, obj({"a": ref("A")})]},
            "B": {"allOf": [*[ref("A")] * 40, *[ref("B")] * 40, obj({"b": ref("B")})]},
        },
        x=ref("A"),
        y={"allOf": [ref("B"), ref("A")]},
    ),
    "clique_of_twenty": with_defs(
        {
            f"R{i}": {"allOf": [*(ref(f"R{j}") for j in range(20) if j != i), obj({f"f{i}": {"type": "string"}})]}
            for i in range(20)
        },
        x=ref("R0"),
    ),
    "root_allof": {
        "type": "object",
        "allOf": [{"$ref": "#"}] * 40,
        "properties": {"q": {"allOf": [{"$ref": "#"}] * 40}},
    },
    "diamond_dag_40_levels": with_defs(
        {
            **{f"D{i}": {"allOf": [ref(f"D{i + 1}"), ref(f"D{i + 1}"), obj({f"p{i}": {}})]} for i in range(40)},
            "D40": {},
        },
        x=ref("D0"),
    ),
    "split_dag_40_levels": with_defs(
        {
            **{f"D{i}": {"allOf": [ref(f"D{i + 1}a"), ref(f"D{i + 1}b")]} for i in range(40)},
            **{f"D{i}a": {"allOf": [ref(f"D{i}")]} for i in range(1, 41)},
            **{f"D{i}b": {"allOf": [ref(f"D{i}")]} for i in range(1, 41)},
            "D40": {},
        },
        x=ref("D0"),
    ),
}


@pytest.mark.parametrize("name", sorted(RECURSIVE))
def test_recursive_allof_renders_quickly_as_valid_python(name: str) -> None:
    schema = RECURSIVE[name]
    tool = Tool(name=name, namespace="hostile", input_schema=schema)
    with computes_within(RECURSIVE_BOUND_S):
        sig = tool_signature(tool)
        module = render_module([tool, tool.model_copy(update={"name": f"{name}_2"})])
        rendered = schema_to_python(schema, name="Hostile")
        doc = store_of(tool).describe(tool.id, "full")
    parses(sig.text)
    ast.parse(module.text)
    parses(f"{rendered.source}\nValue = {rendered.annotation}")
    assert len(doc.render()) <= 4000
    assert len(sig.text) < 40_000


def test_recursion_through_allof_refers_to_the_class_by_name() -> None:
    node = {
        "allOf": [ref("Node"), obj({"name": {"type": "string"}, "children": {"type": "array", "items": ref("Node")}})]
    }
    sig = tool_signature(Tool(name="tree", input_schema=with_defs({"Node": node}, root=ref("Node"))))
    tree = parses(sig.text)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    (cls,) = classes.values()
    fields = {f.target.id: ast.unparse(f.annotation) for f in cls.body if isinstance(f, ast.AnnAssign)}  # type: ignore[union-attr]
    # Recursive references are named, never expanded again.
    assert fields == {"name": "str", "children": f"list[{cls.name}]"}
    assert f"root: {cls.name}" in sig.text
    assert sig.warnings == ()


def test_recursive_allof_with_strict_still_answers_quickly() -> None:
    tool = Tool(name="t", input_schema=RECURSIVE["split_dag_40_levels"])
    with computes_within(RECURSIVE_BOUND_S), pytest.raises(SchemaRenderError) as e:
        tool_signature(tool, strict=True)
    assert "default:t" in str(e.value)


# -- size ---------------------------------------------------------------------------------


def wide_schema(n: int) -> dict[str, Any]:
    props = {f"param_{i}": {"type": "string", "description": f"Parameter {i} of a very wide tool."} for i in range(n)}
    # The one required parameter comes last: it must still be shown.
    return {"type": "object", "properties": props, "required": [f"param_{n - 1}"]}


def test_a_30000_property_tool_registers_and_renders_within_bounds() -> None:
    tool = Tool(
        name="wide",
        namespace="hostile",
        description="A tool with far too many parameters.",
        input_schema=wide_schema(30_000),
    )
    with computes_within(BOUND_S):
        store = store_of(tool)
        sig = tool_signature(tool)
        docs = {level: store.describe(tool.id, level) for level in ("summary", "schema", "full")}
    tree = parses(sig.text)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    shown = [a.arg for a in fn.args.kwonlyargs]
    assert shown[0] == "param_29999"  # required first, though it was read last
    assert 0 < len(shown) < 1000
    assert fn.args.kwarg is not None and fn.args.kwarg.arg == "kwargs"
    assert sig.omitted == 30_000 - len(shown)
    assert f"{sig.omitted:,} more parameters not shown" in sig.text
    assert any("schema too large" in w or "signature too large" in w for w in sig.warnings)
    assert len(sig.text) < 40_000
    assert sig.required == ("param_29999",)
    for level, doc in docs.items():
        assert len(doc.render()) <= {"summary": 200, "schema": 1200, "full": 4000}[level]
    assert docs["schema"].warnings
    with computes_within(BOUND_S):
        many = store.describe_many([tool.id] * 10, "schema")
    assert sum(len(d.render()) + 1 for d in many) <= 6000


def test_a_30000_property_output_schema_stands_in_as_a_dict() -> None:
    tool = Tool(name="wide_out", input_schema=obj({"a": {"type": "string"}}), output_schema=wide_schema(30_000))
    with computes_within(BOUND_S):
        sig = tool_signature(tool)
    parses(sig.text)
    assert sig.returns == "WideOutResult"
    assert "WideOutResult = dict[str, Any]" in sig.text
    assert sig.warnings


def test_the_parameter_whose_type_spends_the_budget_is_still_shown() -> None:
    body = {"type": "object", "properties": {"big": wide_schema(30_000)}}
    tool = Tool(name="put", input_schema=obj({"body": body, "after": {"type": "string"}}))
    with computes_within(BOUND_S):
        sig = tool_signature(tool)
    parses(sig.text)
    assert [p.wire_name for p in sig.params] == ["body"]
    assert "PutBodyBig = dict[str, Any]" in sig.text
    assert sig.omitted == 1 and "1 more parameters not shown" in sig.text


def test_a_union_of_100000_branches_shows_as_any() -> None:
    schema = obj({"u": {"anyOf": [{"const": f"value-{i}-" * 5} for i in range(100_000)]}})
    with computes_within(BOUND_S):
        sig = tool_signature(Tool(name="union", input_schema=schema))
    parses(sig.text)
    assert "u: Any" in sig.text
    assert any("type too large to show" in w for w in sig.warnings)


def test_huge_names_refs_and_defaults_are_not_echoed() -> None:
    huge = "k" * 1_000_000
    schema = {
        "type": "object",
        "properties": {
            huge: {"type": "string"},
            "ok": {"type": "integer", "default": 1},
            "big_default": {"type": "string", "default": "d" * 10_000_000},
            "bad_ref": {"$ref": "#/$defs/" + huge},
            "nested": obj({huge: {"type": "string"}}),
            "odd_type": {"type": huge},
        },
    }
    with computes_within(BOUND_S):
        sig = tool_signature(Tool(name="huge", description=huge, input_schema=schema))
    parses(sig.text)
    assert len(sig.text) < 2_000
    assert sig.omitted == 1
    assert "ok: int = 1" in sig.text
    assert "big_default: str = ..." in sig.text
    assert "nested: HugeNested" in sig.text and "HugeNested = dict[str, Any]" in sig.text
    assert all(len(w) < 600 for w in sig.warnings)
    assert any("1,000,000 characters" in w for w in sig.warnings)


def test_strict_render_errors_are_clipped() -> None:
    schema = obj({"x": {"type": "t" * 1_000_000}})
    with pytest.raises(SchemaRenderError) as e:
        tool_signature(Tool(name="t", input_schema=schema), strict=True)
    assert len(str(e.value)) < 1_000
    assert "…" in str(e.value)


def test_a_huge_description_costs_no_more_than_a_short_one() -> None:
    desc = "Fetches things from a place. " + "Word " * 8_000_000  # 40 MB
    tool = Tool(name="talker", namespace="hostile", description=desc, input_schema=obj({"q": {"type": "string"}}))
    with computes_within(BOUND_S):
        store = store_of(tool)
        docs = [store.describe(tool.id, level) for level in ("summary", "schema", "full")]
        store.add_notes(tool.id, "n" * 10_000_000)
    assert docs[0].render() == "hostile:talker — Fetches things from a place."
    assert [len(d.render()) <= b for d, b in zip(docs, (200, 1200, 4000), strict=True)] == [True, True, True]
    assert len(store.describe(tool.id, "full").notes[0]) == 300


# -- errors echo bounded text ---------------------------------------------------------------


def test_doc_errors_clip_what_they_echo() -> None:
    tool = Tool(name="t", namespace="ns", input_schema=obj({"a": {"type": "string"}}))
    store = store_of(tool)
    huge = "x" * 40_000_000
    cases: list[tuple[type[Exception], Callable[[], object]]] = [
        (DocNotFoundError, lambda: store.describe("ns:" + huge)),
        (DocNotFoundError, lambda: store.describe(huge)),
        (DocNotFoundError, lambda: store.describe("ns:t_" + "y" * 120)),
        (InvalidDetailLevelError, lambda: store.describe("ns:t", huge)),
        (InvalidExampleError, lambda: store.add_example("ns:t", {"id": huge, "args": {"a": "1", "b" * 1000: 1}})),
    ]
    for kind, call in cases:
        with computes_within(BOUND_S), pytest.raises(kind) as e:
            call()
        assert len(str(e.value)) < 1_200, (kind, len(str(e.value)))


def test_an_example_error_names_a_few_parameters_of_a_wide_tool() -> None:
    store = store_of(Tool(name="wide", namespace="ns", input_schema=wide_schema(30_000)))
    with pytest.raises(InvalidExampleError) as e:
        store.add_example("ns:wide", {"id": "e1", "args": {"param_29999": "x", "nope": 1}})
    message = str(e.value)
    assert "'args.nope'" in message and "param_0, param_1" in message and ", ..." in message
    assert len(message) < 600


# -- learned result shapes ------------------------------------------------------------------


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value, "b": [value, value]}
    return value


def props_size(shape: Any) -> int:
    # properties hold a dict of shapes: count each shape once.
    if not isinstance(shape, dict):
        return 0
    n = 1
    for key in ("items", "additionalProperties"):
        n += props_size(shape.get(key))
    n += sum(props_size(v) for v in (shape.get("properties") or {}).values())
    n += sum(props_size(v) for v in shape.get("anyOf") or [])
    return n


HOSTILE_RESULTS: dict[str, Callable[[], Any]] = {
    "deep_shared": lambda: nested(500),  # a DAG: a huge tree when walked
    "deep_lists": lambda: json.loads("[" * 900 + "]" * 900),
    "wide_object": lambda: {f"key{i}": {"x": i} for i in range(200_000)},
    "wide_objects_in_a_list": lambda: [{f"k{i}_{j}": {"x": [1, "a"]} for j in range(48)} for i in range(2_000)],
    "grid": lambda: {f"r{i}": {f"c{j}": {f"v{k}": k for k in range(40)} for j in range(40)} for i in range(40)},
}


@pytest.mark.parametrize("name", sorted(HOSTILE_RESULTS))
def test_shapes_of_hostile_results_stay_small(name: str) -> None:
    value = HOSTILE_RESULTS[name]()
    limits = ShapeLimits()
    with computes_within(BOUND_S):
        shape = infer_shape(value, limits)
    assert props_size(shape) <= limits.max_nodes
    assert len(json.dumps(shape)) < 100_000


def test_a_shape_learned_from_ever_new_results_stays_small_and_renders() -> None:
    tool = Tool(name="churn", namespace="hostile", input_schema=obj({}))
    store = store_of(tool)
    limits = ShapeLimits()
    with computes_within(BOUND_S * 2):
        for call in range(300):
            store.record_result(tool.id, {f"k{call % 40}": {f"j{call}_{i}": {f"z{i}": {"q": [i]}} for i in range(40)}})
        shape = store.result_shape(tool.id)
        doc = store.describe(tool.id, "full")
    assert shape is not None and props_size(shape) <= limits.max_nodes
    assert len(doc.render()) <= 4000
    assert doc.signature is not None
    parses(doc.signature)


def test_merging_huge_shapes_keeps_the_top_levels() -> None:
    a = infer_shape({"items": [{f"a{i}": {f"b{j}": j for j in range(40)} for i in range(40)}]})
    b = infer_shape({"items": [{f"c{i}": {f"d{j}": j for j in range(40)} for i in range(40)}], "total": 3})
    merged = merge_shapes(a, b)
    assert props_size(merged) <= ShapeLimits().max_nodes
    # Only widened: the top-level keys survive, deeper parts may have become Any.
    assert set(merged["properties"]) == {"items", "total"}
    assert merged["required"] == ["items"]


def test_json_text_writes_an_int_too_long_to_print_as_a_note_of_its_size() -> None:
    from tooldocs import json_text

    text = json_text({"n": [1, 10**5000], "ok": 2})
    assert json.loads(text) == {"n": [1, "<an int of about 5,001 digits>"], "ok": 2}
    assert json_text(10**5000) == '"<an int of about 5,001 digits>"'
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        json_text(loop)
