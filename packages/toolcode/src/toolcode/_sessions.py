"""Sessions: variables, functions and imports that persist from one run to the next (docs/state.md).

A session belongs to an *owner* (:func:`owner_of`); its state is a record of the state store
(kind ``session``, key ``<owner>/<name>``), written after every run, so it survives a restart and
continues on any replica sharing the store. Runs of one session never overlap: they queue on a
lock in one process and on the store's lock across processes, up to ``queue_timeout`` (then ``busy``).
A run writes the session only if its record is still at the version the run read: a resumed run
reads it under the same lock it took before its pause mark went, so that is the version at its pause.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import json
import re
import time
import weakref
from collections.abc import AsyncGenerator, Collection, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Final

import anyio

from toolcode._globals import SNIPPET_GLOBALS, async_names
from toolcode._modules import PACKAGE
from toolcode._names import alias_name, module_names, rebound_by_functions
from toolcode._settings import SessionSettings
from toolcode._types import SessionState
from toolcode.exceptions import (
    EngineBusyError,
    InvalidArgumentsError,
    SessionLimitError,
    StateUnavailableError,
)
from toolcode.models import SessionEntry, SessionReport
from toolcode.state import ABSENT, Record, Release, StateStore
from toolindex.log import get_logger

__all__ = ["SESSION_NAME", "Sessions", "owner_of", "session_imports"]

_log = get_logger("toolcode.sessions")

SESSION_NAME: Final = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")
"""A session's name: 1 to 64 letters, digits, ``_``, ``.`` or ``-``."""
_MAGIC = b"TCS1"
KIND = "session"
_LOCAL = "local"
_MAX_IMPORTS = 64
_NOT_KEPT: Final = (
    "not saved: other new sessions of this caller were saved while the run went on, up to max_sessions; "
    "reset a session you no longer need (reset_session)"
)


def owner_of(caller: str | None) -> str:
    """Who owns what a caller makes (its sessions, saved snippets, stored results, paused runs).

    ``token:<name>`` (a bearer token's caller at the HTTP door) and ``user:<name>`` (a host's user at
    an agent door, :func:`toolcode._door.host_caller`) are each an owner of their own; every other
    caller (the local user, an MCP session without tokens) is ``local``.
    """
    kind, sep, name = (caller or "").partition(":")
    if not sep or kind not in ("token", "user"):
        return _LOCAL
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:48]
    digest = hashlib.sha256((name if kind == "token" else f"user:{name}").encode()).hexdigest()[:12]
    return f"{kind[0]}-{safe}-{digest}"


_REBOUND_MODULE: Final = "toolcode_session_value"
"""A module no import finds: ``import toolcode_session_value as list`` tells the check of a later run
that ``list`` is a value of the session's, of no type it knows (an earlier run's ``def list``)."""
_SPECIAL: Final = frozenset(dir(builtins)) | frozenset(g.name for g in SNIPPET_GLOBALS) | frozenset(async_names())
"""Names the check reads as the builtin or the snippet's global unless the snippet binds them."""


def session_imports(earlier: Sequence[str], code: str) -> tuple[str, ...]:
    """The lines a session's next runs are checked with, after a run of ``code``: what its names hold.

    The earlier ones, less each name this run bound otherwise at its top level (``import time``,
    ``def time():``, a loop variable ``time``: no longer the module) or in a function that declares
    it ``global``, then this run's own ``tools``
    imports, as source lines; and for a builtin or a snippet global this run bound again at its top
    level (``def list(x): ...``, ``run_tool = ...``), a line that binds it to a value the check
    does not know (:data:`_REBOUND_MODULE`), so that later runs are not checked as if it were
    the builtin.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return tuple(earlier)
    last: dict[str, bool] = {}
    """Each name the run binds at its top level → whether its last binding is a ``tools`` import."""
    mine: list[ast.Import | ast.ImportFrom] = []
    for node in tree.body:
        if _imports_tools(node):
            assert isinstance(node, ast.Import | ast.ImportFrom)
            mine.append(node)
            last.update((alias_name(a), True) for a in node.names)
        else:
            last.update((n, False) for n in module_names(node))
    # A function that declares a name ``global`` and binds it rebinds it once called, wherever.
    last.update((n, False) for n in rebound_by_functions(tree))
    kept = [line for e in earlier if (line := _without(e, last.keys())) is not None]
    own = [line for node in mine if (line := _without(ast.unparse(node), {n for n, t in last.items() if not t}))]
    rebound = [f"import {_REBOUND_MODULE} as {n}" for n, t in last.items() if not t and n in _SPECIAL]
    return (*kept, *own, *rebound)


def _imports_tools(node: ast.stmt) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and (node.module or "").split(".")[0] == PACKAGE
    return isinstance(node, ast.Import) and any(a.name.split(".")[0] == PACKAGE for a in node.names)


def _without(line: str, names: Collection[str]) -> str | None:
    """An import line without the aliases that bind ``names`` (``None`` when none is left)."""
    try:
        node = ast.parse(line).body[0]
    except (SyntaxError, ValueError, IndexError, MemoryError, RecursionError):
        return None
    if not isinstance(node, ast.Import | ast.ImportFrom):
        return None
    left = [a for a in node.names if alias_name(a) not in names]
    if not left:
        return None
    if len(left) == len(node.names):
        return line
    node.names = left
    return ast.unparse(node)


@dataclass(slots=True)
class _Meta:
    created: float
    runs: int = 0
    imports: list[str] = field(default_factory=list[str])
    token: str | None = None


def _encode(meta: _Meta, state: bytes) -> bytes:
    head = json.dumps(asdict(meta)).encode()
    return _MAGIC + len(head).to_bytes(4, "big") + head + state


def _decode(blob: bytes) -> tuple[_Meta, bytes] | None:
    if not blob.startswith(_MAGIC) or len(blob) < 8:
        return None
    n = int.from_bytes(blob[4:8], "big")
    try:
        head = json.loads(blob[8 : 8 + n])
        token = head.get("token")
        meta = _Meta(
            float(head["created"]),
            int(head["runs"]),
            [str(i) for i in head["imports"]][:_MAX_IMPORTS],
            token if isinstance(token, str) else None,
        )
    except (ValueError, KeyError, TypeError):
        return None
    return meta, blob[8 + n :]


@dataclass(slots=True)
class SessionRun:
    """One run's use of a session: the state restored for its engine, and what the run did to the session."""

    state: SessionState
    report: SessionReport


class Sessions:
    """The sessions of one state store (see the module docstring).

    Args:
        store: Where sessions live.
        settings: Limits: ``max_sessions`` per owner, ``idle_ttl`` seconds, ``max_bytes`` per
            session, ``queue_timeout`` for a session another run holds.
    """

    def __init__(self, store: StateStore, settings: SessionSettings | None = None) -> None:
        self.store = store
        self.settings = settings or SessionSettings()
        self._locks: weakref.WeakValueDictionary[str, anyio.Lock] = weakref.WeakValueDictionary()
        """This server's queue per session (a lock lives while a run holds it or waits for it)."""
        self._unreleased: dict[str, Release] = {}
        """Locks this server took and could not give back (the store was away): given back first."""

    @staticmethod
    def check_name(name: Any) -> str:
        """``name`` if it is a valid session name; else :class:`InvalidArgumentsError` on ``session``."""
        if not isinstance(name, str) or not SESSION_NAME.match(name):
            shown = repr(name)[:80]
            raise InvalidArgumentsError("session", f"must be 1-64 letters, digits, '_', '.' or '-', got {shown}")
        return name

    async def _release_quietly(self, release: Release, lock: str) -> None:
        """Give a session's lock back; when the store cannot be reached, try again at the next run."""
        try:
            await release()
        except StateUnavailableError as e:
            self._unreleased[lock] = release
            _log.warning("sessions.unlock_failed", lock=lock, error=str(e)[:300])

    @asynccontextmanager
    async def use(self, caller: str | None, name: str, *, hold: float) -> AsyncGenerator[SessionRun]:
        """Hold the session for one run of ``caller`` that may take ``hold`` seconds: restore it, store what it left.

        The run (its engine) sets ``run.state.kept``; on leaving, the state is stored with the
        session's TTL. When nothing was kept (a limit stopped the run) the session is reset.

        Raises:
            InvalidArgumentsError: If the name is invalid.
            SessionLimitError: If a new session would exceed ``max_sessions``, or the state after
                the run exceeds ``max_bytes`` (then the session keeps its state from before).
            EngineBusyError: If another run holds the session past ``queue_timeout``.
            StateUnavailableError: If the store cannot be reached.
        """
        self.check_name(name)
        owner = owner_of(caller)
        key = f"{owner}/{name}"
        async with self._local_lock(key):
            rec, release = await self._acquire(key, name, hold)
            decoded = _decode(rec.value) if rec is not None else None
            if rec is not None and decoded is None:
                _log.warning("sessions.unreadable", session=name)
            if decoded is None:
                try:
                    await self._check_room(owner, name, replacing=rec is not None)
                except BaseException:  # refused before it started: the session's lock goes with it
                    with anyio.CancelScope(shield=True):
                        await self._release_quietly(release, f"session/{key}")
                    raise
                meta, state = _Meta(time.time()), None
            else:
                meta, state = decoded
            version = rec.version if rec is not None else ABSENT
            run = SessionRun(
                SessionState(
                    name, key=key, token=meta.token, state=state, imports=tuple(meta.imports), version=version
                ),
                SessionReport(name=name, new=decoded is None),
            )
            failure: BaseException | None = None
            try:
                yield run
            finally:
                with anyio.CancelScope(shield=True):
                    # The lease goes while the state is written: a run that takes the session in
                    # between reads the old state, and its own write then loses the version check.
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._release_quietly, release, f"session/{key}")
                        try:
                            await self._after(owner, name, version, meta, run)
                        except BaseException as e:  # re-raised below, outside the task group
                            failure = e
                if failure is not None:
                    raise failure

    async def _after(self, owner: str, name: str, version: int, meta: _Meta, run: SessionRun) -> None:
        key = f"{owner}/{name}"
        kept = run.state.kept
        if kept is None and (not run.state.ran or run.state.paused):
            return  # refused before it started, or paused for a decision: untouched
        if kept is None:
            if version != ABSENT:
                await self.store.delete(KIND, key)
            reset = "the run was stopped by a limit; the session starts empty next time"
            run.report = run.report.model_copy(update={"reset": reset})
            return
        size = len(kept)
        run.report = run.report.model_copy(update={"size_bytes": size})
        if size > self.settings.max_bytes:
            raise SessionLimitError(
                name,
                "max_bytes",
                self.settings.max_bytes,
                size,
                "not saved: the session keeps its state from before this run; keep less in it",
            )
        meta.runs += 1
        meta.token = run.state.token
        # The run started from these imports and left them as its code does (session_imports):
        # one it no longer has was bound to something else.
        imports = list(dict.fromkeys(run.state.imports))
        meta.imports = imports[-_MAX_IMPORTS:]
        ttl = self.settings.idle_ttl or None
        new = version == ABSENT
        if new:  # counted again: other new sessions of its owner may have been written while this one ran
            await self._check_room(owner, name, replacing=False, kept=True)
        written = await self.store.put(KIND, key, _encode(meta, kept), ttl=ttl, expect=version)
        if new:
            await self._keep_within_room(owner, name, key, written)

    async def _keep_within_room(self, owner: str, name: str, key: str, version: int) -> None:
        """Take back a new session just written if its owner now holds more than ``max_sessions``.

        Sessions written at once (by runs on this server or on others sharing the store) each found
        room before writing; each counts again after, and one that sees its owner past the quota takes
        itself back: all of them may, none leaves the owner past it.
        """
        limit = self.settings.max_sessions
        if not limit:
            return
        have = await self.store.list(KIND, prefix=f"{owner}/", limit=limit + 1)
        if len(have) > limit:
            await self.store.delete(KIND, key, expect=version)
            raise SessionLimitError(name, "max_sessions", limit, len(have), _NOT_KEPT)

    async def _check_room(self, owner: str, name: str, *, replacing: bool, kept: bool = False) -> None:
        """Refuse a new session of ``owner`` that would pass ``max_sessions`` (``kept``: when its state is written)."""
        limit = self.settings.max_sessions
        if not limit or replacing:
            return
        have = await self.store.list(KIND, prefix=f"{owner}/", limit=limit + 1)
        if len(have) >= limit:
            raise SessionLimitError(
                name,
                "max_sessions",
                limit,
                len(have) + 1,
                _NOT_KEPT if kept else "reset a session you no longer need (reset_session)",
            )

    @asynccontextmanager
    async def _local_lock(self, key: str) -> AsyncGenerator[None]:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        if lock.locked():  # another run of the session holds it: wait for it, at most queue_timeout
            with anyio.move_on_after(self.settings.queue_timeout) as scope:
                await lock.acquire()
            if scope.cancelled_caught:
                raise EngineBusyError(
                    "sessions", f"another run of this session did not finish within {self.settings.queue_timeout:g} s"
                )
        else:  # free: taken at once, with no timer and no turn of the event loop
            lock.acquire_nowait()
        try:
            yield
        finally:
            lock.release()

    async def _acquire(self, key: str, name: str, hold: float) -> tuple[Record | None, Release]:
        """Take the store's lock on the session (it excludes runs on other servers), then read it.

        A holder that dies releases it (file lock), or it expires with the run's time limit plus
        a margin (Redis).
        """
        ttl = min(hold, 86_400.0) + 30.0
        deadline = anyio.current_time() + self.settings.queue_timeout
        lock = f"session/{key}"
        stale = self._unreleased.pop(lock, None)
        if stale is not None:
            await self._release_quietly(stale, lock)  # ours, left when the store was away
        while (release := await self.store.try_lock(lock, ttl=ttl)) is None:
            if anyio.current_time() >= deadline:
                raise EngineBusyError(
                    "sessions",
                    f"session {name!r} is in use by another run (on this or another server) "
                    f"that did not finish within {self.settings.queue_timeout:g} s",
                )
            await anyio.sleep(0.05)
        try:
            return await self.store.get(KIND, key), release
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._release_quietly(release, lock)
            raise

    async def list(self, caller: str | None) -> list[SessionEntry]:
        """The caller's sessions, by name (times in Unix seconds)."""
        owner = owner_of(caller)
        out: list[SessionEntry] = []
        for info in await self.store.list(KIND, prefix=f"{owner}/", limit=10_000):
            rec = await self.store.get(KIND, info.key)
            decoded = _decode(rec.value) if rec is not None else None
            out.append(
                SessionEntry(
                    name=info.key.split("/", 1)[1],
                    created=round(decoded[0].created if decoded is not None else info.created, 3),
                    last_used=round(info.updated, 3),
                    size_bytes=info.size,
                    runs=decoded[0].runs if decoded is not None else 0,
                    expires=round(info.expires, 3) if info.expires is not None else None,
                )
            )
        return out

    async def reset(self, caller: str | None, name: str) -> bool:
        """Forget a session's state; ``False`` when there was none.

        Taken as a run takes the session (its locks, here and in the store): a run of it in
        progress ends first, and the reset empties the session it left, instead of the run's
        write failing (``busy``) on the version the reset removed.

        Raises:
            EngineBusyError: If a run holds the session past ``queue_timeout``.
        """
        self.check_name(name)
        key = f"{owner_of(caller)}/{name}"
        async with self._local_lock(key):
            _, release = await self._acquire(key, name, 0.0)
            try:
                return await self.store.delete(KIND, key)
            finally:
                with anyio.CancelScope(shield=True):
                    await self._release_quietly(release, f"session/{key}")
