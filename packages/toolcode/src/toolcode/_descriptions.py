"""What the model reads: the instructions and each code-mode tool's description and input schema.

Every door publishes these same definitions, kept as data in ``_metatools.json`` (the wire form of
an MCP tool definition). Written for a model, not a person, and kept short: every word is paid for
in context tokens on every turn (``bench/tokens.py`` reports the total under ``"surface"``). The
schemas declare names, types and defaults; the values are checked by the core's operations (one
place for every door). The snippet API is documented once, in ``execute_code``'s description,
generated from the one list of snippet globals (:data:`toolcode.SNIPPET_GLOBALS`).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict

from toolcode._globals import snippet_api_text

__all__ = ["DESCRIPTIONS", "INPUT_SCHEMAS", "INSTRUCTIONS", "UNSANDBOXED_NOTE"]


class _Schema(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    properties: dict[str, dict[str, Any]]
    required: list[str] = []


class _Definition(BaseModel):
    description: str
    inputSchema: dict[str, Any]


class _Definitions(BaseModel):
    instructions: str
    unsandboxed_note: str
    tools: dict[str, _Definition]


def _load() -> _Definitions:
    data = _Definitions.model_validate_json(resources.files("toolcode").joinpath("_metatools.json").read_bytes())
    for name, tool in data.tools.items():
        schema = _Schema.model_validate(tool.inputSchema)
        if schema.type != "object" or not set(schema.required) <= set(schema.properties):
            raise ValueError(f"_metatools.json: the inputSchema of {name} is not an object schema of its properties")
    return data


_DATA = _load()
INSTRUCTIONS = _DATA.instructions
UNSANDBOXED_NOTE = _DATA.unsandboxed_note
"""Appended to the instructions when the engine is not a sandbox."""
DESCRIPTIONS: dict[str, str] = {
    name: tool.description.replace("{snippet_api}", snippet_api_text()) for name, tool in _DATA.tools.items()
}
INPUT_SCHEMAS: dict[str, dict[str, Any]] = {name: tool.inputSchema for name, tool in _DATA.tools.items()}
"""Each code-mode tool's input schema, by name (copy before changing one: :func:`toolcode._metatools.input_schema`)."""
