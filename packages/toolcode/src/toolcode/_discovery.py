"""Discovery, implemented once: search, list, namespaces, describe, examples over one caller's view.

The snippet environment, the MCP server and the CLI all call these methods and return the same
result models (:mod:`toolcode.models`). Arguments are checked at the boundary
(:mod:`toolcode._checks`); a failed lookup raises :class:`~toolcode.exceptions.ToolError`.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Sequence
from typing import Any, Final, Literal, cast, get_args

from toolcode._audit import tool_definition
from toolcode._checks import bad, check_choice, check_int, check_names, check_str, check_tool_id
from toolcode._data import as_dict
from toolcode._errors import as_tool_error, error_info, message_of
from toolcode._limits import CallBudget
from toolcode._outcome import definition_text
from toolcode._services import Services
from toolcode._view import CatalogView
from toolcode.exceptions import ToolCodeError, ToolError, clip
from toolcode.models import (
    DocsResult,
    ErrorInfo,
    ExamplesResult,
    NamespaceEntry,
    NamespacesResult,
    SearchHitEntry,
    SearchResult,
    ToolDocEntry,
    ToolEntry,
    ToolListResult,
)
from toolindex import ToolIndexError
from toolrun import ToolRunError

__all__ = ["LEVELS", "MAX_DESCRIBE_IDS", "MAX_QUERY_CHARS", "SEARCH_DETAILS", "Discovery"]

LEVELS: Final = ("summary", "schema", "full", "module")
"""Detail levels of ``describe_tool``: ``module`` gives a whole namespace's module."""
MAX_MODULE_CHARS: Final = 48_000
"""Most characters of one ``describe_tool(ns, level="module")`` answer (past it, the remaining
functions are listed by id)."""
SearchDetail = Literal["name", "summary", "schema"]
"""What each search hit carries: the id only, plus a one-line summary (default), or plus the
Python signature (one call can replace search + describe)."""
SEARCH_DETAILS: Final = get_args(SearchDetail)
"""Detail levels of a search hit."""
MAX_QUERY_CHARS: Final = 1_000
"""Longest search query accepted (a longer one is an ``invalid_arguments`` error)."""
MAX_SEARCH_LIMIT: Final = 50
MAX_LIST_LIMIT: Final = 1_000
MAX_DESCRIBE_IDS: Final = 20
"""Most tool ids one ``describe_tool`` call accepts."""
MAX_EXAMPLES: Final = 20


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await cast("Any", value)
    return value


class Discovery:
    """What one caller (and, inside a run, one run) can find out about the catalog.

    Args:
        services: The core's services (docs, namespace modules, the quarantine).
        view: The caller's view of the catalog.
        budget: The run's call budget (``None`` at a door): a run stopped by a limit answers
            every later operation with that limit.
    """

    def __init__(self, services: Services, view: CatalogView, budget: CallBudget | None = None) -> None:
        self.view = view
        self.budget = budget
        self.store = services.docs
        self.modules = services.modules.seen_by(view)
        self._quarantined = services.policy.quarantined
        self._quarantine = services.stores.quarantine if services.stores is not None else None

    def _check_budget(self) -> None:
        if self.budget is not None:
            self.budget.check()

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
        if d == "schema":
            await self.modules.render_ahead(h.namespace for h in hits)
        out = [
            SearchHitEntry(
                id=h.id,
                namespace=h.namespace,
                name=h.name,
                score=round(h.score, 3),
                summary=self._marked(h.id, h.summary) if d != "name" else None,
                signature=self._signature_text(h.id) if d == "schema" else None,
                weak=h.weak,
            )
            for h in hits
        ]
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
            raise bad("cursor", "is not a cursor from an earlier list_tools page") from e
        return ToolListResult(
            # Built without validation: ids and summaries come from the index, already checked.
            tools=[ToolEntry.model_construct(id=t.id, summary=self._marked(t.id, t.summary)) for t in page.tools],
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
                raise bad("tool_id", f"must be a tool id or a list of ids, got {type(tool_id).__name__}")
            raw = cast("Sequence[Any]", tool_id)
            if not 1 <= len(raw) <= MAX_DESCRIBE_IDS:
                raise bad("tool_id", f"give 1 to {MAX_DESCRIBE_IDS} ids, got {len(raw)}")
            ids = [check_tool_id(f"tool_id[{i}]", t) for i, t in enumerate(raw)]
        if lvl in ("schema", "module"):
            # A namespace's module, a module name, or a tool id: its namespace comes first.
            named = (self.modules.namespace_of(t) or t.split(":", 1)[0] for t in ids)
            await self.modules.render_ahead(named)
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
        quarantine = self._quarantine
        if level == "full" and quarantine is not None and quarantine.quarantined(tool):
            # The digest of the definition just rendered (the same object, nothing awaited between):
            # an approval names it, and covers this definition only, every part of it. The docs
            # above are cut to their budget; the definition the digest covers is shown whole.
            digest = quarantine.digest(tool)
            state = quarantine.status(tool).state
            text += (
                f"\n\n# quarantined ({state}): not callable until an operator approves this definition. "
                "The whole definition (what approving its digest approves; the docs above may be cut):\n"
                f"{definition_text(tool_definition(tool))}\n"
                f"# its digest: {digest}; approve_tools(tools={{{tool.id!r}: {digest!r}}})"
            )
            return ToolDocEntry(id=tool.id, level=level, text=text, digest=digest)
        return ToolDocEntry(id=tool.id, level=level, text=text)

    def _describe_module(self, name: str) -> ToolDocEntry:
        """A namespace's module: ``name`` is a namespace, a module name, or a tool id of the namespace."""

        def known(ns: str | None) -> bool:
            return ns is not None and self.modules.module_name(ns) is not None

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


def _plain(obj: Any) -> dict[str, Any]:
    for attr in ("to_dict", "model_dump"):
        fn = getattr(obj, attr, None)
        if callable(fn):
            return cast("dict[str, Any]", fn())
    return d if (d := as_dict(obj)) is not None else {"value": str(obj)}
