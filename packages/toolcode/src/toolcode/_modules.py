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

:class:`ToolModules` builds these names, and the stub text a type checker (and ``describe_tool``)
uses, once per catalog version.
"""

from __future__ import annotations

import dataclasses
import keyword
import sys
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from toolcode._view import CatalogView
from tooldocs import RENDER_TIERS, Budgets, py_identifier, render_module
from toolindex import Index, Tool

__all__ = [
    "ASYNC_SUFFIX",
    "PACKAGE",
    "ModuleFunction",
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
    """The module's ``.pyi`` text, as the type checker reads it (the awaitable forms bound to a helper)."""
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

    Names are computed over the whole catalog (so a caller's view never renames a module);
    function maps and stubs are built on first use per namespace and kept until the index's
    version moves. Not locked: every user runs on one event loop thread and nothing here awaits.

    Args:
        index: The catalog.
    """

    def __init__(self, index: Index) -> None:
        self._index = index
        self._version = -1
        self._names: dict[str, str] = {}
        self._by_name: dict[str, str] = {}
        self._functions: dict[str, dict[str, ModuleFunction]] = {}
        self._modules: dict[str, NamespaceModule] = {}
        self._runtime: dict[tuple[str, ...] | None, dict[str, dict[str, ModuleFunction]]] = {}

    def _current(self) -> None:
        version = self._index.version
        if version == self._version:
            return
        self._version = version
        self._names = module_names(n.name for n in self._index.namespaces())
        self._by_name = {m: ns for ns, m in self._names.items()}
        # The former names of modules named like the standard library (``time_``), where free.
        for ns, m in list(self._names.items()):
            if m in _STDLIB:
                self._by_name.setdefault(m + "_", ns)
        self._functions.clear()
        self._modules.clear()
        self._runtime.clear()

    @property
    def index(self) -> Index:
        """The catalog."""
        return self._index

    @property
    def version(self) -> int:
        """The catalog version the cached modules belong to."""
        self._current()
        return self._version

    def module_name(self, namespace: str) -> str | None:
        """The module name of ``namespace`` (``None`` when it has no tools)."""
        self._current()
        return self._names.get(namespace)

    def namespace_of(self, module: str) -> str | None:
        """The namespace behind a module name (or its former name, ``time_``), or ``None``."""
        self._current()
        return self._by_name.get(module)

    def function_of(self, tool: Tool, awaitable: bool = False) -> tuple[str, str] | None:
        """``(module, function)`` that calls ``tool`` (its awaitable form if asked), or ``None``."""
        module = self.module_name(tool.namespace)
        if module is None:
            return None
        wanted = ModuleFunction(tool.id, awaitable)
        name = next((f for f, fn in self.functions(tool.namespace).items() if fn == wanted), None)
        return (module, name) if name is not None else None

    def functions(self, namespace: str) -> dict[str, ModuleFunction]:
        """``{function name: ModuleFunction}`` of a namespace's module, the awaitable forms included.

        Cheap (names only, no rendering): what an engine needs to run a snippet.
        """
        self._current()
        hit = self._functions.get(namespace)
        if hit is None:
            hit = _function_map(function_names(list(every_tool(self._index, namespace))))
            self._functions[namespace] = hit
        return hit

    def runtime(self, allowed: Collection[str] | None) -> dict[str, dict[str, ModuleFunction]]:
        """``{module name: {function name: ModuleFunction}}`` of the namespaces a run may use.

        Args:
            allowed: The run's namespace filter (``None``: every namespace).

        Returns:
            The same object for the same filter until the catalog changes (engines may cache
            what they build from it by identity). Former names (``time_``) are keys too.
        """
        self._current()
        key = None if allowed is None else tuple(sorted(set(allowed)))
        hit = self._runtime.get(key)
        if hit is None:
            chosen = set(self._names) if key is None else set(key)
            hit = {name: self.functions(ns) for name, ns in sorted(self._by_name.items()) if ns in chosen}
            if len(self._runtime) >= 64:
                self._runtime.clear()
            self._runtime[key] = hit
        return hit

    def module(self, namespace: str) -> NamespaceModule | None:
        """The namespace's module with its stub (rendered on first use per catalog version)."""
        self._current()
        hit = self._modules.get(namespace)
        if hit is not None:
            return hit
        name = self._names.get(namespace)
        if name is None:
            return None
        tools = list(every_tool(self._index, namespace))
        names = function_names(tools)
        rendered = render_module(
            tools, function_names=names, reserved=_RESERVED, tiers=CHECKER_TIERS, fit=SIGNATURE_BUDGET - _HEADER_ROOM
        )
        parts: list[str] = [_STUB_HEAD]
        tool_stubs: dict[str, str] = {}
        signatures: dict[str, str] = {}
        collisions: list[str] = [str(c) for c in rendered.collisions]
        functions = _function_map(names)
        for tool, sig in zip(tools, rendered.signatures, strict=True):
            text = sig.text
            signatures[tool.id] = text
            alias = sig.name + ASYNC_SUFFIX
            if functions.get(alias) == ModuleFunction(tool.id, awaitable=True):
                # Not said again in each tool's docs: execute_code's description names the pattern once.
                parts.append(f"{text}\n{alias} = _awaitable({sig.name})")
            else:
                parts.append(text)
                collisions.append(f"{tool.id}: no awaitable form ({alias!r} is another tool)")
            tool_stubs[tool.id] = f"from {PACKAGE} import {name}\n\n{text}"
        stub = "\n\n\n".join(parts) + "\n"
        closed = frozenset(c for sig in rendered.signatures for c in sig.closed)
        hit = NamespaceModule(namespace, name, functions, stub, tool_stubs, signatures, tuple(collisions), closed)
        self._modules[namespace] = hit
        return hit

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
        way to get each one's stub). ``None`` when the namespace has no module.
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
