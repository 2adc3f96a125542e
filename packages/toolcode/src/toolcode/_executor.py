"""The :class:`Executor`: defaults, validation, limits, tracing and error mapping around an engine."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import anyio

from toolcode._limits import (
    MAX_TRACE_PAYLOAD_CHARS,
    CallBudget,
    OutputBuffer,
    PayloadBudget,
    as_json_data,
    check_json,
    fit_output_budget,
    json_text,
)
from toolcode._modules import ToolModules
from toolcode._operations import Operations
from toolcode._options import ExecuteOptions, ResolvedOptions
from toolcode._otel import run_span
from toolcode._paused import PausedRun, new_execution_id
from toolcode._policy import AuditEntry, Gate, Policy, literal_tool_ids
from toolcode._sessions import owner_of
from toolcode._tools import DefaultTools, DocStore
from toolcode._trace import Trace
from toolcode._typecheck import TypeChecker
from toolcode._unavailable import unavailable_reference

if TYPE_CHECKING:
    from toolcode._results import StoredResults
    from toolcode._snippets import SnippetLibrary
from toolcode._types import (
    Engine,
    ExecuteParams,
    ExecuteResult,
    LimitsReport,
    OnToolCall,
    PausableEngine,
    RunPaused,
    SessionState,
    Tools,
)
from toolcode._view import CatalogView
from toolcode.engines import load_engine
from toolcode.exceptions import (
    ApprovalRequiredError,
    CodeExecutionError,
    ConfigurationError,
    EngineError,
    InvalidArgumentsError,
    LimitExceededError,
    ToolCodeError,
    TypeCheckError,
)
from toolindex import Index, Tool, ToolIndexError
from toolrun import Runner

__all__ = ["Executor", "ExecutorConfig", "RunContext", "ToolsFactory", "current_run"]


@dataclass(frozen=True, slots=True)
class RunContext:
    """What one run's snippet environment is built from (see :data:`ToolsFactory`)."""

    options: ResolvedOptions
    budget: CallBudget
    trace: Trace
    output: OutputBuffer
    caller: str | None = None
    gate: Gate | None = None
    """The run's policy checkpoint (``None``: no policy, every call goes)."""


_current: ContextVar[RunContext | None] = ContextVar("toolcode_current_run", default=None)


def current_run() -> RunContext | None:
    """The run whose snippet is executing in this task (a tool it calls runs within it), or ``None``."""
    return _current.get()


ToolsFactory = Callable[[RunContext], Tools]
"""Builds the snippet environment of one run (the default builds :class:`~toolcode.DefaultTools`)."""


@dataclass(frozen=True, slots=True)
class ExecutorConfig:
    """Everything an :class:`Executor` needs; ``defaults`` are the options of every run."""

    index: Index
    """The tool catalog snippets search."""
    store: DocStore | None
    """Documentation store behind ``describe_tool`` / ``list_tool_examples`` (``tooldocs.InMemoryStore``)."""
    runner: Runner
    """Runs the tools (``toolrun.DefaultRunner``); the executor does not close it."""
    engine: Engine | str | None = None
    """An engine, an engine name from the ``toolcode.engines`` entry points, or ``None`` for ``MontyEngine``."""
    defaults: ExecuteOptions = field(default_factory=ExecuteOptions)
    """Options of every run that sets none (unset fields: the built-in defaults, see
    :data:`toolcode.DEFAULT_OPTIONS`)."""
    tools_factory: ToolsFactory | None = None
    """Builds each run's snippet environment; ``None`` for :class:`~toolcode.DefaultTools`."""
    modules: ToolModules | None = None
    """The catalog's namespace modules (names and stubs); ``None`` builds them from ``index``."""
    unavailable: Mapping[str, str] | None = None
    """Configured servers that failed to start, with the reason (``Toolbox.failed``, a live
    mapping): a snippet that names one fails with ``server_unavailable`` (see :class:`CatalogView`)."""


_LOOKUP_ERRORS = frozenset({"ModuleNotFoundError", "ImportError", "AttributeError", "NameError"})
"""What an engine raises for a module or module member that does not exist."""


class Executor:
    """Runs snippets: puts the index, docs and runner behind a ``Tools`` environment and hands it to an engine.

    ``execute`` raises on failure (:class:`~toolcode.exceptions.CodeExecutionError`,
    :class:`~toolcode.exceptions.LimitExceededError`, :class:`~toolcode.exceptions.InvalidArgumentsError`,
    :class:`~toolcode.exceptions.EngineError`); the error's ``result`` holds the partial run
    (stdout, stderr, the trace up to the failure). Safe for concurrent use: each run has its own
    counters, trace and output.

    Args:
        config: The executor's collaborators and default options.

    Raises:
        ConfigurationError: If a field of ``config`` is invalid (names the field).
    """

    def __init__(self, config: ExecutorConfig) -> None:
        for name in ("index", "runner"):
            if getattr(config, name) is None:
                raise ConfigurationError(name, "is required")
        if not isinstance(config.defaults, ExecuteOptions):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError("defaults", f"must be ExecuteOptions, got {type(config.defaults).__name__}")
        self._config = config
        self.modules: ToolModules = config.modules if config.modules is not None else ToolModules(config.index)
        """The catalog's namespaces as sandbox modules (``from tools import github``)."""
        self.checker: TypeChecker = TypeChecker(self.modules)
        """Checks a run's tool calls before it starts (``type_check="strict"``)."""
        self.snippets: SnippetLibrary | None = None
        """Saved snippets, for the snippet global ``save_snippet`` (set by :class:`~toolcode.Toolbox`)."""
        self.policy: Policy = Policy(modules=self.modules)
        """Tiers and decisions for every tool call from code (the default: destructive tools ask)."""
        self.quarantined: Callable[[Tool], bool] | None = None
        """Whether a tool is quarantined (``None``: quarantine is off)."""
        self.results: StoredResults | None = None
        """Stored results, for the snippet global ``load_result`` (set by :class:`~toolcode.Toolbox`)."""
        self.keep_chars: int = 0
        """Keep up to this many characters of a value or stdout that the output budget cuts, in
        ``ExecuteResult.full`` (0: keep nothing; set by :class:`~toolcode.Toolbox` from
        ``toolcode.results``)."""
        self.audit: Callable[[list[AuditEntry]], Awaitable[None]] | None = None
        """Receives each run's audit entries when it ends or pauses (``None``: not recorded)."""
        engine = config.engine
        self._owns_engine = engine is None or isinstance(engine, str)
        if engine is None or isinstance(engine, str):
            self._engine: Engine = load_engine(engine or "monty")
        elif isinstance(engine, Engine):  # pyright: ignore[reportUnnecessaryIsInstance]
            self._engine = engine
        else:
            raise ConfigurationError(
                "engine", f"must be an Engine or an engine name, got {type(engine).__name__} (see toolcode.Engine)"
            )

    @property
    def config(self) -> ExecutorConfig:
        """The configuration."""
        return self._config

    @property
    def engine(self) -> Engine:
        """The engine runs go to."""
        return self._engine

    def _resolve(self, params: ExecuteParams) -> ExecuteParams:
        if not isinstance(params, ExecuteParams):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidArgumentsError("params", f"expected ExecuteParams, got {type(params).__name__}")
        if not isinstance(params.code, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidArgumentsError("code", f"must be a string, got {type(params.code).__name__}")
        if params.language != "python":
            raise InvalidArgumentsError("language", f"only 'python' is supported, got {params.language!r}")
        if not isinstance(params.options, ExecuteOptions):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidArgumentsError("options", f"expected ExecuteOptions, got {type(params.options).__name__}")
        bad = check_json(params.input, "input")
        if bad is not None:
            raise InvalidArgumentsError("input", bad)
        if params.session is not None and not self._engine.info.sessions:
            raise InvalidArgumentsError(
                "session", f"engine {self._engine.info.name!r} does not keep sessions (the default engine, monty, does)"
            )
        resolved = params.options.resolve(self._config.defaults)
        return dataclasses.replace(params, resolved=resolved)

    def _view(self, allowed_namespaces: Sequence[str] | None) -> CatalogView:
        return CatalogView(self._config.index, allowed_namespaces, self._config.unavailable)

    def _named_down_server(
        self, code: str, allowed_namespaces: Sequence[str] | None, error: ToolCodeError
    ) -> ToolCodeError:
        """``error``, or ``server_unavailable`` when it is a failed import or lookup on a line naming a down server.

        Unchecked runs (``type_check="off"``) reach ``from tools import bad`` of a server that
        failed to start; the engine can only call the module missing.
        """
        if not (isinstance(error, CodeExecutionError) and error.exc_type in _LOOKUP_ERRORS and error.line is not None):
            return error
        down = unavailable_reference(code, self._view(allowed_namespaces), self.modules)
        return down if down is not None and down.line == error.line else error

    def _tools(self, ctx: RunContext) -> Tools:
        factory = self._config.tools_factory
        if factory is not None:
            return factory(ctx)
        c = self._config
        ops = Operations(
            self._view(ctx.options.allowed_namespaces),
            c.store,
            c.runner,
            budget=ctx.budget,
            trace=ctx.trace,
            modules=self.modules,
            gate=ctx.gate,
        )
        return DefaultTools(
            c.index,
            c.store,
            c.runner,
            budget=ctx.budget,
            trace=ctx.trace,
            output=ctx.output,
            operations=ops,
            modules=self.modules,
            snippets=self.snippets,
            results=self.results,
            caller=ctx.caller,
        )

    async def execute(
        self,
        params: ExecuteParams,
        *,
        on_tool_call: OnToolCall | None = None,
        within: RunContext | None = None,
        on_tool_start: Callable[[str], Awaitable[None]] | None = None,
        on_print: Callable[[str, str], None] | None = None,
    ) -> ExecuteResult:
        """Run one snippet.

        Args:
            params: The code and this run's options (unset options take the config's defaults).
            on_tool_call: Awaited as each tool call completes (progress reporting); its
                failures are logged and ignored.
            within: Run as part of this run (a saved snippet called from it): its options,
                call budget, trace and output, instead of this run's own (``params.options``
                and the listeners are then not used).
            on_tool_start: Awaited with the tool id as each tool call starts.
            on_print: Told of each write to stdout or stderr as it happens (``(stream, text)``);
                it must not block.

        Returns:
            The result: value, stdout, stderr, the trace, duration and a limits report.

        Raises:
            InvalidArgumentsError: If a parameter or option is invalid (names the field).
            TypeCheckError: If the snippet calls its tools wrongly (found before anything ran;
                every problem in ``diagnostics``).
            CodeExecutionError: If the snippet has a syntax error or raises (line, column,
                type, message; an uncaught tool failure names the tool and keeps its code), or
                its result is not JSON data.
            LimitExceededError: If a limit stopped the run (which limit, configured, reached).
            EngineError: If the engine failed for a reason that is not the snippet's.
        """
        p = self._resolve(params)
        if within is not None:
            p = dataclasses.replace(p, resolved=within.options, caller=within.caller)
            ctx = within
        else:
            opts = p.resolved
            assert opts is not None
            ctx = self._context(opts, on_tool_call, p.caller, None)
            ctx.trace.on_start = on_tool_start
            ctx.output.on_write = on_print
        return await self._run(p, ctx, None, owns_audit=within is None)

    def _context(
        self, opts: ResolvedOptions, on_tool_call: OnToolCall | None, caller: str | None, paused: PausedRun | None
    ) -> RunContext:
        allowance = min(MAX_TRACE_PAYLOAD_CHARS, 4 * opts.max_output_chars)
        trace = Trace(on_tool_call, PayloadBudget(allowance))
        output = OutputBuffer(min(max(opts.max_output_chars, self.keep_chars), MAX_TRACE_PAYLOAD_CHARS))
        budget = CallBudget(opts.max_tool_calls, opts.max_chain_steps)
        gate = Gate(
            self.policy,
            self._view(opts.allowed_namespaces),
            can_pause=self._engine.info.pauses and isinstance(self._engine, PausableEngine),
            quarantined=self.quarantined,
            caller=caller,
            audit=[] if self.audit is not None else None,
            approvals=paused.approvals if paused is not None else None,
            execution_id=paused.execution_id if paused is not None else new_execution_id(),
        )
        if paused is not None:
            trace.restore(paused.trace)
            output.write("stdout", paused.stdout)
            output.write("stderr", paused.stderr)
            budget.calls = paused.calls
        return RunContext(opts, budget, trace, output, caller, gate)

    async def resume(
        self,
        paused: PausedRun,
        *,
        on_tool_call: OnToolCall | None = None,
        session: SessionState | None = None,
        on_tool_start: Callable[[str], Awaitable[None]] | None = None,
        on_print: Callable[[str, str], None] | None = None,
    ) -> ExecuteResult:
        """Continue a paused run from the call it stopped at (its decision already applied).

        Args:
            paused: The run, as :class:`~toolcode.exceptions.ApprovalRequiredError` gave it, with
                the decision recorded (:meth:`toolcode._paused.PausedRun.apply`).
            on_tool_call: Awaited as each tool call completes.
            session: The run's session, when it runs in one (its state is stored afterwards).
            on_tool_start: Awaited with the tool id as each tool call starts.
            on_print: Told of each write to stdout or stderr as it happens.

        Returns:
            The result of the whole run: the trace holds the calls before the pause too.

        Raises:
            ApprovalRequiredError: If it stops again at another call that needs a decision.
            EngineError: If the engine cannot continue paused runs.
            ToolCodeError: Whatever :meth:`execute` raises.
        """
        if not isinstance(self._engine, PausableEngine):
            raise EngineError(self._engine.info.name, "this engine cannot continue paused runs")
        p = ExecuteParams(
            code=paused.code,
            input=paused.input,
            caller=paused.caller,
            session=session,
            resolved=paused.options,
        )
        ctx = self._context(paused.options, on_tool_call, paused.caller, paused)
        ctx.trace.on_start = on_tool_start
        ctx.output.on_write = on_print
        return await self._run(p, ctx, paused, owns_audit=True)

    async def _run(
        self, p: ExecuteParams, ctx: RunContext, paused: PausedRun | None, *, owns_audit: bool
    ) -> ExecuteResult:
        if not owns_audit:  # a saved snippet's run: its calls are children of the call that started it
            return await self._run_inner(p, ctx, paused, owns_audit=owns_audit)
        attributes = {"toolcode.engine": self._engine.info.name, "toolcode.session": p.session is not None}
        with run_span("toolcode.resume" if paused is not None else "toolcode.execute", attributes) as span:
            try:
                result = await self._run_inner(p, ctx, paused, owns_audit=owns_audit)
            except ToolCodeError as e:
                if isinstance(e, LimitExceededError):
                    span.event("limit", {"toolcode.limit": e.limit})
                if isinstance(e, ApprovalRequiredError):
                    tool_ids = [c.tool_id for c in e.paused.pending]
                    span.event("approval_required", {"toolcode.tool_ids": tool_ids})
                    span.outcome(None)
                else:
                    span.outcome(e.code.value)
                raise
            span.outcome(None)
            return result

    async def _run_inner(
        self, p: ExecuteParams, ctx: RunContext, paused: PausedRun | None, *, owns_audit: bool
    ) -> ExecuteResult:
        opts, budget, trace, output = ctx.options, ctx.budget, ctx.trace, ctx.output
        info = self._engine.info
        tools = self._tools(ctx)
        applied: dict[str, float | int] = dict(opts.applied())
        applied.update(info.limits)
        before = paused.elapsed if paused is not None else 0.0
        # The time limit counts running time: what ran before a pause is taken off.
        remaining = max(0.0, opts.timeout - before)
        if paused is not None and remaining != opts.timeout:
            p = dataclasses.replace(p, resolved=dataclasses.replace(opts, timeout=max(remaining, 0.001)))

        t0 = time.perf_counter()
        error: ToolCodeError | None = None
        value: Any = None
        with anyio.move_on_after(remaining) as scope:
            try:
                if paused is None and opts.type_check == "strict":
                    view = self._view(opts.allowed_namespaces)
                    down = unavailable_reference(p.code, view, self.modules)
                    if down is not None:
                        raise down
                    preamble = p.session.imports if p.session is not None else ()
                    found = await self.checker.check(p.code, view, preamble=preamble)
                    if found:
                        raise TypeCheckError(found)
                token = _current.set(ctx)
                try:
                    if paused is None:
                        value = (await self._engine.execute(p, tools)).value
                    else:
                        assert isinstance(self._engine, PausableEngine)
                        value = (await self._engine.resume(p, tools, paused.state)).value
                finally:
                    _current.reset(token)
            except RunPaused as e:
                error = self._paused(p, ctx, e, paused, before + time.perf_counter() - t0)
            except ToolCodeError as e:
                error = self._named_down_server(p.code, opts.allowed_namespaces, e)
            except Exception as e:  # an engine is pluggable code; anything it leaks is its failure
                error = EngineError(info.name, f"{type(e).__name__}: {e}")
                error.__cause__ = e
        elapsed = before + time.perf_counter() - t0
        if scope.cancelled_caught:
            error = LimitExceededError("timeout", opts.timeout, round(elapsed, 3), "stopped by the host")
        elif budget.tripped is not None and (error is None or isinstance(error, CodeExecutionError)):
            # The snippet may have caught the limit error; the run is stopped all the same.
            error = budget.tripped
        if error is None:
            bad = check_json(value)
            if bad is not None:
                error = CodeExecutionError("TypeError", bad)
                value = None
            else:
                value = as_json_data(value)
        if owns_audit and ctx.gate is not None and ctx.gate.audit and self.audit is not None:
            entries, ctx.gate.audit[:] = list(ctx.gate.audit), []
            with anyio.CancelScope(shield=True):
                await self.audit(entries)

        stopped_by = error.limit if isinstance(error, LimitExceededError) else None
        fitted = fit_output_budget(
            value,
            output.text("stdout"),
            output.text("stderr"),
            trace.records(),
            opts.max_output_chars,
            output.dropped,
            str(error) if error is not None else None,
        )
        truncated = fitted.truncated
        if trace.payloads is not None and trace.payloads.dropped and "trace" not in truncated:
            truncated = (*truncated, "trace")
        full: dict[str, str] = {}
        if self.keep_chars and error is None:
            if "value" in truncated:
                text = json_text(value)  # what the cut's marker counted: the stored text is its whole
                if len(text) <= self.keep_chars:
                    full["value"] = text
            if "stdout" in truncated:
                full["stdout"] = output.text("stdout")
        result = ExecuteResult(
            value=fitted.value if error is None else None,
            stdout=fitted.stdout,
            stderr=fitted.stderr,
            tool_calls=fitted.tool_calls,
            duration_ms=elapsed * 1000.0,
            limits=LimitsReport(
                applied=applied,
                tool_calls=budget.calls,
                output_chars=fitted.total_chars,
                stopped_by=stopped_by,
                truncated=truncated,
            ),
            full=full,
        )
        if error is not None:
            error.result = result
            raise error
        return result

    def _paused(
        self, p: ExecuteParams, ctx: RunContext, e: RunPaused, before: PausedRun | None, elapsed: float
    ) -> ApprovalRequiredError:
        """The run stopped at a call that needs a decision: everything needed to continue it."""
        gate = ctx.gate
        assert gate is not None
        if before is not None:
            may_call = before.may_call
        else:
            view = gate.view

            def known(tool_id: str) -> bool:
                try:
                    return view.visible(view.index.get(tool_id).namespace)
                except ToolIndexError:  # a malformed or unknown id is simply not a tool
                    return False

            may_call = literal_tool_ids(p.code, self.modules, known)[0]
        run = PausedRun(
            execution_id=gate.execution_id or new_execution_id(),
            owner=owner_of(p.caller),
            caller=p.caller,
            code=p.code,
            input=p.input,
            options=ctx.options,
            session=p.session.name if p.session is not None else None,
            state=e.state,
            approvals=gate.approvals,
            trace=list(ctx.trace.records()),
            stdout=ctx.output.text("stdout"),
            stderr=ctx.output.text("stderr"),
            calls=ctx.budget.calls,
            elapsed=elapsed,
            may_call=may_call[:50],
            created=before.created if before is not None else time.time(),
        )
        return ApprovalRequiredError(run)

    async def aclose(self) -> None:
        """Close the type checker, and the engine if the executor created it; idempotent. The runner is not closed."""
        await self.checker.aclose()
        if self._owns_engine:
            await self._engine.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
