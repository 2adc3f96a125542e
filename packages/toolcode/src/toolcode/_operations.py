"""Calls, implemented once: ``run_tool`` at a door, and a snippet's ``run_tool``, ``run_tools`` and chains.

Every call goes down the run's or the door's call stack (:mod:`toolcode.calls`), which applies
the policy, the budget, the record and the view; the operations here only check arguments
(:mod:`toolcode._checks`), build the calls and shape the results.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

import anyio
import anyio.lowlevel

from toolcode._chain import ChainStep, parse_steps, resolve_args
from toolcode._checks import MAX_ID_CHARS, bad, check_args, check_choice, check_timeout, check_tool_id, kind, parse_call
from toolcode._errors import as_tool_error, error_info, message_of
from toolcode._limits import CallBudget
from toolcode._modules import keyword_signature
from toolcode._view import CatalogView
from toolcode.calls import CALLS_AT_ONCE, Call, Layer
from toolcode.exceptions import LimitExceededError, ToolError
from toolcode.models import ChainOutcome, ChainStepOutcome, RunToolOutcome
from tooldocs import Signature
from toolindex import ToolIndexError
from toolindex.log import get_logger
from toolrun import RunResult

__all__ = ["Operations"]

_UNSEEN: Any = object()
"""A tool whose signature ``call_tool`` has not looked up yet in this run."""
_PARSED_AT_A_TIME = 64
"""``run_tools`` reads, and makes, its calls this many at a time, giving the event loop back in between."""
_log = get_logger("toolcode.operations")


class Operations:
    """The calls of one caller (and, inside a run, of one run), down its call stack.

    Args:
        view: The caller's view of the catalog.
        stack: The call stack every call goes down.
        budget: The run's call budget (``None`` at a door: calls are not counted).
    """

    def __init__(self, view: CatalogView, stack: Layer, budget: CallBudget | None = None) -> None:
        self.view = view
        self.stack = stack
        self.budget = budget
        self.on_step: Callable[[dict[str, Any]], Awaitable[None]] | None = None
        """Awaited when each chain step starts and ends (a door's progress reporting)."""
        self._signatures: dict[str, Signature | None] = {}

    async def run_tool(self, tool_id: Any, args: Any = None, *, timeout: Any = None) -> RunToolOutcome:
        """Run one tool directly (at a door) and return its value.

        Args:
            tool_id: The tool.
            args: Its arguments (a dict keyed by the tool's wire names).
            timeout: Seconds before the call is abandoned (default: the door's call timeout).

        Returns:
            The tool id it resolved to, its value and how long it took.

        Raises:
            InvalidArgumentsError: If an argument is invalid.
            ToolError: If the tool is unknown, its arguments are invalid, the policy refuses it, or it fails.
        """
        result = await self.run_result(tool_id, args, timeout=timeout)
        return RunToolOutcome(tool_id=result.tool_id, value=result.value, duration_ms=round(result.duration_ms, 3))

    async def run_result(self, tool_id: Any, args: Any = None, *, timeout: Any = None) -> RunResult:
        """:meth:`run_tool`, returning the runner's whole result (content blocks included).

        Raises:
            InvalidArgumentsError: If an argument is invalid.
            ToolError: If the tool is unknown, its arguments are invalid, the policy refuses it, or it fails.
        """
        tid = check_tool_id("tool_id", tool_id)
        call_args = check_args(args, tid)
        return await self.stack.call(Call(tid, call_args, None if timeout is None else check_timeout(timeout)))

    async def call_tool(self, tool_id: Any, args: Any = None, kwargs: dict[str, Any] | None = None) -> Any:
        """Run one tool from a snippet and return its value.

        ``args`` is keyed by the tool's wire names; ``kwargs`` may use either the wire name
        or the identifier ``describe_tool``'s signature shows for it (``from_`` for ``from``).

        Raises:
            InvalidArgumentsError: If an argument is invalid (before anything is counted).
            ToolError: If the tool is unknown, its arguments are invalid, the policy refuses it, or it fails.
            LimitExceededError: If ``max_tool_calls`` is reached.
        """
        if type(tool_id) is not str or len(tool_id) > MAX_ID_CHARS:
            tool_id = check_tool_id("tool_id", tool_id)
        if kwargs:
            # A fresh dict of this call's own: used as is unless ``args`` comes too, or the tool
            # has parameters whose names are not identifiers.
            sig = self._signatures.get(tool_id, _UNSEEN)
            call_args = kwargs if sig is None else self._wire_kwargs(tool_id, kwargs)
            if args:
                call_args = {**check_args(args, tool_id), **call_args}
        elif type(args) is dict:
            call_args = cast("dict[str, Any]", args)
        else:
            call_args = check_args(args, tool_id)
        return (await self.stack.call(Call(tool_id, call_args))).value

    def _wire_kwargs(self, tool_id: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        sig = self._signatures.get(tool_id, _UNSEEN)  # looked up once per run: calls in a loop stay cheap
        if sig is _UNSEEN:
            try:
                tool = self.view.get(tool_id)
            except (ToolIndexError, ToolError):
                return kwargs  # the call itself reports the unknown tool, with suggestions
            sig = self._signatures[tool_id] = keyword_signature(tool)
        if sig is None:
            return kwargs
        try:
            return sig.wire_args(kwargs)
        except ValueError as e:
            raise ToolError(tool_id, message_of(e), "validate_input") from e

    async def call_tools(self, calls: Any) -> list[Any]:
        """Run several tools concurrently from a snippet; results in the order of ``calls``.

        Each call is ``(tool_id, args)``, ``[tool_id, args]``, ``{"tool_id": ..., "args": ...}``
        or a bare tool id. All calls run to completion; then, if any failed, the first
        failure (in call order) is raised.

        Raises:
            InvalidArgumentsError: If a call is malformed (nothing runs then).
            ToolError: If a tool fails.
            LimitExceededError: If the calls would exceed ``max_tool_calls``.
        """
        if isinstance(calls, str | bytes | Mapping) or not isinstance(calls, Sequence):
            raise bad("calls", f"must be a list of calls, got {kind(cast(object, calls))}")
        planned: list[Call] = []
        for i, c in enumerate(cast("Sequence[Any]", calls)):
            planned.append(Call(*parse_call(i, c)))
            if i % _PARSED_AT_A_TIME == _PARSED_AT_A_TIME - 1:
                await anyio.lowlevel.checkpoint()  # thousands of calls: other callers go on meanwhile
        await self.stack.plan(planned)  # all judged and counted before any is made
        results: list[Any] = [None] * len(planned)
        errors: list[BaseException | None] = [None] * len(planned)

        # As many tasks as the stack lets calls go on at once, each taking the next call in turn:
        # starting a task per call held the event loop for a second at thousands of calls.
        left = iter(enumerate(planned))

        # Calls that end without waiting (local tools) are made at most _PARSED_AT_A_TIME per turn of
        # the event loop: all of them were made in one, while every other caller's run waited.
        made, epoch = 0, 0

        async def turns() -> None:
            nonlocal made, epoch
            for i, call in left:
                while made >= _PARSED_AT_A_TIME:
                    yielded = epoch
                    await anyio.lowlevel.checkpoint()
                    if epoch == yielded:  # the first of the run's turns back: the loop has turned
                        epoch, made = epoch + 1, 0
                made += 1
                try:
                    results[i] = (await self.stack.call(call)).value
                except ToolError as e:
                    errors[i] = e

        async with anyio.create_task_group() as tg:
            for _ in range(min(CALLS_AT_ONCE, len(planned))):
                tg.start_soon(turns)
        for e in errors:
            if e is not None:
                raise e
        return results

    async def _step_progress(self, step: ChainStep, status: str, outcome: ChainStepOutcome | None) -> None:
        """Tell the door's progress listener about a step (never its arguments or result)."""
        listener = self.on_step
        if listener is None:
            return
        event: dict[str, Any] = {"step": step.index, "tool_id": step.tool_id, "status": status}
        if step.id is not None:
            event["id"] = step.id
        if outcome is not None:
            event["duration_ms"] = outcome.duration_ms
            if outcome.error is not None:
                event["code"] = outcome.error.code
        try:
            await listener(event)
        except Exception as e:  # reporting progress must never change the outcome
            _log.debug("operations.progress_failed", error=repr(e)[:200])

    async def run_chain(self, steps: Any, *, max_steps: int | None = None) -> ChainOutcome:
        """Run tools in sequence; every step's outcome.

        Each step is ``{tool_id, args, use_previous, on_error}``: with ``use_previous`` the
        previous step's value goes under ``args["previous"]``; a failing step with
        ``on_error="abort"`` (default) stops the chain, ``"continue"`` records it and goes on.
        Inside a run each step counts as a tool call and appears in the trace. Every step is judged
        before the first runs, except that a step fed by earlier steps (``use_previous``,
        references) is judged, and asked about, only as it is made, with its arguments filled in.

        Args:
            steps: The steps.
            max_steps: Most steps accepted (the run's ``max_chain_steps``).

        Returns:
            Every step that ran, whether the chain was aborted, and the last successful value.

        Raises:
            InvalidArgumentsError: If a step is malformed (nothing runs then).
            LimitExceededError: If the chain is longer than ``max_chain_steps`` or would
                exceed ``max_tool_calls``.
        """
        if self.budget is not None:
            self.budget.check()
        chain = parse_steps(steps, check_tool_id=check_tool_id, check_args=check_args, check_choice=check_choice)
        if max_steps is not None and len(chain) > max_steps:
            err = LimitExceededError("max_chain_steps", max_steps, len(chain))
            if self.budget is not None:
                self.budget.trip(err)
            raise err
        for step in chain:
            try:
                self.view.get(step.tool_id)
            except ToolIndexError as e:
                message = message_of(as_tool_error(e, step.tool_id, self.view))
                raise bad(f"steps[{step.index}].tool_id", message, step.tool_id) from None
        # Every step judged (and counted) before the first runs; a fed step only refused outright
        # there, then judged, and asked about, with the arguments it is made with.
        planned = [Call(step.tool_id, dict(step.args), fed=step.fed) for step in chain]
        await self.stack.plan(planned)
        ids = {step.id: step.index for step in chain if step.id is not None}
        out: list[ChainStepOutcome] = []
        done: list[tuple[bool, Any]] = []
        aborted = False
        for step, plan in zip(chain, planned, strict=True):
            i, tid = step.index, step.tool_id
            started = time.perf_counter()
            await self._step_progress(step, "started", None)
            try:
                if step.use_previous is not False and not done[i - 1][0]:
                    raise ToolError(
                        tid, f"step {i} uses the previous result, but step {i - 1} failed", "validate_input"
                    )
                result = await self.stack.call(Call(tid, resolve_args(step, done, ids), planned=plan))
            except ToolError as e:
                outcome = _step_failed(i, tid, e, started, self.view)
                done.append((False, None))
            else:
                outcome = ChainStepOutcome(
                    index=i, tool_id=result.tool_id, ok=True, value=result.value, duration_ms=_ms(started)
                )
                done.append((True, result.value))
            if step.id is not None:
                outcome = outcome.model_copy(update={"id": step.id})
            out.append(outcome)
            await self._step_progress(step, "ok" if outcome.ok else "error", outcome)
            if not outcome.ok and step.on_error == "abort":
                aborted = True
                break
        final = next((s.value for s in reversed(out) if s.ok), None)
        return ChainOutcome(steps=out, aborted=aborted, final=final)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _step_failed(i: int, tool_id: str, err: ToolError, started: float, view: CatalogView) -> ChainStepOutcome:
    return ChainStepOutcome(index=i, tool_id=tool_id, ok=False, error=error_info(err, view), duration_ms=_ms(started))
