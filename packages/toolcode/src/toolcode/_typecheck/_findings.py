"""Which of ``ty``'s findings are kept: only those certain to fail at run time.

**What is kept.** ``ty`` reports what it cannot prove correct; a finding is kept when its rule says
the operation fails for the type named (a key a ``TypedDict`` result does not have, an attribute or
operator a type lacks) and every type it names is one value's type: a union (``str | None``,
``Literal["a", 1]``) fails only for some of its members, so a finding about one is left to the run.
An attribute or an operator depends on the value's type only: an enum field whose values share one
type (``Literal["low", "urgent"]``, all ``str``) counts as that type there. And a key no member of
a union of classes declares (``ty`` says so of each member) is missing whichever member the value
is. A key the snippet adds, writes over or tests for, and a name ``ty`` types otherwise than the
run, are :mod:`._writes`'s, and a value where the snippet is ready for another type than the
declared one :mod:`._doubts`'s: findings there are left to the run too. What it says about the
tools themselves is the argument check's, in the run's own words.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Final

from toolcode._modules import PACKAGE
from toolcode._typecheck._calls import Scan
from toolcode._typecheck._diagnostic import Diagnostic, Positions
from toolcode._typecheck._doubts import Doubts
from toolcode._typecheck._given import Declared, argument_certain, given_arguments
from toolcode._typecheck._source import BUILT, CheckedSource
from toolcode._typecheck._types_text import literal_kinds, one_value_type, split_top_level
from toolcode._typecheck._writes import (
    loose_attributes,
    loose_names,
    loosely_typed,
    rebound_names,
    tested_keys,
    written_keys,
)
from toolcode.exceptions import ErrorCode

__all__ = ["Declared", "kept", "may_fail"]


_LINE: Final = re.compile(r"^[^:\n]*:(\d+):(\d+): error\[([\w-]+)\] (.*)$")
_TYPE: Final = re.compile(r"`([^`]*)`")
_RULES: Final = {
    "invalid-key": "KeyError",  # t["titel"] on a TypedDict result (see _KEY)
    "unresolved-attribute": "AttributeError",  # "x".uper(), a module member that does not exist
    "unsupported-operator": "TypeError",  # "a" + 1
    "not-iterable": "TypeError",  # for x in 3
    "call-non-callable": "TypeError",  # a result called
    "invalid-await": "TypeError",  # await of a plain (not awaitable) value
}
"""The rules whose findings fail at run time whenever the types they name are the values' types, and
the exception the snippet meets there. Not here: ``not-subscriptable`` and the ``__getitem__`` form
of ``invalid-argument-type``, which ``ty`` reports for one member of a union without naming the
union (``x = None`` then ``x = item`` in a loop: "cannot subscript ``None``"), kept only on a tool's
own result and what literal keys read from it (:func:`_subscript_certain`); calls
(``invalid-argument-type``, ``no-matching-overload``), whose expected types are often narrower than
what the call accepts at run time, but for a length or an iteration a number lacks
(:data:`_NOT_SIZED_OR_ITERABLE`) and a tool's keyword argument of a scalar type its schema refuses
(:func:`~._given.argument_certain`); assignments, which Python does not check."""
_INERT: Final = (
    *(ast.Module, ast.Expr, ast.Name, ast.Constant, ast.Load, ast.Store, ast.keyword, ast.Pass),
    *(ast.Import, ast.ImportFrom, ast.alias, ast.JoinedStr, ast.FormattedValue, *BUILT[:3], ast.Tuple),
)
"""Nodes at which none of :data:`_RULES` can fail: a name, a constant, a display, an import, an f-string."""


def may_fail(tree: ast.Module, found: Scan) -> bool:
    """Whether ``ty`` could find anything in the snippet (``ty``'s cost is spared one that only calls and returns).

    It could wherever there is a node other than those of :data:`_INERT`, a plain assignment to a
    name, or a call of a global or of a tool; and where a tool's result is handed straight to a
    builtin that needs a length or an iteration of it (``len(ns.count())`` on an ``int``).
    """
    calls = {c.node for c in found.calls}
    functions = [c.node.func for c in found.calls if c.module is not None]
    tool_functions = {*functions, *(f.value for f in functions if isinstance(f, ast.Attribute))}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            if all(isinstance(t, ast.Name) for t in node.targets):
                continue
            return True
        if isinstance(node, ast.Call):
            func = node.func
            if node in calls:
                continue
            if isinstance(func, ast.Name) and not found.bindings[func.id]:
                if func.id in _SIZED_OR_ITERATED and any(a in calls for a in node.args):
                    return True
                continue
            return True
        if node not in tool_functions and not isinstance(node, _INERT):
            return True
    return False


_SIZED_OR_ITERATED: Final = frozenset(
    "len sum min max sorted reversed list tuple set frozenset dict enumerate zip iter any all map filter".split()
)
"""Builtins that take a length or an iteration of their argument (what :data:`_NOT_SIZED_OR_ITERABLE` finds)."""
_NOT_SIZED_OR_ITERABLE: Final = re.compile(
    r"^Argument to (?:function|class|constructor )?\s?`[\w.]+` is incorrect: Expected `(Sized|Iterable\[[^`]*\])`, "
    r"found `(int|float|bool|None|Literal\[(-?\d+|True|False)\])`$"
)
"""An argument that must have a length or be iterable (``len(n)``, ``sorted(n)``, ``list(n)``: ``ty`` names
a builtin class's constructor otherwise than a function), given one scalar type that has neither:
Python checks exactly these protocols at run time, so the call fails."""
_KEY: Final = re.compile(r'^Unknown key "|got key of type `Literal\[-?\d+\]`')
"""The ``invalid-key`` findings about a key written as a literal (a ``str`` variable may hold a valid key)."""
_UNKNOWN_KEY: Final = re.compile(r'^Unknown key "(.*)" for TypedDict `([^`]*)`')
"""``ty``'s finding of a key a class does not declare: the key, and the class."""


def _certain(rule: str, message: str, written: bool, added: frozenset[str | int] | None = frozenset()) -> str | None:
    """The exception the run would certainly raise where a finding is (``None``: it may not fail).

    ``written``: the finding is at a subscript written to (``t["k"] = v`` adds a key; only reading
    a key a result lacks fails). ``added``: the keys the snippet writes somewhere (:func:`written_keys`;
    ``None``: any key may be written); reading one of them back may not fail.
    """
    if rule == "invalid-argument-type" and _NOT_SIZED_OR_ITERABLE.search(message):
        return "TypeError"
    raised = _RULES.get(rule)
    if raised is None or " in union " in message or re.search(r"\b(possibly|may)\b", message, re.IGNORECASE):
        return None
    if f"Module `{PACKAGE}" in message:
        return None  # the tools' modules are the argument check's
    if rule == "invalid-key" and (written or not _KEY.search(message)):
        return None
    if rule == "invalid-key" and (key := _UNKNOWN_KEY.search(message)) is not None:
        if added is None or key.group(1) in added:
            return None
    # Backticks quote names too (an operator, an attribute): only the types matter here.
    named = [t for t in _TYPE.findall(message) if not _is_name_quoted(t, message)]
    if rule == "unsupported-operator" and _ORDERING.search(message) and any(t.startswith("tuple[") for t in named):
        return None  # tuples are compared item by item, up to the first that differs
    if "float" in named and _int_may_do(rule, message):
        return None
    # An enum field (``Literal["low", "urgent"]``) has one runtime type: what that type lacks, each
    # value lacks. Not an attribute a ``float`` has, for whole numbers: JSON's ``1.0`` is one of ``[1, 2]``.
    by_type = rule in ("unresolved-attribute", "unsupported-operator") and not (
        any(literal_kinds(t) == {"int"} for t in named) and _float_may_do(rule, message)
    )
    return raised if all(one_value_type(t, by_type) for t in named) else None


_ORDERING: Final = re.compile(r"^Operator `(<|>|<=|>=)` ")
_ATTRIBUTE: Final = re.compile(r"attribute `(\w+)`")


def _int_may_do(rule: str, message: str) -> bool:
    """Whether an ``int`` may do what a finding says a ``float`` cannot.

    ``float`` stands for ``int | float`` (the typing spec's reading), and a JSON ``number`` a tool
    returns whole arrives as an ``int``: ``"*" * rating`` works for a rating of 4.
    """
    if rule == "unsupported-operator":
        return True
    attribute = _ATTRIBUTE.search(message) if rule == "unresolved-attribute" else None
    return attribute is not None and hasattr(int, attribute.group(1))


def _float_may_do(rule: str, message: str) -> bool:
    """Whether a ``float`` has the attribute a finding says an ``int`` lacks (``hex``)."""
    attribute = _ATTRIBUTE.search(message) if rule == "unresolved-attribute" else None
    return attribute is not None and hasattr(float, attribute.group(1))


def _is_name_quoted(t: str, message: str) -> bool:
    return bool(re.search(rf"(Operator|operator|attribute|member|Attribute) `{re.escape(t)}`", message))


_KEY_TYPE: Final = re.compile(r"with key of type `([^`]*)`")
_FLOAT: Final = re.compile(r"\bfloat\b")
_SUBSCRIPTED: Final = re.compile(
    r"(?:cannot be called with key of type `[^`]*` on object of type `([^`]*)`"
    r"|^Cannot subscript object of type `([^`]*)` with no `__getitem__` method)$"
)


def _subscript_certain(rule: str, message: str, at: Sequence[ast.Subscript], declared: Declared) -> str | None:
    """A subscript ``ty`` finds wrong for the type of a tool's result (``offices["Paris"]`` on a list).

    ``ty`` reports a subscript for each member of a union that refuses it, naming that member only:
    kept only where the subscripted value is a tool call (or a name bound once to one), or literal
    keys and indexes read from one (``offices[0]["staff"]``), whose declared type is the type named,
    so that no other member can be there.
    """
    m = _SUBSCRIPTED.search(message) if rule in ("invalid-argument-type", "not-subscriptable") else None
    named = (m.group(1) or m.group(2)) if m is not None else None
    if not named or not one_value_type(named) or not any(declared(n.value) == named for n in at):
        return None
    if (key := _KEY_TYPE.search(message)) is not None and _FLOAT.search(key.group(1)):
        return None  # ``names[: rating // 2]``: a whole JSON number is an ``int`` (see _int_may_do)
    return "KeyError" if named.startswith("dict[") else "TypeError"


def _outermost(tree: ast.Module, positions: Positions) -> dict[tuple[int, int], ast.expr]:
    """The widest expression starting at each position (where ``ty`` puts a finding about it)."""
    out: dict[tuple[int, int], ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.expr):
            at = positions.of(node)
            held = out.get(at)
            end = (node.end_lineno or 0, node.end_col_offset or 0)
            if held is None or end > (held.end_lineno or 0, held.end_col_offset or 0):
                out[at] = node
    return out


_CLASS_OBJECT: Final = re.compile(r"^<class '(\w+)'>$|^type\[(\w+)\]$")
_DICT_METHODS: Final = frozenset(m for m in dir(dict) if not m.startswith("_"))
_LIST_ONLY_METHODS: Final = frozenset(m for m in dir(list) if not m.startswith("_")) - frozenset(dir(tuple))
_BUILTIN_TYPES: Final = re.compile(r"^(str|int|float|bool|bytes|None|list|tuple|set|frozenset|Literal)\b")


def _has_at_run_time(message: str, classes: set[str]) -> bool:
    """Whether the value an attribute finding is about has the attribute at run time after all.

    The snippet's own class (attributes are set on instances); a ``dict`` method on a result (a
    plain dict at run time, though ``ty``'s ``TypedDict`` lacks ``clear`` and ``popitem``); a
    ``list`` method on a ``tuple`` (``await asyncio.gather(...)``: a list in the sandbox).
    """
    named = _TYPE.findall(message)
    # The class itself (``Cfg.limit = 2``, ``ty`` names it ``<class 'Cfg'>``) or one of its instances.
    if classes.intersection(_CLASS_OBJECT.sub(r"\1\2", t) for t in named):
        return True
    attribute = next((t for t in named if _is_name_quoted(t, message)), None)
    types = [t for t in named if t != attribute]
    if not types:
        return False
    if attribute in _LIST_ONLY_METHODS and all(t.startswith("tuple[") for t in types):
        return True
    return attribute in _DICT_METHODS and not any(_BUILTIN_TYPES.match(t) for t in types)


def kept(
    rendered: str,
    source: CheckedSource,
    tree: ast.Module,
    positions: Positions,
    declared: Declared | None = None,
    closed: frozenset[str] | None = None,
) -> list[Diagnostic]:
    """The certain findings among ``ty``'s, where the snippet's own text has them.

    ``closed`` names the tools' classes whose schema closes their object: reading a key another
    class does not declare is still refused (a misread result is the usual cause), with the way to
    read a key the tool returns beyond its schema (:func:`_beyond_schema`).
    """
    # Warnings, notes and the wrapper's own line (1) are not findings; the snippet is walked only
    # when there is one (correct code, the usual case, has none).
    found = [m for text in rendered.splitlines() if (m := _LINE.match(text.strip())) and int(m.group(1)) >= 2]
    if not found:
        return []
    # Each subscript by where its key is: ``ty`` puts a finding about the key there.
    keyed = {positions.of(n.slice): n for n in ast.walk(tree) if isinstance(n, ast.Subscript)}
    stores = {at: isinstance(n.ctx, ast.Store | ast.Del) for at, n in keyed.items()}
    read: dict[tuple[int, int], list[ast.Subscript]] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
            read.setdefault(positions.of(n), []).append(n)
    written = written_keys(tree)
    keys = None if written is None else written | tested_keys(tree)
    attributes = loose_attributes(tree)
    loose = loose_names(tree, written, attributes)
    rebound = rebound_names(tree)
    classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    starts = _outermost(tree, positions)
    doubts = Doubts(tree, positions)
    arguments = given_arguments(tree, positions)
    out: list[Diagnostic] = []
    whole = _whole_unions(found)
    for m in found:
        at = source.original(int(m.group(1)) - 1, max(1, int(m.group(2)) - 4))
        rule, message = m.group(3), m.group(4)
        message = message.replace("`float*`", "`float`")  # ``ty``'s mark of ``float``'s ``int`` member
        checked = message
        if rule == "invalid-key" and (member := _IN_UNION.search(message)) is not None:
            key, one, union = member.groups()
            where = (m.group(1), m.group(2), key, union)
            if where not in whole:
                continue  # a key some member of the union has (or said already)
            whole.discard(where)
            checked = f'Unknown key "{key}" for TypedDict `{one}`'
            message = f'Unknown key "{key}" for TypedDict `{union}` (no member declares it)'
        raised = _certain(rule, checked, stores.get(at, True), keys)
        if raised is None and declared is not None:
            raised = _subscript_certain(rule, message, read.get(at, ()), declared)
        code, subject = ErrorCode.RUNTIME_ERROR, starts.get(at)
        if raised is None and declared is not None and (given := arguments.get(at)) is not None:
            if (wrong := argument_certain(rule, message, given, declared)) is not None:
                raised, code, message, subject = "ToolError", ErrorCode.INVALID_ARGUMENTS, wrong, given[1].value
        if raised is not None and rule != "invalid-key" and loosely_typed(subject, written, loose, attributes):
            raised = None  # the value there may not have the type ``ty`` gives it
        if raised is not None and rule == "invalid-key" and _reads_name(keyed.get(at), rebound):
            raised = None  # a helper may have bound the name to another value (``global``): its keys are the run's
        if raised is not None and rule == "unresolved-attribute" and _has_at_run_time(message, classes):
            raised = None  # see _has_at_run_time
        if raised is not None and doubts.about(keyed.get(at) or subject, positions.of(subject) if subject else at):
            raised = None  # a path the snippet takes when the value is not of its declared type
        if raised is not None:
            if rule == "invalid-key" and closed is not None:
                message = _beyond_schema(message, closed)
            out.append(Diagnostic(at[0], at[1], message, rule, code, raised))
    return out


def _reads_name(subscript: ast.Subscript | None, names: frozenset[str]) -> bool:
    """Whether the object ``subscript`` reads a key of is read from one of ``names``."""
    return (
        bool(names)
        and subscript is not None
        and any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(subscript.value))
    )


_IN_UNION: Final = re.compile(r'^Unknown key "(.*)" for TypedDict `([^`]*)` \(subscripted object has type `([^`]*)`\)$')
"""``ty``'s finding of a key one member of a union of classes lacks (it reports one per such member)."""


def _whole_unions(found: Sequence[re.Match[str]]) -> set[tuple[str, str, str, str]]:
    """Where every member of a union of classes lacks the key read: (line, column, key, union).

    Then the key is missing whichever member the value is, as it is for a single class.
    """
    members: dict[tuple[str, str, str, str], set[str]] = {}
    for m in found:
        union = _IN_UNION.search(m.group(4)) if m.group(3) == "invalid-key" else None
        if union is not None:
            members.setdefault((m.group(1), m.group(2), union.group(1), union.group(3)), set()).add(union.group(2))
    return {where for where, named in members.items() if named == {t.strip() for t in split_top_level(where[3], "|")}}


def _beyond_schema(message: str, closed: frozenset[str]) -> str:
    """``ty``'s unknown-key message, with how to read a key an open object's tool returns beyond its schema."""
    m = _UNKNOWN_KEY.search(message)
    # A union's key (no member declares it) is beyond the schema only where some member is open.
    if m is None or all(t.strip() in closed for t in split_top_level(m.group(2), "|")) or "did you mean" in message:
        return message  # a closed object's, or a slip for a key it declares (ty names that key)
    key = m.group(1)
    if '"' in key or "\\" in key:
        return message  # not written back into a literal
    return (
        f"{message} (the tool's output schema does not declare it; if the tool returns it anyway, "
        f'read it with .get("{key}"))'
    )
