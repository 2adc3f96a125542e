"""The code-mode operations, implemented once: search, list, describe, examples, namespaces, run, chain.

:class:`Operations` is bound to one caller's view of the catalog and, inside a run, to that
run's call budget and trace. The snippet environment, the MCP server and the CLI all call these
methods and return the same result models (:mod:`toolcode.models`); none of them
re-implements an operation.

Arguments are checked here, at the boundary: a wrong type or value raises
:class:`~toolcode.exceptions.InvalidArgumentsError` (code ``invalid_arguments``, naming the
argument) before any work is done; failures of a tool or a lookup raise
:class:`~toolcode.exceptions.ToolError` with the failure's code.
"""

from __future__ import annotations

import difflib
import inspect
import keyword
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, cast

import anyio

from toolcode._chain import ChainStep, parse_steps, resolve_args
from toolcode._errors import as_tool_error, error_info, message_of
from toolcode._limits import CallBudget
from toolcode._services import Services
from toolcode._view import CatalogView
from toolcode.calls import Call, Layer
from toolcode.exceptions import InvalidArgumentsError, LimitExceededError, ToolCodeError, ToolError, clip
from toolcode.models import (
    ChainOutcome,
    ChainStepOutcome,
    DocsResult,
    ErrorInfo,
    ExamplesResult,
    NamespaceEntry,
    NamespacesResult,
    RunToolOutcome,
    SearchDetail,
    SearchHitEntry,
    SearchResult,
    ToolDocEntry,
    ToolEntry,
    ToolListResult,
)
from tooldocs import Signature, tool_signature
from toolindex import ToolIndexError
from toolindex.log import get_logger
from toolrun import RunResult, ToolRunError

__all__ = [
    "LEVELS",
    "MAX_DESCRIBE_IDS",
    "MAX_QUERY_CHARS",
    "SEARCH_DETAILS",
    "Operations",
]

LEVELS: Final = ("summary", "schema", "full", "module")
"""Detail levels of ``describe_tool``: ``module`` gives a whole namespace's module."""
MAX_MODULE_CHARS: Final = 48_000
"""Most characters of one ``describe_tool(ns, level="module")`` answer (past it, the remaining
functions are listed by id)."""
SEARCH_DETAILS: Final = ("name", "summary", "schema")
"""Detail levels of a search hit."""
MAX_QUERY_CHARS: Final = 1_000
"""Longest search query accepted (a longer one is an ``invalid_arguments`` error)."""
MAX_SEARCH_LIMIT: Final = 50
MAX_LIST_LIMIT: Final = 1_000
MAX_DESCRIBE_IDS: Final = 20
"""Most tool ids one ``describe_tool`` call accepts."""
MAX_EXAMPLES: Final = 20
_MAX_ID_CHARS = 400  # namespace (128) + name (128) + version (64) + separators, with room
_UNSEEN: Any = object()
_log = get_logger("toolcode.operations")


# -- argument checks -------------------------------------------------------------------


def _bad(field: str, reason: str, tool_id: str | None = None) -> InvalidArgumentsError:
    return InvalidArgumentsError(field, reason, tool_id=tool_id)


def _shown(value: Any) -> str:
    return clip(repr(value), 60)


def _kind(value: object) -> str:
    return type(value).__name__


def check_int(field: str, value: Any, low: int, high: int) -> int:
    """``value`` as an int in ``[low, high]``, or an ``invalid_arguments`` error."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(field, f"must be an integer from {low} to {high}, got {_shown(value)}")
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        raise _bad(field, f"must be an integer from {low} to {high}, got {_shown(value)}")
    n = int(value)
    if not low <= n <= high:
        raise _bad(field, f"must be from {low} to {high}, got {n}")
    return n


def check_str(field: str, value: Any, *, max_chars: int, empty_ok: bool = False) -> str:
    """``value`` as a non-empty string of at most ``max_chars``, or an ``invalid_arguments`` error."""
    if not isinstance(value, str):
        raise _bad(field, f"must be a string, got {type(value).__name__}")
    if not value.strip() and not empty_ok:
        raise _bad(field, "must not be empty")
    if len(value) > max_chars:
        raise _bad(field, f"is {len(value):,} characters long; at most {max_chars:,} are accepted")
    return value


def check_choice(field: str, value: Any, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``, else an ``invalid_arguments`` error."""
    if not isinstance(value, str) or value not in choices:
        raise _bad(field, f"must be one of {', '.join(repr(c) for c in choices)}; got {_shown(value)}")
    return value


def check_tool_id(field: str, value: Any) -> str:
    """A tool id argument: a non-empty string of sane length."""
    return check_str(field, value, max_chars=_MAX_ID_CHARS)


def check_names(field: str, value: Any) -> list[str] | None:
    """An optional list of namespace names."""
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise _bad(field, f"must be a list of strings, got {type(value).__name__}")
    items = cast("Sequence[Any]", value)
    if len(items) > 1000:
        raise _bad(field, f"has {len(items)} items; at most 1000 are accepted")
    return [check_str(f"{field}[{i}]", v, max_chars=200) for i, v in enumerate(items)]


def check_args(value: Any, tool_id: str) -> dict[str, Any]:
    """Tool arguments: a mapping with string keys (``None`` for none)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _bad("args", f"must be a dict, got {type(value).__name__}", tool_id)
    args = cast("Mapping[Any, Any]", value)
    for k in args:
        if not isinstance(k, str):
            raise _bad("args", f"keys must be strings, got {type(k).__name__} key {_shown(k)}", tool_id)
    return dict(cast("Mapping[str, Any]", args))


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await cast("Any", value)
    return value


# -- operations ------------------------------------------------------------------------


class Operations:
    """The operations of one caller (and, inside a run, of one run).

    Discovery (search, list, namespaces, describe, examples) reads the caller's view; every call
    (``run_tool``, ``run_tools``, chains, namespace modules, a door's direct call) goes down the
    run's or door's call stack (:mod:`toolcode.calls`), which applies the policy, the budget, the
    record and the view.

    Args:
        services: The core's services (docs, namespace modules).
        view: The caller's view of the catalog.
        stack: The call stack every call goes down.
        budget: The run's call budget (``None`` at a door: calls are not counted).
    """

    def __init__(self, services: Services, view: CatalogView, stack: Layer, budget: CallBudget | None = None) -> None:
        self.view = view
        self.stack = stack
        self.budget = budget
        self.store = services.docs
        self.modules = services.modules
        self.on_step: Callable[[dict[str, Any]], Awaitable[None]] | None = None
        """Awaited when each chain step starts and ends (a door's progress reporting)."""
        self._quarantined = services.policy.quarantined
        self._signatures: dict[str, Signature | None] = {}

    def _check_budget(self) -> None:
        if self.budget is not None:
            self.budget.check()

    # -- discovery ------------------------------------------------------------------

    async def search_tools(
        self,
        query: Any,
        limit: Any = 10,
        detail: Any = "summary",
        namespaces: Any = None,
    ) -> SearchResult:
        """Rank the visible tools for a free-text query.

        Args:
            query: What the caller wants to do (1 to :data:`MAX_QUERY_CHARS` characters).
            limit: Most hits (1-50).
            detail: ``"name"`` (ids only), ``"summary"`` (+ one line) or ``"schema"`` (+ signature).
            namespaces: Only these namespaces (within the caller's view).

        Returns:
            The hits, best first; with a hint when there is none.

        Raises:
            InvalidArgumentsError: If an argument is invalid.
            LimitExceededError: If a limit already stopped the run.
        """
        self._check_budget()
        q = check_str("query", query, max_chars=MAX_QUERY_CHARS)
        n = check_int("limit", limit, 1, MAX_SEARCH_LIMIT)
        d = cast("SearchDetail", check_choice("detail", detail, SEARCH_DETAILS))
        ns = check_names("namespaces", namespaces)
        hits = self.view.search(q, limit=n, namespaces=ns)
        out: list[SearchHitEntry] = []
        for h in hits:
            signature = self._signature_text(h.id) if d == "schema" else None
            out.append(
                SearchHitEntry(
                    id=h.id,
                    namespace=h.namespace,
                    name=h.name,
                    score=round(h.score, 3),
                    summary=self._marked(h.id, h.summary) if d != "name" else None,
                    signature=signature,
                    weak=h.weak,
                )
            )
        return SearchResult(hits=out, hint=self._search_hint(out, ns))

    def _search_hint(self, hits: Sequence[SearchHitEntry], namespaces: Sequence[str] | None) -> str | None:
        """Where to look further: when nothing matched, when every hit is weak, and which servers are down."""
        parts: list[str] = []
        further = "call list_namespaces() to see what the catalog covers, and list_tools(namespace) to browse one"
        if not hits:
            parts.append(f"no tool matched: rephrase it with the task's own words, or {further}")
        elif all(h.weak for h in hits):
            parts.append(
                f"every hit is a weak match, so the catalog may have no tool for this: rephrase it with the "
                f"task's own words, or {further}"
            )
        down = self.view.unavailable()
        if namespaces is not None:
            down = {n: why for n, why in down.items() if n in namespaces}
        if down:
            shown = "; ".join(f"{clip(n)!r} ({clip(why, 200)})" for n, why in list(down.items())[:5])
            parts.append(f"servers that failed to start are not searched: {shown}")
        return "; ".join(parts) if parts else None

    def _signature_text(self, tool_id: str) -> str | None:
        try:
            return self.modules.signature(self.view.get(tool_id))
        except (ToolIndexError, ToolError):
            return None

    async def list_tools(self, namespace: Any = None, cursor: Any = None, limit: Any = 100) -> ToolListResult:
        """A page of the visible catalog, in id order.

        Args:
            namespace: Only this namespace.
            cursor: ``next_cursor`` of the previous page.
            limit: Page size (1-1000).

        Returns:
            The page.

        Raises:
            InvalidArgumentsError: If an argument (or the cursor) is invalid.
            LimitExceededError: If a limit already stopped the run.
        """
        self._check_budget()
        ns = None if namespace is None else check_str("namespace", namespace, max_chars=200)
        cur = None if cursor is None else check_str("cursor", cursor, max_chars=1_000)
        n = check_int("limit", limit, 1, MAX_LIST_LIMIT)
        try:
            page = self.view.list_tools(cursor=cur, limit=n, namespace=ns)
        except ValueError as e:
            raise _bad("cursor", "is not a cursor from an earlier list_tools page") from e
        return ToolListResult(
            tools=[ToolEntry(id=t.id, summary=self._marked(t.id, t.summary)) for t in page.tools],
            next_cursor=page.next_cursor,
        )

    def _marked(self, tool_id: str, summary: str) -> str:
        """A summary, marked when the tool is quarantined (not callable until an operator approves it)."""
        quarantined = self._quarantined
        if quarantined is None:
            return summary
        try:
            tool = self.view.index.get(tool_id)
        except ToolIndexError:
            return summary
        return f"[quarantined] {summary}" if quarantined(tool) else summary

    async def list_namespaces(self) -> NamespacesResult:
        """Every visible namespace with its tool count; a server that failed to start is one, with the reason.

        Raises:
            LimitExceededError: If a limit already stopped the run.
        """
        self._check_budget()
        down = self.view.unavailable()
        entries = {n.name: NamespaceEntry(name=n.name, tool_count=n.tool_count) for n in self.view.namespaces()}
        for name, reason in down.items():
            count = entries[name].tool_count if name in entries else 0
            entries[name] = NamespaceEntry(name=name, tool_count=count, unavailable=clip(reason, 300))
        return NamespacesResult(namespaces=[entries[n] for n in sorted(entries)])

    async def describe_tool(self, tool_id: Any, level: Any = "schema") -> DocsResult:
        """Documentation of one or more tools (``tool_id`` may be a list of ids).

        Unknown (or invisible) ids are reported in ``errors`` with the nearest visible names;
        the others are described.

        Args:
            tool_id: One id, or a list of up to :data:`MAX_DESCRIBE_IDS` ids.
            level: ``"summary"``, ``"schema"`` (default: the Python signature, as the stub of
                its module, with the import line), ``"full"``, or ``"module"``: the whole
                module of a namespace (``tool_id`` a namespace, or a tool of it).

        Returns:
            The docs, their joined text, and the ids that failed.

        Raises:
            InvalidArgumentsError: If an argument is invalid.
            ToolError: If the only id given cannot be described.
            LimitExceededError: If a limit already stopped the run.
        """
        self._check_budget()
        lvl = check_choice("level", level, LEVELS)
        single = isinstance(tool_id, str)
        if single:
            ids = [check_tool_id("tool_id", tool_id)]
        else:
            if not isinstance(tool_id, Sequence) or isinstance(tool_id, bytes):
                raise _bad("tool_id", f"must be a tool id or a list of ids, got {type(tool_id).__name__}")
            raw = cast("Sequence[Any]", tool_id)
            if not 1 <= len(raw) <= MAX_DESCRIBE_IDS:
                raise _bad("tool_id", f"give 1 to {MAX_DESCRIBE_IDS} ids, got {len(raw)}")
            ids = [check_tool_id(f"tool_id[{i}]", t) for i, t in enumerate(raw)]
        docs: list[ToolDocEntry] = []
        errors: list[ErrorInfo] = []
        for tid in ids:
            try:
                docs.append(self._describe_one(tid, lvl))
            except ToolError as e:
                if single:
                    raise
                errors.append(error_info(e, self.view))
        return DocsResult(text="\n\n".join(d.text for d in docs), docs=docs, errors=errors)

    def _describe_one(self, tool_id: str, level: str) -> ToolDocEntry:
        if level == "module":
            return self._describe_module(tool_id)
        try:
            tool = self.view.get(tool_id)
            stub = self.modules.tool_stub(tool) if level == "schema" else None
            if stub is not None:
                text = f"# {tool.id}\n{stub}"
            elif self.store is None:
                text = f"# {tool.id}\n{tool.summary}" if level != "summary" else f"{tool.id} — {tool.summary}"
            else:
                text = str(self.store.describe(tool.id, level).render())
        except (ToolIndexError, ToolRunError) as e:
            raise as_tool_error(e, tool_id, self.view) from None
        except ToolCodeError:
            raise
        except Exception as e:  # the store is another package's code: keep its words, name the tool
            raise ToolError(tool_id, f"cannot describe it: {type(e).__name__}: {message_of(e)}", "describe") from e
        return ToolDocEntry(id=tool.id, level=level, text=text)

    def _describe_module(self, name: str) -> ToolDocEntry:
        """A namespace's module: ``name`` is a namespace, a module name, or a tool id of the namespace."""

        def known(ns: str | None) -> bool:
            return ns is not None and self.modules.module_name(ns) is not None and self.view.visible(ns)

        namespace = name if known(name) else (self.modules.namespace_of(name) or "")
        if not known(namespace):
            try:
                namespace = self.view.get(name).namespace
            except ToolIndexError:
                names = [n.name for n in self.view.namespaces()]
                near = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
                hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
                raise ToolError(
                    name, f"no namespace {clip(name)!r}{hint} (list_namespaces() lists them)", "resolve"
                ) from None
        text = self.modules.module_text(namespace, MAX_MODULE_CHARS)
        if text is None:
            raise ToolError(name, f"namespace {namespace!r} has no tools", "resolve")
        return ToolDocEntry(id=namespace, level="module", text=text)

    async def list_tool_examples(self, tool_id: Any, max: Any = 3) -> ExamplesResult:
        """Usage examples of one tool (empty without a store).

        Raises:
            InvalidArgumentsError: If an argument is invalid.
            ToolError: If the tool is unknown.
            LimitExceededError: If a limit already stopped the run.
        """
        self._check_budget()
        tid = check_tool_id("tool_id", tool_id)
        n = check_int("max", max, 1, MAX_EXAMPLES)
        try:
            tool = self.view.get(tid)
            items: list[Any] = [] if self.store is None else list(await _maybe_await(self.store.examples(tool.id, n)))
        except (ToolIndexError, ToolRunError) as e:
            raise as_tool_error(e, tid, self.view) from None
        except Exception as e:  # as in describe_tool
            raise ToolError(tid, f"cannot list examples: {type(e).__name__}: {message_of(e)}", "describe") from e
        return ExamplesResult(id=tool.id, examples=[_plain(x) for x in items])

    # -- running --------------------------------------------------------------------

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
        return await self.stack.call(Call(tid, call_args, None if timeout is None else _check_timeout(timeout)))

    async def call_tool(self, tool_id: Any, args: Any = None, kwargs: dict[str, Any] | None = None) -> Any:
        """Run one tool from a snippet and return its value.

        ``args`` is keyed by the tool's wire names; ``kwargs`` may use either the wire name
        or the identifier ``describe_tool``'s signature shows for it (``from_`` for ``from``).

        Raises:
            InvalidArgumentsError: If an argument is invalid (before anything is counted).
            ToolError: If the tool is unknown, its arguments are invalid, the policy refuses it, or it fails.
            LimitExceededError: If ``max_tool_calls`` is reached.
        """
        if type(tool_id) is not str or len(tool_id) > _MAX_ID_CHARS:
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
            props = tool.input_schema.get("properties")
            names: Mapping[str, Any] = cast("Mapping[str, Any]", props) if isinstance(props, Mapping) else {}
            renamed = any(not n.isidentifier() or keyword.iskeyword(n) for n in names)
            sig = self._signatures[tool_id] = tool_signature(tool) if renamed else None
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
            raise _bad("calls", f"must be a list of calls, got {_kind(cast(object, calls))}")
        planned = [Call(*_parse_call(i, c)) for i, c in enumerate(cast("Sequence[Any]", calls))]
        await self.stack.plan(planned)  # all judged and counted before any is made
        results: list[Any] = [None] * len(planned)
        errors: list[BaseException | None] = [None] * len(planned)

        async def one(i: int, call: Call) -> None:
            try:
                results[i] = (await self.stack.call(call)).value
            except ToolError as e:
                errors[i] = e

        async with anyio.create_task_group() as tg:
            for i, call in enumerate(planned):
                tg.start_soon(one, i, call)
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
        Inside a run each step counts as a tool call and appears in the trace.

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
        self._check_budget()
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
                raise _bad(f"steps[{step.index}].tool_id", message, step.tool_id) from None
        planned = [Call(step.tool_id, dict(step.args)) for step in chain]
        await self.stack.plan(planned)  # every step judged (and counted) before the first runs
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


def _check_timeout(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise _bad("timeout", f"must be a number of seconds > 0, got {_shown(value)}")
    return float(value)


def _parse_call(i: int, call: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(call, str):
        return check_tool_id(f"calls[{i}]", call), {}
    tool_id: Any
    args: Any
    if isinstance(call, Mapping):
        c = cast("Mapping[str, Any]", call)
        tool_id, args = c.get("tool_id"), c.get("args")
    elif isinstance(call, list | tuple) and len(cast("Sequence[Any]", call)) in (1, 2):
        seq = cast("Sequence[Any]", call)
        tool_id, args = seq[0], (seq[1] if len(seq) == 2 else None)
    else:
        raise _bad(f"calls[{i}]", f"must be (tool_id, args), a dict or a tool id; got {_shown(call)}")
    tid = check_tool_id(f"calls[{i}].tool_id", tool_id)
    return tid, check_args(args, tid)


def _plain(obj: Any) -> dict[str, Any]:
    for attr in ("to_dict", "model_dump"):
        fn = getattr(obj, attr, None)
        if callable(fn):
            return cast("dict[str, Any]", fn())
    return cast("dict[str, Any]", obj) if isinstance(obj, dict) else {"value": str(obj)}
