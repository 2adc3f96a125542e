"""What every door holds: its tools over one toolbox, and the one call that maps a model's call to the core.

The MCP server, the Pydantic AI toolset and the OpenAI Agents function tools each build one
:class:`Door` and translate its :class:`Definition` s and :class:`~toolcode._metatools.MetaToolReply` s
into their framework's types, and nothing more. :meth:`Door.call` is the boundary where a failure
becomes a reply, for the code-mode tools and the exposed upstream tools alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolcode._app import Toolbox
from toolcode._descriptions import DESCRIPTIONS
from toolcode._exposed import MCP_NAME_MAX, Exposed, call_exposed, exposed_description, exposed_tools
from toolcode._metatools import PERSON_TOOLS, MetaToolReply, call_metatool, failure_reply, input_schema, parse_arguments
from toolcode.calls import Asker
from toolcode.exceptions import InvalidArgumentsError, ToolCodeError, clip
from toolindex import Tool
from toolindex.log import get_logger

__all__ = ["Definition", "Door"]

log = get_logger("toolcode.door")


@dataclass(frozen=True, slots=True)
class Definition:
    """One tool as a door lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    person: bool = False
    """A person's decision (:data:`~toolcode._metatools.PERSON_TOOLS`)."""
    tool: Tool | None = None
    """The upstream tool, for an exposed one."""


class Door:
    """A door's tools over a toolbox: the code-mode tools it offers, under the operator's ceilings, and those exposed.

    Args:
        toolbox: The toolbox (its lifetime is the host's).
        tools: Code-mode tools to offer (default: the config's ``toolcode.tools``).
        expose: Patterns of upstream tools to offer directly as well (default: the config's ``toolcode.expose``).
        names: ``(longest name, punctuation allowed besides letters and digits)`` of the door's tool names.

    Raises:
        ConfigurationError: If ``tools`` names a tool that is not a code-mode tool.
    """

    def __init__(
        self,
        toolbox: Toolbox,
        tools: Sequence[str] | None = None,
        expose: Sequence[str] | None = None,
        names: tuple[int, str] = (MCP_NAME_MAX, "_.-"),
    ) -> None:
        settings = toolbox.settings
        if tools is not None:
            settings = settings.model_copy(update={"tools": tuple(tools)})
        self.names = settings.meta_tools()
        self.patterns = tuple(expose) if expose is not None else settings.expose
        # The model picks its own limits: the operator's ceilings apply at every door.
        self.codemode = toolbox.codemode.with_ceilings(settings.max_limits)
        self.meta = [Definition(n, DESCRIPTIONS[n], input_schema(n), n in PERSON_TOOLS) for n in self.names]
        self._rules = names
        self._version: int | None = None
        self._reported: set[str] = set()
        self.current = Exposed({}, [])
        """The exposed tools as last read (with the collisions found)."""

    def exposed(self) -> dict[str, Tool]:
        """The exposed tools by published name, read again when the catalog changed (new collisions logged once)."""
        version = self.codemode.services.index.version
        if version != self._version:
            max_name, punctuation = self._rules
            self.current = exposed_tools(
                self.codemode, self.patterns, reserved=self.names, max_name=max_name, punctuation=punctuation
            )
            self._version = version
            for c in self.current.collisions:
                if c not in self._reported:
                    self._reported.add(c)
                    log.warning("door.expose_collision", detail=c)
        return self.current.tools

    def definitions(self) -> list[Definition]:
        """Every tool this door lists now: the code-mode tools, then the exposed ones in name order."""
        exposed = [Definition(k, exposed_description(t), t.input_schema, tool=t) for k, t in self.exposed().items()]
        return [*self.meta, *exposed]

    async def call(
        self, name: str, args: object, *, caller: str | None = None, ask: Asker | None = None, **hooks: Any
    ) -> MetaToolReply:
        """A model's call of one of this door's tools, with its arguments as sent (a mapping or JSON text).

        Args:
            name: The tool (a code-mode tool this door offers, or an exposed one).
            args: The arguments, as the framework handed them over.
            caller: Who the call is for (sessions, paused runs and stored results are the caller's).
            ask: Asks a person about direct calls the policy asks for (``None``: they fail with
                ``approval_required``).
            **hooks: Progress listeners, passed to :func:`~toolcode._metatools.call_metatool`.

        Returns:
            The reply; any failure is a reply with ``error`` set (the one error shape), never an exception.
        """
        try:
            arguments = parse_arguments(args)
            if name in self.names:
                reply = await call_metatool(self.codemode, name, arguments, caller=caller, ask=ask, **hooks)
            elif (tool := self.exposed().get(name)) is not None:
                reply = await call_exposed(self.codemode, tool, arguments, caller=caller, ask=ask)
            else:
                known = ", ".join([*self.names, *self.current.tools][:30])
                raise InvalidArgumentsError("name", f"unknown tool {clip(name)!r}; this server has: {known}")
        except ToolCodeError as exc:
            reply = failure_reply(exc, self.codemode)
        if reply.error is not None:
            log.info("door.tool_failed", tool=name, code=reply.error.code)
        return reply
