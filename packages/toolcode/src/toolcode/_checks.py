"""Argument checks at the boundary of every operation: a wrong type or value is ``invalid_arguments``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from toolcode.exceptions import InvalidArgumentsError, clip

__all__ = [
    "MAX_ID_CHARS",
    "bad",
    "check_args",
    "check_choice",
    "check_int",
    "check_names",
    "check_str",
    "check_timeout",
    "check_tool_id",
    "kind",
    "parse_call",
    "shown",
]

MAX_ID_CHARS: Final = 400  # namespace (128) + name (128) + version (64) + separators, with room


def bad(field: str, reason: str, tool_id: str | None = None) -> InvalidArgumentsError:
    return InvalidArgumentsError(field, reason, tool_id=tool_id)


def shown(value: Any) -> str:
    return clip(repr(value), 60)


def kind(value: object) -> str:
    return type(value).__name__


def check_int(field: str, value: Any, low: int, high: int) -> int:
    """``value`` as an int in ``[low, high]``, or an ``invalid_arguments`` error."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad(field, f"must be an integer from {low} to {high}, got {shown(value)}")
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        raise bad(field, f"must be an integer from {low} to {high}, got {shown(value)}")
    n = int(value)
    if not low <= n <= high:
        raise bad(field, f"must be from {low} to {high}, got {n}")
    return n


def check_str(field: str, value: Any, *, max_chars: int, empty_ok: bool = False) -> str:
    """``value`` as a non-empty string of at most ``max_chars``, or an ``invalid_arguments`` error."""
    if not isinstance(value, str):
        raise bad(field, f"must be a string, got {type(value).__name__}")
    if not value.strip() and not empty_ok:
        raise bad(field, "must not be empty")
    if len(value) > max_chars:
        raise bad(field, f"is {len(value):,} characters long; at most {max_chars:,} are accepted")
    return value


def check_choice(field: str, value: Any, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``, else an ``invalid_arguments`` error."""
    if not isinstance(value, str) or value not in choices:
        raise bad(field, f"must be one of {', '.join(repr(c) for c in choices)}; got {shown(value)}")
    return value


def check_tool_id(field: str, value: Any) -> str:
    """A tool id argument: a non-empty string of sane length."""
    return check_str(field, value, max_chars=MAX_ID_CHARS)


def check_names(field: str, value: Any) -> list[str] | None:
    """An optional list of namespace names."""
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise bad(field, f"must be a list of strings, got {type(value).__name__}")
    items = cast("Sequence[Any]", value)
    if len(items) > 1000:
        raise bad(field, f"has {len(items)} items; at most 1000 are accepted")
    return [check_str(f"{field}[{i}]", v, max_chars=200) for i, v in enumerate(items)]


def check_args(value: Any, tool_id: str, field: str = "args") -> dict[str, Any]:
    """Tool arguments: a mapping with string keys (``None`` for none); ``field`` names them in an error."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise bad(field, f"must be a dict, got {type(value).__name__}", tool_id)
    args = cast("Mapping[Any, Any]", value)
    for k in args:
        if not isinstance(k, str):
            raise bad(field, f"keys must be strings, got {type(k).__name__} key {shown(k)}", tool_id)
    return dict(cast("Mapping[str, Any]", args))


def check_timeout(value: Any) -> float:
    """A timeout argument: a finite number of seconds above 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise bad("timeout", f"must be a number of seconds > 0, got {shown(value)}")
    return float(value)


def parse_call(i: int, call: Any) -> tuple[str, dict[str, Any]]:
    """One of ``run_tools``' calls: ``(tool_id, args)``, ``[tool_id, args]``, a dict, or a bare tool id."""
    if isinstance(call, str):
        return check_tool_id(f"calls[{i}]", call), {}
    tool_id: Any
    args: Any
    if isinstance(call, Mapping):
        c = cast("Mapping[str, Any]", call)
        tool_id, args = c.get("tool_id"), c.get("args")
    elif isinstance(call, list | tuple) and len(cast("Sequence[Any]", call)) in (1, 2):
        seq = cast("Sequence[Any]", call)
        tool_id, args = seq[0], (seq[1] if len(seq) == 2 else None)
    else:
        raise bad(f"calls[{i}]", f"must be (tool_id, args), a dict or a tool id; got {shown(call)}")
    tid = check_tool_id(f"calls[{i}].tool_id", tool_id)
    return tid, check_args(args, tid, f"calls[{i}].args")
