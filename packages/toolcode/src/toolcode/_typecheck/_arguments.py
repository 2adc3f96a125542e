"""A tool call's arguments, checked before the run by the run's own check, on what the text settles.

At run time every call's arguments are validated against the tool's input schema (toolrun's
validator), and a failure is ``invalid_arguments``: ``invalid arguments for tool 'ns:x': $.path:
why``. Before the run, the same validator is applied to what the snippet's text settles of each
call (see :mod:`toolcode._typecheck._calls` for the calls found), so a problem found early has the
same code and message as the run would give, and nothing is refused that the run would accept:

- a value written as a literal (``office=42``, ``{"name": "c", "observations": ["x"]}``), a name
  bound once to such a literal before the call and passed along untouched
  (``ents = [...]; memory.create_entities(entities=ents)``), and the known parts of a value
  partly built at run time (``{"name": n, "entityType": "service"}``) are checked;
- a part computed at run time (a variable, a call, an f-string, a comprehension) is unknown: a
  problem at it, inside it or about a value that contains it (``anyOf`` over the whole object,
  say) is not reported, and an object with a ``**spread`` or a computed key may hold any key;
- an argument the tool does not declare is refused even where the schema lets undeclared keys
  through silently (it is a misspelling the tool would ignore), as is a positional argument to a
  module function, which the run refuses;
- keywords, written or spread from a dict (``**{"from_": ...}``), are read under the wire names the
  run gives them (:func:`toolcode._modules.keyword_signature`), and one given under both of its
  names is refused as the run refuses it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, cast

from toolcode._data import is_dict, is_list
from toolcode._errors import as_tool_error, message_of
from toolcode._modules import keyword_signature, positional_message
from toolcode._typecheck._calls import Scan, ToolCall
from toolcode._typecheck._diagnostic import Diagnostic, Positions, near
from toolcode._view import CatalogView
from toolcode.exceptions import ErrorCode
from tooldocs import Signature
from toolindex import Tool, ToolIndexError
from toolrun import CompiledSchema, InputValidationError, ValidationProblem, check_arguments, json_path

__all__ = ["ArgumentChecker"]


UNKNOWN: Final = object()
"""A part of a value the snippet computes at run time."""
_SAFE_CALLS: Final = frozenset({"len", "print", "println", "str", "repr"})
"""Calls that cannot change a list or dict passed to them."""
_SEGMENT = re.compile(r'\.[^.\[]+|\[\d+\]|\["(?:[^"\\]|\\.)*"\]')
_UNEXPECTED: Final = "unexpected property (not in the schema)"
_MAX_PARTS: Final = 10_000
"""Parts of one call's arguments read from the text (a bigger literal's rest is left to the run)."""


def _end(stmt: ast.stmt) -> tuple[int, int]:
    return (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)


class _Constants:
    """Names bound once, by a top-level ``name = <literal>`` (or ``name: T = ...``) before the call, never changed.

    A list or dict qualifies only when every use of the name hands it whole to a tool call (or to
    a call that cannot change it), so that what the tool receives is what the literal says; a dict
    written ``dict(k=v, ...)`` (the builtin) is read as its display. A dict may also be given keys
    by top-level ``name["key"] = value`` and ``name.update(k=v, ...)`` (or ``name.update({...})``)
    lines: a call made at the top level (not in a function, which may run later) gets the keys
    given before it.
    """

    def __init__(self, tree: ast.Module, found: Scan, tool_call_nodes: set[ast.Call]) -> None:
        self._found = found
        self._calls = tool_call_nodes
        self.bound: dict[str, tuple[ast.expr, tuple[int, int]]] = {}
        self._keys: dict[str, list[tuple[ast.expr | None, ast.expr, tuple[int, int]]]] = {}
        """The keys top-level lines give a dict bound here, in order: (key, value, where the line ends)."""
        given: set[int] = set()
        """The nodes whose use of a dict's name is such a line (the subscript, the ``update`` attribute)."""
        for stmt in tree.body:
            if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
                if found.bindings[stmt.target.id] == 1:
                    self.bound[stmt.target.id] = (self._display(stmt.value), _end(stmt))
                continue
            if isinstance(stmt, ast.Expr) and (update := self._update(stmt.value)) is not None:
                attribute, items = update
                given.add(id(attribute))
                self._keys.setdefault(cast("ast.Name", attribute.value).id, []).extend(
                    (k, v, _end(stmt)) for k, v in items
                )
                continue
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                continue
            target = stmt.targets[0]
            if isinstance(target, ast.Name) and found.bindings[target.id] == 1:
                self.bound[target.id] = (self._display(stmt.value), _end(stmt))
            elif (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and isinstance(self.bound.get(target.value.id, (None,))[0], ast.Dict)
                and isinstance(target.slice, ast.Constant)
                and isinstance(target.slice.value, str)
            ):
                given.add(id(target))
                self._keys.setdefault(target.value.id, []).append((target.slice, stmt.value, _end(stmt)))
        mutable = {n for n, (v, _) in self.bound.items() if isinstance(v, ast.Dict | ast.List | ast.Tuple)}
        if mutable:
            for node in ast.walk(tree):
                if isinstance(node, ast.Name) and node.id in mutable and isinstance(node.ctx, ast.Load):
                    if id(self._found.parents.get(node)) not in given and not self._handed_whole(node):
                        mutable.discard(node.id)
                        self.bound.pop(node.id, None)

    def _display(self, value: ast.expr) -> ast.expr:
        """``dict(k=v, ...)`` (the builtin, keywords only) as the display it makes; any other value as it is."""
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "dict"
            and not self._found.bindings["dict"]
            and not value.args
        ):
            keys: list[ast.expr | None] = [
                None if k.arg is None else ast.copy_location(ast.Constant(k.arg), k) for k in value.keywords
            ]
            return ast.copy_location(ast.Dict(keys=keys, values=[k.value for k in value.keywords]), value)
        return value

    def _update(self, value: ast.expr) -> tuple[ast.Attribute, list[tuple[ast.expr | None, ast.expr]]] | None:
        """``name.update(k=v, ...)`` or ``name.update({...})`` of a dict bound here: its attribute and items."""
        if not (
            isinstance(value, ast.Call)
            and isinstance(attribute := value.func, ast.Attribute)
            and attribute.attr == "update"
            and isinstance(attribute.value, ast.Name)
            and isinstance(self.bound.get(attribute.value.id, (None,))[0], ast.Dict)
        ):
            return None
        if not value.args:
            return attribute, [
                (None if k.arg is None else ast.copy_location(ast.Constant(k.arg), k), k.value) for k in value.keywords
            ]
        if len(value.args) == 1 and not value.keywords and isinstance(value.args[0], ast.Dict):
            return attribute, list(zip(value.args[0].keys, value.args[0].values, strict=True))
        return None

    def _handed_whole(self, node: ast.Name) -> bool:
        child: ast.AST = node
        parent = self._found.parents.get(node)
        # Inside a display that is itself an argument (``{"entities": ents}``): the tool gets it whole too.
        while isinstance(parent, ast.Dict | ast.List | ast.Tuple) and not (
            isinstance(parent, ast.Dict) and child in parent.keys
        ):
            child, parent = parent, self._found.parents.get(parent)
        if isinstance(parent, ast.keyword):
            parent = self._found.parents.get(parent)
        if isinstance(parent, ast.FormattedValue):
            return True
        if not isinstance(parent, ast.Call) or node is parent.func:
            return False
        if parent in self._calls:
            return True
        return (
            isinstance(parent.func, ast.Name)
            and parent.func.id in _SAFE_CALLS
            and not self._found.bindings[parent.func.id]
        )

    def get(self, node: ast.Name) -> ast.expr | None:
        hit = self.bound.get(node.id)
        at = (node.lineno, node.col_offset)
        if hit is None or at <= hit[1]:
            return None  # used before (or while) it is bound: an earlier run's value, say
        lines = self._keys.get(node.id)
        if not lines:
            return hit[0]
        scope = self._found.parents.get(node)
        while scope is not None and not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            scope = self._found.parents.get(scope)
        if scope is not None:
            return None  # a function may run after more keys were given
        base = hit[0]
        assert isinstance(base, ast.Dict)
        before = [(k, v) for k, v, end in lines if end < at]
        keys = [*base.keys, *(k for k, _ in before)]
        return ast.copy_location(ast.Dict(keys=keys, values=[*base.values, *(v for _, v in before)]), base)


class _Arguments:
    """A call's arguments as far as the text settles them, with where each part is written."""

    def __init__(self, constants: _Constants) -> None:
        self._constants = constants
        self._depth = 0
        self._budget = _MAX_PARTS
        self.value: dict[str, Any] = {}
        self.unknown: list[str] = []
        """JSON paths of the parts computed at run time."""
        self.open: set[str] = set()
        """JSON paths of objects that may hold keys the text does not show (``**spread``, computed keys)."""
        self.replaceable: set[str] = set()
        """JSON paths of values a ``**spread`` after them may replace (a dict display's, ``run_tool``'s ``args``')."""
        self.where: dict[str, ast.AST] = {}
        """JSON path → the node that writes that part."""
        self.keys: dict[str, ast.AST] = {}
        """JSON path → the node that writes its key (a dict key, a keyword)."""
        self.named: dict[str, str] = {}
        """A keyword's wire name → the name it is written under (``from_`` or ``from``)."""
        self.twice: list[tuple[ast.AST, str]] = []
        """Keywords given under both of their names (``from_`` and ``from``), with the run's message."""

    def put(self, path: tuple[str | int, ...], node: ast.expr) -> Any:
        here = json_path(path)
        self.where.setdefault(here, node)
        self._budget -= 1
        if self._depth > 64 or self._budget < 0:
            return self._unknown(here)  # past what a check should spend on one literal: left to the run
        self._depth += 1
        try:
            return self._value(path, here, node)
        finally:
            self._depth -= 1

    def _unknown(self, here: str) -> object:
        self.unknown.append(here)
        return UNKNOWN

    def _value(self, path: tuple[str | int, ...], here: str, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value  # ``...`` or bytes too: the run refuses them as it refuses them here
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub | ast.UAdd)
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, int | float)
            and not isinstance(node.operand.value, bool)
        ):
            return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
        if isinstance(node, ast.List | ast.Tuple):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return self._unknown(here)
            return [self.put((*path, i), e) for i, e in enumerate(node.elts)]
        if isinstance(node, ast.Dict):
            obj: dict[str, Any] = {}
            self.merge(path, here, obj, zip(node.keys, node.values, strict=True))
            return obj
        if isinstance(node, ast.Name):
            bound = self._constants.get(node)
            if bound is not None:
                return self._value(path, here, bound)
        return self._unknown(here)

    def merge(
        self,
        path: tuple[str | int, ...],
        here: str,
        obj: dict[str, Any],
        items: Iterable[tuple[ast.expr | None, ast.expr]],
        names: Signature | None = None,
    ) -> None:
        """Add ``key: value`` items (``None`` keys are ``**spread``) to the object at ``path``.

        ``names``: the items are keywords, which reach the tool under the wire names this signature
        gives them (a spread dict's keys too: ``**{"from_": ...}``).
        """
        for k, v in items:
            if k is None:
                spread = (self._constants.get(v) or v) if isinstance(v, ast.Name) else v
                if isinstance(spread, ast.Dict):
                    self.merge(path, here, obj, zip(spread.keys, spread.values, strict=True), names)
                else:
                    self.open.add(here)  # keys known only at run time
                    self._replaced(path, obj)
            elif isinstance(k, ast.Constant) and isinstance(k.value, str):
                key = k.value if names is None else self._keyword(names, k.value, k)
                at = json_path((*path, key))
                self.keys[at] = k
                obj[key] = self.put((*path, key), v)
                if names is None:
                    self.replaceable.add(at)
            else:
                self.open.add(here)
                self._replaced(path, obj)

    def _replaced(self, path: tuple[str | int, ...], obj: dict[str, Any]) -> None:
        """A key or ``**spread`` known only at run time may replace the values written before it: unknown now.

        A keyword cannot be replaced (Python refuses a keyword given twice), so only a display's
        values and those of ``run_tool``'s ``args`` are.
        """
        for key in obj:
            at = json_path((*path, key))
            if at in self.replaceable:
                obj[key] = self._unknown(at)

    def _keyword(self, names: Signature, written: str, node: ast.AST) -> str:
        """The wire name of a keyword written ``written``; one given under both its names is the run's error."""
        wire = names.wire_name(written)
        first = self.named.setdefault(wire, written)
        if first != written:
            try:
                names.wire_args({first: None, written: None})
            except ValueError as e:
                self.twice.append((node, message_of(e)))
        return wire


def _as_json(value: object) -> Any:
    """What the validator sees: unknown parts as ``None`` (problems there are not reported)."""
    if value is UNKNOWN:
        return None
    if is_dict(value):
        return {k: _as_json(v) for k, v in value.items()}
    if is_list(value):
        return [_as_json(v) for v in value]
    return value


def _related(path: str, other: str) -> bool:
    """Whether ``path`` is ``other``, inside it or contains it."""
    if path == other:
        return True
    inner, outer = (path, other) if len(path) > len(other) else (other, path)
    return inner.startswith(outer) and inner[len(outer)] in ".["


def _within(path: str, other: str) -> bool:
    """Whether ``path`` is ``other`` or inside it."""
    return path == other or (path.startswith(other) and path[len(other)] in ".[")


def _parent(path: str) -> str:
    segments = _SEGMENT.findall(path[1:])
    return "$" + "".join(segments[:-1])


def _declared(schema: Mapping[str, Any], top: bool = True) -> set[str] | None:
    """The argument names a tool declares (``None``: it takes any, or its schema does not say plainly).

    A name is declared wherever a schema that applies to the arguments object names it: under
    ``properties`` or ``required``, its own or those of a subschema it applies (``allOf``,
    ``anyOf``, ``oneOf``, ``if``/``then``/``else``, ``dependentSchemas``, ``dependencies``), or as a
    key ``dependentRequired`` asks for. A schema without ``properties`` anywhere declares nothing,
    which means "any arguments" (as the signature shows it: ``**kwargs``); ``"properties": {}``
    means "no arguments". Nor does one that admits undeclared names outright
    (``additionalProperties`` or ``unevaluatedProperties`` true or a schema, ``patternProperties``).
    """
    admits = (schema.get(k) for k in ("additionalProperties", "unevaluatedProperties"))
    if any(a is True or is_dict(a) for a in admits) or schema.get("patternProperties") or "$ref" in schema:
        return None
    props = schema.get("properties")
    said = is_dict(props)
    names: set[str] = set(props) if is_dict(props) else set()
    names.update(_listed(schema.get("required")))
    for branch_schema in _applied(schema):
        branch = _declared(branch_schema, top=False)
        if branch is None:
            return None
        said = said or bool(branch)
        names |= branch
    for key in ("dependentRequired", "dependencies"):
        asked: object = schema.get(key)
        if is_dict(asked):
            for listed in cast("dict[str, object]", asked).values():
                names.update(_listed(listed))
    return names if said or not top else None


def _listed(value: object) -> list[str]:
    """The names in a list of property names (``required``, a ``dependentRequired`` entry); none for another value."""
    return [n for n in value if isinstance(n, str)] if is_list(value) else []


def _applied(schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The subschemas ``schema`` applies to the same object (its combinators, conditions and dependencies)."""
    out: list[Mapping[str, Any]] = []
    for key in ("allOf", "anyOf", "oneOf"):
        branches = schema.get(key)
        out += [b for b in branches if is_dict(b)] if is_list(branches) else []
    out += [b for key in ("if", "then", "else") if is_dict(b := schema.get(key))]
    for key in ("dependentSchemas", "dependencies"):
        by_name = schema.get(key)
        out += [b for b in by_name.values() if is_dict(b)] if is_dict(by_name) else []
    return out


def _uses_if(schema: object, depth: int = 0) -> bool:
    # ``if`` chooses what applies from a value: an unknown part could choose differently.
    if depth > 32:
        return True
    if is_dict(schema):
        return "if" in schema or any(_uses_if(v, depth + 1) for v in schema.values())
    return is_list(schema) and any(_uses_if(v, depth + 1) for v in schema)


class ArgumentChecker:
    """Checks the tool calls a snippet's text shows (see the module docstring).

    Args:
        view: The caller's view of the catalog.
        schemas: A tool's compiled input schema (``None``: it cannot be compiled; the run says why).
    """

    def __init__(self, view: CatalogView, schemas: Callable[[Tool], CompiledSchema | None]) -> None:
        self._view = view
        self._schemas = schemas

    def check(
        self, tree: ast.Module, found: Scan, calls: Sequence[tuple[ToolCall, Tool]], positions: Positions
    ) -> list[Diagnostic]:
        """The problems of ``calls`` (each with its tool), in the run's words (``invalid arguments for tool ...``)."""
        constants = _Constants(tree, found, {c.node for c, _ in calls})
        signatures: dict[str, Signature | None] = {}
        out: list[Diagnostic] = []
        for call, tool in calls:
            if tool.id not in signatures:
                signatures[tool.id] = keyword_signature(tool)
            out.extend(self._call(call, tool, signatures[tool.id], constants, positions))
        return out

    def unknown_tool(self, call: ToolCall, positions: Positions) -> Diagnostic | None:
        """The run's ``unknown tool`` failure for a literal id no visible tool has (``None``: it has one)."""
        assert call.tool_id is not None and call.id_node is not None
        try:
            self._view.get(call.tool_id)
        except ToolIndexError as e:
            err = as_tool_error(e, call.tool_id, self._view)
            return positions.at(call.id_node, str(err.message), "unknown-tool", err.code, subject=call.tool_id)
        return None

    def _call(
        self, call: ToolCall, tool: Tool, names: Signature | None, constants: _Constants, positions: Positions
    ) -> list[Diagnostic]:
        if call.positional and not any(isinstance(a, ast.Starred) for a in call.positional):
            assert call.module is not None
            label = f"{call.module.module}.{call.module.name}"
            message = positional_message(label, len(call.positional))
            return [positions.at(call.positional[0], message, "positional", ErrorCode.INVALID_ARGUMENTS)]
        schema = tool.input_schema
        props = schema.get("properties")
        wire: list[str] = list(props) if is_dict(props) else []
        shown = {w: i for i, w in names.wire_names.items()} if names is not None else {}
        value = _Arguments(constants)
        if call.args is not None:
            top = value.put((), call.args)
            if is_dict(top):
                value.value.update(top)
            else:
                value.open.add("$")
                value.unknown = [u for u in value.unknown if u != "$"]
        keys = [None if k.arg is None else ast.copy_location(ast.Constant(k.arg), k) for k in call.keywords]
        value.merge((), "$", value.value, zip(keys, (k.value for k in call.keywords), strict=True), names)
        out = [
            positions.at(node, message, "arguments", ErrorCode.INVALID_ARGUMENTS, fails_at=call.node)
            for node, message in value.twice
        ]
        declared = _declared(schema)
        undeclared = [k for k in value.value if declared is not None and k not in declared]
        problems = [ValidationProblem(json_path([k]), _UNEXPECTED) for k in undeclared]
        problems += self._problems(tool, value, closed=declared is not None)
        for p in problems:
            node = (value.keys.get(p.path) if p.message == _UNEXPECTED else None) or self._node_of(p, value)
            node = node or call.node
            err = as_tool_error(InputValidationError(tool.id, [p]), tool.id, self._view)
            message = str(err.message)
            if p.message == _UNEXPECTED and p.path.startswith("$."):
                message += near(p.path[2:], [shown.get(w, w) for w in wire] if call.module else wire)
            out.append(positions.at(node, message, "arguments", err.code, fails_at=call.node))
        return out

    def _problems(self, tool: Tool, value: _Arguments, *, closed: bool) -> list[ValidationProblem]:
        plain = _as_json(value.value)
        # First what the run checks first: plain, bounded JSON (``...`` is not).
        bad = check_arguments(plain)
        if bad is not None:
            return [] if any(_related(bad.path, u) for u in value.unknown) else [bad]
        if (value.unknown or value.open) and _uses_if(tool.input_schema):
            return []
        compiled = self._schemas(tool)
        if compiled is None:
            return []  # the run reports what is wrong with the schema itself
        problems = compiled.problems(plain)
        out: list[ValidationProblem] = []
        for p in problems:
            if any(_related(p.path, u) for u in value.unknown):
                continue
            if p.message == "required property is missing" and _parent(p.path) in value.open:
                continue
            if any(_within(o, p.path) for o in value.open):
                continue  # about an object some keys of which are known at run time only (``minProperties``)
            if closed and p.message == _UNEXPECTED and _parent(p.path) == "$":
                continue  # already reported, with a suggestion
            out.append(p)
        return out

    @staticmethod
    def _node_of(problem: ValidationProblem, value: _Arguments) -> ast.AST | None:
        path = problem.path
        while True:
            node = value.where.get(path)
            if node is not None or path == "$":
                return node
            path = _parent(path)
