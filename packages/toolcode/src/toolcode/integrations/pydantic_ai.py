"""Code mode for Pydantic AI agents, and Pydantic AI toolsets as a toolrun provider.

:class:`CodeModeToolset` gives an ``Agent`` the code-mode tools (``search_tools``,
``describe_tool``, ``execute_code``, ``run_tool``, ``resume_execution`` by default; the config's
``toolcode.tools`` or ``tools=`` choose others) over a :class:`~toolcode.Toolbox`::

    from pydantic_ai import Agent
    from toolcode.integrations.pydantic_ai import CodeModeToolset

    agent = Agent("anthropic:claude-sonnet-4-5", toolsets=[CodeModeToolset.from_config("mcp.json")])
    async with agent:  # connects the servers once for every run inside
        result = await agent.run("Which of my repositories have open issues labelled 'bug'?")

It is the MCP server's door in Pydantic AI's terms: the same descriptions, input schemas, reply
texts and error codes (:mod:`toolcode._metatools`). Every failure — a mistake the model fixes by
calling again (invalid or malformed arguments, an unknown tool, a snippet that does not parse or
fails its type check) as well as a tool that failed at run time — is ``ToolFailed`` with the text
the model would read over MCP: the model sees it and tries again, and no retry is spent, so a
model's mistakes never end ``agent.run`` (bound long runs with Pydantic AI's ``UsageLimits``).

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
from typing import Any, Self, cast

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
from toolcode._core import CodeMode
from toolcode._descriptions import DESCRIPTIONS, INSTRUCTIONS
from toolcode._metatools import (
    PERSON_TOOLS,
    MetaToolReply,
    call_exposed,
    call_metatool,
    exposed_description,
    exposed_tools,
    failure_reply,
    input_schema,
    instructions,
    parse_arguments,
)
from toolcode._settings import Settings, StateSettings
from toolcode.exceptions import MAX_MESSAGE, InvalidArgumentsError, clip
from toolindex import Tool
from toolindex.log import get_logger
from toolrun import BackendResult, ProviderBackend

__all__ = ["CallerOf", "CodeModeToolset", "ToolsetProvider", "toolset_backend"]

log = get_logger("toolcode.integrations.pydantic_ai")

_TOOL_FAILURES = (ModelRetry, ToolFailed)
"""What a Pydantic AI tool raises to report its own failure to the model (each has ``message``)."""

_RAW_ARGUMENTS = "\x00toolcode:arguments"
"""Key under which :class:`_Arguments` hands over arguments it did not parse (no JSON name clashes with it)."""


class _Arguments:
    """The code-mode tools' argument validator: never fails, so Pydantic AI spends no retry on arguments.

    The door checks argument names and the core checks values, as over MCP (the same messages);
    arguments Pydantic AI would refuse (text that is not JSON, JSON that is not an object) reach
    :meth:`CodeModeToolset.call_tool` as they were sent and fail there as ``invalid_arguments``.
    """

    def validate_json(self, input: str | bytes | bytearray, **kwargs: Any) -> dict[str, Any]:
        return {_RAW_ARGUMENTS: input if isinstance(input, str) else bytes(input).decode("utf-8", errors="replace")}

    def validate_python(self, input: Any, **kwargs: Any) -> dict[str, Any]:
        if isinstance(input, dict) and all(isinstance(k, str) for k in cast(dict[Any, Any], input)):
            return cast(dict[str, Any], input)
        return {_RAW_ARGUMENTS: input}


def _arguments(tool_args: dict[str, Any]) -> dict[str, Any]:
    """The arguments the model sent, as an object (:class:`_Arguments` left them as they came).

    Raises:
        InvalidArgumentsError: If they are not a JSON object (field ``arguments``).
    """
    if _RAW_ARGUMENTS not in tool_args:
        return tool_args
    raw = tool_args[_RAW_ARGUMENTS]
    if isinstance(raw, str):
        return parse_arguments(raw)
    raise InvalidArgumentsError("arguments", "must be a JSON object")


CallerOf = str | Callable[[RunContext[Any]], str | None] | None
"""Who the calls are for: a fixed name, or a function of the run context (e.g. of ``ctx.deps``)."""

_Bound = tuple[Toolbox, CodeMode, tuple[str, ...], tuple[str, ...]]
"""The toolbox in use, its core with the operator's ceilings, the code-mode tools offered and the
``expose`` patterns."""


class CodeModeToolset(AbstractToolset[Any]):
    """The code-mode tools as a Pydantic AI toolset over a :class:`~toolcode.Toolbox`.

    Lifecycle: given a toolbox, the toolset uses it as it is (connect and close it yourself).
    Given a function that builds one (or made by :meth:`from_config`), the toolset owns it: the
    first ``__aenter__`` (``async with agent:``, or each run) builds and connects it, the last
    ``__aexit__`` closes it, and the next enter builds a new one. Enter and exit it from the same
    task (Pydantic AI does).

    ``resume_execution`` and ``approve_tools`` need the host's approval (Pydantic AI's deferred
    tools): list ``DeferredToolRequests`` among the agent's output types when they are offered.

    Upstream tools matching ``expose`` are offered directly as well, as ``toolcode serve`` publishes
    them: named ``namespace__name``, described with their id, called as ``run_tool`` calls them
    (the same policy, limits and errors), answering with their text and their images (as
    ``BinaryContent`` beside the return). The list follows the catalog: when the agent asks for
    the tools after the catalog changed, it is read again.

    Args:
        toolbox: A toolbox, or a function that builds a new (unconnected) one each time.
        tools: Code-mode tools to offer (default: the toolbox config's ``toolcode.tools``,
            else :data:`toolcode.server.DEFAULT_TOOLS`).
        caller: Who the calls are for: sessions, paused runs and stored results are the
            caller's (default: ``None``, the local caller, as in the CLI and ``toolcode serve``
            over stdio).
        max_retries: The tools' retry budget in Pydantic AI (default: the agent's). The toolset
            itself never spends it (its failures are ``ToolFailed``); it counts only the
            ``ModelRetry`` s that your own hooks or capabilities raise around these tools.
        id: The toolset's id, unique among the agent's toolsets (durable execution needs one).
        expose: Patterns of upstream tools to offer directly as well (``namespace:name``,
            ``*`` allowed; default: the toolbox config's ``toolcode.expose``, else none).

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
        self._choice = tuple(tools) if tools is not None else None
        if self._choice is not None:
            Settings(tools=self._choice).meta_tools()  # names a wrong tool now, not at the first run
        self._caller = caller
        self.max_retries = max_retries
        self._id = id
        self._lock = anyio.Lock()
        self._entered = 0
        self._stack: AsyncExitStack | None = None
        self._expose = tuple(expose) if expose is not None else None
        self._bound: _Bound | None = None
        self._exposed: dict[str, Tool] = {}
        self._exposed_at: tuple[CodeMode, int, tuple[str, ...]] | None = None  # (core, catalog version, patterns)
        self._reported: set[str] = set()
        if isinstance(toolbox, Toolbox):
            self._bound = self._bind(toolbox)

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
        Toolbox.from_config(path, extra_backends=[...]))`` (new backends each time: a closed
        backend is not reopened).

        Args:
            config: Path to the ``mcpServers`` JSON file, its parsed mapping, or ``None``.
            engine: Engine name (overrides the config's ``toolcode.engine``).
            strict: Fail entering when a server cannot start.
            settings: Settings instead of the config's ``toolcode`` section.
            state: Where state lives, instead of the settings' ``state``.
            tools: Code-mode tools to offer.
            caller: Who the calls are for.
            max_retries: The tools' retry budget in Pydantic AI (the toolset never spends it).
            id: The toolset's id.
            expose: Patterns of upstream tools to offer directly as well.

        Returns:
            The toolset (nothing is started until it is entered).

        Raises:
            ConfigurationError: If ``tools`` names a tool that is not a code-mode tool.
        """
        build = partial(Toolbox.from_config, config, engine=engine, strict=strict, settings=settings, state=state)
        return cls(build, tools=tools, caller=caller, max_retries=max_retries, id=id, expose=expose)

    def _bind(self, box: Toolbox) -> _Bound:
        settings = box.settings
        if self._choice is not None:
            settings = settings.model_copy(update={"tools": self._choice})
        expose = self._expose if self._expose is not None else settings.expose
        # The model picks its own limits: the operator's ceilings apply, as at the MCP door.
        return box, box.codemode.with_ceilings(settings.max_limits), settings.meta_tools(), expose

    def _current(self) -> _Bound:
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
                    bound = self._bind(box)
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
                self._exposed, self._exposed_at = {}, None
                await stack.aclose()
        return None

    async def get_instructions(self, ctx: RunContext[Any]) -> str | None:
        """The code-mode instructions (warning when the engine is no sandbox), as ``toolcode serve`` gives them."""
        return instructions(self._bound[1]) if self._bound is not None else INSTRUCTIONS

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The code-mode tools, with the descriptions and input schemas of every door, and the exposed tools.

        Raises:
            UserError: If the toolset owns its toolbox and is not entered.
        """
        _, codemode, names, expose = self._current()
        retries = self.max_retries if self.max_retries is not None else ctx.max_retries
        validator = _Arguments()
        defs = [
            ToolDefinition(name=n, description=DESCRIPTIONS[n], parameters_json_schema=input_schema(n)) for n in names
        ]
        at = (codemode, codemode.services.index.version, expose)
        last = self._exposed_at
        if last is None or last[0] is not codemode or last[1:] != at[1:]:  # read again when the catalog changed
            exposed = exposed_tools(codemode, expose, reserved=names)
            self._exposed, self._exposed_at = exposed.tools, at
            for c in exposed.collisions:
                if c not in self._reported:
                    self._reported.add(c)
                    log.warning("pydantic_ai.expose_collision", toolset=self.label, detail=c)
        defs += [
            ToolDefinition(name=key, description=exposed_description(tool), parameters_json_schema=tool.input_schema)
            for key, tool in self._exposed.items()
        ]
        return {
            d.name: ToolsetTool(toolset=self, tool_def=d, max_retries=retries, args_validator=validator) for d in defs
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Run the core operation ``name`` (or the exposed tool) and return the text the model reads.

        Returns:
            A ``ToolReturn``: ``return_value`` is the reply text, ``metadata`` the result as JSON
            (what the MCP server sends as ``structuredContent``).

        Raises:
            ToolFailed: For any failure, with the reply text: the model reads it and may call
                again; no retry is spent.
            ApprovalRequired: For ``resume_execution`` / ``approve_tools`` not yet approved.
            UserError: If the toolset owns its toolbox and is not entered.
        """
        _, codemode, names, _ = self._current()
        if name in PERSON_TOOLS and not ctx.tool_call_approved:
            raise ApprovalRequired()
        caller = self._caller(ctx) if callable(self._caller) else self._caller
        exposed = self._exposed.get(name) if name not in names else None
        reply: MetaToolReply
        try:
            args = _arguments(tool_args)
        except InvalidArgumentsError as e:
            reply = failure_reply(e, codemode)
        else:
            if exposed is not None:
                reply = await call_exposed(codemode, exposed, args, caller=caller)
            else:
                reply = await call_metatool(codemode, name, args, caller=caller)
        return self._answer(name, reply)

    @staticmethod
    def _answer(name: str, reply: MetaToolReply) -> Any:
        if reply.error is not None:
            log.info("pydantic_ai.tool_failed", tool=name, code=reply.error.code)
        if reply.is_error:
            raise ToolFailed(reply.text)
        images = [BinaryContent(data=base64.b64decode(data), media_type=mime) for mime, data in reply.images]
        return ToolReturn(return_value=reply.text, content=images or None, metadata=reply.structured())


def _no_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise UserError("a Pydantic AI tool called from code mode has no model: pass model= to ToolsetProvider")


class ToolsetProvider:
    """A Pydantic AI toolset as a toolrun :class:`~toolrun.Provider`: snippets call its tools.

    Pydantic AI tools run inside an agent run and receive its ``RunContext``; a snippet's call
    has no agent run, so each call gets a minimal one: ``deps``, ``model`` (by default one that
    refuses every request), fresh usage, the tool's name and a call id, ``retry`` 0. What a
    tool reads beyond that (the messages, the prompt, usage limits) is empty. A ``ModelRetry``
    or ``ToolFailed`` the tool raises is a tool failure the snippet can catch; nobody retries it.
    Tools that need approval (``kind="unapproved"``) or run outside the agent (``"external"``)
    are not offered (see ``skipped``): let toolcode's policy ask about calls instead.

    The provider does not enter the toolset: one that holds connections must be entered by
    you for as long as the toolbox is used.

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
        except _TOOL_FAILURES as e:  # the tool's own message, without the class name
            return _failed(str(getattr(e, "message", e)), e)
        if isinstance(result, ToolReturn):
            return cast("ToolReturn[Any]", result).return_value
        return result


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
