"""Pausing the cyclic garbage collector around a large batch of allocations that all survive."""

from __future__ import annotations

from toolindex._gc import collector_paused

__all__ = ["LARGE_DOCUMENT_BYTES", "LARGE_DOCUMENT_PATHS", "collector_paused"]

LARGE_DOCUMENT_BYTES = 1024 * 1024
"""An OpenAPI document from this many bytes is parsed and built with the collector paused."""
LARGE_DOCUMENT_PATHS = 200
"""Or, given already parsed, from this many paths."""
