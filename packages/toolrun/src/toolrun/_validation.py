"""JSON Schema validation compiled once per schema.

``jsonschema`` is the authority: it decides what is valid and produces every reported
problem. Because one ``jsonschema`` check of even a tiny object schema costs about 15 µs,
more than half of the runner's whole per-call budget for a local function, a schema made
only of the common keywords (``type``, ``properties``, ``required``, ``additionalProperties``,
``items``, ``enum``, ``const``, bounds, ``pattern``, ``anyOf``/``oneOf``/``allOf``/``not``,
local ``$ref``) is also compiled into a tree of plain Python closures that answers "valid or
not" in about a microsecond. The closures follow ``jsonschema``'s semantics keyword by
keyword (booleans are not numbers, ``1.0`` is an integer, ``True != 1`` in ``enum``); a
schema with any other keyword uses ``jsonschema`` for the verdict too. When the verdict is
"invalid", ``jsonschema`` always produces the problems.
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, cast

import jsonschema
import jsonschema.exceptions
import jsonschema.protocols
import jsonschema.validators
import referencing.exceptions

from toolrun.exceptions import ValidationProblem

__all__ = [
    "DEFAULT_VALIDATION_POLICY",
    "CompiledSchema",
    "SchemaCache",
    "compile_schema",
    "json_path",
]

DEFAULT_VALIDATION_POLICY: Final = "error"
"""The output validation policy used everywhere unless configured otherwise."""

_MAX_MESSAGE = 300
_Check = Callable[[Any], bool]

# Keywords that never affect validity (annotations, containers reached through $ref only).
_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$comment",
        "$defs",
        "definitions",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",  # annotation only: validators are built without a format checker
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
    }
)
_FAST_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "pattern",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "$ref",
    }
)
# Keywords that change how references resolve: never reproduced.
_ID_KEYWORDS = frozenset({"$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary"})
# Dialects whose keyword semantics the fast path reproduces; others always use jsonschema.
_FAST_DIALECTS = {
    jsonschema.Draft202012Validator: "2020-12",
    jsonschema.Draft201909Validator: "2019-09",
    jsonschema.Draft7Validator: "draft7",
}


class _Unsupported(Exception):
    """The schema uses something the fast path does not reproduce."""


def json_path(parts: Any) -> str:
    """Format a path of keys and indexes as a JSON path.

    Args:
        parts: Iterable of ``str`` keys and ``int`` indexes, outermost first.

    Returns:
        ``$`` for the root, else e.g. ``$.items[2].name`` or ``$['odd key']``.
    """
    out = ["$"]
    for p in parts:
        if isinstance(p, int):
            out.append(f"[{p}]")
        elif isinstance(p, str) and p.isidentifier():
            out.append(f".{p}")
        else:
            out.append(f"[{json.dumps(str(p), ensure_ascii=False)}]")
    return "".join(out)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _unbool(v: Any) -> Any:
    # jsonschema compares True/False as distinct from 1/0 in enum and const.
    if v is True:
        return _TRUE
    if v is False:
        return _FALSE
    return v


_TRUE, _FALSE = object(), object()


def _equal(a: Any, b: Any) -> bool:
    # Mirrors jsonschema's own equality, so the fast path agrees with it on every value.
    if a is b:
        return True
    if isinstance(a, str) or isinstance(b, str):
        return bool(a == b)
    if isinstance(a, Sequence) and isinstance(b, Sequence):
        sa, sb = cast(Sequence[Any], a), cast(Sequence[Any], b)
        return len(sa) == len(sb) and all(_equal(x, y) for x, y in zip(sa, sb, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        ma, mb = cast(Mapping[Any, Any], a), cast(Mapping[Any, Any], b)
        return len(ma) == len(mb) and all(k in mb and _equal(v, mb[k]) for k, v in ma.items())
    return bool(_unbool(a) == _unbool(b))


def _is_number(x: Any) -> bool:
    if type(x) is int or type(x) is float:
        return True
    return type(x) is not bool and isinstance(x, numbers.Number)


def _is_integer(x: Any) -> bool:
    if type(x) is int:
        return True
    if type(x) is bool:
        return False
    if isinstance(x, float):
        return x.is_integer()
    return isinstance(x, int)


def _bound_check(key: str, b: Any) -> _Check:
    if key == "minimum":
        return lambda x: not _is_number(x) or bool(x >= b)
    if key == "maximum":
        return lambda x: not _is_number(x) or bool(x <= b)
    if key == "exclusiveMinimum":
        return lambda x: not _is_number(x) or bool(x > b)
    return lambda x: not _is_number(x) or bool(x < b)


_TYPE_CHECKS: dict[str, _Check] = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
}


class _FastCompiler:
    """Compiles the common keyword subset into closures; raises ``_Unsupported`` otherwise."""

    def __init__(self, root: Mapping[str, Any], dialect: str, known: frozenset[str]) -> None:
        self._root = root
        self._dialect = dialect
        self._known = known
        self._refs: dict[str, _Check] = {}

    def compile(self, schema: Any) -> _Check:
        if schema is True:
            return lambda _x: True
        if schema is False:
            return lambda _x: False
        if not isinstance(schema, dict):
            raise _Unsupported
        s = cast(dict[str, Any], schema)
        if self._dialect == "draft7" and "$ref" in s:
            # Draft 7 ignores every keyword next to $ref.
            return self._ref(s["$ref"])
        for key in s:
            # jsonschema ignores keywords its dialect does not define ("nullable", "x-..."),
            # so may we; a defined keyword we do not reproduce sends the schema to jsonschema.
            if key not in _FAST_KEYWORDS and key not in _ANNOTATIONS and (key in self._known or key in _ID_KEYWORDS):
                raise _Unsupported
        # ``"type": "object"`` with object keywords is folded into the object check (one call
        # less per validation: tool arguments are always such a schema).
        is_object = s.get("type") == "object"
        objects = self._object(s, is_object)
        checks: list[_Check] = []
        if "type" in s and not (is_object and objects):
            checks.append(self._type(s["type"]))
        if "enum" in s:
            checks.append(self._enum(s["enum"]))
        if "const" in s:
            const = s["const"]
            checks.append(lambda x: _equal(x, const))
        checks.extend(self._numeric(s))
        checks.extend(self._string(s))
        checks.extend(self._array(s))
        checks.extend(objects)
        checks.extend(self._combinators(s))
        if "$ref" in s:
            checks.append(self._ref(s["$ref"]))
        if not checks:
            return lambda _x: True
        if len(checks) == 1:
            return checks[0]
        if len(checks) == 2:
            c0, c1 = checks
            return lambda x: c0(x) and c1(x)
        frozen = tuple(checks)
        return lambda x: all(c(x) for c in frozen)

    def _type(self, t: Any) -> _Check:
        names = [t] if isinstance(t, str) else t
        if not isinstance(names, list) or not names:
            raise _Unsupported
        fns: list[_Check] = []
        for n in cast(list[Any], names):
            if n not in _TYPE_CHECKS:
                raise _Unsupported
            fns.append(_TYPE_CHECKS[n])
        if len(fns) == 1:
            return fns[0]
        tup = tuple(fns)
        return lambda x: any(f(x) for f in tup)

    def _enum(self, values: Any) -> _Check:
        if not isinstance(values, list):
            raise _Unsupported
        vals = cast(list[Any], values)
        if vals and all(isinstance(v, str) for v in vals):
            members = frozenset(cast(list[str], vals))
            return lambda x: isinstance(x, str) and x in members
        return lambda x: any(_equal(x, v) for v in vals)

    def _numeric(self, s: dict[str, Any]) -> list[_Check]:
        out: list[_Check] = []
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if key in s:
                bound: Any = s[key]
                if not _is_number(bound):
                    raise _Unsupported  # draft-4 boolean exclusives and other oddities
                out.append(_bound_check(key, bound))
        return out

    def _string(self, s: dict[str, Any]) -> list[_Check]:
        out: list[_Check] = []
        if "minLength" in s:
            n = self._count(s["minLength"])
            out.append(lambda x: not isinstance(x, str) or len(x) >= n)
        if "maxLength" in s:
            m = self._count(s["maxLength"])
            out.append(lambda x: not isinstance(x, str) or len(x) <= m)
        if "pattern" in s:
            try:
                rx = re.compile(s["pattern"])
            except (re.error, TypeError) as e:
                raise _Unsupported from e
            out.append(lambda x: not isinstance(x, str) or rx.search(x) is not None)
        return out

    def _array(self, s: dict[str, Any]) -> list[_Check]:
        out: list[_Check] = []
        if "items" in s:
            if isinstance(s["items"], list):
                raise _Unsupported  # tuple form (draft 7 / 2019-09)
            item = self.compile(s["items"])
            out.append(lambda x: not isinstance(x, list) or all(item(v) for v in cast(list[Any], x)))
        if "minItems" in s:
            n = self._count(s["minItems"])
            out.append(lambda x: not isinstance(x, list) or len(cast(list[Any], x)) >= n)
        if "maxItems" in s:
            m = self._count(s["maxItems"])
            out.append(lambda x: not isinstance(x, list) or len(cast(list[Any], x)) <= m)
        return out

    def _object(self, s: dict[str, Any], must_be_dict: bool) -> list[_Check]:
        out: list[_Check] = []
        props_raw = s.get("properties", {})
        if not isinstance(props_raw, dict):
            raise _Unsupported
        props = {k: self.compile(v) for k, v in cast(dict[str, Any], props_raw).items()}
        required_raw = s.get("required", [])
        if not isinstance(required_raw, list) or not all(isinstance(r, str) for r in cast(list[Any], required_raw)):
            raise _Unsupported
        required = tuple(cast(list[str], required_raw))
        extra: _Check | None = None
        if "additionalProperties" in s:
            extra = self.compile(s["additionalProperties"])
        if not props and not required and extra is None:
            return out
        items = tuple(props.items())

        def check(x: Any) -> bool:
            if not isinstance(x, dict):
                return not must_be_dict
            d = cast(dict[str, Any], x)
            for r in required:
                if r not in d:
                    return False
            for k, c in items:
                if k in d and not c(d[k]):
                    return False
            if extra is not None:
                for k, v in d.items():
                    if k not in props and not extra(v):
                        return False
            return True

        out.append(check)
        return out

    def _combinators(self, s: dict[str, Any]) -> list[_Check]:
        out: list[_Check] = []
        for key in ("anyOf", "oneOf", "allOf"):
            if key in s:
                subs = s[key]
                if not isinstance(subs, list) or not subs:
                    raise _Unsupported
                fns = tuple(self.compile(x) for x in cast(list[Any], subs))
                if key == "anyOf":
                    out.append(lambda x, fns=fns: any(f(x) for f in fns))
                elif key == "allOf":
                    out.append(lambda x, fns=fns: all(f(x) for f in fns))
                else:
                    out.append(lambda x, fns=fns: sum(1 for f in fns if f(x)) == 1)
        if "not" in s:
            neg = self.compile(s["not"])
            out.append(lambda x: not neg(x))
        return out

    def _ref(self, ref: Any) -> _Check:
        if not isinstance(ref, str) or not ref.startswith("#/"):
            raise _Unsupported
        if ref in self._refs:
            return self._refs[ref]
        target: Any = self._root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                raise _Unsupported
            target = cast(dict[str, Any], target)[part]
        # Placeholder first, so recursive schemas compile; filled in below.
        cell: list[_Check] = []
        self._refs[ref] = lambda x: cell[0](x)
        cell.append(self.compile(target))
        return self._refs[ref]

    @staticmethod
    def _count(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int | float) or (isinstance(v, float) and not v.is_integer()):
            raise _Unsupported
        return int(v)


class CompiledSchema:
    """A JSON Schema checked and compiled once; validate many values against it.

    The dialect comes from ``$schema``: JSON Schema 2020-12 when absent; draft-07 (and
    2019-09, draft-06, draft-04) are accepted when declared.
    """

    __slots__ = ("_fast", "_validator", "dialect", "fast", "schema")

    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        """Check the schema against its metaschema and compile it.

        Args:
            schema: A JSON Schema (an object or a boolean schema).

        Raises:
            jsonschema.exceptions.SchemaError: If the schema itself is invalid.
        """
        raw: Any = dict(schema) if isinstance(schema, Mapping) else schema
        cls: Any = jsonschema.validators.validator_for(raw, default=jsonschema.Draft202012Validator)
        cls.check_schema(raw)
        self.schema: Any = raw
        self._validator: jsonschema.protocols.Validator = cls(raw)
        dialect = _FAST_DIALECTS.get(cls)
        self.dialect: str = dialect or str(getattr(cls, "META_SCHEMA", {}).get("$schema", "unknown"))
        fast: _Check | None = None
        if dialect is not None:
            root = cast(dict[str, Any], raw) if isinstance(raw, dict) else {}
            try:
                fast = _FastCompiler(root, dialect, frozenset(cls.VALIDATORS)).compile(raw)
            except _Unsupported:
                fast = None
        self._fast = fast
        self.fast: bool = fast is not None
        """Whether validity is decided by compiled closures (else by ``jsonschema``)."""

    def is_valid(self, value: Any) -> bool:
        """Whether ``value`` satisfies the schema.

        Args:
            value: A plain-Python JSON value.

        Returns:
            ``True`` when valid. A schema reference that cannot be resolved counts as invalid
            (``problems`` then says why).
        """
        fast = self._fast
        if fast is not None:
            try:
                return fast(value)
            except RecursionError:
                pass  # absurdly deep values: let jsonschema decide
        try:
            return self._validator.is_valid(value)
        except referencing.exceptions.Unresolvable:
            return False

    def problems(self, value: Any) -> list[ValidationProblem]:
        """Every violation, each with the JSON path of the offending value, sorted by path.

        Args:
            value: A plain-Python JSON value.

        Returns:
            The problems (empty when the value is valid).
        """
        out: list[ValidationProblem] = []
        try:
            errors = list(self._validator.iter_errors(value))
        except referencing.exceptions.Unresolvable as e:
            return [ValidationProblem("$", _clip(f"the schema has a reference that cannot be resolved: {e}"))]
        for err in errors:
            out.extend(_problems_of(err))
        out.sort(key=lambda p: p.path)
        return out


def _problems_of(e: jsonschema.exceptions.ValidationError) -> list[ValidationProblem]:
    err: Any = e  # jsonschema's attributes are loosely typed
    path = list(err.absolute_path)
    inst: Any = err.instance
    value: Any = err.validator_value
    if err.validator == "required" and isinstance(inst, dict) and isinstance(value, list):
        present = cast(dict[str, Any], inst)
        missing = [r for r in cast(list[Any], value) if isinstance(r, str) and r not in present]
        if missing:
            return [ValidationProblem(json_path([*path, m]), "required property is missing") for m in missing]
    if err.validator == "additionalProperties" and value is False and isinstance(inst, dict):
        raw_schema: Any = err.schema
        schema = cast(dict[str, Any], raw_schema) if isinstance(raw_schema, dict) else {}
        known = cast(dict[str, Any], schema.get("properties") or {})
        patterns = [re.compile(p) for p in cast(dict[str, Any], schema.get("patternProperties") or {})]
        extras = [k for k in cast(dict[str, Any], inst) if k not in known and not any(p.search(k) for p in patterns)]
        if extras:
            return [ValidationProblem(json_path([*path, k]), "unexpected property (not in the schema)") for k in extras]
    if err.validator in ("anyOf", "oneOf") and err.context:
        # Say which alternatives were tried: the deepest reason of each is the useful part.
        best = _best_match(err.context)
        if best is not None:
            return [ValidationProblem(json_path(path), _clip(f"{err.message} (closest: {best})"))]
    return [ValidationProblem(json_path(path), _clip(err.message))]


def _best_match(errors: Any) -> str | None:
    best: Any = jsonschema.exceptions.best_match(errors)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return None if best is None else str(best.message)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]


class SchemaCache:
    """Compiled schemas keyed by their canonical JSON text, so each distinct schema compiles once.

    Not locked: a race compiles the same schema twice, and both results are equal.
    """

    def __init__(self, max_entries: int = 4096) -> None:
        """Create an empty cache.

        Args:
            max_entries: Entries kept before the cache is cleared (a crude bound against
                unbounded growth when tools change without end).
        """
        self._max = max_entries
        self._entries: dict[str, CompiledSchema] = {}

    def get(self, schema: Mapping[str, Any] | bool) -> CompiledSchema:
        """The compiled form of ``schema``.

        Args:
            schema: A JSON Schema.

        Returns:
            The compiled schema (shared between equal schemas).

        Raises:
            jsonschema.exceptions.SchemaError: If the schema itself is invalid.
        """
        key = json.dumps(schema, sort_keys=True, default=repr)
        hit = self._entries.get(key)
        if hit is None:
            hit = CompiledSchema(schema)
            if len(self._entries) >= self._max:
                self._entries.clear()
            self._entries[key] = hit
        return hit

    def __len__(self) -> int:
        return len(self._entries)


def compile_schema(schema: Mapping[str, Any] | bool) -> CompiledSchema:
    """Check and compile one JSON Schema (see :class:`CompiledSchema`).

    Args:
        schema: A JSON Schema.

    Returns:
        The compiled schema.

    Raises:
        jsonschema.exceptions.SchemaError: If the schema itself is invalid.
    """
    return CompiledSchema(schema)
