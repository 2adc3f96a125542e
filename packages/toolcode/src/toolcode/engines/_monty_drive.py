"""The drive: answers a Monty run's suspensions from the host until the run completes or pauses.

Synchronous-looking calls (``run_tool``) are awaited in place and the sandbox resumed with the
result. Awaitable ones (``run_tool_async``) and ``asyncio.sleep`` are answered with a future: the
call runs as a task of the drive, and each future snapshot is resumed with whatever has finished,
so gathered calls overlap. A call that needs a decision stops the drive (:class:`Paused`) with
what it needs to go on from the restored snapshot.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any

import anyio
import anyio.abc
import pydantic_monty as pm

from toolcode._globals import async_names, call_names
from toolcode._modules import PACKAGE, ModuleFunction
from toolcode._types import CallPaused, Tools
from toolcode.engines._leaving import Outgrown, check_depth
from toolcode.exceptions import ErrorCode, ToolCodeError, ToolError

__all__ = ["Drive", "ModuleMap", "Paused"]

Handler = Callable[..., Awaitable[Any]]
ModuleMap = Mapping[str, Mapping[str, ModuleFunction]]
Suspended = pm.AsyncFunctionSnapshot | pm.AsyncFutureSnapshot
_Call = tuple[int, str, tuple[Any, ...], dict[str, Any]]
"""An awaitable call to start: its future's id, the function's name, the arguments."""

_SYNC_NAMES = frozenset(call_names())
_ASYNC_NAMES = async_names()
_SLEEPS = frozenset({"time.sleep", "system.sleep"})
_ASYNC_SLEEPS = frozenset({"asyncio.sleep", "system.async_sleep"})
_MODULE_PREFIX = PACKAGE + "."


def _named(name: str) -> Callable[..., Any]:
    """A host function the sandbox knows as ``name``: its calls come back to the drive by that name."""

    def answered_by_the_drive(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{name} is answered by the drive, never called in the host")  # pragma: no cover

    answered_by_the_drive.__name__ = answered_by_the_drive.__qualname__ = name
    return answered_by_the_drive


_AS_VALUES: dict[str, Callable[..., Any]] = {name: _named(name) for name in (*_SYNC_NAMES, *_ASYNC_NAMES)}
"""The globals a snippet may read as values (``f = run_tool``), each as the host function it names."""


class Paused(Exception):
    """The drive stopped at a call that needs a decision."""

    def __init__(self, snap: Suspended, drive: dict[str, Any], pending: list[Any]) -> None:
        super().__init__("paused")
        self.snap = snap
        self.drive = drive
        """What :meth:`Drive.run` needs to go on: the settled calls, the sleeps, the calls to make again."""
        self.pending = pending

    def line(self, code: str) -> int | None:
        """The snippet's line it stopped at."""
        start = self.snap.position.start
        return code.count("\n", 0, start) + 1 if 0 <= start <= len(code) else None


class Drive:
    """Answers one feed's suspensions (see the module docstring).

    Args:
        tools: What the snippet's globals and ``tools`` modules call.
        timeout: The run's timeout (a sleep is capped at it).
        depth: The sandbox's recursion limit (deeper arguments were cut on their way out).
        modules: The ``tools`` modules the sandbox may import (``None``: none).
    """

    def __init__(self, tools: Tools, timeout: float, depth: int, modules: ModuleMap | None) -> None:
        self._tools = tools
        self._timeout = timeout
        self._depth = depth
        self._modules = modules
        # Handlers are bound as the snippet first calls them: most runs call one or two of them.
        self._sync: dict[str, Handler] = {}
        self._async: dict[str, Handler] = {}
        self.raised: dict[str, ToolError] = {}
        """The tool errors sent into the sandbox, by message: one the snippet does not catch is reported as such."""
        self._done: dict[int, pm.ExternalSettledResult] = {}
        self._sleeps: dict[int, float] = {}
        self._mine: set[int] = set()
        """Ids of the futures this drive answers (tool calls in flight, sleeps)."""
        self._changed: anyio.Event | None = None
        """Set as an awaitable call ends (made when something first waits for one)."""
        self._inflight = 0
        self._stack: AsyncExitStack
        self._tasks: anyio.abc.TaskGroup | None = None
        self._waiting: dict[int, tuple[str, tuple[Any, ...], dict[str, Any], list[Any]]] = {}
        """Awaitable calls that stopped for a decision: name, arguments, what they wait for."""

    async def run(self, snap: pm.AsyncSnapshot, paused: Mapping[str, Any] | None = None) -> Any:
        """Drive a fed snippet to its end, or a restored one on from its :attr:`Paused.drive`; the snippet's value.

        The call a restored snapshot stopped at is made again (now decided).
        """
        if paused is None and type(snap) is pm.MontyComplete:
            return snap.output  # a snippet that made no call: nothing to drive
        failure: pm.MontyError | Paused | None = None
        value: Any = None
        async with AsyncExitStack() as self._stack:
            try:
                for call in self._restore(paused) if paused else ():
                    await self._start(call)
                value = await self._loop(snap)
            except (pm.MontyError, Paused) as e:
                # Raised after the task group has closed, so it is not wrapped in an ExceptionGroup.
                failure = e
            if self._tasks is not None:
                # A call the snippet started but never awaited has nobody left to read its result.
                self._tasks.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return value

    async def _loop(self, snap: pm.AsyncSnapshot) -> Any:
        sync, bind = self._sync, self._sync_handler
        complete, function = pm.MontyComplete, pm.AsyncFunctionSnapshot
        while True:
            if type(snap) is complete:
                return snap.output
            # Plain calls (the common case: ``run_tool(...)`` in a loop) are answered in place, with
            # no extra frame per call; everything else is a step.
            if (
                type(snap) is not function
                or snap.is_os_function
                or ((handler := sync.get(snap.function_name)) is None and (handler := bind(snap.function_name)) is None)
            ):
                snap = await self._step(snap)
                continue
            try:
                if snap.args or snap.kwargs:
                    try:
                        check_depth(snap.function_name, snap.args, snap.kwargs, self._depth, in_place=True)
                    except Outgrown:
                        await self._check_depth_apart(snap.function_name, snap.args, snap.kwargs)
                value = await handler(*snap.args, **snap.kwargs)
            except (ToolCodeError, TypeError, ValueError) as e:
                snap = await snap.resume(self._failure(e))
            except CallPaused as e:
                raise await self._pause(snap, e.pending) from None
            else:
                snap = await snap.resume({"return_value": value})

    async def _step(self, snap: pm.AsyncSnapshot) -> pm.AsyncSnapshot:
        """Answer a suspension that is not a plain call: an awaitable call, a future, a sleep, an import."""
        if isinstance(snap, pm.AsyncFutureSnapshot):
            return await self._future(snap)
        if isinstance(snap, pm.AsyncNameLookupSnapshot):
            # ``f = run_tool``: a global read as a value is the host function it names (the sandbox
            # calls it by that name, as if written out).
            host = _AS_VALUES.get(snap.variable_name) if snap.object_id is None else None
            return await (snap.resume_auto() if host is None else snap.resume(value=host))
        assert isinstance(snap, pm.AsyncFunctionSnapshot)  # the loop ends at completion
        name = snap.function_name
        if not snap.is_os_function:
            if self._async_handler(name) is None:
                if not self._route(name):
                    if name.startswith(_MODULE_PREFIX):
                        # A tools module the run may not use (a session imported it under other options).
                        err = ToolError("", f"{name} is not a tool of this run", "resolve", code=ErrorCode.UNKNOWN_TOOL)
                        return await snap.resume(self._failure(err))
                    return await snap.resume_auto()
                if name in self._sync:
                    return snap  # a module function, now routed: answered as a plain call
            await self._start((snap.call_id, name, snap.args, snap.kwargs))
            return await snap.resume({"future": ...})
        if name in _SLEEPS or name in _ASYNC_SLEEPS:
            # Sleeps are served by the host: cancellable, and bounded by the run's timeout.
            seconds = snap.args[0] if snap.args else 0
            if not isinstance(seconds, int | float) or seconds < 0:
                return await snap.resume({"exception": ValueError("sleep length must be a number >= 0")})
            seconds = min(float(seconds), self._timeout)
            if name in _ASYNC_SLEEPS:
                self._mine.add(snap.call_id)
                self._sleeps[snap.call_id] = anyio.current_time() + seconds
                return await snap.resume({"future": ...})
            await anyio.sleep(seconds)
            return await snap.resume({"return_value": None})
        return await snap.resume_auto()

    def _restore(self, state: Mapping[str, Any]) -> list[_Call]:
        """Take the drive's state back from a pause; the calls to make again."""
        now = anyio.current_time()
        self._done = {int(i): _decode_settled(r, self.raised) for i, r in state.get("done", {}).items()}
        self._sleeps = {int(i): now + float(t) for i, t in state.get("sleeps", {}).items()}
        self._mine = {int(i) for i in state.get("mine", [])}
        return [(int(i), str(n), tuple(a), dict(k)) for i, (n, a, k) in state.get("waiting", {}).items()]

    def _sync_handler(self, name: str) -> Handler | None:
        """The host method behind the plain call ``name`` (bound on first use), or ``None``."""
        handler = self._sync.get(name)
        if handler is None and name in _SYNC_NAMES:
            handler = self._sync[name] = getattr(self._tools, name)
        return handler

    def _async_handler(self, name: str) -> Handler | None:
        """The host method behind the awaitable call ``name`` (bound on first use), or ``None``."""
        handler = self._async.get(name)
        if handler is None and (method := _ASYNC_NAMES.get(name)) is not None:
            handler = self._async[name] = getattr(self._tools, method)
        return handler

    def _route(self, name: str) -> bool:
        """Route ``tools.<module>.<function>`` (added to the sync or async handlers); ``False``: not one."""
        if self._modules is None or not name.startswith(_MODULE_PREFIX):
            return False
        _, module, function = [*name.split(".", 2), "", ""][:3]
        fn = self._modules.get(module, {}).get(function)
        if fn is None:
            return False
        call_function = self._tools.call_function

        async def handler(*args: Any, **kwargs: Any) -> Any:
            return await call_function(module, function, args, kwargs)

        handler.__name__ = name
        (self._async if fn.awaitable else self._sync)[name] = handler
        return True

    async def _check_depth_apart(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """:func:`check_depth` of arguments too large to walk on the event loop, in a worker thread."""
        await anyio.to_thread.run_sync(check_depth, name, args, kwargs, self._depth)

    def _failure(self, e: Exception) -> pm.ExternalException:
        if isinstance(e, ToolError):
            self.raised[str(e)] = e
        return {"exception": e}

    async def _start(self, call: _Call) -> None:
        """Start an awaitable call as a task of the drive (the task group opens with the first)."""
        call_id, name = call[0], call[1]
        if self._async_handler(name) is None:
            self._route(name)
        handler = self._async.get(name)
        if handler is None:
            self._done[call_id] = {"exception": RuntimeError(f"{name}: cannot be resumed")}
            return
        if self._tasks is None:
            self._tasks = await self._stack.enter_async_context(anyio.create_task_group())
        self._mine.add(call_id)
        self._inflight += 1
        self._tasks.start_soon(self._call, call, handler)

    async def _call(self, call: _Call, handler: Handler) -> None:
        call_id, name, args, kwargs = call
        try:
            try:
                check_depth(name, args, kwargs, self._depth, in_place=True)
            except Outgrown:
                await self._check_depth_apart(name, args, kwargs)
            self._done[call_id] = {"return_value": await handler(*args, **kwargs)}
        except (ToolCodeError, TypeError, ValueError) as e:
            self._done[call_id] = self._failure(e)
        except CallPaused as e:
            self._waiting[call_id] = (name, args, kwargs, e.pending)
        finally:
            self._inflight -= 1
            if self._changed is not None:
                self._changed.set()

    async def _future(self, snap: pm.AsyncFutureSnapshot) -> pm.AsyncSnapshot:
        ids = snap.pending_call_ids
        if not self._mine.issuperset(ids):
            return await snap.resume_auto()  # futures Monty itself owns
        while True:
            if any(i in self._waiting for i in ids):
                raise await self._pause(snap, [])
            now = anyio.current_time()
            ready: dict[int, pm.ExternalSettledResult] = {}
            for i in ids:
                if i in self._done:
                    ready[i] = self._done.pop(i)
                elif self._sleeps.get(i, float("inf")) <= now:
                    del self._sleeps[i]
                    ready[i] = {"return_value": None}
            if ready:
                self._mine.difference_update(ready)
                return await snap.resume(ready)
            wake = min((self._sleeps[i] for i in ids if i in self._sleeps), default=float("inf"))
            with anyio.move_on_after(wake - now):
                await self._event().wait()
            self._changed = None

    def _event(self) -> anyio.Event:
        """The event the next awaitable call to end sets (checked for finished calls just before)."""
        if self._changed is None:
            self._changed = anyio.Event()
        return self._changed

    async def _pause(self, snap: Suspended, pending: list[Any]) -> Paused:
        """Stop here for a decision: let the calls in flight finish, then describe what is left."""
        while self._inflight:
            await self._event().wait()
            self._changed = None
        now = anyio.current_time()
        state = {
            "done": {str(i): _encode_settled(r) for i, r in self._done.items()},
            "sleeps": {str(i): max(0.0, t - now) for i, t in self._sleeps.items()},
            "mine": sorted(self._mine),
            "waiting": {str(i): [n, list(a), k] for i, (n, a, k, _p) in self._waiting.items()},
        }
        waiting = [p for (_n, _a, _k, ps) in self._waiting.values() for p in ps]
        return Paused(snap, state, [*pending, *waiting])


def _encode_settled(r: pm.ExternalSettledResult) -> dict[str, Any]:
    if "return_value" in r:
        return {"value": r["return_value"]}
    e = r.get("exception")
    if isinstance(e, ToolError):
        return {"tool_error": [e.tool_id, e.message, e.error_op, e.code.value]}
    name = type(e).__name__ if isinstance(e, TypeError | ValueError) else "RuntimeError"
    return {"error": [name, str(e)]}


def _decode_settled(d: Mapping[str, Any], raised: dict[str, ToolError]) -> pm.ExternalSettledResult:
    if "value" in d:
        return {"return_value": d["value"]}
    if "tool_error" in d:
        tool_id, message, op, code = d["tool_error"]
        err = ToolError(str(tool_id), str(message), str(op), code=ErrorCode(code))
        raised[str(err)] = err
        return {"exception": err}
    name, message = d.get("error", ["RuntimeError", "failed"])
    kind = {"TypeError": TypeError, "ValueError": ValueError}.get(str(name), RuntimeError)
    return {"exception": kind(str(message))}
