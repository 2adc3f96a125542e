"""toolcode: code mode over MCP tools.

Search a large tool catalog, read just the docs needed, and run one short Python program
in a sandbox that calls many tools::

    async with Executor(ExecutorConfig(index=index, store=store, runner=runner)) as ex:
        result = await ex.execute(ExecuteParams(code='run_tool("time:get_current_time", timezone="UTC")'))
"""

from toolcode._app import ConnectEvent, Toolbox
from toolcode._executor import Executor, ExecutorConfig
from toolcode._limits import TRUNCATION_MARKER
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
from toolcode.engines import MontyEngine, UnsafeInProcessEngine, available_engines, load_engine
from toolcode.exceptions import (
    CodeExecutionError,
    ConfigurationError,
    EngineError,
    LimitExceededError,
    ToolCodeError,
    ToolError,
)

__all__ = [
    "TRUNCATION_MARKER",
    "CodeExecutionError",
    "ConfigurationError",
    "ConnectEvent",
    "DefaultTools",
    "DocStore",
    "Engine",
    "EngineError",
    "EngineInfo",
    "ExecuteParams",
    "ExecuteResult",
    "Executor",
    "ExecutorConfig",
    "LimitExceededError",
    "LimitName",
    "LimitsReport",
    "MontyEngine",
    "OnToolCall",
    "ToolCallRecord",
    "ToolCodeError",
    "ToolError",
    "Toolbox",
    "Tools",
    "Trace",
    "UnsafeInProcessEngine",
    "available_engines",
    "load_engine",
]
