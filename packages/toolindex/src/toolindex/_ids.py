"""Tool ids: ``namespace:name``, ``namespace:name:version`` or a bare ``name``."""

from __future__ import annotations

import re
import reprlib
from dataclasses import dataclass

from toolindex._limits import MAX_ID_CHARS
from toolindex.exceptions import InvalidToolIDError

__all__ = ["NAME_PATTERN", "ToolID", "validate_name", "validate_namespace"]

#: MCP tool names: 1-128 characters of letters, digits, ``_``, ``.`` and ``-``.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.\-]{1,128}\Z")
_NAMESPACE_PATTERN = re.compile(r"^[A-Za-z0-9_.\-/@ ]{1,128}\Z")
_VERSION_PATTERN = re.compile(r"^[A-Za-z0-9_.+\-]{1,64}\Z")


def validate_name(name: str, *, raw: str | None = None) -> str:
    """Check a tool name against the MCP naming rule.

    Args:
        name: The name to check.
        raw: The whole id the name came from, for the error message.

    Returns:
        The name, unchanged.

    Raises:
        InvalidToolIDError: If the name is empty, too long or has a forbidden character.
    """
    if NAME_PATTERN.match(name):
        return name
    src = name if raw is None else raw
    if not name:
        raise InvalidToolIDError(src, "the tool name is empty")
    if len(name) > 128:
        raise InvalidToolIDError(src, f"the tool name has {len(name)} characters; at most 128 are allowed")
    bad = sorted({c for c in name if not re.match(r"[A-Za-z0-9_.\-]", c)})
    raise InvalidToolIDError(
        src, f"the tool name contains {''.join(bad)!r}; only letters, digits, '_', '.', '-' are allowed"
    )


def validate_namespace(namespace: str, *, raw: str | None = None) -> str:
    """Check a namespace: 1-128 characters, no ``:``.

    Args:
        namespace: The namespace to check.
        raw: The whole id the namespace came from, for the error message.

    Returns:
        The namespace, unchanged.

    Raises:
        InvalidToolIDError: If the namespace is empty, too long, or contains ``:`` or control characters.
    """
    if _NAMESPACE_PATTERN.match(namespace) and namespace.strip() == namespace:
        return namespace
    src = namespace if raw is None else raw
    if not namespace:
        raise InvalidToolIDError(src, "the namespace is empty")
    if ":" in namespace:
        raise InvalidToolIDError(src, "a namespace may not contain ':'")
    if len(namespace) > 128:
        raise InvalidToolIDError(src, "the namespace is longer than 128 characters")
    raise InvalidToolIDError(
        src, "the namespace may use letters, digits, '_', '.', '-', '/', '@' and inner spaces only"
    )


@dataclass(frozen=True, slots=True, order=True)
class ToolID:
    """A parsed tool id.

    ``str(ToolID)`` formats it back: ``ns:name``, ``ns:name:version`` or ``name``.
    """

    namespace: str | None
    """The namespace, or ``None`` for a bare name."""
    name: str
    """The tool name (MCP rules: 1-128 of ``[A-Za-z0-9_.-]``)."""
    version: str | None = None
    """A version, or ``None`` for "the latest"."""

    def __post_init__(self) -> None:
        raw = self.format()
        validate_name(self.name, raw=raw)
        if self.namespace is not None:
            validate_namespace(self.namespace, raw=raw)
        if self.version is not None:
            if self.namespace is None:
                raise InvalidToolIDError(raw, "a version needs a namespace (use 'namespace:name:version')")
            if not _VERSION_PATTERN.match(self.version):
                raise InvalidToolIDError(raw, "the version may use letters, digits, '_', '.', '+', '-' only")

    @classmethod
    def parse(cls, raw: str) -> ToolID:
        """Parse ``name``, ``namespace:name`` or ``namespace:name:version``.

        Args:
            raw: The id string.

        Returns:
            The parsed id.

        Raises:
            InvalidToolIDError: If the string is longer than any valid id, has more than three
                parts, or any part is invalid.
        """
        if not isinstance(raw, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidToolIDError(reprlib.repr(raw), f"expected a string, got {type(raw).__name__}")
        if len(raw) > MAX_ID_CHARS:
            # Checked first so that a megabyte-long id costs no more than a short one.
            raise InvalidToolIDError(
                raw,
                f"the id has {len(raw):,} characters; at most {MAX_ID_CHARS} are allowed "
                "(namespace 128, name 128, version 64)",
            )
        parts = raw.split(":")
        if len(parts) == 1:
            return cls(None, parts[0])
        if len(parts) == 2:
            if not parts[0]:
                raise InvalidToolIDError(raw, "the namespace before ':' is empty")
            return cls(parts[0], parts[1])
        if len(parts) == 3:
            if not parts[2]:
                raise InvalidToolIDError(raw, "the version after the second ':' is empty")
            if not parts[0]:
                raise InvalidToolIDError(raw, "the namespace before ':' is empty")
            return cls(parts[0], parts[1], parts[2])
        raise InvalidToolIDError(raw, f"expected at most 3 parts separated by ':', got {len(parts)}")

    @property
    def is_bare(self) -> bool:
        """Whether the id has no namespace."""
        return self.namespace is None

    @property
    def key(self) -> str:
        """``namespace:name`` (or the bare name), without the version."""
        return self.name if self.namespace is None else f"{self.namespace}:{self.name}"

    def format(self) -> str:
        """Format the id as a string."""
        if self.namespace is None:
            return self.name
        if self.version is None:
            return f"{self.namespace}:{self.name}"
        return f"{self.namespace}:{self.name}:{self.version}"

    def __str__(self) -> str:
        return self.format()
