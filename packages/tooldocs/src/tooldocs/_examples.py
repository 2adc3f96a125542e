"""Tool examples with size caps."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from tooldocs._text import cap_text, json_text, one_line
from tooldocs.exceptions import ArgsTooLargeError, InvalidExampleError

__all__ = ["ExampleCaps", "ToolExample"]


@dataclass(frozen=True, slots=True)
class ExampleCaps:
    """Size caps for :class:`ToolExample`.

    Text fields are cut to their cap with a visible ``…``; args are never cut (a cut
    argument would be a different call), so args over a cap raise :class:`ArgsTooLargeError`.
    """

    max_depth: int = 5
    """Nesting depth of args (the args object itself is depth 1)."""
    max_keys: int = 64
    """Keys over all objects in args."""
    max_args_chars: int = 2000
    """Characters of the args as compact JSON."""
    title_chars: int = 80
    description_chars: int = 300
    result_hint_chars: int = 300


DEFAULT_CAPS = ExampleCaps()


def _measure(value: Any, depth: int, caps: ExampleCaps, counter: list[int], path: str) -> int:
    """Deepest depth reached; raises as soon as a cap is exceeded."""
    if depth > caps.max_depth:
        raise ArgsTooLargeError("depth", caps.max_depth, depth, path=path)
    deepest = depth
    if isinstance(value, Mapping):
        obj = cast("Mapping[Any, Any]", value)
        counter[0] += len(obj)
        if counter[0] > caps.max_keys:
            raise ArgsTooLargeError("keys", caps.max_keys, counter[0], path=path)
        for k, v in obj.items():
            if isinstance(v, Mapping | list):
                deepest = max(deepest, _measure(v, depth + 1, caps, counter, f"{path}/{k}"))
    elif isinstance(value, list):
        for i, v in enumerate(cast("list[Any]", value)):
            if isinstance(v, Mapping | list):
                deepest = max(deepest, _measure(v, depth + 1, caps, counter, f"{path}/{i}"))
    return deepest


@dataclass(frozen=True, slots=True)
class ToolExample:
    """One example call of a tool.

    Text fields are capped by characters with a visible ``…`` marker (a ``str`` is cut
    between characters, never inside a UTF-8 sequence, and never between a character and
    the combining marks that follow it). ``args`` must be JSON and within the caps.

    Raises:
        ArgsTooLargeError: ``args`` are deeper, have more keys, or are longer than the caps allow.
        InvalidExampleError: ``args`` are not a JSON object with string keys.
    """

    id: str = ""
    """Stable id; derived from title and args when empty."""
    title: str = ""
    """Short title (capped, one line)."""
    description: str = ""
    """What the example shows (capped)."""
    args: dict[str, Any] = field(default_factory=lambda: {})
    """The arguments, exactly as the tool receives them (wire names)."""
    result_hint: str | None = None
    """What the result looks like (capped); a JSON value is stored as compact JSON."""
    caps: ExampleCaps = field(default=DEFAULT_CAPS, repr=False, compare=False, kw_only=True)

    def __post_init__(self) -> None:
        caps = self.caps
        args: Any = self.args
        if not isinstance(args, Mapping) or not all(isinstance(k, str) for k in cast("Mapping[Any, Any]", args)):
            raise InvalidExampleError(self.id or self.title, "args", "must be a JSON object with string keys")
        try:
            encoded = json.dumps(args, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as e:
            raise InvalidExampleError(self.id or self.title, "args", f"must be JSON ({e})") from e
        _measure(args, 1, caps, [0], "")
        if len(encoded) > caps.max_args_chars:
            raise ArgsTooLargeError("chars", caps.max_args_chars, len(encoded))
        # Store a JSON round-trip: a plain, independent dict, so later changes to the caller's value do not leak in.
        object.__setattr__(self, "args", json.loads(encoded))
        object.__setattr__(self, "title", cap_text(one_line(self.title), caps.title_chars))
        object.__setattr__(self, "description", cap_text(self.description.strip(), caps.description_chars))
        hint: Any = self.result_hint
        if hint is not None:
            if not isinstance(hint, str):
                try:
                    hint = json_text(hint)
                except (TypeError, ValueError):
                    hint = repr(hint)
            object.__setattr__(self, "result_hint", cap_text(hint.strip(), caps.result_hint_chars))
        if not self.id:
            digest = hashlib.sha1((self.title + "\0" + encoded).encode("utf-8", "surrogatepass")).hexdigest()
            object.__setattr__(self, "id", "ex-" + digest[:10])

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, caps: ExampleCaps = DEFAULT_CAPS) -> ToolExample:
        """Build an example from a mapping with the fields of this class.

        Args:
            data: ``{"title": ..., "args": {...}, ...}``; unknown keys are an error.
            caps: Size caps.

        Returns:
            The example.

        Raises:
            InvalidExampleError: On an unknown key or a field of the wrong type.
            ArgsTooLargeError: If the args exceed a cap.
        """
        known = {"id", "title", "description", "args", "result_hint"}
        unknown = sorted(set(data) - known)
        ident = str(data.get("id") or data.get("title") or "")
        if unknown:
            raise InvalidExampleError(ident, unknown[0], f"unknown field; expected one of {sorted(known)}")
        for key in ("id", "title", "description"):
            if key in data and not isinstance(data[key], str):
                raise InvalidExampleError(ident, key, f"must be a string, got {type(data[key]).__name__}")
        return cls(
            id=data.get("id", ""),
            title=data.get("title", ""),
            description=data.get("description", ""),
            args=data.get("args", {}),
            result_hint=data.get("result_hint"),
            caps=caps,
        )

    def to_dict(self) -> dict[str, Any]:
        """The example as JSON-safe data (without the caps)."""
        out: dict[str, Any] = {"id": self.id, "title": self.title, "args": self.args}
        if self.description:
            out["description"] = self.description
        if self.result_hint is not None:
            out["result_hint"] = self.result_hint
        return out
