"""JSON Schema → Python: type annotations, TypedDict classes and tool call signatures.

The output is Python source meant to be read (by a person or a model), not imported:
it always parses (``ast.parse``), keeps every parameter of the schema (past the work
budget below, the rest are counted as omitted and accepted through ``**kwargs``), and uses
only ``typing`` names a stub module imports (:data:`STUB_IMPORTS`).

Schemas are hostile input, so every render works within a budget
(:attr:`RenderOptions.max_nodes`, :attr:`RenderOptions.max_chars`): recursive references
are rendered by name and never expanded again, and what is left when the budget runs out
is shown as ``Any`` (parameters that do not fit fold into ``**kwargs``), with a warning.
Real tools stay far inside it.
"""

from __future__ import annotations

import itertools
import keyword
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from tooldocs._budget import MAX_ANNOTATION, MAX_CLASS_NAME, MAX_KEY, MAX_REF, MAX_SCAN, MAX_WARNINGS, RenderBudget
from tooldocs._names import RESERVED_CLASS_NAMES, Collision, NameMap, class_name, py_identifier, unshadowed
from tooldocs._text import cap_text, first_sentence, py_comment, py_literal, py_str
from tooldocs.exceptions import SchemaRenderError
from toolindex import Tool

__all__ = [
    "STUB_IMPORTS",
    "Param",
    "RenderOptions",
    "RenderedModule",
    "RenderedType",
    "Signature",
    "render_module",
    "render_signature",
    "schema_to_python",
    "tool_signature",
]

STUB_IMPORTS = "from typing import Any, Literal, NotRequired, Required, TypedDict"
"""The import line that makes rendered annotations resolvable in a stub module."""

_ANY = "Any"
_SIMPLE_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_MAX_STACK = 64
_OBJECT_KEYS = ("properties", "additionalProperties", "patternProperties", "required")
# Keywords that add keys to an object from elsewhere; branches (all but allOf) add optional ones.
_BRANCH_KEYS = ("anyOf", "oneOf", "then", "else")
# Keywords whose schemas, one per key, apply when the object has that key: they add optional keys too.
_DEPENDENT_KEYS = ("dependentSchemas", "dependencies")


@dataclass(frozen=True, slots=True)
class RenderOptions:
    """How much detail rendering keeps. The defaults are the richest form.

    Smaller values trade detail for size; every option keeps the output valid Python
    and keeps every top-level parameter.
    """

    descriptions: int = 50
    """Maximum characters of a parameter's description comment; 0 drops them."""
    field_descriptions: int = 36
    """Maximum characters of a TypedDict field's description comment; 0 drops them."""
    docstring: int = 100
    """Maximum characters of the function's one-line docstring; 0 drops it."""
    max_literal: int = 16
    """Enums with more values than this are shown as their base type (``str``), not ``Literal``."""
    max_depth: int = 6
    """Objects nested deeper than this become ``dict[str, Any]``."""
    nested_classes: bool = True
    """Render nested objects as ``TypedDict`` classes; ``False`` shows them as ``dict[str, Any]``."""
    max_default: int = 40
    """Defaults whose literal is longer than this are shown as ``...``."""
    skip_redundant: bool = True
    """Drop a parameter description that only repeats words of the tool's and parameters' names
    (``repo: str  # Repository name``)."""
    max_nodes: int = 2_000
    """Work budget: schema nodes one signature may visit (references, branches and properties
    included). Past it the rest is shown as ``Any``, with a warning (real tools visit under 100)."""
    max_chars: int = 32_000
    """Characters of classes and parameters one signature may produce. Past it further classes
    become ``dict[str, Any]`` and further parameters fold into ``**kwargs``, with a warning."""
    loose_open_objects: bool = False
    """Show objects whose schema explicitly admits undeclared keys (``additionalProperties``
    true or a schema, or ``patternProperties``) as ``dict[str, Any]`` instead of a
    ``TypedDict``, and give the tool ``**kwargs`` when its own arguments are so: a type checker
    must not reject a key it cannot know about."""
    untyped_result: str = "dict[str, Any]"
    """The return annotation of a tool that declares no output schema (and has no learned
    shape); ``"Any"`` for a type checker, which must not assume a shape."""
    tuples: bool = True
    """Show a fixed-length array (``prefixItems`` with ``items: false``, or draft-04's array form of
    ``items``) as ``tuple[A, B]``; ``False`` shows ``list[A | B]``, the type its value has once
    decoded (a JSON array is a ``list``): for a type checker, which must not refuse what a list
    does (``+`` with another list)."""


@dataclass(frozen=True, slots=True)
class RenderedType:
    """A JSON Schema rendered as a Python annotation plus the classes it needs."""

    annotation: str
    """The type, e.g. ``list[Issue] | None``."""
    definitions: tuple[str, ...] = ()
    """Source of each ``TypedDict`` the annotation uses, in definition order."""
    collisions: tuple[Collision, ...] = ()
    """Keys of one object that map to the same identifier (only where an identifier is needed)."""
    warnings: tuple[str, ...] = ()
    """Parts of the schema that could not be rendered exactly (unresolvable ``$ref``, ...)."""
    closed: frozenset[str] = frozenset()
    """The classes whose object the schema closes (``additionalProperties: false``): no key they do
    not declare is valid. Every other class stands for an object that may have keys it does not
    declare (JSON Schema's default), so a key a class lacks is not wrong in itself."""

    @property
    def source(self) -> str:
        """The class definitions, joined by blank lines (empty when the type needs none)."""
        return "\n\n".join(self.definitions)


@dataclass(frozen=True, slots=True)
class Param:
    """One keyword parameter of a tool signature."""

    name: str
    """Python identifier used in the signature."""
    wire_name: str
    """The argument's name in the tool's input schema (what the tool receives)."""
    annotation: str
    required: bool
    has_default: bool = False
    default: Any = None
    """The schema's default (meaningful when ``has_default``)."""
    description: str = ""
    """The schema's description, whole."""


@dataclass(frozen=True, slots=True)
class Signature:
    """A tool's Python call signature.

    ``text`` is a ``def`` with keyword-only parameters named after the tool's wire
    argument names (sanitised into identifiers where needed), preceded by the
    ``TypedDict`` classes it uses. A snippet passes arguments either as keywords
    (``run_tool("ns:tool", owner="x")``) or as a dict keyed by wire names
    (``run_tool("ns:tool", {"owner": "x"})``); :meth:`wire_args` turns keywords
    that use sanitised names back into wire names.
    """

    name: str
    """The function's identifier (the tool name, sanitised)."""
    tool_name: str
    """The tool's wire name."""
    text: str
    """Class definitions and the ``def``, ready to show."""
    params: tuple[Param, ...]
    """Parameters, required first, in schema order otherwise."""
    returns: str
    """The return annotation."""
    definitions: tuple[str, ...] = ()
    """Source of each ``TypedDict`` used by the parameters and the return type."""
    collisions: tuple[Collision, ...] = ()
    """Name collisions found (parameters, object keys); reported, never merged."""
    warnings: tuple[str, ...] = ()
    """What could not be rendered exactly."""
    omitted: int = 0
    """Parameters the schema declares that the signature does not show (past the render budget,
    or names too long to show); a call passes them through ``**kwargs`` under their wire names."""
    closed: frozenset[str] = frozenset()
    """The classes of :attr:`definitions` whose object the schema closes (see :attr:`RenderedType.closed`)."""

    @property
    def wire_names(self) -> dict[str, str]:
        """Identifier → wire name for the parameters whose identifier differs from the wire name."""
        return {p.name: p.wire_name for p in self.params if p.name != p.wire_name}

    @property
    def required(self) -> tuple[str, ...]:
        """Wire names of the required parameters."""
        return tuple(p.wire_name for p in self.params if p.required)

    def wire_name(self, key: str) -> str:
        """The wire name :meth:`wire_args` gives one keyword argument: ``"from"`` for ``from_``; others as they are."""
        return next(iter(self.wire_args({key: None})))

    def wire_args(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Map keyword arguments that use sanitised identifiers back to the tool's wire names.

        Keys that already are wire names pass through unchanged, so the mapping is safe
        to apply to either calling form.

        Args:
            args: Arguments keyed by identifiers and/or wire names.

        Returns:
            Arguments keyed by wire names.

        Raises:
            ValueError: If one argument is given under both its identifier and its wire name.
        """
        renamed = self.wire_names
        wires = {p.wire_name for p in self.params}
        out: dict[str, Any] = {}
        for key, value in args.items():
            wire = key if key in wires else renamed.get(key, key)
            if wire in out:
                raise ValueError(
                    f"argument {cap_text(wire, 200)!r} of tool {self.tool_name!r} is given twice "
                    f"(as {cap_text(key, 200)!r})"
                )
            out[wire] = value
        return out


@dataclass(frozen=True, slots=True)
class RenderedModule:
    """Signatures of many tools as one stub module."""

    text: str
    """``from typing import ...`` followed by every signature: in a module that names a function like a
    builtin or ``typing`` name its annotations read (``function_names``), that name is read through an
    alias there (``_builtins.list[Entry]``, see :func:`~tooldocs.unshadowed`); each signature's own
    :attr:`Signature.text` keeps the plain spelling."""
    signatures: tuple[Signature, ...]
    collisions: tuple[Collision, ...] = ()
    """Tool-name collisions (two tools whose names map to one function name) and per-tool ones."""


_CLOSING_KEYS = ("additionalProperties", "unevaluatedProperties")


def _admits_extra_keys(schema: Mapping[str, Any]) -> bool:
    """Whether an object schema says outright that keys it does not declare are valid.

    ``additionalProperties`` or ``unevaluatedProperties`` true or a schema (other than ``{"not": {}}``,
    which is ``false``), or ``patternProperties``.
    """
    for key in _CLOSING_KEYS:
        extra = schema.get(key)
        if extra is True or (isinstance(extra, dict) and extra != {"not": {}}):
            return True
    return bool(schema.get("patternProperties"))


def _refuses_extra_keys(schema: Mapping[str, Any]) -> bool:
    """Whether an object schema says outright that no key it does not declare is valid.

    ``additionalProperties`` (or ``unevaluatedProperties``) ``false``, and no ``patternProperties``.
    An object that says nothing admits any key (JSON Schema's default), and most output schemas
    say nothing (pydantic's among them, unless ``extra="forbid"``).
    """
    if _admits_extra_keys(schema):
        return False
    return any(schema.get(k) is False or schema.get(k) == {"not": {}} for k in _CLOSING_KEYS)


def _as_schema(value: Any) -> dict[str, Any] | None:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def _split_top_level(text: str, sep: str) -> list[str]:
    # Split at `sep` outside brackets and double-quoted strings: "A | list[B | C]" on "|",
    # or the inside of Literal["a, b", 1] on ",". Empty parts are dropped.
    parts: list[str] = []
    depth = 0
    start = 0
    in_str = False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_str:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
        i += 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"' + r"|'(?:[^'\\]|\\.)*'")
_NAME: Final = re.compile(r"[^\W\d]\w*")


def _names_read(annotation: str) -> set[str]:
    """The names an annotation reads (its string literals left out: ``Literal["str"]`` reads ``Literal``)."""
    return set(_NAME.findall(_STRING.sub("", annotation)))


def _union(members: Iterable[str]) -> str:
    flat: list[str] = []
    literals: list[str] = []
    for m in members:
        for p in _split_top_level(m, "|"):
            if p == _ANY:
                return _ANY
            if p.startswith("Literal[") and p.endswith("]"):
                for v in _split_top_level(p[8:-1], ","):
                    if v not in literals:
                        literals.append(v)
                if "\0lit" not in flat:
                    flat.append("\0lit")
            elif p not in flat:
                flat.append(p)
    if literals:
        flat[flat.index("\0lit")] = "Literal[" + ", ".join(literals) + "]"
    has_none = "None" in flat
    flat = [p for p in flat if p != "None"]
    if has_none:
        flat.append("None")
    return " | ".join(flat) if flat else _ANY


def _literal_value(value: Any) -> str | None:
    # Literal[...] accepts str, int, bool and None; floats and containers do not belong there.
    if value is None or isinstance(value, bool | int | str):
        return py_literal(value, limit=200)
    return None


_VALUE_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "bool"),  # before int: bool is an int subclass
    (int, "int"),
    (float, "float"),
    (str, "str"),
    (list, "list[Any]"),
    (dict, "dict[str, Any]"),
)


def _base_type_of_values(values: Sequence[Any]) -> str:
    # Callers pass at most MAX_SCAN values.
    names = ["None" if v is None else next((n for t, n in _VALUE_TYPES if isinstance(v, t)), _ANY) for v in values]
    return _union(names)


@dataclass(slots=True)
class _Merged:
    """The keys gathered from the parts of one object schema (its ``$ref``, ``allOf``, branches)."""

    properties: dict[str, Any] = field(default_factory=dict[str, Any])
    required: list[str] = field(default_factory=list[str])
    refs: list[str] = field(default_factory=list[str])
    """References merged in place: met again inside, they are a cycle."""
    branch_keys: set[str] = field(default_factory=set[str])
    is_object: bool = False
    open: bool = False
    closed: bool = False
    """A part every value must match (not a branch) refuses the keys it does not declare: a key no
    part declares is refused too. An object both open and closed is taken for open."""
    description: Any = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object", "properties": self.properties, "required": self.required}
        if self.description is not None:
            out["description"] = self.description
        if self.open:
            out["additionalProperties"] = True
        elif self.closed:
            out["additionalProperties"] = False
        return out


def _is_merged_object(schema: Mapping[str, Any]) -> bool:
    """Whether a schema is one object whose keys come from several places, rather than a union."""
    if isinstance(schema.get("$ref"), str):
        return any(k in schema for k in (*_OBJECT_KEYS, "allOf", *_BRANCH_KEYS))
    if isinstance(schema.get("allOf"), list):
        return True
    if "anyOf" in schema or "oneOf" in schema:
        return any(k in schema for k in _OBJECT_KEYS)
    return "then" in schema or "else" in schema or any(isinstance(schema.get(k), dict) for k in _DEPENDENT_KEYS)


class _Renderer:
    """Renders schemas into annotations, collecting TypedDict classes. One per signature/module."""

    def __init__(self, options: RenderOptions, classes: set[str] | None = None, *, strict: bool = False) -> None:
        self.options = options
        self.strict = strict
        self.classes: set[str] = classes if classes is not None else set()
        self.definitions: list[str] = []
        self.closed: set[str] = set()
        self.collisions: list[Collision] = []
        self.warnings: list[str] = []
        self._more_warnings = 0
        self._note_at: int | None = None
        self._spent_warned = False
        self.root: dict[str, Any] = {}
        self.budget = RenderBudget(options.max_nodes, options.max_chars)
        self._ref_cache: dict[str, str] = {}
        self._in_progress: dict[str, str | None] = {}
        # References an allOf is expanding in place: met again inside, they are a cycle.
        self._inline: set[str] = set()
        self._stack = 0

    def warn(self, path: str, reason: str, shown: str = "shown as Any", *, always: bool = False) -> None:
        if self.strict:
            raise SchemaRenderError(path, reason)
        text = f"{cap_text(path or '/', 200)}: {cap_text(reason, 300)}; {shown}"
        if text in self.warnings:  # the same part met again (a shared reference, a repeated branch)
            return
        if always or len(self.warnings) < MAX_WARNINGS - 1:
            self.warnings.append(text)
            return
        # Keep the list short: the last entry counts what was left out.
        self._more_warnings += 1
        note = f"... and {self._more_warnings} more warning(s)"
        if self._note_at is None:
            self._note_at = len(self.warnings)
            self.warnings.append(note)
        else:
            self.warnings[self._note_at] = note

    def visit(self, path: str, n: int = 1) -> bool:
        """Spend ``n`` schema nodes of the budget; ``False`` (after one warning) once it is spent."""
        if self.budget.visit(n):
            return True
        self._warn_spent(path)
        return False

    def emit(self, path: str, n: int) -> bool:
        """Spend ``n`` characters of the budget; ``False`` (after one warning) once it is spent."""
        if self.budget.emit(n):
            return True
        self._warn_spent(path)
        return False

    def _warn_spent(self, path: str) -> None:
        if self.budget.spent is not None and not self._spent_warned:
            self._spent_warned = True
            self.warn(path, self.budget.spent, "what did not fit is shown as Any (parameters: **kwargs)", always=True)

    @property
    def spent(self) -> bool:
        return self.budget.spent is not None

    def set_root(self, root: dict[str, Any]) -> None:
        self.root = root
        self._ref_cache = {}
        self._in_progress = {}
        self._inline = set()

    def new_class_name(self, *parts: str) -> str:
        base = class_name(*parts)[:MAX_CLASS_NAME]
        name = base
        n = 2
        while name in self.classes or name in RESERVED_CLASS_NAMES:
            name = f"{base}{n}"
            n += 1
        self.classes.add(name)
        return name

    # -- refs ----------------------------------------------------------------------

    def resolve(self, ref: str, path: str) -> dict[str, Any] | None:
        if len(ref) > MAX_REF:
            self.warn(path, f"$ref of {len(ref):,} characters is too long to resolve")
            return None
        if not ref.startswith("#"):
            self.warn(path, f"$ref {ref!r} points outside the schema")
            return None
        node: Any = self.root
        pointer = ref[1:]
        if pointer:
            if not pointer.startswith("/"):
                self.warn(path, f"$ref {ref!r} is not a JSON pointer")
                return None
            for raw in pointer[1:].split("/"):
                key = raw.replace("~1", "/").replace("~0", "~")
                if isinstance(node, dict) and key in node:
                    node = cast("dict[str, Any]", node)[key]
                elif isinstance(node, list) and key.isdigit() and int(key) < len(cast("list[Any]", node)):
                    node = cast("list[Any]", node)[int(key)]
                else:
                    self.warn(path, f"$ref {ref!r} does not resolve")
                    return None
        if node is True or node == {}:
            return {}
        schema = _as_schema(node)
        if schema is None:
            self.warn(path, f"$ref {ref!r} resolves to a non-schema")
        return schema

    def ref_type(self, ref: str, path: str, depth: int) -> str:
        if ref in self._ref_cache:
            return self._ref_cache[ref]
        if ref in self._in_progress:
            # Recursive reference: objects refer to their class by name; anything else is Any.
            return self._in_progress[ref] or _ANY
        target = self.resolve(ref, path)
        if target is None:
            return _ANY
        def_name = ref.rstrip("/").rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~") or "Root"
        found = self._class_schema(target, path, ref) if depth < self.options.max_depth else None
        if found is not None and self._is_open(found[0]):
            ann = "dict[str, Any]"
        elif found is not None:
            name = self.new_class_name(def_name)
            self._in_progress[ref] = name
            ann = self._merged_class(found, path, name, depth, describe=True)
        else:
            self._in_progress[ref] = None
            ann = self.type_of(target, path, (def_name,), depth)
        self._in_progress.pop(ref, None)
        self._ref_cache[ref] = ann
        return ann

    def _class_schema(
        self, schema: dict[str, Any], path: str, ref: str | None = None
    ) -> tuple[dict[str, Any], list[str]] | None:
        """The object with named properties a schema stands for, reachable without unions: it becomes a class.

        Returns the object schema and the references merged into it; ``None`` when the schema is
        no such object (or classes are off).
        """
        if not self.options.nested_classes:
            return None
        found: tuple[dict[str, Any], list[str]] | None
        if _is_merged_object(schema) or isinstance(schema.get("$ref"), str):
            merged = self._merge(schema, path, ref)
            found = None if merged is None else (merged.schema(), merged.refs)
        elif self._is_object(schema) and "anyOf" not in schema and "oneOf" not in schema:
            found = (schema, [])
        else:
            return None
        return found if found is not None and _as_schema(found[0].get("properties")) else None

    def _is_open(self, schema: dict[str, Any]) -> bool:
        # A type checker must not refuse a key the schema lets through.
        return self.options.loose_open_objects and _admits_extra_keys(schema)

    def _merged_class(
        self, found: tuple[dict[str, Any], list[str]], path: str, name: str, depth: int, *, describe: bool = False
    ) -> str:
        schema, refs = found
        added = [r for r in refs if r not in self._inline]
        self._inline.update(added)
        try:
            return self.object_class(schema, path, name, depth, describe=describe)
        finally:
            self._inline.difference_update(added)

    def _merge(self, schema: dict[str, Any], path: str, ref: str | None = None) -> _Merged | None:
        """Every key an object schema admits, gathered from all its parts; ``None`` if a part is no object."""
        out = _Merged(refs=[ref] if ref is not None else [])
        if not self._gather(schema, path, out, optional=False) or not out.is_object:
            return None
        if ref is not None:
            out.refs.remove(ref)
        return out

    def _gather(self, s: dict[str, Any], path: str, out: _Merged, *, optional: bool) -> bool:
        # The stub must admit every key the schema does: allOf members and $ref siblings add
        # their keys as declared, branches (oneOf/anyOf/then/else, dependentSchemas) as optional ones.
        if not self.visit(path):
            return False
        t = s.get("type")
        if t is not None and t != "object" and not (isinstance(t, list) and "object" in t):
            return False
        if t is not None or any(k in s for k in _OBJECT_KEYS):
            out.is_object = True
        if out.description is None and isinstance(s.get("description"), str):
            out.description = s["description"]
        ref = s.get("$ref")
        if isinstance(ref, str):
            if ref in out.refs:
                pass  # met already (a diamond or a cycle): nothing new
            elif ref in self._in_progress or ref in self._inline:
                # Expanding a schema being rendered again would never end: leave the object open.
                out.open = True
            else:
                out.refs.append(ref)
                target = self.resolve(ref, path)
                if target is None or not self._gather(target, path, out, optional=optional):
                    return False
        props = _as_schema(s.get("properties")) or {}
        if not self.visit(path, len(props)):
            return False
        for key, sub in props.items():
            if not optional:
                out.properties[key] = sub
                out.branch_keys.discard(key)
            elif key not in out.properties:
                out.properties[key] = sub
                out.branch_keys.add(key)
            elif key in out.branch_keys and out.properties[key] != sub:
                out.properties[key] = {"anyOf": [out.properties[key], sub]}
        req = s.get("required")
        if not optional and isinstance(req, list):
            out.required.extend(x for x in cast("list[Any]", req)[:MAX_SCAN] if isinstance(x, str))
        if _admits_extra_keys(s):
            out.open = True
        elif not optional and _refuses_extra_keys(s):
            out.closed = True
        parts: list[tuple[str, Any]] = []
        all_of = s.get("allOf")
        if isinstance(all_of, list):
            parts += [("allOf", m) for m in cast("list[Any]", all_of)]
        for key in _BRANCH_KEYS:
            branch = s.get(key)
            if isinstance(branch, list):
                parts += [(key, m) for m in cast("list[Any]", branch)]
            elif key in ("then", "else") and branch is not None:
                parts.append((key, branch))
        for key in _DEPENDENT_KEYS:
            by_key = s.get(key)
            if isinstance(by_key, dict):
                # ``dependencies`` also lists names (``{"a": ["b"]}``): those add no key of their own.
                parts += [(key, m) for m in cast("dict[str, Any]", by_key).values() if not isinstance(m, list)]
        for i, (key, m) in enumerate(parts):
            if m is True or m is False:
                continue  # admits anything (keys declared elsewhere) or nothing: adds no key
            ms = _as_schema(m)
            if ms is None or not self._gather(ms, f"{path}/{key}/{i}", out, optional=optional or key != "allOf"):
                return False
        return True

    @staticmethod
    def _is_object(schema: dict[str, Any]) -> bool:
        t = schema.get("type")
        if t == "object":
            return True
        if t is None:
            return any(k in schema for k in _OBJECT_KEYS)
        return False

    # -- types ---------------------------------------------------------------------

    def root_type(self, schema: Any, path: str, hint: tuple[str, ...]) -> str:
        """Render the root of the current document; a root object gets the class "#" refers to."""
        s = _as_schema(schema)
        found = None
        # A root that only refers elsewhere is named after what it refers to (see ref_type).
        if s is not None and ("$ref" not in s or _is_merged_object(s)) and self.options.max_depth > 0:
            found = self._class_schema(s, path, "#")
        if found is None:
            return self.type_of(schema, path, hint, 0)
        if self._is_open(found[0]):
            ann = "dict[str, Any]"
        else:
            name = self.new_class_name(*hint)
            self._in_progress["#"] = name
            ann = self._merged_class(found, path, name, 0)
            del self._in_progress["#"]
        self._ref_cache["#"] = ann
        return ann

    def type_of(self, schema: Any, path: str, hint: tuple[str, ...], depth: int) -> str:
        if not self.visit(path):
            return _ANY
        if schema is True or schema is None:
            return _ANY
        if schema is False:
            self.warn(path, "schema 'false' accepts nothing")
            return _ANY
        s = _as_schema(schema)
        if s is None:
            self.warn(path, f"not a schema ({type(schema).__name__})")
            return _ANY
        if self._stack >= _MAX_STACK:
            # Absurd nesting, or a reference that keeps expanding itself inline: stop here.
            self.warn(path, "schema nests too deeply (or refers to itself inline)")
            return _ANY
        self._stack += 1
        try:
            ann = self._type_of(s, path, hint, depth)
        finally:
            self._stack -= 1
        if s.get("nullable") is True and ann != _ANY:
            ann = _union([ann, "None"])
        if len(ann) > MAX_ANNOTATION:
            self.warn(path, f"type too large to show ({len(ann):,} characters)")
            return _ANY
        return ann

    def _member_types(self, items: Iterable[tuple[Any, str, tuple[str, ...]]], depth: int) -> list[str] | None:
        """Annotations of several schemas (union or tuple members); ``None`` when they do not fit."""
        out: list[str] = []
        size = 0
        for schema, path, hint in items:
            ann = self.type_of(schema, path, hint, depth)
            size += len(ann) + 3
            if self.spent:
                return None
            if size > MAX_ANNOTATION:
                self.warn(path, f"type too large to show (over {MAX_ANNOTATION:,} characters)")
                return None
            out.append(ann)
        return out

    def _type_of(self, s: dict[str, Any], path: str, hint: tuple[str, ...], depth: int) -> str:
        if _is_merged_object(s):
            merged = self._merge(s, path)
            if merged is not None:
                inline = [r for r in merged.refs if r not in self._inline]
                self._inline.update(inline)
                try:
                    ann = self._single_type(merged.schema(), "object", path, hint, depth)
                finally:
                    self._inline.difference_update(inline)
                t = s.get("type")
                return _union([ann, "None"]) if isinstance(t, list) and "null" in t else ann
            if self.spent:
                return _ANY
            if self._is_object(s):
                # Its parts cannot be merged into one class: any key may be valid.
                return "dict[str, Any]"
        ref = s.get("$ref")
        if isinstance(ref, str):
            return self.ref_type(ref, path, depth)
        if "const" in s:
            if s["const"] is None:
                return "None"
            lit = _literal_value(s["const"])
            return f"Literal[{lit}]" if lit is not None else _base_type_of_values([s["const"]])
        enum = s.get("enum")
        if isinstance(enum, list) and enum:
            return self.enum_type(cast("list[Any]", enum), s)
        for key in ("anyOf", "oneOf"):
            members = s.get(key)
            if isinstance(members, list) and members:
                member_list = cast("list[Any]", members)
                siblings = {k: v for k, v in s.items() if k not in (key, "description", "title", "default")}
                rendered = self._member_types(
                    (
                        (
                            {**siblings, **ms} if (ms := _as_schema(m)) is not None and siblings else m,
                            f"{path}/{key}/{i}",
                            hint if len(member_list) == 1 else (*hint, str(i + 1)),
                        )
                        for i, m in enumerate(member_list)
                    ),
                    depth,
                )
                return _ANY if rendered is None else _union(rendered)
        all_of = s.get("allOf")
        if isinstance(all_of, list) and all_of:
            return self.all_of(s, cast("list[Any]", all_of), path, hint, depth)
        t = s.get("type")
        if isinstance(t, list):
            types: list[str] = []
            for x in cast("list[Any]", t):
                if not self.visit(path):
                    return _ANY
                if isinstance(x, str) and x not in types:
                    types.append(x)
            if not types:
                return _ANY
            return _union(self._single_type(s, x, path, hint, depth) for x in types)
        if isinstance(t, str):
            return self._single_type(s, t, path, hint, depth)
        if self._is_object(s):
            return self._single_type(s, "object", path, hint, depth)
        if "items" in s or "prefixItems" in s:
            return self._single_type(s, "array", path, hint, depth)
        return _ANY

    def enum_type(self, values: list[Any], s: dict[str, Any]) -> str:
        if len(values) <= self.options.max_literal:
            lits = [_literal_value(v) for v in values]
            if all(x is not None for x in lits):
                non_null = [x for x in lits if x is not None and x != "None"]
                parts = [f"Literal[{', '.join(dict.fromkeys(non_null))}]"] if non_null else []
                if "None" in lits:
                    parts.append("None")
                return " | ".join(parts)
        t = s.get("type")
        if isinstance(t, str) and t in _SIMPLE_TYPES:
            return _SIMPLE_TYPES[t]
        return _base_type_of_values(values[:MAX_SCAN])

    def all_of(self, s: dict[str, Any], members: list[Any], path: str, hint: tuple[str, ...], depth: int) -> str:
        found = self._all_of_members(s, members, path)
        if found is None:
            return _ANY
        resolved, recursive, inline = found
        self._inline.update(inline)
        try:
            return self._intersection(resolved, recursive, path, hint, depth)
        finally:
            self._inline.difference_update(inline)

    def _all_of_members(
        self, s: dict[str, Any], members: list[Any], path: str
    ) -> tuple[list[dict[str, Any]], list[str], list[str]] | None:
        """(member schemas, names of recursive members, references resolved in place); ``None`` past the budget."""
        siblings = {k: v for k, v in s.items() if k != "allOf"}
        resolved: list[dict[str, Any]] = [siblings] if siblings else []
        # A member that refers back to a schema being rendered adds nothing new (A = A and B is B):
        # it is named, never expanded again; expanding it is what made rendering exponential.
        recursive: list[str] = []
        inline: list[str] = []
        for i, m in enumerate(members):
            if not self.visit(path):
                return None
            ms = _as_schema(m)
            if ms is None:
                continue
            ref = ms.get("$ref")
            if isinstance(ref, str) and len(ms) == 1:
                if ref in self._in_progress or ref in self._inline:
                    recursive.append(self._in_progress.get(ref) or _ANY)
                    continue
                if ref in inline:  # A and A is A
                    continue
                target = self.resolve(ref, f"{path}/allOf/{i}")
                if target is None:
                    continue
                inline.append(ref)
                ms = target
            resolved.append(ms)
        return resolved, recursive, inline

    def _merged_object(self, resolved: list[dict[str, Any]], path: str) -> dict[str, Any] | None:
        """One object schema for an intersection of objects; ``None`` if a member is not an object."""
        if not resolved or not all(self._is_object(r) or "properties" in r for r in resolved):
            return None
        merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        for r in resolved:
            props = _as_schema(r.get("properties")) or {}
            req = r.get("required")
            req_list = cast("list[Any]", req) if isinstance(req, list) else []
            if not self.visit(path, len(props) + len(req_list)):
                return None
            merged["properties"].update(props)
            merged["required"].extend(x for x in req_list if isinstance(x, str))
            if "description" in r and "description" not in merged:
                merged["description"] = r["description"]
        return merged

    def _intersection(
        self, resolved: list[dict[str, Any]], recursive: list[str], path: str, hint: tuple[str, ...], depth: int
    ) -> str:
        if len(resolved) == 1:
            return self.type_of(resolved[0], path, hint, depth)
        merged = self._merged_object(resolved, path)
        if merged is not None:
            return self._single_type(merged, "object", path, hint, depth)
        if self.spent:
            return _ANY
        # An intersection of non-objects: the most specific member is the best we can show.
        for r in resolved:
            ann = self.type_of(r, path, hint, depth)
            if ann != _ANY:
                return ann
        return next((a for a in recursive if a != _ANY), _ANY)

    def _single_type(self, s: dict[str, Any], t: str, path: str, hint: tuple[str, ...], depth: int) -> str:
        if t in _SIMPLE_TYPES:
            return _SIMPLE_TYPES[t]
        if t == "array":
            prefix = s.get("prefixItems")
            items = s.get("items")
            if isinstance(prefix, list) and prefix:
                parts = self._member_types(
                    (
                        (x, f"{path}/prefixItems/{i}", (*hint, f"item{i}"))
                        for i, x in enumerate(cast("list[Any]", prefix))
                    ),
                    depth + 1,
                )
                if parts is None:
                    return "list[Any]"
                fixed = items is False and self.options.tuples
                return f"tuple[{', '.join(parts)}]" if fixed else f"list[{_union(parts)}]"
            if isinstance(items, list) and items:
                parts = self._member_types(
                    ((x, f"{path}/items/{i}", (*hint, f"item{i}")) for i, x in enumerate(cast("list[Any]", items))),
                    depth + 1,
                )
                if parts is None:
                    return "list[Any]"
                return f"tuple[{', '.join(parts)}]" if self.options.tuples else f"list[{_union(parts)}]"
            if items is None or items is True or items == []:
                return "list[Any]"
            return f"list[{self.type_of(items, f'{path}/items', (*hint, 'item'), depth + 1)}]"
        if t == "object":
            props = _as_schema(s.get("properties"))
            if props and self.options.loose_open_objects and _admits_extra_keys(s):
                return "dict[str, Any]"
            if not props:
                extra = s.get("additionalProperties")
                if isinstance(extra, dict) and extra:
                    value = self.type_of(extra, f"{path}/additionalProperties", (*hint, "value"), depth + 1)
                    return f"dict[str, {value}]"
                return "dict[str, Any]"
            if depth >= self.options.max_depth or not self.options.nested_classes:
                return "dict[str, Any]"
            return self.object_class(s, path, self.new_class_name(*hint), depth)
        self.warn(path, f"unknown type {t!r}")
        return _ANY

    def object_class(self, s: dict[str, Any], path: str, name: str, depth: int, *, describe: bool = False) -> str:
        props = _as_schema(s.get("properties")) or {}
        req_raw = s.get("required")
        req_list = (
            [x for x in cast("list[Any]", req_raw)[:MAX_SCAN] if isinstance(x, str)]
            if isinstance(req_raw, list)
            else []
        )
        required = set(req_list)
        # A key ``required`` names is one every value has, even when ``properties`` does not describe it.
        undescribed: dict[str, Any] = {k: {} for k in req_list if k not in props}
        props = {**props, **undescribed}
        fields: list[tuple[str, str, bool, str]] = []
        for key, sub in props.items():
            if len(key) > MAX_KEY:
                self.warn(f"{path}/properties", f"a property name has {len(key):,} characters (at most {MAX_KEY})")
                return self._stand_in(name)
            ann = self.type_of(sub, f"{path}/properties/{key}", (name, key), depth + 1)
            desc = ""
            sub_s = _as_schema(sub)
            if sub_s is not None and self.options.field_descriptions:
                text = _tidy(_text_of(sub_s.get("description")))
                # A TypedDict cannot show a default; the comment does, before the description.
                default = (
                    py_literal(sub_s.get("default"), limit=self.options.max_default) if "default" in sub_s else None
                )
                if default is not None:
                    text = f"default {default}" + (f"; {text}" if text else "")
                desc = py_comment(text, self.options.field_descriptions)
            # A class cut short would look complete: past the budget the whole class stands in as a dict.
            if self.spent or not self.emit(path, len(key) + len(ann) + len(desc) + 24):
                return self._stand_in(name)
            fields.append((key, ann, key in required, desc))
        lines: list[str] = []
        # A property's class is described where the property is; a $defs class describes itself.
        desc = _tidy(_text_of(s.get("description"))) if describe else ""
        limit = self.options.field_descriptions
        head_comment = f"  # {py_comment(desc, limit)}" if desc and limit else ""
        # Mark whichever kind of key is rarer: NotRequired[...] on optional keys, or
        # total=False with Required[...] on required ones.
        n_optional = sum(1 for _, _, req, _ in fields if not req)
        total = n_optional <= len(fields) - n_optional
        total_arg = "" if total else ", total=False"

        def value_of(ann: str, req: bool) -> str:
            if total:
                return ann if req else f"NotRequired[{ann}]"
            return f"Required[{ann}]" if req else ann

        # In a class body a key is a name of the class: one its annotations read (a key named
        # ``str`` beside ``label: str``) would stand for that key there, not for the type.
        read = {n for _, ann, req, _ in fields for n in _names_read(value_of(ann, req))}
        functional = any(not k.isidentifier() or keyword.iskeyword(k) or k in read for k, *_ in fields)
        if functional:
            lines.append(f"{name} = TypedDict({py_str(name)}, {{{head_comment}")
            for key, ann, req, fdesc in fields:
                lines.append(f"    {py_str(key)}: {value_of(ann, req)}," + (f"  # {fdesc}" if fdesc else ""))
            lines.append(f"}}{total_arg})")
        else:
            lines.append(f"class {name}(TypedDict{total_arg}):{head_comment}")
            for key, ann, req, fdesc in fields:
                lines.append(f"    {key}: {value_of(ann, req)}" + (f"  # {fdesc}" if fdesc else ""))
        self.definitions.append("\n".join(lines))
        if _refuses_extra_keys(s):
            self.closed.add(name)
        return name

    def _stand_in(self, name: str) -> str:
        # Other parts may already refer to the class by name (recursive references): define it.
        self.definitions.append(f"{name} = dict[str, Any]")
        return name


_STOP_WORDS = frozenset(
    "a an and as at be by e.g eg for from if in is it its of on or the this that to use used "
    "name number id identifier value optional required".split()
)
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


def _words(text: str) -> list[str]:
    return _WORD.findall(_CAMEL.sub(r"\1 \2", text).lower())


def _is_redundant(description: str, context: set[str]) -> bool:
    """Whether every content word of ``description`` is (a prefix relative of) a word in ``context``."""
    words = [w for w in _words(description) if w not in _STOP_WORDS]
    if len(words) > 4:
        return False
    return all(
        w in context or (len(w) >= 3 and any(len(c) >= 3 and (w.startswith(c) or c.startswith(w)) for c in context))
        for w in words
    )


_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+(?=\w)", re.IGNORECASE)


def _tidy(description: str) -> str:
    """First sentence, without a leading article or the final period: comment-sized."""
    text = _LEADING_ARTICLE.sub("", first_sentence(description, 1000)).rstrip(".")
    return text[:1].upper() + text[1:]


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


def schema_to_python(
    schema: Mapping[str, Any] | bool,
    *,
    name: str = "Model",
    options: RenderOptions | None = None,
    strict: bool = False,
) -> RenderedType:
    """Render a JSON Schema as a Python annotation and the ``TypedDict`` classes it needs.

    Objects with properties become ``TypedDict`` classes (optional keys as
    ``NotRequired``; keys that are not identifiers use the functional form, which keeps
    the wire key); ``enum``/``const`` → ``Literal[...]``; ``["null", T]``, ``nullable``
    and unions with null → ``T | None``; arrays → ``list[T]`` (fixed-length ones: tuples, unless
    ``options.tuples`` is off); ``$ref`` into the schema (``#/$defs/...``, ``#/definitions/...``, ``#``, recursive
    ones included) → a named class; ``oneOf``/``anyOf`` → unions; ``allOf`` of objects →
    one merged class; unknown or empty schemas → ``Any``. It never raises for a
    well-formed JSON value: what it cannot render becomes ``Any`` and a warning.

    Args:
        schema: The JSON Schema (a mapping, or ``True``/``False``).
        name: Name of the class for the top-level object (other classes are named from it).
        options: Detail options.
        strict: Raise instead of rendering ``Any`` with a warning.

    Returns:
        The annotation, class definitions, collisions and warnings.

    Raises:
        SchemaRenderError: With ``strict``, for the first part that cannot be rendered exactly
            (names the JSON pointer and why).

    Example:
        >>> r = schema_to_python({"type": "object", "required": ["id"], "properties": {
        ...     "id": {"type": "integer"}, "labels": {"type": "array", "items": {"enum": ["bug", "docs"]}}}},
        ...     name="Issue")
        >>> r.annotation
        'Issue'
        >>> print(r.source)
        class Issue(TypedDict):
            id: int
            labels: NotRequired[list[Literal["bug", "docs"]]]
    """
    r = _Renderer(options or RenderOptions(), strict=strict)
    root = _as_schema(schema) or {}
    r.set_root(root)
    ann = r.root_type(schema if isinstance(schema, bool) else dict(schema), "", (name,))
    return RenderedType(ann, tuple(r.definitions), tuple(r.collisions), tuple(r.warnings), frozenset(r.closed))


def _input_params(r: _Renderer, schema: dict[str, Any]) -> tuple[list[tuple[str, Any, bool]], bool, int]:
    """Parameters to render, whether extra keys are accepted, and how many parameters were not read.

    Parameters are ``(wire name, property schema, required)``, required first. No signature
    can show more parameters than its node budget, so only that many are read; the count of
    the others comes from the size of the ``properties`` objects, without reading them.
    """
    seen = 0
    while isinstance(schema.get("$ref"), str) and seen < 16:
        target = r.resolve(schema["$ref"], "")
        if target is None:
            break
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        seen += 1
    room = r.options.max_nodes + 1
    top = _as_schema(schema.get("properties")) or {}
    req = schema.get("required")
    req_list = [x for x in cast("list[Any]", req)[:MAX_SCAN] if isinstance(x, str)] if isinstance(req, list) else []
    required = set(req_list)
    if len(top) <= room:
        props: dict[str, Any] = dict(top)
    else:
        # Too many to read them all: the required ones first (a call needs them), then the others.
        props = {k: top[k] for k in req_list[:room] if k in top}
        for k, v in itertools.islice(top.items(), room):
            if len(props) >= room:
                break
            props.setdefault(k, v)
    unread = len(top) - len(props)
    # Parameters declared only inside combinators, or under a condition (``then``/``else``, a
    # ``dependentSchemas`` entry), still belong to the signature: a call may give them.
    for key in ("allOf", "anyOf", "oneOf", "then", "else", "dependentSchemas", "dependencies"):
        branches = _branches(schema.get(key), key)
        if not branches:
            continue
        for x in branches:
            b = _as_schema(x)
            if b is None:
                continue
            if not r.visit(f"/{key}"):
                break
            if isinstance(b.get("$ref"), str):
                b = r.resolve(b["$ref"], f"/{key}") or {}
            branch_props = _as_schema(b.get("properties")) or {}
            taken = 0
            for pk, pv in itertools.islice(branch_props.items(), max(room - len(props), 0)):
                props.setdefault(pk, pv)
                taken += 1
            unread += len(branch_props) - taken
            if key == "allOf":
                breq = b.get("required")
                if isinstance(breq, list):
                    required.update(x for x in cast("list[Any]", breq)[:MAX_SCAN] if isinstance(x, str))
    # No declared properties at all means "unknown arguments"; an empty ``properties`` means "none".
    extra = schema.get("additionalProperties", True) is not False and not props and "properties" not in schema
    if r.options.loose_open_objects and _admits_extra_keys(schema):
        extra = True
    ordered = [(k, v, k in required) for k, v in props.items()]
    ordered.sort(key=lambda item: not item[2])  # stable: required first, schema order kept
    return ordered, extra, unread


def _branches(value: Any, key: str) -> list[Any]:
    """The subschemas under ``key`` whose properties a call may give (a list, one schema, or a map of them)."""
    if isinstance(value, list):
        return cast("list[Any]", value)
    if key in ("then", "else"):
        return [value] if isinstance(value, dict) else []
    if isinstance(value, dict):  # dependentSchemas / dependencies: name → schema (or a list of names)
        return [v for v in cast("dict[str, Any]", value).values() if isinstance(v, dict)]
    return []


def _render_signature(
    tool: Tool,
    *,
    result_shape: Mapping[str, Any] | None,
    options: RenderOptions,
    function_name: str | None,
    classes: set[str] | None,
    strict: bool = False,
) -> Signature:
    fname = function_name or py_identifier(tool.name)
    # Classes must not take the function's name (a module would rebind it).
    r = _Renderer(options, classes if classes is not None else {fname}, strict=strict)
    prefix = class_name(tool.name)
    r.set_root(tool.input_schema)
    entries, extra, omitted = _input_params(r, tool.input_schema)
    shown: list[tuple[str, Any, bool, str]] = []
    for i, (wire, sub, req) in enumerate(entries):
        if len(wire) > MAX_KEY:
            r.warn("/properties", f"a parameter name has {len(wire):,} characters (at most {MAX_KEY})", "not shown")
            omitted += 1
            continue
        was_spent = r.spent
        ann = r.type_of(sub, f"/properties/{wire}", (prefix, wire), 1)
        # What a row can hold: name, type, default, comment and punctuation.
        row = len(wire) + len(ann) + options.max_default + max(options.descriptions, 40) + 16
        # A parameter whose own type spent the budget is kept: what did not fit is already a stand-in.
        if was_spent or not (r.spent or r.emit(f"/properties/{wire}", row)):
            omitted += len(entries) - i
            break
        shown.append((wire, sub, req, ann))
    names = NameMap(f"parameters of {tool.name!r}")
    params: list[Param] = []
    idents = names.add_all([wire for wire, *_ in shown])
    for (wire, sub, req, ann), ident in zip(shown, idents, strict=True):
        sub_s = _as_schema(sub) or {}
        has_default = "default" in sub_s
        params.append(
            Param(
                name=ident,
                wire_name=wire,
                annotation=ann,
                required=req,
                has_default=has_default,
                default=sub_s.get("default"),
                description=_text_of(sub_s.get("description")),
            )
        )
    out_schema = tool.output_schema if tool.output_schema is not None else result_shape
    if out_schema is not None:
        r.set_root(dict(out_schema))
        returns = r.root_type(dict(out_schema), "/outputSchema", (prefix, "Result"))
    else:
        returns = options.untyped_result
    collisions = [*names.collisions, *r.collisions]
    text = _format_def(fname, tool, params, extra, omitted, returns, r.definitions, options)
    return Signature(
        name=fname,
        tool_name=tool.name,
        text=text,
        params=tuple(params),
        returns=returns,
        definitions=tuple(r.definitions),
        collisions=tuple(collisions),
        warnings=tuple(r.warnings),
        omitted=omitted,
        closed=frozenset(r.closed),
    )


def _format_def(
    fname: str,
    tool: Tool,
    params: list[Param],
    extra: bool,
    omitted: int,
    returns: str,
    definitions: list[str],
    options: RenderOptions,
) -> str:
    lines: list[str] = list(definitions)
    context = {w for p in params for w in _words(p.wire_name)} | set(_words(tool.name))
    rows: list[tuple[str, str]] = []
    for p in params:
        code = f"{p.name}: {p.annotation}"
        if not p.required:
            lit = py_literal(p.default, limit=options.max_default) if p.has_default else None
            code += f" = {lit}" if lit is not None else " = ..."
        comment_parts: list[str] = []
        if p.name != p.wire_name:
            comment_parts.append(f"wire name {py_str(p.wire_name)}")
        if options.descriptions and p.description:
            desc = _tidy(p.description)
            if not (options.skip_redundant and _is_redundant(desc, context)):
                comment_parts.append(desc)
        comment = py_comment(". ".join(comment_parts), max(options.descriptions, 40 if p.name != p.wire_name else 0))
        rows.append((code, comment))
    kwargs = extra or omitted > 0
    if omitted:
        note = f"{omitted:,} more parameters not shown (schema too large); pass them by wire name"
        rows.append(("**kwargs: Any", note))
    elif extra:
        rows.append(("**kwargs: Any", ""))
    doc = first_sentence(tool.description or tool.title or "", options.docstring) if options.docstring else ""
    body = f'    """{_doc_escape(doc)}"""' if doc else "    ..."
    if not rows:
        lines.append(f"def {fname}() -> {returns}:")
    elif not any(c for _, c in rows) and len(fname) + sum(len(c) + 2 for c, _ in rows) + len(returns) < 90:
        star = "" if kwargs and len(rows) == 1 else "*, "
        lines.append(f"def {fname}({star}{', '.join(c for c, _ in rows)}) -> {returns}:")
    else:
        lines.append(f"def {fname}(")
        if not (kwargs and len(rows) == 1):
            lines.append("    *,")
        for code, comment in rows:
            lines.append(f"    {code}," + (f"  # {comment}" if comment else ""))
        lines.append(f") -> {returns}:")
    lines.append(body)
    return "\n".join(lines)


def _doc_escape(text: str) -> str:
    # The docstring is one line between triple quotes: escape what would end or break it.
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return text


def tool_signature(
    tool: Tool,
    *,
    result_shape: Mapping[str, Any] | None = None,
    options: RenderOptions | None = None,
    function_name: str | None = None,
    strict: bool = False,
) -> Signature:
    """Render a tool's Python call signature.

    Parameters are keyword-only, required first, named after the wire names (sanitised
    into identifiers where needed, with the wire name in a trailing comment and in
    :attr:`Signature.wire_names`); optional parameters show their schema default, or
    ``...`` (meaning "omit it") when there is none. The return type comes from the
    tool's output schema, else from ``result_shape`` (a learned shape), else it is
    ``dict[str, Any]``.

    The work is bounded by ``options.max_nodes`` and ``options.max_chars`` whatever the
    schema holds (recursive references are named, not expanded): past the budget the rest
    is ``Any``, further parameters fold into ``**kwargs`` (counted in
    :attr:`Signature.omitted`) and a warning says so.

    Args:
        tool: The tool.
        result_shape: A JSON Schema of the result learned from calls, used when the tool
            declares no output schema.
        options: Detail options and the work budget.
        function_name: Use this identifier for the ``def`` instead of the sanitised tool name.
        strict: Raise instead of rendering ``Any`` with a warning.

    Returns:
        The signature; without ``strict`` it never raises for a tool the index accepted.

    Raises:
        SchemaRenderError: With ``strict``, for the first part of the input or output schema
            that cannot be rendered exactly, or where the budget runs out (names the tool,
            the JSON pointer and why).
    """
    try:
        return _render_signature(
            tool,
            result_shape=result_shape,
            options=options or RenderOptions(),
            function_name=function_name,
            classes=None,
            strict=strict,
        )
    except SchemaRenderError as e:
        raise SchemaRenderError(e.path, e.reason, tool_id=tool.id) from None


def render_signature(
    tool: Tool,
    *,
    result_shape: Mapping[str, Any] | None = None,
    options: RenderOptions | None = None,
) -> str:
    """A tool's Python call signature as text (``tool_signature(tool).text``).

    Args:
        tool: The tool.
        result_shape: A learned result shape, used when the tool declares no output schema.
        options: Detail options.

    Returns:
        The ``TypedDict`` classes and the ``def``: valid Python that keeps every parameter
        (within the render budget; see :attr:`Signature.omitted`).

    Example:
        >>> from toolindex import Tool
        >>> print(render_signature(Tool(name="get-user", input_schema={"type": "object",
        ...     "properties": {"id": {"type": "integer"}, "from": {"type": ["string", "null"]}}, "required": ["id"]})))
        def get_user(
            *,
            id: int,
            from_: str | None = ...,  # wire name "from"
        ) -> dict[str, Any]:
            ...
    """
    return tool_signature(tool, result_shape=result_shape, options=options).text


def render_module(
    tools: Iterable[Tool],
    *,
    options: RenderOptions | None = None,
    result_shapes: Mapping[str, Mapping[str, Any]] | None = None,
    function_names: Mapping[str, str] | None = None,
    reserved: Iterable[str] = (),
    tiers: Sequence[RenderOptions] = (),
    fit: int = 0,
) -> RenderedModule:
    """Render the signatures of many tools as one stub module.

    Function names are unique across the module: tools whose names map to the same
    identifier (``get-issue`` and ``get_issue``, or one name in two namespaces) are
    reported in :attr:`RenderedModule.collisions` and the later ones get a suffix; class
    names are unique across the module too.

    Args:
        tools: The tools.
        options: Detail options.
        result_shapes: Learned result shapes by tool id.
        function_names: Use these identifiers (tool id → name, unique) for the functions
            instead of naming them here.
        reserved: Names no generated class may take (other names the module will define).
        tiers: Options from the richest to the most compact (``tooldocs.RENDER_TIERS``, say):
            each tool is rendered with the first whose signature text has at most ``fit``
            characters, or with the last (``options`` is then not used).
        fit: The characters a signature may have when ``tiers`` are given.

    Returns:
        The module text and each signature.
    """
    opts = options or RenderOptions()
    tool_list = list(tools)
    fn_names = NameMap("function names", reserved=RESERVED_CLASS_NAMES)
    if function_names is not None:
        fnames = [function_names[t.id] for t in tool_list]
    else:
        # Keyed by id so one name in two namespaces is a collision, not a silent merge.
        fnames = fn_names.add_all([t.id for t in tool_list], bases=[py_identifier(t.name) for t in tool_list])
    classes: set[str] = set(fnames) | set(reserved)
    choices = list(tiers) or [opts]
    sigs: list[Signature] = []
    for tool, fname in zip(tool_list, fnames, strict=True):
        for i, tier in enumerate(choices):
            # Each try names its classes in a copy: only the kept one takes names for good.
            trial = set(classes)
            sig = _render_signature(
                tool,
                result_shape=(result_shapes or {}).get(tool.id),
                options=tier,
                function_name=fname,
                classes=trial,
            )
            if len(sig.text) <= fit or i == len(choices) - 1:
                classes = trial
                sigs.append(sig)
                break
    collisions = [*fn_names.collisions, *(c for s in sigs for c in s.collisions)]
    # A function named like a builtin (a tool named ``list``) would shadow it in every annotation.
    header, texts = unshadowed([s.text for s in sigs], fnames)
    body = "\n\n\n".join(texts)
    text = f"{header}{STUB_IMPORTS}\n\n\n{body}\n" if sigs else f"{STUB_IMPORTS}\n"
    return RenderedModule(text=text, signatures=tuple(sigs), collisions=tuple(collisions))
