"""Pausing the cyclic garbage collector around a large batch of allocations that all survive.

Shared by the toolkit's packages (toolrun pauses it while a large OpenAPI document becomes
tools); not part of toolindex's public API.
"""

from __future__ import annotations

import gc
from collections.abc import Generator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused(large: bool) -> Generator[None]:
    """Pause the cyclic garbage collector while ``large`` work allocates objects that all survive.

    Registering thousands of tools (or parsing a large document and making its tools) allocates
    millions of objects and frees no reference cycles: the collector would rescan the growing
    heap again and again and find nothing (a quarter to a third of the time of such a batch).
    Paused only when ``large``, and turned back on only if it was on: it is process-wide, and a
    pause that began earlier (another thread's) is left to end it.

    At the end, what the pause allocated is moved to the oldest generation (``gc.freeze()``
    then ``gc.unfreeze()``, two list splices) rather than left in the youngest, where the first
    collection after the pause would walk every one of those objects once more (Microsoft
    Graph's 11,000 tools: 0.1 s per pause) and find them all alive. They are still collected
    like any long-lived object. Skipped when the application froze objects itself: unfreezing
    would hand its frozen objects back to the collector.
    """
    if not large or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        gc.enable()
