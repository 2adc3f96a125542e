"""``UnsafeInProcessEngine``: runs snippets with the host's own CPython, in a greenlet. Fast, and NOT a sandbox."""

from __future__ import annotations

import ast
import builtins
import contextlib
import ctypes
import sys
import threading
import time
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from types import CodeType, ModuleType
from typing import Any

import anyio
import anyio.lowlevel
import greenlet

from toolcode._globals import async_names, call_names, tool_error_info
from toolcode._modules import PACKAGE
from toolcode._types import EngineInfo, ExecuteParams, ExecuteResult, Tools
from toolcode.exceptions import CodeExecutionError, EngineError, LimitExceededError, ToolCodeError, ToolError

__all__ = ["UnsafeInProcessEngine"]

_FILENAME = "<snippet>"
_LAST = "__toolcode_last"
_CO_COROUTINE = 0x0080  # inspect.CO_COROUTINE: the module code awaits at top level
_DEADLINE_SLACK = 0.05  # the watchdog strikes just after the cancel scope would have
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


async def _wait_for(yielded: Any) -> None:
    """Await what a top-level-await snippet's coroutine yielded (the coroutine reads the result itself)."""
    if yielded is None:  # a bare yield: asyncio.sleep(0)
        await anyio.lowlevel.checkpoint()
        return
    # An asyncio future. Its "blocking" flag was set by the snippet's own await: reset it, as a
    # Task would, or awaiting it again fails with "await wasn't used with future".
    if getattr(yielded, "_asyncio_future_blocking", False):
        yielded._asyncio_future_blocking = False
    with contextlib.suppress(Exception):
        await yielded


def _drive(coro: Coroutine[Any, Any, Any], host: greenlet.greenlet) -> Any:
    """Run a top-level-await snippet's coroutine, passing whatever it waits on to the host greenlet."""
    send: Any = None
    exc: BaseException | None = None
    while True:
        try:
            yielded = coro.throw(exc) if exc is not None else coro.send(send)
        except StopIteration as e:
            return e.value
        exc = None
        try:
            send = host.switch((_wait_for, (yielded,), {}))
        except BaseException as e:  # passed on into the coroutine, so its own cleanup (cancel scopes) runs
            exc = e


@dataclass(eq=False, slots=True)
class _Run:
    """One run's state shared with the watchdog thread."""

    deadline: float
    thread_id: int
    active: bool = False
    """True while the snippet's greenlet holds the event loop thread."""
    interrupted_at: float = 0.0


class _Watchdog:
    """Stops a snippet that holds the event loop past its deadline (a CPU loop), from another thread.

    While the snippet computes on the loop thread no cancel scope can fire. Past the run's
    effective deadline (the timeout, or an enclosing scope's), the watchdog raises ``_Interrupted``
    in the loop thread, only while the snippet holds it; the loop then delivers the cancellation.
    """

    def __init__(self) -> None:
        self._runs: set[_Run] = set()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, run: _Run) -> None:
        with self._cond:
            self._runs.add(run)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="toolcode-inprocess-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify()

    def remove(self, run: _Run) -> None:
        with self._cond:
            self._runs.discard(run)

    def _loop(self) -> None:
        while True:
            with self._cond:
                if not self._runs:
                    self._thread = None
                    return
                now = time.monotonic()
                wait = min(r.deadline for r in self._runs) - now
                if wait > 0:
                    self._cond.wait(min(wait, 1.0))
                    continue
                for r in self._runs:
                    # Re-raise at most every 50 ms: a snippet that catches BaseException gets hit again.
                    if r.deadline <= now and r.active and now - r.interrupted_at > 0.05:
                        r.interrupted_at = now
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(
                            ctypes.c_ulong(r.thread_id), ctypes.py_object(_Interrupted)
                        )
            time.sleep(0.01)


class UnsafeInProcessEngine:
    """Runs snippets in the host interpreter, on the event loop's own thread; NOT a sandbox.

    For trusted code only (your own scripts, tests, benchmarks): the snippet has the full power
    of the host process. It runs in a greenlet and switches to the host for each tool call (about
    a microsecond), so a call costs little more than the runner itself. The limits hold: the
    timeout through each call's await and, for a CPU-bound snippet, through a watchdog thread
    that raises in it once the deadline has passed; but while it computes it holds the event
    loop, and one long C operation (``10**10**8``, ``time.sleep``) runs to its end. For fan-out:
    ``run_tools([...])``, or ``await asyncio.gather(run_tool_async(...), ...)`` at top level.
    """

    def __init__(self) -> None:
        self._info = EngineInfo(name="inprocess", sandboxed=False, unsupported={"escape": _NOT_SANDBOX})
        self._watchdog = _Watchdog()

    @property
    def info(self) -> EngineInfo:
        """Name (``inprocess``), not sandboxed, escape probes declared unsupported."""
        return self._info

    async def execute(self, params: ExecuteParams, tools: Tools) -> ExecuteResult:
        """Run the snippet in a greenlet on the event loop thread.

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

        host = greenlet.getcurrent()
        glb = self._globals(params, tools, host.switch)  # a request: (coroutine function, args, kwargs)

        def main(*_: Any) -> Any:
            if code.co_flags & _CO_COROUTINE:
                _drive(eval(code, glb), host)
            else:
                exec(code, glb)
            return glb["__out"] if "__out" in glb else glb.get(_LAST)

        snippet = greenlet.greenlet(main)
        run = _Run(deadline=anyio.current_effective_deadline() + _DEADLINE_SLACK, thread_id=threading.get_ident())
        self._watchdog.add(run)
        try:
            value = await self._drive_snippet(snippet, run)
        except _Interrupted:
            # The watchdog stopped a snippet that held the loop past its deadline: let the
            # loop deliver the cancellation that is due.
            await anyio.sleep(1.0)
            raise EngineError("inprocess", "the snippet was interrupted past its deadline") from None
        finally:
            self._watchdog.remove(run)
        return ExecuteResult(value=value)

    async def _drive_snippet(self, snippet: greenlet.greenlet, run: _Run) -> Any:
        """Switch into the snippet; await each request it makes; switch back with the answer."""
        send: Any = None
        throw: BaseException | None = None
        while True:
            run.active = True
            try:
                request = snippet.throw(throw) if throw is not None else snippet.switch(send)
            except _Interrupted:
                raise
            except BaseException as e:  # the snippet's own uncaught exception: the run's outcome
                if isinstance(e, anyio.get_cancelled_exc_class()):
                    raise
                raise _code_error(e) from e
            finally:
                run.active = False
            if snippet.dead:
                return request
            send, throw = None, None
            try:
                fn, args, kwargs = request
                send = await fn(*args, **kwargs)
            except anyio.get_cancelled_exc_class():
                await self._unwind(snippet, run)
                raise
            except Exception as e:  # a tool failure goes back into the snippet, where it may be caught
                throw = e

    @staticmethod
    async def _unwind(snippet: greenlet.greenlet, run: _Run) -> None:
        """Stop the snippet's code (a snippet that swallows the interrupt gets it again)."""
        for _ in range(100):
            if snippet.dead:
                return
            run.active = True
            try:
                snippet.throw(_Interrupted)
            except BaseException:  # whatever the snippet does while unwinding ends here
                return
            finally:
                run.active = False

    @staticmethod
    def _globals(params: ExecuteParams, tools: Tools, call: Callable[..., Any]) -> dict[str, Any]:
        def snippet_print(
            *args: Any, sep: str | None = " ", end: str | None = "\n", file: Any = None, flush: bool = False
        ) -> None:
            if file is None or file is sys.stdout or file is sys.stderr:
                text = (" " if sep is None else sep).join(str(a) for a in args) + ("\n" if end is None else end)
                tools.write("stderr" if file is sys.stderr else "stdout", text)
            else:
                builtins.print(*args, sep=sep, end=end, file=file, flush=flush)

        def sync(name: str) -> Callable[..., Any]:
            fn = getattr(tools, name)

            def api(*args: Any, **kwargs: Any) -> Any:
                return call((fn, args, kwargs))

            api.__name__ = name
            return api

        glb: dict[str, Any] = {
            "__builtins__": _builtins_with_tools(tools, call) if PACKAGE in params.code else builtins,
            "__name__": "__snippet__",
            "input": params.input,
            "ToolError": ToolError,
            "tool_error_info": tool_error_info,
            "print": snippet_print,
            "println": snippet_print,
        }
        for name in call_names():
            glb[name] = sync(name)
        for name, method in async_names().items():
            # Called inside a top-level-await snippet, which runs on the host loop: the coroutine is used as is.
            glb[name] = getattr(tools, method)
        return glb

    async def aclose(self) -> None:
        """Nothing to release."""


def _code_error(err: BaseException) -> ToolCodeError:
    """The snippet's uncaught exception as the run's error, at the snippet's line."""
    if isinstance(err, LimitExceededError):
        return err
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == _FILENAME]
    line, col = (frames[-1].lineno, frames[-1].colno) if frames else (None, None)
    tool = err if isinstance(err, ToolError) else None
    return CodeExecutionError(
        "ToolError" if tool is not None else type(err).__name__,
        str(err),
        line=line,
        column=col + 1 if col is not None else None,
        tool_id=tool.tool_id if tool is not None else None,
        tool_code=tool.code if tool is not None else None,
        traceback="".join(traceback.format_exception(err)),
    )


def _tools_package(tools: Tools, call: Callable[..., Any]) -> ModuleType:
    """The ``tools`` package of one run: a module per namespace, a function per tool."""
    package = ModuleType(PACKAGE, "The namespaces of the catalog, one module each.")
    package.__path__ = []  # a package: ``import tools.github`` works
    for module_name, functions in tools.modules().items():
        module = ModuleType(f"{PACKAGE}.{module_name}")
        for fname, fn in functions.items():
            setattr(module, fname, _module_function(tools, call, module_name, fname, fn.awaitable))
        setattr(package, module_name, module)
    return package


def _module_function(tools: Tools, call: Callable[..., Any], module: str, function: str, awaitable: bool) -> Any:
    async def call_async(*args: Any, **kwargs: Any) -> Any:
        return await tools.call_function(module, function, args, kwargs)

    def call_sync(*args: Any, **kwargs: Any) -> Any:
        return call((tools.call_function, (module, function, args, kwargs), {}))

    fn = call_async if awaitable else call_sync
    fn.__name__ = function
    return fn


def _builtins_with_tools(tools: Tools, call: Callable[..., Any]) -> dict[str, Any]:
    """The builtins with an ``__import__`` that answers ``tools`` (and ``tools.<module>``) itself."""
    package = _tools_package(tools, call)
    real_import = builtins.__import__

    def snippet_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        head, _, rest = name.partition(".")
        if level == 0 and head == PACKAGE:
            if rest and not hasattr(package, rest.split(".")[0]):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return package if not (rest and fromlist) else getattr(package, rest.split(".")[0])
        return real_import(name, globals, locals, fromlist, level)

    return {**builtins.__dict__, "__import__": snippet_import}
