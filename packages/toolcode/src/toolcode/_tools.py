"""The default :class:`~toolcode.Tools` environment: the snippet globals, as a thin adapter over the operations.

Each global calls the :class:`~toolcode._operations.Operations` method of the same name and
hands the snippet the result model as plain data (``model_dump()``), so a snippet sees exactly
the fields the MCP server and the CLI return. Failures become :class:`~toolcode.ToolError`
(catchable in the snippet, with the failure's code); an invalid argument is a ``ToolError``
with code ``invalid_arguments``, never an engine failure.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from toolcode._limits import CallBudget, OutputBuffer
from toolcode._modules import PACKAGE, ModuleFunction, ToolModules, positional_message
from toolcode._operations import Operations
from toolcode._results import StoredResults
from toolcode._snippets import SnippetLibrary
from toolcode._trace import Trace
from toolcode._types import Stream
from toolcode._view import CatalogView
from toolcode.exceptions import ErrorCode, InvalidArgumentsError, ToolError, TypeCheckError
from toolindex import Index
from toolrun import Runner

__all__ = ["DefaultTools", "DocStore"]


class DocStore(Protocol):
    """What the tools environment needs from a documentation store (``tooldocs.Store`` fits).

    ``describe`` returns an object with ``render()`` (and ``signature``); ``examples`` a list
    of objects with ``to_dict()`` (or ``model_dump()``) or plain dicts.
    """

    def describe(self, tool_id: str, level: Any = ..., /) -> Any:
        """Documentation of one tool at a detail level."""
        ...

    def examples(self, tool_id: str, max: int = ..., /) -> Any:
        """Examples of one tool."""
        ...


def _as_tool_error(op: str, e: InvalidArgumentsError) -> ToolError:
    err = ToolError(e.tool_id or "", f"{op}(): {e.field}: {e.reason}", "validate_input")
    err.__cause__ = e
    return err


class DefaultTools:
    """The snippet environment of one run: the operations, counted and traced, as plain data.

    The executor makes one per run; build one yourself to drive an engine directly (for
    example in an engine's own tests).

    Args:
        index: The tool catalog.
        store: Documentation store (``tooldocs.InMemoryStore``); ``None`` makes
            ``describe_tool`` fall back to the index's own fields.
        runner: Runs the tools.
        allowed_namespaces: When set, only tools in these namespaces are visible.
        budget: Tool-call counting; unlimited when ``None``.
        trace: Where the calls are recorded; a fresh trace when ``None``.
        output: Where ``println``/``print`` go; a 1 MiB capture when ``None``.
        operations: Use these operations instead of building them from the arguments above.
        modules: The catalog's namespace modules (``from tools import github``); built from
            ``index`` when ``None``. Share one per catalog: it caches names and stubs.
        snippets: The saved snippets (``None``: ``save_snippet`` fails with ``invalid_arguments``).
        results: Stored results (``None``: ``load_result`` fails with ``invalid_arguments``).
        caller: Whose stored results ``load_result`` reads.
    """

    def __init__(
        self,
        index: Index,
        store: DocStore | None,
        runner: Runner,
        *,
        allowed_namespaces: Sequence[str] | None = None,
        budget: CallBudget | None = None,
        trace: Trace | None = None,
        output: OutputBuffer | None = None,
        operations: Operations | None = None,
        modules: ToolModules | None = None,
        snippets: SnippetLibrary | None = None,
        results: StoredResults | None = None,
        caller: str | None = None,
    ) -> None:
        self._snippets = snippets
        self._results = results
        self._caller = caller
        self.budget = budget if budget is not None else CallBudget(2**62, 2**62)
        self.trace = trace if trace is not None else Trace()
        self.output = output if output is not None else OutputBuffer(1 << 20)
        self.ops = operations or Operations(
            CatalogView(index, allowed_namespaces), store, runner, budget=self.budget, trace=self.trace
        )
        self._modules = modules if modules is not None else ToolModules(self.ops.view.index)
        self._module_map: dict[str, dict[str, ModuleFunction]] | None = None

    async def _plain(self, op: str, call: Callable[[], Awaitable[Any]]) -> Any:
        try:
            result = await call()
        except InvalidArgumentsError as e:
            raise _as_tool_error(op, e) from None
        return result.model_dump()

    # -- discovery ------------------------------------------------------------------

    async def search_tools(
        self, query: Any, limit: Any = 10, detail: Any = "summary", namespaces: Any = None
    ) -> dict[str, Any]:
        """``{hits: [{id, namespace, name, score, summary, signature}], hint}``, best first."""
        return await self._plain("search_tools", lambda: self.ops.search_tools(query, limit, detail, namespaces))

    async def list_tools(self, namespace: Any = None, cursor: Any = None, limit: Any = 100) -> dict[str, Any]:
        """``{tools: [{id, summary}], next_cursor}``: one page of the catalog."""
        return await self._plain("list_tools", lambda: self.ops.list_tools(namespace, cursor, limit))

    async def list_namespaces(self) -> dict[str, Any]:
        """``{namespaces: [{name, tool_count}]}``."""
        return await self._plain("list_namespaces", self.ops.list_namespaces)

    async def describe_tool(self, tool_id: Any, level: Any = "schema") -> dict[str, Any]:
        """``{text, docs: [{id, level, text}], errors}`` for one id or a list of ids."""
        return await self._plain("describe_tool", lambda: self.ops.describe_tool(tool_id, level))

    async def list_tool_examples(self, tool_id: Any, max: Any = 3) -> dict[str, Any]:
        """``{id, examples}``."""
        return await self._plain("list_tool_examples", lambda: self.ops.list_tool_examples(tool_id, max))

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
        max_steps = self.budget.max_chain_steps
        return await self._plain("run_chain", lambda: self.ops.run_chain(steps, max_steps=max_steps))

    def modules(self) -> Mapping[str, Mapping[str, ModuleFunction]]:
        """``{module: {function: ModuleFunction}}`` of the namespaces this run may use."""
        if self._module_map is None:
            self._module_map = self._modules.runtime(self.ops.view.allowed_namespaces)
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
            if self._snippets is None:
                raise InvalidArgumentsError("name", "saved snippets need a state store (this run has none)")
            saved = await self._snippets.save(name, code, description, input_schema, view=self.ops.view)
        except InvalidArgumentsError as e:
            raise _as_tool_error("save_snippet", e) from None
        except TypeCheckError as e:
            raise ToolError("", f"save_snippet(): {e}", "validate_input", code=ErrorCode.TYPE_ERROR) from None
        return saved.to_dict(with_code=False)

    async def load_result(self, ref: Any) -> Any:
        """A stored result of this run's caller, whole: the value itself, or the text of stdout."""
        try:
            if self._results is None:
                raise InvalidArgumentsError("ref", "stored results need a state store (this run has none)")
            return await self._results.load(ref, self._caller)
        except InvalidArgumentsError as e:
            raise _as_tool_error("load_result", e) from None

    # -- output ---------------------------------------------------------------------

    def println(self, *args: Any) -> None:
        """Print to the run's stdout: ``args`` joined by spaces, then a newline."""
        self.output.write("stdout", " ".join(str(a) for a in args) + "\n")

    def write(self, stream: Stream, text: str) -> None:
        """Append text to the run's stdout or stderr."""
        self.output.write(stream, text)
