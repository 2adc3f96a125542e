"""The default :class:`~toolrun.Runner`: resolve → backend → validate → call → normalise → validate."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from time import perf_counter
from types import CoroutineType
from typing import Any, Protocol, Self, cast, runtime_checkable

import anyio

from toolindex import BackendKind, BackendRef, ChangeEvent, Index, Tool, ToolIndexError
from toolindex.log import get_logger
from toolrun._arguments import DEFAULT_ARGUMENT_LIMITS, ArgumentLimits, check_arguments
from toolrun._redact import Redactor, default_redactor
from toolrun._schema_limits import DEFAULT_SCHEMA_LIMITS, SchemaLimits
from toolrun._types import (
    Backend,
    BackendResult,
    ChainResult,
    ChainStep,
    ProgressCallback,
    ProgressEvent,
    RunResult,
    StepResult,
    ValidationPolicy,
    quick_new,
)
from toolrun._validation import DEFAULT_VALIDATION_POLICY, CompiledSchema, SchemaCache
from toolrun.exceptions import (
    BackendUnavailableError,
    ChainError,
    InputValidationError,
    InvalidSchemaError,
    NoBackendError,
    OutputValidationError,
    StreamNotSupportedError,
    ToolExecutionError,
    ToolRunError,
    ValidationProblem,
    from_index_error,
)

__all__ = ["DEFAULT_MAX_CHAIN_STEPS", "BackendChooser", "DefaultRunner", "ResultRecorder"]

_log = get_logger("toolrun")
_new_result = quick_new(RunResult)

DEFAULT_MAX_CHAIN_STEPS = 100
"""Longest chain :meth:`DefaultRunner.run_chain` accepts unless configured otherwise."""

BackendChooser = Callable[[Tool, Sequence[tuple[BackendRef, Backend]]], tuple[BackendRef, Backend] | None]
"""Picks one candidate ``(ref, backend)`` for a tool, or ``None`` for "none of them"."""

_POLICIES = ("error", "warn", "off")


@runtime_checkable
class ResultRecorder(Protocol):
    """Receives successful results, e.g. so a docs store can learn a tool's result shape.

    Contract:
        - ``record_result`` is synchronous and cheap; it is called once per successful
          call, on the event loop, after output validation.
        - It may be called from many tasks at once (never from two threads).
        - An exception it raises is logged and does not fail the call.
    """

    def record_result(self, tool_id: str, value: Any) -> None:
        """Take note of one successful result (``RunResult.value``) of the tool."""
        ...


class _Entry:
    """A resolved tool: everything the hot path needs, computed once per index version."""

    __slots__ = ("backend", "checks_output", "input", "input_error", "output", "output_error", "ref", "tool", "tool_id")

    def __init__(
        self,
        tool: Tool,
        ref: BackendRef,
        backend: Backend,
        input_schema: CompiledSchema | None,
        input_error: InvalidSchemaError | None,
        output_schema: CompiledSchema | None,
        output_error: InvalidSchemaError | None,
    ) -> None:
        self.tool = tool
        self.tool_id = tool.id
        self.ref = ref
        self.backend = backend
        self.input = input_schema
        self.input_error = input_error
        self.output = output_schema
        self.output_error = output_error
        self.checks_output = tool.output_schema is not None
        """Read once: a model's attribute costs a plain one's several times over."""


class DefaultRunner:
    """Runs tools from an index on the backends it was given.

    Pipeline of :meth:`run`: resolve the id in the index → choose a backend → validate the
    arguments against the input schema → call (with the timeout) → the backend normalises
    the result → a tool-level error (MCP ``isError``, an exception in a local function)
    raises ``ToolExecutionError`` → validate ``structured`` against the output schema per
    the policy → mask every registered secret in ``structured`` and ``content`` → hand the
    value to the ``store`` → return a :class:`RunResult`.

    **Secrets.** Every result passes one place before anything else sees it: each value
    registered with :func:`~toolrun.register_secrets` (the backends register their
    configuration's headers, ``env`` values, query keys and URL credentials) is replaced by
    ``***`` in it — as it is, percent-encoded, JSON-escaped or base64-encoded, in strings and
    keys at any depth. Traces, stored results, audit entries and a snippet's values are all
    made from the masked result. A result without a secret is returned as it came (no copy).

    **Backend precedence.** The candidates are the tool's backend references in the order
    the index holds them (registration order), each paired with the first of this runner's
    backends that ``handles()`` it; references no backend handles are dropped. With
    ``backend_order`` (a list of kinds such as ``["local", "mcp"]``) candidates of the listed
    kinds come first, in that order, then the rest. A ``chooser`` callable overrides all of
    this. The first candidate runs; there is no fallback to the next one on failure.

    **Arguments are JSON.** Before anything else, on every call, the arguments must be plain
    JSON (dicts with string keys, lists, strings without lone surrogates, finite numbers,
    booleans, ``None``) within ``argument_limits`` (64 levels, 4 MiB by default); otherwise
    ``InputValidationError`` names the path and the reason and no backend is called.

    **Validation.** Input is validated when ``validate_input`` is true (default). Output is
    validated per ``validation``: ``"error"`` (default) raises ``OutputValidationError``,
    ``"warn"`` logs a warning and returns the result, ``"off"`` skips the check. Schemas
    are JSON Schema 2020-12 unless ``$schema`` names another draft (draft-07 is accepted),
    compiled by ``jsonschema-rs`` within ``schema_limits`` and never fetching anything;
    each distinct schema is compiled once, and a tool's resolution (tool, backend,
    compiled schemas) is cached until the index reports a change.

    Use as an async context manager, or call :meth:`aclose`: the runner owns its backends.
    """

    def __init__(
        self,
        index: Index,
        backends: Sequence[Backend],
        *,
        store: ResultRecorder | None = None,
        validation: ValidationPolicy = DEFAULT_VALIDATION_POLICY,
        validate_input: bool = True,
        max_chain_steps: int = DEFAULT_MAX_CHAIN_STEPS,
        default_timeout: float | None = None,
        backend_order: Sequence[BackendKind] | None = None,
        chooser: BackendChooser | None = None,
        schema_limits: SchemaLimits = DEFAULT_SCHEMA_LIMITS,
        argument_limits: ArgumentLimits = DEFAULT_ARGUMENT_LIMITS,
        redactor: Redactor | None = None,
    ) -> None:
        """Create a runner.

        Args:
            index: Where tools are resolved.
            backends: The backends to run tools on; the runner closes them in :meth:`aclose`.
            store: Receives every successful result (``record_result(tool_id, value)``).
            validation: Output validation policy: ``"error"``, ``"warn"`` or ``"off"``.
            validate_input: Whether arguments are validated against the input schema.
            max_chain_steps: Most steps :meth:`run_chain` accepts.
            default_timeout: Timeout in seconds for calls that give none; ``None`` for no limit.
            backend_order: Preferred backend kinds, most preferred first (see the class docs).
            chooser: Picks the backend for a tool; overrides ``backend_order``.
            schema_limits: Bounds every tool schema must stay within to be compiled; a tool
                over them fails every call with ``InputValidationError`` saying which bound.
            argument_limits: Depth and size bounds on arguments (checked on every call).
            redactor: Whose secrets are masked in every result (default: the process-wide
                registry that :func:`~toolrun.register_secrets` and the backends fill).

        Raises:
            ValueError: If ``validation``, ``max_chain_steps`` or ``default_timeout`` is invalid.
        """
        if validation not in _POLICIES:
            raise ValueError(f"validation must be one of {', '.join(_POLICIES)}; got {validation!r}")
        if max_chain_steps < 1:
            raise ValueError(f"max_chain_steps must be at least 1, got {max_chain_steps}")
        if default_timeout is not None and not default_timeout > 0:
            raise ValueError(f"default_timeout must be positive, got {default_timeout}")
        self.index = index
        self._backends: tuple[Backend, ...] = tuple(backends)
        self._store = store
        self.validation: ValidationPolicy = validation
        self.validate_input = validate_input
        self.max_chain_steps = max_chain_steps
        self.default_timeout = default_timeout
        self._order: dict[str, int] = {k: i for i, k in enumerate(backend_order or ())}
        self._chooser = chooser
        self._schemas = SchemaCache(limits=schema_limits)
        self._argument_limits = argument_limits
        self._redactor = redactor if redactor is not None else default_redactor()
        self._entries: dict[str, _Entry] = {}
        self._generation = 0
        self._closed = False
        self._stack: AsyncExitStack | None = None
        self._unsubscribe = index.subscribe(self._on_change)

    # -- lifecycle ----------------------------------------------------------------

    @property
    def backends(self) -> tuple[Backend, ...]:
        """The backends this runner owns, in the order given."""
        return self._backends

    async def attach(self) -> list[Tool]:
        """Let every backend register its tools in the index.

        Returns:
            All tools registered, backend by backend.

        Raises:
            ToolRunError: What a backend raises (e.g. ``BackendUnavailableError``).
        """
        tools: list[Tool] = []
        for backend in self._backends:
            tools.extend(await backend.attach(self.index))
        return tools

    async def aclose(self) -> None:
        """Close every backend (even if one fails) and stop following the index; idempotent.

        Raises:
            Exception: The first error a backend raised while closing, after all were closed.
        """
        if self._closed:
            return
        self._closed = True
        self._unsubscribe()
        self._entries.clear()
        errors: list[Exception] = []
        with anyio.CancelScope(shield=True):
            for backend in self._backends:
                try:
                    await backend.aclose()
                except Exception as e:  # close the others first, then report
                    _log.exception("runner.backend_close_failed", backend=backend.kind)
                    errors.append(e)
        if errors:
            raise errors[0]

    async def __aenter__(self) -> Self:
        # Backends that hold background tasks (an MCP session's reader) are async context
        # managers; enter them here so `async with DefaultRunner(...)` is all a user needs.
        stack = AsyncExitStack()
        try:
            for backend in self._backends:
                if isinstance(backend, AbstractAsyncContextManager):
                    await stack.enter_async_context(cast("AbstractAsyncContextManager[object]", backend))
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await self.aclose()
        finally:
            # Exit the backends' contexts from the task that entered them (anyio requires it).
            stack, self._stack = self._stack, None
            if stack is not None:
                await stack.aclose()

    # -- resolution ---------------------------------------------------------------

    def _on_change(self, event: ChangeEvent) -> None:
        # Called under the index lock: only drop caches here. Any change can alter bare-name
        # resolution, so everything goes; compiled schemas survive in the schema cache.
        self._generation += 1
        self._entries.clear()

    def _resolve(self, tool_id: str) -> _Entry:
        generation = self._generation
        try:
            tool = self.index.get(tool_id)
            refs = self.index.backends(tool.id)
        except ToolIndexError as e:  # raised as toolrun's own: ``except ToolRunError`` catches every failure
            raise from_index_error(e) from e
        ref, backend = self._choose(tool, refs)
        input_schema, input_error = self._compile(tool.input_schema)
        output_schema: CompiledSchema | None = None
        output_error: InvalidSchemaError | None = None
        if tool.output_schema is not None:
            output_schema, output_error = self._compile(tool.output_schema)
        entry = _Entry(tool, ref, backend, input_schema, input_error, output_schema, output_error)
        if generation == self._generation:  # not if the index changed while resolving
            self._entries[tool_id] = entry
        return entry

    def _compile(self, schema: dict[str, Any]) -> tuple[CompiledSchema | None, InvalidSchemaError | None]:
        # Bounds come first inside the cache (SchemaLimits): an over-bound schema is refused in
        # well under a millisecond, never handed to the validator. The error is kept in the
        # entry, so every call of the tool says why without compiling again.
        try:
            return self._schemas.get(schema), None
        except InvalidSchemaError as e:
            return None, e

    def candidates(self, tool: Tool, refs: Sequence[BackendRef]) -> list[tuple[BackendRef, Backend]]:
        """The ``(ref, backend)`` pairs that could run ``tool``, most preferred first.

        Args:
            tool: The tool.
            refs: Its backend references, as the index holds them.

        Returns:
            The candidates in precedence order (see the class docs); ``chooser`` is not applied.
        """
        out: list[tuple[BackendRef, Backend]] = []
        for ref in refs:
            for backend in self._backends:
                if backend.handles(ref):
                    out.append((ref, backend))
                    break
        if self._order:
            last = len(self._order)
            out.sort(key=lambda c: self._order.get(c[0].kind, last))
        return out

    def _choose(self, tool: Tool, refs: Sequence[BackendRef]) -> tuple[BackendRef, Backend]:
        cands = self.candidates(tool, refs)
        chosen = self._chooser(tool, cands) if self._chooser is not None else (cands[0] if cands else None)
        if chosen is None:
            raise NoBackendError(tool.id, [str(r) for r in refs])
        return chosen

    def _entry(self, tool_id: str) -> _Entry:
        if self._closed:
            raise BackendUnavailableError("runner", "the runner is closed")
        entry = self._entries.get(tool_id)
        return entry if entry is not None else self._resolve(tool_id)

    # -- running ------------------------------------------------------------------

    def run(
        self, tool_id: str, args: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> CoroutineType[Any, Any, RunResult]:
        """Run one tool (a coroutine method: ``await runner.run(...)``).

        Args:
            tool_id: ``ns:name``, ``ns:name:version`` or an unambiguous bare name.
            args: Arguments (a mapping); ``None`` for none.
            timeout: Seconds before ``ToolTimeoutError`` (default: the runner's ``default_timeout``).

        Returns:
            The result.

        Raises:
            ToolNotFoundError: If no tool has this id (with suggestions; also toolindex's class).
            AmbiguousToolIDError: If a bare name exists in several namespaces.
            InvalidToolIDError: If the id is malformed.
            NoBackendError: If none of this runner's backends serves the tool.
            InputValidationError: If the arguments do not match the input schema.
            ToolTimeoutError: If the call takes longer than the timeout.
            ToolExecutionError: If the tool reports failure (chained to the cause when known).
            OutputValidationError: If the result does not match the output schema (policy ``"error"``).
            BackendUnavailableError: If the backend cannot be reached or the runner is closed.
        """
        # The pipeline's own coroutine is handed out as is: one coroutine frame less per call.
        # Nothing runs (and nothing can raise) before it is awaited, as with an ``async def``.
        return self._run(tool_id, args, timeout, None)

    async def _run(
        self,
        target: str | _Entry,
        args: Mapping[str, Any] | None,
        timeout: float | None,
        progress: ProgressCallback | None,
    ) -> RunResult:
        start = perf_counter()
        if isinstance(target, _Entry):
            entry = target
        else:
            found = self._entries.get(target) if not self._closed else None
            entry = found if found is not None else self._entry(target)
        if args is None:
            a: dict[str, Any] = {}
        elif type(args) is dict:
            a = cast("dict[str, Any]", args)
        elif isinstance(args, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            a = dict(args)
        else:
            problem = ValidationProblem("$", f"arguments must be an object (a mapping), got {type(args).__name__}")
            raise InputValidationError(entry.tool_id, [problem])
        # Plain, bounded JSON before anything else looks at them: a value a backend cannot
        # serialise could break a session that other callers share.
        if (bad := check_arguments(a, self._argument_limits)) is not None:
            raise InputValidationError(entry.tool_id, [bad])
        if self.validate_input:
            schema = entry.input
            if schema is None:
                problem = ValidationProblem("$", _schema_error_text(entry.input_error))
                raise InputValidationError(entry.tool_id, [problem]) from entry.input_error
            if not schema.is_valid(a):
                raise InputValidationError(entry.tool_id, schema.problems(a))
        # One deadline per call: the backend enforces it (the Backend contract), not a second scope here.
        t = timeout if timeout is not None else self.default_timeout
        res = await entry.backend.call(entry.ref, entry.tool, a, timeout=t, progress=progress)
        if res.is_error:
            raise ToolExecutionError(entry.tool_id, _error_text(res), res.content) from res.error
        if entry.checks_output and self.validation != "off":
            out = entry.output
            if out is None or (res.structured is None and res.content) or not out.is_valid(res.structured):
                self._check_output(entry, res)  # says why, then raises or warns per the policy
        # Checked as the tool returned it, then masked: a secret must not fail a valid result,
        # and nothing downstream (caller, trace, stored result, audit, store) sees it.
        structured, content = res.structured, res.content
        if self._redactor.secrets:
            structured, content = self._mask(entry, structured, content)
        result = _new_result(entry.tool_id, entry.ref, structured, content, False, (perf_counter() - start) * 1e3)
        if self._store is not None:
            try:
                self._store.record_result(entry.tool_id, result.value)
            except Exception:  # the call succeeded; a store bug must not turn it into a failure
                _log.exception("runner.record_result_failed", tool_id=entry.tool_id)
        return result

    def _mask(
        self, entry: _Entry, structured: Any, content: tuple[dict[str, Any], ...]
    ) -> tuple[Any, tuple[dict[str, Any], ...]]:
        mask = self._redactor.mask
        try:
            return mask(structured), (mask(content) if content else content)
        except ValueError as e:  # a value that contains itself: it cannot be shown masked
            raise ToolExecutionError(entry.tool_id, f"the result cannot be checked for secrets: {e}") from e

    def _check_output(self, entry: _Entry, res: BackendResult) -> None:
        schema = entry.output
        problems: list[ValidationProblem]
        if schema is None:
            problems = [ValidationProblem("$", _schema_error_text(entry.output_error))]
        elif res.structured is None and res.content:
            problems = [ValidationProblem("$", "the tool declares an output schema but returned no structured result")]
        elif schema.is_valid(res.structured):
            return
        else:
            # The problems may quote the result: they are masked like it.
            mask = self._redactor.mask
            problems = [ValidationProblem(mask(p.path), mask(p.message)) for p in schema.problems(res.structured)]
        if self.validation == "error":
            raise OutputValidationError(entry.tool_id, problems) from entry.output_error
        _log.warning(
            "runner.output_invalid",
            tool_id=entry.tool_id,
            problems=[str(p) for p in problems[:10]],
        )

    # -- streaming ----------------------------------------------------------------

    async def stream(
        self, tool_id: str, args: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> AsyncIterator[ProgressEvent | RunResult]:
        """Run one tool, yielding its progress events as they arrive and the result last.

        Errors are those of :meth:`run`, raised from the iteration. To stop early, close the
        iterator in the task that iterates it (``async with contextlib.aclosing(...)``):
        that cancels the call.

        Args:
            tool_id: The tool.
            args: Arguments.
            timeout: Seconds before ``ToolTimeoutError`` (default: the runner's ``default_timeout``).

        Yields:
            ``ProgressEvent`` items, then one ``RunResult``.

        Raises:
            StreamNotSupportedError: If the chosen backend cannot report progress.
        """
        entry = self._entry(tool_id)
        if not entry.backend.supports_progress:
            raise StreamNotSupportedError(entry.tool_id, str(entry.ref))
        send, receive = anyio.create_memory_object_stream[ProgressEvent](math.inf)
        outcome: list[RunResult] = []
        failure: list[Exception] = []

        mask = self._redactor.mask

        async def on_progress(event: ProgressEvent) -> None:
            if event.message:
                event = dataclasses.replace(event, message=mask(event.message))
            try:
                send.send_nowait(event)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # the consumer is gone; the call is being cancelled

        async def work() -> None:
            with send:
                try:
                    outcome.append(await self._run(entry, args, timeout, on_progress))
                except Exception as e:  # handed to the consumer below, outside the task group
                    failure.append(e)

        closed_early = False
        async with anyio.create_task_group() as tg:
            tg.start_soon(work)
            with receive:
                try:
                    async for event in receive:
                        yield event
                except GeneratorExit:
                    # The consumer stopped iterating: cancel the call instead of letting the
                    # GeneratorExit escape the task group as an exception group.
                    closed_early = True
                    tg.cancel_scope.cancel()
        if closed_early:
            return
        if failure:
            raise failure[0]
        yield outcome[0]

    # -- chains -------------------------------------------------------------------

    async def run_chain(self, steps: Sequence[ChainStep], *, timeout: float | None = None) -> ChainResult:
        """Run steps in order (see :class:`ChainStep`).

        A step with ``use_previous=True`` gets the previous step's ``RunResult.value`` under
        ``args["previous"]``; if the previous step failed, that step fails with ``ChainError``.
        A failing step with ``on_error="abort"`` stops the chain (``aborted=True``); with
        ``"continue"`` the failure is recorded and the chain goes on. Failures of a step
        (``ToolRunError``) are recorded, not raised.

        Args:
            steps: The steps.
            timeout: Per-step timeout in seconds (default: the runner's ``default_timeout``).

        Returns:
            Every step that ran, in order, each with its result or error and its own duration.

        Raises:
            ChainError: Before anything runs, if there are more than ``max_chain_steps`` steps
                or a step is malformed.
        """
        steps = list(steps)
        self._check_chain(steps)
        chain_start = perf_counter()
        done: list[StepResult] = []
        aborted = False
        for i, step in enumerate(steps):
            step_start = perf_counter()
            try:
                args = dict(step.args)
                if step.use_previous:
                    prev = done[-1]
                    if prev.result is None:
                        raise ChainError(f"step {i} uses the previous result, but step {i - 1} failed")
                    args["previous"] = prev.result.value
                result = await self.run(step.tool_id, args, timeout=timeout)
                done.append(StepResult(step, i, result, None, (perf_counter() - step_start) * 1e3))
            except ToolRunError as e:
                done.append(StepResult(step, i, None, e, (perf_counter() - step_start) * 1e3))
                if step.on_error == "abort":
                    aborted = True
                    break
        return ChainResult(tuple(done), aborted, (perf_counter() - chain_start) * 1e3)

    def _check_chain(self, steps: list[ChainStep]) -> None:
        if len(steps) > self.max_chain_steps:
            raise ChainError(f"the chain has {len(steps)} steps; at most {self.max_chain_steps} are allowed")
        for i, step in enumerate(steps):
            if not isinstance(step, ChainStep):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ChainError(f"step {i} is a {type(step).__name__}, not a ChainStep")
            if not isinstance(step.tool_id, str) or not step.tool_id:  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ChainError(f"step {i} has no tool id")
            if not isinstance(step.args, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ChainError(f"step {i} ({step.tool_id}): args must be a mapping, got {type(step.args).__name__}")
            if step.on_error not in ("abort", "continue"):
                raise ChainError(f"step {i} ({step.tool_id}): on_error must be 'abort' or 'continue'")
            if step.use_previous:
                if i == 0:
                    raise ChainError(f"step 0 ({step.tool_id}) uses the previous result, but it is the first step")
                if "previous" in step.args:
                    raise ChainError(
                        f"step {i} ({step.tool_id}) has use_previous=True and its own 'previous' argument; "
                        "remove one of them"
                    )


def _schema_error_text(e: InvalidSchemaError | None) -> str:
    if e is None:  # pragma: no cover - an entry without a schema always has the error
        return "the tool's schema could not be compiled"
    return f"the tool's schema is {e}"


def _error_text(res: BackendResult) -> str:
    texts = [str(b.get("text", "")) for b in res.content if b.get("type") == "text"]
    text = "\n".join(t for t in texts if t)
    if text:
        return text
    if res.error is not None:
        return f"{type(res.error).__name__}: {res.error}"
    if res.structured is not None:
        return str(res.structured)[:1000]
    return "the tool reported an error without a message"
