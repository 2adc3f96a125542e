"""Code mode in an OpenAI Agents SDK agent: it searches, reads signatures, then does the task in one snippet.

The agent works on the demo catalog (a help desk of local functions plus the real
``mcp-server-time``); the host keeps the toolbox open while the agent runs::

    uv run python examples/openai_agents_agent.py            # a scripted model: no network, no key
    uv run python examples/openai_agents_agent.py gpt-5.2    # a real model (OPENAI_API_KEY set)

The scripted model plays the part of an LLM, so the example runs anywhere (the test suite runs it).
When a run waits for a person's decision (``resume_execution``, ``approve_tools``), the person at the
terminal is shown what approving decides (:func:`approval_question`) and answers.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
from agents import Agent, Model, ModelResponse, Runner, RunResult, Usage, set_tracing_disabled
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from toolcode import Settings, Toolbox
from toolcode.demo import DEMO_SNIPPET, DEMO_TASK, demo_toolbox
from toolcode.integrations.openai_agents import approval_question, codemode_instructions, codemode_tools
from toolcode.server import log_to_stderr


class ScriptedModel(Model):
    """What a model does with the code-mode tools: search, describe, one execute_code, then answer."""

    def __init__(self) -> None:
        self.turn = 0

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        """The next step of the script (``input`` ends with the last tool's output)."""
        self.turn += 1
        calls = {
            1: ("search_tools", {"query": "urgent tickets of an office"}),
            2: ("describe_tool", {"tool_id": ["helpdesk:list_offices", "helpdesk:list_tickets"]}),
            3: ("execute_code", {"code": DEMO_SNIPPET}),
        }
        if self.turn in calls:
            name, arguments = calls[self.turn]
            call = ResponseFunctionToolCall(
                type="function_call", call_id=f"call_{self.turn}", name=name, arguments=json.dumps(arguments)
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        # The run's value is in the tool's output text; its first line is the JSON value.
        report = json.loads(input[-1]["output"].splitlines()[0])
        text = "\n".join(f"{r['office']}: {r['urgent']} urgent, {'open' if r['open'] else 'closed'}" for r in report)
        message = ResponseOutputMessage(
            id="msg_1",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """Not used: ``Runner.run`` asks for whole responses."""
        raise NotImplementedError("the scripted model does not stream")


async def decided(box: Toolbox, agent: Agent[Any], result: RunResult) -> RunResult:
    """The run once a person at the terminal decided each approval it waits for, shown what approving decides."""
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            asked = await approval_question(box, item)
            print(asked["question"], file=sys.stderr)
            answer = await anyio.to_thread.run_sync(input, "approve? [y/N] ")
            if answer.strip().lower() == "y":
                state.approve(item)
            else:
                state.reject(item)
        result = await Runner.run(agent, state)
    return result


async def main(model: Model | str) -> None:
    """Answer the demo task with an agent whose tools are the code-mode tools."""
    settings = Settings.model_validate({"state": {"memory": True}})
    async with demo_toolbox(settings=settings) as box:
        agent = Agent(
            name="help desk",
            instructions="You answer questions about the company's help desk. " + codemode_instructions(box),
            tools=codemode_tools(box),
            model=model,
        )
        result = await decided(box, agent, await Runner.run(agent, DEMO_TASK))
    print(result.final_output)
    calls = [item.raw_item.name for item in result.new_items if item.type == "tool_call_item"]
    print(f"tool calls: {', '.join(str(c) for c in calls)}")


if __name__ == "__main__":
    log_to_stderr(logging.WARNING)  # stdout is the answer; toolcode logs each server it connects
    if len(sys.argv) > 1:
        anyio.run(main, sys.argv[1])
    else:
        set_tracing_disabled(True)  # the scripted run has nothing to report to OpenAI's tracing
        anyio.run(main, ScriptedModel())
