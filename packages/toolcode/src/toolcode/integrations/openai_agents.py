"""Code mode for the OpenAI Agents SDK: the code-mode tools as its function tools.

::

    from agents import Agent, Runner
    from toolcode import Toolbox
    from toolcode.integrations.openai_agents import codemode_instructions, codemode_tools

    async with Toolbox.from_config("mcp.json") as box:
        agent = Agent(
            name="assistant",
            instructions="You help with the user's repositories. " + codemode_instructions(box),
            tools=codemode_tools(box),
        )
        result = await Runner.run(agent, "Which of my repositories have open issues labelled 'bug'?")

It is the MCP server's door in the SDK's terms (:class:`toolcode._door.Door`): the same tools,
words and errors. A failure is the tool's output (``error [code]: message`` and a hint), never
raised, as the SDK's convention has it; ``resume_execution`` and ``approve_tools`` are
``needs_approval`` tools, a person's decisions: :func:`approval_question` says what approving one
decides (the SDK's approval item holds only the arguments the model chose, an id). Exposed upstream
tools answer with their text and
images (``ToolOutputImage``); function tools are a fixed list, so call :func:`codemode_tools`
again after the catalog changes. The toolbox's lifetime is the host's. See docs/openai-agents.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

try:
    from agents import FunctionTool, ToolApprovalItem, ToolOutputImage, ToolOutputText
    from agents.tool_context import ToolContext
except ImportError as _missing:  # the extra is not installed (or is too old)
    raise ImportError(
        f"toolcode.integrations.openai_agents needs the OpenAI Agents SDK: pip install 'toolcode[openai-agents]' "
        f"({_missing})"
    ) from _missing

from toolcode._app import Toolbox
from toolcode._door import Door, caller_of, host_caller
from toolcode._metatools import PERSON_TOOLS, instructions
from toolcode.exceptions import InvalidArgumentsError, clip

__all__ = ["CallerOf", "approval_question", "codemode_instructions", "codemode_tools"]

CallerOf = str | Callable[[ToolContext[Any]], str] | None
"""Who the calls are for: a fixed name, or a function of the tool context (e.g. of ``ctx.context``) that
names each call's user (a non-empty string; anything else, ``None`` included, refuses the call);
``None`` itself: the local caller, the host's own."""

_FUNCTION_NAMES = (64, "_-")  # a function tool's name: ^[a-zA-Z0-9_-]{1,64}$


def codemode_instructions(toolbox: Toolbox) -> str:
    """The instructions that go with the code-mode tools (the MCP server's), to add to the agent's own.

    Args:
        toolbox: The toolbox the tools run on.

    Returns:
        A short paragraph: search, describe, then one ``execute_code`` (and a warning when the
        engine is not a sandbox).
    """
    return instructions(toolbox.codemode)


def codemode_tools(
    toolbox: Toolbox,
    *,
    tools: Sequence[str] | None = None,
    caller: CallerOf = None,
    expose: Sequence[str] | None = None,
) -> list[FunctionTool]:
    """The code-mode tools as Agents SDK function tools over a toolbox.

    Args:
        toolbox: The toolbox (connected by the host before the agent runs, closed after).
        tools: Code-mode tools to offer (default: the config's ``toolcode.tools``, else
            :data:`toolcode.server.DEFAULT_TOOLS`).
        caller: Who the calls are for: sessions, paused runs and stored results are the
            caller's (default: ``None``, the local caller, as in the CLI). A function of the
            ``ToolContext`` must name each call's user: its ``None`` (or any non-string) is a
            ``ConfigurationError`` raised by the call, never the local caller.
        expose: Patterns of upstream tools to offer directly as well (``namespace:name``,
            ``*`` allowed; default: the config's ``toolcode.expose``, else none).

    Returns:
        One ``FunctionTool`` per code-mode tool, then one per exposed tool (not in strict mode:
        ``args`` and ``input`` take any JSON).

    Raises:
        ConfigurationError: If ``tools`` names a tool that is not a code-mode tool (and, from a
            call, if its caller is no name: see ``caller``).
    """
    door = Door(toolbox, tools, expose, _FUNCTION_NAMES)
    return [
        FunctionTool(
            name=d.name,
            description=d.description,
            params_json_schema=d.input_schema,
            on_invoke_tool=partial(_invoke, door, d.name, caller),
            strict_json_schema=False,
            needs_approval=d.person,
        )
        for d in door.definitions()
    ]


async def _invoke(
    door: Door, name: str, caller: CallerOf, ctx: ToolContext[Any], input_json: str
) -> str | list[ToolOutputText | ToolOutputImage]:
    """One call: the reply text; with the images an exposed tool answered with, the text and the images."""
    reply = await door.call(name, input_json, caller=caller_of(caller, ctx, "OpenAI Agents"))
    if reply.images:
        images = [ToolOutputImage(image_url=f"data:{mime};base64,{data}") for mime, data in reply.images]
        return [ToolOutputText(text=reply.text), *images]
    return reply.text


async def approval_question(toolbox: Toolbox, item: ToolApprovalItem, *, caller: str | None = None) -> dict[str, Any]:
    """What approving one of a run's interruptions decides, to show the person before they approve it.

    The SDK's approval item holds the model's arguments only: for ``resume_execution``, an
    ``execution_id`` the model picked among the caller's paused runs, and a decision. This reads
    that run as it waits (:meth:`Door.asked <toolcode._door.Door.asked>`, what the Pydantic AI
    door puts in its approval's ``metadata``): the calls it would make, whole, and the question the
    other doors ask about them, with the code of each saved snippet the approval covers.

    Args:
        toolbox: The toolbox the tools run on.
        item: One of ``result.interruptions``: a call of ``resume_execution`` or ``approve_tools``.
        caller: Who the tools' calls are for: the name given to :func:`codemode_tools`, or the one its
            caller function names for this run's user (``None``: the local caller, the host's own).

    Returns:
        ``question``: the text to show (invisible characters written out); ``pending``: the calls
        approving lets through (tool, arguments, tier, why asked, the saved snippets' code), with
        ``execution_id``, ``decision`` and ``line``; for ``approve_tools``, ``tools``: the blocked
        tools its patterns match now. A call that would decide nothing (an id that is not paused,
        arguments that are not JSON) has only a ``question`` that starts ``nothing is decided: ``.

    Raises:
        InvalidArgumentsError: If ``item`` is not a call of ``resume_execution`` or ``approve_tools``.
        ConfigurationError: If ``caller`` is neither a non-empty string nor ``None``.
    """
    name = item.name
    if name not in PERSON_TOOLS:
        raise InvalidArgumentsError(
            "item",
            f"{clip(repr(name), 80)} is not a call of {' or '.join(sorted(PERSON_TOOLS))}: toolcode asks nothing",
        )
    return await Door(toolbox).asked(name, item.arguments or "{}", caller=host_caller(caller))
