"""The private parts of ``pydantic-monty`` that toolcode relies on (checked on pydantic-monty 1.4.0).

The worker pool is started through toolrun's watchdog launcher, which needs the path of the
``monty`` worker binary as pydantic-monty itself resolves it (``MONTY_BIN``, or the environment's
scripts folder). ``tests/toolcode/test_compat.py`` fails loudly when an upgrade moves it.
"""

from __future__ import annotations

from pydantic_monty._binary import find_monty_binary  # pyright: ignore[reportPrivateUsage]

__all__ = ["find_monty_binary"]
