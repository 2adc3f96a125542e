"""Type guards for data from outside (JSON, stored state, a sandbox): narrowing pyright understands, no casts."""

from __future__ import annotations

from typing import Any, TypeGuard

__all__ = ["is_array", "is_dict", "is_list"]


def is_dict(value: object) -> TypeGuard[dict[Any, Any]]:
    """Whether ``value`` is a dict (of anything)."""
    return isinstance(value, dict)


def is_list(value: object) -> TypeGuard[list[Any]]:
    """Whether ``value`` is a list (of anything)."""
    return isinstance(value, list)


def is_array(value: object) -> TypeGuard[list[Any] | tuple[Any, ...]]:
    """Whether ``value`` is a list or a tuple (of anything)."""
    return isinstance(value, list | tuple)
