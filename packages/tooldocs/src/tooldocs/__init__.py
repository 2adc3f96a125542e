"""tooldocs."""

from tooldocs.exceptions import ToolDocsError

__all__ = ["ToolDocsError"]
