"""Chains without code: steps whose arguments reference earlier steps' results.

A step is ``{"tool_id", "args", "id", "use_previous", "on_error"}`` (``tool`` is another name for
``tool_id``, as Witsy's workflow steps call it). Anywhere in ``args``, a string that is exactly
``"{{steps.0.items.0.id}}"`` (or ``"{{search.items.0.id}}"`` for the step whose ``id`` is
``search``) is replaced by the referenced value, with its type; inside a longer string the value
is formatted as text (JSON for anything but a string). ``use_previous`` puts the previous step's
value in the arguments: ``true`` under ``previous``, a name under that name, ``"merge"`` merges
an object result into them.

A reference's path is keys and list indices, written ``.key``, ``.0`` or ``[0]``
(``{{search.items[0].id}}``). Two rules let references written for other tools' results work:

- ``result`` right after the step names the step's result itself (``{{search.result.items[0]}}``
  is ``{{search.items[0]}}``), unless the result is an object with a ``result`` key, which it
  then names (the same value, for a ``{"result": ...}`` wrapper).
- Wrappers are looked through: where a key or index is missing from an object that has a
  ``result`` or ``data`` key, the walk goes on inside that value (``result`` first), so
  ``{{search.items}}`` finds ``items`` in ``{"result": {"items": ...}}`` and ``{"data": {"items":
  ...}}`` alike, and ``{{list.0.id}}`` finds the first item of ``{"data": [...]}``. A path that
  exists as written is always taken as written.

References are checked before anything runs (a step may only reference earlier steps, and a path
must be well formed); one that does not resolve while the chain runs fails its step with
``invalid_reference``, and the message shows the path tried and the shape of the value it was
looking into.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from toolcode.exceptions import ErrorCode, InvalidArgumentsError, ToolError, clip

__all__ = [
    "CHAIN_SCHEMA",
    "ChainStep",
    "ChainStepSpec",
    "Segment",
    "one_tool_key",
    "parse_reference",
    "parse_steps",
    "resolve_args",
    "shape_of",
]

_REF: Final = re.compile(r"\{\{\s*([^{}\s]{1,300})\s*\}\}")
_STEP_ID: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_STEP_KEYS: Final = frozenset({"tool_id", "tool", "args", "id", "use_previous", "on_error"})
_MAX_STEPS_SCANNED: Final = 10_000
_PART: Final = re.compile(r"([^\[\]]*)((?:\[-?\d{1,9}\])*)")
_INDEX: Final = re.compile(r"\[(-?\d{1,9})\]")
_WRAPPERS: Final = ("result", "data")
"""Keys of the wrappers a reference looks through (``{"result": ...}``, ``{"data": ...}``)."""

Segment = str | int
"""One step of a reference's path: a key (or a dotted index, ``.0``), or a bracket index (``[0]``)."""


def parse_reference(ref: str) -> list[Segment] | None:
    """A reference's segments: ``search.items[0].id`` → ``["search", "items", 0, "id"]``.

    Returns:
        The segments (the first is the step: ``steps`` or an id), or ``None`` when malformed
        (an empty key, a bracket that is not an integer index).
    """
    out: list[Segment] = []
    for part in ref.split("."):
        m = _PART.fullmatch(part)
        if m is None or (not m.group(1) and not m.group(2)):
            return None
        if m.group(1):
            out.append(m.group(1))
        elif not out:
            return None  # a path starts with the step's name
        out.extend(int(i) for i in _INDEX.findall(m.group(2)))
    return out


def one_tool_key(schema: dict[str, Any]) -> None:
    """A step's JSON Schema names its tool under ``tool_id`` or ``tool`` (neither has a default)."""
    props = cast("dict[str, dict[str, Any]]", schema.get("properties", {}))
    for key in ("tool_id", "tool"):
        props.get(key, {}).pop("default", None)
    schema["anyOf"] = [{"required": ["tool_id"]}, {"required": ["tool"]}]


class ChainStepSpec(BaseModel):
    """One step of a chain (the published JSON Schema of a chain is a list of these)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=one_tool_key)

    tool_id: str | SkipJsonSchema[None] = Field(default=None, description="The tool, 'namespace:name'.")
    tool: str | SkipJsonSchema[None] = Field(default=None, description="Another name for tool_id.")
    args: dict[str, Any] = Field(
        default_factory=dict[str, Any],
        description="Its arguments; '{{steps.N.path}}' or '{{ID.path}}' refers to an earlier step's result "
        "(keys and indices: '.key', '.0', '[0]').",
    )
    id: str | None = Field(default=None, description="A name later steps can refer to ('{{ID.path}}').")
    use_previous: bool | str = Field(
        default=False,
        description="Put the previous step's value in the arguments: true (as 'previous'), an argument name, "
        "or 'merge' (an object result's keys become arguments).",
    )
    on_error: Literal["abort", "continue"] = Field(default="abort", description="What a failure of this step does.")


CHAIN_SCHEMA: Final[dict[str, Any]] = {
    "type": "array",
    "minItems": 1,
    "items": ChainStepSpec.model_json_schema(),
}
"""The JSON Schema of a chain's ``steps`` (a client may validate a chain before sending it)."""


@dataclass(frozen=True, slots=True)
class ChainStep:
    """A parsed step."""

    index: int
    tool_id: str
    args: dict[str, Any]
    use_previous: bool | str
    on_error: str
    id: str | None = None


def _bad(field: str, reason: str, tool_id: str | None = None) -> InvalidArgumentsError:
    return InvalidArgumentsError(field, reason, tool_id=tool_id)


def parse_steps(steps: Any, *, check_tool_id: Any, check_args: Any, check_choice: Any) -> list[ChainStep]:
    """Parse and check a chain (the checkers are the operations' own, for one set of messages).

    Raises:
        InvalidArgumentsError: For a malformed step, a duplicate or malformed id, or a reference
            to a step that is not earlier in the chain (nothing runs then).
    """
    if isinstance(steps, str | bytes | Mapping) or not isinstance(steps, Sequence):
        raise _bad("steps", f"must be a list of steps, got {type(cast(object, steps)).__name__}")
    items = cast("Sequence[Any]", steps)
    if not items:
        raise _bad("steps", "must have at least one step")
    out: list[ChainStep] = []
    ids: dict[str, int] = {}
    for i, raw in enumerate(items):
        if not isinstance(raw, Mapping):
            raise _bad(f"steps[{i}]", f"must be a dict with tool_id and args, got {type(raw).__name__}")
        step = cast("Mapping[str, Any]", raw)
        unknown = sorted(str(k) for k in step if k not in _STEP_KEYS)
        if unknown:
            raise _bad(f"steps[{i}]", f"unknown keys {', '.join(clip(k, 40) for k in unknown[:5])}")
        key = "tool" if "tool" in step and "tool_id" not in step else "tool_id"
        if "tool" in step and "tool_id" in step and step["tool"] != step["tool_id"]:
            raise _bad(f"steps[{i}]", "has both tool_id and tool (the same thing): keep one")
        tid: str = check_tool_id(f"steps[{i}].{key}", step.get(key))
        args: dict[str, Any] = check_args(step.get("args"), tid)
        sid = step.get("id")
        if sid is not None:
            if not isinstance(sid, str) or not _STEP_ID.match(sid) or sid == "steps":
                raise _bad(
                    f"steps[{i}].id",
                    f"must be a name (letters, digits, _ and -; not 'steps'), got {clip(repr(sid), 60)}",
                    tid,
                )
            if sid in ids:
                raise _bad(f"steps[{i}].id", f"{sid!r} is already the id of step {ids[sid]}", tid)
            ids[sid] = i
        use_previous = step.get("use_previous", False)
        if not isinstance(use_previous, bool | str) or (isinstance(use_previous, str) and not use_previous.strip()):
            raise _bad(
                f"steps[{i}].use_previous",
                f"must be true, false, an argument name or 'merge', got {clip(repr(use_previous), 60)}",
                tid,
            )
        if use_previous is not False and i == 0:
            raise _bad(f"steps[{i}].use_previous", "the first step has no previous result", tid)
        target = "previous" if use_previous is True else use_previous
        if isinstance(target, str) and target != "merge" and target in args:
            raise _bad(
                f"steps[{i}].args",
                f"has its own {target!r} while use_previous puts the previous value there; remove one",
                tid,
            )
        on_error: str = check_choice(f"steps[{i}].on_error", step.get("on_error", "abort"), ("abort", "continue"))
        for ref in _references(args):
            parts = parse_reference(ref)
            if parts is None:
                raise _bad(
                    f"steps[{i}].args",
                    f"reference {{{{{clip(ref, 80)}}}}} is not a path of keys and indices "
                    "('{{ID.key.0}}', '{{ID.items[0].id}}')",
                    tid,
                )
            root = parts[0]
            if root == "steps":
                number = _step_number(parts[1]) if len(parts) > 1 else None
                if number is None:
                    raise _bad(
                        f"steps[{i}].args", f"reference {{{{{clip(ref, 80)}}}}}: 'steps' needs a step number", tid
                    )
                if number >= i:
                    raise _bad(
                        f"steps[{i}].args",
                        f"reference {{{{{clip(ref, 80)}}}}} points at step {number}, which is not before step {i}",
                        tid,
                    )
            elif root not in ids:
                known = ", ".join(sorted(ids)) or "none"
                raise _bad(
                    f"steps[{i}].args",
                    f"reference {{{{{clip(ref, 80)}}}}}: no earlier step has the id {root!r} (ids so far: {known})",
                    tid,
                )
        out.append(ChainStep(i, tid, args, use_previous, on_error, sid))
    return out


def _references(value: Any) -> list[str]:
    found: list[str] = []
    stack: list[Any] = [value]
    seen = 0
    while stack and seen < _MAX_STEPS_SCANNED:
        v = stack.pop()
        seen += 1
        if isinstance(v, str):
            if "{{" in v:
                found.extend(m.group(1) for m in _REF.finditer(v))
        elif isinstance(v, Mapping):
            stack.extend(cast("Mapping[str, Any]", v).values())
        elif isinstance(v, list | tuple):
            stack.extend(cast("Sequence[Any]", v))
    return found


class _Unresolved(Exception):
    def __init__(self, ref: str, message: str) -> None:
        self.ref = ref
        super().__init__(message)


def shape_of(value: Any, depth: int = 2, max_keys: int = 12) -> str:
    """A short description of a value's shape: keys and types, nested ``depth`` levels, capped."""
    if isinstance(value, Mapping):
        items = list(cast("Mapping[Any, Any]", value).items())
        if depth <= 0:
            return f"object with {len(items)} keys"
        shown = ", ".join(f"{clip(str(k), 40)}: {shape_of(v, depth - 1, max_keys)}" for k, v in items[:max_keys])
        more = f", … +{len(items) - max_keys}" if len(items) > max_keys else ""
        return "{" + shown + more + "}"
    if isinstance(value, list | tuple):
        seq = cast("Sequence[Any]", value)
        if not seq:
            return "list[0]"
        return f"list[{len(seq)}] of {shape_of(seq[0], depth - 1, max_keys)}" if depth > 0 else f"list[{len(seq)}]"
    if value is None:
        return "null"
    for kind, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str")):
        if isinstance(value, kind):
            return name
    return type(cast(object, value)).__name__


def _step_number(segment: Segment) -> int | None:
    """The step number of ``steps.N`` / ``steps[N]``, or ``None``."""
    if isinstance(segment, int):
        return segment if segment >= 0 else None
    return int(segment) if segment.isdigit() else None


def _get(value: Any, seg: Segment) -> tuple[bool, Any]:
    """``value[seg]`` for an object key or a list index (a dotted digit string indexes a list too)."""
    if isinstance(value, Mapping):
        m = cast("Mapping[str, Any]", value)
        key = str(seg)
        return (True, m[key]) if key in m else (False, None)
    if isinstance(value, list | tuple):
        seq = cast("Sequence[Any]", value)
        k = seg if isinstance(seg, int) else int(seg) if seg.lstrip("-").isdigit() else None
        if k is not None and -len(seq) <= k < len(seq):
            return True, seq[k]
    return False, None


def _inside_wrapper(value: Any) -> tuple[bool, Any]:
    """The value a ``{"result": ...}`` or ``{"data": ...}`` object holds (``result`` first)."""
    if isinstance(value, Mapping):
        m = cast("Mapping[str, Any]", value)
        for key in _WRAPPERS:
            if key in m:
                return True, m[key]
    return False, None


def _missing(ref: str, tried: str, current: Any, seg: Segment) -> _Unresolved:
    shape = shape_of(current)
    if isinstance(current, Mapping):
        return _Unresolved(ref, f"{tried} has no key {str(seg)!r}; {tried} is {shape}")
    if isinstance(current, list | tuple):
        n = len(cast("Sequence[Any]", current))
        if isinstance(seg, str) and not seg.lstrip("-").isdigit():
            return _Unresolved(ref, f"{tried} is a list: {seg!r} is not an index; {tried} is {shape}")
        return _Unresolved(ref, f"{tried} has {n} items, no index {seg}; {tried} is {shape}")
    return _Unresolved(ref, f"{tried} is {shape}, not an object or a list: no {str(seg)!r} in it")


def _has_key(value: Any, key: str) -> bool:
    return isinstance(value, Mapping) and key in cast("Mapping[str, Any]", value)


def _walk(ref: str, root_name: str, value: Any, path: Sequence[Segment]) -> Any:
    current: Any = value
    tried = root_name
    for pos, seg in enumerate(path):
        if pos == 0 and seg == "result" and not _has_key(current, "result"):
            tried += ".result"  # Witsy's ``{{id.result...}}``: the step's result itself
            continue
        probe: Any = current
        found, got = _get(probe, seg)
        while not found:
            inside, probe = _inside_wrapper(probe)
            if not inside:
                raise _missing(ref, tried, current, seg)
            found, got = _get(probe, seg)
        current = got
        tried += f"[{seg}]" if isinstance(seg, int) else f".{seg}"
    return current


def _lookup(ref: str, done: Sequence[tuple[bool, Any]], ids: Mapping[str, int]) -> Any:
    parts = parse_reference(ref)
    assert parts is not None  # parse_steps refused malformed references
    if parts[0] == "steps":
        index = _step_number(parts[1])
        assert index is not None
        path, name = parts[2:], f"steps.{index}"
    else:
        index, path, name = ids[str(parts[0])], parts[1:], str(parts[0])
    if index >= len(done):
        raise _Unresolved(ref, f"step {index} did not run")
    ok, value = done[index]
    if not ok:
        raise _Unresolved(ref, f"step {index} failed: it has no result to refer to")
    return _walk(ref, name, value, path)


def resolve_args(step: ChainStep, done: Sequence[tuple[bool, Any]], ids: Mapping[str, int]) -> dict[str, Any]:
    """The step's arguments with every reference replaced (``done``: (ok, value) of each earlier step).

    Raises:
        ToolError: ``invalid_reference``, with the path tried and the shape of what it looked into.
    """

    def sub(v: Any) -> Any:
        if isinstance(v, str):
            if "{{" not in v:
                return v
            whole = _REF.fullmatch(v.strip())
            if whole is not None:
                return _lookup(whole.group(1), done, ids)

            def text(m: re.Match[str]) -> str:
                got = _lookup(m.group(1), done, ids)
                return got if isinstance(got, str) else json.dumps(got, ensure_ascii=False, default=str)

            return _REF.sub(text, v)
        if isinstance(v, Mapping):
            return {k: sub(x) for k, x in cast("Mapping[str, Any]", v).items()}
        if isinstance(v, list | tuple):
            return [sub(x) for x in cast("Sequence[Any]", v)]
        return v

    try:
        args = cast("dict[str, Any]", sub(step.args))
    except _Unresolved as e:
        raise ToolError(
            step.tool_id,
            clip(f"reference {{{{{e.ref}}}}} does not resolve: {e}", 1500),
            "validate_input",
            code=ErrorCode.INVALID_REFERENCE,
        ) from None
    up = step.use_previous
    if up is not False:
        previous = done[step.index - 1][1]
        if up == "merge":
            if not isinstance(previous, Mapping):
                raise ToolError(
                    step.tool_id,
                    f"use_previous 'merge' needs an object result; step {step.index - 1} returned {shape_of(previous)}",
                    "validate_input",
                    code=ErrorCode.INVALID_REFERENCE,
                )
            args = {**cast("Mapping[str, Any]", previous), **args}
        else:
            args = {**args, ("previous" if up is True else str(up)): previous}
    return args
