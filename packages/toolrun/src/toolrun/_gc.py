"""Pausing the cyclic garbage collector around a large batch of allocations that all survive."""

from __future__ import annotations

import gc
from collections.abc import Generator
from contextlib import contextmanager

__all__ = ["LARGE_DOCUMENT_BYTES", "LARGE_DOCUMENT_PATHS", "collector_paused"]

LARGE_DOCUMENT_BYTES = 1024 * 1024
"""An OpenAPI document from this many bytes is parsed and built with the collector paused."""
LARGE_DOCUMENT_PATHS = 200
"""Or, given already parsed, from this many paths."""


@contextmanager
def collector_paused(large: bool) -> Generator[None]:
    """Pause the cyclic garbage collector while ``large`` work allocates objects that all survive.

    Parsing a large OpenAPI document, making its tools and registering them allocate millions
    of objects and free no reference cycles: the collector would rescan the growing heap again
    and again and find nothing (Microsoft Graph's 20 MB description: a third of its parse and
    build time). Paused only when ``large``, and turned back on only if it was on: it is
    process-wide, and a pause that began earlier (another thread's) is left to end it.
    """
    if not large or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
