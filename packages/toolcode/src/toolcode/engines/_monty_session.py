"""One run of a Monty session: its stored state restored before the snippet, the state to store set after."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pydantic_monty as pm

from toolcode._types import PauseState, SessionState
from toolcode.engines import _monty_state as _state
from toolcode.engines._leaving import cut_path
from toolcode.engines._monty_pool import Worker, exit_quietly
from toolcode.exceptions import EngineError, LimitExceededError
from toolindex.log import get_logger

__all__ = ["SessionTurn"]

_log = get_logger("toolcode.engines.monty")


class SessionTurn:
    """What the engine does for a run in ``session`` (resuming ``paused``, when given).

    Args:
        session: The session, with its stored state; the run sets ``ran``, ``paused``, ``kept`` and ``token``.
        paused: The paused run being resumed (its snapshot holds the session's state).
        max_depth: The sandbox's recursion limit (a rebuild carries no value nested deeper).
    """

    def __init__(self, session: SessionState, paused: PauseState | None, max_depth: int) -> None:
        self._session = session
        self._head, self._dump = _state.decode(session.state)
        if paused is not None and "session" in paused.drive:
            self._head = _state.SessionHead.from_json(paused.drive["session"])  # as it was when the run paused
        self._new = self._dump is None
        self._depth = max_depth

    async def restore(self, worker: Worker, code: str) -> None:
        """Load the stored state (a hot worker holds it already), then the definitions a new session or ``code`` needs.

        Raises:
            EngineError: The stored state cannot be loaded.
        """
        assert worker.session is not None
        if not worker.hot and self._dump is not None:
            try:
                await worker.session.load_session(self._dump)
            except pm.MontyError as e:
                raise EngineError("monty", f"session {self._session.name!r} cannot be restored: {e}") from None
        # A new session gets its definitions; a helper is defined when first mentioned.
        prelude = self._head.prelude(code, new=self._new)
        if prelude:
            await worker.session.feed_run(prelude)

    def paused(self, drive: dict[str, Any]) -> dict[str, Any]:
        """The drive state of a pause, with the head as it is now (the snapshot holds the session)."""
        self._session.paused = True
        return {**drive, "session": self._head.to_json()}

    async def keep(
        self, worker: Worker, code: str, checkout: Callable[[], pm.AsyncMontySession], *, completed: bool
    ) -> None:
        """Set the state to store after the run (``kept``); rebuild it first when its history outweighs it.

        A snippet that raised keeps what it did up to there, as a REPL does. ``worker.keep_hot``
        says whether the worker (a new one, after a rebuild) holds exactly the state stored.
        """
        assert worker.session is not None
        try:
            if not completed:
                await worker.session.feed_run(_state.RESET_OUT)
            self._head.note_run(code, completed=completed)
            dump = await worker.session.dump()
        except pm.MontyError as e:
            _log.warning("monty.session_dump_failed", session=self._session.name, error=repr(e)[:300])
            self._session.kept = None
            return
        exact = True
        if self._new:
            self._head.base = len(dump)
        elif self._head.due(len(dump)):
            rebuilt = await self._rebuild(worker, checkout)
            exact = rebuilt is not None  # else the worker ran the export, or holds a partial rebuild
            dump = rebuilt if rebuilt is not None else dump
            self._head.base = len(dump)  # after a failure: try again once the history has doubled
        self._session.kept = _state.encode(self._head, dump)
        self._session.token = uuid.uuid4().hex
        worker.keep_hot = exact

    async def _rebuild(self, worker: Worker, checkout: Callable[[], pm.AsyncMontySession]) -> bytes | None:
        """Re-create the session in a fresh worker from its namespace (see ``_monty_state``); its dump, or ``None``.

        ``worker`` ends up holding the fresh worker (or none), whatever happens.
        """
        assert worker.session is not None
        head = self._head
        try:
            data, bad, names = await worker.session.feed_run(_state.EXPORT, inputs=head.export_inputs(self._depth))
        except pm.MontyError as e:
            _log.debug("monty.session_export_failed", error=repr(e)[:300])
            return None
        try:
            cut = cut_path(data, self._depth)
        except LimitExceededError:
            cut = "too many items"
        if bad or not _state.plain_data(data) or cut is not None:
            _log.debug("monty.session_not_rebuilt", names=[str(n)[:40] for n in bad[:10]])
            return None
        old, worker.session = worker.session, None
        await exit_quietly(old)
        definitions, replay = head.rebuild_source()
        try:
            worker.session = await checkout().__aenter__()
            await worker.session.feed_run(definitions)
            got = await worker.session.feed_run(replay, inputs=data)
            if {n for n in got if not _state.engine_name(n)} != {n for n in names if not _state.engine_name(n)}:
                return None
            return await worker.session.dump()
        except pm.MontyError as e:
            _log.debug("monty.session_rebuild_failed", error=repr(e)[:300])
            return None
