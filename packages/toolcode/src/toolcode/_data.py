"""Typed views of, and type guards for, plain data whose shape only a check at run time knows.

JSON values, stored records, what a sandbox returns: narrowing pyright understands, one cast each at most.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard, cast

__all__ = ["as_dict", "as_list", "as_mapping", "is_array", "is_dict", "is_list"]


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
