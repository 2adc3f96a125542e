"""The result models every door returns: the same names and fields from the MCP server, the CLI, Python and a snippet.

A snippet receives them as plain dicts (``model_dump(mode="json")``), the MCP server returns
them as ``structuredContent``, ``toolcode ... --json`` prints them, and Python callers get the
models themselves.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ApprovalRequest",
    "CallFailure",
    "CallSummary",
    "ChainOutcome",
    "ChainStepOutcome",
    "Diagnostic",
    "DocsResult",
    "ErrorInfo",
    "ExamplesResult",
    "ExecuteOutcome",
    "NamespaceEntry",
    "NamespacesResult",
    "PausedEntry",
    "PausedResult",
    "PendingCallInfo",
    "ResultPage",
    "RunToolOutcome",
    "SearchHitEntry",
    "SearchResult",
    "SessionEntry",
    "SessionReport",
    "SessionsResult",
    "SnippetEntry",
    "SnippetsResult",
    "StoredResultInfo",
    "ToolApprovalEntry",
    "ToolApprovalsResult",
    "ToolDocEntry",
    "ToolEntry",
    "ToolListResult",
    "TraceEntry",
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class Diagnostic(_Model):
    """One problem the check before the run found."""

    line: int
    column: int
    message: str
    code: str | None = None
    """The error the run would have met there (``unknown_tool``, ``invalid_arguments`` or ``runtime_error``)."""


class ErrorInfo(_Model):
    """A failure, in the one JSON shape every door uses."""

    code: str
    """A value of :class:`toolcode.exceptions.ErrorCode`."""
    message: str
    line: int | None = None
    column: int | None = None
    tool_id: str | None = None
    hint: str | None = None
    """What to try next (nearest tool names, the limit to raise, ...)."""
    diagnostics: list[Diagnostic] | None = None
    """Every problem found before the run (``type_error`` only)."""


class SearchHitEntry(_Model):
    """One search hit."""

    id: str
    namespace: str
    name: str
    score: float
    summary: str | None = None
    """One line (``detail="summary"`` or ``"schema"``)."""
    signature: str | None = None
    """The Python signature, as ``describe_tool`` shows it (``detail="schema"``)."""
    weak: bool = False
    """A weak match (relevance below ``toolcode.search.weak_relevance``): it may not serve; read its summary first."""


class SearchResult(_Model):
    """Ranked hits, best first (weak matches included, marked)."""

    hits: list[SearchHitEntry]
    hint: str | None = None
    """Where to look further: when nothing matched or every hit is weak, or a configured server failed to start."""


class ToolEntry(_Model):
    """One tool of a listing."""

    id: str
    summary: str


class ToolListResult(_Model):
    """One page of the catalog, in id order."""

    tools: list[ToolEntry]
    next_cursor: str | None = None
    """Pass as ``cursor`` for the next page; ``None`` on the last page."""


class NamespaceEntry(_Model):
    """One namespace (usually one upstream server)."""

    name: str
    tool_count: int
    unavailable: str | None = None
    """Set for a configured server that failed to start: why (it has no tools in the catalog, and
    a call to it answers ``server_unavailable``)."""


class NamespacesResult(_Model):
    """Every visible namespace, the configured servers that failed to start among them."""

    namespaces: list[NamespaceEntry]


class ToolDocEntry(_Model):
    """The documentation of one tool at one level."""

    id: str
    level: str
    text: str
    digest: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """At level ``full``, for a quarantined tool: the digest of the definition shown, which
    ``approve_tools`` names to approve exactly it (``None`` otherwise)."""


class DocsResult(_Model):
    """Documentation of one or more tools: each doc, their text joined, and ids that failed."""

    text: str
    """Every doc's text, separated by blank lines (what a model reads)."""
    docs: list[ToolDocEntry]
    errors: list[ErrorInfo] = Field(default_factory=list[ErrorInfo])
    """Ids that could not be described (unknown, not visible), with the nearest names in ``hint``."""


class ExamplesResult(_Model):
    """Usage examples of one tool."""

    id: str
    examples: list[dict[str, Any]]


class StoredResultInfo(_Model):
    """Content the output budget cut, kept whole: read it back by ``ref``."""

    ref: str
    uri: str
    """The MCP resource that returns it (``toolcode://results/<ref>``)."""
    what: str
    """``value``, ``stdout`` or ``result`` (a direct call's)."""
    total_chars: int
    media: str
    """``application/json`` (a value) or ``text/plain``."""
    expires: float


class ResultPage(_Model):
    """A page of a stored result (``read_result``)."""

    ref: str
    offset: int
    text: str
    total_chars: int
    next_offset: int | None
    """Where the next page starts; ``None`` at the end."""
    media: str


class RunToolOutcome(_Model):
    """The result of one tool call made directly (not from a snippet)."""

    tool_id: str
    value: Any
    duration_ms: float
    stored: StoredResultInfo | None = None
    """Set when the result was over the output budget: ``value`` is then a preview."""


class ChainStepOutcome(_Model):
    """One step of a chain."""

    index: int
    tool_id: str
    ok: bool
    value: Any = None
    error: ErrorInfo | None = None
    duration_ms: float
    id: str | None = None
    """The step's own ``id``, when it has one."""


class ChainOutcome(_Model):
    """Every step that ran, in order."""

    steps: list[ChainStepOutcome]
    aborted: bool
    """Whether a failing ``on_error="abort"`` step stopped the chain."""
    final: Any = None
    """The last successful step's value."""


class CallFailure(_Model):
    """A failed tool call, in a run's summary."""

    tool_id: str
    code: str
    message: str


class CallSummary(_Model):
    """The tool calls of a run in one line's worth of data."""

    count: int
    failed: int = 0
    failures: list[CallFailure] = Field(default_factory=list[CallFailure])
    """The first few failures (see ``failed`` for how many there were)."""


class TraceEntry(_Model):
    """One tool call of a run, as a door reports it."""

    tool_id: str
    ok: bool
    duration_ms: float
    error: str | None = None
    code: str | None = None
    args: Any = None
    """The arguments (``trace="full"`` only)."""
    result: Any = None
    """The result (``trace="full"`` only)."""
    early: str | None = None
    """``"used"``: answered by a call started before the code reached it; ``"discarded"``: started early,
    never reached (not counted in the summary)."""


class SessionReport(_Model):
    """What a run in a session did to it."""

    name: str
    new: bool
    """The session did not exist (or had expired): the run started empty."""
    reset: str | None = None
    """Why the session was reset by this run (a limit stopped it), or ``None``."""
    size_bytes: int = 0
    """The session's stored state after the run."""


class SessionEntry(_Model):
    """One session, as ``list_sessions`` shows it (times in Unix seconds)."""

    name: str
    created: float
    last_used: float
    size_bytes: int
    runs: int
    expires: float | None


class SessionsResult(_Model):
    """``list_sessions``: the caller's sessions."""

    sessions: list[SessionEntry]


class SnippetEntry(_Model):
    """One saved snippet (``code`` is left out of listings)."""

    name: str
    tool_id: str
    description: str
    input_schema: dict[str, Any]
    created: float
    updated: float
    shared: bool = False
    """Published by an operator: every caller sees it (else only its owner and the operators do)."""
    code: str | None = None


class SnippetsResult(_Model):
    """``list_snippets``: the saved snippets the caller sees, by name."""

    snippets: list[SnippetEntry]


class PendingCallInfo(_Model):
    """A call that waits for a decision."""

    tool_id: str
    args: dict[str, Any]
    tier: str
    """``read``, ``write`` or ``destructive``."""
    reason: str
    """Which rule (or preset) asks for a decision; for a saved snippet, every tool it names that is asked about."""
    digest: str = ""
    """What approving covers: the tool's definition (a snippet: its code, the tools it names); changed: asked again."""
    snippets: dict[str, str] = Field(default_factory=dict[str, str], exclude_if=lambda v: not v)
    """For a saved snippet, the snippets approving it runs (itself, then those it names): tool id → digest of the
    code judged, shown from ``snippet_code`` (one not there was too much to keep: said, never approved)."""


class ApprovalRequest(_Model):
    """A paused run: what waits for a decision, and how to give it."""

    execution_id: str
    pending: list[PendingCallInfo]
    line: int | None = None
    """The snippet line it stopped at."""
    may_call: list[str] = Field(default_factory=list[str])
    """The tools the snippet names literally: what it may still call."""
    decisions: list[str] = Field(default_factory=lambda: ["approve", "approve_run", "deny", "abort"])
    """``approve`` this call once; ``approve_run``: these tools for the rest of the run; ``deny``:
    the snippet gets a catchable ``approval_denied`` error; ``abort``: the run ends here."""
    expires: float | None = None
    """Unix time after which the paused run is gone."""
    console: str | None = None
    """The run's page in the console, where a person can decide (when ``toolcode.console`` is on)."""
    snippet_code: dict[str, str] = Field(default_factory=dict[str, str], exclude_if=lambda v: not v)
    """The code of the saved snippets the calls cover (their ``snippets``), each once, by digest."""


class PausedEntry(_Model):
    """One paused run, as ``list_paused`` shows it."""

    execution_id: str
    pending: list[PendingCallInfo]
    line: int | None
    session: str | None
    paused_at: float
    expires: float | None
    caller: str | None = None
    """Whose run it is, when it is not the lister's own (an operator sees every caller's)."""
    snippet_code: dict[str, str] = Field(default_factory=dict[str, str], exclude_if=lambda v: not v)
    """The code of the saved snippets the calls cover (their ``snippets``), each once, by digest."""


class PausedResult(_Model):
    """``list_paused``: the caller's paused runs (every caller's, for an operator), oldest first."""

    paused: list[PausedEntry]


class ToolApprovalEntry(_Model):
    """A tool's standing in the quarantine."""

    tool_id: str
    state: Literal["approved", "new", "changed"]
    digest: str
    """The digest of the tool's definition now (what ``approve_tools`` names to approve it)."""
    approved_by: str | None = None
    approved_at: float | None = None


class ToolApprovalsResult(_Model):
    """``approve_tools`` / ``quarantined_tools``: tools approved now, or the quarantine's state."""

    approved: list[str] = Field(default_factory=list[str])
    """Ids approved by this call."""
    tools: list[ToolApprovalEntry] = Field(default_factory=list[ToolApprovalEntry])
    """Each visible tool's standing (``quarantined_tools``)."""

    def digests(self) -> dict[str, str]:
        """``{tool_id: digest}`` of :attr:`tools`: what ``approve_tools`` takes to approve exactly these definitions.

        Approving them approves what was listed: a tool whose definition changed since is refused
        (:class:`~toolcode.exceptions.DefinitionChangedError`).
        """
        return {t.tool_id: t.digest for t in self.tools}


class ExecuteOutcome(_Model):
    """The outcome of ``execute_code``: the value and output, or an error, with the calls made."""

    ok: bool
    value: Any = None
    """``__out`` (or the trailing expression); ``None`` when the run failed."""
    stdout: str = ""
    stderr: str = ""
    error: ErrorInfo | None = None
    calls: CallSummary
    trace: list[TraceEntry] | None = None
    """Every call (``trace="full"``); ``None`` otherwise."""
    truncated: list[str] = Field(default_factory=list[str])
    """What the output budget cut: any of ``value``, ``stdout``, ``stderr``, ``trace``, ``error``."""
    duration_ms: float = 0.0
    session: SessionReport | None = None
    """The session the run used (``None``: a fresh run)."""
    status: Literal["ok", "error", "approval_required"] = "ok"
    """``approval_required``: the run paused at a call that waits for a decision (see ``approval``)."""
    approval: ApprovalRequest | None = None
    """What the paused run waits for, and its ``execution_id`` (``status == "approval_required"``)."""
    stored: list[StoredResultInfo] = Field(default_factory=list[StoredResultInfo])
    """What the output budget cut from the value or stdout, kept whole (read it back by ``ref``)."""
    summary: bool = False
    """Whether the caller asked for the call count and duration on every result (``trace`` ``summary``
    or ``full``); otherwise :func:`~toolcode.outcome_text` shows them only when something failed or was cut."""
