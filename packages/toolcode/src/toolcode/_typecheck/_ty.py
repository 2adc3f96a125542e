"""``ty``'s part of the check: what a snippet does with the tools' typed results, kept only when certain to fail.

**What ty reads.** Python does not check types at run time, and ``ty``'s inference of what a
snippet builds itself is narrower than what the run accepts: ``[{"name": "c", "observations":
["x"]}]`` is a ``list[dict[str, str | list[str]]]`` to it, a list built with ``append`` takes the
union of everything appended, a dict display keeps the type of its first values. Such types say
nothing certain about the values at run time. So every list, dict and set the snippet builds (a
display, a comprehension, a ``list()``/``dict()``/``set()`` call) is handed to ``ty`` as ``Any``
(wrapped in a call of :data:`ANY_FUNCTION`), and so are the annotations the snippet writes, which
Python does not enforce. What keeps its type: the tools' results (declared by their output
schemas), scalars and tuples, and whatever flows from them. A ``run_tool("ns:x", ...)`` call with
a literal id is handed over as ``toolcode_result(<the module function>, run_tool(...))``, so its
result is typed exactly as ``ns.x(...)``'s is.

**What is kept.** ``ty`` reports what it cannot prove correct; a finding is kept when its rule
says the operation fails for the type named (a key a ``TypedDict`` result does not have, an
attribute or operator a type lacks) and every type it names is one value's type: a union (``str |
None``, ``Literal["a", 1]``) fails only for some of its members, so a finding about one is left to
the run. What it says about the tools themselves is the argument check's, in the run's own words.

**Where it runs.** In a warm pydantic-monty session kept per set of modules and catalog version:
the snippet is wrapped in a function that is only defined, never called, so nothing executes.
"""

from __future__ import annotations

import ast
import bisect
import re
import textwrap
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar, TypeVarTuple

import anyio
import anyio.to_thread
import pydantic_monty as pm

from toolcode._globals import globals_stub
from toolcode._modules import PACKAGE, ToolModules
from toolcode._typecheck._calls import Scan
from toolcode._typecheck._diagnostic import Diagnostic, Positions
from toolcode.engines._monty_pool import sandbox_module, start_pool
from toolcode.exceptions import EngineError, ErrorCode
from toolindex.log import get_logger

__all__ = [
    "GLOBALS_STUB",
    "LARGE_CHARS",
    "MAX_CHARS",
    "Declared",
    "Runs",
    "Ty",
    "checked_source",
    "may_fail",
    "run_here",
    "runs_for",
]

_log = get_logger("toolcode.typecheck")

GLOBALS_STUB: Final = globals_stub()
"""What the type checker knows of the snippet globals (built from :data:`~toolcode.SNIPPET_GLOBALS`)."""
ANY_FUNCTION: Final = "toolcode_dynamic"
ANY_TYPE: Final = "ToolcodeDynamic"
RESULT_FUNCTION: Final = "toolcode_result"
MODULE_ALIAS: Final = "toolcode_module_"
"""The warm session binds each module it holds under this prefix too (a snippet may rebind ``tools``)."""
_HELPERS: Final = (
    f"\nfrom typing import Callable, TypeVar\n_ToolcodeR = TypeVar('_ToolcodeR')\n{ANY_TYPE} = Any\n"
    f"def {ANY_FUNCTION}(value: object, /) -> Any: ...\n"
    f"def {RESULT_FUNCTION}(function: Callable[..., _ToolcodeR], value: object, /) -> _ToolcodeR: ...\n"
)
_BUILT = (ast.Dict, ast.List, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp)
_CONSTRUCTORS = frozenset({"dict", "list", "set"})
_WRAP = "async def __toolcode_check__():\n"
_CHECKS_PER_SESSION = 400
MAX_CHARS = 20_000
"""Longer snippets (about 500 lines) are not checked before they run: they run unchecked, their
calls checked as they are made. The check's cost grows with the snippet, and one caller's must not
cost everyone else (``bench/bystander.py``, ``typecheck_flood``)."""
LARGE_CHARS = 4_000
"""Snippets longer than this (about a hundred lines) are checked apart: checking one can take
seconds, and a caller sending them must not hold up everyone else (see :class:`TypeChecker`)."""

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")


Declared = Callable[[ast.expr], "str | None"]
"""The declared result type of an expression that is a tool call, or a name bound once to one."""


class Runs(Protocol):
    """Runs a function that takes the host's CPU: in place, or in a worker thread."""

    def __call__(self, func: Callable[[*_Ts], _T], /, *args: *_Ts) -> Awaitable[_T]: ...


async def run_here(func: Callable[[*_Ts], _T], /, *args: *_Ts) -> _T:
    """Run ``func`` in place (a short snippet's check takes about a millisecond)."""
    return func(*args)


def runs_for(code: str) -> Runs:
    """Where work on ``code`` that takes the host's CPU (parsing, walking it) runs.

    In place for a short snippet, in a worker thread for a long one, so the event loop goes on
    serving others.
    """
    return run_here if len(code) <= LARGE_CHARS else anyio.to_thread.run_sync


_LINE: Final = re.compile(r"^[^:\n]*:(\d+):(\d+): error\[([\w-]+)\] (.*)$")
_TYPE: Final = re.compile(r"`([^`]*)`")
_RULES: Final = {
    "invalid-key": "KeyError",  # t["titel"] on a TypedDict result (see _KEY)
    "unresolved-attribute": "AttributeError",  # "x".uper(), a module member that does not exist
    "unsupported-operator": "TypeError",  # "a" + 1
    "not-iterable": "TypeError",  # for x in 3
    "call-non-callable": "TypeError",  # a result called
    "invalid-await": "TypeError",  # await of a plain (not awaitable) value
}
"""The rules whose findings fail at run time whenever the types they name are the values' types,
and the exception the snippet meets there. Not here: ``not-subscriptable`` and the
``__getitem__`` form of ``invalid-argument-type``, which ``ty`` reports for one member of a union
without naming the union (``x = None`` then ``x = item`` in a loop: "cannot subscript ``None``");
calls (``invalid-argument-type``, ``no-matching-overload``), whose expected types are often
narrower than what the call accepts at run time; assignments, which Python does not check."""
_INERT: Final = (
    *(ast.Module, ast.Expr, ast.Name, ast.Constant, ast.Load, ast.Store, ast.keyword, ast.Pass),
    *(ast.Import, ast.ImportFrom, ast.alias, ast.JoinedStr, ast.FormattedValue, *_BUILT[:3], ast.Tuple),
)
"""Nodes at which none of :data:`_RULES` can fail: a name, a constant, a display, an import, an f-string."""


def may_fail(tree: ast.Module, found: Scan) -> bool:
    """Whether ``ty`` could find anything in the snippet (``ty``'s cost is spared one that only calls and returns).

    It could wherever there is a node other than those of :data:`_INERT`, a plain assignment to a
    name, or a call of a global or of a tool.
    """
    calls = {c.node for c in found.calls}
    functions = [c.node.func for c in found.calls if c.module is not None]
    tool_functions = {*functions, *(f.value for f in functions if isinstance(f, ast.Attribute))}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            if all(isinstance(t, ast.Name) for t in node.targets):
                continue
            return True
        if isinstance(node, ast.Call):
            func = node.func
            if node in calls or (isinstance(func, ast.Name) and not found.bindings[func.id]):
                continue
            return True
        if node not in tool_functions and not isinstance(node, _INERT):
            return True
    return False


_NOT_SIZED_OR_ITERABLE: Final = re.compile(
    r"^Argument to function `\w+` is incorrect: Expected `(Sized|Iterable\[[^`]*\])`, "
    r"found `(int|float|bool|None|Literal\[(-?\d+|True|False)\])`$"
)
"""An argument that must have a length or be iterable (``len(n)``, ``sorted(n)``), given one scalar
type that has neither: Python checks exactly these protocols at run time, so the call fails."""
_KEY: Final = re.compile(r'^Unknown key "|got key of type `Literal\[-?\d+\]`')
"""The ``invalid-key`` findings about a key written as a literal (a ``str`` variable may hold a valid key)."""


@dataclass(slots=True)
class _Warm:
    """The warm session: type checking on, the snippet only ever defined, never run."""

    session: pm.AsyncMontySession
    version: int
    modules: dict[str, str]
    """Module name → namespace, for every module it can check."""
    checks: int = 0


@dataclass(slots=True)
class _Lane:
    """Checks of one size class, serialised on their own warm session."""

    lock: anyio.Lock
    warm: _Warm | None = None


class Ty:
    """``ty``'s certain findings on snippets, from warm sessions (see the module docstring).

    The session holds the modules snippets have imported so far (up to ``max_modules``), and is
    replaced by one holding one more module when a snippet imports a new one, or by a fresh one
    when the catalog changes. Checks are serialised on it (a warm check takes about a millisecond),
    long snippets on a second session of their own, so they hold up only each other;
    one that fails (no worker, a timeout) finds nothing: it is logged and the run goes on unchecked.
    """

    def __init__(self, modules: ToolModules, max_modules: int, timeout: float) -> None:
        self._modules = modules
        self._max_modules = max_modules
        self._timeout = timeout
        self._pool: pm.AsyncMonty | None = None
        self._small = _Lane(anyio.Lock())
        self._large = _Lane(anyio.Lock())
        self._start = anyio.Lock()

    async def findings(
        self,
        code: str,
        tree: ast.Module,
        bindings: Mapping[str, int],
        visible: Mapping[str, str],
        positions: Positions,
        run: Runs = run_here,
        typed: Mapping[ast.Call, str] | None = None,
        declared: Declared | None = None,
    ) -> list[Diagnostic] | None:
        """What the snippet does wrong with the typed results of the ``visible`` modules (name → namespace).

        ``run`` runs the parts that take the host's CPU (here, or in a worker thread for a long snippet);
        ``typed`` gives the ``run_tool`` calls with a literal id their module function (``<module>.<name>``).
        ``declared`` gives the declared result type of an expression that is a tool call (or a name
        bound once to one). ``None``: ``ty`` could not answer (no worker, a timeout); the run goes
        on unchecked by it.
        """
        source, wrapped = await run(_prepared, code, tree, bindings, typed)
        if wrapped is None:
            return []  # the engine reports what is wrong with it
        lane = self._small if run is run_here else self._large
        try:
            with anyio.fail_after(self._timeout):
                async with lane.lock:
                    try:
                        rendered = await self._check(await self._session_for(lane, visible), wrapped)
                    except BaseException:
                        # A check cut short (the run's timeout, a failure) leaves the session in
                        # an unknown state: it is not reused.
                        with anyio.CancelScope(shield=True):
                            await self._drop(lane)
                        raise
        except (TimeoutError, pm.MontyError, OSError, EngineError, RuntimeError) as e:
            # RuntimeError: pydantic-monty's answer for a session its worker already ended.
            _log.warning("typecheck.unavailable", error=repr(e)[:300])
            return None
        return await run(_kept, rendered, source, tree, positions, declared)

    async def _check(self, warm: _Warm, wrapped: str) -> str:
        """``ty``'s diagnostics for a wrapped snippet (concise format), or ``""``."""
        warm.checks += 1
        try:
            await warm.session.feed_run(wrapped)
        except pm.MontyTypingError as e:
            return e.display()
        except pm.MontyError:
            # The wrapped snippet does not parse or define (a ``from __future__`` line, say): the
            # engine reports what is wrong with it when it runs. The session may have ended with it
            # (a limit): it is not reused.
            warm.checks = _CHECKS_PER_SESSION
        return ""

    async def _session_for(self, lane: _Lane, visible: Mapping[str, str]) -> _Warm:
        """The lane's warm session, replaced when it lacks a module, the catalog moved or it is worn."""
        version = self._modules.version
        needed = dict(visible)
        old = lane.warm
        if old is not None and old.version == version and old.checks < _CHECKS_PER_SESSION:
            if needed.keys() <= old.modules.keys():
                return old
            if len(old.modules) + len(needed) <= self._max_modules:
                needed = {**old.modules, **needed}
        await self._drop(lane)
        async with self._start:
            if self._pool is None:
                self._pool = await start_pool(None, min_processes=1, max_processes=2)  # a worker per lane
            pool = self._pool
        package: dict[str, Any] = {}
        keys: dict[str, str] = {}
        for name, ns in needed.items():
            module = self._modules.module(ns)
            if module is not None:
                # A name the sandbox keeps (``time``) is a module under another key, named in the package stub.
                key = name
                while sandbox_module(key) or (key != name and key in needed and needed[key] != ns):
                    key += "_"
                keys[name] = key
                package[key] = pm.ExternalModule(dict.fromkeys(module.functions, _placeholder), stubs=module.stub)
        stub = "".join(f"import {PACKAGE}.{k}\n{n} = {PACKAGE}.{k}\n" for n, k in keys.items() if n != k)
        checkout = pool.checkout(
            # The session only ever defines a function; limits in case a snippet finds a way out of it.
            limits={"max_feed_duration_secs": self._timeout, "max_memory": 64 * 1024 * 1024, "max_suspensions": 10_000},
            type_check=True,
            type_check_stubs=GLOBALS_STUB + _HELPERS,
            type_check_format="concise",
            external_modules={PACKAGE: pm.ExternalModule(package, stubs=stub)},
        )
        warm = lane.warm = _Warm(await checkout.__aenter__(), version, needed)
        if keys:
            # Resolves the modules once, so the wrapped snippets can import them (and name them, for run_tool).
            await checkout.feed_run("\n".join(f"import {PACKAGE}.{k} as {MODULE_ALIAS}{n}" for n, k in keys.items()))
        return warm

    @staticmethod
    async def _drop(lane: _Lane) -> None:
        warm, lane.warm = lane.warm, None
        if warm is not None:
            try:
                await warm.session.__aexit__(None, None, None)
            except pm.MontyError as e:
                _log.debug("typecheck.session_close_failed", error=repr(e)[:300])

    async def aclose(self) -> None:
        """Close the warm session and the worker pool; idempotent (a later check starts them again)."""
        async with self._small.lock, self._large.lock:
            await self._drop(self._small)
            await self._drop(self._large)
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.__aexit__(None, None, None)


def _placeholder(**_kwargs: Any) -> None:
    """Stands for a tool in the checker's modules (the checker never runs code)."""


def _wrapped(code: str) -> str | None:
    """The snippet as the body of a function that is defined, never called; ``None`` if it cannot be.

    The result is parsed to make sure every statement is the function's (a form feed, say, resets
    Python's indentation count), so that nothing of the snippet runs in the checker.
    """
    if len(code) > MAX_CHARS:
        return None
    wrapped = f"{_WRAP}{textwrap.indent(code, '    ')}\n    pass\n"
    try:
        tree = ast.parse(wrapped, "snippet.py", "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.AsyncFunctionDef):
        return None
    fn = tree.body[0]
    if fn.decorator_list or fn.args.defaults or fn.args.kw_defaults or fn.returns is not None:
        return None
    return wrapped


@dataclass(frozen=True, slots=True)
class CheckedSource:
    """The rewritten text and the way back to the snippet's positions."""

    text: str
    _edits: tuple[tuple[int, int, int], ...]
    """``(start, end, length)``: the snippet's characters ``start:end`` became ``length`` characters, in order."""
    _line_starts: tuple[int, ...]
    _new_line_starts: tuple[int, ...]

    def original(self, line: int, column: int) -> tuple[int, int]:
        """The snippet's ``(line, column)`` (1-based) of a position in :attr:`text`."""
        if not 1 <= line <= len(self._new_line_starts):
            return line, column
        offset = self._new_line_starts[line - 1] + column - 1
        shift = 0
        orig = None
        for start, end, length in self._edits:
            if offset < start + shift:
                break
            if offset < start + shift + length:
                orig = start  # inside rewritten text: where it stands in the snippet
                break
            shift += length - (end - start)
        if orig is None:
            orig = offset - shift
        row = bisect.bisect_right(self._line_starts, orig) - 1
        return row + 1, orig - self._line_starts[row] + 1


def _line_starts(text: str) -> tuple[int, ...]:
    return (0, *(i + 1 for i, ch in enumerate(text) if ch == "\n"))


def checked_source(
    code: str, tree: ast.Module, bindings: Mapping[str, int], typed: Mapping[ast.Call, str] | None = None
) -> CheckedSource:
    """``code`` with what it builds wrapped as ``Any`` and its own annotations ``Any``, and the way back.

    ``bindings`` counts how many times each name is bound (a rebound ``list`` is not the constructor);
    each call in ``typed`` (``run_tool("ns:x", ...)``) is typed as its module function (``<module>.<name>``).
    """
    positions = Positions(code)
    starts = _line_starts(code)
    # (position, order, nesting, end, text): closings sort before openings, inner closings first.
    edits: list[tuple[int, int, int, int, str]] = []

    def span(node: ast.AST) -> tuple[int, int]:
        line, end_line = getattr(node, "lineno", 1), getattr(node, "end_lineno", None) or 1
        start = starts[line - 1] + positions.char_column(line, getattr(node, "col_offset", 0))
        return start, starts[end_line - 1] + positions.char_column(end_line, getattr(node, "end_col_offset", None) or 0)

    def wrap(node: ast.expr, head: str = f"{ANY_FUNCTION}(") -> None:
        start, end = span(node)
        edits.append((start, 1, -end, start, head))
        edits.append((end, 0, -start, end, ")"))

    def replace_annotation(node: ast.expr) -> None:
        start, end = span(node)
        edits.append((start, 1, -end, end, ANY_TYPE))
        skip.update(id(n) for n in ast.walk(node))

    # Positions inside f-strings are not reliable before Python 3.12: left as written.
    skip = {id(n) for f in ast.walk(tree) if isinstance(f, ast.JoinedStr) for n in ast.walk(f) if n is not f}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if typed and isinstance(node, ast.Call) and node in typed:
            wrap(node, f"{RESULT_FUNCTION}({MODULE_ALIAS}{typed[node]}, ")
        elif isinstance(node, _BUILT) and not isinstance(getattr(node, "ctx", ast.Load()), ast.Store | ast.Del):
            wrap(node)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _CONSTRUCTORS
            and not bindings.get(node.func.id)
        ):
            wrap(node)
        elif isinstance(node, ast.arg) and node.annotation is not None:
            replace_annotation(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            replace_annotation(node.returns)
        elif isinstance(node, ast.AnnAssign):
            replace_annotation(node.annotation)
    edits.sort(key=lambda x: x[:3])
    parts: list[str] = []
    last = 0
    for start, _, _, end, text in edits:
        parts.append(code[last:start])
        parts.append(text)
        last = end
    parts.append(code[last:])
    new = "".join(parts)
    return CheckedSource(new, tuple((s, e, len(t)) for s, _, _, e, t in edits), starts, _line_starts(new))


def _certain(rule: str, message: str, written: bool) -> str | None:
    """The exception the run would certainly raise where a finding is (``None``: it may not fail).

    ``written``: the finding is at a subscript written to (``t["k"] = v`` adds a key; only reading
    a key a result lacks fails).
    """
    if rule == "invalid-argument-type" and _NOT_SIZED_OR_ITERABLE.search(message):
        return "TypeError"
    raised = _RULES.get(rule)
    if raised is None or " in union " in message or re.search(r"\b(possibly|may)\b", message, re.IGNORECASE):
        return None
    if f"Module `{PACKAGE}" in message:
        return None  # the tools' modules are the argument check's
    if rule == "invalid-key" and (written or not _KEY.search(message)):
        return None
    # Backticks quote names too (an operator, an attribute): only the types matter here.
    named = [t for t in _TYPE.findall(message) if not _is_name_quoted(t, message)]
    return raised if all(_one_value_type(t) for t in named) else None


def _is_name_quoted(t: str, message: str) -> bool:
    return bool(re.search(rf"(Operator|operator|attribute|member|Attribute) `{re.escape(t)}`", message))


def _one_value_type(t: str) -> bool:
    """Whether ``t`` is the type of each value it stands for (no union, nothing unknown)."""
    if not t or "Unknown" in t or "@Todo" in t or t == "Any" or _top_level(t, "|") > 1:
        return False
    return not (t.startswith("Literal[") and t.endswith("]") and _top_level(t[8:-1], ",") > 1)


def _top_level(text: str, sep: str) -> int:
    """How many parts ``text`` has, split at ``sep`` outside brackets and quotes."""
    depth, parts, quote = 0, 1, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == sep and depth == 0:
            parts += 1
    return parts


def _prepared(
    code: str, tree: ast.Module, bindings: Mapping[str, int], typed: Mapping[ast.Call, str] | None
) -> tuple[CheckedSource, str | None]:
    source = checked_source(code, tree, bindings, typed)
    return source, _wrapped(source.text)


_SUBSCRIPTED: Final = re.compile(
    r"(?:cannot be called with key of type `[^`]*` on object of type `([^`]*)`"
    r"|^Cannot subscript object of type `([^`]*)` with no `__getitem__` method)$"
)


def _subscript_certain(rule: str, message: str, at: Sequence[ast.Subscript], declared: Declared) -> str | None:
    """A subscript ``ty`` finds wrong for the type of a tool's result (``offices["Paris"]`` on a list).

    ``ty`` reports a subscript for each member of a union that refuses it, naming that member only:
    kept only where the subscripted value is a tool call (or a name bound once to one) whose
    declared result type is the type named, so that no other member can be there.
    """
    m = _SUBSCRIPTED.search(message) if rule in ("invalid-argument-type", "not-subscriptable") else None
    named = (m.group(1) or m.group(2)) if m is not None else None
    if not named or not _one_value_type(named) or not any(declared(n.value) == named for n in at):
        return None
    return "KeyError" if named.startswith("dict[") else "TypeError"


def _kept(
    rendered: str, source: CheckedSource, tree: ast.Module, positions: Positions, declared: Declared | None = None
) -> list[Diagnostic]:
    """The certain findings among ``ty``'s, where the snippet's own text has them."""
    stores = {
        positions.of(n.slice): isinstance(n.ctx, ast.Store | ast.Del)
        for n in ast.walk(tree)
        if isinstance(n, ast.Subscript)
    }
    read: dict[tuple[int, int], list[ast.Subscript]] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
            read.setdefault(positions.of(n), []).append(n)
    out: list[Diagnostic] = []
    for text in rendered.splitlines():
        m = _LINE.match(text.strip())
        if m is None or int(m.group(1)) < 2:
            continue  # a warning or a note, or the wrapper's own line
        at = source.original(int(m.group(1)) - 1, max(1, int(m.group(2)) - 4))
        rule, message = m.group(3), m.group(4)
        raised = _certain(rule, message, stores.get(at, True))
        if raised is None and declared is not None:
            raised = _subscript_certain(rule, message, read.get(at, ()), declared)
        if raised is not None:
            out.append(Diagnostic(at[0], at[1], message, rule, ErrorCode.RUNTIME_ERROR, raised))
    return out
