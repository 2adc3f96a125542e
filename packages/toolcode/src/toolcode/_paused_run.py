"""A paused run: everything needed to continue a run that waits for a decision, and its record.

:class:`PausedRun` is what the engine's suspended interpreter, the run's trace, output, counters
and approvals become when a call needs a person's decision; :meth:`PausedRun.encode` and
:meth:`PausedRun.decode` are its one stored form (a JSON header line, then the snapshot bytes).
:mod:`toolcode._paused` keeps these records in the state store.

The code of the saved snippets its pending calls cover is kept once, by digest
(:attr:`PausedRun.snippet_code`), however many calls name them; the calls refer to it. A record
longer than its keeper allows is found out while its header is written, a part at a time: never by
building all of it first (:meth:`PausedRun.encode`).
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal, cast, get_args

from toolcode._options import ResolvedOptions
from toolcode._types import PauseState, ToolCallRecord
from toolcode.calls import Approvals, PendingCall, call_key, snippet_code
from toolcode.exceptions import InvalidArgumentsError, SessionLimitError
from toolcode.state import ABSENT
from tooldocs import json_text

__all__ = [
    "DECISIONS",
    "ID_PATTERN",
    "Decision",
    "PausedRun",
    "RecordTooLarge",
    "check_decision",
    "new_execution_id",
]

ID_PATTERN: Final = re.compile(r"^[0-9a-f]{32}\Z")
Decision = Literal["approve", "approve_run", "deny", "abort"]
"""``approve``: this call, once; ``approve_run``: these tools for the rest of the run; ``deny``: the
snippet gets ``approval_denied``; ``abort``: the run ends here."""
DECISIONS: Final[tuple[Decision, ...]] = get_args(Decision)


def new_execution_id() -> str:
    """A fresh, unguessable execution id: 128 random bits from the system's generator, as 32 hex digits."""
    return os.urandom(16).hex()


def check_decision(value: Any) -> Decision:
    """``value`` if it is a decision; else :class:`InvalidArgumentsError` on ``decision``."""
    if value in DECISIONS:
        return value
    raise InvalidArgumentsError("decision", f"must be one of {', '.join(DECISIONS)}; got {str(value)[:40]!r}")


class RecordTooLarge(Exception):
    """A paused run's record would be longer than allowed (:meth:`PausedRun.encode` stopped writing it)."""

    def __init__(self, at_least: int) -> None:
        super().__init__(f"the record would be at least {at_least} bytes long")
        self.at_least = at_least
        """Bytes counted when it stopped: the record is at least this long."""


@dataclass(slots=True)
class PausedRun:
    """Everything needed to continue a run that waits for a decision."""

    execution_id: str
    owner: str
    caller: str | None
    code: str
    input: Any
    options: ResolvedOptions
    session: str | None
    state: PauseState
    approvals: Approvals
    trace: list[ToolCallRecord]
    stdout: str
    stderr: str
    calls: int
    """Tool calls counted against ``max_tool_calls`` so far."""
    elapsed: float
    """Seconds the run has been running (waiting for a person does not count)."""
    may_call: list[str] = field(default_factory=list[str])
    """The tools the snippet names literally (what it may still call)."""
    created: float = field(default_factory=time.time)
    paused_at: float = field(default_factory=time.time)
    expires: float | None = None
    run_id: str = ""
    """The run's id in the audit log: its first question's ``execution_id`` (each question has an
    id of its own, so that a decision answers the question it was given for); that id by default."""
    session_version: int | None = None
    """The version of its session's record when the run paused (``0``: the session was new); it
    continues only in the session at that version. ``None``: not in a session, or a record kept
    before this was (then the session is not checked)."""
    snippet_code: dict[str, str] = field(default_factory=dict[str, str])
    """The code of the saved snippets the pending calls cover, each once, by digest (what their
    questions show; :func:`~toolcode.calls.snippet_code`, within its cap). By default, taken from
    the pending calls as judged."""

    def __post_init__(self) -> None:
        self.run_id = self.run_id or self.execution_id
        self.snippet_code = self.snippet_code or snippet_code(self.pending)

    def session_conflict(self, version: int) -> SessionLimitError | None:
        """Why the run cannot continue in its session, now at ``version`` (``0``: absent); ``None`` when it can.

        The run's state replaces the session's when it is written, so it continues only in the
        session it paused in: at the same version, or gone since (expired or reset while the run
        waited: nothing in it to lose). Another version means a run of the session was let in
        while this one waited: continuing would overwrite its work, so the run ends instead, with
        ``session_limit`` (``runs_while_paused``), and the session keeps that work.
        """
        if self.session is None or self.session_version is None or version in (self.session_version, ABSENT):
            return None
        return SessionLimitError(
            self.session,
            "runs_while_paused",
            0,
            1,
            f"the session was written (version {version}, not {self.session_version}) while run "
            f"{self.execution_id} waited for a decision; it was not continued, so as not to overwrite that "
            "work: the session keeps it; run the rest of that run's code again if it is still wanted",
        )

    @property
    def pending(self) -> list[PendingCall]:
        """The calls that wait."""
        code = self.snippet_code
        return [p if isinstance(p, PendingCall) else PendingCall.from_dict(p, code) for p in self.state.pending]

    def apply(self, decision: Decision, who: str) -> None:
        """Record a decision on the pending calls (``abort`` is handled by the caller)."""
        a = self.approvals
        a.who = who
        for p in self.pending:
            if decision == "approve":
                a.once.append(call_key(p.tool_id, p.args, p.digest))
            elif decision == "approve_run":
                a.tools[p.tool_id] = p.digest
            elif decision == "deny":
                a.denied.append(call_key(p.tool_id, p.args))

    def encode(self, most: int | None = None) -> bytes:
        """One JSON header line, then the engine's snapshot bytes.

        The header is written a part at a time (each pending call, trace record and snippet's code
        its own part), each part counted as it is written.

        Args:
            most: The longest record wanted, in bytes (``None``: any).

        Raises:
            RecordTooLarge: If the record is longer than ``most``: found once the parts written pass it,
                so at most that much (and one part) is ever written.
        """
        limit = sys.maxsize if most is None else most
        parts: list[str] = []
        # Characters counted as written (no more than its bytes): the first part past ``limit`` stops it.
        size = len(self.state.snapshot) + 2

        def counted(text: str) -> str:
            nonlocal size
            size += len(text) + 1
            if size > limit:
                raise RecordTooLarge(size)
            return text

        def add(name: str, value: Any) -> None:
            parts.append(counted(f'"{name}":{json_text(value)}'))

        def add_list(name: str, items: Iterable[Any]) -> None:
            parts.append(counted(f'"{name}":[') + ",".join(counted(json_text(item)) for item in items) + "]")

        o = self.options
        add("v", 1)
        for name in _PLAIN:
            add(name, getattr(self, name))
        add("options", {**asdict(o), "timeout": None if math.isinf(o.timeout) else o.timeout})
        add("drive", self.state.drive)
        add_list("pending", (p.to_dict() for p in self.pending))
        add("line", self.state.line)
        add("approvals", self.approvals.to_dict())
        add_list("trace", (r.to_dict() for r in self.trace))
        add("run_id", self.run_id)
        add("session_version", self.session_version)
        add_list("snippet_code", ([h, code] for h, code in self.snippet_code.items()))
        blob = ("{" + ",".join(parts) + "}").encode("utf-8", "surrogatepass") + b"\n" + self.state.snapshot
        if len(blob) > limit:
            raise RecordTooLarge(len(blob))
        return blob

    @classmethod
    def decode(cls, blob: bytes, *, snapshot: bool = True) -> PausedRun:
        """Read :meth:`encode`'s output back.

        Args:
            blob: The record.
            snapshot: Whether to keep the engine's snapshot (``False``: an empty one, what a
                listing needs: the snapshot is most of a paused run's size).

        Raises:
            ValueError: If the record is not a paused run this version can read.
        """
        end = blob.find(b"\n")
        head = blob if end < 0 else blob[:end]
        kept = blob[end + 1 :] if snapshot and end >= 0 else b""
        try:
            d = json.loads(head)
            if d.get("v") != 1:
                raise ValueError(f"unknown paused-run format {d.get('v')!r}")
            o: dict[str, Any] = dict(d["options"])
            o["timeout"] = math.inf if o["timeout"] is None else o["timeout"]
            if o["allowed_namespaces"] is not None:
                o["allowed_namespaces"] = tuple(map(str, o["allowed_namespaces"]))
            table = cast("list[tuple[Any, Any]]", d.get("snippet_code") or [])
            code = {str(h): str(c) for h, c in table}
            pending = [PendingCall.from_dict(p, code) for p in d["pending"]]
            return cls(
                **{name: read(d[name]) for name, read in _PLAIN.items()},
                options=ResolvedOptions(**o),
                state=PauseState(kept, dict(d["drive"]), pending, d["line"]),
                approvals=Approvals.from_dict(d["approvals"]),
                trace=[_record_of(r) for r in d["trace"]],
                run_id=str(d.get("run_id") or ""),  # a record from before run ids: its own
                session_version=None if d.get("session_version") is None else int(d["session_version"]),
                snippet_code=code,
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"unreadable paused run: {type(e).__name__}: {e}") from None


def _same(value: Any) -> Any:
    return value


_PLAIN: Final[dict[str, Callable[[Any], Any]]] = {
    "execution_id": str,
    "owner": str,
    "caller": _same,
    "code": str,
    "input": _same,
    "session": _same,
    "stdout": str,
    "stderr": str,
    "calls": int,
    "elapsed": float,
    "may_call": lambda v: [str(x) for x in v],
    "created": float,
    "paused_at": float,
    "expires": _same,
}
"""The fields stored as they are, and how each is read back (a record is checked as it is read)."""


def _record_of(d: Mapping[str, Any]) -> ToolCallRecord:
    return ToolCallRecord(
        tool_id=str(d["tool_id"]),
        args=dict(d.get("args") or {}),
        structured=d.get("structured"),
        backend_kind=d.get("backend_kind"),
        error=d.get("error"),
        error_op=d.get("error_op"),
        duration_ms=float(d.get("duration_ms") or 0.0),
        started_ms=float(d.get("started_ms") or 0.0),
        code=d.get("code"),
        early=d.get("early"),
    )
