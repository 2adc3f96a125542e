"""The private parts of ``referencing`` that the OpenAPI converter relies on (checked on referencing 0.36).

``Registry.resolver()`` returns a ``referencing._core.Resolver``, which the package does not
export by name; the converter caches resolved references by the resolver's base URI.
``tests/toolrun/test_compat_referencing.py`` fails loudly when an upgrade moves either.
"""

from __future__ import annotations

from typing import Any

from referencing._core import Resolver  # pyright: ignore[reportPrivateImportUsage]

__all__ = ["Resolver", "base_uri"]


def base_uri(resolver: Resolver[Any]) -> str:
    """The URI the resolver resolves relative references against."""
    return resolver._base_uri  # pyright: ignore[reportPrivateUsage]
