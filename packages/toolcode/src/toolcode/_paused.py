"""Paused runs: a run stopped at a call that needs a decision, kept in the state store until decided.

A paused run holds no worker: the engine dumped the suspended interpreter, and this module keeps
it (a :class:`~toolcode._paused_run.PausedRun`: with the run's trace, output, counters and
approvals) as one record of kind ``paused`` with a TTL. Resuming *takes* the record (a
compare-and-set delete), so two replicas never continue the same run twice; the run continues
from the exact call it stopped at, nothing before it is replayed.

A run paused in a session also marks the session (new runs of it are refused until it is
decided). A run continued in its session is read (:meth:`PausedRuns.read`), then *claimed*
(:meth:`PausedRuns.claim`: taken, its mark removed) only once its resumer holds the session, and
it goes on only in the session as it left it (:meth:`PausedRun.session_conflict`): no run of the
session starts between the mark going and the resumed run's state being written.

A resume holds the run (:meth:`PausedRuns.hold_for_resume`, a lock of the store) from before it waits for
the session until it is over: a second resume of the same run, here or on another replica, is
answered ``busy`` at once instead of waiting for the first one's whole run. Taking the record stays
what makes a run continue at most once; the lock only spares the wait.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Final

import anyio
import anyio.to_thread

from toolcode._paused_run import ID_PATTERN, PausedRun, RecordTooLarge
from toolcode._sessions import owner_of
from toolcode._settings import PolicySettings
from toolcode.exceptions import (
    EngineBusyError,
    InvalidArgumentsError,
    LimitExceededError,
    StateConflictError,
    StateUnavailableError,
)
from toolcode.state import Release, StateStore
from toolindex.log import get_logger

__all__ = ["PausedRuns"]

_log = get_logger("toolcode.paused")

KIND: Final = "paused"
_SESSION_KIND: Final = "paused-session"
"""``<owner>/<session>`` → the id of the session's run that waits for a decision."""
_DECIDED_KIND: Final = "paused-decided"
"""``<owner>/<execution id>`` → the outcome a decided run ended with (read back by a later resume)."""
_DECIDED_TTL: Final = 3_600.0
_OPERATOR_SCAN: Final = 10_000
"""Paused records an operator's lookup or listing reads at most (every caller's)."""


class PausedRuns:
    """The paused runs of one state store.

    Each is kept under its owner's key (``<owner>/<execution id>``): a caller reads, lists and
    counts only its own, never another's records; an operator (``policy.operators``) reads, lists
    and decides every caller's.

    Args:
        store: Where they live.
        settings: ``pause_ttl`` (seconds a run waits for its decision), ``max_paused_bytes`` (the
            largest run kept) and ``max_paused_runs`` (runs one caller may have waiting).
    """

    def __init__(self, store: StateStore, settings: PolicySettings | None = None) -> None:
        self.store = store
        self.settings = settings or PolicySettings()
        self.ttl = self.settings.pause_ttl
        self.changes = 0
        """Runs paused or taken through this object so far (what a watcher compares)."""
        self._changed: anyio.Event | None = None

    def _change(self) -> None:
        self.changes += 1
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def changed_since(self, seen: int) -> int:
        """Wait until a run of this process pauses or is taken after ``changes`` was ``seen``; the new count.

        Runs paused by another process sharing the store are not seen here: a watcher also looks again now
        and then.
        """
        while self.changes == seen:
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()
        return self.changes

    async def save(self, run: PausedRun) -> None:
        """Keep a paused run until it is decided or expires.

        Raises:
            LimitExceededError: ``max_paused_bytes`` (code ``memory_limit``) if it is too large to
                keep (its record is written only that far: :meth:`PausedRun.encode`);
                ``max_paused_runs`` (code ``quota_exceeded``) if its owner has that many waiting
                (counted before the run is written and again after: then it is taken back).
            StateUnavailableError: If the store cannot be reached (the run is taken back, or the error
                says to abort it).
        """
        run.expires = time.time() + self.ttl
        limits = self.settings
        waiting = await self.store.list(KIND, prefix=run.owner + "/", limit=limits.max_paused_runs)
        if len(waiting) >= limits.max_paused_runs:
            raise self._over_quota(len(waiting))
        try:
            # Written off the event loop, a part at a time, and stopped once past the limit: a large
            # run never holds up the other callers, nor is built whole to be refused.
            blob = await anyio.to_thread.run_sync(run.encode, limits.max_paused_bytes)
        except RecordTooLarge as e:
            raise LimitExceededError(
                "max_paused_bytes",
                limits.max_paused_bytes,
                e.at_least,
                "the run could not pause: it holds too much to keep while a person decides; keep less in "
                "variables before a call that asks (policy.max_paused_bytes)",
            ) from None
        key = f"{run.owner}/{run.execution_id}"
        try:
            await self.store.put(KIND, key, blob, ttl=self.ttl)
            if run.session is not None:  # the session's next runs wait for this one's decision
                marker, eid = f"{run.owner}/{run.session}", run.execution_id.encode()
                await self.store.put(_SESSION_KIND, marker, eid, ttl=self.ttl)
            # Counted again once written: runs pausing at once (on this server or others sharing the
            # store) each found room before; one that sees its owner past the quota now takes itself
            # back (all of them may; none leaves the owner past it).
            waiting = await self.store.list(KIND, prefix=run.owner + "/", limit=limits.max_paused_runs + 1)
        except StateUnavailableError as e:
            await self._undo(run, key, e)
            raise
        if len(waiting) > limits.max_paused_runs:
            await self._undo(run, key, None)
            raise self._over_quota(len(waiting) - 1)
        self._change()

    def _over_quota(self, waiting: int) -> LimitExceededError:
        """``max_paused_runs`` refusing a run whose owner has ``waiting`` runs waiting already."""
        return LimitExceededError(
            "max_paused_runs",
            self.settings.max_paused_runs,
            waiting,
            "the run could not pause: this caller has as many paused runs waiting as it may "
            "(policy.max_paused_runs); decide some (list_paused), or let them expire",
        )

    async def _undo(self, run: PausedRun, key: str, failed: StateUnavailableError | None) -> None:
        """Take back a run written by :meth:`save` whose caller is told it did not pause (``failed``: the store failed).

        The write may have landed though its answer was lost (a timeout): a run its caller is told
        did not pause must never be resumed later. What could not be undone, the error says.
        """
        with anyio.CancelScope(shield=True):
            left = f"the run may have been kept waiting all the same: abort it (execution_id {run.execution_id})"
            try:
                await self.store.delete(KIND, key)
            except StateUnavailableError as e:
                cause = failed or e
                raise StateUnavailableError(cause.store, f"{cause.reason}; {left}") from None
            if run.session is not None:
                with contextlib.suppress(StateUnavailableError):  # a mark whose run is gone refuses nothing
                    await self._unmark(run)

    async def _unmark(self, run: PausedRun) -> None:
        """Take the session's mark away if it is this run's."""
        marker = f"{run.owner}/{run.session}"
        rec = await self.store.get(_SESSION_KIND, marker)
        if rec is not None and rec.value == run.execution_id.encode():
            await self.store.delete(_SESSION_KIND, marker, expect=rec.version)

    async def waiting_in(self, caller: str | None, session: str) -> str | None:
        """The id of the caller's paused run in ``session``, if one waits for a decision.

        A mark whose run is gone (taken by a resume whose removal of the mark failed, say) holds
        nothing back: a run checks this while it holds the session, so a run being resumed, which
        holds it from before its mark goes until its state is written, is never missed.
        """
        owner = owner_of(caller)
        rec = await self.store.get(_SESSION_KIND, f"{owner}/{session}")
        if rec is None:
            return None
        eid = rec.value.decode(errors="replace")
        if not ID_PATTERN.match(eid) or not await self.store.list(KIND, prefix=f"{owner}/{eid}", limit=1):
            return None
        return eid

    @staticmethod
    def _unknown(execution_id: str) -> InvalidArgumentsError:
        return InvalidArgumentsError(
            "execution_id",
            f"no paused run {execution_id[:40]!r}: unknown, already resumed, or expired (paused runs wait "
            "policy.pause_ttl seconds)",
        )

    async def read(self, execution_id: Any, caller: str | None, *, operator: bool = False) -> tuple[PausedRun, int]:
        """A paused run of this caller (any caller's, for an ``operator``) and its record's version: to :meth:`claim`.

        Raises:
            InvalidArgumentsError: If the id is malformed, unknown, expired, or another caller's.
            StateUnavailableError: If the store cannot be reached.
        """
        eid = self.check_id(execution_id)
        # Looked up under the caller's own key: another caller's run is not even read (but by an operator).
        rec = await self.store.get(KIND, f"{owner_of(caller)}/{eid}")
        if rec is None and operator:
            keys = [i.key for i in await self.store.list(KIND, limit=_OPERATOR_SCAN) if i.key.endswith("/" + eid)]
            rec = await self.store.get(KIND, keys[0]) if keys else None
        if rec is None:
            raise self._unknown(eid)
        try:
            run = PausedRun.decode(rec.value)
        except ValueError:
            raise self._unknown(eid) from None
        if (run.owner != owner_of(caller) and not operator) or run.execution_id != eid:
            raise self._unknown(eid)
        return run, rec.version

    async def get(self, execution_id: Any, caller: str | None, *, operator: bool = False) -> PausedRun:
        """Read a paused run of this caller (of any caller, for an ``operator``) without taking it.

        Raises:
            InvalidArgumentsError: If the id is malformed, unknown, expired, or another caller's.
        """
        return (await self.read(execution_id, caller, operator=operator))[0]

    async def claim(self, run: PausedRun, version: int) -> None:
        """Take a run :meth:`read` at ``version`` to continue it: nobody else can afterwards; its session is unmarked.

        A run continued in its session is claimed by a resumer that holds the session: no other
        run of it starts between the mark going and the resumed run's state being written.

        Raises:
            InvalidArgumentsError: If another request took it first (or it expired meanwhile).
            StateUnavailableError: If the store cannot be reached (the run was not taken).
        """
        try:
            taken = await self.store.delete(KIND, f"{run.owner}/{run.execution_id}", expect=version)
        except StateConflictError:
            taken = False
        if not taken:
            raise InvalidArgumentsError(
                "execution_id", f"paused run {run.execution_id!r} is being resumed by another request"
            )
        self._change()
        if run.session is not None:
            try:
                await self._unmark(run)
            except StateUnavailableError as e:  # the run is taken all the same: a mark without its run holds nothing
                _log.warning("paused.unmark_failed", execution_id=run.execution_id, error=str(e)[:300])

    async def hold_for_resume(self, run: PausedRun, *, seconds: float) -> Release:
        """Hold ``run`` for one resume that may take ``seconds``: another resume of it meanwhile is refused at once.

        Returns:
            What gives the run back (when the resume is over; never raises, idempotent).

        Raises:
            EngineBusyError: If another request (on this server or another sharing the store) is
                resuming it.
            StateUnavailableError: If the store cannot be reached.
        """
        name = f"resume/{run.owner}/{run.execution_id}"
        release = await self.store.try_lock(name, ttl=min(seconds, 86_400.0) + 30.0)
        if release is None:
            raise EngineBusyError(
                "paused",
                f"paused run {run.execution_id!r} is being resumed by another request: its outcome goes to that "
                "request (resume it again once that is over to read it)",
            )

        async def give_back() -> None:
            with anyio.CancelScope(shield=True):
                try:
                    await release()
                except StateUnavailableError as e:  # the lock expires with its ttl
                    _log.warning("paused.resume_unlock_failed", execution_id=run.execution_id, error=str(e)[:300])

        return give_back

    async def take(self, execution_id: Any, caller: str | None, *, operator: bool = False) -> PausedRun:
        """:meth:`read` and :meth:`claim` a paused run (one that is not continued in its session: see claim).

        Only the caller's own run, or any caller's for an ``operator``.

        Raises:
            InvalidArgumentsError: If the id is malformed, unknown, expired, already taken, or
                another caller's.
            StateUnavailableError: If the store cannot be reached.
        """
        run, version = await self.read(execution_id, caller, operator=operator)
        await self.claim(run, version)
        return run

    async def list(self, caller: str | None, *, limit: int = 100, operator: bool = False) -> list[PausedRun]:
        """This caller's paused runs (every caller's, for an ``operator``), oldest first, without their snapshots."""
        owner = owner_of(caller)
        out: list[PausedRun] = []
        prefix, most = ("", _OPERATOR_SCAN) if operator else (owner + "/", max(limit, self.settings.max_paused_runs))
        for info in await self.store.list(KIND, prefix=prefix, limit=most):
            rec = await self.store.get(KIND, info.key)
            if rec is None:
                continue
            try:
                # One record at a time, each without its snapshot: a listing holds what it shows.
                run = PausedRun.decode(rec.value, snapshot=False)
            except ValueError:
                continue
            del rec
            if run.owner == owner or operator:
                out.append(run)
        return sorted(out, key=lambda r: r.paused_at)[:limit]

    async def keep_outcome(self, run: PausedRun, outcome_json: bytes) -> None:
        """Keep what a decided run ended with, for its owner, an hour at most, within its owner's quota.

        Whoever decided (the caller, an operator, the console), the run's own caller reads it back
        by resuming the same id again (:meth:`outcome_of`) instead of hearing "unknown". An outcome
        over ``max_paused_bytes`` is not kept; an owner keeps its newest ``max_paused_runs`` outcomes,
        the older ones are dropped (so they hold no more than its paused runs may).
        """
        if len(outcome_json) > self.settings.max_paused_bytes:
            return
        ttl = min(self.ttl, _DECIDED_TTL)
        await self.store.put(_DECIDED_KIND, f"{run.owner}/{run.execution_id}", outcome_json, ttl=ttl)
        await self._trim_outcomes(run.owner)

    async def _trim_outcomes(self, owner: str) -> None:
        """Drop the owner's oldest kept outcomes past ``max_paused_runs``.

        Trimmed after each write, from what the shared store holds: replicas that keep outcomes at
        once each see the others' writes, so together they leave the quota, not one each.
        """
        most = self.settings.max_paused_runs
        kept = await self.store.list(_DECIDED_KIND, prefix=owner + "/", limit=2 * most + 16)
        kept.sort(key=lambda r: (r.created, r.key), reverse=True)
        for old in kept[most:]:
            await self.store.delete(_DECIDED_KIND, old.key)

    async def outcome_of(self, execution_id: Any, caller: str | None) -> bytes | None:
        """The kept outcome of the caller's decided run ``execution_id`` (``None``: none is kept)."""
        if not isinstance(execution_id, str) or not ID_PATTERN.match(execution_id):
            return None
        rec = await self.store.get(_DECIDED_KIND, f"{owner_of(caller)}/{execution_id}")
        return rec.value if rec is not None else None

    @staticmethod
    def check_id(value: Any) -> str:
        """``value`` if it looks like an execution id; else :class:`InvalidArgumentsError`."""
        if not isinstance(value, str) or not ID_PATTERN.match(value):
            raise InvalidArgumentsError("execution_id", f"must be a 32-character hex id, got {str(value)[:40]!r}")
        return value
