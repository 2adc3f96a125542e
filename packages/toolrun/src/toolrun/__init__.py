"""toolrun: run tools on local functions, MCP servers and providers."""

from toolrun._config import HttpServerConfig, ServerConfig, ServersConfig, StdioServerConfig, load_config
from toolrun._local import LocalBackend, Progress
from toolrun._mcp import MCPBackend, backends_from_config, open_backends
from toolrun._provider import Provider, ProviderBackend
from toolrun._runner import DEFAULT_MAX_CHAIN_STEPS, BackendChooser, DefaultRunner, ResultRecorder
from toolrun._types import (
    Backend,
    BackendResult,
    ChainResult,
    ChainStep,
    OnError,
    ProgressCallback,
    ProgressEvent,
    Runner,
    RunResult,
    StepResult,
    ValidationPolicy,
)
from toolrun._validation import DEFAULT_VALIDATION_POLICY, CompiledSchema
from toolrun.exceptions import (
    BackendUnavailableError,
    ChainError,
    ConfigError,
    InputValidationError,
    NoBackendError,
    OutputValidationError,
    StreamNotSupportedError,
    ToolExecutionError,
    ToolNotFoundError,
    ToolRunError,
    ToolTimeoutError,
    ValidationProblem,
)

__all__ = [
    "DEFAULT_MAX_CHAIN_STEPS",
    "DEFAULT_VALIDATION_POLICY",
    "Backend",
    "BackendChooser",
    "BackendResult",
    "BackendUnavailableError",
    "ChainError",
    "ChainResult",
    "ChainStep",
    "CompiledSchema",
    "ConfigError",
    "DefaultRunner",
    "HttpServerConfig",
    "InputValidationError",
    "LocalBackend",
    "MCPBackend",
    "NoBackendError",
    "OnError",
    "OutputValidationError",
    "Progress",
    "ProgressCallback",
    "ProgressEvent",
    "Provider",
    "ProviderBackend",
    "ResultRecorder",
    "RunResult",
    "Runner",
    "ServerConfig",
    "ServersConfig",
    "StdioServerConfig",
    "StepResult",
    "StreamNotSupportedError",
    "ToolExecutionError",
    "ToolNotFoundError",
    "ToolRunError",
    "ToolTimeoutError",
    "ValidationPolicy",
    "ValidationProblem",
    "backends_from_config",
    "load_config",
    "open_backends",
]
