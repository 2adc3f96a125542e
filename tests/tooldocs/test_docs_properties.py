"""Property-based tests: any schema renders into valid Python that keeps every parameter."""

from __future__ import annotations

import ast
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tooldocs import STUB_IMPORTS, RenderOptions, cap_text, py_identifier, render_module, tool_signature
from tooldocs import schema_to_python as to_py
from tooldocs._doc import RENDER_TIERS
from toolindex import Tool

ODD_NAMES = [
    "from", "class", "None", "True", "lambda", "a-b", "a_b", "a.b", "2x", "", " ", "$ref", "__init__",
    "kwargs", "self", "Any", "Literal", "TypedDict", "NotRequired", "str", "über", "名前", "x\ny", 'q"uote',
    "back\\slash", "tab\there", "emoji😀", "a" * 80,
]  # fmt: skip
DEF_NAMES = ["Node", "User", "Item", "node", "Any", "a-b", "2d", "x~y", "s/l"]

names = st.one_of(st.sampled_from(ODD_NAMES), st.text(max_size=10))
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)  # fmt: skip


def ref_to(name: str) -> dict[str, Any]:
    return {"$ref": "#/$defs/" + name.replace("~", "~0").replace("/", "~1")}


leaf_schemas = st.one_of(
    st.sampled_from([{"type": t} for t in ("string", "integer", "number", "boolean", "null", "array", "object")]),
    st.just({}),
    st.just(True),
    st.lists(json_scalars, min_size=1, max_size=20).map(lambda v: {"enum": v}),
    json_scalars.map(lambda v: {"const": v}),
    st.sampled_from(DEF_NAMES).map(ref_to),
    st.sampled_from(["#", "#/$defs/missing", "http://example.com/x.json", "#/properties/0"]).map(lambda r: {"$ref": r}),
    st.sampled_from(["string", "integer"]).map(lambda t: {"type": [t, "null"]}),
    st.sampled_from([{"type": "weird"}, {"type": []}, {"properties": 3}, {"items": "x"}]),
)


def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    objects = st.builds(
        lambda props, req, extra, desc: {
            "type": "object",
            "properties": props,
            "required": [k for k in props if req] if req is not None else [],
            **({"additionalProperties": extra} if extra is not None else {}),
            **({"description": desc} if desc else {}),
        },
        st.dictionaries(names, children, max_size=5),
        st.one_of(st.none(), st.booleans()),
        st.one_of(st.none(), st.booleans(), children),
        st.text(max_size=30),
    )
    return st.one_of(
        objects,
        children.map(lambda c: {"type": "array", "items": c}),
        st.lists(children, min_size=1, max_size=3).map(lambda cs: {"type": "array", "prefixItems": cs, "items": False}),
        st.lists(children, min_size=1, max_size=3).map(lambda cs: {"anyOf": cs}),
        st.lists(children, min_size=1, max_size=3).map(lambda cs: {"oneOf": cs}),
        st.lists(children, min_size=1, max_size=3).map(lambda cs: {"allOf": cs}),
        children.map(lambda c: {**c, "nullable": True} if isinstance(c, dict) else c),
        st.dictionaries(names, children, max_size=3).map(lambda d: {"type": "object", "additionalProperties": d}),
    )


schemas = st.recursive(leaf_schemas, extend, max_leaves=12)


@st.composite
def input_schemas(draw: st.DrawFn) -> dict[str, Any]:
    props = draw(st.dictionaries(names, schemas, max_size=8))
    required = [k for k in props if draw(st.booleans())]
    defs = draw(st.dictionaries(st.sampled_from(DEF_NAMES), schemas, max_size=4))
    schema: dict[str, Any] = {"type": "object", "properties": props, "required": required}
    if defs:
        schema["$defs"] = defs
    for k in list(props)[:2]:
        if draw(st.booleans()):
            props[k] = {**props[k], "default": draw(json_scalars)} if isinstance(props[k], dict) else props[k]
    return schema


tool_names = st.from_regex(r"[A-Za-z0-9_.\-]{1,20}", fullmatch=True)


def def_node(tree: ast.Module, name: str) -> ast.FunctionDef:
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(fns) == 1
    return fns[0]


def check_signature(tool: Tool, options: RenderOptions, shape: dict[str, Any] | None = None) -> None:
    sig = tool_signature(tool, options=options, result_shape=shape)
    source = f"{STUB_IMPORTS}\n{sig.text}\n"
    tree = ast.parse(source)
    # compile() also runs the symbol table: duplicate argument names would fail here.
    compile(source, "<signature>", "exec")
    fn = def_node(tree, sig.name)
    props = tool.input_schema.get("properties") or {}
    # Every parameter of the schema is kept, under a distinct identifier.
    assert {p.wire_name for p in sig.params} == set(props)
    assert len({p.name for p in sig.params}) == len(sig.params)
    kwonly = {a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True)}
    assert set(kwonly) == {p.name for p in sig.params}
    # Every required parameter is required in the signature (no default).
    required = set(tool.input_schema.get("required") or []) & set(props)
    assert {p.wire_name for p in sig.params if p.required} == required
    for p in sig.params:
        assert (kwonly[p.name] is None) == p.required
    # Renamed parameters map back to their wire names.
    assert sig.wire_args({p.name: i for i, p in enumerate(sig.params)}) == {
        p.wire_name: i for i, p in enumerate(sig.params)
    }


@settings(max_examples=300)
@given(name=tool_names, schema=input_schemas(), desc=st.text(max_size=200), tier=st.sampled_from(RENDER_TIERS))
def test_any_input_schema_renders_valid_python_keeping_all_parameters(
    name: str, schema: dict[str, Any], desc: str, tier: RenderOptions
) -> None:
    tool = Tool(name=name, namespace="ns", description=desc, input_schema=schema)
    check_signature(tool, tier)


@settings(max_examples=150)
@given(name=tool_names, schema=input_schemas(), out=schemas)
def test_any_output_schema_or_shape_renders_valid_python(name: str, schema: dict[str, Any], out: Any) -> None:
    if isinstance(out, dict):
        tool = Tool(name=name, namespace="ns", input_schema=schema, output_schema=out)
        check_signature(tool, RenderOptions())
        tool2 = Tool(name=name, namespace="ns", input_schema=schema)
        check_signature(tool2, RenderOptions(), shape=out)


json_values = st.recursive(
    json_scalars, lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(names, c, max_size=4)), max_leaves=20
)


@settings(max_examples=200)
@given(value=st.one_of(schemas, json_values))
def test_schema_to_python_never_crashes_on_any_json(value: Any) -> None:
    r = to_py(value if isinstance(value, dict | bool) else {"const": value}, name="Value")
    source = f"{STUB_IMPORTS}\n{r.source}\nValue_ = {r.annotation}\n"
    compile(source, "<type>", "exec")


@settings(max_examples=60)
@given(st.lists(st.tuples(tool_names, st.sampled_from(["a", "b"]), input_schemas()), min_size=1, max_size=5))
def test_modules_of_many_tools_are_valid_with_unique_function_names(
    specs: list[tuple[str, str, dict[str, Any]]],
) -> None:
    tools = {f"{ns}:{n}": Tool(name=n, namespace=ns, input_schema=s) for n, ns, s in specs}
    mod = render_module(tools.values())
    tree = ast.parse(mod.text)
    compile(mod.text, "<module>", "exec")
    fns = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert len(fns) == len(set(fns)) == len(tools)
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    classes += [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    assert len(classes) == len(set(classes))
    assert not set(classes) & set(fns)


@given(st.text(max_size=50))
def test_py_identifier_is_always_an_identifier(name: str) -> None:
    ident = py_identifier(name)
    assert ident.isidentifier()
    compile(f"def f(*, {ident}=1): pass", "<id>", "exec")


@given(st.text(max_size=300), st.integers(1, 200))
def test_cap_text_respects_the_limit_and_marks_cuts(text: str, limit: int) -> None:
    out = cap_text(text, limit)
    assert len(out) <= limit
    if len(text) <= limit:
        assert out == text
    else:
        assert out.endswith("…")
        assert text.startswith(out[:-1].rstrip()) or out == "…"
    out.encode("utf-8")  # never half a character
