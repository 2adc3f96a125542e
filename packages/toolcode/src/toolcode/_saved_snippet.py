"""One saved snippet: its fields, who sees it, its catalog tool and its stored form (see :mod:`._snippets`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolindex import Tool

__all__ = ["NAMESPACE", "SavedSnippet"]

NAMESPACE: Final = "snippets"
"""The namespace saved snippets take in the catalog."""


@dataclass(frozen=True, slots=True)
class SavedSnippet:
    """One saved snippet."""

    name: str
    code: str
    description: str
    input_schema: Mapping[str, Any]
    created: float
    updated: float
    owner: str = "local"
    """Who saved it (:func:`~toolcode._sessions.owner_of` of the caller): only they, or an operator,
    see it (unless shared), replace it or delete it."""
    shared: bool = False
    """Published by an operator: every caller sees and runs it."""

    def seen_by(self, owner: str, operator: bool) -> bool:
        """Whether the caller ``owner`` (an ``operator`` or not) sees this snippet."""
        return self.shared or operator or self.owner == owner

    @property
    def tool_id(self) -> str:
        """``snippets:<name>``."""
        return f"{NAMESPACE}:{self.name}"

    def to_dict(self, *, with_code: bool = True) -> dict[str, Any]:
        """Plain data."""
        out: dict[str, Any] = {
            "name": self.name,
            "tool_id": self.tool_id,
            "description": self.description,
            "input_schema": dict(self.input_schema),
            "created": round(self.created, 3),
            "updated": round(self.updated, 3),
            "shared": self.shared,
        }
        if with_code:
            out["code"] = self.code
        return out

    def tool(self) -> Tool:
        """The snippet as a catalog tool."""
        return Tool.validated(
            name=self.name,
            namespace=NAMESPACE,
            description=self.description,
            input_schema=dict(self.input_schema),
            tags=("saved-snippet",),
        )

    def encode(self) -> bytes:
        """The snippet as the state store keeps it."""
        return json.dumps({**self.to_dict(), "owner": self.owner}).encode()

    @classmethod
    def decode(cls, blob: bytes) -> SavedSnippet | None:
        """A snippet from its stored form; ``None`` when the record is not one."""
        try:
            d = json.loads(blob)
            return cls(
                str(d["name"]),
                str(d["code"]),
                str(d["description"]),
                dict(d["input_schema"]),
                d["created"],
                d["updated"],
                str(d.get("owner", "local")),
                d.get("shared") is True,
            )
        except (ValueError, KeyError, TypeError):
            return None
