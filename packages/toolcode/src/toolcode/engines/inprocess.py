"""``UnsafeInProcessEngine``: runs snippets with the host's own CPython. Fast, and NOT a sandbox.

Use it only for code you would run yourself: a snippet can import ``os``, read files, open
sockets and reach every object in the process. What it does give you is the same snippet API,
result convention, limits (time, tool calls, chain steps, output) and trace as the sandbox,
at a fraction of the cost per tool call.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import ctypes
import functools
import sys
import threading
import traceback
from collections.abc import Callable, Coroutine
from types import CodeType
from typing import Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import structlog

from toolcode._types import EngineInfo, ExecuteParams, ExecuteResult, Tools
from toolcode.exceptions import CodeExecutionError, EngineError, LimitExceededError, ToolCodeError, ToolError

__all__ = ["UnsafeInProcessEngine"]

_log = structlog.get_logger("toolcode.engines.inprocess")

_FILENAME = "<snippet>"
_LAST = "__toolcode_last"
_CO_COROUTINE = 0x0080  # inspect.CO_COROUTINE: the module code awaits at top level
_NOT_SANDBOX = (
    "UnsafeInProcessEngine runs snippets in the host interpreter; it is not a sandbox, "
    "so escape probes and memory/bigint bombs do not apply"
)


class _Interrupted(BaseException):
    """Injected into a snippet's thread to stop it (a BaseException so ``except Exception`` cannot swallow it)."""


def _compile(code: str) -> CodeType:
    """Compile with top-level ``await`` allowed; a trailing expression is kept in ``__toolcode_last``."""
    tree = ast.parse(code, _FILENAME, "exec")
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        assign = ast.Assign(targets=[ast.Name(_LAST, ast.Store())], value=last.value)
        tree.body[-1] = ast.copy_location(assign, last)
        ast.fix_missing_locations(tree)
    return compile(tree, _FILENAME, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


class _Bridge:
    """Runs the host's async tool functions from the snippet's thread, on the host's event loop.

    On asyncio it schedules a task with ``call_soon_threadsafe`` and waits on a
    ``threading.Event``: about 4x cheaper per call than ``anyio.from_thread.run``, which is
    what the per-call budget of this engine is about. Other backends use ``anyio.from_thread``.
    """

    def __init__(self) -> None:
        self._token = anyio.lowlevel.current_token()
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.cancelled = False

    def call(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any, **kwargs: Any) -> Any:
        if self.cancelled:
            raise _Interrupted
        loop = self._loop
        if loop is None:
            return anyio.from_thread.run(functools.partial(fn, *args, **kwargs), token=self._token)
        done = threading.Event()
        box: list[asyncio.Task[Any]] = []

        def finished(task: asyncio.Task[Any]) -> None:
            self._tasks.discard(task)
            box.append(task)
            done.set()

        def start() -> None:
            if self.cancelled:
                done.set()
                return
            task = loop.create_task(fn(*args, **kwargs))
            self._tasks.add(task)
            task.add_done_callback(finished)

        loop.call_soon_threadsafe(start)
        done.wait()
        if not box or box[0].cancelled():
            raise _Interrupted
        return box[0].result()

    def submit(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any, **kwargs: Any) -> Any:
        """Start a call on the host loop and return an awaitable for the snippet's own loop."""
        if self._loop is None:
            raise EngineError("inprocess", "awaitable tool calls need the asyncio backend")
        fut = asyncio.run_coroutine_threadsafe(fn(*args, **kwargs), self._loop)
        return asyncio.wrap_future(fut)

    async def cancel(self) -> None:
        """Cancel the calls in flight and wait (briefly) for them to unwind, so their trace records are final."""
        self.cancelled = True
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        if tasks:
            with anyio.CancelScope(shield=True), anyio.move_on_after(1.0):
                await asyncio.wait(tasks)


def _interrupt(thread: threading.Thread) -> None:
    """Raise ``_Interrupted`` in ``thread`` at its next bytecode (a C call in progress finishes first)."""
    if thread.ident is None or not thread.is_alive():
        return
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(_Interrupted))


def _snippet_position(exc: BaseException) -> tuple[int | None, int | None]:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == _FILENAME]
    if not frames:
        return None, None
    f = frames[-1]
    colno: int | None = getattr(f, "colno", None)
    return f.lineno, (colno + 1 if colno is not None else None)


class UnsafeInProcessEngine:
    """Runs snippets in the host interpreter, in a thread of their own; NOT a sandbox.

    For trusted code only (your own scripts, tests, benchmarks): the snippet has the full
    power of the host process. Limits still hold: the executor's timeout stops a CPU-bound
    snippet by raising an exception in its thread (a single long C operation, such as
    ``10**10**8``, finishes first, while the executor has already returned), and tool-call,
    chain and output limits are enforced as for every engine.

    Snippet API: the tool functions are plain synchronous calls; for fan-out use
    ``run_tools([...])``, or ``await asyncio.gather(run_tool_async(...), ...)`` at top level
    (the snippet then runs on an event loop of its own, and the calls overlap on the host).
    """

    def __init__(self) -> None:
        self._info = EngineInfo(name="inprocess", sandboxed=False, unsupported={"escape": _NOT_SANDBOX})

    @property
    def info(self) -> EngineInfo:
        """Name (``inprocess``), not sandboxed, escape probes declared unsupported."""
        return self._info

    async def execute(self, params: ExecuteParams, tools: Tools) -> ExecuteResult:
        """Run the snippet in a new thread of this process.

        Raises:
            CodeExecutionError: A syntax error or an uncaught exception in the snippet.
            LimitExceededError: A tool-call limit the snippet did not catch.
        """
        try:
            code = _compile(params.code)
        except SyntaxError as e:
            raise CodeExecutionError(
                "SyntaxError", e.msg or "invalid syntax", line=e.lineno, column=e.offset, traceback=str(e)
            ) from None

        bridge = _Bridge()
        done = anyio.Event()
        outcome: dict[str, Any] = {}
        glb = self._globals(params, tools, bridge)
        loop = bridge._loop  # pyright: ignore[reportPrivateUsage]
        token = anyio.lowlevel.current_token()

        def signal_done() -> None:
            if loop is not None:
                loop.call_soon_threadsafe(done.set)
            else:
                anyio.from_thread.run_sync(done.set, token=token)

        def run() -> None:
            try:
                if code.co_flags & _CO_COROUTINE:
                    coro = cast("Coroutine[Any, Any, Any]", eval(code, glb))
                    asyncio.run(coro)
                else:
                    exec(code, glb)
                outcome["value"] = glb["__out"] if "__out" in glb else glb.get(_LAST)
            except BaseException as e:  # everything the snippet raises is reported, nothing escapes the thread
                outcome["error"] = e
            finally:
                try:
                    signal_done()
                except RuntimeError:  # the host loop is closed: nobody is waiting any more
                    pass

        thread = threading.Thread(target=run, name="toolcode-inprocess", daemon=True)
        thread.start()
        try:
            await done.wait()
        except BaseException:
            _interrupt(thread)
            await bridge.cancel()
            raise
        err = outcome.get("error")
        if err is None:
            return ExecuteResult(value=outcome.get("value"))
        raise self._map_error(err) from err

    @staticmethod
    def _map_error(err: BaseException) -> ToolCodeError:
        if isinstance(err, LimitExceededError):
            return err
        line, col = _snippet_position(err)
        tb = "".join(traceback.format_exception(err))
        if isinstance(err, ToolError):
            return CodeExecutionError("ToolError", str(err), line=line, column=col, tool_id=err.tool_id, traceback=tb)
        if isinstance(err, _Interrupted):
            return EngineError("inprocess", "the snippet was interrupted")
        return CodeExecutionError(type(err).__name__, str(err), line=line, column=col, traceback=tb)

    @staticmethod
    def _globals(params: ExecuteParams, tools: Tools, bridge: _Bridge) -> dict[str, Any]:
        def write(stream: str, text: str) -> None:
            tools.write("stderr" if stream == "stderr" else "stdout", text)

        def snippet_print(
            *args: Any, sep: str | None = " ", end: str | None = "\n", file: Any = None, flush: bool = False
        ) -> None:
            if file is None or file is sys.stdout or file is sys.stderr:
                stream = "stderr" if file is sys.stderr else "stdout"
                write(stream, (" " if sep is None else sep).join(str(a) for a in args) + ("\n" if end is None else end))
            else:
                builtins.print(*args, sep=sep, end=end, file=file, flush=flush)

        def println(*args: Any) -> None:
            write("stdout", " ".join(str(a) for a in args) + "\n")

        def sync(name: str) -> Callable[..., Any]:
            fn = getattr(tools, name)

            def call(*args: Any, **kwargs: Any) -> Any:
                return bridge.call(fn, *args, **kwargs)

            call.__name__ = name
            return call

        def awaitable(name: str) -> Callable[..., Any]:
            fn = getattr(tools, name)

            def call(*args: Any, **kwargs: Any) -> Any:
                return bridge.submit(fn, *args, **kwargs)

            call.__name__ = f"{name}_async"
            return call

        glb: dict[str, Any] = {
            "__builtins__": builtins,
            "__name__": "__snippet__",
            "input": params.input,
            "ToolError": ToolError,
            "print": snippet_print,
            "println": println,
        }
        for name in (
            "search_tools",
            "list_namespaces",
            "describe_tool",
            "list_tool_examples",
            "run_tool",
            "run_tools",
            "run_chain",
        ):
            glb[name] = sync(name)
        for name in ("run_tool", "run_chain", "describe_tool", "search_tools"):
            glb[f"{name}_async"] = awaitable(name)
        return glb

    async def aclose(self) -> None:
        """Nothing to release."""
