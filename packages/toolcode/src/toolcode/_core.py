"""The code-mode core: one service that owns every operation, behind three thin doors.

:class:`CodeMode` holds an index, a doc store, a runner and an executor, and offers the
operations (search, list, namespaces, describe, examples, run_tool, run_chain, execute) with
their result models. The snippet environment, the MCP server and the CLI all go through it:
same names, same fields, same errors.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast

from toolcode._audit import AuditLog, Quarantine
from toolcode._errors import error_info
from toolcode._executor import Executor
from toolcode._limits import NARROW_HINT, json_text
from toolcode._models import (
    ApprovalRequest,
    CallFailure,
    CallSummary,
    ChainOutcome,
    DocsResult,
    ErrorInfo,
    ExamplesResult,
    ExecuteOutcome,
    NamespacesResult,
    PausedEntry,
    PausedResult,
    PendingCallInfo,
    ResultPage,
    RunToolOutcome,
    SearchResult,
    SessionReport,
    SessionsResult,
    SnippetEntry,
    SnippetsResult,
    StoredResultInfo,
    ToolApprovalEntry,
    ToolApprovalsResult,
    ToolListResult,
    TraceEntry,
)
from toolcode._operations import Operations
from toolcode._options import ExecuteOptions, parse_options
from toolcode._otel import RunSpan, run_span
from toolcode._paused import PausedRun, PausedRuns, check_decision
from toolcode._policy import Asker, AuditEntry, Gate
from toolcode._results import StoredResults
from toolcode._sessions import SessionRun, Sessions, tools_imports
from toolcode._snippets import SnippetLibrary
from toolcode._types import ExecuteParams, ExecuteResult, LimitsReport, OnToolCall, ToolCallRecord
from toolcode._view import CatalogView
from toolcode.exceptions import ApprovalRequiredError, ErrorCode, InvalidArgumentsError, ToolCodeError, ToolError, clip
from toolindex import Index, Tool, ToolIndexError
from toolindex.log import get_logger
from toolrun import Runner

__all__ = ["CodeMode", "PrintListener", "ToolStart", "outcome_text"]

ToolStart = Callable[[str], Awaitable[None]]
"""Awaited with the tool id as each tool call of a run starts."""
PrintListener = Callable[[str, str], None]
"""Told of each write of a run to ``stdout`` or ``stderr`` (``(stream, text)``) as it happens; must not block."""

log = get_logger("toolcode.core")

_SUMMARY_FAILURES = 3
_SUMMARY_MESSAGE = 160


class CodeMode:
    """The code-mode operations over one catalog, the same for every door.

    Args:
        index: The tool catalog.
        store: The documentation store (``tooldocs.Store``), or ``None``.
        runner: Runs the tools.
        executor: Runs snippets.
        defaults: Server-wide options of every run and the namespace filter of every door
            (unset fields: the built-in defaults).
        ceilings: The highest limits a caller may ask for (``None``: no ceilings; the
            operator's own doors, the CLI and Python, use none; the MCP server does).
        call_timeout: Seconds a direct ``run_tool`` / ``run_chain`` call may take when the
            caller gives none.
        unavailable: Live mapping of servers that could not be reached (``Toolbox.failed``).
        sessions: Where sessions live (``None``: runs cannot use sessions).
        snippets: The saved snippets (``None``: snippets cannot be saved).
        paused: Where runs waiting for a decision are kept (``None``: a run that reaches a call
            the policy asks about fails with ``not_allowed`` instead of pausing).
        audit_log: Where every call and decision is recorded (``None``: nowhere).
        quarantine: The approved tool definitions (``None``: quarantine is off).
        results: Where content cut by the output budget is kept (``None``: it is only cut).
    """

    def __init__(
        self,
        index: Index,
        store: Any,
        runner: Runner,
        executor: Executor,
        *,
        defaults: ExecuteOptions | None = None,
        ceilings: ExecuteOptions | None = None,
        call_timeout: float = 60.0,
        unavailable: Mapping[str, str] | None = None,
        sessions: Sessions | None = None,
        snippets: SnippetLibrary | None = None,
        paused: PausedRuns | None = None,
        audit_log: AuditLog | None = None,
        quarantine: Quarantine | None = None,
        results: StoredResults | None = None,
    ) -> None:
        self.results = results
        self.index = index
        self.sessions = sessions
        self.paused = paused
        self.audit_log = audit_log
        self.quarantine = quarantine
        self.snippets = snippets
        self.unavailable = unavailable
        self._observers: list[OnToolCall] = []
        self.store = store
        self.runner = runner
        self.executor = executor
        self.defaults = defaults or ExecuteOptions()
        self.ceilings = ceilings
        self.call_timeout = call_timeout

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

    def _listener(self, on_tool_call: OnToolCall | None) -> OnToolCall | None:
        listeners = [*self._observers, *([on_tool_call] if on_tool_call is not None else [])]
        if not listeners:
            return None
        if len(listeners) == 1:
            return listeners[0]

        async def notify(record: ToolCallRecord) -> None:
            for listener in listeners:
                await listener(record)

        return notify

    def with_ceilings(self, ceilings: ExecuteOptions | None) -> CodeMode:
        """The same core (same catalog, runner, executor) for callers bound by ``ceilings``."""
        twin = copy.copy(self)
        twin.ceilings = ceilings
        return twin

    # -- the caller's view --------------------------------------------------------------

    def view(self, allowed_namespaces: Sequence[str] | None = None) -> CatalogView:
        """The catalog as a caller sees it (the server-wide filter, narrowed by ``allowed_namespaces``)."""
        base = self.defaults.allowed_namespaces
        if allowed_namespaces is None:
            allowed = base
        elif base is None:
            allowed = tuple(allowed_namespaces)
        else:
            allowed = tuple(n for n in allowed_namespaces if n in base)
        return CatalogView(self.index, allowed, self.unavailable)

    def operations(
        self,
        allowed_namespaces: Sequence[str] | None = None,
        *,
        ask: Asker | None = None,
        caller: str | None = None,
    ) -> Operations:
        """The operations for one door call (not counted, not traced; the policy applies to direct calls).

        Args:
            allowed_namespaces: Narrow the catalog further.
            ask: Asks a person about direct calls the policy asks for (``None``: they fail
                with ``approval_required``).
            caller: Who the calls are for (recorded in the audit log).
        """
        view = self.view(allowed_namespaces)
        gate = Gate(
            self.executor.policy,
            view,
            can_pause=True,  # a direct call's ask reaches the door, which asks a person or refuses
            quarantined=self.executor.quarantined,
            caller=caller,
            audit=[] if self.audit_log is not None else None,
        )
        return Operations(
            view,
            self.store,
            self.runner,
            call_timeout=self.call_timeout,
            modules=self.executor.modules,
            gate=gate,
            ask=ask,
        )

    @asynccontextmanager
    async def _door(
        self, name: str, ask: Asker | None, caller: str | None
    ) -> AsyncGenerator[tuple[Operations, RunSpan]]:
        """One direct call at a door: its operations (policy and audit), its span, the audit flushed after."""
        ops = self.operations(ask=ask, caller=caller)
        with run_span(name) as span:
            try:
                yield ops, span
            except ToolCodeError as e:
                span.outcome(e.code.value)
                raise
            finally:
                await self._flush_audit(ops)

    async def _flush_audit(self, ops: Operations) -> None:
        gate = ops.gate
        if gate is not None and gate.audit and self.audit_log is not None:
            entries, gate.audit[:] = list(gate.audit), []
            await self.audit_log.write(entries)

    # -- operations ---------------------------------------------------------------------

    async def search_tools(
        self,
        query: Any,
        limit: Any = 10,
        detail: Any = "summary",
        namespaces: Any = None,
    ) -> SearchResult:
        """Rank the visible tools for a free-text query (see :meth:`Operations.search_tools`)."""
        return await self.operations().search_tools(query, limit, detail, namespaces)

    async def list_tools(self, namespace: Any = None, cursor: Any = None, limit: Any = 100) -> ToolListResult:
        """A page of the visible catalog (see :meth:`Operations.list_tools`)."""
        return await self.operations().list_tools(namespace, cursor, limit)

    async def list_namespaces(self) -> NamespacesResult:
        """Every visible namespace with its tool count."""
        return await self.operations().list_namespaces()

    async def describe_tool(self, tool_id: Any, level: Any = "schema") -> DocsResult:
        """Documentation of one tool or a list of tools (see :meth:`Operations.describe_tool`)."""
        return await self.operations().describe_tool(tool_id, level)

    async def list_tool_examples(self, tool_id: Any, max: Any = 3) -> ExamplesResult:
        """Usage examples of one tool."""
        return await self.operations().list_tool_examples(tool_id, max)

    async def run_tool(
        self,
        tool_id: Any,
        args: Any = None,
        *,
        timeout: Any = None,
        ask: Asker | None = None,
        caller: str | None = None,
    ) -> RunToolOutcome:
        """Run one tool directly (see :meth:`Operations.run_tool`); the policy applies.

        Args:
            tool_id: The tool.
            args: Its arguments.
            timeout: Seconds before the call is abandoned.
            ask: Asks a person when the policy says ``ask`` (``None``: the call fails with
                ``approval_required``; run it from code to pause instead).
            caller: Who the call is for (the audit log).
        """
        async with self._door("toolcode.run_tool", ask, caller) as (ops, span):
            out = await ops.run_tool(tool_id, args, timeout=timeout)
            span.outcome(None)
        budget = self.defaults.resolve().max_output_chars
        text = json_text(out.value)
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
        async with self._door("toolcode.run_tool", ask, caller) as (ops, span):
            result = await ops.run_result(tool_id, args)
            span.outcome(None)
            return result

    async def run_chain(
        self,
        steps: Any,
        *,
        ask: Asker | None = None,
        caller: str | None = None,
        on_step: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    ) -> ChainOutcome:
        """Run tools in sequence without code (see :meth:`Operations.run_chain`); every step is judged first."""
        limit = self.defaults.resolve().max_chain_steps
        async with self._door("toolcode.run_chain", ask, caller) as (ops, span):
            ops.on_step = on_step  # {"step", "tool_id", "status": started|ok|error, "duration_ms", "code"}
            out = await ops.run_chain(steps, max_steps=limit)
            span.outcome("chain_aborted" if out.aborted else None)
            return out

    async def list_sessions(self, caller: str | None = None) -> SessionsResult:
        """The caller's sessions (name, created, last used, size, runs, expiry).

        Raises:
            InvalidArgumentsError: If this core has no state store.
            StateUnavailableError: If the store cannot be reached.
        """
        if self.sessions is None:
            raise InvalidArgumentsError("session", "sessions need a state store (this core has none)")
        infos = await self.sessions.list(caller)
        return SessionsResult(sessions=infos)

    async def reset_session(self, name: Any, caller: str | None = None) -> bool:
        """Forget a session's state; ``False`` when it had none.

        Raises:
            InvalidArgumentsError: If the name is invalid or this core has no state store.
            StateUnavailableError: If the store cannot be reached.
        """
        if self.sessions is None:
            raise InvalidArgumentsError("session", "sessions need a state store (this core has none)")
        return await self.sessions.reset(caller, name)

    def _library(self) -> SnippetLibrary:
        if self.snippets is None:
            raise InvalidArgumentsError("name", "saved snippets need a state store (this core has none)")
        return self.snippets

    async def save_snippet(self, name: Any, code: Any, description: Any, input_schema: Any = None) -> SnippetEntry:
        """Save (or replace) a parameterised snippet; it becomes the tool ``snippets:<name>``.

        The snippet reads its arguments as ``input``; ``input_schema`` (a JSON Schema object)
        describes them (default: any object). It is type-checked before it is saved.

        Raises:
            InvalidArgumentsError: If a field is invalid (names it).
            TypeCheckError: If the code calls its tools wrongly.
            StateUnavailableError: If the state store cannot be written.
        """
        saved = await self._library().save(name, code, description, input_schema, view=self.view())
        return SnippetEntry(**saved.to_dict())

    async def list_snippets(self) -> SnippetsResult:
        """Every saved snippet (without its code), by name."""
        lib = self._library()
        items = [SnippetEntry(**lib.snippets[n].to_dict(with_code=False)) for n in sorted(lib.snippets)]
        return SnippetsResult(snippets=items)

    async def show_snippet(self, name: Any) -> SnippetEntry:
        """One saved snippet with its code.

        Raises:
            InvalidArgumentsError: If there is no snippet of this name.
        """
        return SnippetEntry(**self._library().get(name).to_dict())

    async def delete_snippet(self, name: Any) -> bool:
        """Delete a saved snippet (and its tool); ``False`` when there was none."""
        return await self._library().delete(name)

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
        """Run a snippet and return the executor's full result (raises on failure).

        Args:
            code: Python source.
            input: Any JSON value, read by the snippet as ``input``.
            options: This run's options.
            on_tool_call: Awaited as each tool call completes.
            session: Run in this named session (see :meth:`execute`).
            caller: Who the run is for.

        Raises:
            toolcode.exceptions.ToolCodeError: With the partial result in ``result``.
        """
        opts = self.options(options)
        listener = self._listener(on_tool_call)
        try:
            if session is None:
                params = ExecuteParams(code=code, input=input, options=opts, caller=caller)
                return await self.executor.execute(params, on_tool_call=listener)
            if self.sessions is None:
                raise InvalidArgumentsError("session", "sessions need a state store (this core has none)")
            hold = opts.resolve(self.defaults).timeout
            async with self.sessions.use(caller, session, hold=min(hold, 86_400.0)) as run:
                params = ExecuteParams(code=code, input=input, options=opts, caller=caller, session=run.state)
                result = await self.executor.execute(params, on_tool_call=listener)
                run.state.imports = (*run.state.imports, *tools_imports(code))
            return result
        except ApprovalRequiredError as exc:
            raise await self._keep_paused(exc) from None

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
            says whether the session was new or reset.
        """
        started = time.perf_counter()
        try:
            if not isinstance(code, str):
                raise InvalidArgumentsError("code", f"must be a string, got {type(code).__name__}")
            if not code.strip():
                raise InvalidArgumentsError("code", "is empty: write a program that sets __out")
            opts = self.options(options)
            if session is not None:
                if self.sessions is None:
                    raise InvalidArgumentsError("session", "sessions need a state store (this core has none)")
                Sessions.check_name(session)
        except ToolCodeError as exc:
            return self.outcome(None, exc, "summary", started)
        detail = opts.trace or self.defaults.trace or "summary"
        view = self.view(opts.allowed_namespaces)
        listener = self._listener(on_tool_call)
        if session is None or self.sessions is None:
            try:
                result = await self.executor.execute(
                    ExecuteParams(code=code, input=input, options=opts, caller=caller),
                    on_tool_call=listener,
                    on_tool_start=on_tool_start,
                    on_print=on_print,
                )
            except ToolCodeError as exc:
                return self.outcome(exc.result, await self._keep_paused(exc), detail, started, view)
            return await self._with_stored(self.outcome(result, None, detail, started), result, caller)
        return await self._execute_in_session(
            code, input, opts, listener, caller, session, detail, started, view, on_tool_start, on_print
        )

    async def _execute_in_session(
        self,
        code: str,
        input: Any,
        opts: ExecuteOptions,
        listener: OnToolCall | None,
        caller: str | None,
        name: str,
        detail: str,
        started: float,
        view: CatalogView,
        on_tool_start: ToolStart | None = None,
        on_print: PrintListener | None = None,
    ) -> ExecuteOutcome:
        assert self.sessions is not None
        result: ExecuteResult | None = None
        error: ToolCodeError | None = None
        run: SessionRun | None = None
        hold = opts.resolve(self.defaults).timeout
        try:
            async with self.sessions.use(caller, name, hold=min(hold, 86_400.0)) as run:
                try:
                    result = await self.executor.execute(
                        ExecuteParams(code=code, input=input, options=opts, caller=caller, session=run.state),
                        on_tool_call=listener,
                        on_tool_start=on_tool_start,
                        on_print=on_print,
                    )
                except ToolCodeError as exc:
                    error, result = exc, exc.result
                if run.state.kept is not None:
                    run.state.imports = (*run.state.imports, *tools_imports(code))
        except ToolCodeError as exc:  # the session itself: busy, a limit, the store
            error = exc
        if error is not None:
            error = await self._keep_paused(error)
        out = self.outcome(result, error, detail, started, view)
        if error is None and result is not None:
            out = await self._with_stored(out, result, caller)
        if run is not None:
            report = SessionReport(name=name, new=run.new, reset=run.reset, size_bytes=run.size_bytes)
            out = out.model_copy(update={"session": report})
        return out

    # -- stored results -------------------------------------------------------------------

    async def _store(self, caller: str | None, what: str, text: str, media: str) -> StoredResultInfo | None:
        if self.results is None or not self.results.settings.enabled:
            return None
        try:
            kept = await self.results.keep(caller, what, text, media)
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
        if self.results is None:
            raise InvalidArgumentsError("ref", "this core keeps no results (no state store)")
        return ResultPage(**await self.results.read(ref, caller, offset, limit))

    # -- paused runs ----------------------------------------------------------------------

    async def _keep_paused(self, exc: ToolCodeError) -> ToolCodeError:
        """Store a paused run; what to report instead when it cannot be kept."""
        if not isinstance(exc, ApprovalRequiredError):
            return exc
        if self.paused is None:
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
            await self.paused.save(exc.paused)
        except ToolCodeError as e:  # the store is away: the run cannot wait
            e.result = exc.result
            return e
        return exc

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
            caller: Who decides: only the run's own caller can resume it.
            on_tool_call: Awaited as each tool call completes.
            by: Who decided, for the audit log and the trace (default: the caller).
            on_tool_start: Awaited with the tool id as each tool call starts.
            on_print: Told of each write to stdout or stderr as it happens.

        Returns:
            The run's outcome, with the calls from before the pause in its trace, and an
            ``approval`` entry where it paused; or ``approval_required`` again when it reaches
            another call that needs a decision.
        """
        started = time.perf_counter()
        try:
            if self.paused is None:
                raise InvalidArgumentsError("execution_id", "this core keeps no paused runs (no state store)")
            chosen = check_decision(decision)
            run = await self.paused.take(execution_id, caller)
        except ToolCodeError as exc:
            return self.outcome(None, exc, "summary", started)
        who = by or (f"person:{caller}" if caller and caller != "local" else "person")
        pending = run.pending
        detail = run.options.trace or self.defaults.trace or "summary"
        view = self.view(run.options.allowed_namespaces)
        waited = max(0.0, time.time() - run.paused_at)
        run.trace.append(
            ToolCallRecord(
                tool_id=pending[0].tool_id if pending else "",
                args=dict(pending[0].args) if len(pending) == 1 else {"calls": [p.tool_id for p in pending]},
                structured={"decision": chosen, "by": who, "waited_s": round(waited, 1), "line": run.state.line},
                backend_kind=None,
                error=None,
                error_op=APPROVAL_OP,
                duration_ms=0.0,
                started_ms=run.elapsed * 1000.0,
            )
        )
        if self.audit_log is not None:
            outcome_word = {"approve": "approved", "approve_run": "approved", "deny": "denied", "abort": "aborted"}
            await self.audit_log.write(
                [
                    AuditEntry(time.time(), p.tool_id, p.tier, outcome_word[chosen], who, caller, run.execution_id)
                    for p in pending
                ]
            )
        if chosen == "abort":
            err = ToolError(
                pending[0].tool_id if pending else "",
                f"the run was aborted by {who} before this call"
                + (f" (line {run.state.line})" if run.state.line is not None else ""),
                "not_allowed",
                code=ErrorCode.APPROVAL_DENIED,
            )
            return self.outcome(_paused_result(run), err, detail, None, view)
        run.apply(chosen, who)
        listener = self._listener(on_tool_call)
        if run.session is None or self.sessions is None:
            try:
                result = await self.executor.resume(
                    run, on_tool_call=listener, on_tool_start=on_tool_start, on_print=on_print
                )
            except ToolCodeError as exc:
                return self.outcome(exc.result, await self._keep_paused(exc), detail, None, view)
            return await self._with_stored(self.outcome(result, None, detail), result, run.caller)
        return await self._resume_in_session(run, listener, detail, view, on_tool_start, on_print)

    async def _resume_in_session(
        self,
        run: PausedRun,
        listener: OnToolCall | None,
        detail: str,
        view: CatalogView,
        on_tool_start: ToolStart | None,
        on_print: PrintListener | None,
    ) -> ExecuteOutcome:
        assert self.sessions is not None and run.session is not None
        result: ExecuteResult | None = None
        error: ToolCodeError | None = None
        srun: SessionRun | None = None
        try:
            hold = min(max(run.options.timeout - run.elapsed, 1.0), 86_400.0)
            async with self.sessions.use(run.caller, run.session, hold=hold) as srun:
                try:
                    result = await self.executor.resume(
                        run, on_tool_call=listener, session=srun.state, on_tool_start=on_tool_start, on_print=on_print
                    )
                except ToolCodeError as exc:
                    error, result = exc, exc.result
                if srun.state.kept is not None:
                    srun.state.imports = (*srun.state.imports, *tools_imports(run.code))
        except ToolCodeError as exc:
            error = exc
        if error is not None:
            error = await self._keep_paused(error)
        out = self.outcome(result, error, detail, None, view)
        if error is None and result is not None:
            out = await self._with_stored(out, result, run.caller)
        if srun is not None:
            report = SessionReport(name=run.session, new=srun.new, reset=srun.reset, size_bytes=srun.size_bytes)
            out = out.model_copy(update={"session": report})
        return out

    async def paused_outcome(self, execution_id: Any, caller: str | None = None) -> ExecuteOutcome:
        """A paused run's outcome as it was when it paused (``approval_required``), without deciding.

        Args:
            execution_id: The run.
            caller: Whose run it is: only its own caller sees it.

        Returns:
            The outcome (an ``invalid_arguments`` outcome for an unknown, finished or another
            caller's run).
        """
        try:
            if self.paused is None:
                raise InvalidArgumentsError("execution_id", "this core keeps no paused runs (no state store)")
            run = await self.paused.get(execution_id, caller)
        except ToolCodeError as exc:
            return self.outcome(None, exc, "summary")
        detail = run.options.trace or self.defaults.trace or "summary"
        return self.outcome(_paused_result(run), ApprovalRequiredError(run), detail)

    async def list_paused(self, caller: str | None = None) -> PausedResult:
        """The caller's runs that wait for a decision, oldest first."""
        if self.paused is None:
            return PausedResult(paused=[])
        runs = await self.paused.list(caller)
        return PausedResult(
            paused=[
                PausedEntry(
                    execution_id=r.execution_id,
                    pending=[PendingCallInfo(**p.to_dict()) for p in r.pending],
                    line=r.state.line,
                    session=r.session,
                    paused_at=round(r.paused_at, 3),
                    expires=round(r.expires, 3) if r.expires is not None else None,
                )
                for r in runs
            ]
        )

    # -- quarantine -----------------------------------------------------------------------

    def _all_tools(self) -> list[Tool]:
        out: list[Tool] = []
        cursor: str | None = None
        while True:
            page = self.index.list_tools(cursor=cursor, limit=1000)
            for entry in page.tools:
                try:
                    out.append(self.index.get(entry.id))
                except ToolIndexError:
                    continue
            cursor = page.next_cursor
            if cursor is None:
                return out

    def _quarantine(self) -> Quarantine:
        if self.quarantine is None:
            raise InvalidArgumentsError("tools", "quarantine is off (set toolcode.policy.quarantine to true)")
        return self.quarantine

    async def approve_tools(self, patterns: Any, *, by: str = "operator") -> ToolApprovalsResult:
        """Approve the current definitions of the tools matching ``patterns`` (ids or globs).

        Raises:
            InvalidArgumentsError: If quarantine is off, or ``patterns`` is not a list of strings.
        """
        quarantine = self._quarantine()
        if isinstance(patterns, str):
            patterns = [patterns]
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in cast("list[Any]", patterns)):
            raise InvalidArgumentsError("tools", "must be a list of tool ids or globs")
        wanted = cast("list[str]", patterns)
        chosen = [t for t in self._all_tools() if any(fnmatch.fnmatchcase(t.id, p) for p in wanted)]
        approved = await quarantine.approve(chosen, by)
        return ToolApprovalsResult(approved=approved)

    def quarantined_tools(self, *, only_blocked: bool = True) -> ToolApprovalsResult:
        """Each tool's standing in the quarantine (by default only the blocked ones: new or changed).

        Raises:
            InvalidArgumentsError: If quarantine is off.
        """
        quarantine = self._quarantine()
        entries = [ToolApprovalEntry(**quarantine.status(t).to_dict()) for t in self._all_tools()]
        if only_blocked:
            entries = [e for e in entries if e.state != "approved" and not e.tool_id.startswith("snippets:")]
        return ToolApprovalsResult(tools=sorted(entries, key=lambda e: e.tool_id))

    def outcome(
        self,
        result: ExecuteResult | None,
        error: ToolCodeError | None,
        detail: str,
        started: float | None = None,
        view: CatalogView | None = None,
    ) -> ExecuteOutcome:
        """The door's view of a run: value and output, error info, call summary, trace on request.

        ``view`` is the run's view of the catalog: hints name only tools the run could use.
        """
        records: tuple[ToolCallRecord, ...] = result.tool_calls if result is not None else ()
        failures = [r for r in records if r.error is not None]
        calls = sum(1 for r in records if r.error_op != APPROVAL_OP)
        summary = CallSummary(
            count=calls,
            failed=len(failures),
            failures=[
                CallFailure(
                    tool_id=r.tool_id, code=r.code or "tool_error", message=clip(r.error or "", _SUMMARY_MESSAGE)
                )
                for r in failures[:_SUMMARY_FAILURES]
            ],
        )
        budget = int(result.limits.applied.get("max_output_chars", 0)) if result is not None else 0
        trace = _trace_entries(records, budget or sys.maxsize) if detail == "full" else None
        info: ErrorInfo | None = None
        approval: ApprovalRequest | None = None
        if isinstance(error, ApprovalRequiredError):
            paused: PausedRun = error.paused
            approval = ApprovalRequest(
                execution_id=paused.execution_id,
                pending=[PendingCallInfo(**p.to_dict()) for p in paused.pending],
                line=paused.state.line,
                may_call=paused.may_call,
                expires=round(paused.expires, 3) if paused.expires is not None else None,
            )
        elif error is not None:
            info = error_info(error, view or self.view())
        duration = result.duration_ms if result is not None else 0.0
        if started is not None and result is None:
            duration = (time.perf_counter() - started) * 1000
        truncated = list(result.limits.truncated) if result is not None else []
        if trace is not None and len(trace) < len(records) and "trace" not in truncated:
            truncated.append("trace")
        return ExecuteOutcome(
            ok=error is None,
            value=result.value if result is not None and error is None else None,
            stdout=result.stdout if result is not None else "",
            stderr=result.stderr if result is not None else "",
            error=info,
            calls=summary,
            trace=trace,
            truncated=truncated,
            duration_ms=round(duration, 1),
            status="approval_required" if approval is not None else ("ok" if error is None else "error"),
            approval=approval,
        )


APPROVAL_OP = "approval"
"""``error_op`` of the trace entry that records a decision on a paused run (not a tool call)."""


def _paused_result(run: PausedRun) -> ExecuteResult:
    """What a paused run had produced when it stopped (its value is not known yet)."""
    return ExecuteResult(
        value=None,
        stdout=run.stdout,
        stderr=run.stderr,
        tool_calls=tuple(run.trace),
        duration_ms=run.elapsed * 1000.0,
        limits=LimitsReport(applied=run.options.applied(), tool_calls=run.calls, output_chars=0),
    )


def _trace_entries(records: Sequence[ToolCallRecord], budget: int) -> list[TraceEntry]:
    # Payloads were already cut to the run's budget; drop whole entries beyond it (the summary
    # still counts every call).
    out: list[TraceEntry] = []
    used = 0
    for r in records:
        entry = TraceEntry(
            tool_id=r.tool_id,
            ok=r.error is None,
            duration_ms=round(r.duration_ms, 2),
            error=r.error,
            code=r.code,
            args=dict(r.args) if r.args else {},
            result=r.structured,
        )
        size = len(json.dumps(entry.model_dump(mode="json"), default=str))
        if out and used + size > budget:
            break
        out.append(entry)
        used += size
    return out


def outcome_text(outcome: ExecuteOutcome) -> str:
    """What a model reads of a run: the value, stdout, stderr, the error, and one summary line.

    The summary line is the only overhead: ``[13 tool calls, 412 ms]``, with the failures
    (tool id and code) when there are some; the full trace stays in the structured result.
    """
    parts: list[str] = []
    if outcome.approval is not None:
        a = outcome.approval
        where = f"line {a.line} calls" if a.line is not None else "the run calls"
        for p in a.pending[:5]:
            shown = clip(json.dumps(p.args, ensure_ascii=False, default=str), 300)
            parts.append(f"approval required: {where} {p.tool_id} {shown} ({p.tier}; {p.reason})")
        parts.append(
            f"paused, execution_id {a.execution_id}: decide with resume_execution(execution_id, decision) — "
            "approve, approve_run, deny or abort"
        )
    elif outcome.ok:
        parts.append(json.dumps(outcome.value, ensure_ascii=False, default=str))
    elif outcome.error is not None:
        e = outcome.error
        where = f" at line {e.line}" if e.line is not None else ""
        parts.append(f"error [{e.code}]{where}: {e.message}")
        if e.hint and e.hint not in e.message:
            parts.append(f"hint: {e.hint}")
    if outcome.stdout:
        parts.append("stdout:\n" + outcome.stdout.rstrip("\n"))
    if outcome.stderr:
        parts.append("stderr:\n" + outcome.stderr.rstrip("\n"))
    c = outcome.calls
    line = f"[{c.count} tool call{'s' if c.count != 1 else ''}"
    if c.failed:
        shown = ", ".join(f"{f.tool_id} ({f.code})" for f in c.failures)
        more = f" +{c.failed - len(c.failures)}" if c.failed > len(c.failures) else ""
        line += f", {c.failed} failed: {shown}{more}"
    line += f", {outcome.duration_ms:.0f} ms"
    # A cut value, stdout or stderr carries its own marker (how much, and where the rest is); a
    # trace that is not shown (trace="summary") is not reported as cut either.
    cut = [t for t in outcome.truncated if t == "error" or (t == "trace" and outcome.trace is not None)]
    if cut:
        line += f"; truncated: {', '.join(cut)}"
    parts.append(line + "]")
    return "\n".join(parts)
