from __future__ import annotations

import ast
import sys
import types
import typing
from typing import Any

import pytest

from tooldocs import (
    STUB_IMPORTS,
    RenderOptions,
    py_identifier,
    render_module,
    render_signature,
    schema_to_python,
    tool_signature,
)
from tooldocs._names import NameMap, class_name
from toolindex import Tool


def obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or [], **extra}


def tool(name: str = "t", props: dict[str, Any] | None = None, required: list[str] | None = None, **kw: Any) -> Tool:
    schema = obj(props or {}, required) if props is not None else {"type": "object"}
    desc = kw.pop("description", "Does a thing.")
    return Tool(name=name, namespace="ns", description=desc, input_schema=schema, **kw)


def parses(source: str) -> ast.Module:
    return ast.parse(f"{STUB_IMPORTS}\n{source}")


def ann(schema: dict[str, Any] | bool, **kw: Any) -> str:
    return schema_to_python(schema, **kw).annotation


# -- identifiers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "ident"),
    [
        ("per_page", "per_page"),
        ("per-page", "per_page"),
        ("from", "from_"),
        ("class", "class_"),
        ("2fa.code", "_2fa_code"),
        ("a.b.c", "a_b_c"),
        ("", "_"),
        ("über", "über"),
        ("$ref", "_ref"),
        ("None", "None_"),
    ],
)
def test_py_identifier(wire: str, ident: str) -> None:
    assert py_identifier(wire) == ident
    assert ident.isidentifier()


def test_name_map_reports_collisions_and_keeps_names_apart() -> None:
    names = NameMap("parameters")
    # The name that already is an identifier keeps it; the sanitised ones get suffixes.
    assert names.add_all(["per-page", "per_page", "per.page", "page"]) == [
        "per_page_2",
        "per_page",
        "per_page_3",
        "page",
    ]
    [c] = names.collisions
    assert c.identifier == "per_page"
    assert set(c.wire_names) == {"per-page", "per_page", "per.page"}
    assert "'per-page' -> per_page_2" in str(c)
    assert names.renamed == {"per_page_2": "per-page", "per_page_3": "per.page"}


def test_class_name_is_pascal_case_and_avoids_reserved_names() -> None:
    assert class_name("list_issues", "filter") == "ListIssuesFilter"
    assert class_name("any") == "AnyType"
    assert class_name("2x") == "T_2x"


# -- schema → type ---------------------------------------------------------------------


def test_simple_types() -> None:
    assert ann({"type": "string"}) == "str"
    assert ann({"type": "integer"}) == "int"
    assert ann({"type": "number"}) == "float"
    assert ann({"type": "boolean"}) == "bool"
    assert ann({"type": "null"}) == "None"
    assert ann({}) == "Any"
    assert ann(True) == "Any"
    assert ann({"type": "array"}) == "list[Any]"
    assert ann({"type": "array", "items": {"type": "string"}}) == "list[str]"
    assert ann({"type": "object"}) == "dict[str, Any]"
    assert ann({"type": "object", "additionalProperties": {"type": "integer"}}) == "dict[str, int]"


def test_enum_and_const_become_literal() -> None:
    assert ann({"type": "string", "enum": ["open", "closed"]}) == 'Literal["open", "closed"]'
    assert ann({"enum": [1, 2, None]}) == "Literal[1, 2] | None"
    assert ann({"const": "x"}) == 'Literal["x"]'
    assert ann({"enum": ['say "hi"']}) == 'Literal["say \\"hi\\""]'
    # Too many values: the base type, not a Literal of hundreds of strings.
    assert ann({"type": "string", "enum": [f"v{i}" for i in range(40)]}) == "str"
    # Floats cannot be Literal values.
    assert ann({"enum": [1.5, 2.5]}) == "float"


def test_nullable_forms() -> None:
    assert ann({"type": ["string", "null"]}) == "str | None"
    assert ann({"type": ["null", "string"]}) == "str | None"
    assert ann({"anyOf": [{"type": "integer"}, {"type": "null"}]}) == "int | None"
    assert ann({"type": "string", "nullable": True}) == "str | None"


def test_unions_and_literal_merging() -> None:
    assert ann({"oneOf": [{"type": "string"}, {"type": "integer"}]}) == "str | int"
    assert ann({"anyOf": [{"const": "a"}, {"const": "b"}, {"type": "null"}]}) == 'Literal["a", "b"] | None'
    assert ann({"anyOf": [{"type": "string"}, {}]}) == "Any"
    assert ann({"anyOf": [{"type": "array", "items": {"type": ["string", "integer"]}}, {"type": "string"}]}) == (
        "list[str | int] | str"
    )


def test_tuples() -> None:
    assert ann({"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "items": False}) == (
        "tuple[float, float]"
    )
    assert ann({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}) == "tuple[str, int]"


def test_fixed_length_arrays_as_the_lists_they_decode_to() -> None:
    # A type checker reads the list a JSON array decodes to: no tuple, the items' types as one union.
    as_list = RenderOptions(tuples=False)
    pair = {"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}], "items": False}
    assert schema_to_python(pair, options=as_list).annotation == "list[float | str]"
    old = {"type": "array", "items": [{"type": "number"}, {"type": "number"}]}
    assert schema_to_python(old, options=as_list).annotation == "list[float]"


def test_nested_objects_become_typed_dicts_with_required_marks() -> None:
    r = schema_to_python(
        obj({"a": {"type": "string", "description": "The A."}, "b": obj({"c": {"type": "integer"}}, ["c"])}, ["a"]),
        name="Thing",
    )
    assert r.annotation == "Thing"
    src = r.source
    parses(src)
    assert "class ThingB(TypedDict):\n    c: int" in src
    assert "class Thing(TypedDict):\n    a: str  # A\n    b: NotRequired[ThingB]" in src
    # Children are defined before the classes that use them.
    assert src.index("class ThingB") < src.index("class Thing(")


def test_mostly_optional_objects_use_total_false() -> None:
    src = schema_to_python(obj({k: {"type": "string"} for k in "abcd"}, ["a"]), name="X").source
    assert "class X(TypedDict, total=False):\n    a: Required[str]\n    b: str" in src


def test_keys_that_are_not_identifiers_use_functional_typed_dict_with_wire_keys() -> None:
    schema = obj({"per-page": {"type": "integer"}, "class": {"type": "string"}}, ["class"])
    src = schema_to_python(schema, name="Q").source
    parses(src)
    assert 'Q = TypedDict("Q", {' in src
    assert '"per-page": NotRequired[int],' in src
    assert '"class": str,' in src


def test_a_key_named_like_a_type_its_class_reads_uses_the_functional_form() -> None:
    # In a class body ``str: str`` binds ``str``: a type checker then reads ``label: str`` as that
    # key, an unknown type, and checks nothing typed by it.
    schema = obj(
        {"label": {"type": "string"}, "str": {"type": "string"}, "Literal": {"enum": ["a", "b"]}, "n": {}},
        ["label", "str"],
    )
    src = schema_to_python(schema, name="Q").source
    parses(src)
    assert src.startswith('Q = TypedDict("Q", {') and '"str": str,' in src and '"label": str,' in src, src
    # A key no annotation of its class reads keeps the class syntax.
    src = schema_to_python(obj({"int": {"type": "string"}, "id": {"type": "string"}}, ["int", "id"]), name="R").source
    assert src == "class R(TypedDict):\n    int: str\n    id: str", src


def test_a_module_naming_a_function_like_a_builtin_reads_the_builtin_through_an_alias(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A tool named ``list`` is the module's function ``list``: every ``list[...]`` of the module
    # would name that function, not the builtin.
    item = obj({"key": {"type": "string"}, "_builtins": {"type": "string"}}, ["key", "_builtins"])
    out = obj({"entries": {"type": "array", "items": item}, "mode": {"enum": ["a", "b"]}}, ["entries", "mode"])
    params = {"tags": {"type": "array", "items": {"type": "string"}}}
    tools = [
        Tool(name="list", namespace="kv", input_schema=obj(params), output_schema=out),
        Tool(name="Literal", namespace="kv", input_schema=obj({})),
    ]
    mod = render_module(tools, function_names={"kv:list": "list", "kv:Literal": "Literal"})
    # Read as a stub is (annotations deferred, names looked up in the module): the builtins.
    module = types.ModuleType("kv_stub")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile("from __future__ import annotations\n" + mod.text, "<stubs>", "exec"), module.__dict__)
    ns = module.__dict__
    hints = typing.get_type_hints(ns["list"])
    assert hints["tags"] == list[str] and hints["return"] is ns["ListResult"], hints
    entries = typing.get_type_hints(ns["ListResult"])["entries"]
    item_class = ns["ListResultEntriesItem"]
    assert entries == list[item_class], entries
    assert typing.get_type_hints(ns["ListResult"])["mode"] == typing.Literal["a", "b"]
    # The aliases are names no identifier of the module takes (a key is named ``_builtins`` here).
    assert mod.text.startswith("import builtins as _builtins_2\nimport typing as _typing\n"), mod.text
    # What a person reads keeps the plain spelling.
    assert "def list(*, tags: list[str] = ...) -> ListResult:" in mod.signatures[0].text
    assert "_builtins_2." not in mod.signatures[0].text and "_typing." not in mod.signatures[1].text
    # A module whose names shadow nothing is as before.
    plain = render_module(tools, function_names={"kv:list": "entries", "kv:Literal": "lit"})
    assert plain.text.startswith(STUB_IMPORTS) and "_builtins_2." not in plain.text


def test_refs_defs_and_definitions() -> None:
    schema = {
        "type": "object",
        "properties": {"owner": {"$ref": "#/$defs/User"}, "tags": {"$ref": "#/definitions/Tags"}},
        "$defs": {"User": obj({"login": {"type": "string"}}, ["login"], description="A GitHub user.")},
        "definitions": {"Tags": {"type": "array", "items": {"type": "string"}}},
    }
    r = schema_to_python(schema, name="Repo")
    parses(r.source)
    assert "class User(TypedDict):  # GitHub user" in r.source
    assert "class Repo(TypedDict, total=False):\n    owner: User\n    tags: list[str]" in r.source
    assert r.warnings == ()


def test_recursive_refs_terminate_and_refer_to_the_class() -> None:
    schema = {
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": obj(
                {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}
            )
        },
    }
    r = schema_to_python(schema)
    assert r.annotation == "Node"
    assert "children: list[Node]" in r.source
    parses(r.source)
    # Root recursion through "#".
    r2 = schema_to_python(obj({"next": {"$ref": "#"}}), name="Link")
    assert "next: Link" in r2.source


def test_recursive_non_object_ref_is_any() -> None:
    r = schema_to_python({"$ref": "#/$defs/T", "$defs": {"T": {"type": "array", "items": {"$ref": "#/$defs/T"}}}})
    assert r.annotation == "list[Any]"


def test_unresolvable_and_remote_refs_warn_and_render_any() -> None:
    r = schema_to_python(obj({"a": {"$ref": "#/$defs/Missing"}, "b": {"$ref": "https://example.com/s.json"}}), name="M")
    assert "    a: Any\n    b: Any" in r.source
    assert len(r.warnings) == 2
    assert any("/properties/a" in w and "does not resolve" in w for w in r.warnings)


def test_all_of_objects_merge() -> None:
    r = schema_to_python(
        {"allOf": [obj({"a": {"type": "string"}}, ["a"]), obj({"b": {"type": "integer"}})]},
        name="AB",
    )
    assert "a: str" in r.source and "b: NotRequired[int]" in r.source


# Schemas whose keys come from several places. The stub must admit every key the schema admits
# (a checker refuses a key the stub lacks), so what cannot be merged into one class is open.
_PET = obj({"id": {"type": "integer"}, "name": {"type": "string"}}, ["id", "name"])
_DOG = {"allOf": [{"$ref": "#/$defs/Pet"}, obj({"breed": {"type": "string"}}, ["breed"])]}
_PUPPY = {"allOf": [{"$ref": "#/$defs/Dog"}, obj({"age_weeks": {"type": "integer"}}, ["age_weeks"])]}
_DEFS = {"Pet": _PET, "Dog": _DOG, "Puppy": _PUPPY}
_LOOSE = RenderOptions(loose_open_objects=True)


def _keys(r: Any, cls: str) -> dict[str, str]:
    """Field name → annotation of one rendered class, optional ones as ``NotRequired[...]``."""
    [source] = [d for d in r.definitions if d.startswith((f"class {cls}(", f"{cls} = TypedDict("))]
    total = "total=False" not in source
    fields = {}
    for line in source.splitlines()[1:]:
        key, _, value = line.strip().partition(": ")
        if value:
            value = value.split("  #")[0].rstrip(",")
            if not total:
                value = value[len("Required[") : -1] if value.startswith("Required[") else f"NotRequired[{value}]"
            fields[key.strip('"')] = value
    return fields


def test_all_of_member_that_is_itself_an_all_of_merges_every_level() -> None:
    r = schema_to_python({"$defs": _DEFS, "$ref": "#/$defs/Puppy"}, name="R")
    assert r.annotation == "Puppy"
    assert _keys(r, "Puppy") == {"id": "int", "name": "str", "breed": "str", "age_weeks": "int"}
    inline = obj({"litter": {"type": "array", "items": {"allOf": [{"$ref": "#/$defs/Dog"}, obj({"w": {}})]}}})
    r = schema_to_python({"$defs": _DEFS, **inline}, name="R")
    assert set(_keys(r, "RLitterItem")) == {"id", "name", "breed", "w"}


def test_root_all_of_beside_defs_merges_its_members() -> None:
    schema = {"$defs": _DEFS, "allOf": [{"$ref": "#/$defs/Pet"}, obj({"took_ms": {"type": "integer"}}, ["took_ms"])]}
    r = schema_to_python(schema, name="R")
    assert _keys(r, "R") == {"id": "int", "name": "str", "took_ms": "int"}


def test_properties_beside_combinators_add_the_combinators_keys() -> None:
    # allOf members are required as declared; keys only some branches have are NotRequired.
    both = obj({"took_ms": {"type": "integer"}}, ["took_ms"], allOf=[{"$ref": "#/$defs/Pet"}], **{"$defs": _DEFS})
    assert _keys(schema_to_python(both, name="R"), "R") == {"took_ms": "int", "id": "int", "name": "str"}
    branches = [obj({"card": {"type": "string"}}, ["card"]), obj({"iban": {"type": "string"}}, ["iban"])]
    for key in ("oneOf", "anyOf"):
        r = schema_to_python(obj({"id": {"type": "string"}}, ["id"], **{key: branches}), name="Pay")
        assert _keys(r, "Pay") == {"id": "str", "card": "NotRequired[str]", "iban": "NotRequired[str]"}
    cond = obj(
        {"kind": {"type": "string"}},
        ["kind"],
        **{"if": obj({"kind": {"const": "file"}}), "then": obj({"size": {"type": "integer"}}, ["size"])},
        **{"else": obj({"children": {"type": "integer"}})},
    )
    assert _keys(schema_to_python(cond, name="C"), "C") == {
        "kind": "str",
        "size": "NotRequired[int]",
        "children": "NotRequired[int]",
    }


def test_a_key_only_required_names_is_a_required_field() -> None:
    # ``required`` says every value has the key, even where ``properties`` does not describe it.
    r = schema_to_python(obj({"id": {"type": "string"}}, ["id", "extra"]), name="R")
    assert _keys(r, "R") == {"id": "str", "extra": "Any"}, r.source
    merged = {"allOf": [obj({"id": {"type": "string"}}, ["id"]), {"required": ["extra"]}]}
    assert _keys(schema_to_python(merged, name="M"), "M") == {"id": "str", "extra": "Any"}


def test_ref_with_sibling_keywords_merges_the_siblings() -> None:
    pet = {"$ref": "#/$defs/Pet", "properties": {"chip": {"type": "string"}}, "required": ["chip"]}
    r = schema_to_python({"$defs": _DEFS, **obj({"pet": pet}, ["pet"])}, name="R")
    assert _keys(r, "RPet") == {"id": "int", "name": "str", "chip": "str"}


def test_open_objects_are_dicts_wherever_they_are_when_asked() -> None:
    open_obj = obj({"id": {"type": "string"}}, ["id"], additionalProperties=True)
    typed = obj({"id": {"type": "string"}}, ["id"], additionalProperties={"type": "integer"})
    pattern = obj({"id": {"type": "string"}}, ["id"], patternProperties={"^x-": {"type": "string"}})
    unevaluated = obj({"id": {"type": "string"}}, ["id"], unevaluatedProperties={"type": "integer"})
    unevaluated_true = obj({"id": {"type": "string"}}, ["id"], unevaluatedProperties=True)
    defs = {"Open": open_obj, "Typed": typed}
    for root in (open_obj, typed, pattern, unevaluated, unevaluated_true, {"allOf": [open_obj, obj({"b": {}})]}):
        assert ann(root, options=_LOOSE) == "dict[str, Any]", root
        assert ann(root) != "dict[str, Any]"  # docs still show the declared keys
    nested = {"$defs": defs, **obj({"o": {"$ref": "#/$defs/Open"}, "t": {"$ref": "#/$defs/Typed"}})}
    r = schema_to_python(nested, name="N", options=_LOOSE)
    assert _keys(r, "N") == {"o": "NotRequired[dict[str, Any]]", "t": "NotRequired[dict[str, Any]]"}, r.source
    # An object the schema closes stays a class, so unknown keys are still found.
    assert ann(_PET, options=_LOOSE, name="Pet") == "Pet"
    assert ann({"$defs": _DEFS, "$ref": "#/$defs/Puppy"}, options=_LOOSE) == "Puppy"


def test_a_class_is_closed_only_where_the_schema_closes_its_object() -> None:
    # JSON Schema: an object that says nothing of other keys admits them; a checker must know which
    # classes are closed (no key they lack is valid) and which only declare some keys.
    shut = {"additionalProperties": False}
    r = schema_to_python(obj({"a": obj({"b": {}}, **shut), "c": obj({"d": {}})}), name="R")
    assert r.closed == {"RA"}, r.source
    assert schema_to_python(obj({"a": {}}, unevaluatedProperties=False), name="U").closed == {"U"}
    assert schema_to_python(obj({"a": {}}, **shut, patternProperties={"^x-": {}}), name="P").closed == set()
    # Merged objects: a part every value matches closes them; a branch alone does not.
    pet = {**_PET, **shut}
    dog = {"allOf": [{"$ref": "#/$defs/Pet"}, obj({"breed": {}})]}
    assert schema_to_python({"$defs": {"Pet": pet}, **dog}, name="D").closed == {"D"}
    assert schema_to_python({"$defs": _DEFS, "$ref": "#/$defs/Puppy"}).closed == set()
    branch = obj({"id": {}}, oneOf=[obj({"a": {}}, **shut), obj({"b": {}}, **shut)])
    assert schema_to_python(branch, name="B").closed == set()
    # A tool's signature says it for its parameters' and its result's classes.
    closed = obj({"login": {"type": "string"}}, ["login"], **shut)
    sig = tool_signature(tool(props={"q": obj({"x": {}})}, output_schema=closed))
    assert sig.closed == {"TResult"}, sig.text
    assert tool_signature(tool(props={}, output_schema=obj({"login": {}}))).closed == set()


def test_combinators_that_cannot_be_merged_leave_the_object_open() -> None:
    schema = obj({"id": {"type": "string"}}, ["id"], oneOf=[obj({"a": {}}), {"type": "string"}])
    assert ann(schema, options=_LOOSE) == "dict[str, Any]"
    # A plain union of objects stays a union.
    assert ann({"anyOf": [obj({"a": {}}), obj({"b": {}})]}, name="U") == "U1 | U2"


def test_depth_cap_and_flat_option() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for i in range(10):
        deep = obj({f"k{i}": deep})
    r = schema_to_python(deep, name="D", options=RenderOptions(max_depth=2))
    assert "dict[str, Any]" in r.source
    assert schema_to_python(deep, options=RenderOptions(nested_classes=False)).annotation == "dict[str, Any]"


def test_garbage_schemas_never_raise() -> None:
    assert ann({"type": "frobnicate"}) == "Any"
    assert ann({"type": []}) == "Any"
    assert ann({"properties": "nope"}) == "dict[str, Any]"
    r = schema_to_python({"items": 3})
    assert r.annotation == "list[Any]" and r.warnings
    assert ann(False) == "Any"


# -- signatures ------------------------------------------------------------------------


def test_signature_orders_required_first_and_shows_defaults() -> None:
    sig = tool_signature(
        tool(
            "list_issues",
            {
                "state": {"type": "string", "enum": ["open", "closed"], "default": "open"},
                "owner": {"type": "string", "description": "The account owner."},
                "page": {"type": "integer"},
                "repo": {"type": "string"},
            },
            ["owner", "repo"],
            description="List issues of a repository. Paginated.",
        )
    )
    parses(sig.text)
    assert [p.wire_name for p in sig.params] == ["owner", "repo", "state", "page"]
    assert sig.required == ("owner", "repo")
    assert 'state: Literal["open", "closed"] = "open",' in sig.text
    assert "page: int = ...," in sig.text
    assert "owner: str,  # Account owner" in sig.text
    assert '"""List issues of a repository."""' in sig.text
    assert sig.returns == "dict[str, Any]"
    assert sig.text.splitlines()[0] == "def list_issues("


def test_short_signature_without_comments_is_one_line() -> None:
    sig = tool_signature(tool("add", {"a": {"type": "number"}, "b": {"type": "number"}}, ["a", "b"]))
    assert sig.text.splitlines()[0] == "def add(*, a: float, b: float) -> dict[str, Any]:"


def test_renamed_parameters_keep_their_wire_names() -> None:
    sig = tool_signature(
        tool("search", {"from": {"type": "string"}, "per-page": {"type": "integer"}, "q": {"type": "string"}}, ["q"])
    )
    parses(sig.text)
    assert sig.wire_names == {"from_": "from", "per_page": "per-page"}
    assert 'from_: str = ...,  # wire name "from"' in sig.text
    assert sig.wire_args({"from_": "2024", "per_page": 5, "q": "x"}) == {"from": "2024", "per-page": 5, "q": "x"}
    # The dict form with wire names passes through unchanged.
    assert sig.wire_args({"from": "2024"}) == {"from": "2024"}
    with pytest.raises(ValueError, match="given twice"):
        sig.wire_args({"from": 1, "from_": 2})
    # One keyword at a time, as wire_args names it (the check before the run reads spread dicts so).
    assert [sig.wire_name(k) for k in ("from_", "from", "per_page", "q")] == ["from", "from", "per-page", "q"]


def test_parameter_collisions_are_reported_not_merged() -> None:
    sig = tool_signature(tool("t", {"a-b": {"type": "string"}, "a_b": {"type": "integer"}, "a.b": {}}))
    parses(sig.text)
    assert [p.name for p in sig.params] == ["a_b_2", "a_b", "a_b_3"]
    assert {p.wire_name for p in sig.params} == {"a-b", "a_b", "a.b"}
    [c] = sig.collisions
    assert c.identifier == "a_b" and set(c.wire_names) == {"a-b", "a_b", "a.b"}


def test_output_schema_becomes_the_return_type() -> None:
    t = tool("get", {}, output_schema=obj({"id": {"type": "integer"}, "tags": {"type": "array"}}, ["id"]))
    sig = tool_signature(t)
    parses(sig.text)
    assert sig.returns == "GetResult"
    assert "class GetResult(TypedDict):\n    id: int\n    tags: NotRequired[list[Any]]" in sig.text


def test_learned_shape_becomes_the_return_type_when_no_output_schema() -> None:
    shape = {"type": "array", "items": obj({"name": {"type": "string"}}, ["name"])}
    sig = tool_signature(tool("ls", {}), result_shape=shape)
    assert sig.returns == "list[LsResultItem]"
    # A declared output schema wins over a learned shape.
    sig2 = tool_signature(tool("ls", {}, output_schema={"type": "object"}), result_shape=shape)
    assert sig2.returns == "dict[str, Any]"


def test_no_parameters_and_open_parameters() -> None:
    assert tool_signature(tool("ping", {})).text.startswith("def ping() -> dict[str, Any]:")
    assert tool_signature(tool("any_args")).text.startswith("def any_args(**kwargs: Any) -> dict[str, Any]:")


def test_parameters_declared_inside_combinators_are_kept() -> None:
    schema = {
        "type": "object",
        "properties": {"mode": {"enum": ["a", "b"]}},
        "oneOf": [obj({"x": {"type": "string"}}, ["x"]), obj({"y": {"type": "integer"}}, ["y"])],
        "required": ["mode"],
    }
    t = Tool(name="combo", namespace="ns", input_schema=schema)
    sig = tool_signature(t)
    assert {p.wire_name for p in sig.params} == {"mode", "x", "y"}
    assert sig.required == ("mode",)


def test_parameters_declared_under_a_condition_are_kept() -> None:
    # A call may give them (the check before the run accepts them): a model learns of them here.
    schema = {
        "type": "object",
        "properties": {"format": {"enum": ["csv", "json"]}},
        "required": ["format"],
        "if": {"properties": {"format": {"const": "csv"}}},
        "then": obj({"header": {"type": "boolean"}}, ["header"]),
        "else": obj({"indent": {"type": "integer"}}),
        "dependentSchemas": {"indent": obj({"sort_keys": {"type": "boolean"}})},
        "dependencies": {"header": ["format"], "sort_keys": obj({"ascii": {"type": "boolean"}})},
    }
    sig = tool_signature(Tool(name="export", namespace="ns", input_schema=schema))
    assert {p.wire_name for p in sig.params} == {"format", "header", "indent", "sort_keys", "ascii"}
    assert sig.required == ("format",)  # required only when a condition holds: optional here
    parses(sig.text)


def test_tool_name_needing_sanitising_and_docstring_escaping() -> None:
    t = Tool(name="get-issue.v2", namespace="ns", description='Say """hi""" \\ and bye.', input_schema={})
    sig = tool_signature(t)
    parses(sig.text)
    assert sig.name == "get_issue_v2"


def test_redundant_descriptions_are_dropped() -> None:
    sig = tool_signature(
        tool(
            "get_repo",
            {
                "owner": {"type": "string", "description": "Repository owner"},
                "repo": {"type": "string", "description": "Repository name"},
                "ref": {"type": "string", "description": "Git ref such as a branch or tag"},
            },
            ["owner", "repo"],
        )
    )
    assert "# Repository" not in sig.text
    assert "# Git ref such as a branch or tag" in sig.text


def test_render_module_disambiguates_function_names() -> None:
    a = Tool(name="search", namespace="one", input_schema=obj({"q": {"type": "string"}}, ["q"]))
    b = Tool(name="search", namespace="two", input_schema=obj({"filter": obj({"x": {"type": "string"}})}))
    c = Tool(name="filter", namespace="two", input_schema=obj({"filter": obj({"x": {"type": "string"}})}))
    mod = render_module([a, b, c])
    tree = ast.parse(mod.text)
    fns = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert fns == ["search", "search_2", "filter"]
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    assert len(classes) == len(set(classes)) == 2
    assert any(c.where == "function names" and c.wire_names == ("one:search", "two:search") for c in mod.collisions)
    # The module is importable Python, not just parseable.
    exec(compile("from __future__ import annotations\n" + mod.text, "<stubs>", "exec"), {})


def test_strict_mode_raises_schema_render_error() -> None:
    from tooldocs import SchemaRenderError

    schema = obj({"a": {"$ref": "#/$defs/Missing"}})
    with pytest.raises(SchemaRenderError, match="/properties/a") as info:
        schema_to_python(schema, strict=True)
    assert info.value.path == "/properties/a"
    t = Tool(name="t", namespace="ns", input_schema=schema)
    with pytest.raises(SchemaRenderError, match="of tool 'ns:t'"):
        tool_signature(t, strict=True)
    assert tool_signature(t).warnings  # lenient by default


def test_render_signature_is_the_text_of_tool_signature() -> None:
    t = tool("add", {"a": {"type": "number"}}, ["a"])
    assert render_signature(t) == tool_signature(t).text
    assert isinstance(render_signature(t), str)
