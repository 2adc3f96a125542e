"""What a tool call is given that its schema refuses whatever the value: ``ty``'s finding of a keyword argument's type.

``ty`` checks a module function's keyword arguments against the stub's parameter types, which are
often narrower than what the tool's JSON Schema takes (``integer`` takes ``1.0``). Kept only where
no member of the parameter's type takes any value of the scalar type given: the run's validation of
the call then refuses it (``invalid_arguments``), whatever the value.
"""

from __future__ import annotations

import ast
import re
from typing import Final, Protocol

from toolcode._typecheck._calls import RUN_TOOL
from toolcode._typecheck._diagnostic import Positions
from toolcode._typecheck._source import arguments_object

__all__ = ["Declared", "argument_certain", "given_arguments"]


class Declared(Protocol):
    """What the tools declare of a snippet's values and calls (:func:`~._declared.declared_types`)."""

    def __call__(self, expr: ast.expr, /) -> str | None:
        """The declared result type of an expression that is a tool call, or a name bound once to one."""
        ...

    def plainly_typed(self, call: ast.Call, parameter: str, *, wire: bool = False) -> bool:
        """Whether the tool ``call`` calls types ``parameter`` only by its top-level ``properties`` entry.

        ``False`` for a call of no tool (a function of the snippet's own). ``wire``: ``parameter`` is
        a wire name as written (an arguments object's key), not the module function's keyword; then
        ``False`` where that keyword is another wire name's (``per_page`` for ``per-page``).

        A plain ``type`` there and nothing else in the schema that types it: then the stub's type of
        the parameter is all the schema takes there.
        """
        ...


_ARGUMENT: Final = re.compile(
    r"^Argument(?: to function `(\w+)`)? is incorrect: Expected `([^`]*)`, "
    r"found `(str|int|float|bool|Literal\[[^`]*\])\*?`$"
)
"""``ty``'s finding of a keyword argument of another type than the parameter's: what is expected, what is found.
(It names no function at an awaitable form, ``ns.x_async``: a wrapper of ``ns.x`` to ``ty``.)
A plain scalar found, or a ``Literal`` of one kind of scalar (:func:`_literal_kind`); a union may
hold another member at run time."""
_LITERAL_MEMBER: Final = {
    "str": re.compile(r'"(?:[^"\\]|\\.)*"'),
    "int": re.compile(r"-?\d+"),
    "bool": re.compile(r"True|False"),
}
"""How ``ty`` writes one member of a ``Literal`` of each kind of scalar."""
_JSON_KINDS: Final = {"str": {"str"}, "int": {"int", "float"}, "float": {"int", "float"}, "bool": {"bool"}}
"""What a JSON Schema type of a stub's parameter accepts of each scalar: ``integer`` takes ``1.0``,
``number`` takes ``1`` (a ``bool`` is neither)."""


def argument_certain(rule: str, message: str, given: tuple[ast.Call, ast.keyword], declared: Declared) -> str | None:
    """The run's refusal of a tool call's keyword argument that no type of the parameter takes, if certain.

    Only at a call of a tool whose schema types the parameter plainly (a stub shows one branch of
    an ``anyOf`` or of a condition: the others may take the value), and only where each member of
    the parameter's type is a scalar that does not take the scalar given, or a container (which
    takes no scalar): the tool's schema refuses such a value whatever it is.
    """
    m = _ARGUMENT.search(message) if rule == "invalid-argument-type" else None
    call, keyword = given
    if m is None or keyword.arg is None or not isinstance(call.func, ast.Name | ast.Attribute):
        return None
    # An arguments object's key (read here as a keyword: :func:`given_arguments`) reaches the tool as
    # written, while ``ty`` reads it as the module function's keyword, which may name another parameter.
    keyed = not any(k is keyword for k in call.keywords)
    if not declared.plainly_typed(call, keyword.arg, wire=keyed):
        return None
    expected, found = m.group(2), m.group(3)
    if found.startswith("Literal["):
        # A value the text settles is the argument check's, which says it in the run's words: a
        # literal type here is one of a value the text builds (``f"{n}"``, ``"a" + "b"``).
        if _settled(keyword.value) or (kind := _literal_kind(found)) is None:
            return None
        found = kind
    for member in _members(expected):
        if member == "None" or member.startswith(("list[", "dict[", "tuple[")):
            continue  # takes no scalar
        if found in _JSON_KINDS.get(member, {found}):
            return None  # a member that takes it, or one this does not know (a class, a Literal, Any)
    name = ast.unparse(call.func)
    if name in RUN_TOOL and (tool_id := next(iter(call.args), None) or _named(call, "tool_id")) is not None:
        name = f"{name}({ast.unparse(tool_id)})"  # the tool's id, as written
    given_type = f"`{keyword.arg}` is given a value of type `{found}`"
    return f"invalid arguments for `{name}`: {given_type}; the tool takes `{expected}` there"


def given_arguments(tree: ast.AST, positions: Positions) -> dict[tuple[int, int], tuple[ast.Call, ast.keyword]]:
    """Each keyword argument of a call, by where it is written: ``ty`` puts a finding about it there.

    And each key of a ``run_tool("ns:x", {...})`` call's arguments object, read as a keyword there
    (the checked source writes it as one: :func:`~._source.as_keywords`).
    """
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    out = {positions.of(k): (n, k) for n in calls for k in n.keywords if k.arg}
    out.update(
        (positions.of(k), (n, ast.keyword(k.value, v)))
        for n in calls
        if (given := arguments_object(n)) is not None
        for k, v in zip(given.keys, given.values, strict=True)
        if isinstance(k, ast.Constant) and isinstance(k.value, str)
    )
    return out


def _settled(value: ast.expr) -> bool:
    """Whether the argument check reads ``value`` (a literal, or a name that may be bound to one)."""
    if isinstance(value, ast.UnaryOp):
        value = value.operand
    return isinstance(value, ast.Constant | ast.Name)


def _literal_kind(found: str) -> str | None:
    """``str``, ``int`` or ``bool``: the one kind of scalar every member of ``Literal[...]`` is, if one."""
    inner = found.removeprefix("Literal[").removesuffix("]")
    for kind, member in _LITERAL_MEMBER.items():
        if re.fullmatch(rf"{member.pattern}(?:, {member.pattern})*", inner):
            return kind
    return None


def _named(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _members(t: str) -> list[str]:
    """The members of a union type as ``ty`` writes it (``list[int | str] | None``: two)."""
    out: list[str] = []
    depth = start = 0
    for i, ch in enumerate(t):
        depth += (ch == "[") - (ch == "]")
        if ch == "|" and depth == 0:
            out.append(t[start:i].strip())
            start = i + 1
    return [*out, t[start:].strip()]
