"""The :class:`Executor`: defaults, validation, limits, tracing and error mapping around an engine."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import anyio

from toolcode._limits import CallBudget, OutputBuffer, as_json_data, check_json, fit_output_budget
from toolcode._tools import DefaultTools, DocStore
from toolcode._trace import Trace
from toolcode._types import Engine, ExecuteParams, ExecuteResult, LimitsReport, OnToolCall
from toolcode.engines import load_engine
from toolcode.exceptions import (
    CodeExecutionError,
    ConfigurationError,
    EngineError,
    LimitExceededError,
    ToolCodeError,
)
from toolindex import Index
from toolrun import Runner

__all__ = ["Executor", "ExecutorConfig"]


@dataclass(frozen=True, slots=True)
class ExecutorConfig:
    """Everything an :class:`Executor` needs; limits here are the defaults for each run."""

    index: Index
    """The tool catalog snippets search."""
    store: DocStore | None
    """Documentation store behind ``describe_tool`` / ``list_tool_examples`` (``tooldocs.InMemoryStore``)."""
    runner: Runner
    """Runs the tools (``toolrun.DefaultRunner``); the executor does not close it."""
    engine: Engine | str | None = None
    """An engine, an engine name from the ``toolcode.engines`` entry points, or ``None`` for ``MontyEngine``."""
    timeout: float = 30.0
    """Seconds of wall time per run, tool calls included."""
    max_tool_calls: int = 200
    """Tool calls per run."""
    max_chain_steps: int = 50
    """Steps per ``run_chain`` call."""
    max_output_chars: int = 50_000
    """One budget for result, stdout, stderr and trace payloads."""
    allowed_namespaces: Sequence[str] | None = None
    """Default namespace filter (``None``: all)."""


def _check_positive(field: str, value: Any, *, integer: bool) -> None:
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float) or (integer and not isinstance(value, int)):
        raise ConfigurationError(field, f"must be {kind} > 0, got {value!r}")
    if not (value > 0) or (isinstance(value, float) and not math.isfinite(value)):
        raise ConfigurationError(field, f"must be {kind} > 0 and finite, got {value!r}")


def _validate_limits(owner: Any) -> None:
    _check_positive("timeout", owner.timeout, integer=False)
    _check_positive("max_tool_calls", owner.max_tool_calls, integer=True)
    _check_positive("max_chain_steps", owner.max_chain_steps, integer=True)
    _check_positive("max_output_chars", owner.max_output_chars, integer=True)
    ns = owner.allowed_namespaces
    if ns is not None and (isinstance(ns, str) or not all(isinstance(n, str) for n in ns)):
        raise ConfigurationError("allowed_namespaces", f"must be a list of namespace names, got {ns!r}")


class Executor:
    """Runs snippets: puts the index, docs and runner behind a ``Tools`` environment and hands it to an engine.

    ``execute`` raises on failure (:class:`~toolcode.exceptions.CodeExecutionError`,
    :class:`~toolcode.exceptions.LimitExceededError`, :class:`~toolcode.exceptions.ConfigurationError`,
    :class:`~toolcode.exceptions.EngineError`); the error's ``result`` holds the partial run
    (stdout, stderr, the trace up to the failure). Safe for concurrent use: each run has its own
    counters, trace and output.

    Args:
        config: The executor's collaborators and default limits.

    Raises:
        ConfigurationError: If a field of ``config`` is invalid (names the field).
    """

    def __init__(self, config: ExecutorConfig) -> None:
        for name in ("index", "runner"):
            if getattr(config, name) is None:
                raise ConfigurationError(name, "is required")
        _validate_limits(config)
        self._config = config
        self._owns_engine = not hasattr(config.engine, "execute")
        self._engine: Engine | None = None if self._owns_engine else config.engine  # pyright: ignore[reportAttributeAccessIssue]
        if self._owns_engine:
            self._engine = load_engine(config.engine if isinstance(config.engine, str) else "monty")

    @property
    def config(self) -> ExecutorConfig:
        """The configuration."""
        return self._config

    @property
    def engine(self) -> Engine:
        """The engine runs go to."""
        assert self._engine is not None
        return self._engine

    def _resolve(self, params: ExecuteParams) -> ExecuteParams:
        if not isinstance(params, ExecuteParams):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError("params", f"expected ExecuteParams, got {type(params).__name__}")
        if not isinstance(params.code, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError("code", f"must be a string, got {type(params.code).__name__}")
        if params.language != "python":
            raise ConfigurationError("language", f"only 'python' is supported, got {params.language!r}")
        c = self._config
        resolved = dataclasses.replace(
            params,
            timeout=c.timeout if params.timeout is None else params.timeout,
            max_tool_calls=c.max_tool_calls if params.max_tool_calls is None else params.max_tool_calls,
            max_chain_steps=c.max_chain_steps if params.max_chain_steps is None else params.max_chain_steps,
            max_output_chars=c.max_output_chars if params.max_output_chars is None else params.max_output_chars,
            allowed_namespaces=c.allowed_namespaces if params.allowed_namespaces is None else params.allowed_namespaces,
        )
        _validate_limits(resolved)
        bad = check_json(params.input)
        if bad is not None:
            raise ConfigurationError("input", bad.replace("the result", "input"))
        return resolved

    async def execute(self, params: ExecuteParams, *, on_tool_call: OnToolCall | None = None) -> ExecuteResult:
        """Run one snippet.

        Args:
            params: The code and this run's limits (``None`` fields take the config's defaults).
            on_tool_call: Awaited as each tool call completes (progress reporting); its
                failures are logged and ignored.

        Returns:
            The result: value, stdout, stderr, the trace, duration and a limits report.

        Raises:
            ConfigurationError: If a parameter is invalid (names the field).
            CodeExecutionError: If the snippet has a syntax error or raises (line, column,
                type, message; an uncaught tool failure names the tool), or its result is
                not JSON-serialisable.
            LimitExceededError: If a limit stopped the run (which limit, configured, reached).
            EngineError: If the engine failed for a reason that is not the snippet's.
        """
        p = self._resolve(params)
        assert p.timeout is not None and p.max_tool_calls is not None
        assert p.max_chain_steps is not None and p.max_output_chars is not None
        engine = self.engine
        info = engine.info
        budget = CallBudget(p.max_tool_calls, p.max_chain_steps)
        trace = Trace(on_tool_call)
        output = OutputBuffer(p.max_output_chars)
        tools = DefaultTools(
            self._config.index,
            self._config.store,
            self._config.runner,
            allowed_namespaces=p.allowed_namespaces,
            budget=budget,
            trace=trace,
            output=output,
        )
        applied: dict[str, float | int] = {
            "timeout": p.timeout,
            "max_tool_calls": p.max_tool_calls,
            "max_chain_steps": p.max_chain_steps,
            "max_output_chars": p.max_output_chars,
        }
        applied.update(info.limits)

        t0 = time.perf_counter()
        error: ToolCodeError | None = None
        value: Any = None
        with anyio.move_on_after(p.timeout) as scope:
            try:
                value = (await engine.execute(p, tools)).value
            except ToolCodeError as e:
                error = e
            except Exception as e:  # an engine is pluggable code; anything it leaks is its failure
                error = EngineError(info.name, f"{type(e).__name__}: {e}")
                error.__cause__ = e
        elapsed = time.perf_counter() - t0
        if scope.cancelled_caught:
            error = LimitExceededError("timeout", p.timeout, round(elapsed, 3), "stopped by the host")
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

        stopped_by = error.limit if isinstance(error, LimitExceededError) else None
        fitted = fit_output_budget(
            value, output.text("stdout"), output.text("stderr"), trace.records(), p.max_output_chars, output.dropped
        )
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
                truncated=fitted.truncated,
            ),
        )
        if error is not None:
            error.result = result
            raise error
        return result

    async def aclose(self) -> None:
        """Close the engine if the executor created it; idempotent. The runner is not closed."""
        if self._owns_engine and self._engine is not None:
            await self._engine.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
