"""The audit log and the quarantine of tool definitions, both kept in the state store (docs/security.md).

* :class:`AuditLog`: every tool call made from code and every decision on a paused run, written
  when the run ends or pauses, in appends of at most :data:`WRITE_CHUNK` entries. A run's entries
  are bounded: each call the snippet makes (a refused one too) counts against its
  ``max_tool_calls``, and arguments and results are clipped to :data:`CLIP_CHARS`.
* :class:`Quarantine`: with ``policy.quarantine`` on, a tool whose definition has no approved
  digest is not callable; the digests live in the store, so every replica agrees.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, fields
from typing import Any, Final

from toolcode._data import as_dict, as_list
from toolcode._settings import AuditSettings
from toolcode.exceptions import StateUnavailableError
from toolcode.models import ToolApprovalEntry
from toolcode.state import StateStore
from toolcode.state._protocol import keep_in_sync
from tooldocs import REFERENCE_META_KEYS, json_text
from toolindex import Index, Tool
from toolindex.log import get_logger

__all__ = ["AuditEntry", "AuditLog", "AuditTrail", "Quarantine", "tool_definition", "tool_hash"]

_log = get_logger("toolcode.audit")

AUDIT_KIND: Final = "audit"
APPROVED_KIND: Final = "approved-tool"
_SNIPPETS: Final = "snippets"
CLIP_CHARS: Final = 2_000
"""What the audit log keeps of a call's arguments (``policy.audit.args``) or result (``policy.audit.results``):
their JSON text when longer, cut to this many characters."""
WRITE_CHUNK: Final = 500
"""Entries per append when a run's trail is written: a long trail is written in pieces of bounded size
(each entry's arguments and result clipped to :data:`CLIP_CHARS`), never serialised whole."""


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One line of the audit log."""

    at: float
    tool_id: str
    tier: str | None
    decision: str
    """``allow``, ``deny``, ``ask``, ``approved``, ``denied``, ``aborted`` or ``quarantined``."""
    decided_by: str
    """``policy``, or who decided (``person``, ``person:<caller>``, ``flag:--approve``)."""
    caller: str | None = None
    execution_id: str | None = None
    ok: bool | None = None
    code: str | None = None
    duration_ms: float | None = None
    args: Any = None
    result: Any = None
    early: str | None = None
    """For a call: ``"used"`` (answered by the same call started before the code reached it) or
    ``"discarded"`` (started early, never reached)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data, without the optional fields that are not set."""
        out = {name: v for name in _ENTRY_FIELDS if (v := getattr(self, name)) is not None or name == "tier"}
        out["at"] = round(self.at, 3)
        return out


_ENTRY_FIELDS: Final = tuple(f.name for f in fields(AuditEntry))
"""Read once: ``fields()`` builds its answer on every call."""


class AuditTrail:
    """One run's (or door call's) audit entries, written to the log when it ends or pauses.

    Args:
        settings: What the entries keep (``enabled: false``: nothing is kept).
        caller: Who the calls are for.
        execution_id: The run's id (the same across its pauses).
    """

    __slots__ = ("_call", "_entries", "_keep", "_who", "caller", "execution_id", "settings")

    def __init__(self, settings: AuditSettings, caller: str | None = None, execution_id: str | None = None) -> None:
        self.settings = settings
        self._keep = (settings.enabled, settings.args, settings.results)
        """The settings a call reads, read once (a settings model's attribute costs more than a tuple's item)."""
        self.caller = caller
        self.execution_id = execution_id
        # Each entry as the log keeps it (AuditEntry.to_dict()), built where it happens: a call is on
        # the hot path, and an AuditEntry built only to be turned into a dict cost more than the call.
        self._entries: list[dict[str, Any]] = []
        who = {"decided_by": "policy", "caller": caller, "execution_id": execution_id}
        self._who = {k: v for k, v in who.items() if v is not None}
        """The fields after ``decision`` every entry of this trail has (a call's, in their order)."""
        self._call: dict[str, Any] = {
            "at": 0.0,
            "tool_id": "",
            "tier": None,
            "decision": "call",
            **self._who,
            "ok": True,
        }
        """A call's entry up to ``ok``, copied per call (cheaper than building it field by field)."""

    def add(self, tool_id: str, tier: str | None, decision: str, by: str) -> None:
        """Record a decision (the policy's or a person's)."""
        if self.settings.enabled:
            at = (time.time() * 1000.0 + 0.5) // 1.0 / 1000.0
            row = {"at": at, "tool_id": tool_id, "tier": tier, "decision": decision, **self._who}
            row["decided_by"] = by
            self._entries.append(row)

    def call(
        self,
        tool_id: str,
        args: Any,
        ok: bool,
        code: str | None,
        duration_ms: float,
        result: Any,
        early: str | None = None,
    ) -> None:
        """Record a call that was made (``early``: see :attr:`AuditEntry.early`; positional: once per call)."""
        enabled, keep_args, keep_results = self._keep
        if not enabled:
            return
        row = self._call.copy()
        # Rounded to the millisecond as AuditEntry.to_dict() does, with float arithmetic alone
        # (``x // 1.0`` is ``math.floor(x)`` as a float, which divides to the same value).
        row["at"] = (time.time() * 1000.0 + 0.5) // 1.0 / 1000.0
        row["tool_id"] = tool_id
        row["ok"] = ok
        if code is not None:
            row["code"] = code
        row["duration_ms"] = (duration_ms * 1000.0 + 0.5) // 1.0 / 1000.0
        if keep_args:
            row["args"] = _clip_json(dict(args))
        if keep_results and ok and result is not None:
            row["result"] = _clip_json(result)
        if early is not None:
            row["early"] = early
        self._entries.append(row)

    def take(self) -> list[dict[str, Any]]:
        """The entries so far, as the log keeps them (:meth:`AuditEntry.to_dict`), handed over once."""
        out, self._entries = self._entries, []
        return out


def _clip_json(value: Any, limit: int = CLIP_CHARS) -> Any:
    """``value`` itself if its JSON text is ``limit`` characters at most, else that text cut there, with "…"."""
    text = json_text(value)
    return value if len(text) <= limit else text[:limit] + "…"


def tool_definition(tool: Tool) -> dict[str, Any]:
    """Every field of a tool the model sees: id, title, description, schemas, annotations, and more.

    Also, when there are any, the tags search ranks it by and the ``_meta`` links its docs show as
    references; they are left out when empty, so that a definition without them keeps its digest.
    """
    out: dict[str, Any] = {
        "id": tool.id,
        "title": tool.title,
        "description": tool.description,
        "input_schema": tool.input_schema,
        "output_schema": tool.output_schema,
        "annotations": tool.annotations,
    }
    if tool.tags:
        out["tags"] = list(tool.tags)
    meta = tool.meta or {}
    if links := {k: meta[k] for k in REFERENCE_META_KEYS if k in meta}:
        out["references"] = links
    return out


def tool_hash(tool: Tool) -> str:
    """A digest of :func:`tool_definition`."""
    return hashlib.sha256(json.dumps(tool_definition(tool), sort_keys=True, default=str).encode()).hexdigest()[:32]


class AuditLog:
    """The audit log of one state store.

    Args:
        store: Where the log lives.
        clock_skew: Seconds by which the clocks of the processes appending to the log may disagree
            (replicas; a writer that waited for the SQLite lock): a read ``since`` a time walks back
            to appends made this long before it, so that none holding later entries is missed.
    """

    def __init__(self, store: StateStore, *, clock_skew: float = 60.0) -> None:
        self.store = store
        self.clock_skew = clock_skew

    async def probe(self) -> None:
        """Make sure the store takes writes.

        A store may answer reads and refuse writes: a Redis primary without its replicas, one
        demoted after a failover, a read-only file.

        Raises:
            StateUnavailableError: If it does not.
        """
        await self.store.put(AUDIT_KIND + "-probe", "probe", b"1", ttl=60.0)

    async def write(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """Append a run's entries (:meth:`AuditEntry.to_dict`), :data:`WRITE_CHUNK` to an append, in order.

        A store failure is logged, not raised (the entries not written yet are lost with it).
        """
        for start in range(0, len(entries), WRITE_CHUNK):
            blob = json_text(entries[start : start + WRITE_CHUNK])
            try:
                await self.store.append(AUDIT_KIND, blob.encode("utf-8", "surrogatepass"))
            except StateUnavailableError as e:
                _log.warning("audit.write_failed", entries=len(entries) - start, error=str(e)[:300])
                return

    async def newest(self, *, since: float | None = None) -> AsyncGenerator[dict[str, Any], None]:
        """Entries at or after ``since`` (Unix time), newest first, read from the log's end as they are asked for.

        Each store read asks for twice as many appends as the one before (8 to 1000), so taking
        the newest N entries reads about N appends whatever the log's length; with ``since``, the
        walk ends at the first append made before it (less :attr:`clock_skew`). Close the iterator
        when stopping early (``contextlib.aclosing``).

        Raises:
            StateUnavailableError: If the store cannot be read.
        """
        before: int | None = None
        size = 8
        stop = None if since is None else since - self.clock_skew
        while True:
            page = await self.store.read_log(AUDIT_KIND, before=before, limit=size, newest_first=True)
            for entry in page:
                if stop is not None and entry.at < stop:
                    return
                try:
                    items = as_list(json.loads(entry.value)) or ()
                except ValueError:
                    continue
                for item in reversed(items):
                    d = as_dict(item)
                    if d is not None and (since is None or _at(d) >= since):
                        yield d
            if len(page) < size:
                return
            before, size = page[-1].seq, min(size * 2, 1000)

    async def read(
        self, *, since: float | None = None, limit: int = 1000, caller: str | None = None
    ) -> list[dict[str, Any]]:
        """Entries at or after ``since`` (Unix time), oldest first, at most ``limit`` (the newest ones; 0: all).

        ``caller``: only this caller's entries (``"local"``: those made with no caller); ``None``: everyone's.

        Raises:
            StateUnavailableError: If the store cannot be read.
        """
        out: list[dict[str, Any]] = []
        async with aclosing(self.newest(since=since)) as entries:
            async for d in entries:
                if caller is not None and (d.get("caller") or "local") != caller:
                    continue
                out.append(d)
                if len(out) == limit:
                    break
        out.reverse()
        return out


def _at(item: dict[str, Any]) -> float:
    try:
        return float(item.get("at", 0))
    except (TypeError, ValueError):
        return 0.0


def _key(tool_id: str) -> str:
    return hashlib.sha256(tool_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]


class Quarantine:
    """Which tool definitions a person approved (``policy.quarantine``).

    Checks are answered from memory (kept in step with the store every 2 s, and at once for
    approvals made here), so they cost a dictionary lookup per call.
    """

    def __init__(self, store: StateStore, index: Index) -> None:
        self.store = store
        self.index = index
        self._approved: dict[str, tuple[str, str | None, float | None]] = {}
        self._hashes: dict[str, tuple[Tool, str]] = {}

    def _hash(self, tool: Tool) -> str:
        hit = self._hashes.get(tool.id)
        if hit is not None and hit[0] is tool:
            return hit[1]
        h = tool_hash(tool)
        self._hashes[tool.id] = (tool, h)
        return h

    def digest(self, tool: Tool) -> str:
        """The digest of the tool's definition (:func:`tool_hash`), what an approval of it names."""
        return self._hash(tool)

    def quarantined(self, tool: Tool) -> bool:
        """Whether calls of this tool are blocked (new, or changed since approved). Saved snippets never are."""
        if tool.namespace == _SNIPPETS:
            return False
        approved = self._approved.get(tool.id)
        return approved is None or approved[0] != self._hash(tool)

    def status(self, tool: Tool) -> ToolApprovalEntry:
        """The tool's standing."""
        approved = self._approved.get(tool.id)
        digest = self._hash(tool)
        if approved is None:
            return ToolApprovalEntry(tool_id=tool.id, state="new", digest=digest)
        state = "approved" if approved[0] == digest else "changed"
        return ToolApprovalEntry(
            tool_id=tool.id, state=state, digest=digest, approved_by=approved[1], approved_at=approved[2]
        )

    async def sync(self) -> None:
        """Read the approvals from the store."""
        seen: dict[str, tuple[str, str | None, float | None]] = {}
        for info in await self.store.list(APPROVED_KIND, limit=100_000):
            rec = await self.store.get(APPROVED_KIND, info.key)
            if rec is None:
                continue
            try:
                d = json.loads(rec.value)
                seen[str(d["tool_id"])] = (str(d["hash"]), d.get("by"), d.get("at"))
            except (ValueError, KeyError, TypeError):
                continue
        self._approved = seen

    async def keep_in_sync(self) -> None:
        """Re-read the approvals every two seconds until cancelled (a background task)."""
        await keep_in_sync(self.sync, _log, "quarantine.sync_failed")

    async def approve(self, tools: Iterable[Tool], by: str) -> dict[str, str]:
        """Approve the tools' current definitions; returns the ids approved, each with its definition's digest."""
        out: dict[str, str] = {}
        now = time.time()
        for tool in tools:
            h = self._hash(tool)
            defn = tool_definition(tool)  # kept so that a later change can be shown as a diff
            body = json.dumps({"tool_id": tool.id, "hash": h, "by": by, "at": now, "definition": defn}, default=str)
            body = body.encode()
            await self.store.put(APPROVED_KIND, _key(tool.id), body)
            self._approved[tool.id] = (h, by, now)
            out[tool.id] = h
        return out

    async def approved_definition(self, tool_id: str) -> dict[str, Any] | None:
        """The definition last approved for ``tool_id`` (``None``: never approved, or not kept with its approval)."""
        rec = await self.store.get(APPROVED_KIND, _key(tool_id))
        try:
            d = json.loads(rec.value) if rec is not None else None
        except ValueError:
            return None
        return as_dict((as_dict(d) or {}).get("definition"))
