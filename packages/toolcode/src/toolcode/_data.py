"""Typed views of plain data whose shape only a check at run time knows (JSON values, records)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

__all__ = ["as_dict", "as_list", "as_mapping"]


def as_dict(value: object) -> dict[Any, Any] | None:
    """``value`` if it is a dict (its keys are the caller's to check), else ``None``."""
    return cast("dict[Any, Any]", value) if isinstance(value, dict) else None


def as_mapping(value: object) -> Mapping[Any, Any] | None:
    """``value`` if it is a mapping (its keys are the caller's to check), else ``None``."""
    return cast("Mapping[Any, Any]", value) if isinstance(value, Mapping) else None


def as_list(value: object) -> Sequence[Any] | None:
    """``value`` if it is a list or a tuple (what a JSON array becomes), else ``None``."""
    return cast("Sequence[Any]", value) if isinstance(value, list | tuple) else None
