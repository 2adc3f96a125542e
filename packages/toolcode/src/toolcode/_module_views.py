"""The ``tools`` modules as one caller sees them, built once per catalog version.

:class:`ToolModules` computes the module names over the whole catalog (a caller's view never renames a
module). What a module holds is read only through :class:`ModulesView`, over one caller's view
(:class:`~toolcode._view.CatalogView`): a tool in an index partition the view does not read (another
caller's private saved snippet) is not in the module's functions, its stub (what a type checker and
``describe_tool`` read), nor the module map a run imports from. The naming rules and the rendering
are :mod:`toolcode._modules`'.
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
"""Modules built over some partitions' tools besides the public ones, kept at once (least recently used go first)."""
_Reads = frozenset[str] | None
"""The index partitions a module is built over besides the public tools (``None``: every tool)."""
_PUBLIC: Final[frozenset[str]] = frozenset()
_Key = tuple[str, _Reads]
"""A namespace and the partitions its module is built over."""


class ToolModules:
    """The catalog's namespaces as sandbox modules, rebuilt when the catalog changes.

    Module names are computed over the whole catalog (so a caller's view never renames a module)
    and are all this class answers itself. What a module holds (its functions, its stub, its text)
    is read only through :meth:`seen_by`, over what one caller's view holds: a tool in a partition
    the view does not read (another caller's private saved snippet) is no function of its module,
    and is named in no stub, no suggestion and no run's module map.

    A namespace's functions and stub are built on first use over the tools the view holds of it, and
    kept until the index's version moves: once over its public tools, for every view whose
    partitions hold none of its tools, and once per set of partitions for the others (in practice
    the ``snippets`` module, per caller that owns private snippets; at most :data:`_VARIANTS` of
    those are kept). Not locked: every user runs on one event loop thread, and nothing here awaits
    but :meth:`ModulesView.render_ahead`, which renders in a worker thread (a hostile upstream's
    namespace can take seconds) and keeps what it built only while the catalog has not moved.

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
    """What :class:`ToolModules` builds and keeps, per namespace and set of partitions read."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.version = -1
        self.names: dict[str, str] = {}
        self.by_name: dict[str, str] = {}
        self.public: dict[str, int] = {}
        self._functions: dict[_Key, dict[str, ModuleFunction]] = {}
        self._modules: dict[_Key, NamespaceModule] = {}
        self._variants: OrderedDict[tuple[str, _Key], None] = OrderedDict()
        self._counts: OrderedDict[_Reads, dict[str, int]] = OrderedDict()
        self._runtime: OrderedDict[tuple[object, ...], dict[str, dict[str, ModuleFunction]]] = OrderedDict()
        self._rendering: dict[tuple[int, _Key], anyio.Event] = {}
        """Renders under way in a worker thread, by catalog version and key."""

    def current(self) -> int:
        """Start over when the catalog moved; its version."""
        version = self.index.version
        if version == self.version:
            return version
        self.version = version
        self.names = module_names(n.name for n in self.index.namespaces())
        self.public = {n.name: n.tool_count for n in self.index.namespaces(partitions=_PUBLIC)}
        self.by_name = {m: ns for ns, m in self.names.items()}
        # The former names of modules named like the standard library (``time_``), where free.
        for ns, m in list(self.names.items()):
            if m in _STDLIB:
                self.by_name.setdefault(m + "_", ns)
        self._functions.clear()
        self._modules.clear()
        self._variants.clear()
        self._counts.clear()
        self._runtime.clear()
        return version

    def counts(self, reads: _Reads) -> dict[str, int]:
        """The tools of each namespace a view reading ``reads`` holds (namespaces without any left out)."""
        if reads == _PUBLIC:
            return self.public
        hit = self._counts.get(reads)
        if hit is None:
            hit = self._counts[reads] = {n.name: n.tool_count for n in self.index.namespaces(partitions=reads)}
            if len(self._counts) > _VARIANTS:
                self._counts.popitem(last=False)
        else:
            self._counts.move_to_end(reads)
        return hit

    def _tools(self, namespace: str, reads: _Reads) -> list[Tool]:
        return list(every_tool(CatalogView(self.index, partitions=reads), namespace))

    def _variant(self, kind: str, key: _Key) -> None:
        """Note a use of a variant built over some partitions; forget the least recently used past the bound."""
        self._variants[(kind, key)] = None
        self._variants.move_to_end((kind, key))
        if len(self._variants) > _VARIANTS:
            (old_kind, old_key), _ = self._variants.popitem(last=False)
            (self._functions if old_kind == "functions" else self._modules).pop(old_key, None)

    def functions(self, namespace: str, reads: _Reads) -> dict[str, ModuleFunction]:
        """The function map of a namespace's module over its public tools and those of ``reads``."""
        self.current()
        key = (namespace, reads)
        hit = self._functions.get(key)
        if hit is None:
            hit = self._functions[key] = function_map(function_names(self._tools(namespace, reads)))
        if reads != _PUBLIC:
            self._variant("functions", key)
        return hit

    def module(self, namespace: str, reads: _Reads) -> NamespaceModule | None:
        """A namespace's module over its public tools and those of ``reads`` (``None``: no such namespace)."""
        self.current()
        key = (namespace, reads)
        hit = self._modules.get(key)
        if hit is None:
            name = self.names.get(namespace)
            if name is None:
                return None
            hit = self._modules[key] = render(namespace, name, self._tools(namespace, reads))
        if reads != _PUBLIC:
            self._variant("module", key)
        return hit

    async def render_ahead(self, namespace: str, reads: _Reads) -> None:
        """Render a namespace's module in a worker thread unless it is built (or being built) already."""
        version = self.current()
        key = (namespace, reads)
        name = self.names.get(namespace)
        if name is None or key in self._modules:
            return
        under_way = self._rendering.get((version, key))
        if under_way is not None:
            await under_way.wait()
            return
        done = self._rendering[(version, key)] = anyio.Event()
        try:
            tools = self._tools(namespace, reads)
            # Not abandoned when the caller is cancelled: the next caller would pay for it again.
            with anyio.CancelScope(shield=True):
                module = await anyio.to_thread.run_sync(render, namespace, name, tools)
                if self.current() == version:
                    self._modules[key] = module
                    if reads != _PUBLIC:
                        self._variant("module", key)
        finally:
            del self._rendering[(version, key)]
            done.set()

    def runtime(self, view: ModulesView) -> dict[str, dict[str, ModuleFunction]]:
        """The module map of runs in ``view`` (see :meth:`ModulesView.runtime`)."""
        self.current()
        allowed, reads = view.allowed, view.view.partitions
        # Views whose partitions hold no tool share the map of the public tools.
        key = (
            None if allowed is None else tuple(sorted(allowed)),
            _PUBLIC if self.counts(reads) == self.public else reads,
        )
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

    A module the view does not hold (a namespace out of its filter, or one with no tool the view
    reads) does not exist here; a module it holds has only the functions of the tools the
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

    def _count(self, namespace: str) -> int:
        """How many tools of ``namespace`` the view holds (0: it holds no module for it)."""
        view, built = self.view, self._built
        allowed = view.allowed_namespaces
        if allowed is not None and namespace not in allowed:
            return 0
        built.current()
        if namespace not in built.names:
            return 0
        return built.counts(view.partitions).get(namespace, 0)

    def _reads(self, namespace: str) -> _Reads:
        """What a held namespace's module is built over: the public tools alone when the view's partitions add none."""
        same = self._count(namespace) == self._built.public.get(namespace, 0)
        return _PUBLIC if same else self.view.partitions

    def holds(self, namespace: str) -> bool:
        """Whether the view holds a module for ``namespace`` (visible, with a tool the view holds)."""
        return self._count(namespace) > 0

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
        return self._built.functions(namespace, self._reads(namespace)) if self.holds(namespace) else {}

    def function_of(self, tool: Tool, awaitable: bool = False) -> tuple[str, str] | None:
        """``(module, function)`` that calls ``tool`` (its awaitable form if asked), or ``None``."""
        module = self.module_name(tool.namespace)
        if module is None:
            return None
        wanted = ModuleFunction(tool.id, awaitable)
        name = next((f for f, fn in self.functions(tool.namespace).items() if fn == wanted), None)
        return (module, name) if name is not None else None

    def module(self, namespace: str) -> NamespaceModule | None:
        """The namespace's module with its stub (rendered on first use per catalog version and partitions read)."""
        return self._built.module(namespace, self._reads(namespace)) if self.holds(namespace) else None

    async def render_ahead(self, namespaces: Iterable[str]) -> None:
        """Render the modules of ``namespaces`` the view holds, in a worker thread, where not built yet.

        What reads a module is synchronous, and a module's first render after a catalog change takes
        time in proportion to its tools' schemas (seconds for a hostile upstream's): an async caller
        asks for it here first, so that the event loop goes on serving everyone else meanwhile.
        """
        for namespace in dict.fromkeys(namespaces):
            if self.holds(namespace):
                await self._built.render_ahead(namespace, self._reads(namespace))

    def module_named(self, name: str) -> NamespaceModule | None:
        """The module held under a module name (or its former name), or ``None``."""
        ns = self.namespace_of(name)
        return self.module(ns) if ns is not None else None

    def runtime(self) -> dict[str, dict[str, ModuleFunction]]:
        """``{module name: {function name: ModuleFunction}}`` of the modules a run in this view may import.

        Returns:
            The same object for the same filter and partitions read until the catalog changes (engines
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
