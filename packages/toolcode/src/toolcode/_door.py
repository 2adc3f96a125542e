"""What every door holds: its tools over one toolbox, and the one call that maps a model's call to the core.

The MCP server, the Pydantic AI toolset and the OpenAI Agents function tools each build one
:class:`Door` and translate its :class:`Definition` s and :class:`~toolcode._metatools.MetaToolReply` s
into their framework's types, and nothing more. :meth:`Door.call` is the boundary where a failure
becomes a reply, for the code-mode tools and for the upstream tools a door publishes directly
(``expose``: :func:`exposed_tools` names them, :func:`call_exposed` calls them as ``run_tool`` does).
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from toolcode._app import Toolbox
from toolcode._approval_request import approval_request, named_tool, unbound_text
from toolcode._audit import tool_definition, tool_hash
from toolcode._core import CodeMode
from toolcode._metatools import (
    DESCRIPTIONS,
    PERSON_TOOLS,
    MetaToolReply,
    call_metatool,
    failure_reply,
    input_schema,
    parse_arguments,
)
from toolcode._modules import every_tool
from toolcode._outcome import definition_text, shown_to_decide, visible
from toolcode._saved_snippet import NAMESPACE as SNIPPETS_NAMESPACE
from toolcode.calls import Asker
from toolcode.exceptions import ConfigurationError, InvalidArgumentsError, ToolCodeError, clip
from toolcode.models import RunToolOutcome
from tooldocs import json_text
from toolindex import Tool
from toolindex.log import get_logger

__all__ = [
    "EXPOSED_SEPARATOR",
    "Definition",
    "Door",
    "Exposed",
    "call_exposed",
    "caller_of",
    "exposed_description",
    "exposed_tools",
    "host_caller",
]

log = get_logger("toolcode.door")

EXPOSED_SEPARATOR = "__"
"""Joins namespace and name of a directly exposed upstream tool (``github__list_issues``);
``:`` is not allowed in MCP tool names and some clients reject ``.``."""

MCP_NAME_MAX = 128
"""Longest exposed name: MCP's limit for a tool name (OpenAI's function names stop at 64)."""


_C = TypeVar("_C")


def host_caller(name: object) -> str | None:
    """Who the calls at an agent door are for when the host fixed it: the host's user ``name`` is ``user:<name>``.

    Each name a host gives is an owner of its own (sessions, saved snippets, stored results,
    paused runs), never the local user nor an HTTP token's caller, whatever it reads like;
    ``policy.operators`` may list ``user:<name>``. ``None`` — a door built without a caller —
    is the local user, the host's own, as in the CLI. A caller *function*'s answer is read by
    :func:`caller_of` instead, where ``None`` is never the local user.

    Raises:
        ConfigurationError: If ``name`` is neither a non-empty string nor ``None``.
    """
    if name is None:
        return None
    if not isinstance(name, str) or not name:
        raise ConfigurationError("caller", f"must be a non-empty string or None, got {clip(repr(name), 60)}")
    return f"user:{name}"


def caller_of(caller: str | Callable[[_C], object] | None, context: _C, door: str) -> str | None:
    """Who one call at the agent door ``door`` is for: a fixed ``caller``, or the function ``caller``'s answer.

    A fixed name (``None`` included) is read by :func:`host_caller`.

    A function names the user of each call: it must answer a non-empty string, the caller
    ``user:<name>``. Its ``None`` (a signed-out user, a missing field) is refused rather than
    taken as the local user, an operator by default: a request that names no one never runs
    with the host's own rights (fail closed; the call is not made).

    Raises:
        ConfigurationError: ``caller`` (``config_error``) if the fixed name is neither a non-empty
            string nor ``None``, or the function answers anything but a non-empty string.
    """
    if not callable(caller):
        return host_caller(caller)
    name = caller(context)
    if not isinstance(name, str) or not name:
        raise ConfigurationError(
            "caller",
            f"the {door} door's caller function must name the user of each call (a non-empty string), "
            f"got {clip(repr(name), 60)}; the call was not made (to act as the host's own user, build the "
            "tools without a caller)",
        )
    return f"user:{name}"


@dataclass(frozen=True, slots=True)
class Exposed:
    """The upstream tools a door publishes directly, beside the code-mode tools."""

    tools: dict[str, Tool]
    """Exposed name (``namespace__name``) → tool, in name order."""
    collisions: list[str]
    """Matched tools published under a name of their own (two mapped to one name, or to a
    code-mode tool's), or left out (a name the door cannot carry), each with the reason."""


def exposed_description(tool: Tool) -> str:
    """What the model reads about an exposed tool: its id, then its description."""
    return f"[{tool.id}] {tool.description}"


def _distinct(name: str, tool: Tool) -> str:
    # The same tool always gets the same suffix, whichever other tool it collides with.
    return f"{name}_{hashlib.sha256(tool.id.encode()).hexdigest()[:6]}"


def exposed_tools(
    codemode: CodeMode,
    patterns: Sequence[str],
    *,
    reserved: Collection[str] = (),
    max_name: int = MCP_NAME_MAX,
    punctuation: str = "_.-",
) -> Exposed:
    """The visible upstream tools matching ``patterns`` (``fnmatch`` on key and id), by their published names.

    Saved snippets are never exposed, whatever the pattern (``*`` included): any caller can write one.

    A tool is published as ``namespace__name``: at most ``max_name`` ASCII letters, digits and
    ``punctuation`` (MCP: ``_.-``; OpenAI function names: ``_-``). When two tools map to one such
    name (``x:y__ok`` and ``x__y:ok``), or a tool maps to a ``reserved`` name (a code-mode tool's),
    each is published as that name plus ``_`` and six hex digits of its id's digest: every matched
    tool stays reachable, under a name that does not depend on the others. ``collisions`` says
    which tools were renamed or left out, and why.
    """
    collisions: list[str] = []
    if not patterns:
        return Exposed({}, collisions)

    def valid(name: str) -> bool:
        return len(name) <= max_name and all(c.isascii() and (c.isalnum() or c in punctuation) for c in name)

    by_name: dict[str, list[Tool]] = {}
    for tool in every_tool(codemode.view()):
        if tool.namespace == SNIPPETS_NAMESPACE:
            continue  # upstream tools only: saved snippets are written by callers, not reviewed servers
        if not any(fnmatch.fnmatchcase(tool.key, p) or fnmatch.fnmatchcase(tool.id, p) for p in patterns):
            continue
        key = f"{tool.namespace}{EXPOSED_SEPARATOR}{tool.name}"
        if valid(key):
            by_name.setdefault(key, []).append(tool)
        else:
            collisions.append(f"{tool.id}: {clip(key, 80)!r} is not a valid tool name here; not exposed")
    out: dict[str, Tool] = {}
    for key, tools in by_name.items():
        if len(tools) == 1 and key not in reserved:
            out[key] = tools[0]
            continue
        why = "a code-mode tool's name" if key in reserved else " and ".join(t.id for t in tools) + " all map to it"
        for tool in tools:
            name = _distinct(key, tool)
            if not valid(name) or name in reserved or name in out:
                collisions.append(f"{tool.id}: {key!r} is taken ({why}) and {name!r} cannot be used; not exposed")
                continue
            out[name] = tool
            collisions.append(f"{tool.id} is exposed as {name!r}: {key!r} is taken ({why})")
    return Exposed(dict(sorted(out.items())), sorted(collisions))


async def call_exposed(
    codemode: CodeMode, tool: Tool, args: Mapping[str, object], *, caller: str | None = None, ask: Asker | None = None
) -> MetaToolReply:
    """Call an exposed upstream tool as ``run_tool`` does (its checks, policy and errors), keeping what it answered.

    Its text blocks are the reply text (the structured result as JSON when there are none), its
    images are ``images``, any other block (an embedded resource, audio) is its JSON in the text;
    ``run`` keeps the whole result for a door that passes it on as it came (the MCP server).

    Raises:
        ToolCodeError: If the call fails (:meth:`Door.call` makes it a reply).
    """
    result = await codemode.run_result(tool.id, dict(args), ask=ask, caller=caller)
    texts: list[str] = []
    images: list[tuple[str, str]] = []
    for block in result.content:
        kind, data = block.get("type"), block.get("data")
        if kind == "image" and isinstance(data, str) and _is_base64(data):
            mime = str(block.get("mimeType") or "image/png")
            images.append((mime, data))
            texts.append(f"[image {len(images)}: {clip(mime, 80)}]")
        elif kind == "image":
            texts.append("[an image whose data is not base64: left out]")
        else:
            texts.append(str(block.get("text", "")) if kind == "text" else json_text(block))
    text = "\n".join(texts) if result.content else json_text(result.structured)
    outcome = RunToolOutcome(tool_id=result.tool_id, value=result.value, duration_ms=round(result.duration_ms, 3))
    return MetaToolReply(text, outcome, images=tuple(images), run=result)


def _is_base64(data: str) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


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

    ``tools`` and ``expose`` default to the config's ``toolcode.tools`` and ``toolcode.expose``;
    ``names`` is ``(longest name, punctuation allowed besides letters and digits)`` of the door's tool names.

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
        self.codemode = toolbox.codemode.with_ceilings(settings.ceilings())
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

    async def asked(self, name: str, args: object, *, caller: str | None = None) -> dict[str, Any]:
        """What a person approving a call of a person's tool (:data:`PERSON_TOOLS`) decides, to show them.

        The arguments alone name an execution id the model picked: ``resume_execution`` gets the
        calls that run waits to make, whole (``pending``, with the code of the saved snippets they
        cover once, by digest: ``snippet_code``), and the question the other doors ask
        about them (``question``, :func:`~toolcode._outcome.shown_to_decide`); ``approve_tools`` each
        definition it names, whole, as it is now (``tools``, ``digests``: id → digest; a digest that
        is not the definition now is said to be refused). A call that would decide nothing says so.
        """
        try:
            arguments = parse_arguments(args)
        except ToolCodeError as exc:
            return {"tool": name, "question": f"nothing is decided: {exc}"}
        if name == "approve_tools":
            return {"tool": name, **self._approval_asked(arguments.get("tools"))}
        execution_id, decision = arguments.get("execution_id"), arguments.get("decision")
        out = await self.codemode.paused_outcome(execution_id, caller)
        head = {"tool": name, "execution_id": execution_id, "decision": decision}
        if out.approval is None:
            why = out.error.message if out.error is not None else "it is not paused"
            return head | {"question": f"nothing is decided: {visible(why)}"}
        a = out.approval
        question, _ = shown_to_decide(a.pending, a.snippet_code)
        pending = [p.model_dump(mode="json") for p in a.pending]
        shown = {"pending": pending, "snippet_code": a.snippet_code, "line": a.line}
        return head | shown | {"question": f"{decision}:\n{question}"}

    def _approval_asked(self, tools: object) -> dict[str, Any]:
        """What approving an ``approve_tools`` call decides: each definition it names, whole, as it is now."""
        try:
            bound, unbound = approval_request(tools)
            if unbound:
                blocked = self.codemode.quarantined_tools().tools
                return {"question": f"nothing is decided: {visible(unbound_text(unbound, blocked))}"}
        except ToolCodeError as exc:
            return {"question": f"nothing is decided: {visible(str(exc))}"}
        parts: list[str] = []
        shown: dict[str, str] = {}
        for tool_id, digest in bound.items():
            if (tool := named_tool(self.codemode.services.index, tool_id)) is None:
                parts.append(f"{tool_id}: no longer in the catalog (the approval would be refused)")
            elif (now := tool_hash(tool)) != digest:
                parts.append(
                    f"{tool_id}: its definition changed since it was shown (digest named: {digest}, now: {now}): "
                    "refused"
                )
            else:
                shown[tool_id] = digest
                parts.append(f"{tool_id} (digest: {digest}):\n{definition_text(tool_definition(tool))}")
        head = "approve these definitions of quarantined tools" if shown else "nothing is decided"
        return {"tools": list(shown), "digests": shown, "question": visible(f"{head}:\n" + "\n\n".join(parts))}

    async def call(
        self, name: str, args: object, *, caller: str | None = None, ask: Asker | None = None, **hooks: Any
    ) -> MetaToolReply:
        """A model's call of one of this door's tools, with its arguments as sent (a mapping or JSON text).

        ``caller`` is who the call is for (sessions, paused runs and stored results are the
        caller's); ``ask`` asks a person about direct calls the policy asks for (``None``: they fail
        with ``approval_required``); ``hooks`` are :func:`~toolcode._metatools.call_metatool`'s listeners.

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
