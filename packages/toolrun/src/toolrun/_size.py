"""How large a value is as JSON: its text, in time proportional to the bound asked about; its containers, at C speed."""

from __future__ import annotations

from typing import Any, Final, cast

__all__ = ["CONTAINERS_PER_MIB", "approx_size", "container_bound", "containers_at_most"]

CONTAINERS_PER_MIB: Final = 65_536
"""Most arrays and objects in one upstream message, per MiB of the server's ``maxResponseBytes``.

Parsing costs per container far more than per byte: 4 MiB of ``[],[],…`` (1.3 million empty
lists) took 0.6 to 0.9 s of ``json.loads``, holding the GIL (no other caller ran, whatever thread
parsed it), and a few hundred MB across the layers a result goes through, while 4 MiB of
ordinary records took about 60 to 100 ms. The bound (262,144 for the default 4 MiB, never fewer
than 65,536) is one container per 16 bytes: a message at the bound parses in about the time of
4 MiB of ordinary records (41 to 53 ms against 58 to 105 ms, measured on one machine), and ordinary
results stay well under it. Measured, bytes per container: records of 5 fields 116; of 2 small
fields 28; GeoJSON coordinate pairs 25; pairs of integers 17; text holding Python code 225 and
holding JSON 130 (the count includes brackets inside strings). A server whose results are
denser raises its ``maxResponseBytes``, and the bound with it.
"""
_MIB: Final = 1024 * 1024

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


def container_bound(max_bytes: int) -> int:
    """The most arrays and objects one message of a server may hold, given its ``maxResponseBytes``."""
    return max(CONTAINERS_PER_MIB, max_bytes * CONTAINERS_PER_MIB // _MIB)


def containers_at_most(text: bytes | str) -> int:
    """An upper bound of the arrays and objects in the JSON ``text``, at C speed.

    Its ``[`` and ``{``, those inside strings included (telling them apart would need a scan in Python).
    """
    if isinstance(text, bytes):
        return text.count(b"[") + text.count(b"{")
    return text.count("[") + text.count("{")
