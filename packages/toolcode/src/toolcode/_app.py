"""The glue every front door needs: a :class:`Toolbox` of index, docs, runner and executor.

A toolbox is built from an ``mcpServers`` config file and/or backends given in code (local
functions, providers), connects every backend (reporting progress as each server comes up),
and closes everything on exit::

    async with Toolbox.from_config("mcp.json") as box:
        result = await box.execute("__out = run_tool('time:get_current_time', {'timezone': 'UTC'})")
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import anyio
import structlog

from toolcode._executor import Executor, ExecutorConfig
from toolcode._types import ExecuteParams, ExecuteResult, ToolCallRecord
from toolcode.exceptions import ConfigurationError
from tooldocs import InMemoryStore
from toolindex import InMemoryIndex, ToolIndexError
from toolrun import Backend, DefaultRunner, MCPBackend, ToolRunError, load_config

__all__ = ["ConnectEvent", "ConnectProgress", "Toolbox"]

log = structlog.get_logger("toolcode.app")


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
    for attr in ("name", "server", "provider_id"):
        value = getattr(backend, attr, None)
        if isinstance(value, str) and value:
            return value
    return backend.kind


class Toolbox:
    """Index, docs store, runner and executor wired together, with one lifetime.

    Args:
        backends: Backends to attach (``MCPBackend`` per server, ``LocalBackend``, providers).
            The toolbox owns them: :meth:`aclose` closes them.
        engine: Engine name (an entry point of ``toolcode.engines``) or ``None`` for the default.
        strict: When ``True`` a backend that fails to connect aborts :meth:`connect`; when
            ``False`` (the default) it is reported, logged and skipped so the rest stay usable.
        executor_options: Extra :class:`~toolcode.ExecutorConfig` fields (limits, defaults).
    """

    def __init__(
        self,
        backends: Sequence[Backend] = (),
        *,
        engine: str | None = None,
        strict: bool = False,
        **executor_options: Any,
    ) -> None:
        self.index: InMemoryIndex = InMemoryIndex()
        self.store: InMemoryStore = InMemoryStore(self.index)
        self._backends = list(backends)
        self.runner: DefaultRunner = DefaultRunner(self.index, self._backends, store=self.store)
        self._engine_name = engine
        self._executor_options = executor_options
        self.executor: Executor = self._make_executor()
        self._strict = strict
        self._observers: list[Callable[[ToolCallRecord], Awaitable[None]]] = []
        self.failed: dict[str, str] = {}
        """Backends that failed to connect, with the reason."""
        self._closed = False
        self._stack = AsyncExitStack()
        self._runner_entered = False

    @classmethod
    def from_config(
        cls,
        config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        *,
        extra_backends: Sequence[Backend] = (),
        engine: str | None = None,
        strict: bool = False,
        **executor_options: Any,
    ) -> Toolbox:
        """Build a toolbox from an ``{"mcpServers": {...}}`` file or mapping.

        Args:
            config: Path to the JSON file, the parsed mapping, or ``None`` for no servers.
            extra_backends: More backends (local functions, providers) to attach as well.
            engine: Engine name, or ``None`` for the default.
            strict: Fail :meth:`connect` when a server cannot start.
            **executor_options: Extra executor configuration.

        Returns:
            A toolbox, not yet connected (use ``async with`` or :meth:`connect`).

        Raises:
            toolrun.exceptions.ConfigError: If the config is invalid (names the server and field).
            FileNotFoundError: If the file does not exist.
        """
        backends: list[Backend] = []
        if config is not None:
            source: Any = Path(config) if isinstance(config, str | os.PathLike) else config
            servers = load_config(source).enabled()
            backends.extend(MCPBackend(name, server) for name, server in servers.items())
        backends.extend(extra_backends)
        return cls(backends, engine=engine, strict=strict, **executor_options)

    def _make_executor(self) -> Executor:
        try:
            config = ExecutorConfig(
                index=self.index,
                store=self.store,
                runner=self.runner,
                engine=self._engine_name,
                **self._executor_options,
            )
        except TypeError as exc:
            raise ConfigurationError("executor_options", str(exc)) from exc
        return Executor(config)

    @property
    def backends(self) -> list[Backend]:
        """The attached backends."""
        return list(self._backends)

    async def connect(self, progress: ConnectProgress | None = None) -> None:
        """Start every backend and register its tools, concurrently.

        Args:
            progress: Called as each backend starts connecting, becomes ready, or fails.

        Raises:
            toolrun.exceptions.ToolRunError: With ``strict=True``, the first backend that failed.
        """

        async def emit(event: ConnectEvent) -> None:
            if progress is not None:
                out = progress(event)
                if out is not None:
                    await out

        # The runner enters the backends that hold sessions (MCP); it must be entered, and later
        # exited, by the task that owns the toolbox.
        if not self._runner_entered:
            await self._stack.enter_async_context(self.runner)
            self._runner_entered = True
        errors: list[BaseException] = []

        async def attach(backend: Backend) -> None:
            name = _backend_name(backend)
            await emit(ConnectEvent(name, "connecting"))
            started = time.perf_counter()
            try:
                tools = await backend.attach(self.index)
            except (ToolRunError, ToolIndexError) as exc:  # the Backend contract: nothing else escapes attach
                ms = (time.perf_counter() - started) * 1000
                self.failed[name] = str(exc) or type(exc).__name__
                log.warning("backend failed to connect", backend=name, error=str(exc))
                errors.append(exc)
                await emit(ConnectEvent(name, "failed", error=self.failed[name], duration_ms=ms))
                return
            ms = (time.perf_counter() - started) * 1000
            log.info("backend ready", backend=name, tools=len(tools), duration_ms=round(ms, 1))
            await emit(ConnectEvent(name, "ready", tools=len(tools), duration_ms=ms))

        async with anyio.create_task_group() as tg:
            for backend in self._backends:
                tg.start_soon(attach, backend)
        if errors and self._strict:
            raise errors[0]

    async def execute(
        self,
        code: str,
        *,
        input: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        max_tool_calls: int | None = None,
        namespaces: Sequence[str] | None = None,
        on_tool_call: Callable[[ToolCallRecord], Awaitable[None]] | None = None,
    ) -> ExecuteResult:
        """Run a snippet.

        Args:
            code: Python source; it sets ``__out`` or ends with an expression.
            input: Data the snippet reads as ``input``.
            timeout: Seconds for the whole run (the executor's default when ``None``).
            max_tool_calls: Stop after this many tool calls (default when ``None``).
            namespaces: Only these namespaces are visible and callable.
            on_tool_call: Awaited after each tool call completes, with its record.

        Returns:
            The result: value, stdout, trace.

        Raises:
            toolcode.exceptions.ToolCodeError: ``CodeExecutionError``, ``LimitExceededError``,
                ``ConfigurationError`` or ``EngineError``; each carries the partial result.
        """
        params = ExecuteParams(
            code=code,
            input=dict(input) if input is not None else None,
            timeout=timeout,
            max_tool_calls=max_tool_calls,
            allowed_namespaces=list(namespaces) if namespaces is not None else None,
        )
        observers = [*self._observers, *([on_tool_call] if on_tool_call is not None else [])]

        async def notify(record: ToolCallRecord) -> None:
            for observer in observers:
                await observer(record)

        return await self.executor.execute(params, on_tool_call=notify if observers else None)

    def observe_tool_calls(self, callback: Callable[[ToolCallRecord], Awaitable[None]]) -> Callable[[], None]:
        """Be told of every tool call any snippet makes through this toolbox (e.g. for auditing).

        Args:
            callback: Awaited with each completed call's record.

        Returns:
            A function that stops the observation.
        """
        self._observers.append(callback)

        def stop() -> None:
            if callback in self._observers:
                self._observers.remove(callback)

        return stop

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
                aclose = getattr(self.executor, "aclose", None)
                if aclose is not None:
                    await aclose()
                if not self._runner_entered:
                    await self.runner.aclose()
        finally:
            # Outside the shield: the backends' task groups were entered before it, so they must
            # be exited in the scope that entered them (this closes the runner and its backends).
            await self._stack.aclose()

    async def __aenter__(self) -> Toolbox:
        await self.connect()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
