"""The one bundle of services a code-mode core runs on, built once and passed whole."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from toolcode._audit import AuditLog, Quarantine
from toolcode._module_views import ToolModules
from toolcode._paused import PausedRuns
from toolcode._results import StoredResults
from toolcode._saved_snippet import SavedSnippet
from toolcode._sessions import Sessions, owner_of
from toolcode._settings import Settings
from toolcode._snippets import SnippetLibrary
from toolcode._typecheck import Diagnostic, TypeChecker
from toolcode._types import Engine
from toolcode._view import CatalogView
from toolcode.calls import Policy
from toolcode.engines import load_engine
from toolcode.exceptions import ConfigurationError, InvalidArgumentsError
from toolcode.state import StateStore
from toolindex import Index
from toolrun import Runner

__all__ = ["DocStore", "Services", "Stores"]


class DocStore(Protocol):
    """What the core needs from a documentation store (``tooldocs.InMemoryStore`` fits).

    ``describe`` returns an object with ``render()`` (and ``signature``); ``examples`` a list
    of objects with ``to_dict()`` (or ``model_dump()``) or plain dicts.
    """

    def describe(self, tool_id: str, level: Any = ..., /) -> Any:
        """Documentation of one tool at a detail level."""
        ...

    def examples(self, tool_id: str, max: int = ..., /) -> Any:
        """Examples of one tool."""
        ...


@dataclass(frozen=True, slots=True)
class Stores:
    """What lives in the state store: sessions, saved snippets, paused runs, stored results, the audit log."""

    sessions: Sessions
    snippets: SnippetLibrary
    paused: PausedRuns
    results: StoredResults
    audit: AuditLog
    quarantine: Quarantine | None = None
    """Approved tool definitions (``policy.quarantine``; ``None`` when off)."""

    @classmethod
    def of(cls, store: StateStore, index: Index, settings: Settings) -> Stores:
        """The stores of one state store, as ``settings`` configure them."""
        policy = settings.policy
        return cls(
            Sessions(store, settings.sessions),
            SnippetLibrary(store, index),
            PausedRuns(store, policy),
            StoredResults(store, settings.results),
            AuditLog(store),
            Quarantine(store, index) if policy.quarantine else None,
        )


@dataclass(frozen=True, slots=True)
class Services:
    """Everything the core needs: the catalog, the docs, the runner, the engine, the policy, the state.

    Build one with :meth:`of` (it fills in what can be derived: the namespace modules, the type
    checker, the policy); :class:`~toolcode.Toolbox` does that for a configured set of servers.
    """

    index: Index
    """The tool catalog."""
    runner: Runner
    """Runs the tools; never closed by the core."""
    docs: DocStore | None
    """The documentation store (``tooldocs.InMemoryStore``), or ``None`` (the index's own fields)."""
    engine: Engine
    """Runs snippets."""
    modules: ToolModules
    """The catalog's namespaces as sandbox modules (``from tools import github``)."""
    checker: TypeChecker
    """Checks a run's tool calls before it starts."""
    policy: Policy
    """Tiers and decisions for every tool call."""
    settings: Settings
    """Limits, ceilings, results, policy, search: the ``toolcode`` section."""
    stores: Stores | None = None
    """Sessions, snippets, paused runs, results, audit (``None``: none of them)."""
    unavailable: Mapping[str, str] = field(default_factory=dict[str, str])
    """Configured servers that failed to start, with the reason (a live mapping)."""
    owns_engine: bool = False
    """Whether :meth:`aclose` closes the engine (it was made from a name)."""
    turns: anyio.Lock = field(default_factory=anyio.Lock)
    """Taken by a run's catalog reads (search, list, describe), which take the event loop every caller
    shares for milliseconds: runs reading the catalog take turns, and everything else goes on between."""

    @classmethod
    def of(
        cls,
        index: Index,
        runner: Runner,
        *,
        docs: DocStore | None = None,
        engine: Engine | str | None = None,
        settings: Settings | None = None,
        stores: Stores | None = None,
        unavailable: Mapping[str, str] | None = None,
    ) -> Services:
        """The services over ``index`` and ``runner``, the rest derived or defaulted.

        Args:
            index: The catalog.
            runner: Runs its tools.
            docs: The documentation store (``None``: the index's own fields).
            engine: An engine, an engine name (an entry point of ``toolcode.engines``), or
                ``None`` for ``settings.engine`` (default: ``monty``, the sandbox).
            settings: The ``toolcode`` section (default: the built-in defaults).
            stores: The state-backed services (``None``: no sessions, snippets, pauses, results, audit).
            unavailable: Servers that failed to start (a live mapping such as ``Toolbox.failed``).

        Raises:
            ConfigurationError: If the engine is neither an engine nor a known engine name.
        """
        s = settings or Settings()
        chosen = engine if engine is not None else s.engine
        owned = not isinstance(chosen, Engine)
        if chosen is None or isinstance(chosen, str):
            kwargs = s.workers.engine_kwargs() if chosen in (None, "monty") else {}
            built: Engine = load_engine(chosen or "monty", **kwargs)
        elif isinstance(chosen, Engine):  # pyright: ignore[reportUnnecessaryIsInstance]
            built = chosen
        else:
            raise ConfigurationError(
                "engine", f"must be an Engine or an engine name, got {type(chosen).__name__} (see toolcode.Engine)"
            )
        modules = ToolModules(index)
        snippets = stores.snippets if stores is not None else None
        quarantine = stores.quarantine if stores is not None else None
        policy = Policy(
            s.policy,
            snippets.code_of if snippets is not None else None,
            modules,
            quarantine.quarantined if quarantine is not None else None,
        )
        return cls(
            index,
            runner,
            docs,
            built,
            modules,
            TypeChecker(modules),
            policy,
            s,
            stores,
            unavailable if unavailable is not None else {},
            owned,
        )

    def is_operator(self, caller: str | None) -> bool:
        """Whether ``caller`` is an operator (``policy.operators``; ``None`` is the local user)."""
        return (caller or "local") in self.settings.policy.operators

    def view(self, allowed_namespaces: Sequence[str] | None, caller: str | None) -> CatalogView:
        """The catalog as ``caller`` sees it: these namespaces, without other callers' private snippets.

        The view reads the public tools and the caller's own partition of the index, where
        :class:`~toolcode._snippets.SnippetLibrary` registers their private snippets; an operator's
        too (run by an operator, another caller's code would act with the operator's reach). The
        index is read at each use: a snippet saved while a run goes on is out of its sight as well.
        """
        if self.stores is None:
            return CatalogView(self.index, allowed_namespaces, self.unavailable)
        return CatalogView(self.index, allowed_namespaces, self.unavailable, partitions=(owner_of(caller),))

    async def save_snippet(
        self,
        view: CatalogView,
        caller: str | None,
        name: Any,
        code: Any,
        description: Any,
        input_schema: Any = None,
        *,
        shared: Any = False,
    ) -> SavedSnippet:
        """Save a snippet for ``caller``: the one way a door and a snippet save one.

        The caller owns it and may keep ``snippets.max_per_caller`` of them; its code is checked
        against ``view`` unless the check is off (``limits.type_check``).

        Raises:
            InvalidArgumentsError: If there is no state store (field ``name``), or
                :meth:`~toolcode._snippets.SnippetLibrary.save` refuses a field.
            LimitExceededError: ``quota_exceeded``.
            TypeCheckError: If the code calls its tools wrongly.
            StateUnavailableError: If the state store cannot be written.
        """
        if self.stores is None:
            raise InvalidArgumentsError("name", "saved snippets need a state store (none is configured)")
        checker, strict = self.checker, self.settings.limits.type_check != "off"

        async def check(text: str) -> list[Diagnostic]:
            return await checker.check(text, view, caller=caller) if strict else []

        return await self.stores.snippets.save(
            name,
            code,
            description,
            input_schema,
            check,
            owner=owner_of(caller),
            operator=self.is_operator(caller),
            shared=shared,
            quota=self.settings.snippets.max_per_caller,
        )

    @property
    def audit_probe(self) -> Callable[[], Awaitable[None]] | None:
        """What the call stack asks before each call when the audit log is required (else ``None``)."""
        audit = self.settings.policy.audit
        if self.stores is None or not (audit.enabled and audit.required):
            return None
        return self.stores.audit.probe

    async def aclose(self) -> None:
        """Close the type checker, and the engine if it was made here; idempotent."""
        await self.checker.aclose()
        if self.owns_engine:
            await self.engine.aclose()
