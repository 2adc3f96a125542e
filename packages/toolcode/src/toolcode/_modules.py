"""Every namespace as a Python module of the sandbox: ``from tools import github``.

Each namespace of the catalog is importable in a snippet as ``tools.<module>``, a module whose
functions are its tools, called with keyword arguments named as in the signature
``describe_tool`` shows; ``<name>_async`` is the awaitable form of each (for
``asyncio.gather``). The names are deterministic:

- the package is ``tools``, so a namespace never shadows a module the sandbox provides:
  ``from tools import time`` is the namespace ``time``, ``import time`` the standard module;
- a namespace's module name is its identifier form (``my-server`` → ``my_server``,
  ``class`` → ``class_``); one that would start with ``_`` (``2fa`` → ``_2fa``) gets the prefix
  ``ns`` instead (``ns_2fa``), because names starting with ``_`` are private;
- a module named like a standard-library module (``time``, ``json``, ...) also answers to that
  name with a trailing underscore (``time_``, its name before), unless another namespace has it;
- two namespaces with the same module name: the first in sorted order keeps it, the others get
  ``_2``, ``_3``, ... in sorted order;
- function names follow the same rule over the namespace's tool names (``list-issues`` →
  ``list_issues``; a leading ``_`` becomes ``tool``), unique within the module.

:class:`ToolModules` builds these names once per catalog version. What a module holds is read
through :class:`ModulesView`, over one caller's view (:class:`~toolcode._view.CatalogView`): a tool
the view hides (another caller's private saved snippet) is not in the module's functions, its stub
(what a type checker and ``describe_tool`` read), nor the module map a run imports from.
"""

from __future__ import annotations

import dataclasses
import keyword
import sys
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from toolcode._view import CatalogView
from tooldocs import RENDER_TIERS, Budgets, py_identifier, render_module, unshadowed
from toolindex import Index, Tool

__all__ = [
    "ASYNC_SUFFIX",
    "PACKAGE",
    "ModuleFunction",
    "ModulesView",
    "NamespaceModule",
    "ToolModules",
    "every_tool",
    "function_names",
    "module_names",
    "positional_message",
]

PACKAGE: Final = "tools"
"""The sandbox package that holds one module per namespace."""
ASYNC_SUFFIX: Final = "_async"

CHECKER_TIERS: Final = tuple(
    dataclasses.replace(
        t, loose_open_objects=True, untyped_result="Any", tuples=False, descriptions=0, field_descriptions=0
    )
    for t in RENDER_TIERS
)
"""The documentation's detail tiers, typed loosely so that a type checker never rejects what it cannot
know (objects that admit undeclared keys are ``dict[str, Any]``, a result without an output schema is
``Any``), and typed as the run's values are (a fixed-length array is the ``list`` it decodes to, not a
``tuple``). Each tool's stub takes the richest tier that fits the ``schema`` budget, so ``describe_tool``
shows it whole. A more compact tier only drops comments or loosens types (``Literal`` to ``str``, deep
objects to ``dict``), never tightens them."""

SIGNATURE_BUDGET: Final = Budgets().schema
"""Characters a tool's stub should fit in (the ``schema`` level's budget)."""

_STUB_HEAD = (
    "from typing import Any, Awaitable, Callable, Literal, NotRequired, ParamSpec, Required, TypeVar, TypedDict\n"
    "\n"
    '_P = ParamSpec("_P")\n'
    '_R = TypeVar("_R")\n'
    "\n"
    "\n"
    "def _awaitable(f: Callable[_P, _R]) -> Callable[_P, Awaitable[_R]]: ...\n"
)
_HEADER_ROOM = 120
"""Room left in the budget for ``describe_tool``'s header, the import line and the awaitable form."""
_RESERVED = frozenset({"Any", "Awaitable", "Callable", "ParamSpec", "TypeVar", "_P", "_R", "_awaitable"})


_STDLIB: Final = frozenset(sys.stdlib_module_names) | {"typing_extensions", "_typeshed"}
_VARIANTS: Final = 256
"""Modules built for a view that hides some of their tools, kept at once (least recently used go first)."""
_NONE: Final[frozenset[str]] = frozenset()
_Key = tuple[str, frozenset[str]]
"""A namespace and the tool ids of it a view hides."""


def _module_base(namespace: str) -> str:
    return _public(py_identifier(namespace), "ns")


def _public(ident: str, prefix: str) -> str:
    # ExternalModule hides names starting with "_", and so does Python's own convention.
    return prefix + ident if ident.startswith("_") else ident


def _unique(names: Sequence[tuple[str, str]], taken: Iterable[str] = ()) -> dict[str, str]:
    """``{key: name}`` with clashes resolved in the order given (``name``, ``name_2``, ...)."""
    used = set(taken)
    out: dict[str, str] = {}
    for key, base in names:
        name, n = base, 2
        while name in used or keyword.iskeyword(name):
            name, n = f"{base}_{n}", n + 1
        used.add(name)
        out[key] = name
    return out


def module_names(namespaces: Iterable[str]) -> dict[str, str]:
    """The module name of each namespace (see the module docstring for the rule).

    Args:
        namespaces: Every namespace of the catalog (the rule depends on all of them).

    Returns:
        ``{namespace: module name}``.
    """
    ordered = sorted(set(namespaces))
    return _unique([(ns, _module_base(ns)) for ns in ordered])


def function_names(tools: Sequence[Tool]) -> dict[str, str]:
    """The function name of each tool of one namespace: ``{tool id: name}`` (sorted by tool name)."""
    ordered = sorted(tools, key=lambda t: (t.name, t.id))
    bases = [(t.id, _public(py_identifier(t.name), "tool")) for t in ordered]
    # The awaitable forms take ``<name>_async``: a tool already named so keeps its name, and the
    # other tool's awaitable form is not generated (reported as a collision).
    return _unique(bases, _RESERVED)


@dataclass(frozen=True, slots=True)
class ModuleFunction:
    """One function of a namespace module: the tool it calls, and whether it is the awaitable form."""

    tool_id: str
    awaitable: bool = False


@dataclass(frozen=True, slots=True)
class NamespaceModule:
    """One namespace as a module: its functions and its stub."""

    namespace: str
    name: str
    """The module name under ``tools``."""
    functions: Mapping[str, ModuleFunction]
    """Function name → what it calls, the awaitable forms (``<name>_async``) included."""
    stub: str
    """The module's ``.pyi`` text, as the type checker reads it (the awaitable forms bound to a helper;
    a builtin or ``typing`` name that a function is named after read through an alias,
    :func:`tooldocs.unshadowed`)."""
    tool_stubs: Mapping[str, str]
    """Tool id → what ``describe_tool`` shows: the import line a snippet writes, the tool's classes
    and function as the stub has them, and a comment naming the awaitable form."""
    signatures: Mapping[str, str]
    """Tool id → the tool's function as the stub has it (no import line, no awaitable form)."""
    collisions: tuple[str, ...] = ()
    """Names that could not be given as the rule says (reported, never merged)."""
    closed: frozenset[str] = frozenset()
    """The stub's classes whose object the schema closes (``additionalProperties: false``); another
    class's object may, by JSON Schema, carry keys the class does not declare."""

    @property
    def import_line(self) -> str:
        """``from tools import <name>``."""
        return f"from {PACKAGE} import {self.name}"


class ToolModules:
    """The catalog's namespaces as sandbox modules, rebuilt when the catalog changes.

    Module names are computed over the whole catalog (so a caller's view never renames a module)
    and are all this class answers itself. What a module holds (its functions, its stub, its text)
    is read only through :meth:`seen_by`, over what one caller's view holds: a tool hidden from the
    caller (another caller's private saved snippet) is no function of its module, and is named in
    no stub, no suggestion and no run's module map.

    A namespace's functions and stub are built on first use over the tools the view holds of it, and
    kept until the index's version moves: once for every view that hides none of its tools, once per
    set of hidden tools for the others (in practice the ``snippets`` module, per caller that owns
    private snippets; at most :data:`_VARIANTS` of those are kept). Not locked: every user runs on
    one event loop thread, and nothing here awaits.

    Args:
        index: The catalog.
    """

    def __init__(self, index: Index) -> None:
        self._built = _Built(index)

    @property
    def index(self) -> Index:
        """The catalog."""
        return self._built.index

    @property
    def version(self) -> int:
        """The catalog version the cached modules belong to."""
        return self._built.current()

    def module_name(self, namespace: str) -> str | None:
        """The module name of ``namespace`` in the whole catalog (``None`` when it has no tools)."""
        self._built.current()
        return self._built.names.get(namespace)

    def namespace_of(self, module: str) -> str | None:
        """The namespace behind a module name (or its former name, ``time_``) in the whole catalog, or ``None``."""
        self._built.current()
        return self._built.by_name.get(module)

    def seen_by(self, view: CatalogView) -> ModulesView:
        """The modules as ``view`` holds them: what every reader of a module's content goes through."""
        return ModulesView(self._built, view)


class _Built:
    """What :class:`ToolModules` builds and keeps, per namespace and set of hidden tools."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.version = -1
        self.names: dict[str, str] = {}
        self.by_name: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self._functions: dict[_Key, dict[str, ModuleFunction]] = {}
        self._modules: dict[_Key, NamespaceModule] = {}
        self._variants: OrderedDict[tuple[str, _Key], None] = OrderedDict()
        self._splits: OrderedDict[frozenset[str], dict[str, frozenset[str]]] = OrderedDict()
        self._runtime: OrderedDict[tuple[object, ...], dict[str, dict[str, ModuleFunction]]] = OrderedDict()

    def current(self) -> int:
        """Start over when the catalog moved; its version."""
        version = self.index.version
        if version == self.version:
            return version
        self.version = version
        namespaces = self.index.namespaces()
        self.names = module_names(n.name for n in namespaces)
        self.counts = {n.name: n.tool_count for n in namespaces}
        self.by_name = {m: ns for ns, m in self.names.items()}
        # The former names of modules named like the standard library (``time_``), where free.
        for ns, m in list(self.names.items()):
            if m in _STDLIB:
                self.by_name.setdefault(m + "_", ns)
        self._functions.clear()
        self._modules.clear()
        self._variants.clear()
        self._splits.clear()
        self._runtime.clear()
        return version

    def split(self, hidden: frozenset[str]) -> dict[str, frozenset[str]]:
        """The ids of ``hidden`` by namespace (kept per set: a caller's set is the same object each time)."""
        hit = self._splits.get(hidden)
        if hit is None:
            grouped: dict[str, set[str]] = {}
            for tool_id in hidden:
                grouped.setdefault(tool_id.split(":", 1)[0], set()).add(tool_id)
            hit = {ns: frozenset(ids) for ns, ids in grouped.items()}
            self._splits[hidden] = hit
            if len(self._splits) > _VARIANTS:
                self._splits.popitem(last=False)
        return hit

    def _tools(self, namespace: str, hidden: frozenset[str]) -> list[Tool]:
        tools = every_tool(self.index, namespace)
        return [t for t in tools if t.id not in hidden] if hidden else list(tools)

    def _variant(self, kind: str, key: _Key) -> None:
        """Note a use of a variant built for some hidden tools; forget the least recently used past the bound."""
        self._variants[(kind, key)] = None
        self._variants.move_to_end((kind, key))
        if len(self._variants) > _VARIANTS:
            (old_kind, old_key), _ = self._variants.popitem(last=False)
            (self._functions if old_kind == "functions" else self._modules).pop(old_key, None)

    def functions(self, namespace: str, hidden: frozenset[str]) -> dict[str, ModuleFunction]:
        """The function map of a namespace's module over its tools not in ``hidden``."""
        self.current()
        key = (namespace, hidden)
        hit = self._functions.get(key)
        if hit is None:
            hit = self._functions[key] = _function_map(function_names(self._tools(namespace, hidden)))
        if hidden:
            self._variant("functions", key)
        return hit

    def module(self, namespace: str, hidden: frozenset[str]) -> NamespaceModule | None:
        """A namespace's module over its tools not in ``hidden`` (``None``: no such namespace)."""
        self.current()
        key = (namespace, hidden)
        hit = self._modules.get(key)
        if hit is None:
            name = self.names.get(namespace)
            if name is None:
                return None
            hit = self._modules[key] = _render(namespace, name, self._tools(namespace, hidden))
        if hidden:
            self._variant("module", key)
        return hit

    def runtime(self, view: ModulesView) -> dict[str, dict[str, ModuleFunction]]:
        """The module map of runs in ``view`` (see :meth:`ModulesView.runtime`)."""
        self.current()
        allowed = view.allowed
        key = (None if allowed is None else tuple(sorted(allowed)), view.hidden)
        hit = self._runtime.get(key)
        if hit is None:
            hit = {name: view.functions(ns) for name, ns in sorted(self.by_name.items()) if view.holds(ns)}
            self._runtime[key] = hit
            if len(self._runtime) > _VARIANTS:
                self._runtime.popitem(last=False)
        else:
            self._runtime.move_to_end(key)
        return hit


class ModulesView:
    """The ``tools`` modules as one caller's view holds them (made by :meth:`ToolModules.seen_by`).

    A module the view does not hold (a namespace out of its filter, or one all of whose tools are
    hidden from it) does not exist here; a module it holds has only the functions of the tools the
    view holds. Each answer follows the catalog and the view as they are when asked, from the
    shared :class:`ToolModules`' cache.
    """

    __slots__ = ("_built", "view")

    def __init__(self, built: _Built, view: CatalogView) -> None:
        self._built = built
        self.view = view
        """The caller's view of the catalog."""

    @property
    def index(self) -> Index:
        """The catalog."""
        return self._built.index

    @property
    def version(self) -> int:
        """The catalog version the cached modules belong to."""
        return self._built.current()

    @property
    def allowed(self) -> frozenset[str] | None:
        """The view's namespace filter (``None``: every namespace)."""
        return self.view.allowed_namespaces

    @property
    def hidden(self) -> frozenset[str]:
        """The tool ids hidden from the view, as they are now."""
        return self.view.hidden

    def _held(self, namespace: str) -> frozenset[str] | None:
        """The ids of ``namespace`` the view hides, or ``None`` when it holds no module for it."""
        view, built = self.view, self._built
        allowed = view.allowed_namespaces
        if allowed is not None and namespace not in allowed:
            return None
        built.current()
        count = built.counts.get(namespace)
        if count is None or namespace not in built.names:
            return None
        hidden = view.hidden
        if not hidden:
            return _NONE
        mine = built.split(hidden).get(namespace, _NONE)
        return mine if count > len(mine) else None

    def holds(self, namespace: str) -> bool:
        """Whether the view holds a module for ``namespace`` (visible, with a tool the view holds)."""
        return self._held(namespace) is not None

    def module_name(self, namespace: str) -> str | None:
        """The module name of ``namespace`` (``None`` when the view holds no module for it)."""
        return self._built.names[namespace] if self.holds(namespace) else None

    def namespace_of(self, module: str) -> str | None:
        """The namespace behind a module name (or its former name, ``time_``), or ``None`` (not held)."""
        self._built.current()
        ns = self._built.by_name.get(module)
        return ns if ns is not None and self.holds(ns) else None

    def module_names(self) -> list[str]:
        """The names of the modules the view holds, sorted (not their former names)."""
        self._built.current()
        return sorted(m for ns, m in self._built.names.items() if self.holds(ns))

    def functions(self, namespace: str) -> dict[str, ModuleFunction]:
        """``{function name: ModuleFunction}`` of a namespace's module, the awaitable forms included.

        Cheap (names only, no rendering): what an engine needs to run a snippet. Empty when the
        view holds no module for the namespace.
        """
        hidden = self._held(namespace)
        return self._built.functions(namespace, hidden) if hidden is not None else {}

    def function_of(self, tool: Tool, awaitable: bool = False) -> tuple[str, str] | None:
        """``(module, function)`` that calls ``tool`` (its awaitable form if asked), or ``None``."""
        module = self.module_name(tool.namespace)
        if module is None:
            return None
        wanted = ModuleFunction(tool.id, awaitable)
        name = next((f for f, fn in self.functions(tool.namespace).items() if fn == wanted), None)
        return (module, name) if name is not None else None

    def module(self, namespace: str) -> NamespaceModule | None:
        """The namespace's module with its stub (rendered on first use per catalog version and hidden tools)."""
        hidden = self._held(namespace)
        return self._built.module(namespace, hidden) if hidden is not None else None

    def module_named(self, name: str) -> NamespaceModule | None:
        """The module held under a module name (or its former name), or ``None``."""
        ns = self.namespace_of(name)
        return self.module(ns) if ns is not None else None

    def runtime(self) -> dict[str, dict[str, ModuleFunction]]:
        """``{module name: {function name: ModuleFunction}}`` of the modules a run in this view may import.

        Returns:
            The same object for the same filter and hidden tools until the catalog changes (engines
            may cache what they build from it by identity). Former names (``time_``) are keys too.
        """
        return self._built.runtime(self)

    def tool_stub(self, tool: Tool) -> str | None:
        """The stub text of one tool as the checker reads it, with its import line (``None``: no module)."""
        module = self.module(tool.namespace)
        return module.tool_stubs.get(tool.id) if module is not None else None

    def signature(self, tool: Tool) -> str | None:
        """The tool's function as its module's stub has it (``None``: no module)."""
        module = self.module(tool.namespace)
        return module.signatures.get(tool.id) if module is not None else None

    def module_text(self, namespace: str, max_chars: int) -> str | None:
        """A namespace's whole module as ``describe_tool`` shows it, within ``max_chars``.

        Each tool as :attr:`NamespaceModule.tool_stubs` has it (without the import line, said once
        at the top). Past ``max_chars`` the remaining functions are listed by name only (with the
        way to get each one's stub). ``None`` when the view holds no module for the namespace.
        """
        module = self.module(namespace)
        if module is None:
            return None
        head = f"# {module.import_line}  (namespace {namespace!r})\n"
        prefix = module.import_line + "\n\n"
        blocks = [(tool_id, text.removeprefix(prefix)) for tool_id, text in module.tool_stubs.items()]
        whole = head + "\n\n\n".join(b for _, b in blocks) + "\n"
        if len(whole) <= max_chars:
            return whole
        parts = [head.rstrip("\n")]
        used = len(head)
        rest: list[str] = []
        for tool_id, block in blocks:
            if not rest and used + len(block) + 3 <= max_chars - 400:
                parts.append(block)
                used += len(block) + 3
            else:
                rest.append(tool_id)
        listing = ", ".join(rest)
        note = (
            f"# {len(rest)} more functions, not shown (too long for one answer); "
            f"describe_tool(id) shows each of these tools:\n# {listing}"
        )
        return "\n\n\n".join(parts) + "\n\n\n" + note[: max(0, max_chars - used - 6)] + "\n"


def _render(namespace: str, name: str, tools: Sequence[Tool]) -> NamespaceModule:
    """One namespace's module over ``tools``: its functions and its stub."""
    names = function_names(tools)
    rendered = render_module(
        tools, function_names=names, reserved=_RESERVED, tiers=CHECKER_TIERS, fit=SIGNATURE_BUDGET - _HEADER_ROOM
    )
    tool_stubs: dict[str, str] = {}
    signatures: dict[str, str] = {}
    collisions: list[str] = [str(c) for c in rendered.collisions]
    functions = _function_map(names)
    # What the checker reads spells a builtin a function is named after (a tool ``list``) through an
    # alias; what ``describe_tool`` shows keeps the plain spelling.
    header, checked = unshadowed([sig.text for sig in rendered.signatures], functions)
    parts: list[str] = [header + _STUB_HEAD]
    for tool, sig, checked_text in zip(tools, rendered.signatures, checked, strict=True):
        text = sig.text
        signatures[tool.id] = text
        alias = sig.name + ASYNC_SUFFIX
        if functions.get(alias) == ModuleFunction(tool.id, awaitable=True):
            # Not said again in each tool's docs: execute_code's description names the pattern once.
            parts.append(f"{checked_text}\n{alias} = _awaitable({sig.name})")
        else:
            parts.append(checked_text)
            collisions.append(f"{tool.id}: no awaitable form ({alias!r} is another tool)")
        tool_stubs[tool.id] = f"from {PACKAGE} import {name}\n\n{text}"
    stub = "\n\n\n".join(parts) + "\n"
    closed = frozenset(c for sig in rendered.signatures for c in sig.closed)
    return NamespaceModule(namespace, name, functions, stub, tool_stubs, signatures, tuple(collisions), closed)


def every_tool(catalog: Index | CatalogView, namespace: str | None = None) -> Iterator[Tool]:
    """Every tool of ``catalog`` (of one ``namespace``), in id order, read a page at a time."""
    cursor: str | None = None
    while True:
        page = catalog.list_tools(cursor=cursor, limit=1000, namespace=namespace)
        yield from page.tools
        if (cursor := page.next_cursor) is None:
            return


def positional_message(function: str, count: int) -> str:
    """Why a call of ``tools.<function>`` with positional arguments fails (the check and the run say it alike).

    Args:
        function: ``<module>.<function>``.
        count: The positional arguments given.

    Returns:
        The message.
    """
    return (
        f"{PACKAGE}.{function}() takes keyword arguments only (got {count} positional); "
        "name each argument as in its signature"
    )


def _function_map(names: Mapping[str, str]) -> dict[str, ModuleFunction]:
    """Sync names first; an awaitable form only where its name is free."""
    out = {name: ModuleFunction(tool_id) for tool_id, name in names.items()}
    for tool_id, name in names.items():
        out.setdefault(name + ASYNC_SUFFIX, ModuleFunction(tool_id, awaitable=True))
    return out
