"""Pydantic AI: an ``Agent`` with a scripted ``FunctionModel`` uses code mode through ``CodeModeToolset``.

The toolbox runs the real ``mcp-server-time`` and ``mcp-server-git``; the model searches,
describes, sends a snippet that fails its type check (a failed result, with the text the MCP
door gives), then a correct one, and answers from its value. The reverse direction: a Pydantic AI
``FunctionToolset`` called from snippets through ``ToolsetProvider``.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_support import TIME_GIT_SNIPPET, TYPE_ERROR_SNIPPET
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ModelRetry, RunContext, UserError
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from toolcode import Settings, Toolbox
from toolcode._settings import DEFAULT_TOOLS
from toolcode.integrations.pydantic_ai import CodeModeToolset, ToolsetProvider, toolset_backend
from toolcode.server import CodeModeServer

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

BAD = TYPE_ERROR_SNIPPET
GOOD = TIME_GIT_SNIPPET


@pytest.fixture
def config(time_git_config: dict[str, Any]) -> dict[str, Any]:
    return time_git_config


Step = Callable[[list[ModelMessage], AgentInfo], ModelResponse]


def scripted(steps: Sequence[Step]) -> FunctionModel:
    """A model that answers turn N with ``steps[N]`` (each sees the messages so far)."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        return steps[turn](messages, info)

    return FunctionModel(model)


def call(name: str, args: dict[str, Any] | str) -> Step:
    return lambda messages, info: ModelResponse(parts=[ToolCallPart(name, args)])


def last_return(messages: list[ModelMessage]) -> ToolReturnPart:
    return next(p for p in messages[-1].parts if isinstance(p, ToolReturnPart))


def returns(messages: Sequence[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def without_timing(text: str) -> str:
    """A reply text without its last line (the call summary, which carries a duration)."""
    return text.rsplit("\n", 1)[0]


async def test_agent_searches_describes_and_runs_a_snippet_after_a_type_error(
    config: dict[str, Any], git_repo: Path
) -> None:
    offered: list[AgentInfo] = []

    def search(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append(info)
        return ModelResponse(parts=[ToolCallPart("search_tools", {"query": "current time in a timezone", "limit": 3})])

    def describe(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        best = str(last_return(messages).content).split(" — ")[0]
        return ModelResponse(parts=[ToolCallPart("describe_tool", {"tool_id": best})])

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        value = json.loads(str(last_return(messages).content).splitlines()[0])
        return ModelResponse(parts=[TextPart(f"Paris is in {value['zone']}; untracked files: {value['untracked']}")])

    steps = [
        search,
        describe,
        call("execute_code", {"code": BAD}),
        call("execute_code", {"code": GOOD, "input": {"repo": str(git_repo)}}),
        answer,
    ]
    async with Toolbox.from_config(config) as box:
        agent = Agent(scripted(steps), toolsets=[CodeModeToolset(box)])
        result = await agent.run("What is the time zone of Paris, and does my repo have untracked files?")
        server = CodeModeServer(box)
        async with Client(server.server) as client:
            over_mcp = await client.call_tool("execute_code", {"code": BAD})
        definitions = {d["name"]: d for d in server.tool_definitions()}
        server.close()

    assert result.output == "Paris is in Europe/Paris; untracked files: True"
    search_reply, describe_reply, retried, done = returns(result.all_messages())
    assert search_reply.content.startswith("time:get_current_time — ")  # type: ignore[union-attr]
    assert "def get_current_time(" in str(describe_reply.content)
    # The type error comes back as a failed result (no tool ran), worded as over MCP.
    assert retried.outcome == "failed"
    assert str(retried.content).startswith("error [type_error] at line 2:")
    assert '$.timezone: 42 is not of type "string"' in str(retried.content)
    mcp_text = over_mcp.content[0].text  # type: ignore[union-attr]
    assert over_mcp.is_error and without_timing(str(retried.content)) == without_timing(mcp_text)
    # The correct snippet's reply: the value, and the whole outcome as metadata for the host.
    assert done.outcome == "success"
    assert done.metadata["ok"] is True and done.metadata["calls"]["count"] == 2
    assert done.metadata["value"] == {"zone": "Europe/Paris", "untracked": True}
    # The tools, their descriptions and schemas are the MCP server's, and so are the instructions.
    info = offered[0]
    assert [t.name for t in info.function_tools] == list(DEFAULT_TOOLS)
    for tool in info.function_tools:
        assert tool.description == definitions[tool.name]["description"]
        assert tool.parameters_json_schema == definitions[tool.name]["inputSchema"]
    assert info.instructions is not None and "execute_code" in info.instructions


async def test_three_mistakes_in_a_row_then_working_code_is_an_ordinary_run_with_default_settings(
    config: dict[str, Any], git_repo: Path
) -> None:
    # Default agent settings (one retry per tool): each mistake is a failed result the model reads,
    # none spends a retry, so the run is not ended by the second or third.
    steps = [
        call("execute_code", '{"code": "__out = 1"'),  # arguments that are not JSON
        call("execute_code", {"code": "x = (\n"}),  # a snippet that does not parse
        call("execute_code", {"code": BAD}),  # a snippet that fails its type check
        call("execute_code", {"code": GOOD, "input": {"repo": str(git_repo)}}),
        lambda messages, info: ModelResponse(parts=[TextPart(str(last_return(messages).content).splitlines()[0])]),
    ]
    async with Toolbox.from_config(config) as box:
        agent = Agent(scripted(steps), toolsets=[CodeModeToolset(box)])
        result = await agent.run("What is the time zone of Paris, and does my repo have untracked files?")

    assert json.loads(result.output) == {"zone": "Europe/Paris", "untracked": True}
    garbled, syntax, typed, done = returns(result.all_messages())
    assert [r.outcome for r in (garbled, syntax, typed, done)] == ["failed", "failed", "failed", "success"]
    assert str(garbled.content).startswith("error [invalid_arguments]: invalid 'arguments': not valid JSON")
    assert str(syntax.content).startswith("error [syntax_error] at line ")
    assert str(typed.content).startswith("error [type_error] at line 2:") and 'is not of type "string"' in str(
        typed.content
    )


async def test_every_failure_is_a_failed_result_the_model_reads(config: dict[str, Any]) -> None:
    uncaught = 'from tools import time_\n__out = time_.get_current_time(timezone="Not/AZone")'
    steps = [
        call("run_tool", {"tool_id": "time:get_time", "args": {"timezone": "UTC"}}),  # an unknown tool
        call("execute_code", {"code": uncaught}),  # the tool fails at run time
        call("execute_code", {"code": uncaught, "bogus": 1}),  # an unknown argument
        call("run_tool", '["time:get_current_time"]'),  # JSON that is not an object
        lambda messages, info: ModelResponse(parts=[TextPart("gave up")]),
    ]
    async with Toolbox.from_config(config) as box:
        # Even with no retries at all, a failure does not end the run.
        toolset = CodeModeToolset(box, tools=["run_tool", "execute_code"], max_retries=0)
        agent = Agent(scripted(steps), toolsets=[toolset])
        result = await agent.run("What time is it in Atlantis?")

    assert result.output == "gave up"
    unknown, failed, bad_argument, not_an_object = returns(result.all_messages())
    assert {r.outcome for r in (unknown, failed, bad_argument, not_an_object)} == {"failed"}
    assert str(unknown.content).startswith("error [unknown_tool]: unknown tool 'time:get_time'")
    assert "; nearest tools: " in str(unknown.content) and "time:get_current_time" in str(unknown.content)
    assert "\nhint:" not in str(unknown.content)  # the message already says it
    assert str(failed.content).startswith("error [tool_error] at line 2: ToolError:")
    assert "[1 tool call, 1 failed: time:get_current_time (tool_error)" in str(failed.content)
    assert str(bad_argument.content) == "error [invalid_arguments]: invalid 'bogus': execute_code has no such argument"
    assert str(not_an_object.content) == "error [invalid_arguments]: invalid 'arguments': must be a JSON object"


async def test_a_toolset_that_owns_its_toolbox_connects_when_entered_and_closes_after(
    config: dict[str, Any],
) -> None:
    code = 'from tools import time_\n__out = time_.get_current_time(timezone="Asia/Tokyo")["timezone"]'

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(str(last_return(messages).content).splitlines()[0])])

    model = scripted([call("execute_code", {"code": code}), answer])
    toolset = CodeModeToolset.from_config(config, tools=["execute_code", "list_namespaces"])
    agent = Agent(model, toolsets=[toolset])
    with pytest.raises(UserError, match="builds its toolbox when entered"):
        _ = toolset.toolbox
    async with agent:
        box = toolset.toolbox
        assert {n.name for n in box.index.namespaces()} == {"time", "git"}
        first = await agent.run("Tokyo's zone?")
        second = await agent.run("Tokyo's zone, again?")
        assert toolset.toolbox is box  # both runs used the one connection
    assert first.output == second.output == '"Asia/Tokyo"'
    with pytest.raises(UserError):
        _ = toolset.toolbox
    # A run outside `async with agent:` enters the toolset itself: a new toolbox, closed after.
    third = await agent.run("Tokyo's zone, once more?")
    assert third.output == '"Asia/Tokyo"'
    with pytest.raises(UserError):
        _ = toolset.toolbox


async def test_resuming_a_paused_run_is_the_hosts_decision(config: dict[str, Any]) -> None:
    config["toolcode"]["policy"] = {"rules": [{"tools": "time:*", "decision": "ask"}]}
    code = 'from tools import time_\n__out = time_.get_current_time(timezone="Asia/Tokyo")["timezone"]'

    def resume(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        paused = last_return(messages)
        execution_id = paused.metadata["approval"]["execution_id"]
        return ModelResponse(
            parts=[ToolCallPart("resume_execution", {"execution_id": execution_id, "decision": "approve"})]
        )

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("zone: " + str(last_return(messages).content).splitlines()[0])])

    agent = Agent(
        scripted([call("execute_code", {"code": code}), resume, answer]),
        toolsets=[CodeModeToolset.from_config(config)],
        output_type=[str, DeferredToolRequests],
    )
    async with agent:
        asked = await agent.run("Tokyo's zone?")
        assert isinstance(asked.output, DeferredToolRequests)
        [decision] = asked.output.approvals
        assert decision.tool_name == "resume_execution" and decision.args_as_dict()["decision"] == "approve"
        paused = returns(asked.all_messages())[0]
        assert str(paused.content).startswith("approval required: line 2 calls time:get_current_time")
        approved = DeferredToolResults(approvals={decision.tool_call_id: True})
        done = await agent.run(message_history=asked.all_messages(), deferred_tool_results=approved)
    assert done.output == 'zone: "Asia/Tokyo"'


async def test_the_host_is_told_what_approving_resume_execution_decides(config: dict[str, Any]) -> None:
    # The deferred request carried only {"execution_id", "decision"}: the host's person approved an
    # id the model picked, never shown the calls it let through.
    config["toolcode"]["policy"] = {"rules": [{"tools": "time:*", "decision": "ask"}]}
    code = 'from tools import time_\n__out = time_.get_current_time(timezone="Asia/Tokyo\ufe01")["timezone"]'

    def resume(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        execution_id = last_return(messages).metadata["approval"]["execution_id"]
        return ModelResponse(
            parts=[
                ToolCallPart("resume_execution", {"execution_id": execution_id, "decision": "approve_run"}),
                ToolCallPart("resume_execution", {"execution_id": "0" * 32, "decision": "approve"}),
            ]
        )

    agent = Agent(
        scripted([call("execute_code", {"code": code}), resume]),
        toolsets=[CodeModeToolset.from_config(config)],
        output_type=[str, DeferredToolRequests],
    )
    async with agent:
        asked = await agent.run("Tokyo's zone?")
    assert isinstance(asked.output, DeferredToolRequests)
    known, unknown = (asked.output.metadata[c.tool_call_id] for c in asked.output.approvals)
    [pending] = known["pending"]
    assert pending["tool_id"] == "time:get_current_time" and pending["args"] == {"timezone": "Asia/Tokyo\ufe01"}
    assert known["decision"] == "approve_run" and known["line"] == 2
    assert known["question"].startswith("approve_run:\n- time:get_current_time (")
    assert 'Asia/Tokyo\\ufe01"' in known["question"]  # written out, as every door shows it
    assert "pending" not in unknown and unknown["question"].startswith("nothing is decided: ")


async def test_the_hosts_approval_request_shows_the_saved_snippets_code(config: dict[str, Any]) -> None:
    # Approving a saved snippet's call covers its code: the request showed its arguments only.
    config["toolcode"]["policy"] = {"rules": [{"tools": "time:*", "decision": "ask"}]}
    body = 'from tools import time_  # Tokyo\u202e\n__out = time_.get_current_time(timezone="Asia/Tokyo")'
    code = f"save_snippet('zone', {body!r}, 'Tokyo.')\n__out = run_tool('snippets:zone')"

    def resume(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        execution_id = last_return(messages).metadata["approval"]["execution_id"]
        return ModelResponse(
            parts=[ToolCallPart("resume_execution", {"execution_id": execution_id, "decision": "approve"})]
        )

    agent = Agent(
        scripted([call("execute_code", {"code": code}), resume]),
        toolsets=[CodeModeToolset.from_config(config)],
        output_type=[str, DeferredToolRequests],
    )
    async with agent:
        asked = await agent.run("Tokyo's zone?")
    assert isinstance(asked.output, DeferredToolRequests)
    [request] = asked.output.metadata.values()
    assert request["snippet_code"] == {request["pending"][0]["snippets"]["snippets:zone"]: body}
    shown = "code of snippets:zone that approving runs (2 lines):\n  1 | from tools import time_  # Tokyo\\u202e\n"
    assert shown in request["question"]


async def test_the_host_decides_on_the_arguments_the_door_gets(config: dict[str, Any]) -> None:
    # The validator passed an object through as it came, and the door read a hidden key of it
    # first: a model could show the host decision "deny" and have the door carry out "approve".
    config["toolcode"]["policy"] = {"rules": [{"tools": "time:*", "decision": "ask"}]}
    code = 'from tools import time_\n__out = time_.get_current_time(timezone="Asia/Tokyo")["timezone"]'
    hidden = "\x00toolcode:arguments"

    def resume(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        execution_id = last_return(messages).metadata["approval"]["execution_id"]
        shown = {"execution_id": execution_id, "decision": "deny"}
        smuggled = {**shown, hidden: {"execution_id": execution_id, "decision": "approve"}}
        return ModelResponse(parts=[ToolCallPart("resume_execution", smuggled)])

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(str(last_return(messages).content).splitlines()[0])])

    agent = Agent(
        scripted([call("execute_code", {"code": code}), resume, answer]),
        toolsets=[CodeModeToolset.from_config(config)],
        output_type=[str, DeferredToolRequests],
    )
    async with agent:
        asked = await agent.run("Tokyo's zone?")
        assert isinstance(asked.output, DeferredToolRequests)
        [decision] = asked.output.approvals
        assert decision.args_as_dict()["decision"] == "deny"  # what the host is asked about
        allowed = DeferredToolResults(approvals={decision.tool_call_id: True})
        done = await agent.run(message_history=asked.all_messages(), deferred_tool_results=allowed)
    # Nothing the host did not see was carried out: the door refuses the odd key, the call is not made.
    assert "Asia/Tokyo" not in str(done.output), done.output
    assert str(done.output).startswith("error [invalid_arguments]"), done.output


@dataclass
class Desk:
    holidays: dict[str, list[str]]


async def test_a_pydantic_ai_toolset_is_a_namespace_that_snippets_call(config: dict[str, Any]) -> None:
    tools = FunctionToolset[Desk]()

    @tools.tool
    def holidays(ctx: RunContext[Desk], city: str) -> list[str]:
        """Public holidays of the office in a city, as ISO dates."""
        if city not in ctx.deps.holidays:
            raise ModelRetry(f"no office in {city}; offices: {', '.join(ctx.deps.holidays)}")
        return ctx.deps.holidays[city]

    @tools.tool_plain(requires_approval=True)
    def close_office(city: str) -> str:
        """Close an office for the day."""
        return f"{city} closed"

    desk = Desk(holidays={"Paris": ["2026-07-14", "2026-08-15"], "Tokyo": ["2026-11-03"]})
    backend = toolset_backend(tools, "desk", deps=desk)
    snippet = """\
from tools import desk, time_
paris = desk.holidays(city="Paris")
try:
    desk.holidays(city="Atlantis")
    missing = None
except ToolError as e:
    missing = tool_error_info(e)["message"]
zone = time_.get_current_time(timezone="Europe/Paris")["timezone"]
__out = {"paris": paris, "missing": missing, "zone": zone}
"""
    async with Toolbox.from_config(config, extra_backends=[backend]) as box:
        found = await box.codemode.search_tools("public holidays of an office")
        doc = await box.codemode.describe_tool("desk:holidays")
        out = await box.codemode.execute(snippet)
        gated = await box.codemode.execute('__out = run_tool("desk:close_office", city="Paris")')

    assert found.hits[0].id == "desk:holidays"
    assert "def holidays(" in doc.text and "city: str" in doc.text
    assert out.ok, out.error
    assert out.value == {
        "paris": ["2026-07-14", "2026-08-15"],
        "missing": "no office in Atlantis; offices: Paris, Tokyo",
        "zone": "Europe/Paris",
    }
    # A tool that needs Pydantic AI's approval is not offered to code mode.
    assert isinstance(backend.provider, ToolsetProvider)
    assert "close_office" in backend.provider.skipped
    assert gated.error is not None and "unknown tool 'desk:close_office'" in gated.error.message


async def test_a_provider_tool_gets_a_minimal_run_context() -> None:
    seen: list[RunContext[str]] = []
    tools = FunctionToolset[str]()

    @tools.tool
    async def whoami(ctx: RunContext[str]) -> str:
        """The deps and tool name the call sees."""
        seen.append(ctx)
        return f"{ctx.deps}:{ctx.tool_name}"

    @tools.tool
    async def ask_model(ctx: RunContext[str], question: str) -> str:
        """Asks the run's model (there is none in code mode)."""
        agent = Agent(ctx.model)
        return (await agent.run(question)).output

    settings = Settings.model_validate({"state": {"memory": True}})
    async with Toolbox([toolset_backend(tools, "app", deps="alice")], settings=settings) as box:
        out = await box.codemode.execute("from tools import app\n__out = app.whoami()")
        refused = await box.codemode.execute('from tools import app\n__out = app.ask_model(question="hi")')

    assert out.value == "alice:whoami"
    assert seen[0].retry == 0 and seen[0].tool_call_id is not None and seen[0].messages == []
    assert refused.error is not None and refused.error.code == "tool_error"
    assert "has no model: pass model= to ToolsetProvider" in refused.error.message


def test_the_documented_example_runs_with_its_scripted_model() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "pydantic_ai_agent.py"
    proc = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=300)  # a hang bound
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[-1] == "tool calls: search_tools, describe_tool, execute_code"
    # One line per demo office, most urgent tickets first.
    assert len(lines) == 7 and lines[0].startswith("Paris: 4 urgent, ")


async def test_exposed_upstream_tools_are_offered_and_called_as_run_tool_calls_them(config: dict[str, Any]) -> None:
    config["toolcode"]["expose"] = ["time:*"]  # the config's choice is the toolset's default
    offered: list[dict[str, ToolDefinition]] = []

    def first(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append({t.name: t for t in info.function_tools})
        return ModelResponse(parts=[ToolCallPart("time__get_current_time", {"timezone": "Asia/Tokyo"})])

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append({t.name: t for t in info.function_tools})
        return ModelResponse(parts=[TextPart("done")])

    steps = [first, call("time__get_current_time", {"timezone": 42}), answer]
    async with Toolbox.from_config(config) as box:
        toolset = CodeModeToolset(box, tools=["search_tools"], max_retries=1)
        result = await Agent(scripted(steps), toolsets=[toolset]).run("Time in Tokyo?")
        server = CodeModeServer(box, tools=["run_tool"])  # the same config: the same tools exposed
        definitions = {d["name"]: d for d in server.tool_definitions()}
        async with Client(server.server) as client:
            run_tool = await client.call_tool(
                "run_tool", {"tool_id": "time:get_current_time", "args": {"timezone": "Asia/Tokyo"}}
            )
        server.close()
        # The list follows the catalog: a tool gone upstream is no longer offered.
        box.index.unregister("time:convert_time")
        later = await Agent(scripted([answer]), toolsets=[toolset]).run("Anything?")
        only = await Agent(scripted([answer]), toolsets=[CodeModeToolset(box, expose=[])]).run("Anything?")

    assert result.output == later.output == only.output == "done"
    tools = offered[0]
    assert list(tools) == ["search_tools", "time__convert_time", "time__get_current_time"]
    for name in ("time__convert_time", "time__get_current_time"):
        assert tools[name].description == definitions[name]["description"]
        assert tools[name].parameters_json_schema == definitions[name]["inputSchema"]
    ok, bad = returns(result.all_messages())
    assert ok.outcome == "success" and json.loads(str(ok.content))["timezone"] == "Asia/Tokyo"
    assert json.loads(str(ok.content)).keys() == json.loads(run_tool.content[0].text).keys()  # type: ignore[union-attr]
    assert ok.metadata["value"]["timezone"] == "Asia/Tokyo"
    # A bad argument is a mistake the model fixes: a failed result, worded as run_tool words it.
    assert bad.outcome == "failed" and str(bad.content).startswith("error [invalid_arguments]: ")
    assert list(offered[-2]) == ["search_tools", "time__get_current_time"]
    assert "time__get_current_time" not in offered[-1]  # expose=[] overrides the config


async def test_an_exposed_tools_image_reaches_the_model_as_an_image(mcp_servers: dict[str, Any]) -> None:
    config = {"mcpServers": {"everything": mcp_servers["everything"]}, "toolcode": {"state": {"memory": True}}}
    steps = [
        call("everything__get-tiny-image", {}),
        lambda messages, info: ModelResponse(parts=[TextPart("seen")]),
    ]
    async with Toolbox.from_config(config) as box:
        toolset = CodeModeToolset(box, tools=["search_tools"], expose=["everything:get-tiny-image"])
        result = await Agent(scripted(steps), toolsets=[toolset]).run("Show me the image")
        server = CodeModeServer(box, expose=["everything:get-tiny-image"])
        async with Client(server.server) as client:
            over_mcp = await client.call_tool("everything__get-tiny-image", {})
        server.close()

    assert result.output == "seen"
    [returned] = returns(result.all_messages())
    mcp_image = next(b for b in over_mcp.content if b.type == "image")
    mcp_texts = [b.text for b in over_mcp.content if b.type == "text"]  # type: ignore[union-attr]
    # The text blocks are the reply, the image is marked where it was...
    assert str(returned.content).split("\n") == [*mcp_texts[:1], "[image 1: image/png]", *mcp_texts[1:]]
    # ...and it reaches the model as an image, the bytes the MCP server sends.
    [image] = [
        c
        for m in result.all_messages()
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart) and not isinstance(p.content, str)
        for c in p.content
        if isinstance(c, BinaryContent)
    ]
    assert image.media_type == "image/png" and image.data == base64.b64decode(mcp_image.data)  # type: ignore[union-attr]


async def test_other_blocks_of_an_exposed_tool_are_text_and_a_broken_image_is_left_out() -> None:
    from mcp_support import FAULT_SERVER

    fault = {"command": sys.executable, "args": [str(FAULT_SERVER)]}
    config = {"mcpServers": {"fault": fault}, "toolcode": {"state": {"memory": True}}}
    steps = [
        call("fault__blocks", {}),
        call("fault__bad_image", {}),
        lambda messages, info: ModelResponse(parts=[TextPart("done")]),
    ]
    async with Toolbox.from_config(config) as box:
        toolset = CodeModeToolset(box, tools=["search_tools"], expose=["fault:blocks", "fault:bad_image"])
        result = await Agent(scripted(steps), toolsets=[toolset]).run("Blocks?")

    blocks, bad = returns(result.all_messages())
    lines = str(blocks.content).split("\n")
    assert lines[:2] == ["hello", "[image 1: image/png]"]
    assert json.loads(lines[2])["type"] == "audio" and json.loads(lines[3])["resource"]["text"] == "a note"
    assert bad.outcome == "success" and str(bad.content) == "[an image whose data is not base64: left out]"
    images = [
        c
        for m in result.all_messages()
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart) and not isinstance(p.content, str)
        for c in p.content
    ]
    assert len(images) == 1  # the good one only
