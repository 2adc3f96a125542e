"""The private parts of ``httpx2`` and ``httpcore2`` that the OpenAPI provider relies on (checked on 2.16).

- ``httpx2.AsyncHTTPTransport`` keeps its ``httpcore2.AsyncConnectionPool`` in ``_pool``, and the
  pool opens every connection through its ``_network_backend``, read each time it opens one: the
  provider wraps that backend to check the address each connection of a server a document chose
  goes to (:mod:`~toolrun._openapi_connect`), keeping every other setting of the transport.
- ``httpx2._utils.get_environment_proxies`` reads the proxies of the environment (``HTTP_PROXY``,
  ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``) as the URL patterns a client mounts them on; a
  client given its own transport does not read them, so the provider mounts them itself.

``tests/toolcode/test_compat.py`` fails loudly when an upgrade moves any of these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import httpcore2
import httpx2
from httpx2._utils import get_environment_proxies  # pyright: ignore[reportPrivateImportUsage]

__all__ = ["CHECKED_ON", "environment_proxies", "wrap_network_backend"]

CHECKED_ON: Final = "2.16"
"""The ``httpx2`` and ``httpcore2`` versions (major.minor) these parts were checked on."""


def wrap_network_backend(
    transport: httpx2.AsyncHTTPTransport,
    wrap: Callable[[httpcore2.AsyncNetworkBackend], httpcore2.AsyncNetworkBackend],
) -> None:
    """Open every connection of ``transport`` (made without a proxy) through ``wrap(its backend)``.

    Raises:
        TypeError: If the transport's pool is not a plain connection pool (a proxy's).
    """
    pool = transport._pool  # pyright: ignore[reportPrivateUsage]
    if type(pool) is not httpcore2.AsyncConnectionPool:
        raise TypeError(f"expected a plain connection pool, got {type(pool).__name__}")
    pool._network_backend = wrap(pool._network_backend)  # pyright: ignore[reportPrivateUsage]


def environment_proxies() -> dict[str, str | None]:
    """The environment's proxies: URL pattern (``https://``, ``all://*.example.org``) → proxy URL, ``None`` for none."""
    return get_environment_proxies()
