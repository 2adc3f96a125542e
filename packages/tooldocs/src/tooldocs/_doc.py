"""Detail levels, size budgets and the :class:`ToolDoc` value."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tooldocs._examples import ToolExample
from tooldocs._render import RenderOptions
from tooldocs._text import MARKER, SCAN_CHARS, cap_text, one_line, py_str
from tooldocs.exceptions import InvalidDetailLevelError

__all__ = ["RENDER_TIERS", "Budgets", "DetailLevel", "ToolDoc", "parse_level"]


class DetailLevel(StrEnum):
    """How much a :class:`ToolDoc` says about a tool.

    - ``summary``: id and a one-line summary;
    - ``schema``: + input/output JSON Schema, required params, defaults, the Python signature;
    - ``full``: + the whole description, notes, examples, references, the learned result shape.
    """

    SUMMARY = "summary"
    SCHEMA = "schema"
    FULL = "full"


def parse_level(level: DetailLevel | str) -> DetailLevel:
    """Turn ``"summary"``/``"schema"``/``"full"`` (any case, surrounding spaces ignored) into a level.

    Args:
        level: A level or its name.

    Returns:
        The level.

    Raises:
        InvalidDetailLevelError: For anything else.
    """
    if isinstance(level, DetailLevel):
        return level
    if isinstance(level, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        try:
            return DetailLevel(level.strip().lower())
        except ValueError:
            pass
    raise InvalidDetailLevelError(level)


@dataclass(frozen=True, slots=True)
class Budgets:
    """Character budgets of :meth:`ToolDoc.render` per level, and for :meth:`Store.describe_many`.

    A doc is rendered at the richest detail that fits its budget (descriptions get
    shorter, then go, then nested classes collapse); what still does not fit is cut
    with a visible marker. Signatures in :attr:`ToolDoc.signature` are never cut.
    """

    summary: int = 200
    schema: int = 1200
    full: int = 4000
    many: int = 6000
    """Total for one ``describe_many`` call; past it, later docs drop to ``summary``."""

    def __post_init__(self) -> None:
        for name in ("summary", "schema", "full", "many"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 40:
                raise ValueError(f"budget {name!r} must be an int of at least 40 characters, got {value!r}")

    def for_level(self, level: DetailLevel) -> int:
        """The budget of one level."""
        return {DetailLevel.SUMMARY: self.summary, DetailLevel.SCHEMA: self.schema, DetailLevel.FULL: self.full}[level]


RENDER_TIERS: tuple[RenderOptions, ...] = (
    RenderOptions(),
    RenderOptions(descriptions=32, field_descriptions=0, docstring=80),
    RenderOptions(descriptions=0, field_descriptions=0, docstring=60),
    RenderOptions(descriptions=0, field_descriptions=0, docstring=0, max_literal=8, max_depth=3),
    RenderOptions(descriptions=0, field_descriptions=0, docstring=0, max_literal=4, nested_classes=False),
)
"""Render options from the richest to the most compact; the first that fits the budget wins."""


class ToolDoc(BaseModel):
    """Documentation of one tool at one detail level.

    Fields beyond the level are ``None`` (or empty). ``render()`` is the text to show a
    model; ``to_dict()`` is the same information as JSON-safe data.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    id: str
    """Fully qualified tool id (``namespace:name[:version]``)."""
    level: DetailLevel
    name: str
    namespace: str
    summary: str
    """One line, at most the ``summary`` budget."""
    title: str | None = None

    # -- schema --------------------------------------------------------------------
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    """The declared output schema (``None`` when the tool declares none)."""
    required: tuple[str, ...] = ()
    """Wire names of the required parameters."""
    defaults: dict[str, Any] = Field(default_factory=lambda: {})
    """Wire name → schema default, for parameters that declare one."""
    signature: str | None = None
    """Python call signature (``TypedDict`` classes + ``def``), always valid Python."""
    returns: str | None = None
    """The return annotation: from the output schema, else the learned shape, else ``dict[str, Any]``."""
    wire_names: dict[str, str] = Field(default_factory=lambda: {})
    """Signature identifier → wire name, for parameters renamed to be identifiers."""
    collisions: tuple[str, ...] = ()
    """Name collisions found while rendering (each says which names and what they became)."""
    warnings: tuple[str, ...] = ()
    """Parts of the schema that could not be rendered exactly."""

    # -- full ----------------------------------------------------------------------
    description: str | None = None
    """The whole description (capped by the ``full`` budget when rendered)."""
    notes: tuple[str, ...] = ()
    examples: tuple[ToolExample, ...] = ()
    references: tuple[str, ...] = ()
    """External references (URLs) from the description and added ones."""
    result_shape: dict[str, Any] | None = None
    """JSON Schema learned from successful results (only for tools without an output schema)."""
    result_count: int = 0
    """How many results the shape was learned from."""

    budget: int = 0
    """The character budget :meth:`render` keeps to (0: the level's default)."""

    def render(self) -> str:
        """Compact text for a model, within this doc's character budget.

        Returns:
            ``summary``: ``"<id> — <summary>"``; ``schema``: a ``# <id>`` line and the
            signature; ``full``: that plus description, notes, examples, references and
            the learned shape. Over-long text ends in a visible marker.
        """
        budget = self.budget or Budgets().for_level(self.level)
        return _cap_block(self.compose(budget), budget)

    def compose(self, budget: int | None = None) -> str:
        """The text :meth:`render` caps: exactly as long as it needs to be.

        Args:
            budget: Room for the ``full`` level's optional sections (default: this doc's budget).

        Returns:
            The uncapped text (``full`` sections are still sized to ``budget``).
        """
        budget = budget or self.budget or Budgets().for_level(self.level)
        if self.level is DetailLevel.SUMMARY:
            return cap_text(f"{self.id} — {self.summary}" if self.summary else self.id, budget)
        head = f"# {self.id}"
        parts = [head, self.signature or ""]
        if self.collisions:
            parts.extend(f"# note: {c}" for c in self.collisions)
        if self.level is DetailLevel.FULL:
            parts.extend(self._full_sections(budget - sum(len(p) + 1 for p in parts)))
        return "\n".join(p for p in parts if p)

    def _full_sections(self, room: int) -> list[str]:
        out: list[str] = []
        if self.result_shape is not None:
            out.append(f"# returns: shape learned from {self.result_count} result(s); fields may be missing")
        # Only the head of a description can be shown: a megabyte-long one costs no more.
        desc = self.description[: max(SCAN_CHARS, 2 * room + 64)] if self.description else ""
        if desc and one_line(desc) != self.summary:
            out.append('"""\n' + desc.strip().replace('"""', '\\"\\"\\"') + '\n"""')
        if self.notes:
            out.append("Notes:\n" + "\n".join(f"- {one_line(n)}" for n in self.notes))
        if self.examples:
            lines = ["Examples:"]
            for ex in self.examples:
                call = f"run_tool({py_str(self.id)}, {json.dumps(ex.args, ensure_ascii=False)})"
                lines.append(f"- {ex.title or ex.id}: {call}")
                if ex.description:
                    lines.append(f"  {one_line(ex.description)}")
                if ex.result_hint:
                    lines.append(f"  -> {one_line(ex.result_hint)}")
            out.append("\n".join(lines))
        if self.references:
            out.append("References: " + " ".join(self.references))
        # Keep sections whole while they fit; the description is the one that gives way.
        used = 0
        kept: list[str] = []
        for i, sec in enumerate(out):
            rest = sum(len(s) + 1 for s in out[i + 1 :])
            if used + len(sec) + 1 + rest <= room:
                kept.append(sec)
                used += len(sec) + 1
            elif sec.startswith('"""') and room - used - rest > 40:
                avail = room - used - rest - 1
                inner = cap_text(sec[4:-4], max(avail - 8, 1))
                kept.append('"""\n' + inner + '\n"""')
                used += len(kept[-1]) + 1
            else:
                kept.append(_cap_block(sec, max(room - used - 1, 0)) if room - used > 60 else "")
                used += len(kept[-1]) + 1
        return [k for k in kept if k]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data with the fields of this level (empty and ``None`` fields left out)."""
        data = self.model_dump(mode="json", exclude={"examples", "budget"}, exclude_none=True)
        data["level"] = self.level.value
        if self.examples:
            data["examples"] = [ex.to_dict() for ex in self.examples]
        return {k: v for k, v in data.items() if v not in ((), [], {}, 0) or k in ("id", "level", "summary")}


def _cap_block(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    note = f"\n# {MARKER} cut at {budget} characters"
    if budget <= len(note) + 1:
        return cap_text(text, budget)
    return cap_text(text, budget - len(note)) + note
