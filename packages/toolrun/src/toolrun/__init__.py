"""toolrun."""

from toolrun.exceptions import ToolRunError

__all__ = ["ToolRunError"]
