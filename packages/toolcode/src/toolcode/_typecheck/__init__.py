"""The check before the run: what the snippet's text shows of its tool calls, checked before anything runs.

- :mod:`._calls` finds the tools a snippet names, in both call styles;
- :mod:`._arguments` checks each call's arguments with the run's own validator, on what the text settles;
- :mod:`._source` and :mod:`._verdicts` let ``ty`` check what the snippet does with typed results,
  keeping only what would certainly fail;
- :mod:`._checker` puts them together (:class:`TypeChecker`).
"""

from toolcode._typecheck._checker import GLOBALS_STUB, TypeChecker
from toolcode._typecheck._diagnostic import Diagnostic

__all__ = ["GLOBALS_STUB", "Diagnostic", "TypeChecker"]
