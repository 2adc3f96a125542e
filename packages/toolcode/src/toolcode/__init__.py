"""toolcode: code mode over MCP tools.

Search a large tool catalog, read just the docs needed, and run one short Python program
in a sandbox that calls many tools::

    async with Toolbox.from_config("mcp.json") as box:
        outcome = await box.codemode.execute('__out = run_tool("time:get_current_time", timezone="UTC")')

:class:`CodeMode` is the one core: every operation (search, list, describe, run, chain,
execute) with the result models every door returns. :class:`Executor` runs snippets on a
pluggable :class:`Engine`.
"""

from toolcode._app import UNSANDBOXED_WARNING, ConnectEvent, Toolbox
from toolcode._chain import CHAIN_SCHEMA
from toolcode._core import CodeMode, outcome_text
from toolcode._executor import Executor, ExecutorConfig, RunContext, ToolsFactory
from toolcode._globals import SNIPPET_GLOBALS, SnippetGlobal, error_info
from toolcode._limits import TRUNCATION_MARKER
from toolcode._models import (
    CallFailure,
    CallSummary,
    ChainOutcome,
    ChainStepOutcome,
    DocsResult,
    ErrorInfo,
    ExamplesResult,
    ExecuteOutcome,
    NamespaceEntry,
    NamespacesResult,
    RunToolOutcome,
    SearchHitEntry,
    SearchResult,
    ToolDocEntry,
    ToolEntry,
    ToolListResult,
    TraceEntry,
)
from toolcode._operations import Operations
from toolcode._options import DEFAULT_OPTIONS, UNLIMITED, ExecuteOptions, ResolvedOptions
from toolcode._settings import DEFAULT_TOOLS, META_TOOLS, SETTINGS_SCHEMA, Settings, load_settings
from toolcode._tools import DefaultTools, DocStore
from toolcode._trace import Trace
from toolcode._types import (
    Engine,
    EngineInfo,
    ExecuteParams,
    ExecuteResult,
    LimitName,
    LimitsReport,
    OnToolCall,
    ToolCallRecord,
    Tools,
)
from toolcode._view import CatalogView
from toolcode.engines import MontyEngine, UnsafeInProcessEngine, available_engines, load_engine
from toolcode.exceptions import (
    CodeExecutionError,
    ConfigurationError,
    EngineError,
    ErrorCode,
    InvalidArgumentsError,
    LimitExceededError,
    ToolCodeError,
    ToolError,
)

__all__ = [
    "CHAIN_SCHEMA",
    "DEFAULT_OPTIONS",
    "DEFAULT_TOOLS",
    "META_TOOLS",
    "SETTINGS_SCHEMA",
    "SNIPPET_GLOBALS",
    "TRUNCATION_MARKER",
    "UNLIMITED",
    "UNSANDBOXED_WARNING",
    "CallFailure",
    "CallSummary",
    "CatalogView",
    "ChainOutcome",
    "ChainStepOutcome",
    "CodeExecutionError",
    "CodeMode",
    "ConfigurationError",
    "ConnectEvent",
    "DefaultTools",
    "DocStore",
    "DocsResult",
    "Engine",
    "EngineError",
    "EngineInfo",
    "ErrorCode",
    "ErrorInfo",
    "ExamplesResult",
    "ExecuteOptions",
    "ExecuteOutcome",
    "ExecuteParams",
    "ExecuteResult",
    "Executor",
    "ExecutorConfig",
    "InvalidArgumentsError",
    "LimitExceededError",
    "LimitName",
    "LimitsReport",
    "MontyEngine",
    "NamespaceEntry",
    "NamespacesResult",
    "OnToolCall",
    "Operations",
    "ResolvedOptions",
    "RunContext",
    "RunToolOutcome",
    "SearchHitEntry",
    "SearchResult",
    "Settings",
    "SnippetGlobal",
    "ToolCallRecord",
    "ToolCodeError",
    "ToolDocEntry",
    "ToolEntry",
    "ToolError",
    "ToolListResult",
    "Toolbox",
    "Tools",
    "ToolsFactory",
    "Trace",
    "TraceEntry",
    "UnsafeInProcessEngine",
    "available_engines",
    "error_info",
    "load_engine",
    "load_settings",
    "outcome_text",
]
