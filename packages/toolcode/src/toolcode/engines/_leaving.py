"""What leaves the sandbox for the host: a result, a call's arguments, a session's state.

Each is checked on its way out, never cut silently: for depth (Monty cuts a value nested deeper
than its limit, leaving a marker) and for size as the host writes it out (shared parts counted
each time they appear).
"""

from __future__ import annotations

from collections.abc import Iterable, Sized
from typing import Any, Final, cast

from toolcode.exceptions import LimitExceededError, ToolError

__all__ = ["APART_ITEMS", "MAX_ITEMS", "Outgrown", "check_depth", "cut_path"]

_CONTAINERS = (dict, list, tuple)
_CUT = "<deeply nested>"


MAX_ITEMS: Final = 1_000_000
"""Items a value leaving the sandbox may hold, a shared one counted each time it appears: the host
writes it out that way (``[a] * 10_000`` of a 1,000-item ``a`` is small in the sandbox and 10
million items to the host, which would copy and walk them all on the loop other callers share)."""


APART_ITEMS: Final = 4_096
"""Items a value's walk takes on the event loop: a larger value (``run_tools`` of thousands of calls,
a list of a million items) is walked in a worker thread, as walking it in place held the loop other
callers share for up to a second (:class:`Outgrown`)."""


class Outgrown(Exception):
    """A walk in place passed :data:`APART_ITEMS`: walk the value again apart."""


def cut_path(value: Any, max_depth: int, max_items: int = MAX_ITEMS) -> str | None:
    """The JSON path where a value leaving the sandbox was cut for depth, if it was.

    Only containers are walked, strings are compared only near the depth where the cut happens,
    and a path is spelt out only for a cut, so shallow data costs next to nothing.

    Raises:
        LimitExceededError: ``max_value_items``: the value holds more than :data:`MAX_ITEMS`
            items, counted as the host would write it out (the walk stops there).
        Outgrown: The value holds more than ``max_items`` items, fewer than :data:`MAX_ITEMS`.
    """
    near = max(0, max_depth - 4)
    # Each entry: a value, its depth, and how it was reached (the parent's link and the key).
    stack: list[tuple[Any, int, _Link | None]] = [(value, 0, None)]
    items_seen = 0
    while stack:
        v, depth, link = stack.pop()
        pairs: Iterable[tuple[Any, Any]]
        if mapping := isinstance(v, dict):
            pairs = cast("dict[Any, Any]", v).items()
        elif isinstance(v, list | tuple):
            pairs = enumerate(cast("list[Any]", v))
        else:
            if depth >= near and v == _CUT:
                return _spelt(link)
            continue
        items_seen += len(cast("Sized", v))
        if items_seen > max_items and max_items < MAX_ITEMS:
            raise Outgrown
        if items_seen > MAX_ITEMS:
            raise LimitExceededError(
                "max_value_items", MAX_ITEMS, None, "each shared value counted every time it appears; return less"
            )
        child = depth + 1
        push = stack.append
        if child < near:  # far from the cut: only containers with something in them matter
            for k, x in pairs:
                if x and isinstance(x, dict | list | tuple):
                    push((cast(Any, x), child, (link, k, mapping)))
        else:
            for k, x in pairs:
                if isinstance(x, dict | list | tuple) or x == _CUT:
                    push((cast(Any, x), child, (link, k, mapping)))
    return None


_Link = tuple[Any, Any, bool]
"""How a value was reached: its parent's link (``None`` at the top), its key or index there, and
whether that is a key (of a dict) or an index (of a list)."""


def _spelt(link: _Link | None) -> str:
    parts: list[str] = []
    while link is not None:
        link, key, mapping = link
        parts.append(f".{str(key)[:40]}" if mapping else f"[{key}]")
    path = "$" + "".join(reversed(parts))
    return path if len(path) <= 120 else f"{path[:40]}…{path[-60:]}"


def check_depth(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any], max_depth: int, *, in_place: bool = False
) -> None:
    """Refuse arguments that Monty cut for depth on their way out of the sandbox (never silently).

    ``in_place``: the walk runs on the event loop, and takes at most :data:`APART_ITEMS` items of
    each argument there.

    Raises:
        ToolError: An argument was cut (``validate_input``).
        Outgrown: ``in_place``, and an argument holds more items: check again in a worker thread.
    """
    # Most calls pass a tool id and flat keywords: nothing to walk (a plain loop: this runs per call).
    for a in args:
        if type(a) in _CONTAINERS:
            break
    else:
        for a in kwargs.values():
            if type(a) in _CONTAINERS:
                break
        else:
            return
    named = [*((str(i + 1), a) for i, a in enumerate(args)), *((repr(k), a) for k, a in kwargs.items())]
    for label, a in named:
        try:
            limit = APART_ITEMS if in_place else MAX_ITEMS
            cut = cut_path(a, max_depth - 1, limit) if isinstance(a, dict | list | tuple) else None
        except LimitExceededError:
            raise ToolError(
                "",
                f"{name}(): argument {label} holds more than {MAX_ITEMS:,} items (each shared value counted every "
                "time it appears)",
                "validate_input",
            ) from None
        if cut is not None:
            raise ToolError(
                "", f"{name}(): argument {label} is nested deeper than {max_depth} levels at {cut}", "validate_input"
            )
