"""The check before the run: a snippet's tool calls, checked before anything runs (see :mod:`._checker`)."""

from toolcode._typecheck._checker import TypeChecker
from toolcode._typecheck._diagnostic import Diagnostic
from toolcode._typecheck._ty import GLOBALS_STUB, runs_for

__all__ = ["GLOBALS_STUB", "Diagnostic", "TypeChecker", "runs_for"]
