"""Code mode in a Pydantic AI agent: it searches, reads signatures, then does the task in one snippet.

The agent works on the demo catalog (a help desk of local functions plus the real
``mcp-server-time``); the toolset owns its toolbox, started when the agent is entered::

    uv run python examples/pydantic_ai_agent.py                       # a scripted model: no network, no key
    uv run python examples/pydantic_ai_agent.py anthropic:claude-sonnet-4-5   # a real model (its API key set)

The scripted model plays the part of an LLM, so the example runs anywhere (the test suite runs it).
"""

from __future__ import annotations

import json
import logging
import sys

import anyio
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcode import Settings
from toolcode.demo import DEMO_SNIPPET, DEMO_TASK, demo_toolbox
from toolcode.integrations.pydantic_ai import CodeModeToolset
from toolcode.server import log_to_stderr


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """What a model does with the code-mode tools: search, describe, one execute_code, then answer."""
    turn = sum(isinstance(m, ModelResponse) for m in messages)
    if turn == 0:
        return ModelResponse(parts=[ToolCallPart("search_tools", {"query": "urgent tickets of an office"})])
    if turn == 1:
        ids = ["helpdesk:list_offices", "helpdesk:list_tickets", "time:get_current_time"]
        return ModelResponse(parts=[ToolCallPart("describe_tool", {"tool_id": ids})])
    if turn == 2:
        return ModelResponse(parts=[ToolCallPart("execute_code", {"code": DEMO_SNIPPET})])
    # The run's value is in the tool's reply text; its first line is the JSON value.
    reply = next(p for p in messages[-1].parts if isinstance(p, ToolReturnPart))
    report = json.loads(str(reply.content).splitlines()[0])
    lines = [f"{r['office']}: {r['urgent']} urgent, {'open' if r['open'] else 'closed'}" for r in report]
    return ModelResponse(parts=[TextPart("\n".join(lines))])


async def main(model: Model | str) -> None:
    """Answer the demo task with an agent whose toolset is code mode."""
    # A function that builds the toolbox: the toolset owns it (connected on enter, closed on exit).
    settings = Settings.model_validate({"state": {"memory": True}})
    toolset = CodeModeToolset(lambda: demo_toolbox(settings=settings))
    agent = Agent(model, toolsets=[toolset], instructions="You answer questions about the company's help desk.")
    async with agent:
        result = await agent.run(DEMO_TASK)
    print(result.output)
    calls = [p.tool_name for m in result.all_messages() for p in m.parts if isinstance(p, ToolCallPart)]
    print(f"tool calls: {', '.join(calls)}")


if __name__ == "__main__":
    log_to_stderr(logging.WARNING)  # stdout is the answer; toolcode logs each server it connects
    anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else FunctionModel(scripted_model))
