"""Learning the shape of tool results: infer a JSON Schema from a value, merge shapes, persist them.

A shape is a small JSON Schema (``type``, ``properties``, ``required``, ``items``,
``additionalProperties``, ``anyOf``), so the renderer shows it like any output schema.
Merging only ever widens a shape (keys are added, ``required`` shrinks, types become
unions, and past the caps a part becomes ``{}``, i.e. ``Any``), and a shape's size is
capped, so a tool's shape changes a bounded number of times: after a few calls it is
stable and recording a result changes nothing.

Results come from upstream servers (hostile input): inference reads at most
``max_nodes`` parts of a value however large or deep it is, and a merged shape that
grows past ``max_nodes`` loses its deepest levels, so learning costs bounded work.

A shape belongs to the definition of the tool it was learned from
(:func:`definition_fingerprint`): the same id may name another tool later (an upstream
server changed it, another caller saved a snippet under a freed name), and what the old
one returned is none of the new one's business.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import tempfile
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from tooldocs._text import json_text
from toolindex import Tool
from toolindex.log import get_logger

__all__ = ["ShapeFileWarning", "ShapeLimits", "definition_fingerprint", "infer_shape", "merge_shapes"]

_log = get_logger("tooldocs")

FILE_FORMAT = "tooldocs.result-shapes"
FILE_VERSION = 1


class ShapeFileWarning(UserWarning):
    """The learned-shapes file could not be read or written; learning goes on in memory."""


@dataclass(frozen=True, slots=True)
class ShapeLimits:
    """Caps that keep learned shapes small and learning cheap."""

    max_depth: int = 6
    """Deeper values are shown as ``Any``."""
    max_keys: int = 48
    """An object with more keys than this is treated as a mapping (``dict[str, V]``)."""
    max_items: int = 16
    """Only this many items of a list are inspected (first and last ones)."""
    max_union: int = 4
    """A union of more types than this becomes ``Any``."""
    max_nodes: int = 1_000
    """Parts (schema nodes) of one shape; a larger one loses its deepest levels (they become
    ``Any``). Inference reads at most 16 times this many parts of a value."""


_DEFAULT_LIMITS = ShapeLimits()
_FIELD = re.compile(r"[A-Za-z_$@][A-Za-z0-9_]{0,63}(?:-[A-Za-z0-9_]{1,63}){0,7}")
"""A key that reads as a field name: ``id``, ``createdAt``, ``x-rate-limit``, ``@type``, ``$ref``."""
_ID_LIKE = re.compile(r"[0-9a-fA-F]{8}-|[0-9a-fA-F]*[0-9][0-9a-fA-F]*$")
"""A key that reads as an id however it starts: a UUID, a run of hex digits (``a3f9c2e8...``)."""


def _field(key: str) -> bool:
    """Whether ``key`` is a field name rather than data (an address, a date, an id, a phrase, a path).

    Learned shapes are shown to everyone who describes a tool: only field names are learned as such.
    """
    if _FIELD.fullmatch(key) is None or (len(key) >= 12 and _ID_LIKE.match(key)):
        return False
    return not any(_token_like(part) for part in _PARTS.split(key))


_PARTS = re.compile(r"[_-]")


def _token_like(part: str) -> bool:
    """Whether a part of a key reads as a token or a credential.

    Long, with letters and digits mixed (``4eC39HqLyjWDarjtT1zdp7dc``), or long capitals and
    digits (``AKIAIOSFODNN7EXAMPLE``).
    """
    if len(part) < 10:
        return False
    digits = sum(c.isdigit() for c in part)
    if digits >= 2 and len(part) - digits >= 2:
        return True
    return len(part) >= 16 and part.isupper()


# Parts of a value inference may read, per part a shape may hold: items of a list share one
# shape, so reading takes more parts than the shape keeps.
_READ_FACTOR = 16
_ANY: dict[str, Any] = {}


def infer_shape(value: Any, limits: ShapeLimits = _DEFAULT_LIMITS) -> dict[str, Any]:
    """The shape (a small JSON Schema) of one JSON value.

    Lists and large objects are sampled and at most ``limits.max_nodes`` parts are read,
    so the work is bounded whatever the value's size: cheap enough to run after every call.

    Args:
        value: A plain JSON value (dicts, lists, strings, numbers, bools, ``None``).
        limits: Caps on depth, keys, list items and unions.

    Returns:
        A JSON Schema describing ``value``; ``{}`` (any) for what is not JSON.
    """
    shape = _infer(value, limits, 0, [0])
    return shape if _size(shape, limits.max_nodes) <= limits.max_nodes else _prune(shape, limits.max_nodes)


def _infer(value: Any, limits: ShapeLimits, depth: int, seen: list[int]) -> dict[str, Any]:
    # ``seen`` counts the parts read so far, across the whole value.
    seen[0] += 1
    if seen[0] > _READ_FACTOR * limits.max_nodes:
        return dict(_ANY)
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if depth >= limits.max_depth:
        return dict(_ANY)
    if isinstance(value, list | tuple):
        items = cast("list[Any] | tuple[Any, ...]", value)
        if not items:
            return {"type": "array"}
        n = limits.max_items
        sample = list(items) if len(items) <= n else [*items[: n - n // 4], *items[-(n // 4) :]]
        shape: dict[str, Any] | None = None
        for item in sample:
            s = _infer(item, limits, depth + 1, seen)
            # Items of one list usually share a shape: compare before merging.
            shape = s if shape is None or shape == s else _merge(shape, s, limits)
        return {"type": "array", "items": shape}
    if isinstance(value, Mapping):
        obj = cast("Mapping[Any, Any]", value)
        if len(obj) > limits.max_keys or not all(isinstance(k, str) and _field(k) for k in obj):
            # A mapping (many keys, or keys that are data): a sample of its values stands for all of them.
            merged: dict[str, Any] | None = None
            for k, v in itertools.islice(obj.items(), limits.max_items):
                if not isinstance(k, str):
                    return {"type": "object"}
                s = _infer(v, limits, depth + 1, seen)
                merged = s if merged is None else _merge(merged, s, limits)
            return {"type": "object", "additionalProperties": merged or {}}
        if not all(isinstance(k, str) for k in obj):
            return {"type": "object"}
        props = {k: _infer(v, limits, depth + 1, seen) for k, v in obj.items()}
        return {"type": "object", "properties": props, "required": sorted(props)}
    return dict(_ANY)


def _variants(shape: dict[str, Any]) -> list[dict[str, Any]]:
    any_of = shape.get("anyOf")
    if isinstance(any_of, list):
        return [cast("dict[str, Any]", v) for v in cast("list[Any]", any_of) if isinstance(v, dict)]
    return [shape]


def _group(shape: dict[str, Any]) -> str:
    t = shape.get("type")
    if t in ("integer", "number"):
        return "number"
    return t if isinstance(t, str) else "?"


def merge_shapes(a: Mapping[str, Any], b: Mapping[str, Any], limits: ShapeLimits = _DEFAULT_LIMITS) -> dict[str, Any]:
    """Merge two shapes into one that describes values of either.

    Objects merge their properties (a key missing on one side becomes optional),
    ``integer`` and ``number`` merge to ``number``, other differing types become a union
    (``anyOf``, at most ``limits.max_union`` members, else ``{}``).

    Args:
        a: A shape.
        b: Another shape.
        limits: Caps.

    Returns:
        The merged shape (a new dict; the inputs are not modified), at most
        ``limits.max_nodes`` parts (deeper levels become ``Any`` past that).
    """
    merged = _merge(a, b, limits)
    return merged if _size(merged, limits.max_nodes) <= limits.max_nodes else _prune(merged, limits.max_nodes)


def _merge(a: Mapping[str, Any], b: Mapping[str, Any], limits: ShapeLimits) -> dict[str, Any]:
    if a == b:
        return dict(a)
    if not a or not b:
        return {}
    a = dict(a)
    b = dict(b)
    out: list[dict[str, Any]] = [dict(v) for v in _variants(a)]
    for v in _variants(b):
        for i, o in enumerate(out):
            if _group(o) == _group(v) and _group(v) != "?":
                out[i] = _merge_same(o, v, limits)
                break
        else:
            out.append(dict(v))
    if any(not v for v in out) or len(out) > limits.max_union:
        return {}
    if len(out) == 1:
        return out[0]
    out.sort(key=lambda v: v.get("type") == "null")
    return {"anyOf": out}


def _merge_same(a: dict[str, Any], b: dict[str, Any], limits: ShapeLimits) -> dict[str, Any]:
    if a == b:
        return a
    t = _group(a)
    if t == "number":
        return {"type": "number"} if a.get("type") != b.get("type") else a
    if t == "array":
        ia, ib = a.get("items"), b.get("items")
        if ia is None:
            return {"type": "array", "items": ib} if ib is not None else {"type": "array"}
        if ib is None:
            return {"type": "array", "items": ia}
        return {"type": "array", "items": _merge(ia, ib, limits)}
    if t == "object":
        pa = cast("dict[str, Any] | None", a.get("properties"))
        pb = cast("dict[str, Any] | None", b.get("properties"))
        if pa is not None and pb is not None:
            keys = list(dict.fromkeys([*pa, *pb]))
            if len(keys) <= limits.max_keys:
                props = {
                    k: _merge(pa[k], pb[k], limits) if k in pa and k in pb else dict(pa[k] if k in pa else pb[k])
                    for k in keys
                }
                req = sorted(set(a.get("required") or ()) & set(b.get("required") or ()))
                return {"type": "object", "properties": props, "required": req}
        # A mapping on either side, or too many keys: one value shape for all keys.
        value: dict[str, Any] | None = None
        for side in (a, b):
            for s in _object_values(side):
                value = s if value is None else _merge(value, s, limits)
        return {"type": "object", "additionalProperties": value if value is not None else {}}
    return a


def _as_shape(value: Any) -> dict[str, Any] | None:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def _children(shape: Mapping[str, Any]) -> list[dict[str, Any]]:
    subs: list[Any] = [shape.get("items"), shape.get("additionalProperties")]
    props = _as_shape(shape.get("properties"))
    if props is not None:
        subs.extend(props.values())
    any_of = shape.get("anyOf")
    if isinstance(any_of, list):
        subs.extend(cast("list[Any]", any_of))
    return [c for c in map(_as_shape, subs) if c is not None]


def _size(shape: Mapping[str, Any], stop: int) -> int:
    """Parts of a shape, counted up to a little past ``stop``."""
    n = 0
    todo: list[Mapping[str, Any]] = [shape]
    while todo and n <= stop:
        n += 1
        todo.extend(_children(todo.pop()))
    return n


def _cut(shape: Mapping[str, Any], depth: int) -> dict[str, Any]:
    """A copy of ``shape`` whose parts nested deeper than ``depth`` are ``Any``."""
    if depth <= 0 and _children(shape):
        return {}
    out = dict(shape)
    for key in ("items", "additionalProperties"):
        sub = _as_shape(out.get(key))
        if sub is not None:
            out[key] = _cut(sub, depth - 1)
    props = _as_shape(out.get("properties"))
    if props is not None:
        out["properties"] = {k: _cut_any(v, depth - 1) for k, v in props.items()}
    if isinstance(out.get("anyOf"), list):
        # Variants count as a level too, so that the cut always ends.
        out["anyOf"] = [_cut_any(v, depth - 1) for v in cast("list[Any]", out["anyOf"])]
    return out


def _cut_any(value: Any, depth: int) -> Any:
    sub = _as_shape(value)
    return value if sub is None else _cut(sub, depth)


def _prune(shape: dict[str, Any], max_nodes: int) -> dict[str, Any]:
    # Only widens: the deepest levels go (become Any), as many as it takes to fit.
    levels: list[int] = []
    todo: list[Mapping[str, Any]] = [shape]
    while todo:
        levels.append(len(todo))
        todo = [c for t in todo for c in _children(t)]
    kept = 0
    for depth, n in enumerate(levels):
        kept += n
        if kept > max_nodes:
            return _cut(shape, depth - 1) if depth > 0 else {}
    return shape


def _object_values(shape: dict[str, Any]) -> list[dict[str, Any]]:
    props = shape.get("properties")
    if isinstance(props, dict):
        return list(cast("dict[str, dict[str, Any]]", props).values())
    extra = shape.get("additionalProperties")
    return [cast("dict[str, Any]", extra)] if isinstance(extra, dict) else []


def definition_fingerprint(tool: Tool) -> str:
    """A digest of what defines ``tool``: what a learned shape of its results belongs to.

    Its id and every field its server gives it (name, title, description, input and output
    schemas, annotations, ``_meta``), not the tags the catalog adds. Any change gives another
    digest: a shape learned before it is not this definition's.

    Args:
        tool: The tool.

    Returns:
        32 hex digits; ``""`` for a definition that cannot be written as JSON (nested past
        Python's recursion limit): results of such a tool teach nothing.
    """
    try:
        text = json.dumps(
            {"id": tool.id, **tool.to_mcp()}, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str
        )
    except (ValueError, RecursionError):
        return ""
    return hashlib.sha256(b"tooldocs.definition/1\0" + text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class LearnedShape:
    """A learned shape, how many results it was learned from, and from which definition."""

    shape: dict[str, Any]
    count: int
    definition: str | None = None
    """The :func:`definition_fingerprint` of the tool the results came from; ``None`` for a
    record written before definitions were kept (it belongs to no definition: never shown)."""


class ShapeFile:
    """A JSON file of learned shapes, read once and written atomically.

    A file that cannot be read is never overwritten as is: the first save moves it
    aside (``<name>.corrupt``, numbered when that exists) and warns where it went.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._corrupt = False

    def load(self) -> dict[str, LearnedShape]:
        """Read the file; a missing file is empty, a corrupt one warns and is empty."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as e:
            self._warn_corrupt(f"cannot be read ({e})")
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            self._warn_corrupt(f"is not valid JSON ({e})")
            return {}
        if not isinstance(data, dict) or cast("dict[str, Any]", data).get("format") != FILE_FORMAT:
            self._warn_corrupt(f"is not a learned-shapes file (expected 'format': {FILE_FORMAT!r})")
            return {}
        doc = cast("dict[str, Any]", data)
        if doc.get("version") != FILE_VERSION:
            self._warn_corrupt(f"has version {doc.get('version')!r}; this version reads {FILE_VERSION}")
            return {}
        tools = doc.get("tools")
        if not isinstance(tools, dict):
            self._warn_corrupt("has no 'tools' object")
            return {}
        out: dict[str, LearnedShape] = {}
        bad: list[str] = []
        for tool_id, entry in cast("dict[str, Any]", tools).items():
            if isinstance(entry, dict):
                e = cast("dict[str, Any]", entry)
                shape, count, definition = e.get("shape"), e.get("count", 1), e.get("definition")
                if (
                    isinstance(shape, dict)
                    and isinstance(count, int)
                    and not isinstance(count, bool)
                    and (definition is None or isinstance(definition, str))
                ):
                    out[tool_id] = LearnedShape(cast("dict[str, Any]", shape), count, definition)
                    continue
            bad.append(tool_id)
        if bad:
            # Keep the good entries, but do not overwrite the bad ones silently either.
            self._warn_corrupt(f"has {len(bad)} unreadable entries ({', '.join(sorted(bad)[:5])})")
        return out

    def _warn_corrupt(self, why: str) -> None:
        self._corrupt = True
        msg = (
            f"learned result shapes file {str(self.path)!r} {why}; starting without its shapes. "
            "It will be moved aside, not overwritten, when new shapes are saved."
        )
        _log.warning("shapes.file_unreadable", path=str(self.path), reason=why)
        warnings.warn(msg, ShapeFileWarning, stacklevel=4)

    def save(self, shapes: Mapping[str, LearnedShape]) -> bool:
        """Write all shapes atomically (temp file + rename); returns whether it worked."""
        data = {
            "format": FILE_FORMAT,
            "version": FILE_VERSION,
            "tools": {k: entry_of(v) for k, v in sorted(shapes.items())},
        }
        text = json_text(data)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._corrupt and self.path.exists():
                backup = self._backup_path()
                os.replace(self.path, backup)
                _log.warning("shapes.file_moved_aside", path=str(self.path), backup=str(backup))
                warnings.warn(
                    f"unreadable learned result shapes file moved to {str(backup)!r}; writing a new {str(self.path)!r}",
                    ShapeFileWarning,
                    stacklevel=4,
                )
            self._corrupt = False
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as e:
            _log.warning("shapes.file_write_failed", path=str(self.path), error=str(e))
            warnings.warn(
                f"cannot write learned result shapes to {str(self.path)!r}: {e}", ShapeFileWarning, stacklevel=4
            )
            return False
        return True

    def _backup_path(self) -> Path:
        candidate = self.path.with_name(self.path.name + ".corrupt")
        n = 1
        while candidate.exists():
            candidate = self.path.with_name(f"{self.path.name}.corrupt.{n}")
            n += 1
        return candidate


def entry_of(learned: LearnedShape) -> dict[str, Any]:
    """A shape as the file and :meth:`~tooldocs.InMemoryStore.learned_shapes` give it.

    ``definition`` is a key the first version of the format did not have: readers of that
    version ignore it, and this one reads their entries (without it) as no definition's.
    """
    out: dict[str, Any] = {"count": learned.count, "shape": dict(learned.shape)}
    if learned.definition is not None:
        out["definition"] = learned.definition
    return out
