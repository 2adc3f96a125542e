"""The check before the run: a snippet's tool calls, checked before anything runs (see :mod:`._checker`)."""

from toolcode._typecheck._calls import Scan, ToolCall, parsed
from toolcode._typecheck._checker import TypeChecker
from toolcode._typecheck._diagnostic import Diagnostic
from toolcode._typecheck._ty import GLOBALS_STUB, MAX_CHARS

__all__ = ["GLOBALS_STUB", "MAX_CHARS", "Diagnostic", "Scan", "ToolCall", "TypeChecker", "parsed"]
