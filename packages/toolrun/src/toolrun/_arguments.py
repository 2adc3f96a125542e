"""Arguments are plain JSON, within bounds, before any backend sees them.

A backend serialises arguments for an upstream session (MCP) or hands them to a function. A
value that is not JSON (``Ellipsis``, a builtin, an exception object, ``NaN``, bytes), a
string with a lone surrogate (it cannot be encoded as UTF-8) or a value nested thousands of
levels deep fails there in ways that hurt more than the one call: a shared session can break
for every caller. :func:`check_arguments` refuses such arguments up front, naming the JSON path
and the reason. It walks the value once, iteratively, and stops at the first problem.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Final, cast

from toolrun._validation import json_path
from toolrun.exceptions import ValidationProblem

__all__ = ["DEFAULT_ARGUMENT_LIMITS", "ArgumentLimits", "check_arguments"]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# Python refuses to turn an int of more than 4,300 digits into text (sys.int_info), so a
# larger one could never be sent; 14,000 bits is about 4,214 digits.
_MAX_INT_BITS = 14_000


@dataclass(frozen=True, slots=True)
class ArgumentLimits:
    """Bounds on one call's arguments (see :func:`check_arguments`)."""

    max_depth: int = 64
    """Most nested objects/arrays, the arguments object counting as 1."""
    max_size: int = 4 * 1024 * 1024
    """Most characters of the arguments as JSON text (estimated while walking)."""

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ArgumentLimits.{name} must be a positive integer, got {value!r}")


DEFAULT_ARGUMENT_LIMITS: Final = ArgumentLimits()
"""The bounds applied when none are given."""


def _type_name(v: Any) -> str:
    t = type(cast(object, v))
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def check_arguments(args: dict[str, Any], limits: ArgumentLimits = DEFAULT_ARGUMENT_LIMITS) -> ValidationProblem | None:
    """The first reason ``args`` is not plain, bounded JSON, or ``None`` when it is.

    Plain JSON is: dicts with ``str`` keys, lists and tuples, ``str`` without lone surrogates,
    ``int`` (and ``bool``) of at most about 4,200 digits, finite ``float``, ``None``. Subclasses
    of these (a ``StrEnum`` member, an ``OrderedDict``) count as what they subclass.

    Args:
        args: The arguments object.
        limits: Depth and size bounds.

    Returns:
        The first problem found (with its JSON path), or ``None``.
    """
    if _flat_and_plain(args, limits.max_size, limits.max_depth >= 2):
        return None
    max_depth = limits.max_depth
    budget = limits.max_size
    size = 2
    # (value, depth, path) — the path is a tuple built only for containers, and only read on error.
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(args, 1, ())]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, dict | list | tuple) and depth > max_depth:
            return ValidationProblem(json_path(path), f"nested deeper than {max_depth} levels")
        if isinstance(value, dict):
            obj = cast(dict[Any, Any], value)
            size += 2 * len(obj)
            key: Any
            child: Any
            for key, child in obj.items():
                if type(key) is not str and not isinstance(key, str):
                    return ValidationProblem(
                        json_path(path), f"object keys must be strings, found a key of type {_type_name(key)}"
                    )
                size += len(key) + 3
                if not key.isascii() and _LONE_SURROGATE.search(key):
                    return ValidationProblem(json_path(path), "an object key has a lone surrogate (not valid UTF-8)")
                t = type(cast(object, child))
                if t is str:
                    size += len(child) + 2
                    if not child.isascii() and _LONE_SURROGATE.search(child):
                        return _surrogate(path, key)
                elif t is int:
                    if child.bit_length() > _MAX_INT_BITS:
                        return _too_long_int((*path, key))
                    size += 8
                elif t is bool or child is None:
                    size += 5
                else:
                    stack.append((child, depth + 1, (*path, key)))
        elif isinstance(value, list | tuple):
            items = cast(list[Any], value)
            size += len(items) + 2
            item: Any
            for i, item in enumerate(items):
                t = type(cast(object, item))
                if t is str:
                    size += len(item) + 2
                    if not item.isascii() and _LONE_SURROGATE.search(item):
                        return _surrogate(path, i)
                elif t is int:
                    if item.bit_length() > _MAX_INT_BITS:
                        return _too_long_int((*path, i))
                    size += 8
                elif t is bool or item is None:
                    size += 5
                else:
                    stack.append((item, depth + 1, (*path, i)))
        elif isinstance(value, str):
            size += len(value) + 2
            if not value.isascii() and _LONE_SURROGATE.search(value):
                return ValidationProblem(json_path(path), "the string has a lone surrogate (not valid UTF-8)")
        elif isinstance(value, float):
            if not math.isfinite(value):
                return ValidationProblem(json_path(path), f"{value!r} is not a JSON number")
            size += 12
        elif isinstance(value, int):  # bool included
            if value.bit_length() > _MAX_INT_BITS:
                return _too_long_int(path)
            size += 8
        elif value is None:
            size += 5
        else:
            return ValidationProblem(json_path(path), f"a value of type {_type_name(value)} is not JSON")
        if size > budget:
            return ValidationProblem(json_path(path), f"the arguments are larger than {budget:,} characters of JSON")
    if size > budget:
        return ValidationProblem("$", f"the arguments are larger than {budget:,} characters of JSON")
    return None


def _flat_and_plain(args: dict[str, Any], budget: int, lists: bool) -> bool:
    """Whether ``args`` is the usual arguments object, plain and within ``budget`` (:func:`check_arguments` passes it).

    String keys, scalar values or (with ``lists``) lists of scalars, in one loop and no allocation;
    ``False`` for anything else, including every problem: the full walk of :func:`check_arguments` says why.
    """
    size = 2
    key: Any
    child: Any
    for key, child in args.items():
        if type(key) is not str or not key.isascii():
            return False
        t = type(child)  # pyright: ignore[reportUnknownVariableType]
        if t is str:
            if not child.isascii():
                return False
            size += len(key) + len(child) + 5
        elif t is int:
            if child.bit_length() > _MAX_INT_BITS:
                return False
            size += len(key) + 11
        elif t is bool or child is None:
            size += len(key) + 8
        elif t is float:
            if not math.isfinite(child):
                return False
            size += len(key) + 15
        elif t is list and lists:
            size += len(key) + 5 + len(child)
            for item in child:
                ti = type(item)  # pyright: ignore[reportUnknownVariableType]
                if ti is str:
                    if not item.isascii():
                        return False
                    size += len(item) + 2
                elif ti is int:
                    if item.bit_length() > _MAX_INT_BITS:
                        return False
                    size += 8
                elif not (ti is bool or item is None):
                    return False
        else:
            return False
    return size <= budget


def _surrogate(path: tuple[str | int, ...], last: str | int) -> ValidationProblem:
    return ValidationProblem(json_path((*path, last)), "the string has a lone surrogate (not valid UTF-8)")


def _too_long_int(path: tuple[str | int, ...]) -> ValidationProblem:
    return ValidationProblem(json_path(path), "the integer has more than 4,000 digits")
