"""The glue every front door needs: a :class:`Toolbox` of index, docs, runner, executor and the core.

A toolbox is built from a config file (``mcpServers`` plus the optional ``toolcode`` section)
and/or backends given in code (local functions, providers), connects every backend (reporting
progress as each server comes up), and closes everything on exit::

    async with Toolbox.from_config("mcp.json") as box:
        result = await box.execute("__out = run_tool('time:get_current_time', {'timezone': 'UTC'})")

Its :attr:`Toolbox.codemode` is the one core every door (snippet, MCP server, CLI) goes through.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import anyio

from toolcode._core import CodeMode
from toolcode._data import as_mapping, is_list
from toolcode._options import ExecuteOptions
from toolcode._services import Services, Stores
from toolcode._settings import Settings, StateSettings, load_settings, read_config
from toolcode._shapes import ShapeSync
from toolcode._types import Engine, ExecuteResult, ToolCallRecord
from toolcode.exceptions import ConfigurationError, StateUnavailableError
from toolcode.state import MemoryStateStore, StateStore, open_state_store
from tooldocs import InMemoryStore
from toolindex import BackendRef, InMemoryIndex, PreparedBatch, Tool, ToolIndexError
from toolindex.log import get_logger
from toolrun import (
    Backend,
    BackendUnavailableError,
    DefaultRunner,
    ToolRunError,
    backends_from_config,
    load_config,
)

__all__ = ["UNSANDBOXED_WARNING", "ConnectEvent", "ConnectProgress", "Toolbox"]

log = get_logger("toolcode.app")

UNSANDBOXED_WARNING = (
    "the {engine!r} engine runs snippets WITHOUT a sandbox: snippet code has the full powers of this "
    "process (files, network, environment); use it only for code you trust"
)
"""Logged (and printed by the CLI) whenever a toolbox runs an engine that is not a sandbox."""


@dataclass(frozen=True, slots=True)
class ConnectEvent:
    """Progress while a toolbox connects its backends."""

    backend: str
    """The server name (or ``"local"``, or a provider id)."""
    state: Literal["connecting", "ready", "failed"]
    tools: int = 0
    """Tools registered by the backend (``ready``)."""
    error: str | None = None
    """Why it failed (``failed``)."""
    duration_ms: float = 0.0


ConnectProgress = Callable[[ConnectEvent], Awaitable[None] | None]
"""Called for each :class:`ConnectEvent`; may be sync or async."""


def _backend_name(backend: Backend) -> str:
    names = (getattr(backend, attr, None) for attr in ("name", "server", "provider_id"))
    return next((n for n in names if isinstance(n, str) and n), backend.kind)


class _ExcludingIndex:
    """The index as backends see it: tools matching an ``exclude`` glob are never registered."""

    def __init__(self, index: InMemoryIndex, excluded: Callable[[str], bool]) -> None:
        self._index = index
        self._excluded = excluded

    def register(self, tool: Tool, backend: BackendRef | Sequence[BackendRef], *, partition: str | None = None) -> None:
        if not self._excluded(tool.key):
            self._index.register(tool, backend, partition=partition)

    def register_many(
        self, items: Iterable[tuple[Tool, BackendRef | Sequence[BackendRef]]], *, partition: str | None = None
    ) -> None:
        self._index.register_many([(t, b) for t, b in items if not self._excluded(t.key)], partition=partition)

    def prepare_many(
        self, items: Iterable[tuple[Tool, BackendRef | Sequence[BackendRef]]], *, partition: str | None = None
    ) -> PreparedBatch:
        # Filtered as register_many is (register_prepared, forwarded, registers what this let through).
        return self._index.prepare_many([(t, b) for t, b in items if not self._excluded(t.key)], partition=partition)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)

    def __len__(self) -> int:
        return len(self._index)


class Toolbox:
    """Index, docs store, runner, executor and the code-mode core, wired together with one lifetime.

    Args:
        backends: Backends to attach (``MCPBackend`` per server, ``LocalBackend``, providers).
            The toolbox owns them: :meth:`aclose` closes them.
        settings: Server-wide defaults (the config file's ``toolcode`` section).
        engine: An engine, or an engine name (an entry point of ``toolcode.engines``); overrides
            ``settings.engine``; ``None`` for the default sandbox.
        state: Where sessions, saved snippets and learned result shapes live; ``None`` opens
            the one ``settings.state`` names (default: a SQLite file in the user state
            directory, see :func:`toolcode.state.default_state_dir`). The toolbox closes a store
            it opened, not one it was given.

    Raises:
        ConfigurationError: If the engine or a setting is invalid.
        StateUnavailableError: If a configured state directory cannot be opened.
    """

    def __init__(
        self,
        backends: Sequence[Backend] = (),
        *,
        settings: Settings | None = None,
        engine: Engine | str | None = None,
        state: StateStore | None = None,
    ) -> None:
        self.settings: Settings = settings or Settings()
        self._owns_state = state is None
        self.state: StateStore = state if state is not None else _open_state(self.settings)
        """Where sessions, saved snippets and learned shapes live."""
        self.index: InMemoryIndex = self.settings.search.build_index()
        self.store: InMemoryStore = InMemoryStore(self.index)
        self._backends = list(backends)
        self.failed: dict[str, str] = {}
        """Backends that failed to connect, with the reason; a later successful :meth:`connect` clears
        its entry. Snippets and doors see each as an unavailable namespace (``server_unavailable``)."""
        stores = self.stores = Stores.of(self.state, self.index, self.settings)
        """Sessions, saved snippets, paused runs, stored results, the audit log and the quarantine."""
        self.runner = DefaultRunner(self.index, [*self._backends, stores.snippets.backend], store=self.store)
        self.services: Services = Services.of(
            self.index,
            self.runner,
            docs=self.store,
            engine=engine,
            settings=self.settings,
            stores=stores,
            unavailable=self.failed,
        )
        """Everything the core runs on, built once."""
        self.codemode: CodeMode = CodeMode(self.services)
        """The code-mode core: every operation, as every door offers it."""
        self._shapes = ShapeSync(self.store, self.state)
        info = self.services.engine.info
        if not info.sandboxed:
            log.warning("toolbox.unsandboxed_engine", warning=UNSANDBOXED_WARNING.format(engine=info.name))
        self._closed = False
        self._stack = AsyncExitStack()
        self._runner_entered = False

    @classmethod
    def from_config(
        cls,
        config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        *,
        extra_backends: Sequence[Backend] = (),
        engine: Engine | str | None = None,
        strict: bool = False,
        settings: Settings | None = None,
        state: StateSettings | None = None,
    ) -> Toolbox:
        """Build a toolbox from a config file or mapping (``mcpServers`` and ``toolcode``).

        Each ``mcpServers`` entry becomes a backend: an MCP server, or an HTTP API described
        by an OpenAPI document (an entry with ``"openapi"``, see :class:`toolrun.OpenAPIProvider`).

        Args:
            config: Path to the JSON file, the parsed mapping, or ``None`` for no servers.
            extra_backends: More backends (local functions, providers) to attach as well.
            engine: Engine (or name); overrides the config's ``toolcode.engine``.
            strict: Fail :meth:`connect` when a server cannot start (sets ``settings.strict``).
            settings: Use these settings instead of the config's ``toolcode`` section.
            state: Where state lives, instead of the settings' ``state`` (``--state-dir``,
                ``--no-state``).

        Returns:
            A toolbox, not yet connected (use ``async with`` or :meth:`connect`).

        Raises:
            toolrun.exceptions.ConfigError: If a server entry is invalid (names the server and field).
            ConfigurationError: If the file cannot be read, or the ``toolcode`` section is invalid.
        """
        backends: list[Backend] = []
        data: Mapping[str, Any] | None = None
        if config is not None:
            data = read_config(config)
            # Relative OpenAPI document paths start from the config file's folder.
            base_dir = None if isinstance(config, Mapping) else Path(config).absolute().parent
            backends.extend(backends_from_config(load_config(data, base_dir=base_dir)))
        chosen = settings if settings is not None else load_settings(data)
        excludes, early = list(chosen.exclude), dict(chosen.policy.speculate)
        # Inside a server's entry, "exclude": ["delete_*"] hides that server's tools by name, and
        # "speculate": false starts none of its reads before the code reaches them.
        for name, raw in _server_entries(data, "exclude"):
            if not is_list(raw) or not all(isinstance(g, str) for g in raw):
                raise ConfigurationError(f"mcpServers.{name}.exclude", "must be a list of tool-name globs")
            excludes.extend(f"{name}:{g}" for g in raw)
        for name, raw in _server_entries(data, "speculate"):
            if not isinstance(raw, bool):
                raise ConfigurationError(f"mcpServers.{name}.speculate", "must be true or false")
            early.setdefault(f"{name}:*", raw)
        update: dict[str, Any] = {
            "exclude": tuple(excludes),
            "policy": chosen.policy.model_copy(update={"speculate": early}),
        }
        if state is not None:
            update["state"] = state
        if strict:
            update["strict"] = True
        return cls([*backends, *extra_backends], settings=chosen.model_copy(update=update), engine=engine)

    @property
    def backends(self) -> list[Backend]:
        """The attached backends."""
        return list(self._backends)

    async def connect(self, progress: ConnectProgress | None = None) -> None:
        """Start every backend and register its tools, concurrently.

        Args:
            progress: Called as each backend starts connecting, becomes ready, or fails.

        Cancelling it stops it at once. What it started (the runner, its backends) stays open
        until :meth:`aclose`, also when it raises or is cancelled; ``async with`` closes it then.

        Raises:
            toolrun.exceptions.ToolRunError: With ``settings.strict``, the first backend that failed.
        """

        async def emit(event: ConnectEvent) -> None:
            if progress is not None and (out := progress(event)) is not None:
                await out

        # The runner enters the backends that hold sessions (MCP); it must be entered, and later
        # exited, by the task that owns the toolbox.
        stores = self.stores
        if not self._runner_entered:
            await self._stack.enter_async_context(self.runner)
            self._runner_entered = True
            try:
                await stores.snippets.sync()
                await self._shapes.load()
                if stores.quarantine is not None:
                    await stores.quarantine.sync()
            except StateUnavailableError as e:
                log.warning("toolbox.state_unavailable", store=self.state.name, error=str(e)[:300])
            tg = await self._stack.enter_async_context(anyio.create_task_group())
            tg.start_soon(stores.snippets.keep_in_sync)
            tg.start_soon(self._shapes.keep_in_sync)
            if stores.quarantine is not None:
                tg.start_soon(stores.quarantine.keep_in_sync)
            self._stack.callback(tg.cancel_scope.cancel)
        errors: list[BaseException] = []
        target: Any = _ExcludingIndex(self.index, self.settings.excluded) if self.settings.exclude else self.index

        async def attach(backend: Backend) -> None:
            name = _backend_name(backend)
            await emit(ConnectEvent(name, "connecting"))
            started = time.perf_counter()
            try:
                tools = await backend.attach(target)
            except (ToolRunError, ToolIndexError) as exc:  # the Backend contract: nothing else escapes attach
                # The reason alone: the model reads it as "server 'name' is unavailable: <reason>".
                reason = exc.reason if isinstance(exc, BackendUnavailableError) else str(exc)
                self.failed[name] = reason = reason or type(exc).__name__
                log.warning("toolbox.backend_failed", backend=name, error=reason)
                errors.append(exc)
                event = ConnectEvent(name, "failed", error=reason, duration_ms=(time.perf_counter() - started) * 1000)
            else:
                ms = (time.perf_counter() - started) * 1000
                self.failed.pop(name, None)
                shown = sum(1 for t in tools if not self.settings.excluded(t.key))
                log.info("toolbox.backend_ready", backend=name, tools=shown, duration_ms=round(ms, 1))
                event = ConnectEvent(name, "ready", tools=shown, duration_ms=ms)
            await emit(event)

        async with anyio.create_task_group() as tg:
            for backend in self._backends:
                tg.start_soon(attach, backend)
        if errors and self.settings.strict:
            raise errors[0]

    async def execute(
        self,
        code: str,
        *,
        input: Any = None,
        options: ExecuteOptions | Mapping[str, Any] | None = None,
        on_tool_call: Callable[[ToolCallRecord], Awaitable[None]] | None = None,
        session: str | None = None,
    ) -> ExecuteResult:
        """Run a snippet (the Python form: the full result, or an exception).

        Use :meth:`CodeMode.execute` (``box.codemode.execute``) for the outcome model the
        doors return, where a failure is data rather than an exception.

        Args:
            code: Python source; it sets ``__out`` or ends with an expression.
            input: Any JSON value the snippet reads as ``input``.
            options: This run's options (:class:`~toolcode.ExecuteOptions` or its JSON form).
            on_tool_call: Awaited after each tool call completes, with its record.
            session: Run in this named session: variables, functions and imports persist from
                run to run, in the state store.

        Returns:
            The result: value, stdout, stderr, trace, limits report.

        Raises:
            toolcode.exceptions.ApprovalRequiredError: The run paused at a call the policy asks
                about (not a failure): decide with :meth:`resume` and its ``execution_id``.
            toolcode.exceptions.ToolCodeError: ``CodeExecutionError``, ``LimitExceededError``,
                ``InvalidArgumentsError`` or ``EngineError``; each carries the partial result.
        """
        return await self.codemode.run(code, input=input, options=options, on_tool_call=on_tool_call, session=session)

    def observe_tool_calls(self, callback: Callable[[ToolCallRecord], Awaitable[None]]) -> Callable[[], None]:
        """Be told of every tool call any snippet makes through this toolbox, whatever the door (auditing).

        Args:
            callback: Awaited with each completed call's record.

        Returns:
            A function that stops the observation.
        """
        return self.codemode.observe_tool_calls(callback)

    def resolve(self, tool_id: str) -> str:
        """The full id of a tool.

        Raises:
            ToolNotFoundError: If unknown (with the nearest names).
        """
        return self.index.get(tool_id).id

    async def aclose(self) -> None:
        """Close the executor, the runner and every backend; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            with anyio.CancelScope(shield=True):
                try:
                    await self._shapes.save()
                except StateUnavailableError as e:
                    log.warning("toolbox.shapes_not_saved", store=self.state.name, error=str(e)[:300])
                await self.services.aclose()
                if not self._runner_entered:
                    await self.runner.aclose()
        finally:
            # Outside the shield: the backends' task groups were entered before it, so they must
            # be exited in the scope that entered them (this closes the runner and its backends).
            try:
                await self._stack.aclose()
            finally:
                if self._owns_state:
                    with anyio.CancelScope(shield=True):
                        await self.state.aclose()

    async def __aenter__(self) -> Toolbox:
        try:
            await self.connect()
        except BaseException:
            # connect() entered the runner (its backends) and the state watchers' task group in
            # this task; a start-up that fails or is cancelled midway must leave them here, or they
            # outlive it and break the caller's cancel scopes.
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _open_state(settings: Settings) -> StateStore:
    """The store the settings name; the default folder falling back to memory when it cannot be used."""
    cfg = settings.state
    if cfg.memory or cfg.url is not None or cfg.dir is not None:
        return open_state_store(url=cfg.url, directory=cfg.dir, memory=cfg.memory)
    try:
        return open_state_store()
    except StateUnavailableError as e:
        log.warning(
            "toolbox.state_in_memory",
            reason=str(e),
            hint="set toolcode.state.dir (or --state-dir) to a writable folder to keep sessions and shapes",
        )
        return MemoryStateStore()


def _server_entries(data: Mapping[str, Any] | None, key: str) -> Iterator[tuple[str, Any]]:
    """``(server name, value)`` of each ``mcpServers`` entry that sets ``key``."""
    servers = as_mapping(data.get("mcpServers")) if data is not None else None
    for name, entry in (servers or {}).items():
        if (raw := (as_mapping(entry) or {}).get(key)) is not None:
            yield str(name), raw
