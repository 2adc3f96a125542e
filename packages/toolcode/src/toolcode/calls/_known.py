"""The values a snippet's text settles before it runs: a small, bounded evaluator of literal expressions.

Literals, names already known (module constants, ``input``, a loop's variable), subscripts, ``+ - *`` on
integers, string concatenation and f-strings of strings and integers, ``str``/``int``/``len`` and
``dict.get``; anything else is :class:`Unknown`. Every value stays small (strings of 10,000 characters,
integers under 2**63, containers of 1,000 items), whatever the snippet writes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

__all__ = ["Env", "Unknown", "bind", "holds", "iterable", "value"]

_MAX_STR: Final = 10_000
_MAX_ITEMS: Final = 1_000
_MAX_INT: Final = 2**63


class Unknown(Exception):
    """The value is not known before the run."""


@dataclass(slots=True)
class Env:
    names: dict[str, Any]
    results: Mapping[ast.AST, Any] = field(default_factory=dict[ast.AST, Any])
    """Values of call expressions (a call whose result arrived)."""


def value(node: ast.AST, env: Env, depth: int = 0) -> Any:
    if depth > 20:
        raise Unknown
    if node in env.results:
        return env.results[node]

    def v(n: ast.AST) -> Any:
        return value(n, env, depth + 1)

    match node:
        case ast.Constant(value=c) if c is None or isinstance(c, str | int | float):
            return c
        case ast.Name(id=name) if name in env.names:
            return env.names[name]
        case ast.List(elts=elts) | ast.Tuple(elts=elts) if len(elts) <= _MAX_ITEMS:
            return [v(e) for e in elts]
        case ast.Dict(keys=keys, values=values) if len(keys) <= _MAX_ITEMS and None not in keys:
            return {_key(v(k)): v(x) for k, x in zip(cast("list[ast.expr]", keys), values, strict=True)}
        case ast.Subscript(value=base, slice=index) if not isinstance(index, ast.Slice):
            container, i = v(base), v(index)
            try:
                return container[i]
            except (KeyError, IndexError, TypeError):
                raise Unknown from None
        case ast.UnaryOp(op=ast.USub(), operand=o):
            x = v(o)
            if isinstance(x, int | float) and not isinstance(x, bool):
                return -x
        case ast.BinOp(left=left, op=op, right=right):
            return _binop(v(left), op, v(right))
        case ast.JoinedStr(values=parts):
            return _bounded("".join(_formatted(p, v) for p in parts))
        case ast.Call(func=ast.Name(id="str" | "int" | "len" as fn), args=[arg], keywords=[]) if fn not in env.names:
            return _builtin(fn, v(arg))
        case ast.Call(func=ast.Attribute(value=base, attr="get"), args=[k, *default], keywords=[]) if len(default) < 2:
            d = v(base)
            if isinstance(d, dict):
                return cast("dict[Any, Any]", d).get(v(k), v(default[0]) if default else None)
        case _:
            pass
    raise Unknown


_COMPARE: Final[dict[type[ast.cmpop], Callable[[Any, Any], bool]]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def holds(cond: ast.expr, env: Env) -> bool:
    """Whether a comprehension's condition holds for an element (``True`` when it cannot be worked out)."""
    try:
        if isinstance(cond, ast.Compare) and len(cond.ops) == 1 and type(cond.ops[0]) in _COMPARE:
            a, b = value(cond.left, env), value(cond.comparators[0], env)
            if type(cond.ops[0]) in (ast.In, ast.NotIn) and not isinstance(b, list | dict | str):
                return True
            return bool(_COMPARE[type(cond.ops[0])](a, b))
        return bool(value(cond, env))
    except (Unknown, TypeError, RecursionError):
        return True


def _key(k: Any) -> Any:
    if isinstance(k, str | int) and not isinstance(k, bool):
        return k
    raise Unknown


def _bounded(x: Any) -> Any:
    if (isinstance(x, str) and len(x) > _MAX_STR) or (isinstance(x, int) and abs(x) >= _MAX_INT):
        raise Unknown
    return x


def _binop(a: Any, op: ast.operator, b: Any) -> Any:
    if isinstance(a, str) and isinstance(b, str) and isinstance(op, ast.Add):
        return _bounded(a + b)
    if type(a) is not int or type(b) is not int or abs(a) >= _MAX_INT or abs(b) >= _MAX_INT:
        raise Unknown
    x, y = a, b
    if isinstance(op, ast.Add):
        return _bounded(x + y)
    if isinstance(op, ast.Sub):
        return _bounded(x - y)
    if isinstance(op, ast.Mult):
        return _bounded(x * y)
    raise Unknown


def _formatted(part: ast.expr, v: Callable[[ast.AST], Any]) -> str:
    if isinstance(part, ast.Constant) and isinstance(part.value, str):
        return part.value
    if isinstance(part, ast.FormattedValue) and part.conversion == -1 and part.format_spec is None:
        x = v(part.value)
        if isinstance(x, str) or (isinstance(x, int) and not isinstance(x, bool)):
            return str(x)
    raise Unknown


def _builtin(fn: str, x: Any) -> Any:
    if fn == "len" and isinstance(x, str | list | dict):
        return len(cast("str | list[Any] | dict[Any, Any]", x))
    if fn == "str" and isinstance(x, str | int) and not isinstance(x, bool):
        return str(x)
    if fn == "int" and isinstance(x, int | str) and not isinstance(x, bool):
        try:
            return _bounded(int(x))
        except ValueError:
            pass
    raise Unknown


def _items(value: Any) -> list[Any]:
    """What a loop over ``value`` walks, as Python walks it (a dict: its keys)."""
    if isinstance(value, dict):
        value = list(cast("dict[Any, Any]", value))
    if isinstance(value, list | str):
        return list(cast("list[Any] | str", value))[:_MAX_ITEMS]
    raise Unknown


def iterable(node: ast.expr, env: Env) -> list[Any]:
    match node:
        case ast.Call(func=ast.Name(id="range"), args=args, keywords=[]) if 1 <= len(args) <= 3 and (
            "range" not in env.names
        ):
            bounds = [value(a, env) for a in args]
            if not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
                raise Unknown
            return list(range(*cast("list[int]", bounds))[:_MAX_ITEMS])
        case _:
            return _items(value(node, env))


def bind(target: ast.expr, value: Any, names: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        names[target.id] = value
    elif isinstance(target, ast.Tuple | ast.List) and isinstance(value, list | tuple):
        items = cast("list[Any] | tuple[Any, ...]", value)
        if len(items) != len(target.elts):
            raise Unknown
        for t, x in zip(target.elts, items, strict=True):
            bind(t, x, names)
    else:
        raise Unknown
