"""Typed views of, and type guards for, plain data whose shape only a check at run time knows.

JSON values, stored records, what a sandbox returns: narrowing pyright understands, one cast each at
most; and whether a value is JSON data at all (:func:`check_json`), with where it is not.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeGuard, cast

__all__ = [
    "as_dict",
    "as_json_data",
    "as_list",
    "as_mapping",
    "check_json",
    "is_array",
    "is_dict",
    "is_list",
    "json_data_needed",
]

_MAX_DEPTH: Final = 200
"""Deepest nesting a value may have to count as JSON data."""
_LOG10_2: Final = math.log10(2)


def as_dict(value: object) -> dict[Any, Any] | None:
    """``value`` if it is a dict (its keys are the caller's to check), else ``None``."""
    return cast("dict[Any, Any]", value) if isinstance(value, dict) else None


def as_mapping(value: object) -> Mapping[Any, Any] | None:
    """``value`` if it is a mapping (its keys are the caller's to check), else ``None``."""
    return cast("Mapping[Any, Any]", value) if isinstance(value, Mapping) else None


def as_list(value: object) -> Sequence[Any] | None:
    """``value`` if it is a list or a tuple (what a JSON array becomes), else ``None``."""
    return cast("Sequence[Any]", value) if isinstance(value, list | tuple) else None


def is_dict(value: object) -> TypeGuard[dict[Any, Any]]:
    """Whether ``value`` is a dict (of anything)."""
    return isinstance(value, dict)


def is_list(value: object) -> TypeGuard[list[Any]]:
    """Whether ``value`` is a list (of anything)."""
    return isinstance(value, list)


def is_array(value: object) -> TypeGuard[list[Any] | tuple[Any, ...]]:
    """Whether ``value`` is a list or a tuple (of anything)."""
    return isinstance(value, list | tuple)


def _path_of_bad(value: Any, path: str = "$", depth: int = 0) -> str | None:
    if depth > _MAX_DEPTH:
        return f"{path} (nested more than {_MAX_DEPTH} levels)"
    if value is None or isinstance(value, bool | str):
        return None
    if isinstance(value, int):
        # CPython refuses to print an int longer than this (quadratic time); JSON text is printing.
        most = sys.get_int_max_str_digits()
        digits = int(value.bit_length() * _LOG10_2) + 1
        return f"{path} is an int of about {digits:,} digits (more than {most:,})" if most and digits > most else None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value!r}"
    if (items := as_list(value)) is not None:
        for i, v in enumerate(items):
            if bad := _path_of_bad(v, f"{path}[{i}]", depth + 1):
                return bad
        return None
    if (d := as_dict(value)) is not None:
        for k, v in d.items():
            if not isinstance(k, str):
                return f"{path} has a {type(k).__name__} key {str(k)[:40]!r} (keys must be strings)"
            if bad := _path_of_bad(v, f"{path}.{k[:40]}", depth + 1):
                return bad
        return None
    return f"{path} is a {type(value).__name__}"


def check_json(value: Any, what: str = "the result") -> str | None:
    """``None`` when ``value`` (named ``what``) is JSON data, else the JSON path and type of its first offender."""
    bad = _path_of_bad(value)
    return bad and json_data_needed(bad, what)


def json_data_needed(bad: str, what: str = "the result") -> str:
    """The message for ``what`` that is not JSON data; ``bad``: where, and what is there (``$.k is a set``)."""
    return f"{what} must be JSON data (dicts with str keys, lists, str, numbers, bool, None): {bad}"


def as_json_data(value: Any) -> Any:
    """The value with tuples turned into lists (what a JSON round trip gives), other values as they are."""
    if (items := as_list(value)) is not None:
        return [as_json_data(v) for v in items]
    if (d := as_dict(value)) is not None:
        return {k: as_json_data(v) for k, v in d.items()}
    return value
