"""The code-mode tools as every door offers them to a model: definitions, one call, one reply text.

The MCP server (:mod:`toolcode.server`) and the agent-framework integrations
(:mod:`toolcode.integrations`) are thin doors over the same pieces: each tool's description
(:data:`~toolcode._descriptions.DESCRIPTIONS`), its input schema (:func:`input_schema`, from the
models in :mod:`toolcode._inputs`) and :func:`call_metatool`, which checks the argument names,
calls the core operation of the same name (:class:`~toolcode.CodeMode`) and renders the text the
model reads. A failure is a reply too, in the one error shape (:func:`toolcode.error_info`), so
the same mistake reads the same through every door.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import functools
import hashlib
import json
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from pydantic import BaseModel

from toolcode._core import CodeMode, PrintListener, ToolStart
from toolcode._descriptions import INSTRUCTIONS, UNSANDBOXED_NOTE
from toolcode._errors import error_info
from toolcode._inputs import INPUT_MODELS, DeleteOutcome, ResetOutcome
from toolcode._outcome import outcome_text
from toolcode._settings import META_TOOLS
from toolcode._types import OnToolCall
from toolcode.calls import Asker
from toolcode.exceptions import InvalidArgumentsError, ToolCodeError, clip
from toolcode.models import ErrorInfo, RunToolOutcome, SearchHitEntry
from tooldocs import json_text
from toolindex import Tool

__all__ = [
    "EXPOSED_SEPARATOR",
    "PERSON_TOOLS",
    "Exposed",
    "MetaToolReply",
    "StepListener",
    "call_exposed",
    "call_metatool",
    "compact_schema",
    "exposed_description",
    "exposed_tools",
    "failure_reply",
    "input_schema",
    "instructions",
    "parse_arguments",
]

StepListener = Callable[[dict[str, Any]], Awaitable[None]]
"""Awaited as each chain step starts and ends (``{"step", "tool_id", "status", "duration_ms", "code"}``)."""

PERSON_TOOLS: Final = frozenset({"resume_execution", "approve_tools"})
"""Code-mode tools whose call is a person's decision (a paused run's, an approval of tool
definitions): the MCP server marks them ``destructiveHint``, Pydantic AI defers them for the
host's approval, the OpenAI Agents SDK marks them ``needs_approval``."""


@dataclass(frozen=True, slots=True)
class MetaToolReply:
    """What one call of a code-mode tool answers, in every door's terms."""

    text: str
    """What the model reads (the MCP server's text content)."""
    result: BaseModel | None = None
    """The operation's result model (``None`` when the call failed before it had one)."""
    error: ErrorInfo | None = None
    """The failure this reply reports, if any: the call's own, a run's, or an aborted chain step's."""
    is_error: bool = False
    """Whether the call failed (MCP ``isError``)."""
    images: tuple[tuple[str, str], ...] = ()
    """Images an exposed upstream tool answered with, as ``(mime type, base64 data)``: the door
    hands them to the model as images (``text`` only says where they were)."""

    def structured(self) -> dict[str, Any]:
        """The result as JSON: the result model's fields, or ``{"ok": false, "error": {...}}``."""
        if self.result is not None:
            return self.result.model_dump(mode="json")
        error = self.error.model_dump(mode="json") if self.error is not None else None
        return {"ok": False, "error": error}


def failure_text(info: ErrorInfo) -> str:
    """What the model reads of a failed call: ``error [code]: message`` and the hint (unless the message has it)."""
    hint = f"\nhint: {info.hint}" if info.hint and info.hint not in info.message else ""
    return f"error [{info.code}]: {info.message}{hint}"


def failure_reply(exc: BaseException, codemode: CodeMode) -> MetaToolReply:
    """The reply for a call that failed with ``exc`` (hints name only tools the caller can see)."""
    info = error_info(exc, codemode.view())
    return MetaToolReply(text=failure_text(info), error=info, is_error=True)


def parse_arguments(text: str | bytes | bytearray) -> dict[str, Any]:
    """A model's arguments sent as JSON text: the object they hold (empty text is no arguments).

    Doors whose framework hands over the raw text use it, so malformed arguments are a failure
    the model reads (``invalid_arguments``), like any other mistake, not a framework error.

    Raises:
        InvalidArgumentsError: If the text is not JSON, or not a JSON object (field ``arguments``).
    """
    raw = text if isinstance(text, str) else bytes(text).decode("utf-8", errors="replace")
    try:
        args: Any = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as e:
        raise InvalidArgumentsError("arguments", f"not valid JSON ({e.msg})") from None
    if not isinstance(args, dict):
        raise InvalidArgumentsError("arguments", "must be a JSON object")
    return cast("dict[str, Any]", args)


EXPOSED_SEPARATOR = "__"
"""Joins namespace and name of a directly exposed upstream tool (``github__list_issues``);
``:`` is not allowed in MCP tool names and some clients reject ``.``."""

_EXPOSED_NAME_MAX = 128
"""Longest exposed name: MCP's limit for a tool name (OpenAI's function names stop at 64)."""


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
    max_name: int = _EXPOSED_NAME_MAX,
    punctuation: str = "_.-",
) -> Exposed:
    """The visible upstream tools matching ``patterns``, each under the name a door publishes it as.

    A tool is published as ``namespace__name``. When two tools map to one such name
    (``x:y__ok`` and ``x__y:ok``), or a tool maps to a code-mode tool's name, each of them is
    published as that name plus ``_`` and six hex digits of its id's digest instead: every
    matched tool stays reachable, under a name that does not depend on the others.

    Args:
        codemode: The core whose view is read.
        patterns: ``namespace:name`` patterns (``fnmatch``: ``github:list_*``, ``*``), matched
            against each tool's key and id.
        reserved: Names already taken (the door's code-mode tools).
        max_name: Longest name the door's clients accept.
        punctuation: The characters besides ASCII letters and digits a name may hold (MCP:
            ``_.-``; OpenAI function names: ``_-``).

    Returns:
        The published tools and, for each matched tool renamed or left out, why.
    """
    collisions: list[str] = []
    if not patterns:
        return Exposed({}, collisions)

    def valid(name: str) -> bool:
        return len(name) <= max_name and all(c.isascii() and (c.isalnum() or c in punctuation) for c in name)

    by_name: dict[str, list[Tool]] = {}
    view = codemode.view()
    cursor: str | None = None
    while True:
        page = view.list_tools(cursor=cursor, limit=1000, namespace=None)
        for tool in page.tools:
            if not any(fnmatch.fnmatchcase(tool.key, p) or fnmatch.fnmatchcase(tool.id, p) for p in patterns):
                continue
            key = f"{tool.namespace}{EXPOSED_SEPARATOR}{tool.name}"
            if valid(key):
                by_name.setdefault(key, []).append(tool)
            else:
                collisions.append(f"{tool.id}: {clip(key, 80)!r} is not a valid tool name here; not exposed")
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
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
    codemode: CodeMode, tool: Tool, args: Mapping[str, Any], *, caller: str | None = None, ask: Asker | None = None
) -> MetaToolReply:
    """Call an exposed upstream tool as ``toolcode serve`` does: ``run_tool``'s checks, policy and errors.

    What the tool answered is kept as the MCP server passes it on: its text blocks are the reply
    text (the structured result as JSON when there are none), its images are ``images``, and any
    other block (an embedded resource, audio) is its JSON in the text.

    Args:
        codemode: The core (with the caller's ceilings applied).
        tool: The exposed tool (from :func:`exposed_tools`).
        args: The arguments as the model sent them.
        caller: Who the call is for.
        ask: Asks a person about a call the policy asks for (``None``: it fails with
            ``approval_required``).

    Returns:
        The reply (a failure is a reply with ``error`` set, never an exception).
    """
    try:
        result = await codemode.run_result(tool.id, dict(args), ask=ask, caller=caller)
    except ToolCodeError as exc:
        return failure_reply(exc, codemode)
    texts: list[str] = []
    images: list[tuple[str, str]] = []
    for block in result.content:
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "image" and isinstance(block.get("data"), str) and _is_base64(block["data"]):
            mime = str(block.get("mimeType") or "image/png")
            images.append((mime, block["data"]))
            texts.append(f"[image {len(images)}: {clip(mime, 80)}]")
        elif kind == "image":
            texts.append("[an image whose data is not base64: left out]")
        else:
            texts.append(json_text(block))
    text = "\n".join(texts) if result.content else json_text(result.structured)
    outcome = RunToolOutcome(tool_id=result.tool_id, value=result.value, duration_ms=round(result.duration_ms, 3))
    return MetaToolReply(text, outcome, images=tuple(images))


def _is_base64(data: str) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def instructions(codemode: CodeMode) -> str:
    """The instructions that go with the code-mode tools (with a warning when the engine is no sandbox)."""
    return INSTRUCTIONS + ("" if codemode.services.engine.info.sandboxed else UNSANDBOXED_NOTE)


def compact_schema(schema: Any) -> Any:
    """A JSON Schema without the noise pydantic adds (titles, ``anyOf`` with null), same meaning.

    Every definition token is paid on every turn by every client, so the wire schemas are kept lean.
    """
    if isinstance(schema, list):
        return [compact_schema(s) for s in cast(list[Any], schema)]
    if not isinstance(schema, dict):
        return schema
    src = cast(dict[str, Any], schema)
    out: dict[str, Any] = {}
    for key, value in src.items():
        if key == "title":
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            props = cast(dict[str, Any], value)
            out[key] = {k: compact_schema(v) for k, v in props.items()}
        elif key == "additionalProperties" and value is True:
            continue
        else:
            out[key] = compact_schema(value)
    any_of = out.get("anyOf")
    null: dict[str, Any] = {"type": "null"}
    if isinstance(any_of, list):
        options = cast(list[Any], any_of)
        others = [o for o in options if o != null]
        simple = all(isinstance(o, dict) and set(cast(dict[str, Any], o)) <= {"type", "items"} for o in others)
        if len(others) < len(options) and simple:
            # "X or null" with a default of null: optional already says it.
            del out["anyOf"]
            types_ = [cast(dict[str, Any], o)["type"] for o in others if "type" in o]
            if len(others) == 1:
                out.update(cast(dict[str, Any], others[0]))
            elif types_:
                out["type"] = types_
    if out.get("default", ...) is None:
        del out["default"]
    return out


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace ``$ref``s to ``$defs`` by the definitions themselves (smaller and clearer on the wire)."""
    defs = cast(dict[str, Any], schema.pop("$defs", {}))

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in cast(list[Any], node)]
        if not isinstance(node, dict):
            return node
        d = cast(dict[str, Any], node)
        ref = d.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
            return walk(defs[ref[8:]])
        return {k: walk(v) for k, v in d.items()}

    return cast(dict[str, Any], walk(schema))


@functools.cache
def _schema_text(name: str) -> str:
    schema = cast(dict[str, Any], compact_schema(_inline(INPUT_MODELS[name].model_json_schema())))
    # Unknown arguments are refused by the door itself (naming the argument): not worth tokens here.
    schema.pop("additionalProperties", None)
    return json.dumps(schema)


def input_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of a code-mode tool's arguments, as every door publishes it (a fresh copy).

    Raises:
        KeyError: If ``name`` is not a code-mode tool.
    """
    return cast(dict[str, Any], json.loads(_schema_text(name)))


async def call_metatool(
    codemode: CodeMode,
    name: str,
    args: Mapping[str, Any],
    *,
    caller: str | None = None,
    ask: Asker | None = None,
    on_step: StepListener | None = None,
    on_tool_call: OnToolCall | None = None,
    on_tool_start: ToolStart | None = None,
    on_print: PrintListener | None = None,
) -> MetaToolReply:
    """Call the code-mode tool ``name`` with a model's arguments: the core operation and its reply text.

    Argument values are checked by the core's operations (the same checks for every door); this
    refuses unknown argument names, naming the first one.

    Args:
        codemode: The core (with the caller's ceilings applied).
        name: A code-mode tool (:data:`toolcode.server.META_TOOLS`).
        args: The arguments as the model sent them.
        caller: Who the call is for (sessions, paused runs and stored results are the caller's).
        ask: Asks a person about direct calls the policy asks for (``None``: they fail with
            ``approval_required``; a run from code pauses instead).
        on_step: Awaited as each chain step starts and ends (``run_chain``).
        on_tool_call: Awaited as each tool call of a run completes (``execute_code``).
        on_tool_start: Awaited with the tool id as each tool call of a run starts.
        on_print: Told of each write of a run to stdout or stderr.

    Returns:
        The reply; a failure (an invalid argument, an unknown tool, a run's error) is a reply with
        ``error`` set, never an exception.
    """
    hooks = _Hooks(caller, ask, on_step, on_tool_call, on_tool_start, on_print)
    try:
        model = INPUT_MODELS.get(name)
        if model is None:
            known = ", ".join(META_TOOLS)
            raise InvalidArgumentsError("name", f"unknown tool {clip(name)!r}; code-mode tools: {known}")
        unknown = sorted(set(args) - set(model.model_fields))
        if unknown:
            raise InvalidArgumentsError(clip(unknown[0], 60), f"{name} has no such argument")
        return await _OPERATIONS[name](codemode, dict(args), hooks)
    except ToolCodeError as exc:
        return failure_reply(exc, codemode)


@dataclass(frozen=True, slots=True)
class _Hooks:
    caller: str | None
    ask: Asker | None
    on_step: StepListener | None
    on_tool_call: OnToolCall | None
    on_tool_start: ToolStart | None
    on_print: PrintListener | None


_Operation = Callable[[CodeMode, dict[str, Any], _Hooks], Awaitable[MetaToolReply]]


def _hit_text(hit: SearchHitEntry, signatures: bool) -> str:
    mark = "[weak match] " if hit.weak else ""
    if signatures:
        return f"# {mark}\n{hit.signature or hit.id}" if mark else hit.signature or hit.id
    return f"{hit.id} — {mark}{hit.summary}" if hit.summary else f"{mark}{hit.id}"


async def _search_tools(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.search_tools(a.get("query"), a.get("limit", 10), a.get("detail", "summary"))
    signatures = any(hit.signature for hit in out.hits)
    lines = [_hit_text(hit, signatures) for hit in out.hits]
    if out.hint:
        lines.append(f"hint: {out.hint}" if lines else out.hint)
    return MetaToolReply("\n\n".join(lines), out)


async def _list_tools(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.list_tools(a.get("namespace"), a.get("cursor"), a.get("limit", 100))
    text = "\n".join(f"{t.id} — {t.summary}" for t in out.tools)
    if out.next_cursor:
        text += f"\nnext_cursor: {out.next_cursor}"
    return MetaToolReply(text, out)


async def _list_namespaces(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.list_namespaces()
    lines = [
        f"{n.name} (unavailable: {n.unavailable})" if n.unavailable else f"{n.name} ({n.tool_count} tools)"
        for n in out.namespaces
    ]
    return MetaToolReply("\n".join(lines), out)


async def _describe_tool(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.describe_tool(a.get("tool_id"), a.get("level", "schema"))
    text = out.text
    for e in out.errors:
        text += f"\nerror [{e.code}] {e.tool_id}: {e.message}" + (f" ({e.hint})" if e.hint else "")
    # Some ids described is a result; none described is the caller's mistake (not an MCP error, though).
    error = out.errors[0] if out.errors and not out.docs else None
    return MetaToolReply(text.strip(), out, error=error)


async def _list_tool_examples(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.list_tool_examples(a.get("tool_id"), a.get("max", 3))
    return MetaToolReply(json_text(out.model_dump(mode="json")), out)


async def _run_tool(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.run_tool(a.get("tool_id"), a.get("args"), timeout=a.get("timeout"), ask=h.ask, caller=h.caller)
    return MetaToolReply(json_text(out.value), out)


async def _run_chain(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.run_chain(a.get("steps"), ask=h.ask, caller=h.caller, on_step=h.on_step)
    text = json_text(out.model_dump(mode="json"))
    if not out.aborted:
        return MetaToolReply(text, out)
    failed = next(s for s in reversed(out.steps) if not s.ok)
    err = failed.error
    why = f"[{err.code}] {err.message}" if err is not None else "failed"
    text = f"chain aborted at step {failed.index} ({failed.tool_id}): {why}\n{text}"
    return MetaToolReply(text, out, error=err, is_error=True)


async def _execute_code(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.execute(
        a.get("code"),
        input=a.get("input"),
        options=a.get("options"),
        on_tool_call=h.on_tool_call,
        caller=h.caller,
        session=a.get("session"),
        on_tool_start=h.on_tool_start,
        on_print=h.on_print,
    )
    return MetaToolReply(outcome_text(out), out, error=out.error, is_error=out.status == "error")


async def _resume_execution(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.resume(
        a.get("execution_id"),
        a.get("decision"),
        caller=h.caller,
        on_tool_call=h.on_tool_call,
        on_tool_start=h.on_tool_start,
        on_print=h.on_print,
    )
    return MetaToolReply(outcome_text(out), out, error=out.error, is_error=out.status == "error")


async def _list_paused(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.list_paused(h.caller)
    lines = [
        f"{r.execution_id}: " + ", ".join(p.tool_id for p in r.pending) + (f" at line {r.line}" if r.line else "")
        for r in out.paused
    ] or ["no paused runs"]
    return MetaToolReply("\n".join(lines), out)


async def _approve_tools(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.approve_tools(a.get("tools"), by=f"operator:{h.caller or 'local'}")
    return MetaToolReply("approved: " + (", ".join(out.approved) or "nothing (no tool matched)"), out)


async def _list_sessions(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.list_sessions(h.caller)
    return MetaToolReply(json_text(out.model_dump(mode="json")["sessions"]), out)


async def _reset_session(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    name = a.get("session")
    gone = await cm.reset_session(name, h.caller)
    out = ResetOutcome(session=str(name), reset=gone)
    return MetaToolReply(f"session {name!r} " + ("reset" if gone else "had no state"), out)


async def _save_snippet(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.save_snippet(a.get("name"), a.get("code"), a.get("description"), a.get("input_schema"))
    return MetaToolReply(f"saved as {out.tool_id}", out)


async def _list_snippets(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.list_snippets()
    lines = [f"{e.tool_id} — {e.description}" for e in out.snippets] or ["no saved snippets"]
    return MetaToolReply("\n".join(lines), out)


async def _delete_snippet(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    name = a.get("name")
    gone = await cm.delete_snippet(name)
    out = DeleteOutcome(name=str(name), deleted=gone)
    return MetaToolReply(f"snippets:{name} " + ("deleted" if gone else "did not exist"), out)


async def _read_result(cm: CodeMode, a: dict[str, Any], h: _Hooks) -> MetaToolReply:
    out = await cm.read_result(a.get("ref"), a.get("offset", 0), a.get("limit"), caller=h.caller)
    more = f"\n[next_offset: {out.next_offset}]" if out.next_offset is not None else ""
    return MetaToolReply(out.text + more, out)


_OPERATIONS: dict[str, _Operation] = {
    "search_tools": _search_tools,
    "list_tools": _list_tools,
    "list_namespaces": _list_namespaces,
    "describe_tool": _describe_tool,
    "list_tool_examples": _list_tool_examples,
    "run_tool": _run_tool,
    "run_chain": _run_chain,
    "execute_code": _execute_code,
    "list_sessions": _list_sessions,
    "reset_session": _reset_session,
    "save_snippet": _save_snippet,
    "list_snippets": _list_snippets,
    "delete_snippet": _delete_snippet,
    "resume_execution": _resume_execution,
    "list_paused": _list_paused,
    "approve_tools": _approve_tools,
    "read_result": _read_result,
}
