"""What a snippet's values are declared to be: a tool's result, and what literal keys read from it, as its stub says.

The check keeps a finding of ``ty`` on a value only where the value's type is the one the tools
declare (:mod:`._findings`): this reads that declared type from the tool's stub.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from toolcode._module_views import ModulesView
from toolcode._modules import keyword_signature
from toolcode._typecheck._calls import Scan
from toolcode._typecheck._findings import Declared
from toolindex import Tool

__all__ = ["declared_types"]


def declared_types(tree: ast.Module, found: Scan, results: Mapping[ast.AST, Tool], modules: ModulesView) -> Declared:
    """The declared result type of a tool call, or of a name bound once (by ``name = call``) to one.

    Also whether a tool call's parameter is typed by its stub alone (:meth:`Declared.plainly_typed`).

    And of a chain of literal keys and indexes read from one (``offices[0]["staff"]``), as the
    tool's stub declares each (the value's own type is what the snippet writes there, if it
    does: :func:`~._writes.loosely_typed` leaves findings there to the run).
    """
    once = {
        n.targets[0].id: n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Name)
        and found.bindings[n.targets[0].id] == 1
    }

    class Types:
        def __call__(self, expr: ast.expr, /) -> str | None:
            return declared(expr)

        def plainly_typed(self, call: ast.Call, parameter: str, *, wire: bool = False) -> bool:
            parent = found.parents.get(call)
            tool = results.get(parent if isinstance(parent, ast.Await) else call)
            if tool is None:
                return False
            sig = keyword_signature(tool)
            try:
                named = next(iter(sig.wire_args({parameter: None}))) if sig is not None else parameter
            except ValueError:
                return False
            if wire and named != parameter:
                return False  # a key of its own (beyond the schema), named like another wire name's keyword
            return _plain(tool.input_schema, named)

    def declared(expr: ast.expr) -> str | None:
        keys: list[str | int] = []
        while isinstance(expr, ast.Subscript) and (key := _literal_key(expr.slice)) is not None:
            keys.append(key)
            expr = expr.value
        value = once.get(expr.id) if isinstance(expr, ast.Name) and found.bindings[expr.id] == 1 else expr
        tool = results.get(value) if value is not None else None
        signature = modules.signature(tool) if tool is not None else None
        typed = _returns(signature)
        if keys and typed is not None:
            typed = _read_type(typed, keys[::-1], _fields(signature or ""))
        return typed

    return Types()


_PLAIN_OBJECT: Final = frozenset(
    "type properties required additionalProperties title description $schema $id $comment examples default".split()
)
"""Keywords of an input schema that give its properties no other type than their own entries do."""
_PLAIN_PROPERTY: Final = frozenset("type title description default examples format $comment".split())


def _plain(schema: Mapping[str, Any], name: str) -> bool:
    """Whether ``schema`` types the property ``name`` by its entry under top-level ``properties`` only, a plain type."""
    properties: object = schema.get("properties")
    entry: object = cast("Mapping[str, Any]", properties).get(name) if isinstance(properties, Mapping) else None
    if not isinstance(entry, Mapping) or not schema.keys() <= _PLAIN_OBJECT:
        return False
    keys = cast("Mapping[str, Any]", entry).keys()
    return "type" in keys and keys <= _PLAIN_PROPERTY


def _returns(signature: str | None) -> str | None:
    """The result annotation of a tool's function, as its stub has it."""
    try:
        tree = ast.parse(signature or "")
    except SyntaxError:
        return None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.returns is not None), None)
    return ast.unparse(fn.returns) if fn is not None and fn.returns is not None else None


def _literal_key(node: ast.expr) -> str | int | None:
    """A key written as a literal (``"staff"``, ``0``, ``-1``), else ``None``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        return -value if type(value) is int else None
    value = node.value if isinstance(node, ast.Constant) else None
    # Not ``bool``: ``t[True]`` is an index to Python, a key to no ``TypedDict``.
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def _fields(signature: str) -> dict[str, dict[str, ast.expr]]:
    """Each ``TypedDict`` class of a tool's stub: its keys and their annotations (in either form)."""
    try:
        tree = ast.parse(signature)
    except SyntaxError:
        return {}
    out: dict[str, dict[str, ast.expr]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = {
                n.target.id: n.annotation
                for n in node.body
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
            }
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and len(node.value.args) == 2
            and isinstance(node.value.args[1], ast.Dict)
            and isinstance(target := node.targets[0], ast.Name)
        ):
            pairs = zip(node.value.args[1].keys, node.value.args[1].values, strict=True)
            out[target.id] = {k.value: v for k, v in pairs if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return out


def _read_type(typed: str, keys: Sequence[str | int], fields: Mapping[str, Mapping[str, ast.expr]]) -> str | None:
    """The declared type of what ``keys`` read, one after another, from a value of type ``typed``.

    A key of a ``TypedDict`` class (``NotRequired[T]`` is ``T`` where the key is there) or an index
    of a ``list[T]``; anything else (a union, ``Any``, a key the class lacks) is not followed.
    """
    node: ast.expr = ast.parse(typed, mode="eval").body
    for key in keys:
        if isinstance(key, str) and isinstance(node, ast.Name) and key in fields.get(node.id, {}):
            node = fields[node.id][key]
            while (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("NotRequired", "Required")
            ):
                node = node.slice
        elif (
            isinstance(key, int)
            and isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "list"
        ):
            node = node.slice
        else:
            return None
    return ast.unparse(node)
