"""A third-party engine written to docs/engines.md: each snippet runs in its own CPython child process.

It uses only toolcode's public API (``toolcode`` and ``toolcode.engines``), and it passes the
engine conformance suite except the sandbox-escape probes, which it declares unsupported: the
child is an ordinary Python process with your rights, so this is **not a sandbox**. What a
process per run does give: a snippet that computes forever, or one big-integer operation, is
stopped by killing its process, and one run cannot touch another's objects.

How it works. The host starts ``python -I -S -c CHILD`` and sends it one JSON line: the code, the
input, the names of the snippet globals and of the namespace modules. The child binds the
globals, runs the snippet, and talks back in JSON lines on its stdout: a tool call
(``{"call": id, "name", "args", "kwargs"}``, answered by the :class:`~toolcode.Tools` method of
that name with ``{"id", "value"}`` or ``{"id", "error"}``), a write to stdout or stderr, and at the
end the value or the uncaught exception with its line and column. Calls from gathered
coroutines are answered concurrently, so they overlap as in the built-in engines.

Use it as any engine::

    from toolcode import Services, Toolbox
    box = Toolbox(backends, engine=SubprocessEngine())        # or, without a toolbox:
    services = Services.of(index, runner, engine=SubprocessEngine())

or register it under the ``toolcode.engines`` entry-point group to pick it by name.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from toolcode import (
    CodeExecutionError,
    EngineError,
    EngineInfo,
    ErrorCode,
    ExecuteParams,
    ExecuteResult,
    LimitExceededError,
    ToolError,
    Tools,
)
from toolcode.engines import TOOL_ERROR_INFO_SOURCE, TOOLS_PACKAGE, async_names, call_names

__all__ = ["SubprocessEngine"]

_MAX_LINE = 64 * 1024 * 1024
"""Longest protocol line the host reads (a tool result or a value of up to 64 MiB of JSON)."""

# The child: everything it needs is in this source and the first line it reads.
CHILD = r'''
import ast, json, os, sys, threading, types  # asyncio and traceback only when needed: a run starts faster

setup = json.loads(sys.stdin.readline())
channel = os.fdopen(os.dup(1), "w", encoding="utf-8")  # the protocol; fd 1 itself now writes to stderr
os.dup2(2, 1)
sys.stdout = sys.stderr
send_lock, waiting, counter = threading.Lock(), {}, [0]


def send(message):
    line = json.dumps(message, ensure_ascii=False, allow_nan=True)
    with send_lock:
        channel.write(line + "\n")
        channel.flush()


class Waiting:
    """One call waiting for its answer: in this thread (an event) or in a coroutine (an asyncio future)."""

    def __init__(self, future=None):
        self.event, self.reply, self.future = threading.Event(), None, future

    def answer(self, reply):
        if self.future is not None:
            self.future.get_loop().call_soon_threadsafe(self.future.set_result, reply)
        else:
            self.reply = reply
            self.event.set()


def answers():
    for line in sys.stdin:
        reply = json.loads(line)
        waiting.pop(reply["id"]).answer(reply)


threading.Thread(target=answers, daemon=True).start()


class ToolError(RuntimeError):
    """A failed call: str(e) is "[code] tool_id: message", as tool_error_info reads it."""


def request(name, args, kwargs, future=None):
    with send_lock:
        counter[0] += 1
        call_id = counter[0]
    waiting[call_id] = call = Waiting(future)
    send({"call": call_id, "name": name, "args": list(args), "kwargs": kwargs})
    return call


def call_now(name, args, kwargs):
    call = request(name, args, kwargs)
    call.event.wait()
    return result(call.reply)


async def call_later(name, args, kwargs):
    import asyncio

    return result(await request(name, args, kwargs, asyncio.get_running_loop().create_future()).future)


def result(reply):
    error = reply.get("error")
    if error is None:
        return reply["value"]
    if error.get("limit"):  # a limit is not a tool's failure: `except ToolError` does not catch it
        raise RuntimeError(error["text"])
    exc = ToolError(error["text"])
    exc.code, exc.tool_id, exc.message = error["code"], error["tool_id"], error["message"]
    raise exc


def sync(name):
    def call(*args, **kwargs):
        return call_now(name, args, kwargs)
    call.__name__ = name
    return call


def awaitable(name):
    async def call(*args, **kwargs):
        return await call_later(name, args, kwargs)
    call.__name__ = name
    return call


def write(stream, text):
    send({"write": stream, "text": text})


def snippet_print(*values, sep=" ", end="\n", file=None, flush=False):
    stream = "stderr" if file is sys.stderr else "stdout"
    write(stream, (" " if sep is None else sep).join(str(v) for v in values) + ("\n" if end is None else end))


glb = {"__name__": "__snippet__", "input": setup["input"], "ToolError": ToolError, "print": snippet_print}
glb["println"] = lambda *values: write("stdout", " ".join(str(v) for v in values) + "\n")
exec(setup["tool_error_info"], glb)
for name in setup["calls"]:
    glb[name] = sync(name)
for name, method in setup["async"].items():
    glb[name] = awaitable(method)

package = types.ModuleType(setup["package"])
package.__path__ = []
sys.modules[package.__name__] = package


def module_function(module, function, is_awaitable):
    if is_awaitable:
        async def fn(*args, **kwargs):
            return await call_later("call_function", (module, function, args, kwargs), {})
    else:
        def fn(*args, **kwargs):
            return call_now("call_function", (module, function, args, kwargs), {})
    fn.__name__ = function
    return fn


for module_name, functions in setup["modules"].items():
    module = types.ModuleType(f"{package.__name__}.{module_name}")
    for function, is_awaitable in functions.items():
        setattr(module, function, module_function(module_name, function, is_awaitable))
    setattr(package, module_name, module)
    sys.modules[module.__name__] = module


def not_json(value, path="$"):
    """Where the value stops being JSON data, or None."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return None
    if isinstance(value, (list, tuple)):
        return next((w for i, v in enumerate(value) if (w := not_json(v, f"{path}[{i}]"))), None)
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{path} has a key of type {type(k).__name__}"
            if (w := not_json(v, f"{path}.{k}")) is not None:
                return w
        return None
    return f"{path} is a {type(value).__name__}"


def position(exc):
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<snippet>"]
    if not frames:
        return None, None
    column = getattr(frames[-1], "colno", None)
    return frames[-1].lineno, None if column is None else column + 1


try:
    tree = ast.parse(setup["code"], "<snippet>", "exec")
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        tree.body[-1] = ast.copy_location(
            ast.Assign(targets=[ast.Name("__toolcode_last", ast.Store())], value=tree.body[-1].value), tree.body[-1]
        )
        ast.fix_missing_locations(tree)
    code = compile(tree, "<snippet>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
except SyntaxError as e:
    send({"raised": {"type": "SyntaxError", "message": e.msg, "line": e.lineno, "column": e.offset}})
    sys.exit(0)
try:
    if code.co_flags & 0x80:  # CO_COROUTINE: the snippet awaits at top level
        import asyncio

        asyncio.run(eval(code, glb))
    else:
        exec(code, glb)
    value = glb["__out"] if "__out" in glb else glb.get("__toolcode_last")
    where = not_json(value)
    if where is not None:
        raise TypeError(f"the result must be JSON data (dicts with str keys, lists, str, numbers, bool, None): {where}")
    send({"value": value})
except BaseException as e:
    line, column = position(e)
    raised = {"type": type(e).__name__, "message": str(e), "line": line, "column": column}
    if isinstance(e, ToolError):  # the message stays str(e): "[code] tool_id: message"
        raised |= {"tool_id": e.tool_id, "code": e.code}
    import traceback

    raised["traceback"] = "".join(traceback.format_exception(e))[-4000:]
    send({"raised": raised})
'''


class SubprocessEngine:
    """Runs each snippet in a new CPython child process (see the module docstring). NOT a sandbox.

    Args:
        python: The interpreter to run (default: this one).
    """

    def __init__(self, python: str = sys.executable) -> None:
        self._python = python
        reason = "runs snippets in an ordinary Python process with your rights: not a sandbox"
        self._info = EngineInfo(name="subprocess", sandboxed=False, unsupported={"escape": reason})

    @property
    def info(self) -> EngineInfo:
        """Name ``subprocess``, not sandboxed, the escape probes declared unsupported."""
        return self._info

    async def execute(self, params: ExecuteParams, tools: Tools) -> ExecuteResult:
        """Run ``params.code`` in a child process, answering its calls with ``tools``.

        Raises:
            CodeExecutionError: The snippet's syntax error, or an exception it did not catch.
            EngineError: The child died or broke the protocol.
        """
        setup = {
            "code": params.code,
            "input": params.input,
            "calls": list(call_names()),
            "async": async_names(),
            "package": TOOLS_PACKAGE,
            "modules": {m: {f: fn.awaitable for f, fn in fns.items()} for m, fns in tools.modules().items()},
            "tool_error_info": TOOL_ERROR_INFO_SOURCE,
        }
        # -I: no user site or PYTHON* variables; -S: no site module (the child imports only the stdlib).
        process = await anyio.open_process([self._python, "-I", "-S", "-c", CHILD])
        stdin, stdout = process.stdin, process.stdout
        assert stdin is not None and stdout is not None
        lock = anyio.Lock()

        async def reply(message: dict[str, Any]) -> None:
            async with lock:
                await stdin.send((json.dumps(message, default=str) + "\n").encode())

        end: dict[str, Any] | None = None
        failures: list[Exception] = []
        try:
            await reply(setup)
            lines = BufferedByteReceiveStream(stdout)
            async with anyio.create_task_group() as calls:
                while end is None and not failures:
                    try:
                        message = json.loads(await lines.receive_until(b"\n", _MAX_LINE))
                    except (anyio.EndOfStream, anyio.IncompleteRead):
                        break
                    if "call" in message:
                        calls.start_soon(self._call, tools, message, reply, failures)
                    elif "write" in message:
                        tools.write("stderr" if message["write"] == "stderr" else "stdout", message["text"])
                    else:
                        end = message
                calls.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    process.kill()
                await process.aclose()
        if failures:  # a Tools method failed otherwise than a tool does: the run ends with it
            raise failures[0]
        if end is None:
            raise EngineError("subprocess", "the snippet's process ended without a result")
        if "raised" in end:
            raise _snippet_error(end["raised"])
        return ExecuteResult(value=end["value"])

    @staticmethod
    async def _call(tools: Tools, message: dict[str, Any], reply: Any, failures: list[Exception]) -> None:
        """Answer one call with the Tools method of its name; a tool's failure goes back into the snippet."""
        name, args, kwargs = message["name"], message["args"], message["kwargs"]
        try:
            if name == "call_function":
                value = await tools.call_function(*args)
            else:
                value = await getattr(tools, name)(*args, **kwargs)
        except ToolError as e:
            error = {"text": str(e), "code": e.code.value, "tool_id": e.tool_id, "message": e.message}
            await reply({"id": message["call"], "error": error})
            return
        except LimitExceededError as e:  # tripped for good: the executor ends the run with it
            error = {"text": str(e), "limit": True}
            await reply({"id": message["call"], "error": error})
            return
        except Exception as e:  # anything else (a pause the policy asks for, a bug) ends the run
            failures.append(e)
            return
        await reply({"id": message["call"], "value": value})

    async def aclose(self) -> None:
        """Nothing to release: each run's process ends with the run."""


def _snippet_error(raised: dict[str, Any]) -> CodeExecutionError:
    code = raised.get("code")
    return CodeExecutionError(
        raised["type"],
        raised["message"],
        line=raised.get("line"),
        column=raised.get("column"),
        tool_id=raised.get("tool_id"),
        tool_code=ErrorCode(code) if code else None,
        traceback=raised.get("traceback"),
    )
