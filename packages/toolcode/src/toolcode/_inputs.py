"""Input models of the code-mode tools: their JSON Schemas go on the wire, in every door.

The MCP server and the agent-framework integrations (:mod:`toolcode.integrations`) publish the
same schemas (compacted by :func:`toolcode._metatools.input_schema`). They declare names, types
and defaults for the client; the values are checked by the core's operations (one place for
every door), so constraints are not repeated here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolcode._chain import one_tool_key

__all__ = [
    "INPUT_MODELS",
    "ChainStepIn",
    "DeleteOutcome",
    "DescribeToolIn",
    "ExamplesIn",
    "ExecuteCodeIn",
    "ListToolsIn",
    "NamespacesIn",
    "ResetOutcome",
    "RunChainIn",
    "RunToolIn",
    "SaveSnippetIn",
    "SearchToolsIn",
    "SessionIn",
    "SnippetNameIn",
]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchToolsIn(_In):
    query: str  # the tool's description says what it is: what you want to do
    limit: int = 10
    detail: Literal["name", "summary", "schema"] = Field(default="summary", description="'schema' adds signatures.")


class ListToolsIn(_In):
    namespace: str | None = None
    cursor: str | None = None
    limit: int = 100


class NamespacesIn(_In):
    pass


class DescribeToolIn(_In):
    tool_id: str | list[str] = Field(description="An id 'namespace:name', or a list of ids.")
    level: Literal["summary", "schema", "full", "module"] = "schema"


class ExamplesIn(_In):
    tool_id: str
    max: int = 3


class RunToolIn(_In):
    tool_id: str
    args: dict[str, Any] = Field(default_factory=dict[str, Any])
    timeout: float | None = None


class ChainStepIn(_In):
    model_config = ConfigDict(extra="forbid", json_schema_extra=one_tool_key)

    tool_id: str | None = None
    tool: str | None = Field(default=None, description="Same as tool_id.")
    args: dict[str, Any] = Field(
        default_factory=dict[str, Any], description="'{{steps.N.path}}' / '{{ID.path}}': an earlier result."
    )
    id: str | None = None
    use_previous: bool | str = Field(default=False, description="true, an argument name, or 'merge'.")
    on_error: Literal["abort", "continue"] = "abort"


class RunChainIn(_In):
    steps: list[ChainStepIn]


class ExecuteCodeIn(_In):
    code: str
    input: Any = Field(default=None, description="JSON the code reads as `input`.")
    # A free-form object on the wire (its keys in one line cost far fewer tokens than a nested
    # schema); the core checks it against ExecuteOptions and names any bad key.
    options: dict[str, Any] | None = Field(
        default=None,
        description="timeout (s), max_tool_calls, max_output_chars (0: no limit), allowed_namespaces, "
        "trace: summary|full|none",
    )
    session: str | None = Field(default=None, description="Name: variables persist between runs.")


class SessionIn(_In):
    session: str


class NoArgsIn(_In):
    pass


class SaveSnippetIn(_In):
    name: str = Field(description="Lowercase identifier; the tool becomes snippets:<name>.")
    code: str = Field(description="The program; it reads its arguments as `input`.")
    description: str
    input_schema: dict[str, Any] | None = Field(default=None, description="JSON Schema of the arguments.")


class SnippetNameIn(_In):
    name: str


class ResumeIn(_In):
    execution_id: str
    decision: Literal["approve", "approve_run", "deny", "abort"]


class ReadResultIn(_In):
    ref: str
    offset: int = 0
    limit: int | None = Field(default=None, description="Characters (default 100,000).")


class ApproveToolsIn(_In):
    tools: list[str] = Field(description="Tool ids or globs ('github:*') whose current definitions to approve.")


class ResetOutcome(BaseModel):
    session: str
    reset: bool


class DeleteOutcome(BaseModel):
    name: str
    deleted: bool


INPUT_MODELS: dict[str, type[BaseModel]] = {
    "search_tools": SearchToolsIn,
    "list_tools": ListToolsIn,
    "list_namespaces": NamespacesIn,
    "describe_tool": DescribeToolIn,
    "list_tool_examples": ExamplesIn,
    "run_tool": RunToolIn,
    "run_chain": RunChainIn,
    "execute_code": ExecuteCodeIn,
    "list_sessions": NoArgsIn,
    "reset_session": SessionIn,
    "save_snippet": SaveSnippetIn,
    "list_snippets": NoArgsIn,
    "delete_snippet": SnippetNameIn,
    "resume_execution": ResumeIn,
    "list_paused": NoArgsIn,
    "approve_tools": ApproveToolsIn,
    "read_result": ReadResultIn,
}
"""Each code-mode tool's input model, by tool name."""
