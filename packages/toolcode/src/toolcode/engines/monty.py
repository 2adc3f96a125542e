"""``MontyEngine``: snippets run in pydantic-monty's sandboxed interpreter, in a pool of worker processes."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import pydantic_monty as pm
import structlog

from toolcode._types import EngineInfo, ExecuteParams, ExecuteResult, Tools
from toolcode.exceptions import CodeExecutionError, EngineError, LimitExceededError, ToolCodeError, ToolError

__all__ = ["MontyEngine"]

_log = structlog.get_logger("toolcode.engines.monty")

# Defined inside the sandbox before each snippet: no host round trip for println, and a
# ToolError name to catch (host exception classes cannot cross; a ToolError arrives as RuntimeError).
_PRELUDE = """\
ToolError = RuntimeError
def println(*args):
    print(*args)
"""
_FETCH_OUT = """\
try:
    __toolcode_out = (True, __out)
except NameError:
    __toolcode_out = (False, None)
__toolcode_out
"""
_SLEEPS = frozenset({"time.sleep", "system.sleep"})
_ASYNC_SLEEPS = frozenset({"asyncio.sleep", "system.async_sleep"})
_ASYNC_NAMES = ("run_tool", "run_chain", "describe_tool", "search_tools")
_MEMORY_RE = re.compile(r"memory limit exceeded: (\d+) bytes > (\d+) bytes")
_SYNC_NAMES = (
    "search_tools",
    "list_namespaces",
    "describe_tool",
    "list_tool_examples",
    "run_tool",
    "run_tools",
    "run_chain",
)

Handler = Callable[..., Awaitable[Any]]


class MontyEngine:
    """The default engine: a real sandbox (pydantic-monty) with host-enforced limits.

    Each run checks one worker out of a shared pool (created on first use), feeds it the
    snippet, and answers every tool call from the host. The sandbox has no file system,
    network, environment or host objects; memory, recursion depth and CPU time are limited
    inside the worker, and a worker that overruns (a huge integer computation cannot be
    interrupted from inside) is killed by the pool. A session that timed out or ran out of
    memory is discarded, never reused.

    Snippet API: the tool functions are plain synchronous calls (``run_tool(...)`` returns
    the result). For fan-out, use ``run_tools([...])``, or the awaitable variants
    ``run_tool_async`` / ``run_chain_async`` / ``describe_tool_async`` with
    ``await asyncio.gather(...)``; either way the calls overlap on the host.

    Limits: Monty has no class inheritance and no ``yield``; sleeps are capped at the run's
    timeout. Requires the asyncio event loop (pydantic-monty's async pool is asyncio-based).

    Args:
        min_processes: Workers kept warm.
        max_processes: Cap on concurrent workers (default: CPU count); more runs wait.
        max_memory: Heap limit per run, in bytes.
        max_recursion_depth: Call-stack depth limit.
        kill_grace: Seconds the pool waits past the time limit before killing a worker.
    """

    def __init__(
        self,
        *,
        min_processes: int = 1,
        max_processes: int | None = None,
        max_memory: int = 256 * 1024 * 1024,
        max_recursion_depth: int = 200,
        kill_grace: float = 0.5,
    ) -> None:
        self._min = min_processes
        self._max = max_processes
        self._max_memory = max_memory
        self._max_depth = max_recursion_depth
        self._grace = kill_grace
        self._pool: pm.AsyncMonty | None = None
        self._pool_token: object = None
        self._lock = anyio.Lock()
        self._info = EngineInfo(
            name="monty",
            sandboxed=True,
            limits={"max_memory": max_memory, "max_recursion_depth": max_recursion_depth},
        )

    @property
    def info(self) -> EngineInfo:
        """Name (``monty``), sandboxed, and the memory and recursion limits."""
        return self._info

    async def _get_pool(self) -> pm.AsyncMonty:
        token = anyio.lowlevel.current_token()
        pool = self._pool
        if pool is not None and self._pool_token == token:
            return pool
        async with self._lock:
            if self._pool is not None and self._pool_token != token:
                # The pool's I/O is bound to the loop it was started on; a new loop needs a new pool.
                old, self._pool = self._pool, None
                try:
                    await old.__aexit__(None, None, None)
                except Exception as e:  # the old loop is gone; nothing more can be done for it
                    _log.debug("closing a pool from another event loop failed", error=repr(e))
            if self._pool is None:
                pool = pm.AsyncMonty(
                    min_processes=self._min,
                    max_processes=self._max,
                    feed_duration_limit_grace=self._grace,
                    turn_duration_limit_grace=self._grace,
                )
                try:
                    await pool.__aenter__()
                except Exception as e:  # the worker binary is missing or cannot start
                    raise EngineError("monty", f"cannot start the worker pool: {type(e).__name__}: {e}") from e
                self._pool, self._pool_token = pool, token
            assert self._pool is not None
            return self._pool

    async def execute(self, params: ExecuteParams, tools: Tools) -> ExecuteResult:
        """Run the snippet in a sandbox worker.

        Raises:
            CodeExecutionError: A syntax error or an uncaught exception in the snippet.
            LimitExceededError: The time, memory or recursion limit stopped it.
            EngineError: The worker crashed or the pool cannot start.
        """
        timeout = float(params.timeout) if params.timeout is not None else 30.0
        pool = await self._get_pool()
        limits: pm.ResourceLimits = {
            "max_feed_duration_secs": timeout,
            "max_memory": self._max_memory,
            "max_recursion_depth": self._max_depth,
            "max_suspensions": 1_000_000,
            "max_total_sleep_secs": timeout,
        }
        drive = _Drive(tools, timeout)

        def on_print(stream: str, text: str) -> None:
            tools.write("stderr" if stream == "stderr" else "stdout", text)

        try:
            async with pool.checkout(
                script_name="snippet.py",
                limits=limits,
                os_policy={"sleep": "system", "sleep_system_max": timeout},
            ) as session:
                await session.feed_run(_PRELUDE)
                snap = await session.feed_start(params.code, inputs={"input": params.input}, print_callback=on_print)
                value = await drive.run(snap)
                if "__out" in params.code:
                    has_out, out = await session.feed_run(_FETCH_OUT)
                    if has_out:
                        value = out
        except pm.MontySyntaxError as e:
            raise _code_error(e, "SyntaxError", drive.raised) from None
        except pm.MontyRuntimeError as e:
            raise self._map_runtime(e, timeout, drive.raised) from None
        except pm.MontyCrashedError as e:
            if e.timed_out:
                raise LimitExceededError("timeout", timeout, None, "the sandbox worker was killed") from None
            raise EngineError("monty", f"the sandbox worker died: {e}") from None
        except pm.MontyError as e:
            raise EngineError("monty", f"{type(e).__name__}: {e}") from None
        return ExecuteResult(value=value)

    def _map_runtime(self, e: pm.MontyRuntimeError, timeout: float, raised: dict[str, ToolError]) -> ToolCodeError:
        inner = e.exception()
        msg = str(inner)
        if isinstance(inner, TimeoutError) and "time limit exceeded" in msg:
            return LimitExceededError("timeout", timeout, None, msg)
        if isinstance(inner, MemoryError):
            m = _MEMORY_RE.search(msg)
            if m:
                return LimitExceededError("max_memory", self._max_memory, int(m.group(1)))
        if isinstance(inner, RecursionError):
            return LimitExceededError("max_recursion_depth", self._max_depth, None, msg)
        return _code_error(e, type(inner).__name__, raised)

    async def aclose(self) -> None:
        """Shut the worker pool down; idempotent (a later run starts a new pool)."""
        async with self._lock:
            pool, self._pool = self._pool, None
            if pool is not None:
                await pool.__aexit__(None, None, None)


class _Drive:
    """Answers a feed's suspensions until it completes.

    Synchronous-looking API calls (``run_tool``) are awaited in place and the sandbox resumed
    with the result. Awaitable ones (``run_tool_async``) and ``asyncio.sleep`` are answered
    with a future: the call runs as a task of this drive, and each future snapshot is resumed
    with whatever has finished, so gathered calls overlap.
    """

    def __init__(self, tools: Tools, timeout: float) -> None:
        self._timeout = timeout
        self._sync: dict[str, Handler] = {name: getattr(tools, name) for name in _SYNC_NAMES}
        self._async: dict[str, Handler] = {f"{name}_async": getattr(tools, name) for name in _ASYNC_NAMES}
        self.raised: dict[str, ToolError] = {}
        self._done: dict[int, pm.ExternalSettledResult] = {}
        self._sleeps: dict[int, float] = {}
        self._mine: set[int] = set()
        """Ids of the futures this drive answers (tool calls in flight, sleeps)."""
        self._changed = anyio.Event()

    def _failure(self, e: Exception) -> pm.ExternalException:
        if isinstance(e, ToolError):
            self.raised[str(e)] = e
        return {"exception": e}

    async def _call(self, call_id: int, handler: Handler, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            self._done[call_id] = {"return_value": await handler(*args, **kwargs)}
        except (ToolCodeError, TypeError, ValueError) as e:
            self._done[call_id] = self._failure(e)
        finally:
            self._changed.set()

    async def run(self, snap: pm.AsyncSnapshot) -> Any:
        # Fast path for plain calls (the common case: ``run_tool(...)`` in a loop): answered in
        # place, with no task group and no extra frame per call. The first suspension that is not
        # such a call moves the drive to the general loop below.
        sync = self._sync
        complete, function = pm.MontyComplete, pm.AsyncFunctionSnapshot
        while True:
            if type(snap) is complete:
                return snap.output
            if type(snap) is not function or snap.is_os_function:
                break
            handler = sync.get(snap.function_name)
            if handler is None:
                break
            try:
                value = await handler(*snap.args, **snap.kwargs)
            except (ToolCodeError, TypeError, ValueError) as e:
                snap = await snap.resume(self._failure(e))
            else:
                snap = await snap.resume({"return_value": value})
        return await self._run_general(snap)

    async def _run_general(self, snap: pm.AsyncSnapshot) -> Any:
        failure: pm.MontyError | None = None
        async with anyio.create_task_group() as tg:
            try:
                while not isinstance(snap, pm.MontyComplete):
                    if isinstance(snap, pm.AsyncFunctionSnapshot):
                        snap = await self._function(snap, tg)
                    elif isinstance(snap, pm.AsyncFutureSnapshot):
                        snap = await self._future(snap)
                    else:
                        snap = await snap.resume_auto()
            except pm.MontyError as e:
                # Raised after the group has closed, so it is not wrapped in an ExceptionGroup.
                failure = e
            # A call the snippet started but never awaited has nobody left to read its result.
            tg.cancel_scope.cancel()
        if failure is not None:
            raise failure
        assert isinstance(snap, pm.MontyComplete)
        return snap.output

    async def _function(self, snap: pm.AsyncFunctionSnapshot, tg: anyio.abc.TaskGroup) -> pm.AsyncSnapshot:
        name = snap.function_name
        if not snap.is_os_function:
            handler = self._sync.get(name)
            if handler is not None:
                try:
                    value = await handler(*snap.args, **snap.kwargs)
                except (ToolCodeError, TypeError, ValueError) as e:
                    return await snap.resume(self._failure(e))
                return await snap.resume({"return_value": value})
            handler = self._async.get(name)
            if handler is not None:
                self._mine.add(snap.call_id)
                tg.start_soon(self._call, snap.call_id, handler, snap.args, snap.kwargs)
                return await snap.resume({"future": ...})
            return await snap.resume_auto()
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

    async def _future(self, snap: pm.AsyncFutureSnapshot) -> pm.AsyncSnapshot:
        ids = snap.pending_call_ids
        if not self._mine.issuperset(ids):
            return await snap.resume_auto()  # futures Monty itself owns
        while True:
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
                await self._changed.wait()
            self._changed = anyio.Event()


def _code_error(
    e: pm.MontySyntaxError | pm.MontyRuntimeError, exc_type: str, raised: dict[str, ToolError]
) -> CodeExecutionError:
    frames = e.traceback()
    frame = frames[-1] if frames else None
    message = str(e.exception()) if exc_type != "SyntaxError" else str(e)
    tool_id = None
    tool_err = raised.get(message)
    if tool_err is not None:
        exc_type, tool_id = "ToolError", tool_err.tool_id
    return CodeExecutionError(
        exc_type,
        message,
        line=frame.line if frame else None,
        column=frame.column if frame else None,
        tool_id=tool_id,
        traceback=e.display("traceback"),
    )
