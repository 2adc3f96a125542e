"""JSON Schema validation with ``jsonschema-rs``, compiled once per schema.

A tool's schema comes from whoever serves the tool, so compiling and applying it must never
give that party the host's powers. What :class:`CompiledSchema` guarantees:

- **No I/O, ever.** Every ``$ref`` must point inside its own document (start with ``#``); a
  schema with any other reference is invalid and says which one. The validator is also built
  with retrieval switched off (``offline``), so not even a reference resolved against an
  ``$id`` can reach the network or a file. An unknown ``$schema`` is refused, never fetched.
- **Bounded regex.** ``pattern`` and ``patternProperties`` run on the linear-time engine of
  Rust's ``regex`` crate (no backtracking: ``^(a+)+$`` against a long string answers in
  microseconds), each capped in compiled size. See :data:`_LINEAR` for the patterns it cannot
  run (look-around, back-references).
- **Bounded schemas.** :func:`~toolrun._schema_limits.check_schema_bounds` runs first
  (depth, values, size, properties, references, regexes, ``$ref`` expansion, recursive
  fan-out), and a value a recursive schema would follow deeper than 1,000 levels is invalid
  rather than a stack overflow.
- **Bounded messages.** Problems are clipped: a message never echoes megabytes of a value.

Semantics: the dialect comes from ``$schema`` (2020-12 when absent; 2019-09, draft-07,
draft-06 and draft-04 accepted); ``format`` is an annotation, not checked; booleans are not
numbers and ``1.0`` is an integer (JSON Schema's data model).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

import jsonschema_rs

from toolindex.log import get_logger
from toolrun._schema_limits import DEFAULT_SCHEMA_LIMITS, SchemaLimits, SchemaSummary, check_schema_bounds
from toolrun.exceptions import InvalidSchemaError, ValidationProblem

__all__ = [
    "DEFAULT_VALIDATION_POLICY",
    "CompiledSchema",
    "SchemaCache",
    "compile_schema",
    "json_path",
]

_log = get_logger("toolrun")

DEFAULT_VALIDATION_POLICY: Final = "error"
"""The output validation policy used everywhere unless configured otherwise."""

_MAX_MESSAGE = 300
_MAX_PROBLEMS = 1000
_MAX_VALUE_DEPTH = 1000
_MAX_VALUE_NODES = 2_000_000
_REGEX_SIZE = 256 * 1024

# The linear-time engine (Rust's `regex` crate: finite automata, no backtracking), not
# fancy-regex with a backtrack limit: fancy-regex's limit counts steps per start position, so
# a look-ahead over a 100 kB string still took 12 s in our measurements, while the linear
# engine's cost is at most proportional to pattern size times input length for any pattern.
# The price: look-around and back-references do not exist there. Such a `pattern` is left
# unchecked by this early validation (listed in `CompiledSchema.unchecked_patterns` and
# logged): the tool itself still applies its own schema, and refusing every tool with a
# look-ahead in one field would lose real tools for a check that is only a convenience. In
# `patternProperties` a regex decides which schema applies to which key, so skipping it would
# change what is checked elsewhere: there such a regex makes the schema invalid.
_LINEAR: Final = jsonschema_rs.RegexOptions(size_limit=_REGEX_SIZE, dfa_size_limit=_REGEX_SIZE)
_PROBE_FANCY: Final = jsonschema_rs.FancyRegexOptions(backtrack_limit=10_000, size_limit=_REGEX_SIZE)

_DIALECTS: Final[dict[type[Any], str]] = {
    jsonschema_rs.Draft202012Validator: "2020-12",
    jsonschema_rs.Draft201909Validator: "2019-09",
    jsonschema_rs.Draft7Validator: "draft7",
    jsonschema_rs.Draft6Validator: "draft6",
    jsonschema_rs.Draft4Validator: "draft4",
}
# Errors a value that is not plain JSON (or is absurdly deep) makes the validator raise.
_VALUE_ERRORS = (ValueError, TypeError, OverflowError, RecursionError)


def json_path(parts: Any) -> str:
    """Format a path of keys and indexes as a JSON path.

    Args:
        parts: Iterable of ``str`` keys and ``int`` indexes, outermost first.

    Returns:
        ``$`` for the root, else e.g. ``$.items[2].name`` or ``$['odd key']``. A key longer
        than 100 characters is shortened (``…`` in the middle): paths end up in messages.
    """
    out = ["$"]
    for p in parts:
        if isinstance(p, int):
            out.append(f"[{p}]")
            continue
        key = _clip(str(p), 100)
        if key.isidentifier():
            out.append(f".{key}")
        else:
            out.append(f"[{json.dumps(key, ensure_ascii=False)}]")
    return "".join(out)


def _clip(text: str, limit: int = _MAX_MESSAGE) -> str:
    # Keep both ends: messages start with the offending value and end with the reason.
    if len(text) <= limit:
        return text
    head = limit * 3 // 5
    return f"{text[:head]}…{text[-(limit - head - 1) :]}"


class CompiledSchema:
    """A JSON Schema checked and compiled once; validate many values against it.

    The dialect comes from ``$schema``: JSON Schema 2020-12 when absent; 2019-09, draft-07,
    draft-06 and draft-04 are accepted when declared. See the module docs for what compiling
    guarantees (no I/O, bounded regex, bounded schemas).
    """

    __slots__ = ("_deep_guard", "_validator", "dialect", "schema", "summary", "unchecked_patterns")

    def __init__(self, schema: Mapping[str, Any] | bool, limits: SchemaLimits = DEFAULT_SCHEMA_LIMITS) -> None:
        """Check the schema (bounds, references, metaschema) and compile it.

        Args:
            schema: A JSON Schema (an object or a boolean schema).
            limits: Bounds the schema must stay within.

        Raises:
            SchemaLimitError: If the schema is over a bound (names the bound and where).
            InvalidSchemaError: If the schema is not valid JSON Schema, names an unknown
                dialect, or has a reference outside its own document.
        """
        raw: Any = dict(schema) if isinstance(schema, Mapping) else schema
        if not isinstance(raw, dict | bool):
            raise InvalidSchemaError(f"a schema must be an object or a boolean, got {type(raw).__name__}")
        summary = check_schema_bounds(raw, limits)
        validator, unchecked = _build(raw, summary)
        self.schema: Any = raw
        self.summary: SchemaSummary = summary
        """What the bounds check measured."""
        self.unchecked_patterns: tuple[str, ...] = unchecked
        """JSON pointers of ``pattern`` keywords left unchecked (look-around or back-references)."""
        self.dialect: str = _DIALECTS.get(type(validator), "2020-12")
        """``2020-12``, ``2019-09``, ``draft7``, ``draft6`` or ``draft4``."""
        self._validator = validator
        # Only a recursive schema makes the validator descend as deep as the value goes.
        self._deep_guard = summary.recursive

    def is_valid(self, value: Any) -> bool:
        """Whether ``value`` satisfies the schema.

        Args:
            value: A plain-Python JSON value.

        Returns:
            ``True`` when valid. A value that is not JSON, or that a recursive schema would have
            to follow deeper than 1,000 levels (or through more than 2,000,000 parts), is invalid
            (``problems`` says why).
        """
        if self._deep_guard and _deeper_than(value, _MAX_VALUE_DEPTH):
            return False
        try:
            return self._validator.is_valid(value)
        except _VALUE_ERRORS:
            return False

    def problems(self, value: Any) -> list[ValidationProblem]:
        """Every violation (at most 1,000), each with the JSON path of the offending value, sorted by path.

        Args:
            value: A plain-Python JSON value.

        Returns:
            The problems (empty when the value is valid).
        """
        if self._deep_guard and _deeper_than(value, _MAX_VALUE_DEPTH):
            reason = f"nested deeper than {_MAX_VALUE_DEPTH:,} levels (or over {_MAX_VALUE_NODES:,} parts)"
            return [ValidationProblem("$", reason)]
        out: list[ValidationProblem] = []
        try:
            for n, err in enumerate(self._validator.iter_errors(value)):
                if n >= _MAX_PROBLEMS:
                    break
                out.extend(_problems_of(err, value))
        except _VALUE_ERRORS as e:
            return [ValidationProblem("$", _clip(f"the value cannot be validated: {e}"))]
        out.sort(key=lambda p: p.path)
        return out


def _validator_for(schema: Any) -> jsonschema_rs.Validator:
    # `offline` switches retrieval off altogether (jsonschema-rs refuses a retriever alongside
    # it, and a retriever that refuses would be the weaker guarantee: it is still asked).
    return jsonschema_rs.validator_for(schema, validate_formats=False, pattern_options=_LINEAR, offline=True)


def _build(raw: Any, summary: SchemaSummary) -> tuple[jsonschema_rs.Validator, tuple[str, ...]]:
    try:
        return _validator_for(raw), ()
    except jsonschema_rs.ValidationError as e:
        first = e
    if not summary.patterns:
        raise _schema_error(first)
    # Some regex may be what failed: find out which, and why.
    unsupported: list[tuple[str, ...]] = []
    pointers: list[str] = []
    for pat in summary.patterns:
        verdict = _probe(pat.regex)
        if verdict == "ok":
            continue
        shown = json.dumps(_clip(pat.regex, 80), ensure_ascii=False)
        if verdict == "invalid":
            raise InvalidSchemaError(
                f"{shown} is not a regular expression the validator can run (invalid, or more than "
                f"{_REGEX_SIZE // 1024} KiB once compiled)",
                pat.pointer,
            ) from None
        if pat.is_key:
            raise InvalidSchemaError(
                f"the patternProperties regex {shown} needs look-around or back-references, which the "
                "linear-time regex engine does not run",
                pat.pointer,
            ) from None
        unsupported.append(pat.path)
        pointers.append(pat.pointer)
    if not unsupported:
        raise _schema_error(first)
    stripped = copy.deepcopy(raw)  # depth is bounded by now
    for path in unsupported:
        parent: Any = stripped
        for key in path[:-1]:
            parent = cast(Any, parent[int(key)] if isinstance(parent, list) else parent[key])
        del parent[path[-1]]
    _log.warning("validation.patterns_unchecked", pointers=pointers[:10])
    try:
        return _validator_for(stripped), tuple(pointers)
    except jsonschema_rs.ValidationError as e:
        raise _schema_error(e) from None


def _probe(regex: str) -> str:
    try:
        jsonschema_rs.validator_for({"pattern": regex}, pattern_options=_LINEAR, offline=True)
        return "ok"
    except jsonschema_rs.ValidationError:
        pass
    try:
        jsonschema_rs.validator_for({"pattern": regex}, pattern_options=_PROBE_FANCY, offline=True)
        return "unsupported"
    except jsonschema_rs.ValidationError:
        return "invalid"


def _schema_error(e: jsonschema_rs.ValidationError) -> InvalidSchemaError:
    # For a schema that fails its metaschema, the "instance" is the schema: its path is where.
    pointer = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in e.instance_path)
    return InvalidSchemaError(_clip(e.message, 200), _clip(pointer, 200))


def _deeper_than(value: Any, limit: int) -> bool:
    # Bounded work even for a value whose lists and dicts are shared many times over (a DAG
    # that is exponential as a tree): past _MAX_VALUE_NODES it counts as too deep to follow.
    stack: list[tuple[Any, int]] = [(value, 1)]
    visited = 0
    while stack:
        visited += 1
        if visited > _MAX_VALUE_NODES:
            return True
        v, depth = stack.pop()
        if isinstance(v, dict):
            children: Any = cast(dict[Any, Any], v).values()
        elif isinstance(v, list | tuple):
            children = cast(Sequence[Any], v)
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in cast(Sequence[Any], children))
    return False


def _value_path(value: Any, raw_path: Sequence[str | int]) -> list[str | int]:
    # jsonschema-rs reports the key "0" of an object as the index 0: the value knows which it is.
    out: list[str | int] = []
    cur: Any = value
    for seg in raw_path:
        if isinstance(cur, dict):
            key = str(seg)
            out.append(key)
            cur = cast(dict[str, Any], cur).get(key)
        elif isinstance(cur, list | tuple) and isinstance(seg, int):
            out.append(seg)
            seq = cast(Sequence[Any], cur)
            cur = seq[seg] if 0 <= seg < len(seq) else None
        else:
            out.append(seg)
            cur = None
    return out


_Kind = jsonschema_rs.ValidationErrorKind


def _problems_of(err: jsonschema_rs.ValidationError, value: Any) -> list[ValidationProblem]:
    path = _value_path(value, err.instance_path)
    kind = err.kind
    if isinstance(kind, _Kind.Required):
        return [ValidationProblem(json_path([*path, kind.property]), "required property is missing")]
    if isinstance(kind, _Kind.AdditionalProperties | _Kind.UnevaluatedProperties):
        return [
            ValidationProblem(json_path([*path, k]), "unexpected property (not in the schema)") for k in kind.unexpected
        ]
    if isinstance(kind, _Kind.AnyOf | _Kind.OneOfNotValid) and kind.context:
        # Say which alternative came closest: its first reason is the useful part.
        best = min(kind.context, key=lambda alt: (len(alt), -max((len(e.instance_path) for e in alt), default=0)))
        if best:
            closest = _clip(best[0].message, _MAX_MESSAGE // 2)
            return [ValidationProblem(json_path(path), f"{_clip(err.message, _MAX_MESSAGE // 2)} (closest: {closest})")]
    return [ValidationProblem(json_path(path), _clip(err.message))]


class SchemaCache:
    """Compiled schemas keyed by their canonical JSON text, so each distinct schema compiles once.

    Not locked: a race compiles the same schema twice, and both results are equal.
    """

    def __init__(self, max_entries: int = 4096, limits: SchemaLimits = DEFAULT_SCHEMA_LIMITS) -> None:
        """Create an empty cache.

        Args:
            max_entries: Entries kept before the cache is cleared (a crude bound against
                unbounded growth when tools change without end).
            limits: Bounds every schema compiled here must stay within.
        """
        self._max = max_entries
        self._limits = limits
        self._entries: dict[str, CompiledSchema] = {}

    def get(self, schema: Mapping[str, Any] | bool) -> CompiledSchema:
        """The compiled form of ``schema``.

        Args:
            schema: A JSON Schema.

        Returns:
            The compiled schema (shared between equal schemas).

        Raises:
            InvalidSchemaError: If the schema is invalid or over a bound (``SchemaLimitError``).
        """
        raw: Any = dict(schema) if isinstance(schema, Mapping) else schema
        # Bounds before the key: a schema megabytes large or thousands of levels deep is refused
        # here, before json.dumps spends time on it (or overflows on its depth).
        check_schema_bounds(raw, self._limits)
        key = json.dumps(raw, sort_keys=True)
        hit = self._entries.get(key)
        if hit is None:
            hit = CompiledSchema(schema, self._limits)
            if len(self._entries) >= self._max:
                self._entries.clear()
            self._entries[key] = hit
        return hit

    def __len__(self) -> int:
        return len(self._entries)


def compile_schema(schema: Mapping[str, Any] | bool, limits: SchemaLimits = DEFAULT_SCHEMA_LIMITS) -> CompiledSchema:
    """Check and compile one JSON Schema (see :class:`CompiledSchema`).

    Args:
        schema: A JSON Schema.
        limits: Bounds the schema must stay within.

    Returns:
        The compiled schema.

    Raises:
        InvalidSchemaError: If the schema is invalid, refers outside itself, or is over a bound
            (``SchemaLimitError``).
    """
    return CompiledSchema(schema, limits)
