"""The check before the run: a snippet's tool calls, checked before anything runs (see :mod:`._checker`)."""

from toolcode._typecheck._checker import TypeChecker
from toolcode._typecheck._diagnostic import Diagnostic
from toolcode._typecheck._ty import GLOBALS_STUB, LARGE_CHARS

__all__ = ["GLOBALS_STUB", "LARGE_CHARS", "Diagnostic", "TypeChecker"]
