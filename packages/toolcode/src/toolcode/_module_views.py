"""The ``tools`` modules as one caller sees them, built once per catalog version.

:class:`ToolModules` computes the module names over the whole catalog (a caller's view never renames a
module). What a module holds is read only through :class:`ModulesView`, over one caller's view
(:class:`~toolcode._view.CatalogView`): a tool the view hides (another caller's private saved snippet)
is not in the module's functions, its stub (what a type checker and ``describe_tool`` read), nor the
module map a run imports from. The naming rules and the rendering are :mod:`toolcode._modules`'.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Iterable
from typing import Final

import anyio
import anyio.to_thread

from toolcode._modules import (
    ModuleFunction,
    NamespaceModule,
    every_tool,
    function_map,
    function_names,
    module_names,
    render,
)
from toolcode._view import CatalogView
from toolindex import Index, Tool

__all__ = ["ModulesView", "ToolModules"]

_STDLIB: Final = frozenset(sys.stdlib_module_names) | {"typing_extensions", "_typeshed"}
_VARIANTS: Final = 256
"""Modules built for a view that hides some of their tools, kept at once (least recently used go first)."""
_NONE: Final[frozenset[str]] = frozenset()
_Key = tuple[str, frozenset[str]]
"""A namespace and the tool ids of it a view hides."""


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
    one event loop thread, and nothing here awaits but :meth:`ModulesView.render_ahead`, which renders
    in a worker thread (a hostile upstream's namespace can take seconds) and keeps what it built
    only while the catalog has not moved.

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
        self._rendering: dict[tuple[int, _Key], anyio.Event] = {}
        """Renders under way in a worker thread, by catalog version and key."""

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
            hit = self._functions[key] = function_map(function_names(self._tools(namespace, hidden)))
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
            hit = self._modules[key] = render(namespace, name, self._tools(namespace, hidden))
        if hidden:
            self._variant("module", key)
        return hit

    async def render_ahead(self, namespace: str, hidden: frozenset[str]) -> None:
        """Render a namespace's module in a worker thread unless it is built (or being built) already."""
        version = self.current()
        key = (namespace, hidden)
        name = self.names.get(namespace)
        if name is None or key in self._modules:
            return
        under_way = self._rendering.get((version, key))
        if under_way is not None:
            await under_way.wait()
            return
        done = self._rendering[(version, key)] = anyio.Event()
        try:
            tools = self._tools(namespace, hidden)
            # Not abandoned when the caller is cancelled: the next caller would pay for it again.
            with anyio.CancelScope(shield=True):
                module = await anyio.to_thread.run_sync(render, namespace, name, tools)
                if self.current() == version:
                    self._modules[key] = module
                    if hidden:
                        self._variant("module", key)
        finally:
            del self._rendering[(version, key)]
            done.set()

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

    async def render_ahead(self, namespaces: Iterable[str]) -> None:
        """Render the modules of ``namespaces`` the view holds, in a worker thread, where not built yet.

        What reads a module is synchronous, and a module's first render after a catalog change takes
        time in proportion to its tools' schemas (seconds for a hostile upstream's): an async caller
        asks for it here first, so that the event loop goes on serving everyone else meanwhile.
        """
        for namespace in dict.fromkeys(namespaces):
            hidden = self._held(namespace)
            if hidden is not None:
                await self._built.render_ahead(namespace, hidden)

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
