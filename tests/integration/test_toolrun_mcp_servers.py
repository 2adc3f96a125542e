"""DefaultRunner + MCPBackend against real MCP servers from PyPI and npm, started by the tests."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_support import RunningServer

from toolrun import InputValidationError, ProgressEvent, RunResult, ToolExecutionError

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

HANG_S = 60
"""Seconds after which a call or a wait counts as hung: a bound for a hang, not a speed (a busy machine
stretches calls that take milliseconds here to seconds)."""


async def test_time_server(mcp_runner: Callable[..., Any], mcp_servers: dict[str, Any]) -> None:
    async with mcp_runner({"time": mcp_servers["time"]}) as (runner, backends):
        assert set(backends["time"].tools) == {"get_current_time", "convert_time"}
        res = await runner.run("time:get_current_time", {"timezone": "Europe/Paris"})
        assert res.structured["timezone"] == "Europe/Paris"
        assert res.structured["datetime"][:4].isdigit()
        conv = await runner.run(
            "time:convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        )
        assert conv.structured["target"]["datetime"][11:16] == "21:00"
        with pytest.raises(InputValidationError) as ei:
            await runner.run("time:convert_time", {"source_timezone": "UTC"})
        assert {p.path for p in ei.value.problems} == {"$.time", "$.target_timezone"}


async def test_git_server(mcp_runner: Callable[..., Any], mcp_servers: dict[str, Any], git_repo: Path) -> None:
    async with mcp_runner({"git": mcp_servers["git"]}) as (runner, backends):
        assert len(backends["git"].tools) == 12
        status = await runner.run("git:git_status", {"repo_path": str(git_repo)})
        assert "notes.txt" in status.value
        log = await runner.run("git:git_log", {"repo_path": str(git_repo)})
        assert "first" in log.value
        await runner.run("git:git_create_branch", {"repo_path": str(git_repo), "branch_name": "feature"})
        branches = await runner.run("git:git_branch", {"repo_path": str(git_repo), "branch_type": "local"})
        assert "feature" in branches.value


async def _exercise_everything(runner: Any) -> None:
    echo = await runner.run("everything:echo", {"message": "hi there"})
    assert echo.value == "Echo: hi there"
    weather = await runner.run("everything:get-structured-content", {"location": "Chicago"})
    assert isinstance(weather.structured, dict)
    assert "temperature" in weather.structured
    total = await runner.run("everything:get-sum", {"a": 2, "b": 40})
    assert "42" in str(total.value)
    image = await runner.run("everything:get-tiny-image")
    kinds = [b["type"] for b in image.content]
    assert "image" in kinds
    img = next(b for b in image.content if b["type"] == "image")
    assert img["mimeType"] == "image/png"
    assert len(img["data"]) > 100
    ref = await runner.run("everything:get-resource-reference", {"resourceType": "Text", "resourceId": 2})
    assert any(b["type"] == "resource" and "uri" in b["resource"] for b in ref.content)


async def _progress(runner: Any) -> list[ProgressEvent | RunResult]:
    args = {"duration": 0.3, "steps": 3}
    async with aclosing(runner.stream("everything:trigger-long-running-operation", args)) as it:
        return [item async for item in it]


async def test_everything_over_stdio(mcp_runner: Callable[..., Any], mcp_servers: dict[str, Any]) -> None:
    async with mcp_runner({"everything": mcp_servers["everything"]}) as (runner, backends):
        assert backends["everything"].protocol_version == "2025-11-25"  # auto fell back to the handshake
        assert len(backends["everything"].tools) >= 12
        await _exercise_everything(runner)
        with anyio.fail_after(HANG_S):
            items = await _progress(runner)
        assert [(e.progress, e.total) for e in items if isinstance(e, ProgressEvent)] == [(1, 3), (2, 3), (3, 3)]
        assert isinstance(items[-1], RunResult)
        assert "completed" in items[-1].value


async def test_everything_over_http(mcp_runner: Callable[..., Any], everything_http: RunningServer) -> None:
    async with mcp_runner({"everything": {"url": everything_http.url}}) as (runner, backends):
        assert len(backends["everything"].tools) >= 12
        await _exercise_everything(runner)
        with anyio.fail_after(HANG_S):
            items = await _progress(runner)
        assert sum(isinstance(e, ProgressEvent) for e in items) == 3
        assert isinstance(items[-1], RunResult)


async def test_filesystem_server(mcp_runner: Callable[..., Any], mcp_servers: dict[str, Any], files_dir: Path) -> None:
    async with mcp_runner({"filesystem": mcp_servers["filesystem"]}) as (runner, backends):
        assert len(backends["filesystem"].tools) == 14
        listing = await runner.run("filesystem:list_directory", {"path": str(files_dir)})
        text = listing.structured["content"] if isinstance(listing.structured, dict) else listing.value
        assert "a.txt" in text
        assert "sub" in text
        await runner.run("filesystem:write_file", {"path": str(files_dir / "new.txt"), "content": "written by a tool"})
        assert (files_dir / "new.txt").read_text() == "written by a tool"
        read = await runner.run("filesystem:read_text_file", {"path": str(files_dir / "sub" / "b.txt")})
        assert "beta" in str(read.value)
        # Paths outside the allowed folder are refused by the server: a tool-level error.
        with pytest.raises(ToolExecutionError) as ei:
            await runner.run("filesystem:read_text_file", {"path": "/etc/hostname"})
        assert "denied" in ei.value.message.lower() or "outside" in ei.value.message.lower()


async def test_memory_server(mcp_runner: Callable[..., Any], mcp_servers: dict[str, Any]) -> None:
    async with mcp_runner({"memory": mcp_servers["memory"]}) as (runner, backends):
        assert len(backends["memory"].tools) == 9
        entity = {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}
        await runner.run("memory:create_entities", {"entities": [entity]})
        graph = await runner.run("memory:read_graph")
        names = [e["name"] for e in graph.structured["entities"]]
        assert names == ["Ada"]
        found = await runner.run("memory:search_nodes", {"query": "program"})
        assert [e["name"] for e in found.structured["entities"]] == ["Ada"]


async def test_all_servers_in_one_runner(mcp_runner: Callable[..., Any], mcp_servers: dict[str, Any]) -> None:
    async with mcp_runner(mcp_servers) as (runner, backends):
        namespaces = {ns.name: ns.tool_count for ns in runner.index.namespaces()}
        for name, backend in backends.items():
            assert namespaces[name] == len(backend.tools)
        results = {}

        async def call(tool_id: str, args: dict[str, Any]) -> None:
            results[tool_id] = await runner.run(tool_id, args)

        with anyio.fail_after(HANG_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "time:get_current_time", {"timezone": "UTC"})
                tg.start_soon(call, "everything:echo", {"message": "x"})
                tg.start_soon(call, "memory:read_graph", {})
                tg.start_soon(call, "fault:add", {"a": 1, "b": 1})
        assert results["fault:add"].structured == 2
        assert results["everything:echo"].value == "Echo: x"
        assert results["time:get_current_time"].structured["timezone"] == "UTC"
        assert results["memory:read_graph"].structured == {"entities": [], "relations": []}
