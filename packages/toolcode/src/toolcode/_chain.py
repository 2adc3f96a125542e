"""Chains without code: steps whose arguments reference earlier steps' results.

``"{{steps.0.items[0].id}}"`` or ``"{{ID.path}}"`` in a step's ``args`` is replaced by that
value; ``use_previous`` passes the previous step's value. Either makes the step *fed*: its arguments are
known only once the earlier steps ran, so it is judged (and asked about) as it is made, with them
filled in, never with the arguments as written. docs/snippet-api.md ("Chains") gives the
rules, among them the two that let references written for other tools' results work:
``{{ID.result...}}`` names the result itself, and ``result`` / ``data`` wrappers are looked through
where a key is missing. References are checked before anything runs; one that does not resolve
at run time fails its step with ``invalid_reference``, showing the path tried and the shape found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from toolcode._data import as_list, as_mapping
from toolcode.exceptions import ErrorCode, InvalidArgumentsError, ToolError, clip
from toolrun import DEFAULT_ARGUMENT_LIMITS

__all__ = ["CHAIN_SCHEMA", "ChainStep", "ChainStepSpec", "one_tool_key", "parse_steps", "resolve_args", "shape_of"]

_MAX_FILLED: Final = DEFAULT_ARGUMENT_LIMITS.max_size
"""Most characters that references written into text may fill in (the runner's bound on arguments)."""
_MAX_REFERENCES: Final = 10_000
"""Most references one step's arguments may fill in (each is a lookup on the event loop)."""
_REF: Final = re.compile(r"\{\{\s*([^{}\s]{1,300})\s*\}\}")
_STEP_ID: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}\Z")
_STEP_KEYS: Final = frozenset({"tool_id", "tool", "args", "id", "use_previous", "on_error"})
_MAX_STEPS_SCANNED: Final = 10_000
_PART: Final = re.compile(r"([^\[\]]*)((?:\[-?\d{1,9}\])*)")
_INDEX: Final = re.compile(r"\[(-?\d{1,9})\]")
_WRAPPERS: Final = ("result", "data")
"""Keys of the wrappers a reference looks through (``{"result": ...}``, ``{"data": ...}``)."""

Segment = str | int
"""One step of a reference's path: a key (or a dotted index, ``.0``), or a bracket index (``[0]``)."""


def parse_reference(ref: str) -> list[Segment] | None:
    """``search.items[0].id`` → ``["search", "items", 0, "id"]``; ``None`` when malformed.

    The first segment is the step (``steps`` or an id); an empty key or a bracket that is not an
    integer index is malformed.
    """
    out: list[Segment] = []
    for part in ref.split("."):
        m = _PART.fullmatch(part)
        if m is None or (not m.group(1) and not m.group(2)) or (not m.group(1) and not out):
            return None  # a path starts with the step's name
        if m.group(1):
            out.append(m.group(1))
        out.extend(int(i) for i in _INDEX.findall(m.group(2)))
    return out


def one_tool_key(schema: dict[str, Any]) -> None:
    """A step's JSON Schema names its tool under ``tool_id`` or ``tool`` (neither has a default)."""
    for key in ("tool_id", "tool"):
        schema.get("properties", {}).get(key, {}).pop("default", None)
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


CHAIN_SCHEMA: Final[dict[str, Any]] = {"type": "array", "minItems": 1, "items": ChainStepSpec.model_json_schema()}
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
    fed: bool = False
    """Whether its arguments take earlier steps' results (references, ``use_previous``): known only as it is made."""


def _bad(field: str, reason: str, tool_id: str | None = None) -> InvalidArgumentsError:
    return InvalidArgumentsError(field, reason, tool_id=tool_id)


def parse_steps(
    steps: Any,
    *,
    check_tool_id: Callable[[str, Any], str],
    check_args: Callable[[Any, str, str], dict[str, Any]],
    check_choice: Callable[[str, Any, tuple[str, ...]], str],
) -> list[ChainStep]:
    """Parse and check a chain (the checkers are the operations' own, for one set of messages).

    Raises:
        InvalidArgumentsError: For a malformed step, a duplicate or malformed id, or a reference
            to a step that is not earlier in the chain (nothing runs then).
    """
    items = as_list(steps)
    if items is None:
        raise _bad("steps", f"must be a list of steps, got {type(steps).__name__}")
    if not items:
        raise _bad("steps", "must have at least one step")
    out: list[ChainStep] = []
    ids: dict[str, int] = {}
    for i, raw in enumerate(items):
        at = f"steps[{i}]"
        step = as_mapping(raw)
        if step is None:
            raise _bad(at, f"must be a dict with tool_id and args, got {type(raw).__name__}")
        unknown = sorted(str(k) for k in step if k not in _STEP_KEYS)
        if unknown:
            raise _bad(at, f"unknown keys {', '.join(clip(k, 40) for k in unknown[:5])}")
        key = "tool" if "tool" in step and "tool_id" not in step else "tool_id"
        if "tool" in step and "tool_id" in step and step["tool"] != step["tool_id"]:
            raise _bad(at, "has both tool_id and tool (the same thing): keep one")
        tid = check_tool_id(f"{at}.{key}", step.get(key))
        args = check_args(step.get("args"), tid, f"{at}.args")
        sid = step.get("id")
        if sid is not None:
            if not isinstance(sid, str) or not _STEP_ID.match(sid) or sid == "steps":
                got = clip(repr(sid), 60)
                raise _bad(f"{at}.id", f"must be a name (letters, digits, _ and -; not 'steps'), got {got}", tid)
            if sid in ids:
                raise _bad(f"{at}.id", f"{sid!r} is already the id of step {ids[sid]}", tid)
            ids[sid] = i
        use_previous = step.get("use_previous", False)
        if not isinstance(use_previous, bool | str) or (isinstance(use_previous, str) and not use_previous.strip()):
            got = clip(repr(use_previous), 60)
            raise _bad(f"{at}.use_previous", f"must be true, false, an argument name or 'merge', got {got}", tid)
        if use_previous is not False and i == 0:
            raise _bad(f"{at}.use_previous", "the first step has no previous result", tid)
        target = "previous" if use_previous is True else use_previous
        if isinstance(target, str) and target != "merge" and target in args:
            reason = f"has its own {target!r} while use_previous puts the previous value there; remove one"
            raise _bad(f"{at}.args", reason, tid)
        on_error = check_choice(f"{at}.on_error", step.get("on_error", "abort"), ("abort", "continue"))
        refs = _references(args)
        for ref in refs:
            problem = _reference_problem(ref, i, ids)
            if problem is not None:
                raise _bad(f"{at}.args", f"reference {{{{{clip(ref, 80)}}}}}{problem}", tid)
        out.append(ChainStep(i, tid, args, use_previous, on_error, sid, fed=bool(refs) or use_previous is not False))
    return out


def _reference_problem(ref: str, i: int, ids: Mapping[str, int]) -> str | None:
    """What is wrong with a reference in step ``i`` (the end of a sentence), or ``None``."""
    parts = parse_reference(ref)
    if parts is None:
        return " is not a path of keys and indices ('{{ID.key.0}}', '{{ID.items[0].id}}')"
    if parts[0] != "steps":
        known = ", ".join(sorted(ids)) or "none"
        return None if parts[0] in ids else f": no earlier step has the id {parts[0]!r} (ids so far: {known})"
    number = _step_number(parts[1]) if len(parts) > 1 else None
    if number is None:
        return ": 'steps' needs a step number"
    return f" points at step {number}, which is not before step {i}" if number >= i else None


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
        elif (m := as_mapping(v)) is not None:
            stack.extend(m.values())
        elif (items := as_list(v)) is not None:
            stack.extend(items)
    return found


class _Unresolved(Exception):
    def __init__(self, ref: str, message: str) -> None:
        self.ref = ref
        super().__init__(message)


_SCALARS: Final = ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"))


def shape_of(value: Any, depth: int = 2, max_keys: int = 12) -> str:
    """A short description of a value's shape: keys and types, nested ``depth`` levels, capped."""
    if (m := as_mapping(value)) is not None:
        if depth <= 0:
            return f"object with {len(m)} keys"
        items = list(m.items())
        shown = ", ".join(f"{clip(str(k), 40)}: {shape_of(v, depth - 1, max_keys)}" for k, v in items[:max_keys])
        return "{" + shown + (f", … +{len(items) - max_keys}" if len(items) > max_keys else "") + "}"
    if (seq := as_list(value)) is not None:
        if not seq or depth <= 0:
            return f"list[{len(seq)}]"
        return f"list[{len(seq)}] of {shape_of(seq[0], depth - 1, max_keys)}"
    if value is None:
        return "null"
    return next((name for kind, name in _SCALARS if isinstance(value, kind)), type(value).__name__)


def _step_number(segment: Segment) -> int | None:
    """The step number of ``steps.N`` / ``steps[N]``, or ``None``."""
    if isinstance(segment, int):
        return segment if segment >= 0 else None
    return int(segment) if segment.isdigit() else None


def _get(value: Any, seg: Segment) -> tuple[bool, Any]:
    """``value[seg]`` for an object key or a list index (a dotted digit string indexes a list too)."""
    if (m := as_mapping(value)) is not None:
        return (True, m[str(seg)]) if str(seg) in m else (False, None)
    if (seq := as_list(value)) is not None:
        k = seg if isinstance(seg, int) else int(seg) if seg.lstrip("-").isdigit() else None
        if k is not None and -len(seq) <= k < len(seq):
            return True, seq[k]
    return False, None


def _missing(ref: str, tried: str, current: Any, seg: Segment) -> _Unresolved:
    shape = shape_of(current)
    if as_mapping(current) is not None:
        return _Unresolved(ref, f"{tried} has no key {str(seg)!r}; {tried} is {shape}")
    if (seq := as_list(current)) is not None:
        if isinstance(seg, str) and not seg.lstrip("-").isdigit():
            return _Unresolved(ref, f"{tried} is a list: {seg!r} is not an index; {tried} is {shape}")
        return _Unresolved(ref, f"{tried} has {len(seq)} items, no index {seg}; {tried} is {shape}")
    return _Unresolved(ref, f"{tried} is {shape}, not an object or a list: no {str(seg)!r} in it")


def _walk(ref: str, root_name: str, value: Any, path: Sequence[Segment]) -> Any:
    current: Any = value
    tried = root_name
    for pos, seg in enumerate(path):
        if pos == 0 and seg == "result" and "result" not in (as_mapping(current) or {}):
            tried += ".result"  # Witsy's ``{{id.result...}}``: the step's result itself
            continue
        probe: Any = current
        found, got = _get(probe, seg)
        while not found:
            wrapper = as_mapping(probe) or {}
            inner = next((k for k in _WRAPPERS if k in wrapper), None)
            if inner is None:
                raise _missing(ref, tried, current, seg)
            probe = wrapper[inner]
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


class _TooLarge(Exception):
    """The text filled in went past the arguments' size bound."""


def _reference_error(tool_id: str, message: str) -> ToolError:
    return ToolError(tool_id, message, "validate_input", code=ErrorCode.INVALID_REFERENCE)


def resolve_args(step: ChainStep, done: Sequence[tuple[bool, Any]], ids: Mapping[str, int]) -> dict[str, Any]:
    """The step's arguments with every reference replaced (``done``: (ok, value) of each earlier step).

    References written into text are filled in within the arguments' size bound (a result
    referred to many times is not copied past it), at most :data:`_MAX_REFERENCES` of them; a
    reference that is a whole value is that value.

    Raises:
        ToolError: ``invalid_reference``, with the path tried and the shape of what it looked into;
            ``validate_input`` when the text filled in would be larger than the arguments may be.
    """
    room = [_MAX_FILLED, _MAX_REFERENCES]

    def lookup(ref: str) -> Any:
        room[1] -= 1
        if room[1] < 0:
            raise _TooLarge
        return _lookup(ref, done, ids)

    def text(m: re.Match[str]) -> str:
        got = lookup(m.group(1))
        out = got if isinstance(got, str) else json.dumps(got, ensure_ascii=False, default=str)
        room[0] -= len(out)
        if room[0] < 0:
            raise _TooLarge
        return out

    def sub(v: Any) -> Any:
        if isinstance(v, str):
            if "{{" not in v:
                return v
            whole = _REF.fullmatch(v.strip())
            return lookup(whole.group(1)) if whole is not None else _REF.sub(text, v)
        if (m := as_mapping(v)) is not None:
            return {k: sub(x) for k, x in m.items()}
        if (seq := as_list(v)) is not None:
            return [sub(x) for x in seq]
        return v

    try:
        args: dict[str, Any] = {k: sub(x) for k, x in step.args.items()}
    except _Unresolved as e:
        raise _reference_error(step.tool_id, clip(f"reference {{{{{e.ref}}}}} does not resolve: {e}", 1500)) from None
    except _TooLarge:
        raise ToolError(
            step.tool_id,
            f"the arguments with their references filled in are larger than {_MAX_FILLED:,} characters of JSON, "
            f"or refer more than {_MAX_REFERENCES:,} times: refer to less, or to a smaller part of the result",
            "validate_input",
            code=ErrorCode.INVALID_ARGUMENTS,
        ) from None
    up = step.use_previous
    if up is False:
        return args
    previous = done[step.index - 1][1]
    if up != "merge":
        return {**args, ("previous" if up is True else str(up)): previous}
    merged = as_mapping(previous)
    if merged is None:
        raise _reference_error(
            step.tool_id,
            f"use_previous 'merge' needs an object result; step {step.index - 1} returned {shape_of(previous)}",
        )
    return {**merged, **args}
