"""Chains without code: steps whose arguments reference earlier steps' results.

A step is ``{"tool_id", "args", "id", "use_previous", "on_error"}``. Anywhere in ``args``, a
string that is exactly ``"{{steps.0.items.0.id}}"`` (or ``"{{search.items.0.id}}"`` for the step
whose ``id`` is ``search``) is replaced by the referenced value, with its type; inside a longer
string the value is formatted as text (JSON for anything but a string). ``use_previous`` puts the
previous step's value in the arguments: ``true`` under ``previous``, a name under that name,
``"merge"`` merges an object result into them.

References are checked before anything runs (a step may only reference earlier steps); one that
does not resolve while the chain runs fails its step with ``invalid_reference``, and the message
shows the path tried and the shape of the value it was looking into.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from toolcode.exceptions import ErrorCode, InvalidArgumentsError, ToolError, clip

__all__ = ["CHAIN_SCHEMA", "ChainStep", "ChainStepSpec", "parse_steps", "resolve_args", "shape_of"]

_REF: Final = re.compile(r"\{\{\s*([^{}\s]{1,300})\s*\}\}")
_STEP_ID: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_STEP_KEYS: Final = frozenset({"tool_id", "args", "id", "use_previous", "on_error"})
_MAX_STEPS_SCANNED: Final = 10_000


class ChainStepSpec(BaseModel):
    """One step of a chain (the published JSON Schema of a chain is a list of these)."""

    model_config = ConfigDict(extra="forbid")

    tool_id: str = Field(description="The tool, 'namespace:name'.")
    args: dict[str, Any] = Field(
        default_factory=dict[str, Any],
        description="Its arguments; '{{steps.N.path}}' or '{{ID.path}}' refers to an earlier step's result.",
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
        tid: str = check_tool_id(f"steps[{i}].tool_id", step.get("tool_id"))
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
            root = ref.split(".", 1)[0]
            if root == "steps":
                parts = ref.split(".")
                if len(parts) < 2 or not parts[1].isdigit():
                    raise _bad(
                        f"steps[{i}].args", f"reference {{{{{clip(ref, 80)}}}}}: 'steps' needs a step number", tid
                    )
                if int(parts[1]) >= i:
                    raise _bad(
                        f"steps[{i}].args",
                        f"reference {{{{{clip(ref, 80)}}}}} points at step {parts[1]}, which is not before step {i}",
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


def _walk(ref: str, root_name: str, value: Any, path: list[str]) -> Any:
    current = value
    tried = root_name
    for seg in path:
        if isinstance(current, Mapping):
            m = cast("Mapping[str, Any]", current)
            if seg not in m:
                raise _Unresolved(ref, f"{tried} has no key {seg!r}; {tried} is {shape_of(current)}")
            current = m[seg]
        elif isinstance(current, list | tuple):
            seq = cast("Sequence[Any]", current)
            if not seg.lstrip("-").isdigit():
                raise _Unresolved(ref, f"{tried} is a list: {seg!r} is not an index; {tried} is {shape_of(current)}")
            k = int(seg)
            if not -len(seq) <= k < len(seq):
                raise _Unresolved(ref, f"{tried} has {len(seq)} items, no index {k}; {tried} is {shape_of(current)}")
            current = seq[k]
        else:
            raise _Unresolved(ref, f"{tried} is {shape_of(current)}, not an object or a list: no {seg!r} in it")
        tried = f"{tried}.{seg}"
    return current


def _lookup(ref: str, done: Sequence[tuple[bool, Any]], ids: Mapping[str, int]) -> Any:
    parts = ref.split(".")
    if parts[0] == "steps":
        index, path, name = int(parts[1]), parts[2:], f"steps.{parts[1]}"
    else:
        index, path, name = ids[parts[0]], parts[1:], parts[0]
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
