"""Parameters and the two seams, :class:`Tools` and :class:`Engine`; the results are in :mod:`toolcode._records`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from toolcode._modules import ModuleFunction
from toolcode._options import ExecuteOptions, ResolvedOptions
from toolcode._records import ExecuteResult, LimitsReport, OnToolCall, ToolCallRecord

__all__ = [
    "CallPaused",
    "Engine",
    "EngineInfo",
    "ExecuteParams",
    "ExecuteResult",
    "LimitsReport",
    "OnToolCall",
    "PausableEngine",
    "PauseState",
    "RunPaused",
    "SessionState",
    "Stream",
    "ToolCallRecord",
    "Tools",
]

Stream = Literal["stdout", "stderr"]


@dataclass(slots=True)
class SessionState:
    """A session's interpreter state, into and out of one run (engines whose ``info.sessions`` is true).

    The engine restores ``state`` before the run (``None``: a new, empty session) and, after
    it, sets ``kept`` to the state to store, whether the snippet succeeded or raised. When a
    limit stopped the run the engine sets neither and the session is reset.
    """

    name: str
    """The session's name."""
    key: str = ""
    """Identifies the session among all sessions (its owner and name)."""
    token: str | None = None
    """Identifies the state: ``state`` as the engine left it after its last run (an engine that
    still holds that exact state may skip restoring it); the engine sets a new one with ``kept``."""
    state: bytes | None = None
    """The state to restore (the engine's own opaque format)."""
    imports: tuple[str, ...] = ()
    """``tools`` import statements of earlier runs (what the check before the run assumes)."""
    kept: bytes | None = None
    """Set by the engine: the state after the run."""
    ran: bool = False
    """Set by the engine once the snippet started (a run refused before, say by the check, leaves
    the session as it was)."""
    paused: bool = False
    """Set by the engine when the run paused for a decision: the session is left as it was until
    the run is resumed (the paused run holds its own copy of the state)."""
    version: int = 0
    """The version of the session's record ``state`` was read from (``0``: none, a new session);
    set by the session, not the engine. A run that pauses keeps it: it is resumed only in the
    session as it left it."""


@dataclass(frozen=True, slots=True)
class ExecuteParams:
    """What to run, with this run's options (unset options take the executor's defaults).

    Engines read the resolved limits through the properties (``params.timeout`` ...): the
    executor hands them a copy with :attr:`resolved` set, so every value is concrete
    (``math.inf`` / ``sys.maxsize`` where a limit is switched off).
    """

    code: str
    """The snippet: Python source."""
    language: str = "python"
    """Only ``"python"`` is supported."""
    input: Any = None
    """Bound to the global ``input`` inside the snippet (any JSON value)."""
    options: ExecuteOptions = field(default_factory=ExecuteOptions)
    """Limits, the namespace filter and the trace detail of this run."""
    resolved: ResolvedOptions | None = None
    """The concrete options: when unset, the executor resolves :attr:`options` over its settings'
    limits before the engine sees the params; when set, they are taken as they are."""
    caller: str | None = None
    """Who the run is for (an authenticated HTTP caller, an MCP session): engines that share
    workers between callers count runs per caller (``MontyEngine``'s ``max_runs_per_caller``)."""
    session: SessionState | None = None
    """Run in this session: its variables, functions and imports persist from run to run."""

    @property
    def timeout(self) -> float | None:
        """Wall-clock seconds for the whole run, tool calls included."""
        return self.resolved.timeout if self.resolved is not None else self.options.timeout

    @property
    def max_tool_calls(self) -> int | None:
        """Tool calls allowed (each chain step and each fan-out call counts)."""
        return self.resolved.max_tool_calls if self.resolved is not None else self.options.max_tool_calls

    @property
    def max_chain_steps(self) -> int | None:
        """Steps allowed in one ``run_chain`` call."""
        return self.resolved.max_chain_steps if self.resolved is not None else self.options.max_chain_steps

    @property
    def max_output_chars(self) -> int | None:
        """One budget for value, stdout, stderr, error and trace; beyond it they are truncated."""
        return self.resolved.max_output_chars if self.resolved is not None else self.options.max_output_chars

    @property
    def allowed_namespaces(self) -> Sequence[str] | None:
        """When set, the snippet only sees tools in these namespaces."""
        return self.resolved.allowed_namespaces if self.resolved is not None else self.options.allowed_namespaces


@runtime_checkable
class Tools(Protocol):
    """The environment a snippet sees: the snippet globals answered by the host.

    Each method backs the snippet global of the same name (see
    :data:`toolcode.SNIPPET_GLOBALS`). Results are plain Python data (dicts, lists, str,
    numbers, ``None``) with the fields of the core's result models.

    Contract:
        - Concurrency: the async methods may be called from many tasks at once (fan-out);
          the trace stays in call order and counts stay exact.
        - Cancellation: cancelling a caller cancels its tool call.
        - Errors: a failing call or lookup, and an invalid argument, raise
          :class:`toolcode.exceptions.ToolError` (with its code); a tripped limit raises
          :class:`toolcode.exceptions.LimitExceededError` and stays tripped (every later call
          raises it too), so catching it does not get around it.
        - ``println`` and ``write`` are synchronous and never block.
    """

    async def search_tools(
        self, query: Any, limit: Any = 10, detail: Any = "summary", namespaces: Any = None
    ) -> dict[str, Any]:
        """Rank tools for a free-text query: ``{hits, hint}``."""
        ...

    async def list_tools(self, namespace: Any = None, cursor: Any = None, limit: Any = 100) -> dict[str, Any]:
        """One page of the catalog: ``{tools, next_cursor}``."""
        ...

    async def list_namespaces(self) -> dict[str, Any]:
        """All visible namespaces: ``{namespaces: [{name, tool_count}]}``."""
        ...

    async def describe_tool(self, tool_id: Any, level: Any = "schema") -> dict[str, Any]:
        """Documentation of one tool or a list of tools: ``{text, docs, errors}``."""
        ...

    async def list_tool_examples(self, tool_id: Any, max: Any = 3) -> dict[str, Any]:
        """Up to ``max`` usage examples of one tool: ``{id, examples}``."""
        ...

    async def run_tool(self, tool_id: Any, args: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        """Run one tool and return its value."""
        ...

    async def run_tools(self, calls: Sequence[Any]) -> list[Any]:
        """Run several tools concurrently; values in the order of ``calls``.

        Each call is ``(tool_id, args)``, ``[tool_id, args]``, ``{"tool_id": ..., "args": ...}``
        or a bare tool id.
        """
        ...

    async def run_chain(self, steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Run steps in order (``{tool_id, args, use_previous, on_error}``): ``{steps, aborted, final}``."""
        ...

    async def save_snippet(self, name: Any, code: Any, description: Any, input_schema: Any = None) -> dict[str, Any]:
        """Save a parameterised snippet as the tool ``snippets:<name>``: ``{name, tool_id, ...}``."""
        ...

    async def load_result(self, ref: Any) -> Any:
        """A stored result of this caller, whole (the value itself when it was a value)."""
        ...

    def println(self, *args: Any) -> None:
        """Print ``args`` to the run's stdout, separated by spaces, ending with a newline."""
        ...

    def write(self, stream: Stream, text: str) -> None:
        """Append raw text to the run's stdout or stderr (engines route ``print`` here)."""
        ...

    def modules(self) -> Mapping[str, Mapping[str, ModuleFunction]]:
        """The namespace modules this run may import (``from tools import <module>``).

        ``{module name: {function name: ModuleFunction}}``; the same object for the same run
        setup until the catalog changes, so an engine may cache what it builds from it.
        """
        ...

    async def call_function(self, module: str, function: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """Run the tool behind ``tools.<module>.<function>`` (keyword arguments only) and return its value."""
        ...


@dataclass(frozen=True, slots=True)
class EngineInfo:
    """What an engine is and what it guarantees."""

    name: str
    """Short name, e.g. ``"monty"``."""
    sandboxed: bool
    """Whether untrusted code is isolated from the host (no files, network, host objects)."""
    limits: Mapping[str, float | int] = field(default_factory=dict[str, float | int])
    """Engine-side limits beyond the executor's own, with their values (e.g. ``{"max_memory": 134217728}``)."""
    unsupported: Mapping[str, str] = field(default_factory=dict[str, str])
    """Conformance categories the engine declares unsupported, with the reason (e.g. ``{"escape": ...}``)."""
    sessions: bool = False
    """Whether the engine keeps sessions (``ExecuteParams.session``): restores and dumps state."""
    pauses: bool = False
    """Whether the engine can pause a run at a tool call that needs approval and resume it later
    (it implements :class:`PausableEngine`)."""


@runtime_checkable
class Engine(Protocol):
    """Runs one snippet against a :class:`Tools` environment.

    The :class:`~toolcode.Executor` owns limits, tracing and the result convention's
    checks; an engine only has to run code and route the snippet globals to ``tools``.

    Contract:
        - Globals: every name in :data:`toolcode.SNIPPET_GLOBALS` — the ``call`` ones routed
          to the ``tools`` method of the same name (and ``<name>_async`` awaitable variants
          where declared), ``println`` and ``print`` routed to ``tools.write``, ``input``
          (``params.input``), ``ToolError`` (catches failed calls) and ``tool_error_info``.
        - Modules: the package ``tools`` is importable, with one module per entry of
          ``tools.modules()``; calling a function routes to ``tools.call_function`` (awaited
          in place, or as an awaitable for the ``awaitable`` forms).
        - Result: ``__out`` if the snippet assigned it, else the trailing expression's
          value, else ``None``; returned as ``ExecuteResult.value`` (other fields may be
          left empty: the executor fills stdout, stderr, trace and limits).
        - Concurrency: ``execute`` may run many times at once on one engine.
        - Cancellation: cancelling ``execute`` stops the snippet (or abandons it, for an
          engine that cannot stop it; ``info`` must then say so) and returns promptly.
        - Limits: ``params`` arrives fully resolved (no ``None`` limits). The engine should
          honour ``params.timeout`` itself where it can; the executor also stops it from
          the host. Engine-side limits it enforces are listed in ``info.limits``.
        - Errors: :class:`~toolcode.exceptions.CodeExecutionError` for the snippet's own
          errors (line/column in the snippet's code), :class:`~toolcode.exceptions.LimitExceededError`
          for limits the engine enforces, :class:`~toolcode.exceptions.EngineError` for
          anything else; the executor wraps any other exception in ``EngineError``.
        - Sessions: an engine whose ``info.sessions`` is true restores ``params.session.state``
          before the snippet and sets ``params.session.kept`` after it (also when the snippet
          raised); ``__out`` and the trailing expression mean the same as in a fresh run.
        - Pauses: an engine whose ``info.pauses`` is true implements :class:`PausableEngine`:
          when a tool method raises :class:`CallPaused`, it raises :class:`RunPaused` holding
          the suspended run, and holds no worker for it.
        - Ownership: ``aclose`` releases workers; ``execute`` after ``aclose`` may restart them.
    """

    @property
    def info(self) -> EngineInfo:
        """Name and guarantees."""
        ...

    async def execute(self, params: ExecuteParams, tools: Tools) -> ExecuteResult:
        """Run ``params.code`` with ``tools`` behind the snippet globals."""
        ...

    async def aclose(self) -> None:
        """Release workers and other resources; idempotent."""
        ...


@dataclass(slots=True)
class PauseState:
    """A run suspended at a tool call that needs a decision: what the engine needs to continue it."""

    snapshot: bytes
    """The suspended interpreter (engine-specific bytes)."""
    drive: dict[str, Any]
    """JSON data the engine keeps beside the snapshot (calls in flight, their results)."""
    pending: list[Any]
    """The calls that wait (:class:`toolcode.calls.PendingCall`)."""
    line: int | None = None
    """1-based line of the snippet where it stopped."""


class CallPaused(Exception):  # a signal, not an error: nothing in a snippet can catch it
    """Raised by a tool method of :class:`Tools` when its call waits for a person's decision.

    An engine that pauses (``info.pauses``) stops the run there and raises :class:`RunPaused`;
    one that cannot never sees it (such calls fail with ``not_allowed`` instead).
    """

    def __init__(self, pending: list[Any]) -> None:
        self.pending = pending
        super().__init__(f"{len(pending)} call(s) wait for a decision")


class RunPaused(Exception):
    """Raised by a pausable engine instead of a result: the run waits at a tool call."""

    def __init__(self, state: PauseState) -> None:
        self.state = state
        super().__init__(f"paused at line {state.line}")


@runtime_checkable
class PausableEngine(Protocol):
    """An engine that can continue a paused run (``info.pauses``)."""

    async def resume(self, params: ExecuteParams, tools: Tools, state: PauseState) -> ExecuteResult:
        """Continue the run ``state`` holds: the waiting call is made again (now decided) and the run goes on.

        ``params`` is the run's (code, input, session); its timeout is what is left of the run's.
        Raises what :meth:`Engine.execute` raises, or :class:`RunPaused` again.
        """
        ...
