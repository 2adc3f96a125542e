"""The default :class:`~toolcode.Tools` environment over an index, a doc store and a runner."""

from __future__ import annotations

import inspect
import keyword
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

import anyio

from toolcode._limits import CallBudget, OutputBuffer
from toolcode._trace import Trace
from toolcode._types import Stream
from toolcode.exceptions import ToolError
from tooldocs import Signature, tool_signature
from toolindex import Index, ToolIndexError, ToolNotFoundError
from toolrun import (
    BackendUnavailableError,
    ChainStep,
    InputValidationError,
    NoBackendError,
    OutputValidationError,
    Runner,
    RunResult,
    ToolExecutionError,
    ToolRunError,
    ToolTimeoutError,
)

__all__ = ["DefaultTools", "DocStore"]

_LEVELS = ("summary", "schema", "full")
_UNSEEN: Any = object()
"""A tool whose signature ``run_tool`` has not looked up yet in this run."""


class DocStore(Protocol):
    """What the tools environment needs from a documentation store (``tooldocs.Store`` fits).

    ``describe`` returns an object with ``to_dict()``; ``examples`` a list of objects with
    ``to_dict()`` (or ``model_dump()``) or plain dicts. Either may be sync or async.
    """

    def describe(self, tool_id: str, level: Any = ..., /) -> Any:
        """Documentation of one tool at a detail level."""
        ...

    def examples(self, tool_id: str, max: int = ..., /) -> Any:
        """Examples of one tool."""
        ...


def _plain(obj: Any) -> Any:
    for attr in ("to_dict", "model_dump"):
        fn = getattr(obj, attr, None)
        if callable(fn):
            return fn()
    return obj


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await cast("Any", value)
    return value


def _error_op(e: BaseException) -> str:
    if isinstance(e, ToolIndexError):
        return "resolve"
    if isinstance(e, InputValidationError):
        return "validate_input"
    if isinstance(e, OutputValidationError):
        return "validate_output"
    if isinstance(e, ToolTimeoutError):
        return "timeout"
    if isinstance(e, BackendUnavailableError | NoBackendError):
        return "backend"
    return "call"


def _message(e: BaseException) -> str:
    if isinstance(e, ToolExecutionError):
        return e.message
    return str(e)


class DefaultTools:
    """The snippet environment of one run: index search, docs, runner calls, counted and traced.

    The executor makes one per run; build one yourself to drive an engine directly (for
    example in an engine's own tests).

    Args:
        index: The tool catalog.
        store: Documentation store (``tooldocs.InMemoryStore``); ``None`` makes
            ``describe_tool`` fall back to the index's own fields.
        runner: Runs the tools.
        allowed_namespaces: When set, only tools in these namespaces are visible.
        budget: Tool-call counting; unlimited when ``None``.
        trace: Where the calls are recorded; a fresh trace when ``None``.
        output: Where ``println``/``print`` go; a 1 MiB capture when ``None``.
    """

    def __init__(
        self,
        index: Index,
        store: DocStore | None,
        runner: Runner,
        *,
        allowed_namespaces: Sequence[str] | None = None,
        budget: CallBudget | None = None,
        trace: Trace | None = None,
        output: OutputBuffer | None = None,
    ) -> None:
        self._index = index
        self._store = store
        self._runner = runner
        self._allowed = frozenset(allowed_namespaces) if allowed_namespaces is not None else None
        self.budget = budget if budget is not None else CallBudget(2**62, 2**62)
        self.trace = trace if trace is not None else Trace()
        self.output = output if output is not None else OutputBuffer(1 << 20)
        self._signatures: dict[str, Signature | None] = {}

    # -- visibility -----------------------------------------------------------------

    def _visible(self, tool_id: str) -> str:
        """Resolve ``tool_id`` within the allowed namespaces; return the full id."""
        tool = self._index.get(tool_id)
        if self._allowed is not None and tool.namespace not in self._allowed:
            raise ToolNotFoundError(tool_id, self._suggest(tool_id))
        return tool.id

    def _suggest(self, tool_id: str) -> list[str]:
        suggest = getattr(self._index, "suggest", None)
        if not callable(suggest):
            return []
        ids = cast("list[str]", suggest(tool_id, 8))
        if self._allowed is not None:
            ids = [i for i in ids if i.split(":", 1)[0] in self._allowed]
        return ids[:3]

    def _not_found(self, e: ToolNotFoundError) -> ToolNotFoundError:
        if self._allowed is None:
            return e
        return ToolNotFoundError(e.tool_id, self._suggest(e.tool_id))

    # -- discovery ------------------------------------------------------------------

    async def search_tools(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        """Rank tools for a free-text query.

        Returns:
            ``[{id, namespace, name, summary, score}]``, best first.

        Raises:
            LimitExceededError: If a limit already stopped the run.
        """
        self.budget.check()
        ns = sorted(self._allowed) if self._allowed is not None else None
        hits = self._index.search(str(query), limit=int(limit), namespaces=ns)
        return [
            {"id": h.id, "namespace": h.namespace, "name": h.name, "summary": h.summary, "score": round(h.score, 4)}
            for h in hits
        ]

    async def list_namespaces(self) -> list[dict[str, Any]]:
        """All visible namespaces with their tool counts.

        Raises:
            LimitExceededError: If a limit already stopped the run.
        """
        self.budget.check()
        return [
            {"name": n.name, "tool_count": n.tool_count}
            for n in self._index.namespaces()
            if self._allowed is None or n.name in self._allowed
        ]

    async def describe_tool(self, tool_id: str, level: str = "schema") -> dict[str, Any]:
        """Documentation of one tool.

        Raises:
            ToolError: If the tool is unknown (with close ids) or the level is not one of
                ``summary``, ``schema``, ``full``.
            LimitExceededError: If a limit already stopped the run.
        """
        self.budget.check()
        if level not in _LEVELS:
            raise ToolError(str(tool_id), f"level must be one of {', '.join(_LEVELS)}; got {level!r}", "describe")
        try:
            full_id = self._visible(str(tool_id))
            if self._store is None:
                tool = self._index.get(full_id)
                doc: dict[str, Any] = {"id": tool.id, "summary": tool.summary}
                if level != "summary":
                    doc.update(description=tool.description, input_schema=tool.input_schema)
                    if tool.output_schema is not None:
                        doc["output_schema"] = tool.output_schema
                return doc
            return cast("dict[str, Any]", _plain(await _maybe_await(self._store.describe(full_id, level))))
        except ToolNotFoundError as e:
            raise ToolError(str(tool_id), str(self._not_found(e)), "resolve") from e
        except ToolIndexError as e:
            raise ToolError(str(tool_id), str(e), "resolve") from e
        except Exception as e:  # the store is another package's code; keep its words, name the tool
            raise ToolError(str(tool_id), f"{type(e).__name__}: {e}", "describe") from e

    async def list_tool_examples(self, tool_id: str, max: int = 3) -> list[dict[str, Any]]:
        """Usage examples of one tool (empty without a store).

        Raises:
            ToolError: If the tool is unknown.
            LimitExceededError: If a limit already stopped the run.
        """
        self.budget.check()
        try:
            full_id = self._visible(str(tool_id))
            if self._store is None:
                return []
            items = await _maybe_await(self._store.examples(full_id, int(max)))
            return [cast("dict[str, Any]", _plain(x)) for x in cast("list[Any]", items)]
        except ToolNotFoundError as e:
            raise ToolError(str(tool_id), str(self._not_found(e)), "resolve") from e
        except ToolIndexError as e:
            raise ToolError(str(tool_id), str(e), "resolve") from e
        except Exception as e:  # as in describe_tool
            raise ToolError(str(tool_id), f"{type(e).__name__}: {e}", "describe") from e

    # -- running --------------------------------------------------------------------

    async def run_tool(self, tool_id: str, args: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        """Run one tool; ``args`` and keyword arguments are merged (keywords win).

        ``args`` is keyed by the tool's wire names; keywords may use either the wire name or
        the identifier ``describe_tool``'s signature shows for it (``from_`` for ``from``).

        Returns:
            The result as plain data (``RunResult.value``).

        Raises:
            ToolError: If the tool is unknown, its arguments are invalid, or it fails.
            LimitExceededError: If ``max_tool_calls`` is reached.
        """
        tool_id = str(tool_id)
        if args is not None and not isinstance(args, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ToolError(tool_id, f"args must be a dict, got {type(args).__name__}", "validate_input")
        if kwargs:
            # ``kwargs`` is a fresh dict of this call's own: used as is unless ``args`` comes too, or
            # the tool has parameters whose names are not identifiers.
            sig = self._signatures.get(tool_id, _UNSEEN)
            call_args = kwargs if sig is None else self._wire_kwargs(tool_id, kwargs)
            if args:
                call_args = {**args, **call_args}
        else:
            call_args = dict(args) if args else {}
        self.budget.take()
        return await self._run_one(tool_id, call_args)

    def _wire_kwargs(self, tool_id: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Keyword arguments under the tool's wire names (``kwargs`` itself when none is renamed).

        ``describe_tool`` shows a signature whose parameters are identifiers (``from_`` for
        ``from``, ``per_page`` for ``per-page``); a snippet calls the tool the way it reads.
        """
        sig = self._signatures.get(tool_id, _UNSEEN)  # looked up once per run: calls in a loop stay cheap
        if sig is _UNSEEN:
            try:
                tool = self._index.get(tool_id)
            except ToolIndexError:
                return kwargs  # the run itself reports the unknown tool, with suggestions
            props = tool.input_schema.get("properties")
            names: Mapping[str, Any] = cast("Mapping[str, Any]", props) if isinstance(props, Mapping) else {}
            renamed = any(not n.isidentifier() or keyword.iskeyword(n) for n in names)
            sig = self._signatures[tool_id] = tool_signature(tool) if renamed else None
        if sig is None:
            return kwargs
        try:
            return sig.wire_args(kwargs)
        except ValueError as e:
            raise ToolError(tool_id, str(e), "validate_input") from e

    def _backend_kind(self, tool_id: str) -> str | None:
        """The kind of the tool's first backend (for the trace of a failed call), if it resolves."""
        try:
            refs = self._index.backends(tool_id)
        except ToolIndexError:
            return None
        return refs[0].kind if refs else None

    async def _finish(self, slot: int, started: float, tool_id: str, args: Mapping[str, Any], **kw: Any) -> None:
        record = self.trace.finish(slot, started, tool_id, args, **kw)
        if self.trace.has_listener:
            await self.trace.notify(record)

    async def _run_one(self, tool_id: str, call_args: dict[str, Any]) -> Any:
        slot, started = self.trace.start()
        try:
            run_id = self._visible(tool_id) if self._allowed is not None else tool_id
            result: RunResult = await self._runner.run(run_id, call_args)
        except (ToolRunError, ToolIndexError) as e:
            err = self._not_found(e) if isinstance(e, ToolNotFoundError) else e
            op = _error_op(e)
            kind = self._backend_kind(tool_id) if op != "resolve" else None
            await self._finish(slot, started, tool_id, call_args, error=_message(err), error_op=op, backend_kind=kind)
            raise ToolError(tool_id, _message(err), op) from e
        except anyio.get_cancelled_exc_class():
            self.trace.cancelled(slot, started, tool_id, call_args)
            raise
        value = result.value
        record = self.trace.succeeded(slot, started, result.tool_id, call_args, value, result.backend.kind)
        if record is not None:
            await self.trace.notify(record)
        return value

    async def run_tools(self, calls: Sequence[Any]) -> list[Any]:
        """Run several tools concurrently.

        Each call is ``(tool_id, args)``, ``[tool_id, args]``, ``{"tool_id": ..., "args": ...}``
        or a bare tool id. All calls run to completion; then, if any failed, the first
        failure (in call order) is raised.

        Returns:
            The results, in the order of ``calls``.

        Raises:
            ToolError: If a call is malformed or a tool fails.
            LimitExceededError: If the calls would exceed ``max_tool_calls``.
        """
        parsed = [self._parse_call(i, c) for i, c in enumerate(calls)]
        self.budget.take(len(parsed))
        results: list[Any] = [None] * len(parsed)
        errors: list[BaseException | None] = [None] * len(parsed)

        async def one(i: int, tool_id: str, call_args: dict[str, Any]) -> None:
            try:
                results[i] = await self._run_one(tool_id, call_args)
            except ToolError as e:
                errors[i] = e

        async with anyio.create_task_group() as tg:
            for i, (tool_id, call_args) in enumerate(parsed):
                tg.start_soon(one, i, tool_id, call_args)
        for e in errors:
            if e is not None:
                raise e
        return results

    @staticmethod
    def _parse_call(i: int, call: Any) -> tuple[str, dict[str, Any]]:
        if isinstance(call, str):
            return call, {}
        tool_id: Any
        args: Any
        if isinstance(call, Mapping):
            c = cast("Mapping[str, Any]", call)
            tool_id = c.get("tool_id")
            args = c.get("args") or {}
        elif isinstance(call, list | tuple) and len(cast("Sequence[Any]", call)) in (1, 2):
            seq = cast("Sequence[Any]", call)
            tool_id = seq[0]
            args = (seq[1] if len(seq) == 2 else None) or {}
        else:
            raise ToolError("?", f"run_tools: call #{i} must be (tool_id, args), a dict or a tool id; got {call!r}")
        if not isinstance(tool_id, str) or not isinstance(args, Mapping):
            raise ToolError(str(tool_id), f"run_tools: call #{i} needs a str tool_id and a dict args", "validate_input")
        return tool_id, dict(cast("Mapping[str, Any]", args))

    async def run_chain(self, steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Run steps in order; each step is ``{tool_id, args, use_previous, on_error}``.

        Returns:
            ``{"steps": [{tool_id, ok, value, error}], "aborted": bool, "final": value}``.

        Raises:
            ToolError: If a step is malformed, or a step with ``on_error="abort"`` fails
                (the message names the step and the tool).
            LimitExceededError: If the chain is longer than ``max_chain_steps`` or would
                exceed ``max_tool_calls``.
        """
        chain: list[ChainStep] = []
        for i, raw in enumerate(steps):
            if not isinstance(raw, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ToolError("?", f"run_chain: step #{i} must be a dict with tool_id and args", "validate_input")
            unknown = set(raw) - {"tool_id", "args", "use_previous", "on_error"}
            if unknown or not isinstance(raw.get("tool_id"), str):
                why = f"unknown keys {sorted(unknown)}" if unknown else "tool_id must be a string"
                raise ToolError(str(raw.get("tool_id", "?")), f"run_chain: step #{i}: {why}", "validate_input")
            on_error = raw.get("on_error", "abort")
            if on_error not in ("abort", "continue"):
                raise ToolError(raw["tool_id"], f"run_chain: step #{i}: on_error must be 'abort' or 'continue'")
            chain.append(
                ChainStep(raw["tool_id"], dict(raw.get("args") or {}), bool(raw.get("use_previous", False)), on_error)
            )
        self.budget.check_chain(len(chain))
        self.budget.take(len(chain))
        if self._allowed is not None:
            for st in chain:
                try:
                    self._visible(st.tool_id)
                except ToolNotFoundError as e:
                    raise ToolError(st.tool_id, str(self._not_found(e)), "resolve") from e
        t0 = time.perf_counter()
        slots = [self.trace.start()[0] for _ in chain]
        try:
            result = await self._runner.run_chain(chain)
        except (ToolRunError, ToolIndexError) as e:
            for slot, st in zip(slots, chain, strict=True):
                self.trace.cancelled(slot, t0, st.tool_id, dict(st.args), error=str(e), error_op=_error_op(e))
            raise ToolError(chain[0].tool_id if chain else "?", _message(e), _error_op(e)) from e
        # Steps ran one after another: their start times follow from the durations.
        start = t0
        out_steps: list[dict[str, Any]] = []
        first_error: tuple[int, str, str, str] | None = None
        for slot, sr in zip(slots, result.steps, strict=False):
            args = dict(sr.step.args)
            if sr.step.use_previous and sr.index > 0:
                prev = result.steps[sr.index - 1]
                if prev.result is not None:
                    args["previous"] = prev.result.value
            if sr.result is not None:
                value = sr.result.value
                await self._finish(
                    slot, start, sr.result.tool_id, args, structured=value,
                    backend_kind=sr.result.backend.kind, duration_ms=sr.duration_ms,
                )  # fmt: skip
                out_steps.append({"tool_id": sr.result.tool_id, "ok": True, "value": value, "error": None})
            else:
                err = sr.error
                msg = _message(err) if err is not None else "failed"
                op = _error_op(err) if err is not None else "call"
                await self._finish(
                    slot, start, sr.step.tool_id, args, error=msg, error_op=op, duration_ms=sr.duration_ms
                )
                out_steps.append({"tool_id": sr.step.tool_id, "ok": False, "value": None, "error": msg})
                if first_error is None and sr.step.on_error == "abort":
                    first_error = (sr.index, sr.step.tool_id, msg, op)
            start += sr.duration_ms / 1000.0
        self.trace.drop_unused(slots[len(result.steps) :])
        if first_error is not None and result.aborted:
            i, tid, msg, op = first_error
            raise ToolError(tid, f"run_chain aborted at step #{i}: {msg}", op)
        final = result.final
        return {"steps": out_steps, "aborted": result.aborted, "final": final.value if final is not None else None}

    # -- output ---------------------------------------------------------------------

    def println(self, *args: Any) -> None:
        """Print to the run's stdout: ``args`` joined by spaces, then a newline."""
        self.output.write("stdout", " ".join(str(a) for a in args) + "\n")

    def write(self, stream: Stream, text: str) -> None:
        """Append text to the run's stdout or stderr."""
        self.output.write(stream, text)
