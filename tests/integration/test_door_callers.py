"""The agent doors' callers: each name a host gives is an owner of its own.

A host names who a Pydantic AI or OpenAI Agents call is for (``caller=``, a name or a function of
the run's context). Every such name was the local user: the users of one host read each other's
sessions (and their stored results, paused runs and private snippets), and a user named ``local``
or ``token:ops`` was the local operator or an HTTP token's caller. A caller function that named no
one (``None``: a signed-out user, a missing field) was the local caller, an operator by default.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import set_tracing_disabled
from agents.tool_context import ToolContext
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcode import Settings, Toolbox
from toolcode._settings import StateSettings
from toolcode.exceptions import ConfigurationError
from toolcode.integrations.openai_agents import codemode_tools
from toolcode.integrations.pydantic_ai import CodeModeToolset

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SET = {"code": "secret = 'mine-42'\n__out = 'kept'", "session": "work"}
GET = {"code": "__out = secret", "session": "work"}


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def _settings(tmp_path: Path) -> Settings:
    return Settings(state=StateSettings(dir=str(tmp_path / "state")))


async def test_openai_agents_callers_are_owners_of_their_own(tmp_path: Path) -> None:
    async with Toolbox(settings=_settings(tmp_path)) as box:
        (execute,) = codemode_tools(box, tools=["execute_code"], caller=lambda ctx: ctx.context["user"])

        async def run(user: str | None, args: dict[str, Any]) -> str:
            ctx = ToolContext({"user": user}, tool_name="execute_code", tool_call_id="1", tool_arguments="{}")
            return str(await execute.on_invoke_tool(ctx, json.dumps(args)))

        assert await run("alice", SET) == json.dumps("kept")
        assert await run("alice", GET) == json.dumps("mine-42")  # her own session, run after run
        for other in ("bob", "local", "token:alice"):
            assert "mine-42" not in await run(other, GET), other
        (fixed,) = codemode_tools(box, tools=["execute_code"], caller="alice")
        ctx = ToolContext(None, tool_name="execute_code", tool_call_id="2", tool_arguments="{}")
        assert await fixed.on_invoke_tool(ctx, json.dumps(GET)) == json.dumps("mine-42")


def _model(args: dict[str, Any]) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("execute_code", args)])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(model)


async def test_pydantic_ai_callers_are_owners_of_their_own(tmp_path: Path) -> None:
    async with Toolbox(settings=_settings(tmp_path)) as box:
        toolset = CodeModeToolset(box, tools=["execute_code"], caller=lambda ctx: ctx.deps)

        async def run(user: str, args: dict[str, Any]) -> str:
            agent = Agent(_model(args), deps_type=str, toolsets=[toolset])
            result = await agent.run("go", deps=user)
            (part,) = [
                p
                for m in result.all_messages()
                if isinstance(m, ModelRequest)
                for p in m.parts
                if isinstance(p, ToolReturnPart)
            ]
            return str(part.content)

        assert await run("alice", SET) == json.dumps("kept")
        assert await run("alice", GET) == json.dumps("mine-42")
        for other in ("bob", "local", "token:alice"):
            assert "mine-42" not in await run(other, GET), other


async def test_a_caller_that_is_no_name_is_a_clear_error(tmp_path: Path) -> None:
    async with Toolbox(settings=_settings(tmp_path)) as box:
        (execute,) = codemode_tools(box, tools=["execute_code"], caller=lambda ctx: 42)  # type: ignore[arg-type,return-value]
        ctx = ToolContext(None, tool_name="execute_code", tool_call_id="1", tool_arguments="{}")
        with pytest.raises(ConfigurationError, match="caller"):
            await execute.on_invoke_tool(ctx, json.dumps(GET))


PRIVATE = {"name": "report", "code": "__out = 'alice-only'", "description": "alice's private report"}


async def test_an_openai_agents_caller_function_that_names_no_one_is_refused_not_the_local_operator(
    tmp_path: Path,
) -> None:
    async with Toolbox(settings=_settings(tmp_path)) as box:
        tools = {t.name: t for t in codemode_tools(box, tools=["*"], caller=lambda ctx: ctx.context["user"])}

        async def call(user: object, name: str, args: dict[str, Any]) -> str:
            ctx = ToolContext({"user": user}, tool_name=name, tool_call_id="1", tool_arguments="{}")
            return str(await tools[name].on_invoke_tool(ctx, json.dumps(args)))

        assert "error" not in await call("alice", "save_snippet", PRIVATE)
        for name, args in [("list_snippets", {}), ("list_paused", {}), ("delete_snippet", {"name": "report"})]:
            with pytest.raises(ConfigurationError, match=r"OpenAI Agents.*caller.*None") as refused:
                await call(None, name, args)
            assert refused.value.field == "caller", refused.value
        # Nothing was made for no one: alice's snippet is still hers, and the host's own user (a
        # toolset built without a caller: the local operator) still sees it.
        assert "alice-only" in await call("alice", "execute_code", {"code": "__out = run_tool('snippets:report')"})
        (local,) = codemode_tools(box, tools=["list_snippets"])
        ctx = ToolContext(None, tool_name="list_snippets", tool_call_id="2", tool_arguments="{}")
        assert "snippets:report" in str(await local.on_invoke_tool(ctx, "{}"))


async def test_a_pydantic_ai_caller_function_that_names_no_one_is_refused_not_the_local_operator(
    tmp_path: Path,
) -> None:
    async with Toolbox(settings=_settings(tmp_path)) as box:
        toolset = CodeModeToolset(box, tools=["*"], caller=lambda ctx: ctx.deps)

        async def run(user: str | None, name: str, args: dict[str, Any], on: CodeModeToolset = toolset) -> str:
            def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
                if len(messages) == 1:
                    return ModelResponse(parts=[ToolCallPart(name, args)])
                return ModelResponse(parts=[TextPart("done")])

            agent = Agent(FunctionModel(model), deps_type=str | None, toolsets=[on])
            result = await agent.run("go", deps=user)
            (part,) = [
                p
                for m in result.all_messages()
                if isinstance(m, ModelRequest)
                for p in m.parts
                if isinstance(p, ToolReturnPart)
            ]
            return str(part.content)

        assert "error" not in await run("alice", "save_snippet", PRIVATE)
        for name, args in [("list_snippets", {}), ("list_paused", {}), ("delete_snippet", {"name": "report"})]:
            with pytest.raises(ConfigurationError, match=r"Pydantic AI.*caller.*None"):
                await run(None, name, args)
        assert "alice-only" in await run("alice", "execute_code", {"code": "__out = run_tool('snippets:report')"})
        assert "snippets:report" in await run(None, "list_snippets", {}, CodeModeToolset(box, tools=["*"]))
