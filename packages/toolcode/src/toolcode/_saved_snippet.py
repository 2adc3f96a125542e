"""One saved snippet: its fields, who sees it, its catalog tool and its stored form (see :mod:`._snippets`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolindex import Tool

__all__ = ["NAMESPACE", "REVISION_META_KEY", "SavedSnippet"]

NAMESPACE: Final = "snippets"
"""The namespace saved snippets take in the catalog."""
REVISION_META_KEY: Final = "toolcode/revision"
"""The ``_meta`` key of a saved snippet's catalog tool that holds :attr:`SavedSnippet.definition`."""


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
    revision: str = ""
    """Drawn at random at each save: tells this saved version from every other one of the name,
    whoever saved it (see :attr:`definition`); empty in a record saved before revisions were kept."""

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

    @property
    def definition(self) -> str:
        """What tells this saved version apart in the catalog (its tool's ``_meta``).

        What is learned from a tool's results belongs to its definition (a learned result shape,
        :func:`tooldocs.definition_fingerprint`). Two callers' snippets of one name may say the
        same of themselves, and the same caller's may return other fields once saved again: the
        definition carries the save's random :attr:`revision`, which no caller picks or sees,
        so none can make its snippet's definition another's. A record saved before revisions
        were kept gets a digest of its owner, code, save times and sharing instead, the same on
        every replica (not shown either; it would only confirm code that those who see the
        snippet may read).
        """
        if self.revision:
            return self.revision
        made = json.dumps([self.owner, self.code, self.created, self.updated, self.shared])
        return hashlib.sha256(b"toolcode snippet\0" + made.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def tool(self) -> Tool:
        """The snippet as a catalog tool (its ``_meta`` holds :attr:`definition`)."""
        return Tool.validated(
            name=self.name,
            namespace=NAMESPACE,
            description=self.description,
            input_schema=dict(self.input_schema),
            meta={REVISION_META_KEY: self.definition},
            tags=("saved-snippet",),
        )

    def encode(self) -> bytes:
        """The snippet as the state store keeps it."""
        return json.dumps({**self.to_dict(), "owner": self.owner, "revision": self.revision}).encode()

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
                str(d.get("revision") or ""),
            )
        except (ValueError, KeyError, TypeError):
            return None
