"""Chains without code over real MCP servers: references between steps, typed values, shapes, on_error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_support import FAULT_SERVER, npm_server

from toolcode import Settings, Toolbox
from toolcode._settings import StateSettings
from toolcode.exceptions import InvalidArgumentsError
from toolcode.server import CHAIN_SCHEMA

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


def _box(tmp_path: Path) -> Toolbox:
    servers = {
        "memory": {
            "command": str(npm_server("mcp-server-memory")),
            "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
        },
        "everything": {"command": str(npm_server("mcp-server-everything")), "args": ["stdio"]},
        "faults": {"command": sys.executable, "args": [str(FAULT_SERVER)]},
    }
    return Toolbox.from_config({"mcpServers": servers}, settings=Settings(state=StateSettings(memory=True)))


async def test_steps_pass_values_by_reference_with_their_types(tmp_path: Path) -> None:
    steps: list[dict[str, Any]] = [
        {
            "id": "made",
            "tool_id": "memory:create_entities",
            "args": {"entities": [{"name": "Ada", "entityType": "person", "observations": ["engineer"]}]},
        },
        {"tool_id": "memory:search_nodes", "args": {"query": "{{made.entities.0.name}}"}},
        {"id": "sum", "tool_id": "faults:add", "args": {"a": 2, "b": 3}},
        # An integer stays an integer: the tool's schema (integer) accepts it.
        {"tool_id": "faults:add", "args": {"a": "{{sum}}", "b": "{{steps.2}}"}},
        # Inside a longer string, a value is formatted as text.
        {
            "tool_id": "faults:echo",
            "args": {"text": "{{made.entities.0.name}} is {{steps.1.entities.0.entityType}}, 2+3={{sum}}"},
        },
        {"tool_id": "faults:echo", "args": {"text": "x"}, "use_previous": "extra"},
    ]
    async with _box(tmp_path) as box:
        out = await box.codemode.run_chain(steps)
    assert not out.aborted, out
    values = [s.value for s in out.steps]
    assert values[1]["entities"][0]["name"] == "Ada"
    assert values[2] == 5 and values[3] == 10
    assert values[4] == {"text": "Ada is person, 2+3=5"}
    assert out.steps[0].id == "made" and out.steps[2].id == "sum"


async def test_a_broken_reference_shows_the_shape_and_on_error_continue_goes_on(tmp_path: Path) -> None:
    steps: list[dict[str, Any]] = [
        {
            "id": "made",
            "tool_id": "memory:create_entities",
            "args": {"entities": [{"name": "Bo", "entityType": "t", "observations": []}]},
        },
        {"tool_id": "memory:search_nodes", "args": {"query": "{{made.entities.3.name}}"}, "on_error": "continue"},
        {"tool_id": "memory:search_nodes", "args": {"query": "{{made.entity}}"}, "on_error": "continue"},
        {"tool_id": "faults:add", "args": {"a": 1, "b": 1}},
        {"tool_id": "faults:echo", "args": {"text": "{{steps.1.entities}}"}},
    ]
    async with _box(tmp_path) as box:
        out = await box.codemode.run_chain(steps)
    first, second = out.steps[1].error, out.steps[2].error
    assert first is not None and first.code == "invalid_reference"
    assert "made.entities has 1 items, no index 3" in first.message
    assert "list[1] of {name: str, entityType: str, observations: list[0]}" in first.message
    assert second is not None and second.code == "invalid_reference"
    assert "has no key 'entity'" in second.message and "{entities: list[1]" in second.message
    assert out.steps[3].ok and out.steps[3].value == 2
    # A reference to a step that failed fails its own step (on_error abort: the chain stops).
    last = out.steps[4].error
    assert out.aborted and last is not None and last.code == "invalid_reference" and "step 1 failed" in last.message


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([{"tool_id": "faults:add", "args": {"a": "{{steps.0}}", "b": 1}}], "not before step 0"),
        ([{"tool_id": "faults:add", "args": {"a": "{{nope.x}}", "b": 1}}], "no earlier step has the id 'nope'"),
        (
            [{"id": "a", "tool_id": "faults:add", "args": {}}, {"id": "a", "tool_id": "faults:add", "args": {}}],
            "already the id",
        ),
        ([{"tool_id": "faults:add", "args": {}, "use_previous": "x"}], "no previous result"),
    ],
)
async def test_references_are_checked_before_anything_runs(
    tmp_path: Path, steps: list[dict[str, Any]], message: str
) -> None:
    async with _box(tmp_path) as box:
        with pytest.raises(InvalidArgumentsError, match=message):
            await box.codemode.run_chain(steps)


def test_the_chain_schema_is_published() -> None:
    item = CHAIN_SCHEMA["items"]
    assert CHAIN_SCHEMA["type"] == "array" and set(item["properties"]) == {
        "tool_id",
        "tool",
        "args",
        "id",
        "use_previous",
        "on_error",
    }
    assert item["anyOf"] == [{"required": ["tool_id"]}, {"required": ["tool"]}]


async def test_witsy_style_steps_run_against_real_servers(tmp_path: Path) -> None:
    steps: list[dict[str, Any]] = [
        {
            "id": "made",
            "tool": "memory:create_entities",
            "args": {"entities": [{"name": "Ada", "entityType": "person", "observations": ["engineer"]}]},
        },
        {"id": "found", "tool": "memory:search_nodes", "args": {"query": "{{made.result.entities[0].name}}"}},
        {"id": "sum", "tool": "faults:add", "args": {"a": 2, "b": 3}},
        {
            "tool": "faults:echo",
            "args": {
                "text": "{{found.result.entities[0].entityType}}, {{found.entities[-1].observations[0]}}, "
                "{{sum.result}}"
            },
        },
    ]
    async with _box(tmp_path) as box:
        out = await box.codemode.run_chain(steps)
    assert not out.aborted, out
    assert out.final == {"text": "person, engineer, 5"}
