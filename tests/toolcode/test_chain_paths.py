"""Chains written for other tools run unchanged: ``tool`` for ``tool_id``, ``[0]`` indices,
``result.`` paths, and ``{"result"|"data": ...}`` wrappers looked through (Witsy's workflow steps)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolcode import Settings, Toolbox
from toolcode._settings import StateSettings
from toolcode.exceptions import InvalidArgumentsError
from toolcode.server import CHAIN_SCHEMA
from toolrun import LocalBackend

pytestmark = pytest.mark.anyio


def _backend() -> LocalBackend:
    local = LocalBackend()

    @local.tool(namespace="asana")
    def list_workspaces() -> dict[str, Any]:
        """Workspaces, as an API that wraps its answers in ``data``."""
        return {"data": [{"gid": "w1", "name": "Home"}, {"gid": "w2", "name": "Work"}]}

    @local.tool(namespace="asana")
    def get_user(user_id: str) -> dict[str, Any]:
        """A user, as a server that wraps its answers in ``result``."""
        return {"result": {"gid": f"u-{user_id}", "name": "Ada"}}

    @local.tool(namespace="asana")
    def get_tasks(assignee: str, workspace: str, limit: int = 10) -> dict[str, Any]:
        """Tasks, returned as JSON text by a tool that declares an object."""
        tasks = [{"gid": f"t{i}", "name": f"task {i} of {assignee} in {workspace}"} for i in range(min(limit, 2))]
        return json.dumps({"data": tasks, "count": len(tasks)})  # type: ignore[return-value]

    @local.tool(namespace="memo")
    def store(content: list[str]) -> dict[str, Any]:
        """Keep some text."""
        return {"stored": content}

    @local.tool(namespace="memo")
    def echo(value: Any) -> dict[str, Any]:
        """Return the value as given."""
        return {"value": value}

    @local.tool(namespace="memo")
    def blob(n: int) -> str:
        """``n`` characters."""
        return "x" * n

    @local.tool(namespace="memo")
    def wrapped_with_more(x: int) -> dict[str, Any]:
        """An object with a ``result`` key next to others."""
        return {"result": {"deep": x}, "items": [x, x + 1]}

    return local


def _box() -> Toolbox:
    return Toolbox([_backend()], settings=Settings(state=StateSettings(memory=True)), engine="inprocess")


# The program of Witsy's code-execution example, with this catalog's tool names.
WITSY_PROGRAM: list[dict[str, Any]] = [
    {"id": "get_workspaces", "tool": "asana:list_workspaces", "args": {}},
    {"id": "get_user", "tool": "asana:get_user", "args": {"user_id": "me"}},
    {
        "id": "get_tasks",
        "tool": "asana:get_tasks",
        "args": {
            "assignee": "{{get_user.result.gid}}",
            "workspace": "{{get_workspaces.result.0.gid}}",
            "limit": 100,
        },
    },
    {
        "id": "save_to_memory",
        "tool": "memo:store",
        "args": {"content": ["First task: {{get_tasks.result[0].name}} ({{get_tasks.count}} tasks)"]},
    },
]


async def test_a_witsy_program_runs_unchanged_at_a_door_and_in_a_snippet() -> None:
    async with _box() as box:
        out = await box.codemode.run_chain(WITSY_PROGRAM)
        assert not out.aborted, out
        values = [s.value for s in out.steps]
        # The JSON text of a tool that declares an object arrives parsed.
        assert values[2]["count"] == 2 and values[2]["data"][0]["gid"] == "t0"
        assert values[3] == {"stored": ["First task: task 0 of u-me in w1 (2 tasks)"]}

        run = await box.codemode.execute("__out = run_chain(input)['final']", input=WITSY_PROGRAM)
        assert run.ok and run.value == values[3], run.error


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("{{u}}", {"result": {"gid": "u-me", "name": "Ada"}}),  # the whole result, wrapper included
        ("{{u.result}}", {"gid": "u-me", "name": "Ada"}),  # a "result" key is named by result
        ("{{u.gid}}", "u-me"),  # ... and looked through when the key is missing
        ("{{u.result.gid}}", "u-me"),
        ("{{w.data[1].name}}", "Work"),  # as written
        ("{{w[1].name}}", "Work"),  # an index into {"data": [...]}
        ("{{w.1.name}}", "Work"),
        ("{{w.result.data[-1].gid}}", "w2"),  # result: the step's result itself
        ("{{steps[0].data[0].gid}}", "w1"),
        ("{{m.items[1]}}", 8),  # a path that exists as written is taken as written
        ("{{m.deep}}", 7),  # missing next to other keys: inside the result wrapper
        ("{{m.result.deep}}", 7),
    ],
)
async def test_paths_take_brackets_result_and_wrappers(reference: str, expected: Any) -> None:
    steps: list[dict[str, Any]] = [
        {"id": "w", "tool_id": "asana:list_workspaces"},
        {"id": "u", "tool": "asana:get_user", "args": {"user_id": "me"}},
        {"id": "m", "tool": "memo:wrapped_with_more", "args": {"x": 7}},
        {"tool": "memo:echo", "args": {"value": reference}},
    ]
    async with _box() as box:
        out = await box.codemode.run_chain(steps)
    assert not out.aborted, out.steps[-1].error
    assert out.final == {"value": expected}


async def test_a_missing_path_still_says_what_it_looked_into() -> None:
    steps: list[dict[str, Any]] = [
        {"id": "w", "tool": "asana:list_workspaces"},
        {"tool": "memo:echo", "args": {"value": "{{w.data[5].gid}}"}},
    ]
    async with _box() as box:
        out = await box.codemode.run_chain(steps)
    error = out.steps[1].error
    assert out.aborted and error is not None and error.code == "invalid_reference"
    assert "w.data has 2 items, no index 5" in error.message and "list[2] of {gid: str, name: str}" in error.message


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"tool": "memo:echo", "tool_id": "asana:get_user", "args": {}}, "both tool_id and tool"),
        ({"tool": "memo:echo", "args": {"value": "{{w.data[x]}}"}}, "not a path of keys and indices"),
        ({"tool": "memo:echo", "args": {"value": "{{w..data}}"}}, "not a path of keys and indices"),
        ({"tool": "memo:echo", "args": {"value": "{{steps[3].x}}"}}, "not before step 1"),
        ({"args": {"value": 1}}, "steps[1].tool_id"),
        ({"tool": "memo:echo", "args": 5}, "invalid 'steps[1].args': must be a dict"),  # which step's args
    ],
)
async def test_malformed_steps_are_refused_before_anything_runs(step: dict[str, Any], message: str) -> None:
    async with _box() as box:
        with pytest.raises(InvalidArgumentsError, match=message.replace("[", r"\[").replace("]", r"\]")):
            await box.codemode.run_chain([{"id": "w", "tool": "asana:list_workspaces"}, step])


def test_the_chain_schema_names_the_tool_under_either_key() -> None:
    item = CHAIN_SCHEMA["items"]
    assert {"tool_id", "tool"} <= set(item["properties"])
    assert item["anyOf"] == [{"required": ["tool_id"]}, {"required": ["tool"]}]
    assert "required" not in item


@pytest.mark.parametrize(
    "args",
    [
        {"value": "{{big}}" * 3000},  # a reference written into text, many times
        {"value": ["{{big}}"] * 3000},  # the value itself, many times
        {"value": {"a": "{{big}}", "b": ["{{big}} {{big}}"] * 1500}},
        {"value": "{{empty}}" * 350_000},  # nothing filled in, but a lookup each: counted too
    ],
    ids=["text", "values", "mixed", "many"],
)
async def test_references_filled_in_are_bounded_before_they_are_built(args: dict[str, Any]) -> None:
    # A 1 MB result referred to 3,000 times would be 3 GB of arguments: refused while filling in,
    # with the bound in the message, before anything that large is made.
    import tracemalloc

    steps: list[dict[str, Any]] = [
        {"id": "big", "tool": "memo:blob", "args": {"n": 1_000_000}},
        {"id": "empty", "tool": "memo:blob", "args": {"n": 0}},
        {"tool": "memo:echo", "args": args},
    ]
    async with _box() as box:
        tracemalloc.start()
        try:
            out = await box.codemode.run_chain(steps)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    error = out.steps[2].error
    assert error is not None and "larger than 4,194,304 characters" in error.message, out.steps[2]
    assert peak < 64 * 1024 * 1024, f"{peak:,} bytes at the peak"
