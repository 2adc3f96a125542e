"""A configured server that fails to start is a namespace the model sees, and calls to it say why.

Real configs whose server command does not exist, next to the real ``mcp-server-time``: through the
library (``Toolbox``), and through ``toolcode serve`` over stdio with the ``mcp`` client.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_support import toolcode_serve_args

from toolcode import Toolbox
from toolcode.exceptions import ErrorCode, ToolError

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
DOWN = ErrorCode.SERVER_UNAVAILABLE.value


def _config(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    missing = str(tmp_path / "no-such-server-xyz")
    return {"mcpServers": {"bad": {"command": missing}, "time": TIME}, **extra}


async def test_library_shows_the_server_and_every_call_to_it_names_it_and_the_reason(tmp_path: Path) -> None:
    async with Toolbox.from_config({**_config(tmp_path), "toolcode": {"state": {"memory": True}}}) as box:
        assert "command not found" in box.failed["bad"]
        cm = box.codemode
        names = await cm.list_namespaces()
        entries = {n.name: n for n in names.namespaces}
        assert entries["time"].tool_count == 2 and entries["time"].unavailable is None
        assert entries["bad"].tool_count == 0
        assert entries["bad"].unavailable is not None and "command not found" in entries["bad"].unavailable

        found = await cm.search_tools("current time in a timezone")
        assert found.hits[0].id == "time:get_current_time"
        assert found.hint is not None and "'bad'" in found.hint and "command not found" in found.hint

        # At a door: describe (the namespace and a tool of it), run, chain.
        for call in (
            cm.describe_tool("bad"),
            cm.describe_tool("bad:x"),
            cm.run_tool("bad:x", {}),
            cm.run_chain([{"tool_id": "time:get_current_time", "args": {"timezone": "UTC"}}, {"tool_id": "bad:x"}]),
        ):
            with pytest.raises(ToolError) as err:
                await call
            assert err.value.code is ErrorCode.SERVER_UNAVAILABLE
            assert "server 'bad' is unavailable" in str(err.value) and "command not found" in str(err.value)

        # Inside a snippet: checked before the run (nothing runs), whatever the call's form.
        snippets = {
            'run_tool("bad:x", {})': 1,
            "from tools import bad\n__out = bad.x()": 1,
            "import tools\n__out = tools.bad.x()": 2,
            'now = run_tool("time:get_current_time", {"timezone": "UTC"})\n'
            '__out = run_chain([{"tool_id": "bad:x", "args": {"t": now}}])': 2,
        }
        for code, line in snippets.items():
            for check in ("strict", "off"):
                out = await cm.execute(code, options={"type_check": check})
                assert out.error is not None and out.error.code == DOWN, (code, check, out.error)
                assert "server 'bad' is unavailable" in out.error.message
                assert "command not found" in out.error.message
                assert out.error.line == line
                if check == "strict":
                    assert out.calls.count == 0  # refused before anything ran

        # An id the check cannot see fails at the call, where the snippet may catch it.
        code = 'try:\n    run_tool("bad" + ":x", {})\nexcept ToolError as e:\n    __out = tool_error_info(e)'
        out = await cm.execute(code)
        assert out.ok and out.value["code"] == DOWN and "command not found" in out.value["message"]


async def test_a_later_successful_connect_clears_the_failure(tmp_path: Path) -> None:
    late = tmp_path / "late-server"
    cfg = {"mcpServers": {"late": {"command": str(late)}}, "toolcode": {"state": {"memory": True}}}
    async with Toolbox.from_config(cfg) as box:
        assert "late" in box.failed
        out = await box.codemode.execute('run_tool("late:get_current_time", {"timezone": "UTC"})')
        assert out.error is not None and out.error.code == DOWN

        late.write_text(f"#!/bin/sh\nexec {sys.executable} -m mcp_server_time --local-timezone UTC\n")
        late.chmod(late.stat().st_mode | stat.S_IXUSR)
        await box.connect()

        assert box.failed == {}
        names = await box.codemode.list_namespaces()
        assert [(n.name, n.tool_count, n.unavailable) for n in names.namespaces] == [("late", 2, None)]
        out = await box.codemode.execute('__out = run_tool("late:get_current_time", {"timezone": "UTC"})')
        assert out.ok and out.value["timezone"] == "UTC"


async def test_serve_over_stdio_shows_the_server_and_answers_server_unavailable(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(_config(tmp_path, toolcode={"tools": ["*"]})))
    params = StdioServerParameters(command=sys.executable, args=toolcode_serve_args(config), env=dict(os.environ))
    async with Client(params) as client:
        listed = await client.call_tool("list_namespaces", {})
        assert listed.structured_content is not None
        bad = next(n for n in listed.structured_content["namespaces"] if n["name"] == "bad")
        assert bad["tool_count"] == 0 and "command not found" in bad["unavailable"]
        assert "bad (unavailable: " in listed.content[0].text  # type: ignore[union-attr]

        found = await client.call_tool("search_tools", {"query": "current time"})
        assert "'bad'" in found.content[-1].text and "failed to start" in found.content[-1].text  # type: ignore[union-attr]

        calls: list[tuple[str, dict[str, Any]]] = [
            ("describe_tool", {"tool_id": "bad"}),
            ("run_tool", {"tool_id": "bad:x", "args": {}}),
            ("run_chain", {"steps": [{"tool_id": "bad:x", "args": {}}]}),
            ("execute_code", {"code": "from tools import bad\n__out = bad.x()"}),
            ("execute_code", {"code": 'run_tool("bad:x", {})'}),
        ]
        for name, args in calls:
            res = await client.call_tool(name, args)
            assert res.is_error, (name, res.content)
            assert res.structured_content is not None
            error = res.structured_content["error"]
            assert error["code"] == DOWN, (name, error)
            assert "server 'bad' is unavailable" in error["message"] and "command not found" in error["message"]
            assert f"[{DOWN}]" in res.content[0].text  # type: ignore[union-attr]
