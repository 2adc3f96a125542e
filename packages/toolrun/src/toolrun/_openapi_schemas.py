"""OpenAPI schemas as JSON Schema 2020-12, with every ``$ref`` pointing into ``$defs``.

Each schema a ``$ref`` reaches becomes one definition, keyed by the identity of the object
the reference resolves to (so two spellings of one reference share it), converted once per
document whichever tool reaches it first, and named after the reference's last segment
(``#/components/schemas/simple-user`` → ``simple-user``; a name taken by another schema gets
``_2``…). A tool's schema carries in its ``$defs`` the definitions it needs, transitively, so
recursive schemas stay finite. References are resolved with ``referencing`` only inside the
document (anything else is refused: nothing is ever fetched). Definitions are converted from
a work list, not recursively, so a long chain of references cannot exhaust the stack; one
schema may nest at most 64 levels.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final, cast

from toolrun._schema_limits import DEFAULT_SCHEMA_LIMITS

if TYPE_CHECKING:
    from toolrun._compat_referencing import Resolver

__all__ = ["CYCLE_STEPS", "MAX_DEFS", "MAX_SCHEMA_DEPTH", "SchemaConverter", "Skip", "unique_name"]

MAX_SCHEMA_DEPTH: Final = 64
"""Most nested levels of one schema (the runner's own bound on a tool schema's depth)."""
MAX_DEFS: Final = 1_000
"""Most definitions one tool schema may carry (the runner's bound on ``$ref`` s)."""
CYCLE_STEPS: Final = 1_000_000
"""Most steps one document may take to measure expanded sizes through its reference cycles
(Microsoft Graph's v1.0 description, 18 definitions in its largest cycle, takes 3,245);
past it, a tool whose schemas go through a cycle not measured yet is skipped."""
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
_SIZE_CAP = 10**9

# Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
_SCHEMA_KEYS: Final = frozenset(
    {
        "items",
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "additionalItems",
        "contentSchema",
    }
)
_SCHEMA_LIST_KEYS: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_MAP_KEYS: Final = frozenset({"properties", "patternProperties", "dependentSchemas"})
# Dropped: documentation only, or meaningless once references are rewritten.
_DROPPED_KEYS: Final = frozenset(
    {
        "example",
        "examples",
        "xml",
        "externalDocs",
        "discriminator",
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "$dynamicRef",
        "$recursiveRef",
        "$recursiveAnchor",
        "$schema",
        "$defs",
        "definitions",
        "$comment",
    }
)
_JSON_TYPES: Final = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_CONTAINERS: Final = (dict, list)  # a tuple: isinstance is slower with the union dict | list
# What a converter does with each keyword, found with one lookup; a keyword in none of the sets
# is a value kept as it is (dropped if it is an extension, ``x-``).
_VALUE, _SCHEMA, _SCHEMA_LIST, _SCHEMA_MAP, _TYPE, _DROP = "value", "schema", "list", "map", "type", "drop"
_KEY_KINDS: Final[dict[str, str]] = {
    **dict.fromkeys(_SCHEMA_KEYS, _SCHEMA),
    **dict.fromkeys(_SCHEMA_LIST_KEYS, _SCHEMA_LIST),
    **dict.fromkeys(_SCHEMA_MAP_KEYS, _SCHEMA_MAP),
    "type": _TYPE,
    **dict.fromkeys(_DROPPED_KEYS, _DROP),
}


class Skip(Exception):
    """An operation cannot become a tool; the message says why."""


def unique_name(name: str, taken: Container[str]) -> str:
    if name not in taken:
        return name
    n = 2
    while True:
        suffix = f"_{n}"
        candidate = name[: 128 - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        n += 1


class SchemaConverter:
    """Converts the document's schemas to JSON Schema 2020-12 with ``$ref`` s into ``$defs``.

    A schema reached through a ``$ref`` becomes one definition, keyed by the identity of the
    object the reference resolves to, and is converted once per document, whichever tool
    reaches it first. Definitions are converted from a work list, not recursively, so a long
    chain of references cannot exhaust the stack.
    """

    def __init__(self, openapi30: bool, *, max_expanded: int = DEFAULT_SCHEMA_LIMITS.max_expanded_nodes) -> None:
        self._openapi30 = openapi30
        self.defs: dict[str, dict[str, Any] | bool] = {}
        self.deps: dict[str, frozenset[str]] = {}
        self.errors: dict[str, str] = {}
        self._names: dict[int, str] = {}
        self._pending: list[tuple[str, Any, Resolver[Any]]] = []
        self._sizes: dict[str, tuple[int, dict[str, int]]] = {}
        self._max_expanded = max_expanded
        # A definition's size when a reference inlines it and nothing else is being inlined.
        self._expanded: dict[str, int] = {}
        # The definitions of each reference cycle (a definition in none is absent).
        self._cycles: dict[str, frozenset[str]] = {}
        # A definition's size walked as a member of "$defs" (with what is being inlined then).
        self._walked: dict[tuple[str, str | None], int] = {}
        self._cycle_steps = CYCLE_STEPS
        # Resolved references by (base URI, reference): a document reuses a few thousand
        # references tens of thousands of times (Microsoft Graph: 2,141 for 29,233 lookups).
        self._resolved: dict[tuple[str, str], tuple[Any, Resolver[Any]]] = {}
        self._closures: dict[frozenset[str], dict[str, dict[str, Any] | bool] | str] = {}
        # The size a schema's "$defs" adds, by its definitions' names and the active one.
        self._defs_sizes: dict[tuple[tuple[str, ...], str | None], int] = {}

    def lookup(self, ref: Any, resolver: Resolver[Any]) -> tuple[Any, Resolver[Any]]:
        """The object ``ref`` points at and the resolver for the references inside it.

        A reference resolves to the same object wherever it is met from the same base URI
        (the registry only ever holds this one document), so each is resolved once; the
        dynamic scope a resolver also carries serves only ``$dynamicRef``, which is dropped.

        Raises:
            Skip: If ``ref`` is not a string or does not resolve inside the document.
        """
        if not isinstance(ref, str):
            raise Skip(f"a $ref is not a string ({type(ref).__name__})")
        from referencing.exceptions import Unresolvable

        from toolrun._compat_referencing import base_uri

        key = (base_uri(resolver), ref)
        if (known := self._resolved.get(key)) is not None:
            return known

        try:
            resolved = resolver.lookup(ref)
        # Unresolvable's text quotes the whole document: only the reference is repeated.
        except (Unresolvable, ValueError, TypeError, LookupError):
            shown = ref if len(ref) <= 120 else ref[:119] + "…"
            if not ref.startswith("#"):
                raise Skip(f"$ref {shown!r} leaves the document (nothing is fetched)") from None
            raise Skip(f"$ref {shown!r} points at nothing in the document") from None
        found = self._resolved[key] = (resolved.contents, resolved.resolver)
        return found

    def convert(self, schema: Any, resolver: Resolver[Any]) -> tuple[dict[str, Any] | bool, set[str]]:
        """A converted schema and the definitions it refers to directly."""
        used: set[str] = set()
        out = self._convert(schema, resolver, used, 1)
        self._drain()
        return out, used

    def closure(self, roots: Iterable[str]) -> dict[str, dict[str, Any] | bool]:
        """The definitions ``roots`` need, transitively, in a stable order.

        Raises:
            Skip: If one of them could not be converted, or there are too many.
        """
        # Every definition has its final dependencies by now, so the answer for a set of roots
        # never changes: it is worked out once (Microsoft Graph: 1,016 sets for 18,715 calls).
        key = frozenset(roots)
        known = self._closures.get(key)
        if known is None:
            try:
                known = self._closure(key)
            except Skip as e:
                known = str(e)
            self._closures[key] = known
        if isinstance(known, str):
            raise Skip(known)
        return dict(known)

    def _closure(self, roots: Iterable[str]) -> dict[str, dict[str, Any] | bool]:
        seen: dict[str, None] = {}
        todo = sorted(roots, reverse=True)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            if name in self.errors:
                raise Skip(self.errors[name])
            seen[name] = None
            if len(seen) > MAX_DEFS:
                raise Skip(f"its schemas use more than {MAX_DEFS:,} definitions")
            todo.extend(sorted(self.deps.get(name, ()), reverse=True))
        return {name: self.defs[name] for name in sorted(seen)}

    def expanded_size(self, schema: Any) -> int:
        """How many JSON values the runner counts in ``schema`` with every reference inlined.

        The runner refuses a schema over ``SchemaLimits.max_expanded_nodes``. It walks the
        schema, ``$defs`` included, and inlines each reference it meets unless the target is
        already being inlined on the way there (a recursive reference counts once). This gives
        the same count from sizes computed once per document: a definition in no reference
        cycle has one size wherever it is reached; one in a cycle inlines more or less of the
        cycle depending on the way in, so it is measured path by path, and only up to the bound
        (a size over it is the count so far: a lower bound).

        Raises:
            Skip: If measuring the document's reference cycles takes more than
                ``CYCLE_STEPS`` steps.
        """
        nodes, refs = _measure(schema)
        total = nodes + sum(count * self._expanded_of(name) for name, count in refs.items())
        defs = cast(dict[str, Any], schema).get("$defs") if isinstance(schema, dict) else None
        if isinstance(defs, dict):
            # The runner walks every definition as well. It marks the target of a top-level
            # "$ref" as being inlined before it walks that reference's sibling "$defs", so there
            # a reference to that target counts once.
            ref = cast(dict[str, Any], schema).get("$ref")
            active = ref.removeprefix("#/$defs/") if isinstance(ref, str) and ref.startswith("#/$defs/") else None
            key = (tuple(cast(dict[str, Any], defs)), active)
            size = self._defs_sizes.get(key)
            if size is None:
                size = self._defs_sizes[key] = 1 + sum(self._walked_size(name, active) for name in key[0])
            total += size
        return min(total, _SIZE_CAP)

    def _walked_size(self, name: str, active: str | None) -> int:
        # A definition walked as a member of "$defs": its values, each reference in it inlined.
        self._expanded_of(name)  # measures its cycle, if any, and all it refers to
        cycle = self._cycles.get(name)
        # Of the definitions the active one needs, only those in its cycle lead back to it; the
        # others have the same size either way. (A "$defs" holding other definitions, which the
        # provider never builds, would be counted as if nothing were active: more, never less.)
        blocked: frozenset[str] = frozenset()
        if active is not None and cycle is not None and active in cycle:
            blocked = frozenset({active})
        key = (name, active if blocked else None)
        known = self._walked.get(key)
        if known is None:
            nodes, refs = self._sizes.get(name, (1, {}))
            total = nodes
            for ref, count in refs.items():
                if ref in blocked:
                    continue
                if blocked and cycle is not None and ref in cycle:
                    total += count * self._path_size(ref, cycle, blocked)
                else:
                    total += count * self._expanded[ref]
            known = self._walked[key] = min(total, _SIZE_CAP)
        return known

    def _expanded_of(self, name: str) -> int:
        # Tarjan's algorithm, iteratively, over the definitions not measured yet: it completes
        # the strongly connected components (reference cycles) sinks first, so every reference
        # that leaves a component points at a definition already measured.
        if (known := self._expanded.get(name)) is not None:
            return known
        index: dict[str, int] = {name: 0}
        low: dict[str, int] = {name: 0}
        stack: list[str] = [name]
        on_stack: set[str] = {name}
        work: list[tuple[str, Iterator[str]]] = [(name, iter(self._refs_of(name)))]
        while work:
            current, refs = work[-1]
            for ref in refs:
                if ref in self._expanded:
                    continue
                if ref not in index:
                    index[ref] = low[ref] = len(index)
                    stack.append(ref)
                    on_stack.add(ref)
                    work.append((ref, iter(self._refs_of(ref))))
                    break
                if ref in on_stack:
                    low[current] = min(low[current], index[ref])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[current])
                if low[current] == index[current]:
                    members: list[str] = []
                    while not members or members[-1] != current:
                        members.append(stack.pop())
                        on_stack.discard(members[-1])
                    self._measure_component(members)
        return self._expanded[name]

    def _refs_of(self, name: str) -> dict[str, int]:
        return self._sizes.get(name, (1, {}))[1]

    def _measure_component(self, members: list[str]) -> None:
        if len(members) == 1 and members[0] not in self._refs_of(members[0]):
            name = members[0]
            nodes, refs = self._sizes.get(name, (1, {}))
            total = nodes + sum(count * self._expanded[ref] for ref, count in refs.items())
            self._expanded[name] = min(total, _SIZE_CAP)
            return
        cycle = frozenset(members)
        # Measured in full before any is recorded: a Skip leaves none half-known.
        sizes = {name: self._path_size(name, cycle, frozenset()) for name in members}
        for name in members:
            self._cycles[name] = cycle
        self._expanded.update(sizes)

    def _path_size(self, start: str, cycle: frozenset[str], blocked: frozenset[str]) -> int:
        # ``start`` inlined while the ``blocked`` definitions are being inlined: every path of
        # references inside the cycle is followed until it meets a definition already on it
        # (counted once, as the runner does); references leaving the cycle add their sizes.
        # Stops as soon as the count is over the bound.
        bound = self._max_expanded
        total = 0
        on_path = set(blocked)
        stack: list[tuple[str, int]] = [(start, 1)]  # (definition, times it is inlined); 0: leave it
        while stack:
            name, times = stack.pop()
            if not times:
                on_path.discard(name)
                continue
            self._cycle_steps -= 1
            if self._cycle_steps < 0:
                raise Skip(f"its schemas' reference cycles take more than {CYCLE_STEPS:,} steps to measure")
            nodes, refs = self._sizes.get(name, (1, {}))
            total += times * nodes
            on_path.add(name)
            stack.append((name, 0))
            for ref, count in refs.items():
                if ref in on_path:
                    continue
                if ref in cycle:
                    stack.append((ref, times * count))
                else:
                    total += times * count * self._expanded[ref]
            if total > bound:
                return min(total, _SIZE_CAP)
        return total

    def _drain(self) -> None:
        while self._pending:
            name, target, resolver = self._pending.pop()
            used: set[str] = set()
            try:
                self.defs[name] = self._convert(target, resolver, used, 1)
            except Skip as e:
                self.errors[name] = f"schema {name!r}: {e}"
                self.defs[name] = True
            self.deps[name] = frozenset(used)
            self._sizes[name] = _measure(self.defs[name])

    def _def_name(self, ref: str) -> str:
        tail = ref.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        base = _NAME_CHARS.sub("_", tail).strip("_")[:100] or "schema"
        return unique_name(base, self.defs.keys())

    def _ref(self, ref: Any, resolver: Resolver[Any], used: set[str]) -> dict[str, Any]:
        target, inner = self.lookup(ref, resolver)
        name = self._names.get(id(target))
        if name is None:
            name = self._def_name(cast(str, ref))
            self._names[id(target)] = name
            self.defs[name] = True  # placeholder until the work list converts it
            self._pending.append((name, target, inner))
        used.add(name)
        return {"$ref": f"#/$defs/{name}"}

    def _convert(self, schema: Any, resolver: Resolver[Any], used: set[str], depth: int) -> dict[str, Any] | bool:
        if isinstance(schema, bool):
            return schema
        if not isinstance(schema, dict):
            raise Skip(f"a schema is a {type(schema).__name__}, not an object")
        if depth > MAX_SCHEMA_DEPTH:
            raise Skip(f"a schema nests deeper than {MAX_SCHEMA_DEPTH} levels")
        src = cast(dict[str, Any], schema)
        if "$ref" in src:
            ref = self._ref(src["$ref"], resolver, used)
            if self._openapi30:  # 3.0: siblings of $ref are ignored
                return ref
            rest = self._convert({k: v for k, v in src.items() if k != "$ref"}, resolver, used, depth)
            if isinstance(rest, bool) or not rest:
                return ref
            return (
                {**ref, **rest}
                if set(rest) <= {"description", "title", "default", "deprecated"}
                else {"allOf": [ref, rest]}
            )
        out: dict[str, Any] = {}
        kind_of = _KEY_KINDS.get
        for key, value in src.items():
            kind = kind_of(key, _VALUE)
            if kind is _VALUE:  # the common case: a keyword whose value is kept as it is
                if not key.startswith("x-"):
                    out[key] = value
            elif kind is _SCHEMA:
                if self._openapi30 and key == "items" and isinstance(value, list):
                    value = {"anyOf": cast(list[Any], value)}
                out[key] = self._convert(value, resolver, used, depth + 1)
            elif kind is _SCHEMA_LIST:
                if not isinstance(value, list):
                    raise Skip(f"{key} is not a list")
                out[key] = [self._convert(v, resolver, used, depth + 1) for v in cast(list[Any], value)]
            elif kind is _SCHEMA_MAP:
                if not isinstance(value, dict):
                    raise Skip(f"{key} is not an object")
                members = cast(dict[str, Any], value)
                out[key] = {k: self._convert(v, resolver, used, depth + 1) for k, v in members.items()}
            elif kind is _TYPE:
                if not isinstance(value, str) or value in _JSON_TYPES:
                    out[key] = value  # else e.g. "file" (Swagger 2): no JSON type to check
        return _from_openapi30(out) if self._openapi30 else out


_COMBINATORS: Final = ("allOf", "anyOf", "oneOf")
_ANNOTATIONS: Final = ("title", "description", "default", "deprecated", "readOnly", "writeOnly")


def _from_openapi30(out: dict[str, Any]) -> dict[str, Any]:
    # OpenAPI 3.0's schema dialect differs from JSON Schema 2020-12 in these keywords.
    for bound, flag in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        exclusive = out.get(flag)
        if isinstance(exclusive, bool):
            if exclusive and bound in out:
                out[flag] = out.pop(bound)
            else:
                del out[flag]
    if out.pop("nullable", False) is not True:
        return out
    if any(key in out for key in _COMBINATORS):
        # Null is an alternative to the whole schema (3.0's nullable reference is
        # ``allOf: [$ref], nullable: true``): a type added beside the members would still fail them.
        notes = {key: out.pop(key) for key in _ANNOTATIONS if key in out}
        return {**notes, "anyOf": [out, {"type": "null"}]}
    t = out.get("type")
    if isinstance(t, str):
        out["type"] = [t, "null"]
    enum = out.get("enum")
    if isinstance(enum, list) and None not in enum:
        out["enum"] = [*cast(list[Any], enum), None]
    return out


def _measure(schema: Any) -> tuple[int, dict[str, int]]:
    # JSON values of a converted schema (its $defs left out) and how often it uses each definition.
    # Counts a container's members when it meets the container and walks down only into nested
    # containers (most members are strings): the count of visiting every value, in less time.
    if not isinstance(schema, _CONTAINERS):
        return 1, {}
    nodes = 1
    refs: dict[str, int] = {}
    stack: list[dict[str, Any] | list[Any]] = [cast(dict[str, Any] | list[Any], schema)]
    pop, push = stack.pop, stack.append
    while stack:
        value = pop()
        children: Iterable[Any]
        if isinstance(value, dict):
            ref = value.get("$ref")
            if ref is not None and isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref[8:]  # len("#/$defs/")
                refs[name] = refs.get(name, 0) + 1
            children = value.values() if "$defs" not in value else [v for k, v in value.items() if k != "$defs"]
        else:
            children = value
        nodes += len(children)
        for v in children:
            if v.__class__ is not str and isinstance(v, _CONTAINERS):
                push(v)  # pyright: ignore[reportUnknownArgumentType]
    return nodes, refs
