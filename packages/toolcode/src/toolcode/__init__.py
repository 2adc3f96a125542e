"""toolcode: code mode over MCP tools.

Search a large tool catalog, read just the docs needed, and run one short Python program
in a sandbox that calls many tools::

    async with Toolbox.from_config("mcp.json") as box:
        outcome = await box.codemode.execute('__out = run_tool("time:get_current_time", timezone="UTC")')

:class:`Toolbox` connects the configured servers and builds the :class:`Services` bundle;
:class:`CodeMode` is the one core every door goes through; :class:`Executor` runs snippets on
a pluggable :class:`Engine`. The result models are in :mod:`toolcode.models`, the errors in
:mod:`toolcode.exceptions`, engines in :mod:`toolcode.engines`, the MCP server in
:mod:`toolcode.server`, the state stores in :mod:`toolcode.state`, the conformance suite in
:mod:`toolcode.testing`.
"""

from toolcode._app import ConnectEvent, Toolbox
from toolcode._core import CodeMode
from toolcode._errors import error_info
from toolcode._executor import Executor, Listeners
from toolcode._globals import SNIPPET_GLOBALS
from toolcode._options import DEFAULT_OPTIONS, ExecuteOptions
from toolcode._outcome import outcome_text
from toolcode._services import DocStore, Services, Stores
from toolcode._settings import Settings, load_settings
from toolcode._types import (
    Engine,
    EngineInfo,
    ExecuteParams,
    ExecuteResult,
    LimitsReport,
    OnToolCall,
    ToolCallRecord,
    Tools,
)
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
from toolcode.models import ErrorInfo, ExecuteOutcome

__all__ = [
    "DEFAULT_OPTIONS",
    "SNIPPET_GLOBALS",
    "CodeExecutionError",
    "CodeMode",
    "ConfigurationError",
    "ConnectEvent",
    "DocStore",
    "Engine",
    "EngineError",
    "EngineInfo",
    "ErrorCode",
    "ErrorInfo",
    "ExecuteOptions",
    "ExecuteOutcome",
    "ExecuteParams",
    "ExecuteResult",
    "Executor",
    "InvalidArgumentsError",
    "LimitExceededError",
    "LimitsReport",
    "Listeners",
    "MontyEngine",
    "OnToolCall",
    "Services",
    "Settings",
    "Stores",
    "ToolCallRecord",
    "ToolCodeError",
    "ToolError",
    "Toolbox",
    "Tools",
    "UnsafeInProcessEngine",
    "available_engines",
    "error_info",
    "load_engine",
    "load_settings",
    "outcome_text",
]
