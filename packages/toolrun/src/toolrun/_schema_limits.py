"""Bounds on what a JSON Schema can make the host do, checked before anything compiles it.

A tool's schema comes from whoever serves the tool, so it is hostile input: it can nest
thousands of levels (validators recurse), hold tens of thousands of properties, or fan out
through ``$ref`` so that one check evaluates millions of subschemas. :func:`check_schema_bounds`
walks the schema once, iteratively (no recursion, so no depth can crash it), stops at the first
bound crossed and says which bound and where (a JSON pointer). It also enforces the one rule
about references: every ``$ref`` (``$dynamicRef``, ``$recursiveRef``) must point inside the
same document (start with ``#``); nothing is ever fetched, from the network or from files.

The defaults were chosen against real catalogs (3,475 tools from five public MCP tool
collections): the largest input schema there nests 15 levels, has 284 JSON values, 44
properties in one object, 4 ``$ref``, 7 regexes and about 7,700 characters. Every default is at least 4 times (most
are 50 times) above that, and each stays small enough that compiling and checking a schema at the
bound takes milliseconds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast
from urllib.parse import unquote

from toolrun.exceptions import InvalidSchemaError, SchemaLimitError

__all__ = ["DEFAULT_SCHEMA_LIMITS", "SchemaLimits", "SchemaPattern", "SchemaSummary", "check_schema_bounds"]


@dataclass(frozen=True, slots=True)
class SchemaLimits:
    """Bounds on one JSON Schema document (see :func:`check_schema_bounds`).

    Every bound is inclusive (a schema exactly at it passes). The measured maximum of the real
    catalogs is given for each.
    """

    max_depth: int = 64
    """Most nested objects/arrays, the root counting as 1 (catalogs: 15)."""
    max_nodes: int = 20_000
    """Most JSON values in the document: objects, arrays, strings, numbers… (catalogs: 284)."""
    max_size: int = 1_000_000
    """Most characters of the schema as compact JSON text, estimated while walking (catalogs: about 7,700)."""
    max_properties: int = 1_000
    """Most members of one JSON object, e.g. of one ``properties`` (catalogs: 44)."""
    max_refs: int = 1_000
    """Most ``$ref`` / ``$dynamicRef`` / ``$recursiveRef`` keywords (catalogs: 4)."""
    max_patterns: int = 100
    """Most regexes (``pattern`` values and ``patternProperties`` keys); each compiles to up
    to 256 KiB and a few milliseconds, so this caps a schema's regex cost (catalogs: 7)."""
    max_expanded_nodes: int = 50_000
    """Most JSON values once every ``$ref`` is replaced by its target, recursive references
    counted once (catalogs: 445). This is what one check can evaluate: a chain of
    definitions that each use the next one twice doubles it at every link."""
    max_applications: int = 100
    """For a recursive schema: most subschemas it can apply to one value at any depth
    (catalogs: 1). A recursive reference used twice on the same value (``allOf`` of two
    ``$ref`` to ``#``) doubles this at every level of the value, so validating a value 30
    levels deep would take minutes; such a schema is refused."""

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"SchemaLimits.{name} must be a positive integer, got {value!r}")


DEFAULT_SCHEMA_LIMITS: Final = SchemaLimits()
"""The bounds applied when none are given."""


@dataclass(frozen=True, slots=True)
class SchemaSummary:
    """What :func:`check_schema_bounds` measured on a schema that is within its bounds."""

    depth: int
    """Nesting depth (objects and arrays; the root is 1)."""
    nodes: int
    """JSON values in the document."""
    size: int
    """Estimated characters of compact JSON."""
    refs: int
    """Reference keywords."""
    expanded_nodes: int
    """JSON values with every non-recursive reference inlined."""
    recursive: bool
    """Whether some reference points back to a schema it is inside of (a tree, a linked list)."""
    patterns: tuple[SchemaPattern, ...]
    """Every ``pattern`` value and every ``patternProperties`` key."""


@dataclass(frozen=True, slots=True)
class SchemaPattern:
    """One regex found in a schema."""

    regex: str
    """The regex."""
    path: tuple[str, ...]
    """Keys from the root to it (for a ``patternProperties`` key: to that key's entry)."""
    pointer: str
    """The same as a JSON pointer, clipped for messages."""
    is_key: bool
    """Whether it is a ``patternProperties`` key (else a ``pattern`` value)."""


# Keywords whose values are data, not schemas: a "$ref" inside them is a value like any other.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples", "example"})
# Keywords whose values map names to schemas.
_MAP_KEYWORDS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
_SCHEMA, _MAP, _DATA = 0, 1, 2
_CLIP = 120


def _clip(text: str, limit: int = _CLIP) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]}…{text[-(limit - head - 1) :]}"


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


class _Walk:
    """Parent links for the values walked so far, so a pointer is built only when needed."""

    __slots__ = ("keys", "parents")

    def __init__(self) -> None:
        self.parents: list[int] = [-1]
        self.keys: list[str] = [""]

    def add(self, parent: int, key: str) -> int:
        self.parents.append(parent)
        self.keys.append(key)
        return len(self.parents) - 1

    def path(self, index: int) -> tuple[str, ...]:
        parts: list[str] = []
        while index > 0:
            parts.append(self.keys[index])
            index = self.parents[index]
        return tuple(reversed(parts))

    def pointer(self, index: int) -> str:
        return _pointer(self.path(index))


def _pointer(path: tuple[str, ...]) -> str:
    if not path:
        return ""
    # A hostile schema can make the path thousands of segments long, or one key megabytes.
    return _clip("/" + "/".join(_clip(_escape(p), 40) for p in path), 200)


def check_schema_bounds(schema: Any, limits: SchemaLimits = DEFAULT_SCHEMA_LIMITS) -> SchemaSummary:
    """Check one JSON Schema document against ``limits`` and the same-document ``$ref`` rule.

    The walk is iterative and stops at the first bound crossed, so its cost is bounded by the
    limits, not by the schema: a schema nested 5,000 levels or with 30,000 properties is
    refused in well under a millisecond.

    Args:
        schema: The schema (plain JSON: dicts with string keys, lists, strings, numbers,
            booleans, ``None``); a boolean schema is fine.
        limits: The bounds.

    Returns:
        What was measured, with the regexes found (for the caller's regex engine).

    Raises:
        SchemaLimitError: If a bound is crossed (names the bound and the JSON pointer).
        InvalidSchemaError: If a reference points outside the document, or the schema holds a
            value that is not JSON.
    """
    walk = _Walk()
    stack: list[tuple[Any, int, int, int]] = [(schema, 1, _SCHEMA, 0)]
    nodes = size = refs = max_depth = 0
    patterns: list[SchemaPattern] = []
    anchors: dict[str, Any] = {}
    has_ids = False
    while stack:
        value, depth, kind, index = stack.pop()
        nodes += 1
        if nodes > limits.max_nodes:
            raise SchemaLimitError(
                "max_nodes", limits.max_nodes, f"more than {limits.max_nodes:,} JSON values", walk.pointer(index)
            )
        if isinstance(value, str):
            size += len(value) + 2
        elif isinstance(value, bool) or value is None:
            size += 5
        elif isinstance(value, int):
            size += value.bit_length() // 3 + 1
        elif isinstance(value, float):
            size += 12
        elif isinstance(value, dict | list | tuple):
            if depth > limits.max_depth:
                raise SchemaLimitError(
                    "max_depth",
                    limits.max_depth,
                    f"nested deeper than {limits.max_depth} levels",
                    walk.pointer(index),
                )
            max_depth = max(max_depth, depth)
            if isinstance(value, dict):
                obj = cast(dict[Any, Any], value)
                if len(obj) > limits.max_properties:
                    raise SchemaLimitError(
                        "max_properties",
                        limits.max_properties,
                        f"an object with {len(obj):,} members",
                        walk.pointer(index),
                    )
                size += 2 * len(obj) + 2
                if kind == _SCHEMA:
                    refs += _check_refs(obj, walk, index, limits, refs)
                    has_ids = has_ids or ("$id" in obj or isinstance(obj.get("id"), str))
                    for anchor_key in ("$anchor", "$dynamicAnchor"):
                        name = obj.get(anchor_key)
                        if isinstance(name, str):
                            anchors.setdefault(name, obj)
                for key, child in obj.items():
                    if not isinstance(key, str):
                        raise InvalidSchemaError(
                            f"an object key is not a string: {_clip(repr(key))}", walk.pointer(index)
                        )
                    size += len(key) + 3
                    child_index = walk.add(index, key)
                    if kind == _SCHEMA:
                        if key in _DATA_KEYWORDS:
                            child_kind = _DATA
                        elif key in _MAP_KEYWORDS and isinstance(child, dict):
                            child_kind = _MAP
                            if key == "patternProperties":
                                for pat in cast(dict[Any, Any], child):
                                    if isinstance(pat, str):
                                        path = (*walk.path(child_index), pat)
                                        patterns.append(SchemaPattern(pat, path, _pointer(path), True))
                        else:
                            child_kind = _SCHEMA
                            if key == "pattern" and isinstance(child, str):
                                path = walk.path(child_index)
                                patterns.append(SchemaPattern(child, path, _pointer(path), False))
                        if len(patterns) > limits.max_patterns:
                            raise SchemaLimitError(
                                "max_patterns",
                                limits.max_patterns,
                                f"more than {limits.max_patterns:,} regexes",
                                walk.pointer(child_index),
                            )
                    elif kind == _MAP:
                        child_kind = _SCHEMA
                    else:
                        child_kind = _DATA
                    stack.append((cast(Any, child), depth + 1, child_kind, child_index))
            else:
                items = cast(list[Any] | tuple[Any, ...], value)
                size += len(items) + 2
                for i, child in enumerate(items):
                    stack.append((child, depth + 1, kind if kind != _MAP else _SCHEMA, walk.add(index, str(i))))
        else:
            raise InvalidSchemaError(f"a {type(value).__name__} is not JSON", walk.pointer(index))
        if size > limits.max_size:
            raise SchemaLimitError(
                "max_size", limits.max_size, f"more than {limits.max_size:,} characters of JSON", walk.pointer(index)
            )
    expanded, recursive = nodes, False
    if refs:
        expanded, recursive = _expanded_size(schema, anchors, has_ids, limits)
    if recursive:
        _check_recursive_fanout(schema, anchors, limits)
    return SchemaSummary(max_depth, nodes, size, refs, expanded, recursive, tuple(patterns))


def _check_refs(obj: dict[Any, Any], walk: _Walk, index: int, limits: SchemaLimits, seen: int) -> int:
    found = 0
    for key in _REF_KEYWORDS:
        ref = obj.get(key)
        if ref is None:
            continue
        if not isinstance(ref, str):
            continue  # not a reference (e.g. a property named "$ref"); the metaschema judges it
        found += 1
        if seen + found > limits.max_refs:
            raise SchemaLimitError(
                "max_refs", limits.max_refs, f"more than {limits.max_refs:,} references", walk.pointer(index)
            )
        if not ref.startswith("#"):
            raise InvalidSchemaError(
                f"{key} {json.dumps(_clip(ref), ensure_ascii=False)} points outside this schema; only references "
                "within the same document (starting with '#') are allowed, and nothing is ever fetched",
                walk.pointer(index) + "/" + _escape(key),
            )
    return found


def _resolve(ref: str, base: Any, anchors: Mapping[str, Any]) -> Any:
    fragment = unquote(ref[1:])
    if not fragment:
        return base
    if not fragment.startswith("/"):
        return anchors.get(fragment)
    target: Any = base
    for raw in fragment[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict):
            target = cast(dict[str, Any], target).get(part)
        elif isinstance(target, list | tuple) and part.isdigit():
            seq = cast(list[Any], target)
            target = seq[int(part)] if int(part) < len(seq) else None
        else:
            return None
        if target is None:
            return None
    return target


_EXIT = object()


def _expanded_size(schema: Any, anchors: Mapping[str, Any], has_ids: bool, limits: SchemaLimits) -> tuple[int, bool]:
    """Count the values one check can visit: every reference inlined, a recursive one counted once.

    The count stops at ``max_expanded_nodes``, so it costs at most that many steps whatever the
    schema (a chain of 60 definitions that each use the next twice would expand to 2**60).
    """
    budget = limits.max_expanded_nodes
    count = 0
    recursive = False
    active: dict[int, int] = {}
    stack: list[tuple[Any, ...]] = [(schema, _SCHEMA, schema, "")]
    while stack:
        item = stack.pop()
        if item[0] is _EXIT:
            active[item[1]] -= 1
            continue
        value, kind, base, via = item
        count += 1
        if count > budget:
            where = f"following {via}: " if via else ""
            raise SchemaLimitError(
                "max_expanded_nodes",
                budget,
                f"{where}with every $ref replaced by its target the schema has more than {budget:,} values",
                via[1:] if via.startswith("#") else "",
            )
        if isinstance(value, dict):
            obj = cast(dict[str, Any], value)
            if kind == _SCHEMA:
                if (
                    has_ids
                    and obj is not schema
                    and (isinstance(obj.get("$id"), str) or isinstance(obj.get("id"), str))
                ):
                    base = obj
                for key in _REF_KEYWORDS:
                    ref = obj.get(key)
                    if not isinstance(ref, str):
                        continue
                    target = _resolve(ref, base, anchors)
                    if target is None:
                        continue  # the validator reports an unresolvable reference itself
                    tid = id(target)
                    if active.get(tid, 0) > 0:
                        recursive = True
                        continue
                    active[tid] = active.get(tid, 0) + 1
                    stack.append((_EXIT, tid))
                    stack.append((target, _SCHEMA, base, ref))
            for key, child in obj.items():
                if kind == _SCHEMA:
                    child_kind = _DATA if key in _DATA_KEYWORDS else (_MAP if key in _MAP_KEYWORDS else _SCHEMA)
                else:
                    child_kind = _SCHEMA if kind == _MAP else _DATA
                stack.append((child, child_kind, base, via))
        elif isinstance(value, list | tuple):
            child_kind = _DATA if kind == _DATA else _SCHEMA
            stack.extend((child, child_kind, base, via) for child in cast(list[Any], value))
    return count, recursive


# -- recursive fan-out -------------------------------------------------------------------
#
# Inlining counts a recursive reference once, which is right for its size but not for its
# cost: a validator follows it as deep as the value goes. If, at some depth, the schema
# applies the same recursive subschema to one value twice (``allOf: [{$ref: "#"}, {$ref:
# "#"}]`` below a property), the work doubles at every level of the value. The check below
# follows, level by level, which subschemas apply to one value ("a state": each subschema
# with how many times it applies), for every kind of child (each named property, any other
# property, each tuple position, any other item), and refuses a schema under which some value
# would get more than ``max_applications`` of them. Where it cannot tell which of two
# subschemas a key reaches (``patternProperties`` against ``additionalProperties``) it counts
# both, so it can refuse a harmless schema but does not miss a growing one.

_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MANY = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAPS = ("dependentSchemas", "dependencies")
_MAX_STATES = 2_000


def _in_place(
    node: dict[str, Any], root: Any, anchors: Mapping[str, Any], limits: SchemaLimits
) -> list[dict[str, Any]]:
    """Every schema object applied to the same value as ``node`` (with repeats, one per path)."""
    out: list[dict[str, Any]] = []
    stack: list[tuple[Any, frozenset[int]]] = [(node, frozenset())]
    while stack:
        sub, active = stack.pop()
        if not isinstance(sub, dict):
            continue
        obj = cast(dict[str, Any], sub)
        out.append(obj)
        if len(out) > limits.max_expanded_nodes:
            raise SchemaLimitError(
                "max_expanded_nodes",
                limits.max_expanded_nodes,
                "one value would be checked against more subschemas than the bound",
            )
        stack.extend((obj[key], active) for key in _IN_PLACE_ONE if key in obj)
        for key in _IN_PLACE_MANY:
            many = obj.get(key)
            if isinstance(many, list):
                stack.extend((x, active) for x in cast(list[Any], many))
        for key in _IN_PLACE_MAPS:
            mapping = obj.get(key)
            if isinstance(mapping, dict):
                stack.extend((x, active) for x in cast(dict[str, Any], mapping).values())
        for key in _REF_KEYWORDS:
            ref = obj.get(key)
            if isinstance(ref, str) and (target := _resolve(ref, root, anchors)) is not None:
                if id(target) not in active:  # a reference cycle on one value: the validator stops it
                    stack.append((target, active | {id(target)}))
    return out


def _child_classes(applied: list[tuple[dict[str, Any], int]]) -> list[list[tuple[Any, int]]]:
    """For each kind of child value, the subschemas (with counts) the applied ones give it."""
    names: set[str] = set()
    max_prefix = 0
    for obj, _ in applied:
        props = obj.get("properties")
        if isinstance(props, dict):
            names.update(cast(dict[str, Any], props))
        prefix = _prefix_items(obj)
        max_prefix = max(max_prefix, len(prefix))
    classes: list[list[tuple[Any, int]]] = []
    for name in [*names, None]:  # None: a property no "properties" names
        children: list[tuple[Any, int]] = []
        for obj, n in applied:
            props = obj.get("properties")
            named = isinstance(props, dict) and name is not None and name in props
            if named:
                children.append((cast(dict[str, Any], props)[cast(str, name)], n))
            pattern_props = obj.get("patternProperties")
            if isinstance(pattern_props, dict):
                children.extend((x, n) for x in cast(dict[str, Any], pattern_props).values())
            if not named:
                children.extend((obj[k], n) for k in ("additionalProperties", "unevaluatedProperties") if k in obj)
        classes.append(children)
    for position in [*range(max_prefix), None]:  # None: an item past every prefix
        children = []
        for obj, n in applied:
            prefix = _prefix_items(obj)
            if position is not None and position < len(prefix):
                children.append((prefix[position], n))
            else:
                children.extend((rest, n) for rest in _rest_items(obj))
            children.extend((obj[k], n) for k in ("contains", "unevaluatedItems") if k in obj)
        classes.append(children)
    return classes


def _prefix_items(obj: dict[str, Any]) -> list[Any]:
    prefix = obj.get("prefixItems", obj.get("items"))
    return cast(list[Any], prefix) if isinstance(prefix, list) else []


def _rest_items(obj: dict[str, Any]) -> list[Any]:
    items = obj.get("items")
    if items is not None and not isinstance(items, list):
        return [items]
    return [obj["additionalItems"]] if "additionalItems" in obj else []


def _check_recursive_fanout(root: Any, anchors: Mapping[str, Any], limits: SchemaLimits) -> None:
    closures: dict[int, list[dict[str, Any]]] = {}
    objects: dict[int, Any] = {id(root): root}
    seen: set[frozenset[tuple[int, int]]] = set()
    stack: list[dict[int, int]] = [{id(root): 1}]
    while stack:
        state = stack.pop()
        key = frozenset(state.items())
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > _MAX_STATES:
            raise SchemaLimitError(
                "max_applications",
                limits.max_applications,
                f"the recursive references are too intricate to bound (more than {_MAX_STATES:,} combinations)",
            )
        applied: list[tuple[dict[str, Any], int]] = []
        for sid, n in state.items():
            node = objects[sid]
            if not isinstance(node, dict):
                continue
            closure = closures.get(sid)
            if closure is None:
                closure = closures[sid] = _in_place(cast(dict[str, Any], node), root, anchors, limits)
            applied.extend((obj, n) for obj in closure)
        for children in _child_classes(applied):
            nxt: dict[int, int] = {}
            total = 0
            for child, n in children:
                if isinstance(child, dict):
                    cid = id(cast(object, child))
                    objects[cid] = child
                    nxt[cid] = nxt.get(cid, 0) + n
                    total += n
            if total > limits.max_applications:
                raise SchemaLimitError(
                    "max_applications",
                    limits.max_applications,
                    f"recursive references apply {total:,} subschemas to one value, and more at every deeper "
                    "level (a recursive $ref used twice on the same value)",
                )
            if nxt:
                stack.append(nxt)
