"""About how large a value is as JSON text, in time proportional to the bound asked about, not to the value."""

from __future__ import annotations

from typing import Any, Final, cast

__all__ = ["approx_size"]

_NUMBERS: Final = (int, float, bool)


def approx_size(value: Any, cap: int) -> int:
    """About how many characters ``value`` takes as JSON, counting no further than ``cap``.

    The work is proportional to ``min(size, cap)``, not to the value's size: the walk stops as
    soon as the count passes ``cap``, and then returns ``cap + 1``.
    """
    # ``value.__class__`` on the hot paths: as cheap as ``type()``, and the checker leaves ``Any`` as it is.
    t = value.__class__
    if t is str:
        return len(value) + 2
    if t is dict:
        # Flat objects (most arguments and many results) without the general walk.
        total = 2
        for k, v in value.items():
            tv = v.__class__
            if tv is str:
                total += len(k) + len(v) + 6
            elif tv in _NUMBERS or v is None:
                total += len(k) + 12
            else:
                break
            if total > cap:
                return cap + 1
        else:
            return total
    total = 0
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            total += len(v) + 2
        elif isinstance(v, dict):
            total += 2
            for k, item in cast("dict[Any, Any]", v).items():
                total += len(k) + 4 if isinstance(k, str) else 8
                stack.append(item)
                if total > cap:
                    return cap + 1
        elif isinstance(v, list | tuple):
            items = cast("list[Any]", v)
            stack.extend(items)
            total += 2 + len(items)
        else:
            total += 8
        if total > cap:
            return cap + 1
    return total
