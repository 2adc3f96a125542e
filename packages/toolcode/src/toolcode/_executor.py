"""The :class:`Executor`: one run path — the check, the engine, limits, the trace, pauses — for every run.

A fresh run, a paused run resumed from its snapshot, and a saved snippet run within the run that
called it all go down :meth:`Executor._run`: it builds the run's call stack once
(:func:`toolcode.calls.build`), hands the engine a :class:`~toolcode.Tools` environment over it,
and turns whatever the run ended with into an :class:`~toolcode.ExecuteResult` or an error that
carries one.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Self

import anyio
import anyio.to_thread

from toolcode._audit import AuditTrail
from toolcode._data import as_json_data, check_json
from toolcode._limits import (
    MAX_TRACE_PAYLOAD_CHARS,
    CallBudget,
    OutputBuffer,
    PayloadBudget,
    fit_output_budget,
)
from toolcode._offload import run_here, runs_for
from toolcode._operations import Operations
from toolcode._options import ExecuteOptions, ResolvedOptions
from toolcode._otel import run_span
from toolcode._paused_run import PausedRun, new_execution_id
from toolcode._saved_snippet import SavedSnippet
from toolcode._services import Services
from toolcode._sessions import owner_of
from toolcode._snippets import MAX_NESTING
from toolcode._tools import DefaultTools
from toolcode._trace import Trace
from toolcode._types import ExecuteParams, ExecuteResult, LimitsReport, OnToolCall, PausableEngine, RunPaused
from toolcode._unavailable import unavailable_reference
from toolcode._view import CatalogView
from toolcode.calls import Checkpoint, Early, Scope, build, cannot_pause, early_calls, literal_tool_ids, pause
from toolcode.exceptions import (
    ApprovalRequiredError,
    CodeExecutionError,
    EngineError,
    InvalidArgumentsError,
    LimitExceededError,
    ToolCodeError,
    TypeCheckError,
)
from tooldocs import json_text
from toolindex import ToolIndexError

__all__ = ["Executor", "Listeners"]

_MANY_RECORDS: Final = 1_000
"""A run's trace past this many calls is fitted to the output budget in a worker thread."""
_LOOKUP_ERRORS: Final = frozenset({"ModuleNotFoundError", "ImportError", "AttributeError", "NameError"})
"""What an engine raises for a module or module member that does not exist."""


@dataclass(frozen=True, slots=True)
class Listeners:
    """Who hears of a run as it goes (a door's progress reporting); each may be ``None``."""

    on_tool_call: OnToolCall | None = None
    """Awaited as each tool call completes."""
    on_tool_start: Callable[[str], Awaitable[None]] | None = None
    """Awaited with the tool id as each tool call starts."""
    on_print: Callable[[str, str], None] | None = None
    """Told of each write to stdout or stderr as it happens (``(stream, text)``); must not block."""


NO_LISTENERS: Final = Listeners()


@dataclass(frozen=True, slots=True)
class _Run:
    """One run's state; a saved snippet run within it shares everything but ``depth``."""

    options: ResolvedOptions
    budget: CallBudget
    trace: Trace
    output: OutputBuffer
    checkpoint: Checkpoint
    caller: str | None
    depth: int = 0


class Executor:
    """Runs snippets: the check before the run, the engine, the limits, the trace, pauses and errors.

    ``execute`` and ``resume`` raise on failure (:class:`~toolcode.exceptions.CodeExecutionError`,
    :class:`~toolcode.exceptions.LimitExceededError`, :class:`~toolcode.exceptions.TypeCheckError`,
    :class:`~toolcode.exceptions.InvalidArgumentsError`, :class:`~toolcode.exceptions.EngineError`,
    :class:`~toolcode.exceptions.ApprovalRequiredError` for a pause); the error's ``result`` holds
    the partial run (stdout, stderr, the trace up to the failure). Safe for concurrent use: each
    run has its own counters, trace and output.

    Args:
        services: The catalog, runner, engine, policy and stores (see :meth:`Services.of`).
    """

    def __init__(self, services: Services) -> None:
        self.services = services
        self._pausable = services.engine.info.pauses and isinstance(services.engine, PausableEngine)

    @property
    def engine(self) -> Any:
        """The engine runs go to."""
        return self.services.engine

    async def execute(self, params: ExecuteParams, listen: Listeners = NO_LISTENERS) -> ExecuteResult:
        """Run one snippet.

        Args:
            params: The code and this run's options (unset options take the settings' limits).
            listen: Who hears of the run as it goes.

        Returns:
            The result: value, stdout, stderr, the trace, duration and a limits report.

        Raises:
            InvalidArgumentsError: If a parameter or option is invalid (names the field).
            TypeCheckError: If the snippet calls its tools wrongly (found before anything ran).
            CodeExecutionError: If the snippet has a syntax error or raises, or its result is not JSON data.
            LimitExceededError: If a limit stopped the run (which limit, configured, reached).
            ApprovalRequiredError: If it reached a call that waits for a person (the paused run inside).
            EngineError: If the engine failed for a reason that is not the snippet's.
        """
        p = self._resolve(params)
        assert p.resolved is not None
        return await self._run(p, self._start(p.resolved, p.caller, listen, None), None)

    async def resume(self, paused: PausedRun, session: Any = None, listen: Listeners = NO_LISTENERS) -> ExecuteResult:
        """Continue a paused run from the call it stopped at (its decision already applied).

        Args:
            paused: The run, with the decision recorded (:meth:`~toolcode._paused_run.PausedRun.apply`).
            session: The run's session (:class:`~toolcode.SessionState`), when it runs in one.
            listen: Who hears of the run as it goes.

        Returns:
            The result of the whole run: the trace holds the calls before the pause too.

        Raises:
            ApprovalRequiredError: If it stops again at another call that needs a decision.
            EngineError: If the engine cannot continue paused runs.
            ToolCodeError: Whatever :meth:`execute` raises.
        """
        if not isinstance(self.services.engine, PausableEngine):
            raise EngineError(self.services.engine.info.name, "this engine cannot continue paused runs")
        p = ExecuteParams(
            code=paused.code, input=paused.input, caller=paused.caller, session=session, resolved=paused.options
        )
        return await self._run(p, self._start(paused.options, paused.caller, listen, paused), paused)

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
        info = self.services.engine.info
        if params.session is not None and not info.sessions:
            raise InvalidArgumentsError(
                "session", f"engine {info.name!r} does not keep sessions (the default engine, monty, does)"
            )
        if params.resolved is not None:
            return params
        return dataclasses.replace(params, resolved=params.options.resolve(self.services.settings.limits))

    def _start(self, opts: ResolvedOptions, caller: str | None, listen: Listeners, paused: PausedRun | None) -> _Run:
        s = self.services
        keep = s.settings.results.max_chars if s.settings.results.enabled else 0
        trace = Trace(listen.on_tool_call, PayloadBudget(min(MAX_TRACE_PAYLOAD_CHARS, 4 * opts.max_output_chars)))
        trace.on_start = listen.on_tool_start
        output = OutputBuffer(min(max(opts.max_output_chars, keep), MAX_TRACE_PAYLOAD_CHARS))
        output.on_write = listen.on_print
        budget = CallBudget(opts.max_tool_calls, opts.max_chain_steps)
        audit = AuditTrail(s.settings.policy.audit, caller, paused.run_id if paused else new_execution_id())
        approvals = paused.approvals if paused is not None else None
        checkpoint = Checkpoint(s.policy, s.view(opts.allowed_namespaces, caller), audit, approvals)
        if paused is not None:
            trace.restore(paused.trace)
            output.write("stdout", paused.stdout)
            output.write("stderr", paused.stderr)
            budget.calls = paused.calls
        return _Run(opts, budget, trace, output, checkpoint, caller)

    def _tools(self, run: _Run, early: Early | None = None) -> DefaultTools:
        """The run's snippet environment over the run's call stack, built once per run."""
        s = self.services
        view = run.checkpoint.view

        async def nested(snippet: SavedSnippet, args: Mapping[str, Any]) -> Any:
            return await self._nested(run, snippet, args)

        scope = Scope(
            view,
            run.checkpoint,
            pause if self._pausable and run.depth == 0 else cannot_pause,
            run.trace,
            run.checkpoint.audit,
            nested,
            run.budget,
            audit_probe=s.audit_probe,
            early=early,
        )
        ops = Operations(view, build(s.runner, scope), run.budget)
        return DefaultTools(s, ops, run.output, run.caller)

    async def _nested(self, run: _Run, snippet: SavedSnippet, args: Mapping[str, Any]) -> Any:
        """A saved snippet called from ``run``: its options, budget, trace and output are the run's."""
        if run.depth >= MAX_NESTING:
            raise InvalidArgumentsError(
                "name", f"saved snippets nested {MAX_NESTING} deep (a snippet calling itself?): refused"
            )
        p = ExecuteParams(code=snippet.code, input=dict(args), caller=run.caller, resolved=run.options)
        return (await self._inner(p, dataclasses.replace(run, depth=run.depth + 1), None)).value

    async def _run(self, p: ExecuteParams, run: _Run, paused: PausedRun | None) -> ExecuteResult:
        attributes = {"toolcode.engine": self.services.engine.info.name, "toolcode.session": p.session is not None}
        with run_span("toolcode.resume" if paused is not None else "toolcode.execute", attributes) as span:
            try:
                result = await self._inner(p, run, paused)
            except ToolCodeError as e:
                if isinstance(e, LimitExceededError):
                    span.event("limit", {"toolcode.limit": e.limit})
                if isinstance(e, ApprovalRequiredError):
                    span.event("approval_required", {"toolcode.tool_ids": [c.tool_id for c in e.paused.pending]})
                span.outcome(None if isinstance(e, ApprovalRequiredError) else e.code.value)
                raise
            finally:
                entries = run.checkpoint.audit.take()
                if entries and self.services.stores is not None:
                    with anyio.CancelScope(shield=True):
                        await self.services.stores.audit.write(entries)
            span.outcome(None)
            return result

    async def _check(self, p: ExecuteParams, view: CatalogView) -> None:
        """The check before the run: servers that are down, then the calls (``type_check="strict"``)."""
        s = self.services
        down = unavailable_reference(p.code, view, s.modules)
        if down is not None:
            raise down
        preamble = p.session.imports if p.session is not None else ()
        found = await s.checker.check(p.code, view, preamble=preamble, caller=p.caller)
        if found:
            raise TypeCheckError(found)

    async def _inner(self, p: ExecuteParams, run: _Run, paused: PausedRun | None) -> ExecuteResult:
        opts, engine = run.options, self.services.engine
        view = run.checkpoint.view
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
                    await self._check(p, view)
                if paused is None:
                    value = await self._execute(p, run)
                else:
                    assert isinstance(engine, PausableEngine)
                    value = (await engine.resume(p, self._tools(run), paused.state)).value
            except RunPaused as e:
                error = await self._paused(p, run, e, paused, before + time.perf_counter() - t0)
            except ToolCodeError as e:
                error = self._named_down_server(p.code, view, e)
            except Exception as e:  # an engine is pluggable code; anything it leaks is its failure
                error = EngineError(engine.info.name, f"{type(e).__name__}: {e}")
                error.__cause__ = e
        elapsed = before + time.perf_counter() - t0
        if scope.cancelled_caught:
            error = LimitExceededError("timeout", opts.timeout, round(elapsed, 3), "stopped by the host")
        elif run.budget.tripped is not None and (error is None or isinstance(error, CodeExecutionError)):
            # The snippet may have caught the limit error; the run is stopped all the same.
            error = run.budget.tripped
        if error is None:
            bad = check_json(value)
            if bad is not None:
                error, value = CodeExecutionError("TypeError", bad), None
            else:
                value = as_json_data(value)
        result = await self._result(run, value, error, elapsed, engine.info.limits)
        if error is not None:
            error.result = result
            raise error
        return result

    async def _execute(self, p: ExecuteParams, run: _Run) -> Any:
        """A fresh run's value; the reads it will make that may start early are started first (calls._early)."""
        engine, seen = self.services.engine, None
        if run.options.speculate and not run.depth:  # not in a saved snippet's own run
            seen = await runs_for(p.code)(early_calls, p.code, run.checkpoint, self.services.modules, p.input)
        if seen is None:
            return (await engine.execute(p, self._tools(run))).value
        failure: Exception | None = None
        value: Any = None
        async with anyio.create_task_group() as tasks:
            try:
                value = (await engine.execute(p, self._tools(run, Early(seen, tasks)))).value
            except Exception as e:  # raised past the task group, so not wrapped in an exception group
                failure = e
            tasks.cancel_scope.cancel()  # held calls the run never reached are discarded
        if failure is not None:
            raise failure
        return value

    async def _result(
        self, run: _Run, value: Any, error: ToolCodeError | None, elapsed: float, engine_limits: Mapping[str, Any]
    ) -> ExecuteResult:
        """What leaves the run, fitted to the output budget; what was cut kept whole when it may be."""
        opts, output, trace = run.options, run.output, run.trace
        results = self.services.settings.results
        records = trace.records()
        # Reads started early and never reached follow the run's calls, outside its output budget: the
        # run's value, output and trace are cut exactly as they would be without them.
        discarded = tuple(r for r in records if r.early == "discarded") if trace.discards else ()
        # Thousands of calls' records take a while to fit: off the event loop, which serves other callers.
        fit = anyio.to_thread.run_sync if len(records) > _MANY_RECORDS else run_here
        fitted = await fit(
            fit_output_budget,
            value,
            output.text("stdout"),
            output.text("stderr"),
            tuple(r for r in records if r.early != "discarded") if discarded else records,
            opts.max_output_chars,
            output.dropped,
            str(error) if error is not None else None,
            trace.output_chars(),
        )
        truncated = fitted.truncated
        if trace.payloads is not None and trace.payloads.dropped and "trace" not in truncated:
            truncated = (*truncated, "trace")
        full: dict[str, str] = {}
        if results.enabled and error is None:
            if "value" in truncated:
                text = json_text(value)  # what the cut's marker counted: the stored text is its whole
                if len(text) <= results.max_chars:
                    full["value"] = text
            if "stdout" in truncated:
                full["stdout"] = output.text("stdout")
        return ExecuteResult(
            value=fitted.value if error is None else None,
            stdout=fitted.stdout,
            stderr=fitted.stderr,
            tool_calls=fitted.tool_calls + discarded,
            duration_ms=elapsed * 1000.0,
            limits=LimitsReport(
                applied={**opts.applied(), **engine_limits},
                tool_calls=run.budget.calls,
                output_chars=fitted.total_chars,
                stopped_by=error.limit if isinstance(error, LimitExceededError) else None,
                truncated=truncated,
            ),
            full=full,
        )

    def _named_down_server(self, code: str, view: CatalogView, error: ToolCodeError) -> ToolCodeError:
        """``error``, or ``server_unavailable`` when it is a failed import or lookup on a line naming a down server.

        Unchecked runs (``type_check="off"``) reach ``from tools import bad`` of a server that
        failed to start; the engine can only call the module missing.
        """
        if not (isinstance(error, CodeExecutionError) and error.exc_type in _LOOKUP_ERRORS and error.line is not None):
            return error
        down = unavailable_reference(code, view, self.services.modules)
        return down if down is not None and down.line == error.line else error

    async def _paused(
        self, p: ExecuteParams, run: _Run, e: RunPaused, before: PausedRun | None, elapsed: float
    ) -> ApprovalRequiredError:
        """The run stopped at a call that needs a decision: everything needed to continue it."""
        view, checkpoint = run.checkpoint.view, run.checkpoint
        if before is not None:
            may_call = before.may_call
        else:
            parts = view.partitions

            def known(tool_id: str) -> bool:
                try:  # as the caller sees the catalog
                    tool = view.index.get(tool_id, partitions=parts)
                except ToolIndexError:  # a malformed or unknown id is simply not a tool
                    return False
                return view.visible(tool.namespace)

            # A long snippet's parse takes a while: off the event loop, which serves other callers.
            on = runs_for(p.code)
            may_call = (await on(literal_tool_ids, p.code, self.services.modules.seen_by(view), known))[0]
        run_id = checkpoint.audit.execution_id or new_execution_id()
        paused = PausedRun(
            # Each question an id of its own: a decision made about this one cannot reach the next.
            execution_id=run_id if before is None else new_execution_id(),
            run_id=run_id,
            owner=owner_of(p.caller),
            caller=p.caller,
            code=p.code,
            input=p.input,
            options=run.options,
            session=p.session.name if p.session is not None else None,
            session_version=p.session.version if p.session is not None else None,
            state=e.state,
            approvals=checkpoint.approvals,
            trace=list(run.trace.records()),
            stdout=run.output.text("stdout"),
            stderr=run.output.text("stderr"),
            calls=run.budget.calls,
            elapsed=elapsed,
            may_call=may_call[:50],
            created=before.created if before is not None else time.time(),
        )
        return ApprovalRequiredError(paused)

    async def aclose(self) -> None:
        """Close the services' type checker and the engine they made; idempotent. The runner is not closed."""
        await self.services.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
