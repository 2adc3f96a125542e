"""Input and output models of the code-mode server's tools; their JSON Schemas go on the wire."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ChainStepIn",
    "DescribeToolIn",
    "DescribeToolOut",
    "ExamplesIn",
    "ExamplesOut",
    "ExecuteCodeIn",
    "ExecuteCodeOut",
    "ExecuteOptions",
    "NamespaceOut",
    "NamespacesIn",
    "NamespacesOut",
    "RunChainIn",
    "RunChainOut",
    "RunToolIn",
    "RunToolOut",
    "SearchHitOut",
    "SearchToolsIn",
    "SearchToolsOut",
    "StepOut",
    "TraceEntry",
]

TraceDetail = Literal["summary", "full", "none"]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchToolsIn(_In):
    query: str = Field(min_length=1, description="What you want to do, in words.")
    limit: int = Field(default=10, ge=1, le=50, description="Maximum number of hits.")
    namespaces: list[str] | None = Field(default=None, description="Only search these namespaces.")


class SearchHitOut(BaseModel):
    id: str
    summary: str
    score: float


class SearchToolsOut(BaseModel):
    hits: list[SearchHitOut]


class NamespacesIn(_In):
    pass


class NamespaceOut(BaseModel):
    name: str
    tool_count: int


class NamespacesOut(BaseModel):
    namespaces: list[NamespaceOut]


class DescribeToolIn(_In):
    tool_id: str = Field(min_length=1, description="Tool id, 'namespace:name'.")
    level: Literal["summary", "schema", "full"] = Field(default="schema", description="How much detail.")


class DescribeToolOut(BaseModel):
    id: str
    level: str
    text: str = Field(description="The documentation, ready to read.")


class ExamplesIn(_In):
    tool_id: str = Field(min_length=1, description="Tool id, 'namespace:name'.")


class ExamplesOut(BaseModel):
    id: str
    examples: list[dict[str, Any]]


class RunToolIn(_In):
    tool_id: str = Field(min_length=1, description="Tool id, 'namespace:name'.")
    args: dict[str, Any] = Field(default_factory=dict[str, Any], description="The tool's arguments.")
    timeout: float | None = Field(default=None, gt=0, le=600, description="Seconds before the call is abandoned.")


class RunToolOut(BaseModel):
    tool_id: str
    value: Any = Field(description="The tool's result.")
    duration_ms: float


class ChainStepIn(_In):
    tool_id: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict[str, Any])
    use_previous: bool = Field(default=False, description="Put the previous step's result under args['previous'].")
    on_error: Literal["abort", "continue"] = "abort"


class RunChainIn(_In):
    steps: list[ChainStepIn] = Field(min_length=1, max_length=50)


class StepOut(BaseModel):
    index: int
    tool_id: str
    ok: bool
    value: Any = None
    error: str | None = None
    duration_ms: float


class RunChainOut(BaseModel):
    steps: list[StepOut]
    aborted: bool
    final: Any = Field(default=None, description="The last successful step's result.")


class ExecuteOptions(_In):
    timeout: float | None = Field(default=None, gt=0, le=600, description="Seconds for the whole program.")
    max_tool_calls: int | None = Field(default=None, ge=1, description="Stop the program after this many calls.")
    allowed_namespaces: list[str] | None = Field(default=None, description="Only these namespaces may be used.")
    trace: TraceDetail = Field(default="summary", description="'full' adds each call's args and result.")


class ExecuteCodeIn(_In):
    code: str = Field(min_length=1, description="Python source. Set __out (or end with an expression).")
    input: dict[str, Any] | None = Field(default=None, description="Data the code reads as `input`.")
    options: ExecuteOptions = Field(default_factory=ExecuteOptions)


class TraceEntry(BaseModel):
    tool_id: str
    ok: bool
    duration_ms: float
    error: str | None = None
    args: dict[str, Any] | None = None
    result: Any = None


class ExecuteCodeOut(BaseModel):
    value: Any = Field(description="What the program returned (__out or its last expression).")
    stdout: str
    trace: list[TraceEntry]
    tool_calls: int
    duration_ms: float
