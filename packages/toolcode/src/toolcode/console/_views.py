"""What a console viewer may see and do: paused runs, the quarantine, the audit log, the state per caller.

A caller sees and decides only its own; an operator (``policy.operators``) sees and decides everyone's.
Decisions go through the core's own paths (:meth:`CodeMode.resume`, :meth:`CodeMode.approve_tools`),
the ones ``resume_execution`` and the CLI take, so an approval stays bound to the digests the
question showed.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import hashlib
import hmac
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final

from toolcode import _paused, _results, _sessions
from toolcode._audit import AuditEntry, tool_definition, tool_hash
from toolcode._core import CodeMode
from toolcode._metatools import as_operator
from toolcode._outcome import definition_text
from toolcode._paused_run import PausedRun
from toolcode.console._auth import Viewer
from toolcode.exceptions import DefinitionChangedError, InvalidArgumentsError, clip
from toolcode.models import ExecuteOutcome
from toolindex import ToolIndexError

__all__ = ["PAGE", "AuditFilter", "Change", "OwnerState", "Views"]

PAGE: Final = 50
"""Audit entries per page."""
_MAX_READ: Final = 100_000
DECISIONS: Final = ("call", "allow", "ask", "deny", "approved", "denied", "aborted", "quarantined")


@functools.lru_cache(maxsize=32)  # a filter's two times, asked for once per entry it reads
def _time(text: str) -> float | None:
    """``2026-11-27T10:00`` (UTC, as a ``datetime-local`` input sends it) or Unix seconds; ``None`` if neither."""
    try:
        return float(text) if text.replace(".", "", 1).isdigit() else datetime.fromisoformat(text).replace(
            tzinfo=UTC
        ).timestamp()  # fmt: skip
    except (ValueError, OverflowError):
        return None


@dataclass(frozen=True, slots=True)
class AuditFilter:
    """The audit page's filter: caller, tool id glob, decision, time range (UTC), page."""

    caller: str = ""
    tool: str = ""
    decision: str = ""
    since: str = ""
    until: str = ""
    page: int = 0

    @classmethod
    def of(cls, query: Mapping[str, str], viewer: Viewer) -> AuditFilter:
        """The filter a query string asks for; a caller's own entries only, unless an operator asks."""
        page = query.get("page", "0")
        fields = ("caller", "tool", "decision", "since", "until")
        caller, tool, decision, since, until = (query.get(k, "").strip()[:200] for k in fields)
        f = cls(caller, tool, decision, since, until, min(int(page), 1_000_000) if page.isdigit() else 0)
        return f if viewer.operator else replace(f, caller=viewer.caller or "local")

    def matches(self, entry: Mapping[str, Any]) -> bool:
        """Whether an audit entry passes the filter."""
        since, until, at = _time(self.since), _time(self.until), entry.get("at")
        at = at if isinstance(at, int | float) else 0.0
        return (
            (not self.caller or (entry.get("caller") or "local") == self.caller)
            and (not self.tool or fnmatch.fnmatchcase(str(entry.get("tool_id", "")), self.tool))
            and (not self.decision or entry.get("decision") == self.decision)
            and (since is None or at >= since)
            and (until is None or at <= until)
        )

    def query(self, **change: Any) -> dict[str, str]:
        """The query string of this filter with ``change`` applied (for links: another page, the export)."""
        return {k: str(v) for k, v in asdict(replace(self, **change)).items() if v}


@dataclass(frozen=True, slots=True)
class Change:
    """A quarantined tool: its standing, and how its definition differs from the approved one."""

    tool_id: str
    state: str
    approved_by: str | None
    approved_at: float | None
    diff: list[str]
    """Unified diff lines (``+``/``-``/`` ``/``@@``); the whole definition as ``+`` lines when none was approved."""
    digest: str = ""
    """The digest of the definition shown (:func:`tool_hash`): an approval names it."""


@dataclass(slots=True)
class OwnerState:
    """What one caller keeps in the state store, against its quotas."""

    name: str
    counts: dict[str, int] = field(default_factory=dict[str, int])
    bytes: dict[str, int] = field(default_factory=dict[str, int])
    largest: dict[str, int] = field(default_factory=dict[str, int])


class Views:
    """The console's reads and decisions over one core, each checked against the viewer.

    Args:
        codemode: The core (with a state store).
        names: The names of the tokens accepted right now (to show owners by name).
    """

    def __init__(self, codemode: CodeMode, names: Callable[[], list[str]]) -> None:
        stores = codemode.services.stores
        if stores is None:
            raise InvalidArgumentsError("console", "the console needs a state store (paused runs, the audit log)")
        self.cm, self.stores, self._names = codemode, stores, names

    def who(self, owner: str) -> str:
        """A stored owner key shown as the token name it belongs to."""
        known = {_sessions.owner_of(f"token:{n}"): n for n in self._names()}
        return known.get(owner, owner)

    def description(self, tool_id: str) -> str:
        """A tool's description as its server gives it (hostile text: escape it), or ``""``."""
        try:
            return self.cm.services.index.get(tool_id).description or ""
        except ToolIndexError:
            return ""

    async def runs(self, viewer: Viewer) -> list[PausedRun]:
        """The paused runs the viewer may see, newest first."""
        return (await self.stores.paused.list(viewer.caller, limit=1000, operator=viewer.operator))[::-1]

    async def waiting(self, viewer: Viewer) -> set[str]:
        """The ids of the paused runs the viewer may see, from the store's keys alone (no record is read)."""
        prefix = "" if viewer.operator else _sessions.owner_of(viewer.caller) + "/"
        infos = await self.stores.paused.store.list(_paused.KIND, prefix=prefix, limit=_MAX_READ)
        return {info.key.rsplit("/", 1)[-1] for info in infos}

    async def run(self, viewer: Viewer, execution_id: str) -> PausedRun:
        """One paused run the viewer may see.

        Raises:
            InvalidArgumentsError: Unknown, decided, expired, or not the viewer's (the same answer).
        """
        return await self.stores.paused.get(execution_id, viewer.caller, operator=viewer.operator)

    def _here(self, tool_id: str) -> str:
        """The digest of this replica's definition of ``tool_id`` (:func:`tool_hash`); ``""`` for none."""
        try:
            return tool_hash(self.cm.services.index.get(tool_id))
        except ToolIndexError:
            return ""

    def shown(self, run: PausedRun) -> str:
        """A digest of the definitions this replica shows for the run's pending tools (a page's form carries it)."""
        parts = [f"{p.tool_id}={self._here(p.tool_id)}" for p in run.pending]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]

    def unlike_bound(self, run: PausedRun) -> list[str]:
        """The pending tools whose definition here is not the one approving the call binds.

        A page shows this replica's definition; the run paused under the one it knew then (changed
        since, or another replica's): approving from here would approve what the page did not show.
        """
        out: list[str] = []
        for p in run.pending:
            if not p.digest or p.tool_id.startswith("snippets:"):  # a snippet's digest is its code's
                continue
            if not hmac.compare_digest(self._here(p.tool_id), p.digest):
                out.append(p.tool_id)
        return out

    async def decide(self, viewer: Viewer, execution_id: str, decision: str) -> ExecuteOutcome:
        """Decide about a paused run as the viewer, through :meth:`CodeMode.resume`, and continue it; its outcome."""
        return await self.cm.resume(execution_id, decision, caller=viewer.caller)

    async def quarantine(self) -> list[Change]:
        """Every blocked tool (new or changed) with its diff against the approved definition."""
        quarantine = self.stores.quarantine
        out: list[Change] = []
        for entry in self.cm.quarantined_tools().tools if quarantine is not None else ():
            tool = self.cm.services.index.get(entry.tool_id)
            now = tool_definition(tool)
            before = await quarantine.approved_definition(entry.tool_id) if quarantine is not None else None
            old, new = (_lines(before) if before is not None else []), _lines(now)
            # Every line, its changes marked: approving the digest approves all of it, not the lines changed.
            whole = max(len(old), len(new))
            diff = list(difflib.unified_diff(old, new, "approved", "now", n=whole, lineterm=""))[2:]
            out.append(Change(entry.tool_id, entry.state, entry.approved_by, entry.approved_at, diff, tool_hash(tool)))
        return out

    async def approve_tool(self, viewer: Viewer, tool_id: str, shown: str) -> list[str] | None:
        """Approve the definition of one tool the viewer was shown (operators only); the ids approved.

        ``shown``: the digest of the definition on the viewer's page. ``None`` when the tool's
        definition here is another (changed since, or another replica's): nothing is approved.

        Raises:
            ToolError: ``not_allowed`` if the viewer is not an operator.
            InvalidArgumentsError: If quarantine is off.
        """
        by = as_operator(self.cm, viewer.caller)
        if not self._here(tool_id):
            return []
        if not shown:
            return None
        try:  # the one binding of every door: CodeMode.approve_tools approves the digest named, or nothing
            return (await self.cm.approve_tools({tool_id: shown}, by=by)).approved or []
        except DefinitionChangedError:
            return None

    async def keep_blocked(self, viewer: Viewer, tool_id: str) -> None:
        """Record in the audit log that an operator looked at a blocked tool and kept it blocked.

        Raises:
            ToolError: ``not_allowed`` if the viewer is not an operator.
            InvalidArgumentsError: If quarantine is off, or ``tool_id`` is no tool the quarantine blocks.
        """
        as_operator(self.cm, viewer.caller)
        if tool_id not in {t.tool_id for t in self.cm.quarantined_tools().tools}:
            raise InvalidArgumentsError("tool_id", f"no blocked tool {clip(tool_id, 80)!r} to keep blocked")
        by = f"person:{viewer.caller or 'local'}"
        entry = AuditEntry(time.time(), tool_id, None, "quarantined", by, viewer.caller)
        await self.stores.audit.write([entry.to_dict()])

    async def audit(self, f: AuditFilter) -> AsyncGenerator[dict[str, Any], None]:
        """The entries that pass ``f`` (:meth:`AuditFilter.of` for this viewer), newest first, as they are read.

        The log is read from its end only as far as they are asked for, and never past the newest
        ``_MAX_READ`` entries at or after ``f.since``; nothing is kept but the store's page being
        read. Close the iterator when stopping early (``contextlib.aclosing``).

        Raises:
            StateUnavailableError: If the store cannot be read.
        """
        async with aclosing(self.stores.audit.newest(since=_time(f.since))) as entries:
            seen = 0
            async for entry in entries:
                seen += 1
                if f.matches(entry):
                    yield entry
                if seen >= _MAX_READ:
                    return

    async def audit_page(self, f: AuditFilter) -> tuple[list[dict[str, Any]], bool]:
        """The matches of ``f``'s page (:data:`PAGE` of them) and whether an older page exists.

        The matches before the page are counted, not kept: a deep page holds what it shows.

        Raises:
            StateUnavailableError: If the store cannot be read.
        """
        first, matched, shown = f.page * PAGE, 0, list[dict[str, Any]]()
        async with aclosing(self.audit(f)) as entries:
            async for entry in entries:
                if matched >= first + PAGE:
                    return shown, True  # one match past the page: an older page exists
                if matched >= first:
                    shown.append(entry)
                matched += 1
        return shown, False

    async def state(self, viewer: Viewer) -> list[OwnerState]:
        """Sessions, paused runs, stored results and saved snippets per caller (the viewer's only, unless operator)."""
        own = _sessions.owner_of(viewer.caller)
        everyone = [_sessions.owner_of(f"token:{n}") for n in self._names()] if viewer.operator else [own]
        rows = {owner: OwnerState(self.who(owner)) for owner in everyone}
        store = self.stores.sessions.store
        for what, kind in (("sessions", _sessions.KIND), ("paused", _paused.KIND), ("results", _results.KIND)):
            for info in await store.list(kind, prefix="" if viewer.operator else own + "/", limit=_MAX_READ):
                owner = info.key.split("/", 1)[0]
                row = rows.setdefault(owner, OwnerState(self.who(owner)))
                row.counts[what] = row.counts.get(what, 0) + 1
                row.bytes[what] = row.bytes.get(what, 0) + info.size
                row.largest[what] = max(row.largest.get(what, 0), info.size)
        for snippet in self.stores.snippets.mine(own, viewer.operator):
            if viewer.operator or snippet.owner == own:
                row = rows.setdefault(snippet.owner, OwnerState(self.who(snippet.owner)))
                row.counts["snippets"] = row.counts.get("snippets", 0) + 1
        return [rows[k] for k in sorted(rows)]


def _lines(definition: Mapping[str, Any]) -> list[str]:
    return definition_text(definition).split("\n")
