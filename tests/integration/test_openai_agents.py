"""OpenAI Agents SDK: an agent with a scripted model (no network, no key) uses the code-mode function tools.

The toolbox runs the real ``mcp-server-time`` and ``mcp-server-git``; the model searches,
describes, sends a snippet that fails its type check (the error comes back as the tool's
output, worded as over MCP), then a correct one, and answers from its value.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, Runner, ToolApprovalItem, Usage, set_tracing_disabled, testing
from mcp import Client
from mcp_support import TIME_GIT_SNIPPET, TYPE_ERROR_SNIPPET
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from toolcode import Toolbox
from toolcode._settings import DEFAULT_TOOLS
from toolcode.exceptions import InvalidArgumentsError
from toolcode.integrations.openai_agents import approval_question, codemode_instructions, codemode_tools
from toolcode.server import CodeModeServer

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

BAD = TYPE_ERROR_SNIPPET
GOOD = TIME_GIT_SNIPPET


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)  # nothing to export: no key, no network
    yield


@pytest.fixture
def config(time_git_config: dict[str, Any]) -> dict[str, Any]:
    return time_git_config


Turn = Callable[[list[Any]], "tuple[str, dict[str, Any]] | str | None"]
"""One turn of the script: from the input items so far, a tool call (name, arguments) or the final text."""


class ScriptedModel(Model):
    """A model that plays a script: turn N calls ``turns[N](input)``; records what it was offered."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = list(turns)
        self.requests: list[dict[str, Any]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        turn = len(self.requests)
        items = input if isinstance(input, list) else [{"role": "user", "content": input}]
        self.requests.append({"instructions": system_instructions, "tools": tools, "input": list(items)})
        step = self.turns[turn](items)
        if isinstance(step, tuple):
            name, arguments = step
            call = ResponseFunctionToolCall(
                type="function_call", call_id=f"call_{turn}", name=name, arguments=json.dumps(arguments)
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        message = ResponseOutputMessage(
            id=f"msg_{turn}",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=str(step), annotations=[])],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def last_output(items: list[Any]) -> str:
    return str(next(i for i in reversed(items) if i.get("type") == "function_call_output")["output"])


def tool_outputs(result: Any) -> list[str]:
    return [str(item.output) for item in result.new_items if item.type == "tool_call_output_item"]


def without_timing(text: str) -> str:
    """A reply text without its last line (the call summary, which carries a duration)."""
    return text.rsplit("\n", 1)[0]


async def test_agent_searches_describes_and_runs_a_snippet_after_a_type_error(
    config: dict[str, Any], git_repo: Path
) -> None:
    def answer(items: list[Any]) -> str:
        value = json.loads(last_output(items).splitlines()[0])
        return f"Paris is in {value['zone']}; untracked files: {value['untracked']}"

    model = ScriptedModel(
        [
            lambda items: ("search_tools", {"query": "current time in a timezone", "limit": 3}),
            lambda items: ("describe_tool", {"tool_id": last_output(items).split(" — ")[0]}),
            lambda items: ("execute_code", {"code": BAD}),
            lambda items: ("execute_code", {"code": GOOD, "input": {"repo": str(git_repo)}}),
            answer,
        ]
    )
    async with Toolbox.from_config(config) as box:
        agent = Agent(
            name="assistant",
            instructions="You help with time zones and repositories. " + codemode_instructions(box),
            tools=codemode_tools(box),
            model=model,
        )
        result = await Runner.run(agent, "What is the time zone of Paris, and does my repo have untracked files?")
        server = CodeModeServer(box)
        async with Client(server.server) as client:
            over_mcp = await client.call_tool("execute_code", {"code": BAD})
        definitions = {d["name"]: d for d in server.tool_definitions()}
        server.close()

    assert result.final_output == "Paris is in Europe/Paris; untracked files: True"
    searched, described, type_error, done = tool_outputs(result)
    assert searched.startswith("time:get_current_time — ")
    assert "def get_current_time(" in described
    # The type error is the tool's output (the SDK's convention), worded as over MCP; the run goes on.
    assert (
        type_error.startswith("error [type_error] at line 2:")
        and '$.timezone: 42 is not of type "string"' in type_error
    )
    assert without_timing(type_error) == without_timing(over_mcp.content[0].text)  # type: ignore[union-attr]
    assert done == '{"zone":"Europe/Paris","untracked":true}'  # nothing failed: the value alone
    # The tools, descriptions and schemas are the MCP server's, and so are the instructions.
    offered = model.requests[0]
    assert [t.name for t in offered["tools"]] == list(DEFAULT_TOOLS)
    for tool in offered["tools"]:
        assert tool.description == definitions[tool.name]["description"]
        assert tool.params_json_schema == definitions[tool.name]["inputSchema"]
    assert offered["instructions"].endswith(server.server.instructions)


async def test_bad_arguments_come_back_as_errors_the_model_reads(config: dict[str, Any]) -> None:
    class Garbled(ScriptedModel):
        """Sends arguments that are not JSON on its first turn."""

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            response = await super().get_response(*args, **kwargs)
            if len(self.requests) == 1:
                response.output[0].arguments = '{"query": '  # type: ignore[union-attr]
            return response

    model = Garbled(
        [
            lambda items: ("search_tools", {}),
            lambda items: ("search_tools", {"query": "time", "limit": "many"}),
            lambda items: ("execute_code", {"code": "__out = 1", "bogus": True}),
            lambda items: ("run_tool", {"tool_id": "time:get_time", "args": {}}),
            lambda items: "sorry",
        ]
    )
    async with Toolbox.from_config(config) as box:
        agent = Agent(name="assistant", tools=codemode_tools(box, tools=["search_tools", "execute_code", "run_tool"]))
        agent.model = model
        result = await Runner.run(agent, "What time is it?")

    assert result.final_output == "sorry"
    garbled, wrong_type, unknown_argument, unknown_tool = tool_outputs(result)
    assert garbled.startswith("error [invalid_arguments]: invalid 'arguments': not valid JSON")
    assert wrong_type.startswith("error [invalid_arguments]: invalid 'limit'")
    assert unknown_argument == "error [invalid_arguments]: invalid 'bogus': execute_code has no such argument"
    assert unknown_tool.startswith("error [unknown_tool]: unknown tool 'time:get_time'; nearest tools: ")


async def test_three_mistakes_in_a_row_then_working_code_is_an_ordinary_run_with_default_settings(
    config: dict[str, Any], git_repo: Path
) -> None:
    # The SDK's own scripted model and the runner's defaults (max_turns 10, default error handling).
    model = testing.ScriptedModel(
        [
            [testing.function_call("execute_code", '{"code": "__out = 1"', call_id="c1")],  # not JSON
            [testing.function_call("execute_code", {"code": "x = (\n"}, call_id="c2")],  # does not parse
            [testing.function_call("execute_code", {"code": BAD}, call_id="c3")],  # fails its type check
            [testing.function_call("execute_code", {"code": GOOD, "input": {"repo": str(git_repo)}}, call_id="c4")],
            [testing.assistant_message("done")],
        ]
    )
    async with Toolbox.from_config(config) as box:
        agent = Agent(name="assistant", tools=codemode_tools(box), model=model)
        result = await Runner.run(agent, "What is the time zone of Paris, and does my repo have untracked files?")

    model.assert_complete()
    assert result.final_output == "done"
    garbled, syntax, typed, done = tool_outputs(result)
    assert garbled.startswith("error [invalid_arguments]: invalid 'arguments': not valid JSON")
    assert syntax.startswith("error [syntax_error] at line ")
    assert typed.startswith("error [type_error] at line 2:") and 'is not of type "string"' in typed
    assert done == '{"zone":"Europe/Paris","untracked":true}'  # nothing failed: the value alone


async def test_resuming_a_paused_run_waits_for_the_hosts_approval(config: dict[str, Any]) -> None:
    config["toolcode"]["policy"] = {"rules": [{"tools": "time:*", "decision": "ask"}]}
    code = 'from tools import time_\n__out = time_.get_current_time(timezone="Asia/Tokyo")["timezone"]'

    def resume(items: list[Any]) -> tuple[str, dict[str, Any]]:
        paused = last_output(items)
        execution_id = paused.split("execution_id ")[1].split(":")[0]
        return "resume_execution", {"execution_id": execution_id, "decision": "approve"}

    model = ScriptedModel(
        [
            lambda items: ("execute_code", {"code": code}),
            resume,
            lambda items: "zone: " + last_output(items).splitlines()[0],
        ]
    )
    async with Toolbox.from_config(config) as box:
        agent = Agent(name="assistant", tools=codemode_tools(box), model=model)
        asked = await Runner.run(agent, "Tokyo's zone?")
        assert asked.final_output is None
        [approval] = asked.interruptions
        assert approval.tool_name == "resume_execution"
        assert tool_outputs(asked)[0].startswith("approval required: line 2 calls time:get_current_time")
        state = asked.to_state()
        state.approve(approval)
        done = await Runner.run(agent, state)

    assert done.final_output == 'zone: "Asia/Tokyo"'


async def test_the_host_is_told_what_approving_resume_execution_decides(config: dict[str, Any]) -> None:
    # The approval item carried only {"execution_id", "decision"}: the host's person approved an id
    # the model picked, never shown the calls (nor the saved snippet's code) it let through.
    config["toolcode"]["policy"] = {"rules": [{"tools": "time:*", "decision": "ask"}]}
    body = 'from tools import time_  # Tokyo\ufe01\n__out = time_.get_current_time(timezone="Asia/Tokyo")["timezone"]'
    code = f"save_snippet('zone', {body!r}, 'Tokyo.')\n__out = run_tool('snippets:zone')"

    def resume(items: list[Any]) -> tuple[str, dict[str, Any]]:
        execution_id = last_output(items).split("execution_id ")[1].split(":")[0]
        return "resume_execution", {"execution_id": execution_id, "decision": "approve"}

    model = ScriptedModel(
        [
            lambda items: ("execute_code", {"code": code}),
            resume,
            lambda items: ("resume_execution", {"execution_id": "0" * 32, "decision": "approve"}),
            lambda items: "done",
        ]
    )
    async with Toolbox.from_config(config) as box:
        agent = Agent(name="assistant", tools=codemode_tools(box, caller="alice"), model=model)
        first = await Runner.run(agent, "Tokyo's zone?")
        [item] = first.interruptions
        asked = await approval_question(box, item, caller="alice")
        state = first.to_state()
        state.approve(item)
        second = await Runner.run(agent, state)
        [unknown] = second.interruptions
        nothing = await approval_question(box, unknown, caller="alice")
        state = second.to_state()
        state.reject(unknown)
        done = await Runner.run(agent, state)
        other = ToolApprovalItem(agent=agent, raw_item={"type": "function_call", "name": "execute_code"})
        with pytest.raises(InvalidArgumentsError, match="is not a call of approve_tools or resume_execution"):
            await approval_question(box, other)

    [pending] = asked["pending"]
    assert pending["tool_id"] == "snippets:zone" and asked["snippet_code"] == {
        pending["snippets"]["snippets:zone"]: body
    }
    assert asked["decision"] == "approve" and asked["line"] == 2
    assert asked["question"].startswith("approve:\n- snippets:zone (")
    shown = "code of snippets:zone that approving runs (2 lines):\n  1 | from tools import time_  # Tokyo\\ufe01\n"
    assert shown in asked["question"]  # invisible characters written out, as every door shows them
    assert "pending" not in nothing and nothing["question"].startswith("nothing is decided: ")
    assert tool_outputs(second)[-1] == '"Asia/Tokyo"'  # approved: the code shown ran
    assert done.final_output == "done"


def test_the_documented_example_runs_with_its_scripted_model() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "openai_agents_agent.py"
    proc = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=300)  # a hang bound
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[-1] == "tool calls: search_tools, describe_tool, execute_code"
    # One line per demo office, most urgent tickets first.
    assert len(lines) == 7 and lines[0].startswith("Paris: 4 urgent, ")


async def test_exposed_upstream_tools_are_function_tools_called_as_run_tool_calls_them(config: dict[str, Any]) -> None:
    model = ScriptedModel(
        [
            lambda items: ("time__get_current_time", {"timezone": "Asia/Tokyo"}),
            lambda items: ("time__get_current_time", {"timezone": 42}),
            lambda items: "done",
        ]
    )
    # A policy that asks about conversions: the exposed conversion is an approval_required reply.
    config["toolcode"]["policy"] = {"rules": [{"tools": "time:convert_time", "decision": "ask"}]}
    async with Toolbox.from_config(config) as box:
        tools = codemode_tools(box, tools=["search_tools"], expose=["time:*"])
        agent = Agent(name="assistant", tools=tools, model=model)
        result = await Runner.run(agent, "Time in Tokyo?")
        server = CodeModeServer(box, expose=["time:*"], tools=["run_tool"])
        definitions = {d["name"]: d for d in server.tool_definitions()}
        async with Client(server.server) as client:
            run_tool = await client.call_tool(
                "run_tool", {"tool_id": "time:get_current_time", "args": {"timezone": "Asia/Tokyo"}}
            )
        server.close()
        convert = next(t for t in tools if t.name == "time__convert_time")
        asked = await convert.on_invoke_tool(
            None,  # type: ignore[arg-type]  # the context is read only by a caller function
            json.dumps({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
        )

    # The same names, descriptions and schemas as toolcode serve publishes.
    assert [t.name for t in tools] == ["search_tools", "time__convert_time", "time__get_current_time"]
    for tool in tools[1:]:
        assert tool.description == definitions[tool.name]["description"]
        assert tool.description.startswith(f"[time:{tool.name.removeprefix('time__')}] ")
        assert tool.params_json_schema == definitions[tool.name]["inputSchema"]
    assert [t.name for t in model.requests[0]["tools"]] == [t.name for t in tools]
    ok, bad = tool_outputs(result)
    # The reply is the tool's text (mcp-server-time answers JSON), the value run_tool reads.
    assert json.loads(ok)["timezone"] == "Asia/Tokyo"
    assert json.loads(ok).keys() == json.loads(run_tool.content[0].text).keys()  # type: ignore[union-attr]
    assert bad.startswith("error [invalid_arguments]: ") and "timezone" in bad
    assert asked.startswith("error [approval_required]: ")


async def test_an_exposed_tools_image_is_a_function_output_image(mcp_servers: dict[str, Any]) -> None:
    config = {"mcpServers": {"everything": mcp_servers["everything"]}, "toolcode": {"state": {"memory": True}}}
    model = ScriptedModel([lambda items: ("everything__get-tiny-image", {}), lambda items: "seen"])
    async with Toolbox.from_config(config) as box:
        tools = codemode_tools(box, tools=["search_tools"], expose=["everything:get-tiny-image"])
        result = await Runner.run(Agent(name="assistant", tools=tools, model=model), "Show me the image")
        server = CodeModeServer(box, expose=["everything:get-tiny-image"])
        async with Client(server.server) as client:
            over_mcp = await client.call_tool("everything__get-tiny-image", {})
        server.close()

    assert result.final_output == "seen"
    mcp_image = next(b for b in over_mcp.content if b.type == "image")
    # The model's next request carries the text and the image as the function call's output.
    [output] = [i for i in model.requests[1]["input"] if i.get("type") == "function_call_output"]
    parts = output["output"]
    assert [p["type"] for p in parts] == ["input_text", "input_image"]
    assert "[image 1: image/png]" in parts[0]["text"]
    assert parts[1]["image_url"] == f"data:image/png;base64,{mcp_image.data}"  # type: ignore[union-attr]
