"""Code mode for Pydantic AI agents, and Pydantic AI toolsets as a toolrun provider.

:class:`CodeModeToolset` gives an ``Agent`` the code-mode tools (``search_tools``,
``describe_tool``, ``execute_code``, ``run_tool``, ``resume_execution`` by default; the config's
``toolcode.tools`` or ``tools=`` choose others) over a :class:`~toolcode.Toolbox`::

    from pydantic_ai import Agent
    from toolcode.integrations.pydantic_ai import CodeModeToolset

    agent = Agent("anthropic:claude-sonnet-4-5", toolsets=[CodeModeToolset.from_config("mcp.json")])
    async with agent:  # connects the servers once for every run inside
        result = await agent.run("Which of my repositories have open issues labelled 'bug'?")

It is the MCP server's door in Pydantic AI's terms (:class:`toolcode._door.Door`). Every failure —
a mistake the model fixes by calling again (malformed arguments, an unknown tool, a snippet that
fails its type check) as well as a tool that failed at run time — is ``ToolFailed`` with the text
the model would read over MCP: no retry is spent, so a model's mistakes never end ``agent.run``
(bound long runs with Pydantic AI's ``UsageLimits``).

:class:`ToolsetProvider` goes the other way: the function tools of a Pydantic AI toolset
become a namespace that snippets call like any other tools::

    box = Toolbox.from_config("mcp.json", extra_backends=[toolset_backend(my_toolset, "app")])
"""

from __future__ import annotations

import base64
import inspect
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from functools import partial
from typing import Any, Self

import anyio
from pydantic import ValidationError

try:
    from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed, UserError
    from pydantic_ai.messages import BinaryContent, ModelMessage, ModelResponse, ToolReturn
    from pydantic_ai.models import Model
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.tools import RunContext, ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
    from pydantic_ai.usage import RunUsage
except ImportError as _missing:  # the extra is not installed (or is too old)
    raise ImportError(
        f"toolcode.integrations.pydantic_ai needs Pydantic AI: pip install 'toolcode[pydantic-ai]' ({_missing})"
    ) from _missing

from toolcode._app import Toolbox
from toolcode._door import Door, caller_of
from toolcode._metatools import INSTRUCTIONS, PERSON_TOOLS, as_object, instructions
from toolcode._settings import Settings, StateSettings
from toolcode.exceptions import MAX_MESSAGE, clip
from toolindex.log import get_logger
from toolrun import BackendResult, ProviderBackend

__all__ = ["CallerOf", "CodeModeToolset", "ToolsetProvider", "toolset_backend"]

log = get_logger("toolcode.integrations.pydantic_ai")


class _AsSent:
    """An argument validator that never fails: Pydantic AI would spend a retry; the door checks them, as over MCP."""

    def validate_json(self, input: str | bytes | bytearray, **kwargs: Any) -> dict[str, Any]:
        return {_AS_SENT: input}

    def validate_python(self, input: Any, **kwargs: Any) -> dict[str, Any]:
        # An object that names the key itself is handed on whole, as sent: the door reads the
        # arguments the host saw (``args_as_dict``), never a second set hidden under that key.
        args = as_object(input)
        return args if args is not None and _AS_SENT not in args else {_AS_SENT: input}


_AS_SENT = "\x00toolcode:arguments"  # no JSON name clashes with it

CallerOf = str | Callable[[RunContext[Any]], str] | None
"""Who the calls are for: a fixed name, or a function of the run context (e.g. of ``ctx.deps``) that
names each call's user (a non-empty string; anything else, ``None`` included, refuses the call);
``None`` itself: the local caller, the host's own."""


class CodeModeToolset(AbstractToolset[Any]):
    """The code-mode tools as a Pydantic AI toolset over a :class:`~toolcode.Toolbox`.

    Lifecycle: given a toolbox, the toolset uses it as it is (connect and close it yourself).
    Given a function that builds one (or made by :meth:`from_config`), the toolset owns it: the
    first ``__aenter__`` (``async with agent:``, or each run) builds and connects it, the last
    ``__aexit__`` closes it, and the next enter builds a new one. Enter and exit it from the same
    task (Pydantic AI does).

    ``resume_execution`` and ``approve_tools`` need the host's approval (Pydantic AI's deferred
    tools): list ``DeferredToolRequests`` among the agent's output types when they are offered.
    Upstream tools matching ``expose`` are offered as ``toolcode serve`` publishes them, their
    images as ``BinaryContent``; the list follows the catalog.

    Args:
        toolbox: A toolbox, or a function that builds a new (unconnected) one each time.
        tools: Code-mode tools to offer (default: the toolbox config's ``toolcode.tools``,
            else :data:`toolcode.server.DEFAULT_TOOLS`).
        caller: Who the calls are for (sessions, paused runs and stored results are the caller's;
            default: ``None``, the local caller), or a function of the run context that names
            each call's user: its ``None`` (or any non-string) is a ``ConfigurationError`` raised
            by the call, never the local caller.
        max_retries: The tools' retry budget in Pydantic AI (default: the agent's); the toolset
            never spends it, only the ``ModelRetry`` s of your own hooks around these tools do.
        id: The toolset's id, unique among the agent's toolsets (durable execution needs one).
        expose: Patterns of upstream tools to offer directly as well (``namespace:name``, ``*``
            allowed; default: the toolbox config's ``toolcode.expose``).

    Raises:
        ConfigurationError: If ``tools`` names a tool that is not a code-mode tool.
    """

    def __init__(
        self,
        toolbox: Toolbox | Callable[[], Toolbox],
        *,
        tools: Sequence[str] | None = None,
        caller: CallerOf = None,
        max_retries: int | None = None,
        id: str | None = None,
        expose: Sequence[str] | None = None,
    ) -> None:
        self._source = toolbox
        self._tools = tuple(tools) if tools is not None else None
        if self._tools is not None:
            Settings(tools=self._tools).meta_tools()  # names a wrong tool now, not at the first run
        self._caller = caller
        self.max_retries = max_retries
        self._id = id
        self._lock = anyio.Lock()
        self._entered = 0
        self._stack: AsyncExitStack | None = None
        self._expose = tuple(expose) if expose is not None else None
        self._bound: tuple[Toolbox, Door] | None = None
        if isinstance(toolbox, Toolbox):
            self._bound = (toolbox, Door(toolbox, self._tools, self._expose))

    @classmethod
    def from_config(
        cls,
        config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        *,
        engine: str | None = None,
        strict: bool = False,
        settings: Settings | None = None,
        state: StateSettings | None = None,
        tools: Sequence[str] | None = None,
        caller: CallerOf = None,
        max_retries: int | None = None,
        id: str | None = None,
        expose: Sequence[str] | None = None,
    ) -> CodeModeToolset:
        """A toolset that owns a toolbox built from a config file (see :meth:`Toolbox.from_config`).

        For backends given in code, pass a function instead: ``CodeModeToolset(lambda:
        Toolbox.from_config(path, extra_backends=[...]))`` (a closed backend is not reopened).

        Args:
            config: Path to the ``mcpServers`` JSON file, its parsed mapping, or ``None``.
            engine: Engine name (overrides the config's ``toolcode.engine``).
            strict: Fail entering when a server cannot start.
            settings: Settings instead of the config's ``toolcode`` section.
            state: Where state lives, instead of the settings' ``state``.
            tools: As for the class.
            caller: As for the class.
            max_retries: As for the class.
            id: As for the class.
            expose: As for the class.

        Returns:
            The toolset (nothing is started until it is entered).

        Raises:
            ConfigurationError: If ``tools`` names a tool that is not a code-mode tool.
        """
        build = partial(Toolbox.from_config, config, engine=engine, strict=strict, settings=settings, state=state)
        return cls(build, tools=tools, caller=caller, max_retries=max_retries, id=id, expose=expose)

    def _current(self) -> tuple[Toolbox, Door]:
        if self._bound is None:
            raise UserError(f"{self.label} builds its toolbox when entered: use `async with agent:` or run the agent")
        return self._bound

    @property
    def id(self) -> str | None:
        """The id given to the constructor."""
        return self._id

    @property
    def toolbox(self) -> Toolbox:
        """The toolbox in use.

        Raises:
            UserError: If the toolset owns its toolbox and is not entered.
        """
        return self._current()[0]

    async def __aenter__(self) -> Self:
        async with self._lock:
            if self._entered == 0 and not isinstance(self._source, Toolbox):
                async with AsyncExitStack() as stack:
                    box = self._source()
                    stack.push_async_callback(box.aclose)  # also after a failed connect (strict)
                    await box.connect()
                    bound = (box, Door(box, self._tools, self._expose))
                    log.info("pydantic_ai.toolbox_ready", toolset=self.label, tools=len(box.index))
                    # Kept only once everything succeeded; a failure above closes the toolbox.
                    self._stack = stack.pop_all()
                self._bound = bound
            self._entered += 1
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        async with self._lock:
            if self._entered == 0:
                raise UserError(f"{self.label} was exited more times than it was entered")
            self._entered -= 1
            if self._entered == 0 and self._stack is not None:
                stack, self._stack, self._bound = self._stack, None, None
                await stack.aclose()
        return None

    async def get_instructions(self, ctx: RunContext[Any]) -> str | None:
        """The code-mode instructions (warning when the engine is no sandbox), as ``toolcode serve`` gives them."""
        return instructions(self._bound[0].codemode) if self._bound is not None else INSTRUCTIONS

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The code-mode tools, with the descriptions and input schemas of every door, and the exposed tools.

        Raises:
            UserError: If the toolset owns its toolbox and is not entered.
        """
        door = self._current()[1]
        retries = self.max_retries if self.max_retries is not None else ctx.max_retries
        validator = _AsSent()
        return {
            d.name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(name=d.name, description=d.description, parameters_json_schema=d.input_schema),
                max_retries=retries,
                args_validator=validator,
            )
            for d in door.definitions()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Call the tool through the door.

        Returns:
            A ``ToolReturn``: ``return_value`` is the reply text, ``metadata`` the result as JSON
            (the MCP server's ``structuredContent``).

        Raises:
            ToolFailed: For any failure, with the reply text (the model may call again; no retry is spent).
            ApprovalRequired: For ``resume_execution`` / ``approve_tools`` not yet approved; its
                ``metadata`` says what the person decides (:meth:`Door.asked`: the paused calls, whole).
            UserError: If the toolset owns its toolbox and is not entered.
            ConfigurationError: If the caller function names no user (``None``, a non-string):
                the call is not made.
        """
        door = self._current()[1]
        caller = caller_of(self._caller, ctx, "Pydantic AI")  # before a person is asked about a call that cannot run
        sent = tool_args[_AS_SENT] if tool_args.keys() == {_AS_SENT} else tool_args
        if name in PERSON_TOOLS and not ctx.tool_call_approved:
            # The arguments name an id the model picked: the host's person is shown what it decides.
            raise ApprovalRequired(metadata=await door.asked(name, sent, caller=caller))
        reply = await door.call(name, sent, caller=caller)
        if reply.is_error:
            raise ToolFailed(reply.text)
        images = [BinaryContent(data=base64.b64decode(data), media_type=mime) for mime, data in reply.images]
        return ToolReturn(return_value=reply.text, content=images or None, metadata=reply.structured())


def _no_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise UserError("a Pydantic AI tool called from code mode has no model: pass model= to ToolsetProvider")


class ToolsetProvider:
    """A Pydantic AI toolset as a toolrun :class:`~toolrun.Provider`: snippets call its tools.

    A snippet's call has no agent run, so each call gets a minimal ``RunContext``: ``deps``,
    ``model`` (by default one that refuses every request), fresh usage, the tool's name and a call
    id, ``retry`` 0; the messages, the prompt and usage limits are empty. A ``ModelRetry`` or
    ``ToolFailed`` is a tool failure the snippet can catch; nobody retries it. Tools that need
    approval or run outside the agent are not offered (see ``skipped``): toolcode's policy asks
    about calls instead. The provider does not enter the toolset: enter one that holds
    connections yourself, for as long as the toolbox is used.

    Args:
        toolset: Any Pydantic AI toolset (e.g. a ``FunctionToolset``).
        deps: The ``ctx.deps`` every call receives.
        model: The ``ctx.model`` every call receives (default: one that refuses requests).
    """

    def __init__(self, toolset: AbstractToolset[Any], *, deps: Any = None, model: Model | None = None) -> None:
        self.toolset = toolset
        self.deps = deps
        self.model: Model = model if model is not None else FunctionModel(_no_model, model_name="toolcode-no-model")
        self._tools: dict[str, ToolsetTool[Any]] = {}
        self.skipped: dict[str, str] = {}
        """Tools not offered at the last ``list_tools``: name → why."""

    def _context(self, **fields: Any) -> RunContext[Any]:
        return RunContext(deps=self.deps, model=self.model, usage=RunUsage(), **fields)

    async def list_tools(self) -> list[dict[str, Any]]:
        """The toolset's function tools, as MCP-style tool mappings."""
        listed = await self.toolset.get_tools(self._context())
        tools: dict[str, ToolsetTool[Any]] = {}
        skipped: dict[str, str] = {}
        for name, tool in listed.items():
            kind = tool.tool_def.kind
            if kind != "function":
                skipped[name] = f"a {kind!r} tool: code mode runs only function tools"
                log.info("pydantic_ai.tool_skipped", tool=name, kind=kind)
                continue
            tools[name] = tool
        self._tools, self.skipped = tools, skipped
        return [
            {"name": n, "description": t.tool_def.description or "", "inputSchema": t.tool_def.parameters_json_schema}
            for n, t in tools.items()
        ]

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> Any:
        """Validate the arguments as Pydantic AI would, call the tool, and return its value.

        Returns:
            The tool's return value (a ``ToolReturn``'s ``return_value``), or a failed
            ``BackendResult`` carrying the tool's message.
        """
        tool = self._tools.get(name)
        if tool is None:
            return _failed(f"the toolset has no function tool {clip(name)!r}", None)
        ctx = self._context(tool_name=name, tool_call_id=f"toolcode_{uuid.uuid4().hex[:16]}", max_retries=0)
        try:
            valid: dict[str, Any] = tool.args_validator.validate_python(dict(args))
            if tool.args_validator_func is not None:
                checked = tool.args_validator_func(ctx, **valid)
                if inspect.isawaitable(checked):
                    await checked
            result = await self.toolset.call_tool(name, valid, ctx, tool)
        except ValidationError as e:
            return _failed(f"invalid arguments: {e}", e)
        except (ApprovalRequired, CallDeferred) as e:
            return _failed(f"{clip(name)} asks for approval or an external result, which code mode cannot give", e)
        except (ModelRetry, ToolFailed) as e:  # the tool's own message, without the class name
            return _failed(e.message, e)
        return result.return_value if isinstance(result, ToolReturn) else result


def _failed(message: str, error: BaseException | None) -> BackendResult:
    return BackendResult(None, ({"type": "text", "text": clip(message, MAX_MESSAGE)},), is_error=True, error=error)


def toolset_backend(
    toolset: AbstractToolset[Any],
    provider_id: str,
    *,
    namespace: str | None = None,
    deps: Any = None,
    model: Model | None = None,
) -> ProviderBackend:
    """A toolbox backend for a Pydantic AI toolset (a :class:`ToolsetProvider` in a ``ProviderBackend``).

    Args:
        toolset: The toolset.
        provider_id: The provider's id in backend references.
        namespace: The tools' namespace (default: ``provider_id``).
        deps: The ``ctx.deps`` every call receives.
        model: The ``ctx.model`` every call receives.

    Returns:
        The backend: ``Toolbox([toolset_backend(tools, "app")])`` lets snippets call ``app:<tool>``.
    """
    return ProviderBackend(provider_id, ToolsetProvider(toolset, deps=deps, model=model), namespace=namespace)
