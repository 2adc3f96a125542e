"""The code-mode tools as every door offers them to a model: definitions, one call, one reply text.

The definitions (instructions, each tool's description and input schema) are kept as data in
``_metatools.json``, the wire form of an MCP tool definition. Written for a model and kept short:
every word is paid for in context tokens on every turn (``bench/tokens.py`` reports the total
under ``"surface"``). The schemas declare names, types and defaults; the values are checked by the
core's operations. The snippet API is documented once, in ``execute_code``'s description,
generated from the one list of snippet globals (:data:`toolcode.SNIPPET_GLOBALS`).

:func:`call_metatool` checks the argument names, calls the core operation of the same name
(:class:`~toolcode.CodeMode`) and makes its result a :class:`MetaToolReply` (:func:`reply_of`: one
text renderer per result model). A failure is a reply too, in the one error shape
(:func:`toolcode.error_info`), so the same mistake reads the same through every door
(:class:`toolcode._door.Door` is what the doors hold).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

from pydantic import BaseModel, TypeAdapter, ValidationError

from toolcode._core import CodeMode, PrintListener, ToolStart
from toolcode._errors import error_info
from toolcode._globals import snippet_api_text
from toolcode._outcome import outcome_json, outcome_text
from toolcode._settings import META_TOOLS
from toolcode._types import OnToolCall
from toolcode.calls import Asker
from toolcode.exceptions import ErrorCode, InvalidArgumentsError, ToolCodeError, ToolError, clip
from toolcode.models import (
    ChainOutcome,
    DocsResult,
    ErrorInfo,
    ExamplesResult,
    ExecuteOutcome,
    NamespacesResult,
    PausedResult,
    ResultPage,
    RunToolOutcome,
    SearchHitEntry,
    SearchResult,
    SessionsResult,
    SnippetEntry,
    SnippetsResult,
    ToolApprovalsResult,
    ToolListResult,
)
from tooldocs import json_text
from toolrun import RunResult

__all__ = [
    "DESCRIPTIONS",
    "INPUT_SCHEMAS",
    "INSTRUCTIONS",
    "PERSON_TOOLS",
    "DeleteOutcome",
    "MetaToolReply",
    "ResetOutcome",
    "StepListener",
    "as_object",
    "as_operator",
    "call_metatool",
    "delete_snippet",
    "failure_reply",
    "input_schema",
    "instructions",
    "parse_arguments",
    "reply_of",
    "reset_session",
]

StepListener = Callable[[dict[str, Any]], Awaitable[None]]
"""Awaited as each chain step starts and ends (``{"step", "tool_id", "status", "duration_ms", "code"}``)."""

PERSON_TOOLS: Final = frozenset({"resume_execution", "approve_tools"})
"""Code-mode tools whose call is a person's decision: MCP's ``destructiveHint``, Pydantic AI's
deferred tools, the OpenAI Agents SDK's ``needs_approval``."""


class _Definition(BaseModel):
    description: str
    inputSchema: dict[str, Any]


class _Definitions(BaseModel):
    instructions: str
    unsandboxed_note: str
    tools: dict[str, _Definition]


def _load() -> _Definitions:
    data = _Definitions.model_validate_json(resources.files("toolcode").joinpath("_metatools.json").read_bytes())
    for name, tool in data.tools.items():
        schema = tool.inputSchema
        if schema.get("type") != "object" or not set(schema.get("required", ())) <= set(schema.get("properties", {})):
            raise ValueError(f"_metatools.json: the inputSchema of {name} is not an object schema of its properties")
    return data


_DATA = _load()
INSTRUCTIONS = _DATA.instructions
UNSANDBOXED_NOTE = _DATA.unsandboxed_note
"""Appended to the instructions when the engine is not a sandbox."""
DESCRIPTIONS: dict[str, str] = {
    name: tool.description.replace("{snippet_api}", snippet_api_text()) for name, tool in _DATA.tools.items()
}
INPUT_SCHEMAS: dict[str, dict[str, Any]] = {name: tool.inputSchema for name, tool in _DATA.tools.items()}
"""Each code-mode tool's input schema, by name (:func:`input_schema` gives a copy to change)."""


_OBJECT: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


class ResetOutcome(BaseModel):
    """``reset_session``'s result."""

    session: str
    reset: bool


class DeleteOutcome(BaseModel):
    """``delete_snippet``'s result."""

    name: str
    deleted: bool


@dataclass(frozen=True, slots=True)
class MetaToolReply:
    """What one call of a door's tool answers, in every door's terms."""

    text: str
    """What the model reads (the MCP server's text content)."""
    result: BaseModel | None = None
    """The operation's result model (``None`` when the call failed before it had one)."""
    error: ErrorInfo | None = None
    """The failure this reply reports, if any: the call's own, a run's, or an aborted chain step's."""
    is_error: bool = False
    """Whether the call failed (MCP ``isError``)."""
    images: tuple[tuple[str, str], ...] = ()
    """Images an exposed upstream tool answered with, ``(mime type, base64 data)`` (``text`` says where they were)."""
    run: RunResult | None = None
    """An exposed upstream tool's whole result, for a door that passes it on as it came."""

    def structured(self) -> dict[str, Any]:
        """The result as JSON: the result model's fields (a run's: ``outcome_json``), or ``{"ok": false, ...}``."""
        if isinstance(self.result, ExecuteOutcome):
            return outcome_json(self.result)
        if self.result is not None:
            return self.result.model_dump(mode="json")
        error = self.error.model_dump(mode="json") if self.error is not None else None
        return {"ok": False, "error": error}


def failure_reply(exc: BaseException, codemode: CodeMode) -> MetaToolReply:
    """The reply for a call that failed with ``exc``: ``error [code]: message`` and the hint (visible tools only)."""
    info = error_info(exc, codemode.view())
    hint = f"\nhint: {info.hint}" if info.hint and info.hint not in info.message else ""
    return MetaToolReply(text=f"error [{info.code}]: {info.message}{hint}", error=info, is_error=True)


def as_object(value: object) -> dict[str, Any] | None:
    """``value`` as a JSON object (a dict with string keys; a shallow copy), or ``None`` when it is none."""
    try:
        return _OBJECT.validate_python(value, strict=True)
    except ValidationError:
        return None


def parse_arguments(raw: object) -> dict[str, Any]:
    """A model's arguments as the object they hold: a mapping, or JSON text (empty text: no arguments).

    Doors whose framework hands over the raw text use it, so malformed arguments are a failure
    the model reads (``invalid_arguments``), like any other mistake, not a framework error.

    Raises:
        InvalidArgumentsError: If they are not a JSON object (field ``arguments``).
    """
    value: object = raw
    if isinstance(raw, str | bytes | bytearray):
        text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8", errors="replace")
        try:
            value = json.loads(text) if text.strip() else dict[str, Any]()
        except json.JSONDecodeError as e:
            raise InvalidArgumentsError("arguments", f"not valid JSON ({e.msg})") from None
    args = as_object(value)
    if args is None:
        raise InvalidArgumentsError("arguments", "must be a JSON object")
    return args


def instructions(codemode: CodeMode) -> str:
    """The instructions that go with the code-mode tools (with a warning when the engine is no sandbox)."""
    return INSTRUCTIONS + ("" if codemode.services.engine.info.sandboxed else UNSANDBOXED_NOTE)


def input_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of a code-mode tool's arguments, as every door publishes it (a fresh copy).

    Raises:
        KeyError: If ``name`` is not a code-mode tool.
    """
    return copy.deepcopy(INPUT_SCHEMAS[name])


@dataclass(frozen=True, slots=True)
class _Hooks:
    caller: str | None
    ask: Asker | None
    on_step: StepListener | None
    on_tool_call: OnToolCall | None
    on_tool_start: ToolStart | None
    on_print: PrintListener | None


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
    """Call the code-mode tool ``name`` with a model's arguments: the core operation and its reply.

    Argument values are checked by the core's operations (the same checks for every door); this
    refuses unknown argument names, naming the first one. ``caller`` and ``ask`` are as for
    :meth:`toolcode._door.Door.call`; the listeners are told of a chain's steps (``on_step``) and
    of a run's tool calls and output.

    Returns:
        The reply; a failure (an invalid argument, an unknown tool, a run's error) is a reply with
        ``error`` set, never an exception.
    """
    hooks = _Hooks(caller, ask, on_step, on_tool_call, on_tool_start, on_print)
    try:
        schema = INPUT_SCHEMAS.get(name)
        if schema is None:
            raise InvalidArgumentsError(
                "name", f"unknown tool {clip(name)!r}; code-mode tools: {', '.join(META_TOOLS)}"
            )
        unknown = sorted(set(args) - set(schema["properties"]))
        if unknown:
            raise InvalidArgumentsError(clip(unknown[0], 60), f"{name} has no such argument")
        return reply_of(await _OPERATIONS[name](codemode, dict(args), hooks))
    except ToolCodeError as exc:
        return failure_reply(exc, codemode)


async def reset_session(cm: CodeMode, session: Any, caller: str | None = None) -> ResetOutcome:
    """``reset_session`` with the result model every door answers (the core answers a bare bool)."""
    return ResetOutcome(session=str(session), reset=await cm.reset_session(session, caller))


async def delete_snippet(cm: CodeMode, name: Any, caller: str | None = None) -> DeleteOutcome:
    """``delete_snippet`` with the result model every door answers (the core answers a bare bool)."""
    return DeleteOutcome(name=str(name), deleted=await cm.delete_snippet(name, caller=caller))


_OPERATIONS: dict[str, Callable[[CodeMode, dict[str, Any], _Hooks], Awaitable[BaseModel]]] = {
    "search_tools": lambda cm, a, h: cm.search_tools(
        a.get("query"), a.get("limit", 10), a.get("detail", "summary"), caller=h.caller
    ),
    "list_tools": lambda cm, a, h: cm.list_tools(
        a.get("namespace"), a.get("cursor"), a.get("limit", 100), caller=h.caller
    ),
    "list_namespaces": lambda cm, a, h: cm.list_namespaces(caller=h.caller),
    "describe_tool": lambda cm, a, h: cm.describe_tool(a.get("tool_id"), a.get("level", "schema"), caller=h.caller),
    "list_tool_examples": lambda cm, a, h: cm.list_tool_examples(a.get("tool_id"), a.get("max", 3), caller=h.caller),
    "run_tool": lambda cm, a, h: cm.run_tool(
        a.get("tool_id"), a.get("args"), timeout=a.get("timeout"), ask=h.ask, caller=h.caller
    ),
    "run_chain": lambda cm, a, h: cm.run_chain(a.get("steps"), ask=h.ask, caller=h.caller, on_step=h.on_step),
    "execute_code": lambda cm, a, h: cm.execute(
        a.get("code"),
        input=a.get("input"),
        options=a.get("options"),
        on_tool_call=h.on_tool_call,
        caller=h.caller,
        session=a.get("session"),
        on_tool_start=h.on_tool_start,
        on_print=h.on_print,
    ),
    "list_sessions": lambda cm, a, h: cm.list_sessions(h.caller),
    "reset_session": lambda cm, a, h: reset_session(cm, a.get("session"), h.caller),
    "save_snippet": lambda cm, a, h: cm.save_snippet(
        a.get("name"),
        a.get("code"),
        a.get("description"),
        a.get("input_schema"),
        shared=a.get("shared", False),
        caller=h.caller,
    ),
    "list_snippets": lambda cm, a, h: cm.list_snippets(caller=h.caller),
    "delete_snippet": lambda cm, a, h: delete_snippet(cm, a.get("name"), h.caller),
    "resume_execution": lambda cm, a, h: cm.resume(
        a.get("execution_id"),
        a.get("decision"),
        caller=h.caller,
        on_tool_call=h.on_tool_call,
        on_tool_start=h.on_tool_start,
        on_print=h.on_print,
    ),
    "list_paused": lambda cm, a, h: cm.list_paused(h.caller),
    "approve_tools": lambda cm, a, h: cm.approve_tools(a.get("tools"), by=as_operator(cm, h.caller)),
    "read_result": lambda cm, a, h: cm.read_result(a.get("ref"), a.get("offset", 0), a.get("limit"), caller=h.caller),
}
"""Each code-mode tool's core operation (the defaults are the published schemas')."""


def as_operator(cm: CodeMode, caller: str | None) -> str:
    """``caller`` (``None``: the local user) as the operator who decides, if it is one (``policy.operators``).

    The one check of every door that approves quarantined tools: the ``approve_tools`` tool, the
    console and ``toolcode tools approve``.

    Raises:
        ToolError: ``not_allowed`` if ``caller`` is not an operator.
    """
    who = caller or "local"
    if not cm.services.is_operator(who):
        raise ToolError(
            "approve_tools",
            f"only an operator approves tools, and {who!r} is not one (policy.operators)",
            "not_allowed",
            code=ErrorCode.NOT_ALLOWED,
        )
    return f"operator:{who}"


def reply_of(result: BaseModel) -> MetaToolReply:
    """The reply for an operation's result: the text the model reads, and the failure it reports (if any).

    Raises:
        KeyError: If ``result`` is not the result model of a code-mode tool.
    """
    return _REPLIES[type(result)](result)


def _text(render: Callable[[Any], str]) -> Callable[[Any], MetaToolReply]:
    return lambda out: MetaToolReply(render(out), out)


def _hit_text(hit: SearchHitEntry, signatures: bool) -> str:
    mark = "[weak match] " if hit.weak else ""
    if signatures:
        return f"# {mark}\n{hit.signature or hit.id}" if mark else hit.signature or hit.id
    return f"{hit.id} — {mark}{hit.summary}" if hit.summary else f"{mark}{hit.id}"


def _search_text(out: SearchResult) -> str:
    signatures = any(hit.signature for hit in out.hits)
    lines = [_hit_text(hit, signatures) for hit in out.hits]
    if out.hint:
        lines.append(f"hint: {out.hint}" if lines else out.hint)
    return "\n\n".join(lines)


def _describe_reply(out: DocsResult) -> MetaToolReply:
    text = out.text
    for e in out.errors:
        text += f"\nerror [{e.code}] {e.tool_id}: {e.message}" + (f" ({e.hint})" if e.hint else "")
    # Some ids described is a result; none described is the caller's mistake (not an MCP error, though).
    return MetaToolReply(text.strip(), out, error=out.errors[0] if out.errors and not out.docs else None)


def _chain_reply(out: ChainOutcome) -> MetaToolReply:
    text = json_text(out.model_dump(mode="json"))
    if not out.aborted:
        return MetaToolReply(text, out)
    failed = next(s for s in reversed(out.steps) if not s.ok)
    err = failed.error
    why = f"[{err.code}] {err.message}" if err is not None else "failed"
    text = f"chain aborted at step {failed.index} ({failed.tool_id}): {why}\n{text}"
    return MetaToolReply(text, out, error=err, is_error=True)


def _paused_text(out: PausedResult) -> str:
    lines = [
        f"{r.execution_id}: " + ", ".join(p.tool_id for p in r.pending) + (f" at line {r.line}" if r.line else "")
        for r in out.paused
    ]
    return "\n".join(lines or ["no paused runs"])


_REPLIES: dict[type[BaseModel], Callable[[Any], MetaToolReply]] = {
    SearchResult: _text(_search_text),
    ToolListResult: _text(
        lambda out: (
            "\n".join(f"{t.id} — {t.summary}" for t in out.tools)
            + (f"\nnext_cursor: {out.next_cursor}" if out.next_cursor else "")
        )
    ),
    NamespacesResult: _text(
        lambda out: "\n".join(
            f"{n.name} (unavailable: {n.unavailable})" if n.unavailable else f"{n.name} ({n.tool_count} tools)"
            for n in out.namespaces
        )
    ),
    DocsResult: _describe_reply,
    ExamplesResult: _text(lambda out: json_text(out.model_dump(mode="json"))),
    RunToolOutcome: _text(lambda out: json_text(out.value)),
    ChainOutcome: _chain_reply,
    ExecuteOutcome: lambda out: MetaToolReply(outcome_text(out), out, error=out.error, is_error=out.status == "error"),
    SessionsResult: _text(lambda out: json_text(out.model_dump(mode="json")["sessions"])),
    ResetOutcome: _text(lambda out: f"session {out.session!r} " + ("reset" if out.reset else "had no state")),
    SnippetEntry: _text(lambda out: f"saved as {out.tool_id}"),
    SnippetsResult: _text(
        lambda out: "\n".join([f"{e.tool_id} — {e.description}" for e in out.snippets] or ["no saved snippets"])
    ),
    DeleteOutcome: _text(lambda out: f"snippets:{out.name} " + ("deleted" if out.deleted else "did not exist")),
    PausedResult: _text(_paused_text),
    ToolApprovalsResult: _text(lambda out: "approved: " + (", ".join(out.approved) or "nothing (no tool named)")),
    ResultPage: _text(
        lambda out: out.text + (f"\n[next_offset: {out.next_offset}]" if out.next_offset is not None else "")
    ),
}
"""The one text renderer of each operation's result model."""
