"""toolcode."""

from toolcode.exceptions import ToolCodeError

__all__ = ["ToolCodeError"]
