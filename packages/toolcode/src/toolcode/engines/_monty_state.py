"""A Monty session's stored state, and how the engine rebuilds it so that it stays the size of what it holds.

pydantic-monty's REPL dump keeps, for its tracebacks, the source and an interned file name of every
snippet ever fed to the session: about 60 bytes per run even when the run only changes two ints.
So the engine stores a small head beside the dump (:class:`SessionHead`), and once the history
outweighs the state (:meth:`SessionHead.due`) it rebuilds the session in a fresh worker from its
namespace: the plain data it holds crosses to the host and back (one conversion each way, so
aliasing is kept), and each function and import is re-created by replaying the top-level
statement that last bound its name (recorded per run by :meth:`SessionHead.note_run`).

A rebuild is only done when it is exact. A session that holds anything else — a class or its
instances, an iterator, a cyclic structure, a function bound any other way (a decorator, a
non-literal default, an alias, a ``global`` statement, a snippet that failed) — keeps its full
dump, and tries again only once its history has doubled.

Stored format: ``TCM1`` + 4-byte big-endian length + JSON head + the Monty dump. A bare Monty dump
(``MONTY...``, written before the head existed) still loads.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Final, TypeGuard

from toolcode._data import is_dict, is_list
from toolcode._globals import TOOL_ERROR_INFO_SOURCE
from toolcode._names import bound_names

__all__ = [
    "EXPORT",
    "FETCH_OUT",
    "NOT_DATA_OF_SUSPECT",
    "RESET_OUT",
    "SessionHead",
    "decode",
    "encode",
    "engine_name",
    "plain_data",
    "suspect",
]

_MAGIC: Final = b"TCM1"
FLOOR: Final = 4096
"""History (bytes) a session gathers before a rebuild is worth its cost (a checkout and three feeds,
about as much as one run): about 70 one-line runs."""

ERROR_INFO: Final = "tool_error_info"
_PRELUDE: Final = "ToolError = RuntimeError\nprintln = print\n__toolcode_no_out = []\n__out = __toolcode_no_out\n"
"""A session's own definitions: ``__out`` starts each run bound to a marker (Monty has no ``del``)."""
PRELUDE_NAMES: Final = frozenset({"ToolError", "println", ERROR_INFO})
_RECIPE_WORDS: Final = ("def", "lambda", "import", "global", *PRELUDE_NAMES)
"""What a snippet spells out when it may create a recipe or re-bind a helper (a cheap test before parsing)."""
_NOT_DATA: Final = """\
def __toolcode_not_data(v):
    try:
        return __toolcode_first_not_data(v, "$")
    except Exception:  # a cycle, a value too deep: the host's own check tells
        return None


def __toolcode_first_not_data(v, path):
    t = type(v)
    if t is str or t is int or t is float or t is bool or v is None:
        return None
    if t is list or t is tuple:
        i = 0
        for x in v:
            bad = __toolcode_first_not_data(x, f"{path}[{i}]")
            if bad is not None:
                return bad
            i += 1
        return None
    if t is dict:
        for k, x in v.items():
            if type(k) is not str:
                return f"{path} has a {type(k).__name__} key {str(k)[:40]!r} (keys must be strings)"
            bad = __toolcode_first_not_data(x, f"{path}.{k[:40]}")
            if bad is not None:
                return bad
        return None
    return f"{path} is a {t.__name__}"
"""
"""Defines ``__toolcode_not_data(value)``: ``None``, or where the value holds what is not data and what it is.

A function, a module, a class, a range or an iterator leaves the sandbox as its repr string, so
only the sandbox can tell it from data. The walk goes in the order the host's own check walks,
with its paths and wording; it is fed only for a suspect (:func:`suspect`)."""
NOT_DATA_OF_SUSPECT: Final = _NOT_DATA + "(__toolcode_not_data(__toolcode_suspect), (__toolcode_suspect := None))[0]"
"""Where the suspect is not data (``None``: nothing), the suspect let go."""


def suspect(value: str) -> str:
    """Statements binding ``__toolcode_suspect`` to ``value`` if ``json.dumps`` refuses a type in it, else ``None``.

    The fast test, in the fetch's own feed; :data:`NOT_DATA_OF_SUSPECT` says where, in a feed of its own.
    """
    return (
        "try:\n    import json as __toolcode_json\n"
        f"    __toolcode_json.dumps({value})\n    __toolcode_suspect = None\n"
        f"except TypeError:\n    __toolcode_suspect = {value}\n"
        "except Exception:\n    __toolcode_suspect = None\n"
    )


FETCH_OUT: Final = suspect("__out") + (
    "(__out is not __toolcode_no_out, __out, __toolcode_suspect is not None, (__out := __toolcode_no_out))"
)
"""Whether the run set ``__out``, its value, whether it is a suspect (:func:`suspect`), and ``__out``
reset — without a global that would keep the value."""
RESET_OUT: Final = "__out = __toolcode_no_out"
_ENGINE_NAMES: Final = frozenset({"__out", "input", "_ToolcodeNoOut"})
"""Names the engine binds itself (``input`` each run; ``_ToolcodeNoOut`` in sessions stored before the head)."""
_ENGINE_PREFIX: Final = "__toolcode_"

_HOST_PLAIN: Final = (type(None), bool, int, float, complex, str, bytes, Decimal, datetime, date, timedelta)
"""The values that cross from the sandbox to the host and back unchanged (the same type names on both sides)."""
_HOST_CONTAINERS: Final = (list, tuple, set, frozenset, dict)
EXPORT: Final = f"""\
def __toolcode_export(g, skip, functions, limit):
    kinds = {{{", ".join(repr(t.__name__) for t in _HOST_PLAIN)}}}
    data = {{}}
    bad = []
    seen = set()
    for name in g:
        if name in skip or name.startswith({_ENGINE_PREFIX!r}):
            continue
        value = g[name]
        if name in functions:
            if not repr(value).startswith(functions[name]):
                bad.append(name)
            continue
        path = set()
        stack = [(value, 0, False)]
        ok = True
        while stack and ok:
            x, depth, leaving = stack.pop()
            if leaving:
                path.discard(id(x))
                continue
            kind = type(x).__name__
            if kind in ('list', 'tuple', 'set', 'frozenset', 'dict'):
                key = id(x)
                if key in path or depth >= limit:
                    ok = False
                elif key not in seen:
                    seen.add(key)
                    path.add(key)
                    stack.append((x, depth, True))
                    for y in x:
                        stack.append((y, depth + 1, False))
                        if kind == 'dict':
                            stack.append((x[y], depth + 1, False))
            elif kind not in kinds:
                ok = False
        if ok:
            data[name] = value
        else:
            bad.append(name)
    return (data, bad, list(g))
__toolcode_export(locals(), __toolcode_skip, __toolcode_functions, __toolcode_limit)
"""
"""Sandbox source: the session's plain data by name, the names that are neither plain data nor
re-creatable, and every global name (the rebuild must end with the same names)."""


def engine_name(name: str) -> bool:
    """Whether a global is the engine's own (re-bound by the engine, never carried over)."""
    return name in _ENGINE_NAMES or name.startswith(_ENGINE_PREFIX)


def plain_data(value: object) -> bool:
    """Whether what left the sandbox is plain data that goes back in unchanged (no proxies of sandbox objects)."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        x = stack.pop()
        if type(x) in _HOST_PLAIN:
            continue
        if not _container(x):
            return False
        if id(x) not in seen:
            seen.add(id(x))
            stack.extend([*x.keys(), *x.values()] if is_dict(x) else x)
    return True


def _container(value: object) -> TypeGuard[Collection[Any]]:
    return type(value) in _HOST_CONTAINERS


def _strings(value: object) -> list[str]:
    return [x for x in value if isinstance(x, str)] if is_list(value) else []


@dataclass(slots=True)
class SessionHead:
    """What the engine keeps beside a session's dump."""

    base: int = 0
    """Size of the dump after the session's last rebuild (or its first run): the state without history."""
    helpers: list[str] = field(default_factory=list[str])
    """Sandbox helpers defined in the session (``tool_error_info`` is defined on first mention)."""
    recipes: dict[str, str | None] = field(default_factory=dict[str, str | None])
    """Global name -> the top-level statement that re-creates it (a ``def``, a ``name = lambda``, an
    import); ``None``: a helper name the snippet re-bound. Other names are carried as values."""
    declared_global: list[str] = field(default_factory=list[str])
    """Names a function declares ``global``: a call may re-bind them, so they are only carried as values."""

    @classmethod
    def from_json(cls, data: object) -> SessionHead:
        """A head from its JSON form (what is malformed in it is left out: it rebuilds nothing)."""
        d = data if is_dict(data) else {}
        base, recipes = d.get("base"), d.get("recipes")
        recipes = recipes if is_dict(recipes) else {}
        return cls(
            base if isinstance(base, int) else 0,
            _strings(d.get("helpers")),
            {str(k): v if isinstance(v, str) else None for k, v in recipes.items()},
            _strings(d.get("global")),
        )

    def to_json(self) -> dict[str, Any]:
        """The head as JSON data."""
        return {"base": self.base, "helpers": self.helpers, "recipes": self.recipes, "global": self.declared_global}

    def prelude(self, code: str, *, new: bool) -> str:
        """What to feed before ``code``: the session's definitions when it is new, a helper it mentions first."""
        parts = [_PRELUDE] if new else []
        if ERROR_INFO in code and ERROR_INFO not in self.helpers:
            self.helpers.append(ERROR_INFO)
            parts.append(TOOL_ERROR_INFO_SOURCE)
        return "".join(parts)

    def note_run(self, code: str, *, completed: bool) -> None:
        """Record how the names ``code`` bound can be re-created.

        A completed snippet's top-level ``def`` (no decorator, literal defaults), ``name = lambda``
        and imports become recipes; any other binding makes the name a value. A snippet that
        raised may have stopped before any of its statements, so its names all become values.
        """
        if not any(word in code for word in (*_RECIPE_WORDS, *self.recipes)):
            return  # binds no recipe name (no code binds a name it does not spell out) and makes none
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return  # it never ran
        declared = set(self.declared_global)
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                declared.update(node.names)
        for name in declared.difference(self.declared_global):
            self.declared_global.append(name)
            self.recipes.pop(name, None)
        for stmt in tree.body:
            recipe = _recipe(code, stmt) if completed else None
            direct = _direct_names(stmt) if recipe is not None else ()
            # Over-approximated (a function's local names count too): that only turns a recipe into a value.
            for name in bound_names(ast.walk(stmt)):
                self.recipes.pop(name, None)  # re-inserted last: replays follow definition order
                if engine_name(name) or name in declared:
                    continue
                if name in direct:
                    self.recipes[name] = recipe
                elif name in PRELUDE_NAMES:
                    self.recipes[name] = None

    def due(self, size: int) -> bool:
        """Whether a dump of ``size`` bytes carries enough history to rebuild (at least the state, and ``FLOOR``)."""
        return size - self.base >= max(self.base, FLOOR)

    def export_inputs(self, max_depth: int) -> dict[str, Any]:
        """The inputs of :data:`EXPORT`: names not to carry as values, the functions to check, the depth limit."""
        skip = [*_ENGINE_NAMES, *(n for n in PRELUDE_NAMES if n not in self.recipes)]
        functions: dict[str, str] = {}
        for name, recipe in self.recipes.items():
            if recipe is None:
                continue
            skip.append(name)
            if recipe.startswith(("def ", "async def ")):
                functions[name] = f"<function '{name}'"
            elif not recipe.startswith(("import ", "from ")):
                functions[name] = "<function '<lambda>'"
        return {
            "__toolcode_skip": skip,
            "__toolcode_functions": functions,
            "__toolcode_limit": max(1, max_depth - 4),
        }

    def rebuild_source(self) -> tuple[str, str]:
        """The two feeds that re-create the session: its definitions, then the replayed statements.

        The values are bound as inputs of the second, which answers with the global names.
        """
        helpers = TOOL_ERROR_INFO_SOURCE if ERROR_INFO in self.helpers else ""
        replay: list[str] = []
        for recipe in self.recipes.values():
            if recipe is not None and recipe not in replay:
                replay.append(recipe)
        return _PRELUDE + helpers, "\n".join([*replay, "list(locals())"])


_LITERAL_OPS = (ast.UAdd, ast.USub)


def _literal(node: ast.expr | None) -> bool:
    if node is None or isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, _LITERAL_OPS):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, ast.Tuple):
        return all(_literal(e) for e in node.elts)
    return False


def _literal_defaults(args: ast.arguments) -> bool:
    return all(_literal(d) for d in args.defaults) and all(_literal(d) for d in args.kw_defaults)


def _recipe(code: str, stmt: ast.stmt) -> str | None:
    """The source that re-creates what ``stmt`` binds, when replaying it gives the same thing."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        ok = not stmt.decorator_list and _literal_defaults(stmt.args)
    elif isinstance(stmt, ast.Assign):
        value = stmt.value
        ok = (
            len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(value, ast.Lambda)
            and _literal_defaults(value.args)
        )
    elif isinstance(stmt, ast.Import):
        ok = True
    elif isinstance(stmt, ast.ImportFrom):
        ok = stmt.level == 0 and all(a.name != "*" for a in stmt.names)
    else:
        ok = False
    return ast.get_source_segment(code, stmt) if ok else None


def _direct_names(stmt: ast.stmt) -> tuple[str, ...]:
    """The names a recipe statement binds itself (not the locals of a function it defines)."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        return (stmt.name,)
    if isinstance(stmt, ast.Assign):
        return tuple(t.id for t in stmt.targets if isinstance(t, ast.Name))
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return tuple(a.asname or a.name.split(".")[0] for a in stmt.names)
    return ()


def encode(head: SessionHead, dump: bytes) -> bytes:
    """The stored state: the head, then the Monty dump."""
    text = json.dumps(head.to_json(), separators=(",", ":")).encode()
    return _MAGIC + len(text).to_bytes(4, "big") + text + dump


def decode(blob: bytes | None) -> tuple[SessionHead, bytes | None]:
    """The head and the Monty dump of a stored state (``None``: a new session).

    A bare dump written before the head existed has every helper and no recipes (its functions
    are not re-created, so it is rebuilt only if it holds plain data alone).
    """
    if blob is None:
        return SessionHead(), None
    if blob.startswith(_MAGIC) and len(blob) >= 8:
        n = int.from_bytes(blob[4:8], "big")
        try:
            head = SessionHead.from_json(json.loads(blob[8 : 8 + n]))
        except ValueError:
            head = SessionHead()
        return head, blob[8 + n :]
    return SessionHead(helpers=[ERROR_INFO]), blob
