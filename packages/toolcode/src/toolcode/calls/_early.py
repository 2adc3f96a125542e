"""Calls started before the code reaches them: reads whose tool and arguments are known early.

Before a run, :func:`~toolcode.calls._foresee.foresee` reads what the snippet will call. The
:class:`Prefetch` layer, the last before the tool runs, starts at once every such call of a tool the
policy classes ``read`` and allows without a question (not quarantined, not a saved snippet, not
switched off by ``policy.speculate``), bounded in number (:data:`EARLY_CALLS`, apart from
``max_tool_calls``) and in concurrency (the run's places, :class:`~toolcode.calls._at_once.Places`,
shared with the calls the code makes). A loop's calls start as soon as the call whose result it walks
returns.

Every call the snippet makes still passes the gate, the budget and the record above; here, a call with
the same tool id and the same arguments as a held one gets its result (or its error, raised there).
A call of anything but a read first throws away every held call (what they read may change), and no
call starts early while it runs. A held call the snippet never reaches is discarded when the run
ends: the trace lists it (``early="discarded"``) and the audit log records it.

A held call may wait for a place while an earlier one changes its tool's definition (a rug pull). It
carries the verdict it was started under, and the last layer makes it only while that verdict stands
(:meth:`~toolcode.calls._policy.Checkpoint.as_judged`); if it does not, it is not made early: the run
makes it when the code reaches it, through the gate, which judges it again. Once the code waits for it,
it carries the verdict the gate gave the code's own call, and runs on that call's place; if that
verdict no longer stands when it is made, the call fails (``not_allowed``) and nothing is called.
"""

from __future__ import annotations

import fnmatch
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, cast

import anyio
import anyio.abc

from toolcode._audit import AuditTrail
from toolcode._limits import CallBudget
from toolcode._module_views import ToolModules
from toolcode._modules import keyword_signature
from toolcode._trace import Trace
from toolcode.calls._at_once import Places
from toolcode.calls._foresee import EarlyCall, Foresight, Key, foresee, key_of
from toolcode.calls._layer import Call, Layer
from toolcode.calls._policy import SNIPPETS_NAMESPACE, Checkpoint, NotAsJudged
from toolcode.exceptions import StateUnavailableError, ToolError
from toolindex import ToolIndexError
from toolrun import RunResult

__all__ = ["EARLY_CALLS", "Early", "Prefetch", "early_calls", "kind_of"]

EARLY_CALLS: Final = 64
"""Calls one run may start early (never more than its ``max_tool_calls``)."""


@dataclass(frozen=True, slots=True)
class Early:
    """What a run's early calls start from: what the snippet will call, and the run's task group for them."""

    seen: Foresight
    tasks: anyio.abc.TaskGroup
    """Cancelled when the run ends: what is still held then is discarded."""


def kind_of(checkpoint: Checkpoint, tool_id: str) -> tuple[bool, bool]:
    """``(a read, may start early)``: what the policy says of a tool id as written, with no side effect.

    A read is a tool of tier ``read``; it may start early when the policy also allows it without a
    question, it is not quarantined, and ``policy.speculate`` does not switch it off. A saved snippet
    runs code of its own: neither. An unknown tool: neither.
    """
    policy, view = checkpoint.policy, checkpoint.view
    try:
        tool = view.get(tool_id)
    except (ToolIndexError, ToolError):
        return False, False
    if tool.namespace == SNIPPETS_NAMESPACE:
        return False, False
    verdict = policy.verdict(tool, view)
    if verdict.tier != "read" or verdict.decision != "allow":
        return verdict.tier == "read", False
    if policy.quarantined is not None and policy.quarantined(tool):
        return True, False
    switched = (on for glob, on in policy.settings.speculate.items() if fnmatch.fnmatchcase(tool.id, glob))
    return True, next(switched, True)


def early_calls(code: str, checkpoint: Checkpoint, modules: ToolModules, given: Any) -> Foresight | None:
    """What a run of ``code`` may start early (``None``: nothing); see :func:`~toolcode.calls._foresee.foresee`."""
    return foresee(code, modules.seen_by(checkpoint.view), given, lambda tool_id: kind_of(checkpoint, tool_id)[1])


class _Held:
    """One call started early, until the snippet takes it or it is discarded."""

    __slots__ = ("call", "done", "ended", "error", "key", "queued", "result", "scope", "started", "taken")

    def __init__(self, call: Call, key: Key) -> None:
        self.call = call
        """Carries the verdict it was started under (the code's own call's, once taken)."""
        self.key = key
        self.done = anyio.Event()
        self.taken = anyio.Event()
        self.scope = anyio.CancelScope()
        self.queued = anyio.CancelScope()
        """Around its wait for a place: cancelled when the code takes it (it runs on that call's place)."""
        self.result: RunResult | None = None
        self.error: ToolError | None = None
        self.started: float | None = None
        self.ended: float | None = None


class Prefetch(Layer):
    """Starts a run's known reads early and hands each to the call that makes it (see the module docstring)."""

    __slots__ = (
        "_audit",
        "_checkpoint",
        "_held",
        "_kinds",
        "_left",
        "_loops",
        "_places",
        "_probe",
        "_tasks",
        "_trace",
        "_version",
        "_writing",
    )

    def __init__(
        self,
        inner: Layer,
        early: Early,
        places: Places,
        checkpoint: Checkpoint,
        trace: Trace,
        audit: AuditTrail,
        budget: CallBudget | None,
        probe: Callable[[], Awaitable[None]] | None,
    ) -> None:
        super().__init__(inner)
        self._probe = probe
        self._checkpoint = checkpoint
        self._trace = trace
        self._audit = audit
        self._tasks = early.tasks
        self._places = places
        self._left = EARLY_CALLS if budget is None else min(EARLY_CALLS, budget.max_tool_calls - budget.calls)
        self._held: dict[Key, deque[_Held]] = {}
        self._kinds: dict[str, tuple[bool, bool]] = {}
        self._version: object = None
        self._writing = 0
        seen = early.seen
        # Past the first call that may change something, a read would only be thrown away.
        cutoff = min((at for at, tool_id in seen.sites if tool_id is None or not self._kind(tool_id)[0]), default=None)
        self._loops: dict[Key, list[Callable[[Any], list[EarlyCall]]]] = {}
        for loop in seen.loops:
            key = self._key(loop.source)
            if key is not None and (cutoff is None or loop.at < cutoff):
                self._loops.setdefault(key, []).append(loop.calls)
        for c in seen.calls:
            if cutoff is None or c.at < cutoff:
                self._start(c)

    def _kind(self, tool_id: str) -> tuple[bool, bool]:
        """``(a read, may start early)`` for a tool id as written (judged again when the catalog changes)."""
        version = getattr(self._checkpoint.view.index, "version", None)
        if version != self._version:
            self._kinds.clear()
            self._version = version
        hit = self._kinds.get(tool_id)
        if hit is None:
            hit = self._kinds[tool_id] = kind_of(self._checkpoint, tool_id)
        return hit

    def _key(self, c: EarlyCall) -> Key | None:
        args = self._wire(c)
        return key_of(c.tool_id, args) if args is not None else None

    def _wire(self, c: EarlyCall) -> dict[str, Any] | None:
        """The call's arguments as the run passes them on: a module function's keywords by their wire names."""
        if not c.keywords:
            return c.args
        try:
            tool = self._checkpoint.view.get(c.tool_id)
        except (ToolIndexError, ToolError):
            return None
        names = keyword_signature(tool)
        if names is None:
            return c.args
        try:  # ``from_`` → ``from``, as the run renames them
            return names.wire_args(c.args)
        except ValueError:
            return None

    def _start(self, c: EarlyCall) -> None:
        if self._left <= 0 or self._writing or not self._kind(c.tool_id)[1]:
            return
        args = self._wire(c)
        key = key_of(c.tool_id, args) if args is not None else None
        if args is None or key is None:
            return
        checkpoint = self._checkpoint
        try:
            verdict = checkpoint.policy.verdict(checkpoint.view.get(c.tool_id), checkpoint.view)
        except (ToolIndexError, ToolError):
            return
        self._left -= 1
        held = _Held(Call(c.tool_id, args, judged=checkpoint.judged(verdict)), key)
        self._held.setdefault(key, deque()).append(held)
        self._tasks.start_soon(self._make, held)

    async def _make(self, held: _Held) -> None:
        with held.scope:
            try:
                placed = await self._place(held)
                try:
                    if self._probe is not None and not await self._audited(held):
                        return
                    held.started = time.perf_counter()
                    try:
                        held.result = await self.inner.call(held.call)
                    except NotAsJudged as e:
                        if not held.taken.is_set():  # changed since it was started: the code's own call makes it
                            held.started = None
                            self._forget(held)
                            return
                        held.error = e
                    except ToolError as e:
                        held.error = e
                    held.ended = time.perf_counter()
                    held.done.set()
                finally:
                    if placed:
                        self._places.leave()
                await held.taken.wait()
            finally:
                if not held.taken.is_set() and held.started is not None:
                    self._discarded(held)

    async def _place(self, held: _Held) -> bool:
        """Waits for one of the run's places (``False``: taken meanwhile, it runs on its taker's place).

        The code's call that takes a held one holds a place and waits for it: the held call then needs
        none of its own (and waiting for one could wait forever, every place held by such a call).
        """
        places = self._places
        if held.taken.is_set():
            return False
        if places.take():
            return True
        with held.queued:
            await places.wait()
            return True
        return False

    async def _audited(self, held: _Held) -> bool:
        """With ``policy.audit.required``: whether the audit log answers.

        If it does not, the call is not made early: the snippet makes it itself, through the guard that
        refuses it (unless it already waits for it: its own call passed that guard).
        """
        assert self._probe is not None
        try:
            await self._probe()
        except StateUnavailableError:
            if held.taken.is_set():
                return True
            self._forget(held)
            return False
        return True

    def _forget(self, held: _Held) -> None:
        """A held call that will not be made early: the code's own call makes it."""
        queue = self._held.get(held.key)
        if queue is not None and held in queue:
            queue.remove(held)
            if not queue:
                del self._held[held.key]

    def _discarded(self, held: _Held) -> None:
        call, result, error = held.call, held.result, held.error
        assert held.started is not None
        ended = held.ended if held.ended is not None else time.perf_counter()
        kind = result.backend.kind if result is not None else error.backend_kind if error is not None else None
        self._trace.discarded(call.tool_id, call.args, held.started, ended, kind)
        code = None if result is not None else error.code.value if error is not None else "cancelled"
        self._audit.call(
            call.tool_id,
            call.args,
            ok=result is not None,
            code=code,
            duration_ms=(ended - held.started) * 1000,
            result=None,
            early="discarded",
        )

    def _drop(self) -> None:
        """Throw away every held call (a call that may change what they read is about to be made)."""
        held, self._held = self._held, {}
        for queue in held.values():
            for h in queue:
                h.scope.cancel()

    async def call(self, call: Call) -> RunResult:
        if not self._held and not self._loops:  # nothing held, nothing left to start
            return await self.inner.call(call)
        read, _ = self._kind(call.tool_id)
        if not read:
            self._writing += 1
            self._drop()
            try:
                return await self.inner.call(call)
            finally:
                self._writing -= 1
        key = key_of(call.tool_id, call.args)
        queue = self._held.get(key) if key is not None else None
        if queue:
            held = queue.popleft()
            if not queue:
                del self._held[cast(Key, key)]
            if held.started is None:  # not made yet: made as the gate judged this call, on its place
                held.call.judged = call.judged
            held.taken.set()
            held.queued.cancel()
            call.early = True
            await held.done.wait()
            if held.error is not None:
                raise held.error
            assert held.result is not None
            result = held.result
        else:
            result = await self.inner.call(call)
        loops = self._loops.pop(key, None) if key is not None and self._loops else None
        if loops and not self._writing:
            for calls in loops:
                for c in calls(result.value):
                    self._start(c)
        return result
