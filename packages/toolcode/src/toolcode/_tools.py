"""The default :class:`~toolcode.Tools` environment: the snippet globals, as a thin adapter over the operations.

Each global calls the :class:`~toolcode._operations.Operations` method of the same name and
hands the snippet the result model as plain data (``model_dump()``), so a snippet sees exactly
the fields the MCP server and the CLI return. Failures become :class:`~toolcode.ToolError`
(catchable in the snippet, with the failure's code); an invalid argument is a ``ToolError``
with code ``invalid_arguments``, never an engine failure.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio

from toolcode._discovery import Discovery
from toolcode._limits import OutputBuffer
from toolcode._modules import PACKAGE, ModuleFunction, positional_message
from toolcode._operations import Operations
from toolcode._services import Services
from toolcode._types import Stream
from toolcode.exceptions import ErrorCode, InvalidArgumentsError, ToolError, TypeCheckError

__all__ = ["DefaultTools"]


def _as_tool_error(op: str, e: InvalidArgumentsError) -> ToolError:
    err = ToolError(e.tool_id or "", f"{op}(): {e.field}: {e.reason}", "validate_input")
    err.__cause__ = e
    return err


class DefaultTools:
    """The snippet environment of one run: the operations, counted and traced, as plain data.

    The executor makes one per run (with the run's operations, output and budget).

    Args:
        services: The core's services (namespace modules, saved snippets, stored results).
        ops: The run's operations (its view and call stack).
        output: Where ``println``/``print`` go.
        caller: Whose stored results ``load_result`` reads.
    """

    def __init__(self, services: Services, ops: Operations, output: OutputBuffer, caller: str | None) -> None:
        self.ops = ops
        self.output = output
        self._services = services
        self._caller = caller
        self._module_map: dict[str, dict[str, ModuleFunction]] | None = None

    # Made at a run's first read of the catalog: most runs make none.

    @functools.cached_property
    def discovery(self) -> Discovery:
        """The run's reads of the catalog, counted against its budget."""
        return Discovery(self._services, self.ops.view, self.ops.budget)

    @functools.cached_property
    def _reading(self) -> anyio.Lock:
        """Held by this run's catalog read under way: the run waits in the shared turns with one read at a time."""
        return anyio.Lock()

    async def _plain(self, op: str, call: Callable[[], Awaitable[Any]]) -> Any:
        try:
            result = await call()
        except InvalidArgumentsError as e:
            raise _as_tool_error(op, e) from None
        return result.model_dump()

    async def _read(self, op: str, call: Callable[[], Awaitable[Any]]) -> Any:
        """A read of the catalog: one run's at a time, each followed by a rest as long as it took.

        Reads take the event loop every caller shares; so taken, all of them together take at most
        about half of it, however many runs loop over them, and everything else goes on in the rest.
        A run waits for its turn with one read at a time (however many it gathers), so another run's
        read waits for one read of each run ahead of it, not for all of theirs.
        """
        async with self._reading, self._services.turns:
            started = time.perf_counter()
            try:
                return await self._plain(op, call)
            finally:
                await anyio.sleep(time.perf_counter() - started)

    # -- discovery ------------------------------------------------------------------

    async def search_tools(
        self, query: Any, limit: Any = 10, detail: Any = "summary", namespaces: Any = None
    ) -> dict[str, Any]:
        """``{hits: [{id, namespace, name, score, summary, signature}], hint}``, best first."""
        return await self._read("search_tools", lambda: self.discovery.search_tools(query, limit, detail, namespaces))

    async def list_tools(self, namespace: Any = None, cursor: Any = None, limit: Any = 100) -> dict[str, Any]:
        """``{tools: [{id, summary}], next_cursor}``: one page of the catalog."""
        return await self._read("list_tools", lambda: self.discovery.list_tools(namespace, cursor, limit))

    async def list_namespaces(self) -> dict[str, Any]:
        """``{namespaces: [{name, tool_count}]}``."""
        return await self._read("list_namespaces", self.discovery.list_namespaces)

    async def describe_tool(self, tool_id: Any, level: Any = "schema") -> dict[str, Any]:
        """``{text, docs: [{id, level, text}], errors}`` for one id or a list of ids."""
        return await self._read("describe_tool", lambda: self.discovery.describe_tool(tool_id, level))

    async def list_tool_examples(self, tool_id: Any, max: Any = 3) -> dict[str, Any]:
        """``{id, examples}``."""
        return await self._read("list_tool_examples", lambda: self.discovery.list_tool_examples(tool_id, max))

    # -- running --------------------------------------------------------------------

    async def run_tool(self, tool_id: Any, args: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        """Run one tool and return its value (``args`` and keywords are merged; keywords win)."""
        try:
            return await self.ops.call_tool(tool_id, args, kwargs)
        except InvalidArgumentsError as e:
            raise _as_tool_error("run_tool", e) from None

    async def run_tools(self, calls: Sequence[Any]) -> list[Any]:
        """Run several tools concurrently; their values in the order of ``calls``."""
        try:
            return await self.ops.call_tools(calls)
        except InvalidArgumentsError as e:
            raise _as_tool_error("run_tools", e) from None

    async def run_chain(self, steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """``{steps: [{index, tool_id, ok, value, error, duration_ms}], aborted, final}``."""
        budget = self.ops.budget
        max_steps = budget.max_chain_steps if budget is not None else None
        return await self._plain("run_chain", lambda: self.ops.run_chain(steps, max_steps=max_steps))

    def modules(self) -> Mapping[str, Mapping[str, ModuleFunction]]:
        """``{module: {function: ModuleFunction}}`` of the namespaces this run may use."""
        if self._module_map is None:
            self._module_map = self._services.modules.seen_by(self.ops.view).runtime()
        return self._module_map

    async def call_function(self, module: str, function: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """Run the tool behind ``tools.<module>.<function>`` with keyword arguments."""
        fn = self.modules().get(module, {}).get(function)
        label = f"{PACKAGE}.{module}.{function}"
        if fn is None:
            raise ToolError("", f"{label} is not a tool of this run", "resolve", code=ErrorCode.UNKNOWN_TOOL)
        if args:
            raise ToolError(fn.tool_id, positional_message(f"{module}.{function}", len(args)), "validate_input")
        try:
            return await self.ops.call_tool(fn.tool_id, None, dict(kwargs))
        except InvalidArgumentsError as e:
            raise _as_tool_error(label, e) from None

    async def save_snippet(self, name: Any, code: Any, description: Any, input_schema: Any = None) -> dict[str, Any]:
        """Save a parameterised snippet as the tool ``snippets:<name>``."""
        try:
            view, caller = self.ops.view, self._caller
            saved = await self._services.save_snippet(view, caller, name, code, description, input_schema)
        except InvalidArgumentsError as e:
            raise _as_tool_error("save_snippet", e) from None
        except TypeCheckError as e:
            raise ToolError("", f"save_snippet(): {e}", "validate_input", code=ErrorCode.TYPE_ERROR) from None
        return saved.to_dict(with_code=False)

    async def load_result(self, ref: Any) -> Any:
        """A stored result of this run's caller, whole: the value itself, or the text of stdout."""
        stores = self._services.stores
        try:
            if stores is None:
                raise InvalidArgumentsError("ref", "stored results need a state store (this run has none)")
            return await stores.results.load(ref, self._caller)
        except InvalidArgumentsError as e:
            raise _as_tool_error("load_result", e) from None

    # -- output ---------------------------------------------------------------------

    def println(self, *args: Any) -> None:
        """Print to the run's stdout: ``args`` joined by spaces, then a newline."""
        self.output.write("stdout", " ".join(str(a) for a in args) + "\n")

    def write(self, stream: Stream, text: str) -> None:
        """Append text to the run's stdout or stderr."""
        self.output.write(stream, text)
