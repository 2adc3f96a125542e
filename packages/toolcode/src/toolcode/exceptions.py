"""Errors raised by toolcode.

Every error derives from :class:`ToolCodeError`::

    ToolCodeError
    ├── CodeExecutionError    syntax or runtime error in the snippet (line, column, type, message)
    ├── ConfigurationError    invalid executor configuration or parameters (names the field)
    └── LimitExceededError    a limit stopped the run (which limit, its value, what was reached)
"""

from __future__ import annotations

__all__ = ["ToolCodeError"]


class ToolCodeError(Exception):
    """Root of every error raised by toolcode."""
