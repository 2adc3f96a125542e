"""Errors raised by toolrun.

Every error derives from :class:`ToolRunError`; ``ToolNotFoundError`` is toolindex's own,
re-exported here, so it is also a ``ToolIndexError``::

    ToolRunError
    ├── ConfigError               bad server configuration (names the server and the field)
    ├── NoBackendError            the tool has no backend that this runner can use
    ├── InputValidationError      args do not match the input schema (JSON path of each problem)
    ├── OutputValidationError     the result does not match the output schema
    ├── ToolExecutionError        the tool ran and failed (MCP isError, an exception in a local function)
    ├── ToolTimeoutError          the call exceeded its timeout (also a TimeoutError)
    ├── BackendUnavailableError   the backend cannot be reached (server crashed, failed to start)
    ├── StreamNotSupportedError   the backend cannot stream progress
    └── ChainError                a chain is invalid (too many steps, bad step)
    toolindex.ToolNotFoundError   (re-exported) no such tool
"""

from __future__ import annotations

from toolindex.exceptions import ToolNotFoundError

__all__ = ["ToolNotFoundError", "ToolRunError"]


class ToolRunError(Exception):
    """Root of every error raised by toolrun (except the re-exported ``ToolNotFoundError``)."""
