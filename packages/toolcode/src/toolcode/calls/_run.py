"""The last layer: the tool resolved in the caller's view, then run by toolrun."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolcode._errors import as_tool_error
from toolcode._saved_snippet import NAMESPACE
from toolcode._snippets import RunSnippet, running_snippets
from toolcode._view import CatalogView
from toolcode.calls._gate import Decide
from toolcode.calls._layer import Call, Layer
from toolcode.calls._policy import Checkpoint, PendingCall
from toolcode.exceptions import ToolError
from toolindex import ToolIndexError
from toolrun import InputValidationError, Runner, RunResult, ToolRunError, compile_schema

__all__ = ["Run", "makeable_first"]

_SNIPPETS_PREFIX = NAMESPACE + ":"


class Run(Layer):
    """Makes the call as it was judged: its tool resolved in the caller's view; any failure is a :class:`ToolError`.

    Right before it is made, the call's verdict (:attr:`Call.judged`) must still stand
    (:meth:`Checkpoint.as_judged`: the catalog unchanged since, or the tool defined as it was then and
    not quarantined); else it fails with ``not_allowed`` and nothing is called. Whatever a call waited
    for after the gate (a listener, the audit log, a read started early), it is never made on a
    definition nobody judged.

    A tool outside the view does not exist here (``unknown_tool``, with the nearest visible ids).
    A call is bounded by the caller's own timeout when it gives one, else by its backend's
    configured one. A saved snippet is run by ``snippet`` (within the calling run, or as a run of
    its own at a door): toolrun checks its arguments as any tool's, then hands them to it.
    """

    __slots__ = ("_checkpoint", "_runner", "_snippet", "_view")

    def __init__(self, checkpoint: Checkpoint, runner: Runner, snippet: RunSnippet) -> None:
        self._checkpoint = checkpoint
        self._view = checkpoint.view
        self._runner = runner
        self._snippet = snippet

    async def plan(self, calls: Sequence[Call]) -> None:
        return

    async def call(self, call: Call) -> RunResult:
        view, timeout, judged = self._view, call.timeout, call.judged
        # The common case costs one comparison: the catalog has not changed since the call was judged.
        if judged is None or judged[0] is None or judged[0] != view.index.version:
            self._checkpoint.as_judged(call.tool_id, judged)
        try:
            # Without a filter the runner resolves the id itself (one lookup less per call).
            tool_id = view.get(call.tool_id).id if view.filtered else call.tool_id
            if not tool_id.startswith(_SNIPPETS_PREFIX):
                return await self._runner.run(tool_id, call.args, timeout=timeout)
            with running_snippets(self._snippet):
                return await self._runner.run(tool_id, call.args, timeout=timeout)
        except (ToolRunError, ToolIndexError) as e:  # a tool's own timeout included (ToolTimeoutError)
            err = as_tool_error(e, call.tool_id, view)
        except ToolError as e:  # the view's server_unavailable
            err = e
        if err.backend_kind is None and err.error_op not in ("resolve", "validate_input"):
            err.backend_kind = self._backend_kind(call.tool_id)
        raise err from None

    def _backend_kind(self, tool_id: str) -> str | None:
        try:
            refs = self._view.index.backends(self._view.get(tool_id).id)
        except (ToolIndexError, ToolError):
            return None
        return refs[0].kind if refs else None


def makeable_first(decide: Decide, view: CatalogView) -> Decide:
    """``decide``, asked only about calls that can be made.

    A call whose arguments its tool would refuse (computed at run time, where the check before the
    run cannot see them) fails as it would once approved, before anyone is asked about it.
    """

    async def checked(checkpoint: Checkpoint, pending: Sequence[PendingCall]) -> None:
        for p in pending:
            refused = _refused_arguments(view, p.tool_id, p.args)
            if refused is not None:
                raise refused
        await decide(checkpoint, pending)

    return checked


def _refused_arguments(view: CatalogView, tool_id: str, args: Mapping[str, Any]) -> ToolError | None:
    """What the runner would raise for these arguments, before calling anything (``None``: none)."""
    try:
        tool = view.get(tool_id)
        problems = compile_schema(tool.input_schema).problems(dict(args))
    except (ToolRunError, ToolIndexError, ToolError):
        return None  # an unknown tool, an unusable schema: the call reports it as it is made
    if not problems:
        return None
    return as_tool_error(InputValidationError(tool.id, problems), tool_id, view)
