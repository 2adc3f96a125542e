"""The code-mode core: one object that owns every operation, behind the doors.

:class:`CodeMode` offers the operations (search, list, namespaces, describe, examples, run_tool,
run_chain, execute, resume, sessions, saved snippets, stored results, quarantine) with their
result models. The snippet environment, the MCP server, the CLI and the framework doors all go
through it: same names, same fields, same errors. A run has one path, :meth:`CodeMode._go`:
``execute`` starts it, ``resume`` continues it from a snapshot, ``run`` raises what it ended with.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Hashable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from toolcode._approval_request import approval_request, named_tool, unbound_text
from toolcode._audit import AuditEntry, AuditTrail, Quarantine
from toolcode._discovery import Discovery
from toolcode._executor import Executor, Listeners
from toolcode._limits import NARROW_HINT
from toolcode._modules import every_tool
from toolcode._operations import Operations
from toolcode._options import ExecuteOptions, ResolvedOptions, options_key, parse_options
from toolcode._otel import run_span
from toolcode._outcome import APPROVAL_OP, outcome, paused_result
from toolcode._paused_run import Decision, PausedRun, check_decision
from toolcode._saved_snippet import SavedSnippet
from toolcode._services import Services, Stores
from toolcode._sessions import SessionRun, Sessions, owner_of, session_imports
from toolcode._trace import Trace
from toolcode._types import ExecuteParams, ExecuteResult, OnToolCall, SessionState, ToolCallRecord
from toolcode._view import CatalogView
from toolcode.calls import Asker, Checkpoint, Scope, ask_person, build, decider, refuse
from toolcode.exceptions import (
    ApprovalRequiredError,
    DefinitionChangedError,
    ErrorCode,
    InvalidArgumentsError,
    SessionLimitError,
    ToolCodeError,
    ToolError,
)
from toolcode.models import (
    ChainOutcome,
    DocsResult,
    ExamplesResult,
    ExecuteOutcome,
    NamespacesResult,
    PausedEntry,
    PausedResult,
    PendingCallInfo,
    ResultPage,
    RunToolOutcome,
    SearchResult,
    SessionsResult,
    SnippetEntry,
    SnippetsResult,
    StoredResultInfo,
    ToolApprovalsResult,
    ToolListResult,
)
from toolindex import Tool
from toolindex.log import get_logger

__all__ = ["CodeMode", "PrintListener", "ToolStart"]

ToolStart = Callable[[str], Awaitable[None]]
"""Awaited with the tool id as each tool call of a run starts."""
PrintListener = Callable[[str, str], None]
"""Told of each write of a run to ``stdout`` or ``stderr`` (``(stream, text)``) as it happens; must not block."""

log = get_logger("toolcode.core")
_PARSED_OPTIONS = 64
"""Options kept parsed per core (a door sends the same few again and again)."""
_OUTCOME_WORD = {"approve": "approved", "approve_run": "approved", "deny": "denied", "abort": "aborted"}


@dataclass(frozen=True, slots=True)
class _Done:
    """How a run ended: the doors' outcome, and the result and error it was made of."""

    outcome: ExecuteOutcome
    result: ExecuteResult | None
    error: ToolCodeError | None


class CodeMode:
    """The code-mode operations over one catalog, the same for every door.

    Args:
        services: The catalog, runner, engine, policy, settings and stores (:meth:`Services.of`).
        ceilings: The highest limits a caller may ask for (``None``: no ceilings; the operator's
            own doors, the CLI and Python, use none; the MCP server does).
    """

    def __init__(self, services: Services, ceilings: ExecuteOptions | None = None) -> None:
        self.services = services
        self.ceilings = ceilings
        self.executor = Executor(services)
        self._observers: list[OnToolCall] = []
        self._parsed: dict[Hashable, tuple[ExecuteOptions, ResolvedOptions]] = {}
        """Options as given (:func:`options_key`), checked and resolved: the settings and ceilings never change."""

    @property
    def defaults(self) -> ExecuteOptions:
        """Server-wide options of every run, and the namespace filter of every door."""
        return self.services.settings.limits

    def _stores(self, field: str) -> Stores:
        stores = self.services.stores
        if stores is None:
            raise InvalidArgumentsError(field, "this needs a state store (this core has none)")
        return stores

    def observe_tool_calls(self, callback: OnToolCall) -> Callable[[], None]:
        """Be told of every tool call any snippet makes through this core, whatever the door (auditing).

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

    def _listen(
        self, on_tool_call: OnToolCall | None, on_tool_start: ToolStart | None, on_print: PrintListener | None
    ) -> Listeners:
        listeners = [*self._observers, *([on_tool_call] if on_tool_call is not None else [])]
        notify: OnToolCall | None = listeners[0] if len(listeners) == 1 else None
        if len(listeners) > 1:

            async def every(record: ToolCallRecord) -> None:
                for listener in listeners:
                    await listener(record)

            notify = every
        return Listeners(notify, on_tool_start, on_print)

    def with_ceilings(self, ceilings: ExecuteOptions | None) -> CodeMode:
        """The same core (same services, same observers) for callers bound by ``ceilings``."""
        twin = CodeMode(self.services, ceilings)
        twin._observers = self._observers
        return twin

    # -- the caller's view and a door's operations ----------------------------------------

    def view(self, allowed_namespaces: Sequence[str] | None = None, caller: str | None = None) -> CatalogView:
        """The catalog as ``caller`` sees it: the server-wide filter, narrowed by ``allowed_namespaces``."""
        base = self.defaults.allowed_namespaces
        if allowed_namespaces is None:
            allowed = base
        elif base is None:
            allowed = tuple(allowed_namespaces)
        else:
            allowed = tuple(n for n in allowed_namespaces if n in base)
        return self.services.view(allowed, caller)

    def _door_ops(self, ask: Asker | None, caller: str | None) -> tuple[Operations, AuditTrail]:
        """The operations of one direct call at a door: not counted, its calls down the door's stack."""
        s, view = self.services, self.view(caller=caller)
        audit = AuditTrail(s.settings.policy.audit, caller)

        async def snippet(saved: SavedSnippet, args: Mapping[str, Any]) -> Any:
            params = ExecuteParams(code=saved.code, input=dict(args), caller=caller)
            return (await self.executor.execute(params)).value

        checkpoint = Checkpoint(s.policy, view, audit)
        decide = ask_person(ask) if ask is not None else refuse
        scope = Scope(
            view,
            checkpoint,
            decide,
            Trace(),
            audit,
            snippet,
            deadline=s.settings.call_timeout,
            audit_probe=s.audit_probe,
        )
        return Operations(view, build(s.runner, scope)), audit

    @asynccontextmanager
    async def _door(self, name: str, ask: Asker | None, caller: str | None) -> AsyncGenerator[Operations]:
        """One direct call at a door: its operations, its span, its audit entries written after."""
        ops, audit = self._door_ops(ask, caller)
        with run_span(name) as span:
            try:
                yield ops
                span.outcome(None)
            except ToolCodeError as e:
                span.outcome(e.code.value)
                raise
            finally:
                entries = audit.take()
                if entries and self.services.stores is not None:
                    # Shielded: a call its client cancelled is audited all the same.
                    with anyio.CancelScope(shield=True):
                        await self.services.stores.audit.write(entries)

    async def search_tools(
        self, query: Any, limit: Any = 10, detail: Any = "summary", namespaces: Any = None, *, caller: str | None = None
    ) -> SearchResult:
        """Rank the tools ``caller`` sees for a free-text query (see :meth:`Discovery.search_tools`)."""
        return await Discovery(self.services, self.view(caller=caller)).search_tools(query, limit, detail, namespaces)

    async def list_tools(
        self, namespace: Any = None, cursor: Any = None, limit: Any = 100, *, caller: str | None = None
    ) -> ToolListResult:
        """A page of the catalog as ``caller`` sees it (see :meth:`Discovery.list_tools`)."""
        return await Discovery(self.services, self.view(caller=caller)).list_tools(namespace, cursor, limit)

    async def list_namespaces(self, *, caller: str | None = None) -> NamespacesResult:
        """Every namespace ``caller`` sees, with its tool count."""
        return await Discovery(self.services, self.view(caller=caller)).list_namespaces()

    async def describe_tool(self, tool_id: Any, level: Any = "schema", *, caller: str | None = None) -> DocsResult:
        """Documentation of one tool or a list of tools (see :meth:`Discovery.describe_tool`)."""
        return await Discovery(self.services, self.view(caller=caller)).describe_tool(tool_id, level)

    async def list_tool_examples(self, tool_id: Any, max: Any = 3, *, caller: str | None = None) -> ExamplesResult:
        """Usage examples of one tool."""
        return await Discovery(self.services, self.view(caller=caller)).list_tool_examples(tool_id, max)

    async def run_tool(
        self,
        tool_id: Any,
        args: Any = None,
        *,
        timeout: Any = None,
        ask: Asker | None = None,
        caller: str | None = None,
    ) -> RunToolOutcome:
        """Run one tool directly; the policy applies (see :meth:`Operations.run_tool`).

        Args:
            tool_id: The tool.
            args: Its arguments.
            timeout: Seconds before the call is abandoned.
            ask: Asks a person when the policy says ``ask`` (``None``: the call fails with
                ``approval_required``; run it from code to pause instead).
            caller: Who the call is for (the audit log).
        """
        async with self._door("toolcode.run_tool", ask, caller) as ops:
            out = await ops.run_tool(tool_id, args, timeout=timeout)
        budget = self.defaults.resolve().max_output_chars
        text = json.dumps(out.value, ensure_ascii=False, default=str)
        if len(text) <= budget:
            return out
        stored = await self._store(caller, "result", text, "application/json")
        preview = text[: max(0, budget - 200)]
        # Never silent: where the rest is, or (not kept: over the size cap, or no store) what to do.
        how = f"read_result({stored.ref!r}, offset={len(preview)}) for the rest" if stored is not None else NARROW_HINT
        marker = f"…[truncated result: {len(text):,} chars, {len(preview):,} shown; {how}]"
        return out.model_copy(update={"value": preview + marker, "stored": stored})

    async def run_result(
        self, tool_id: Any, args: Any = None, *, ask: Asker | None = None, caller: str | None = None
    ) -> Any:
        """:meth:`run_tool` with the runner's whole result (content blocks): exposed direct tools use it."""
        async with self._door("toolcode.run_tool", ask, caller) as ops:
            return await ops.run_result(tool_id, args)

    async def run_chain(
        self,
        steps: Any,
        *,
        ask: Asker | None = None,
        caller: str | None = None,
        on_step: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    ) -> ChainOutcome:
        """Run tools in sequence without code (see :meth:`Operations.run_chain`).

        Every step is judged first; one fed by earlier steps is judged, and asked about, as it is made.
        """
        async with self._door("toolcode.run_chain", ask, caller) as ops:
            ops.on_step = on_step  # {"step", "tool_id", "status": started|ok|error, "duration_ms", "code"}
            return await ops.run_chain(steps, max_steps=self.defaults.resolve().max_chain_steps)

    # -- runs: one path ---------------------------------------------------------------------

    def options(self, options: ExecuteOptions | Mapping[str, Any] | None = None, **overrides: Any) -> ExecuteOptions:
        """Parse and check a run's options against the server's ceilings.

        Raises:
            InvalidArgumentsError: If an option is invalid or above its ceiling.
        """
        opts = parse_options(options, **overrides).within(self.ceilings)
        if opts.allowed_namespaces is not None and self.defaults.allowed_namespaces is not None:
            narrowed = tuple(n for n in opts.allowed_namespaces if n in self.defaults.allowed_namespaces)
            opts = opts.model_copy(update={"allowed_namespaces": narrowed})
        return opts

    def _run_options(
        self, options: ExecuteOptions | Mapping[str, Any] | None
    ) -> tuple[ExecuteOptions, ResolvedOptions]:
        """A run's options, checked (:meth:`options`) and resolved over the settings; parsed once per distinct value.

        Raises:
            InvalidArgumentsError: If an option is invalid or above its ceiling (never kept).
        """
        key = options_key(options)
        hit = self._parsed.get(key) if key is not None else None
        if hit is None:
            opts = self.options(options)
            hit = (opts, opts.resolve(self.defaults))
            if key is not None:
                if len(self._parsed) >= _PARSED_OPTIONS:
                    self._parsed.clear()
                self._parsed[key] = hit
        return hit

    async def execute(
        self,
        code: Any,
        *,
        input: Any = None,
        options: ExecuteOptions | Mapping[str, Any] | None = None,
        on_tool_call: OnToolCall | None = None,
        caller: str | None = None,
        session: Any = None,
        on_tool_start: ToolStart | None = None,
        on_print: PrintListener | None = None,
    ) -> ExecuteOutcome:
        """Run a snippet; the outcome every door returns (a failure is an outcome, not an exception).

        Args:
            code: Python source; it sets ``__out`` or ends with an expression.
            input: Any JSON value, read by the snippet as ``input``.
            options: This run's options (limits, ``allowed_namespaces``, ``trace``).
            on_tool_call: Awaited as each tool call completes.
            caller: Who the run is for (shares of the worker pool are counted per caller;
                sessions belong to the authenticated caller, see :func:`toolcode._sessions.owner_of`).
            session: Run in this named session: variables, functions and imports persist from
                run to run (``None``: a fresh run).
            on_tool_start: Awaited with the tool id as each tool call starts.
            on_print: Told of each write to stdout or stderr as it happens (must not block).

        Returns:
            ``ok`` with the value, stdout, stderr and a call summary (plus every call with
            ``trace="full"``), or ``ok=False`` with the error in the one JSON shape; ``session``
            says whether the session was new or reset; ``approval_required`` when it paused.
        """
        listen = self._listen(on_tool_call, on_tool_start, on_print)
        return (await self._start(code, input, options, caller, session, listen)).outcome

    async def run(
        self,
        code: str,
        *,
        input: Any = None,
        options: ExecuteOptions | Mapping[str, Any] | None = None,
        on_tool_call: OnToolCall | None = None,
        session: str | None = None,
        caller: str | None = None,
    ) -> ExecuteResult:
        """:meth:`execute`, raising what the run ended with (its partial result in ``result``).

        Raises:
            toolcode.exceptions.ToolCodeError: With the partial result in ``result``
                (``ApprovalRequiredError`` when it paused).
        """
        done = await self._start(code, input, options, caller, session, self._listen(on_tool_call, None, None))
        if done.error is not None:
            raise done.error
        assert done.result is not None
        return done.result

    async def _start(
        self, code: Any, input: Any, options: Any, caller: str | None, session: Any, listen: Listeners
    ) -> _Done:
        started = time.perf_counter()
        try:
            if not isinstance(code, str):
                raise InvalidArgumentsError("code", f"must be a string, got {type(code).__name__}")
            if not code.strip():
                raise InvalidArgumentsError("code", "is empty: write a program that sets __out")
            opts, resolved = self._run_options(options)
            if session is not None:
                self._stores("session")
                Sessions.check_name(session)
        except ToolCodeError as exc:
            return _Done(outcome(None, exc, "none", started), None, exc)
        params = ExecuteParams(code=code, input=input, options=opts, resolved=resolved, caller=caller)

        async def go(state: SessionState | None) -> ExecuteResult:
            if state is None:
                return await self.executor.execute(params, listen)
            # Asked while the session is held, where a run that pauses marks it (see _go): a run
            # that waited for the session while another paused is refused, not lost.
            await self._none_waiting(caller, state.name)
            return await self.executor.execute(dataclasses.replace(params, session=state), listen)

        hold = resolved.timeout
        detail = opts.trace or self.defaults.trace or "none"
        view = self.view(opts.allowed_namespaces, caller)
        return await self._go(go, code, caller, session, hold, detail, view, started)

    async def resume(
        self,
        execution_id: Any,
        decision: Any,
        *,
        caller: str | None = None,
        on_tool_call: OnToolCall | None = None,
        by: str | None = None,
        on_tool_start: ToolStart | None = None,
        on_print: PrintListener | None = None,
    ) -> ExecuteOutcome:
        """Decide about a paused run and continue it from the call it stopped at.

        Args:
            execution_id: From the ``approval_required`` outcome.
            decision: ``approve`` (this call, once), ``approve_run`` (these tools for the rest
                of the run), ``deny`` (the snippet gets a catchable ``approval_denied`` error) or
                ``abort`` (the run ends here, with ``approval_denied``).
            caller: Who decides: the run's own caller, or an operator (``policy.operators``).
            on_tool_call: Awaited as each tool call completes.
            by: Who decided, for the audit log and the trace (default: the caller).
            on_tool_start: Awaited with the tool id as each tool call starts.
            on_print: Told of each write to stdout or stderr as it happens.

        Returns:
            The run's outcome, with the calls from before the pause in its trace, and an
            ``approval`` entry where it paused; or ``approval_required`` again, under a new
            ``execution_id``, when it reaches another call that needs a decision. A run already
            decided (by its caller, an operator or the console) answers its caller with the
            outcome it ended with, for an hour. A run that could not be taken (its session stayed busy,
            the store was away) still waits, and the outcome says why.
        """
        started = time.perf_counter()
        try:
            chosen = check_decision(decision)
            operator = self.services.is_operator(caller)
            run, version = await self._stores("execution_id").paused.read(execution_id, caller, operator=operator)
        except ToolCodeError as exc:
            return await self._not_taken(execution_id, caller, exc, started)
        listen = self._listen(on_tool_call, on_tool_start, on_print)
        hold = max(run.options.timeout - run.elapsed, 1.0)  # hold_for_resume caps it at a day
        try:  # held before the session is waited for: a second resume is refused now, not after this one's run
            release = await self._stores("execution_id").paused.hold_for_resume(run, seconds=hold)
        except ToolCodeError as exc:
            return await self._not_taken(execution_id, caller, exc, started)
        try:
            done, taken = await self._continue(run, version, chosen, caller, by, listen)
        finally:
            await release()
        if not taken:
            assert done.error is not None
            return await self._not_taken(execution_id, caller, done.error, started)
        try:
            await self._stores("execution_id").paused.keep_outcome(run, done.outcome.model_dump_json().encode())
        except ToolCodeError as e:  # the run is over either way; only a later resume of this id misses it
            log.warning("paused.outcome_not_kept", execution_id=run.execution_id, error=str(e)[:300])
        return done.outcome

    async def _not_taken(
        self, execution_id: Any, caller: str | None, exc: ToolCodeError, started: float
    ) -> ExecuteOutcome:
        """What a resume that took no run answers: the outcome of the run if it was decided already, or ``exc``."""
        stores = self.services.stores
        unknown = isinstance(exc, InvalidArgumentsError) and exc.field == "execution_id"
        kept = await stores.paused.outcome_of(execution_id, caller) if unknown and stores is not None else None
        return ExecuteOutcome.model_validate_json(kept) if kept is not None else outcome(None, exc, "none", started)

    async def _continue(
        self, run: PausedRun, version: int, chosen: Decision, caller: str | None, by: str | None, listen: Listeners
    ) -> tuple[_Done, bool]:
        """A paused run read at ``version``, decided: taken, then aborted or continued from the call it stopped at.

        A run continued in a session is taken only once the session is held (``_go``), and held
        until its state is written: its mark goes while no other run of the session can start, so
        runs that came meanwhile were refused, not overwritten. It goes on only in the session as
        it paused it (:meth:`PausedRun.session_conflict`). An abort writes nothing there: taken at once.

        Returns:
            How it ended, and whether it was taken (if not, it still waits or another request took
            it; the error says which).
        """
        paused = self._stores("execution_id").paused
        who = by or (f"person:{caller}" if caller and caller != "local" else "person")
        detail = run.options.trace or self.defaults.trace or "none"
        view = self.view(run.options.allowed_namespaces, run.caller)
        if chosen == "abort":
            try:
                await paused.claim(run, version)
            except ToolCodeError as exc:
                return _Done(outcome(None, exc, "none"), None, exc), False
            await self._decided(run, chosen, who)
            pending = run.pending
            err = ToolError(
                pending[0].tool_id if pending else "",
                f"the run was aborted by {decider(who)} before this call"
                + (f" (line {run.state.line})" if run.state.line is not None else ""),
                "not_allowed",
                code=ErrorCode.APPROVAL_DENIED,
            )
            return _Done(outcome(paused_result(run), err, detail, None, view), None, err), True
        taken = False

        async def go(state: SessionState | None) -> ExecuteResult:
            nonlocal taken
            await paused.claim(run, version)
            taken = True
            await self._decided(run, chosen, who)
            conflict = run.session_conflict(state.version) if state is not None else None
            if conflict is not None:
                conflict.result = paused_result(run)
                raise conflict
            run.apply(chosen, who)
            return await self.executor.resume(run, state, listen)

        hold = min(max(run.options.timeout - run.elapsed, 1.0), 86_400.0)
        return await self._go(go, run.code, run.caller, run.session, hold, detail, view, None), taken

    async def _decided(self, run: PausedRun, chosen: str, who: str) -> None:
        """A person's decision on a paused run: in its trace (an ``approval`` entry) and the audit log."""
        pending = run.pending
        run.trace.append(
            ToolCallRecord(
                tool_id=pending[0].tool_id if pending else "",
                args=dict(pending[0].args) if len(pending) == 1 else {"calls": [p.tool_id for p in pending]},
                structured={
                    "decision": chosen,
                    "by": who,
                    "waited_s": round(max(0.0, time.time() - run.paused_at), 1),
                    "line": run.state.line,
                },
                backend_kind=None,
                error=None,
                error_op=APPROVAL_OP,
                duration_ms=0.0,
                started_ms=run.elapsed * 1000.0,
            )
        )
        trail = AuditTrail(self.services.settings.policy.audit, run.caller, run.run_id)
        for p in pending:
            trail.add(p.tool_id, p.tier, _OUTCOME_WORD[chosen], who)
        entries = trail.take()
        if entries and self.services.stores is not None:
            await self.services.stores.audit.write(entries)

    async def _go(
        self,
        go: Callable[[SessionState | None], Awaitable[ExecuteResult]],
        code: str,
        caller: str | None,
        session: str | None,
        hold: float,
        detail: str,
        view: CatalogView,
        started: float | None,
    ) -> _Done:
        """The one run path: in its session or not, kept when it pauses, its cut output stored."""
        result: ExecuteResult | None = None
        error: ToolCodeError | None = None
        srun: SessionRun | None = None
        if session is None:
            result, error = await self._attempt(go, None, code)
        else:
            try:
                async with self._stores("session").sessions.use(caller, session, hold=min(hold, 86_400.0)) as srun:
                    result, error = await self._attempt(go, srun, code)
            except ToolCodeError as exc:  # the session itself: busy, a limit, the store
                error = exc
        out = outcome(result, error, detail, started, view, self.services.settings.console.link)
        if error is None and result is not None:
            out = await self._with_stored(out, result, caller)
        if srun is not None:
            out = out.model_copy(update={"session": srun.report})
        return _Done(out, result, error)

    async def _attempt(
        self, go: Callable[[SessionState | None], Awaitable[ExecuteResult]], srun: SessionRun | None, code: str
    ) -> tuple[ExecuteResult | None, ToolCodeError | None]:
        """One go of the run (in ``srun``, held): its result, and its error, a pause stored."""
        error: ToolCodeError | None = None
        try:
            result = await go(srun.state if srun is not None else None)
        except ToolCodeError as exc:
            # Kept while the session is held: its next run sees the mark (_none_waiting).
            result, error = exc.result, await self._keep_paused(exc)
        if srun is not None and srun.state.kept is not None:
            srun.state.imports = session_imports(srun.state.imports, code)
        return result, error

    async def _none_waiting(self, caller: str | None, session: str) -> None:
        """Refuse a run of a session in which a run waits for a decision (its state becomes the session's)."""
        waiting = await self._stores("session").paused.waiting_in(caller, session)
        if waiting is not None:
            raise SessionLimitError(
                session,
                "runs_while_paused",
                0,
                1,
                f"run {waiting} of this session waits for a decision: decide it first "
                "(resume_execution, toolcode resume), then run again",
            )

    async def _keep_paused(self, exc: ToolCodeError) -> ToolCodeError:
        """Store a paused run; what to report instead when it cannot be kept."""
        if not isinstance(exc, ApprovalRequiredError):
            return exc
        if self.services.stores is None:
            err = ToolError(
                exc.tool_id or "",
                "needs approval, and this core keeps no paused runs (no state store): add an allow rule, "
                "or give the toolbox a state store",
                "not_allowed",
                code=ErrorCode.NOT_ALLOWED,
            )
            err.result = exc.result
            return err
        try:
            await self.services.stores.paused.save(exc.paused)
        except ToolCodeError as e:  # the store is away: the run cannot wait
            e.result = exc.result
            return e
        return exc

    async def paused_outcome(self, execution_id: Any, caller: str | None = None) -> ExecuteOutcome:
        """A paused run's outcome as it was when it paused (``approval_required``), without deciding.

        Args:
            execution_id: The run.
            caller: Who asks: the run's own caller, or an operator.

        Returns:
            The outcome (an ``invalid_arguments`` outcome for an unknown, finished or another
            caller's run).
        """
        try:
            operator = self.services.is_operator(caller)
            run = await self._stores("execution_id").paused.get(execution_id, caller, operator=operator)
        except ToolCodeError as exc:
            return outcome(None, exc, "none")
        detail = run.options.trace or self.defaults.trace or "none"
        return outcome(paused_result(run), ApprovalRequiredError(run), detail, link=self.services.settings.console.link)

    async def list_paused(self, caller: str | None = None) -> PausedResult:
        """The caller's runs that wait for a decision (every caller's, for an operator), oldest first."""
        if self.services.stores is None:
            return PausedResult(paused=[])
        owner = owner_of(caller)
        runs = await self.services.stores.paused.list(caller, operator=self.services.is_operator(caller))
        return PausedResult(
            paused=[
                PausedEntry(
                    execution_id=r.execution_id,
                    pending=[PendingCallInfo(**p.to_dict()) for p in r.pending],
                    snippet_code=r.snippet_code,
                    line=r.state.line,
                    session=r.session,
                    paused_at=round(r.paused_at, 3),
                    expires=round(r.expires, 3) if r.expires is not None else None,
                    caller=(r.caller or "local") if r.owner != owner else None,
                )
                for r in runs
            ]
        )

    # -- stored results ---------------------------------------------------------------------

    async def _store(self, caller: str | None, what: str, text: str, media: str) -> StoredResultInfo | None:
        stores = self.services.stores
        if stores is None or not stores.results.settings.enabled:
            return None
        try:
            kept = await stores.results.keep(caller, what, text, media)
        except ToolCodeError as e:  # the store is away: the cut stays a cut, said so in the text
            log.warning("core.result_not_stored", error=str(e)[:300])
            return None
        if kept is None:
            return None
        return StoredResultInfo(
            ref=kept.ref, uri=kept.uri, what=kept.what, total_chars=kept.total_chars, media=kept.media,
            expires=round(kept.expires, 3),
        )  # fmt: skip

    async def _with_stored(self, out: ExecuteOutcome, result: ExecuteResult, caller: str | None) -> ExecuteOutcome:
        """Keep what the output budget cut from a run's value or stdout, and say where it is."""
        if not result.full:
            return out
        stored: list[StoredResultInfo] = []
        update: dict[str, Any] = {}
        for what, text in result.full.items():
            info = await self._store(caller, what, text, "application/json" if what == "value" else "text/plain")
            if info is None:
                continue
            stored.append(info)
            # The cut's marker says where the whole content is, instead of advising to ask for less.
            current = out.value if what == "value" else out.stdout
            if isinstance(current, str) and NARROW_HINT in current:
                head, _, tail = current.rpartition(NARROW_HINT)
                update[what] = f"{head}whole {what}: read_result({info.ref!r}){tail}"
        return out.model_copy(update={"stored": stored, **update}) if stored else out

    async def read_result(
        self, ref: Any, offset: Any = 0, limit: Any = None, *, caller: str | None = None
    ) -> ResultPage:
        """A page of a stored result: ``text`` from ``offset``, ``next_offset`` until the end.

        Raises:
            InvalidArgumentsError: For a malformed, unknown, expired or another caller's ``ref``,
                or ``offset`` / ``limit`` out of range.
        """
        return ResultPage(**await self._stores("ref").results.read(ref, caller, offset, limit))

    # -- sessions and saved snippets ---------------------------------------------------------

    async def list_sessions(self, caller: str | None = None) -> SessionsResult:
        """The caller's sessions (name, created, last used, size, runs, expiry).

        Raises:
            InvalidArgumentsError: If this core has no state store.
            StateUnavailableError: If the store cannot be reached.
        """
        return SessionsResult(sessions=await self._stores("session").sessions.list(caller))

    async def reset_session(self, name: Any, caller: str | None = None) -> bool:
        """Forget a session's state; ``False`` when it had none.

        Raises:
            InvalidArgumentsError: If the name is invalid or this core has no state store.
            SessionLimitError: ``runs_while_paused``, while a run of the session waits for a decision
                (its state would replace the reset when it is resumed).
            StateUnavailableError: If the store cannot be reached.
        """
        sessions = self._stores("session").sessions
        sessions.check_name(name)
        await self._none_waiting(caller, name)
        return await sessions.reset(caller, name)

    async def save_snippet(
        self,
        name: Any,
        code: Any,
        description: Any,
        input_schema: Any = None,
        *,
        shared: Any = False,
        caller: str | None = None,
    ) -> SnippetEntry:
        """Save (or replace) a parameterised snippet; it becomes the tool ``snippets:<name>``.

        The snippet reads its arguments as ``input``; ``input_schema`` (a JSON Schema object)
        describes them (default: any object). It is type-checked before it is saved. It is
        ``caller``'s: other callers neither see it nor replace or delete it, unless an operator
        saves it ``shared`` (every caller sees and runs it; only an operator changes it).

        Raises:
            InvalidArgumentsError: If a field is invalid (names it), the name is another caller's,
                or ``shared`` is asked by a caller who is not an operator.
            LimitExceededError: ``quota_exceeded``, if the caller keeps ``snippets.max_per_caller`` snippets.
            TypeCheckError: If the code calls its tools wrongly.
            StateUnavailableError: If the state store cannot be written.
        """
        saved = await self.services.save_snippet(
            self.view(caller=caller), caller, name, code, description, input_schema, shared=shared
        )
        return SnippetEntry(**saved.to_dict())

    async def list_snippets(self, *, caller: str | None = None) -> SnippetsResult:
        """The saved snippets ``caller`` sees (its own and the shared ones; every one for an operator), by name."""
        lib = self._stores("name").snippets
        mine = lib.mine(owner_of(caller), self.services.is_operator(caller))
        return SnippetsResult(snippets=[SnippetEntry(**s.to_dict(with_code=False)) for s in mine])

    async def show_snippet(self, name: Any, *, caller: str | None = None) -> SnippetEntry:
        """One saved snippet ``caller`` sees, with its code.

        Raises:
            InvalidArgumentsError: If there is no snippet of this name that ``caller`` sees.
        """
        lib = self._stores("name").snippets
        return SnippetEntry(**lib.get(name, owner_of(caller), self.services.is_operator(caller)).to_dict())

    async def delete_snippet(self, name: Any, *, caller: str | None = None) -> bool:
        """Delete a saved snippet (and its tool); ``False`` when there was none.

        Raises:
            InvalidArgumentsError: If the name is invalid, or the snippet another caller's (not an operator).
        """
        owner, operator = owner_of(caller), self.services.is_operator(caller)
        return await self._stores("name").snippets.delete(name, owner=owner, operator=operator)

    # -- quarantine ---------------------------------------------------------------------------

    def _quarantine(self) -> Quarantine:
        quarantine = self.services.stores.quarantine if self.services.stores is not None else None
        if quarantine is None:
            raise InvalidArgumentsError("tools", "quarantine is off (set toolcode.policy.quarantine to true)")
        return quarantine

    async def approve_tools(self, tools: Any, *, by: str = "operator") -> ToolApprovalsResult:
        """Approve the definitions of quarantined tools that the approver was shown, each named by its digest.

        An approval covers only a definition someone reviewed: each tool is named with the digest
        shown with its definition (``describe_tool(id, "full")``, :meth:`quarantined_tools`, the
        console), and a tool whose definition changed since refuses the whole request. Ids and
        globs without a digest approve nothing: the error lists the quarantined tools they cover,
        with their digests now, to review and name.

        Args:
            tools: ``{tool_id: digest}``, or a list of ``"tool_id@digest"`` (one such string: one tool).
                ``quarantined_tools().digests()`` is every blocked tool as it was listed.
            by: Who approves (kept with each approval and in the audit log).

        Returns:
            The ids approved (``approved``).

        Raises:
            InvalidArgumentsError: If quarantine is off, ``tools`` is not of these forms, a digest
                is not one (32 lowercase hexadecimal characters: ``field`` and ``tool_id`` say
                which), or it names a tool without a digest (an id or a glob: the message lists
                what it covers).
            DefinitionChangedError: If a named tool's definition now is not the one its digest
                names (changed since it was shown, or gone): nothing is approved.
            StateUnavailableError: If the store (or a required audit log) cannot be written.
        """
        quarantine = self._quarantine()
        bound, unbound = approval_request(tools)
        if unbound:
            raise InvalidArgumentsError("tools", unbound_text(unbound, self.quarantined_tools().tools))
        stores, audit = self.services.stores, self.services.settings.policy.audit
        if stores is not None and audit.enabled and audit.required:
            await stores.audit.probe()  # no approval while its entry cannot be written (fail closed)
        # From here to the approval nothing awaits: the definitions checked are the ones approved.
        chosen: list[Tool] = []
        changed: dict[str, str | None] = {}
        for tool_id, digest in bound.items():
            if (tool := named_tool(self.services.index, tool_id)) is None:
                changed[tool_id] = None
            elif not hmac.compare_digest(now := quarantine.digest(tool), digest):
                changed[tool_id] = now
            else:
                chosen.append(tool)
        if changed:
            raise DefinitionChangedError(changed, bound)
        approved = await quarantine.approve(chosen, by)
        if stores is not None and audit.enabled:
            # Who let which definition through: one entry per tool, the digest of what was approved.
            now_at = time.time()
            entries = [
                AuditEntry(now_at, tool_id, None, "approved", by, args={"definition": digest}).to_dict()
                for tool_id, digest in approved.items()
            ]
            await stores.audit.write(entries)
        return ToolApprovalsResult(approved=list(approved))

    def quarantined_tools(self, *, only_blocked: bool = True) -> ToolApprovalsResult:
        """Each tool's standing in the quarantine (by default only the blocked ones: new or changed).

        Raises:
            InvalidArgumentsError: If quarantine is off.
        """
        quarantine = self._quarantine()
        entries = [quarantine.status(t) for t in every_tool(self.services.index)]
        if only_blocked:
            entries = [e for e in entries if e.state != "approved" and not e.tool_id.startswith("snippets:")]
        return ToolApprovalsResult(tools=sorted(entries, key=lambda e: e.tool_id))
