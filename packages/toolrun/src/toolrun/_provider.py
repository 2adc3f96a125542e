"""Providers: any other tool source (an HTTP API, a plugin system) behind a two-method protocol."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import anyio
from pydantic_core import PydanticSerializationError, to_jsonable_python

from toolindex import BackendKind, BackendRef, Index, InvalidToolError, Tool
from toolindex.log import get_logger
from toolrun._definitions import masked_listing
from toolrun._gc import collector_paused
from toolrun._redact import mask_secrets
from toolrun._types import BackendResult, ProgressCallback
from toolrun.exceptions import (
    AddressRefusedError,
    BackendUnavailableError,
    InputValidationError,
    NoBackendError,
    ResponseTooLargeError,
    ToolRunError,
    ToolTimeoutError,
)

__all__ = ["Provider", "ProviderBackend"]

_log = get_logger("toolrun.provider")
_GC_PAUSE_TOOLS = 1_000
"""Tools listed from which turning them into ``Tool`` s and registering them pauses the collector."""


@runtime_checkable
class Provider(Protocol):
    """A source of tools other than local functions and MCP servers.

    Contract:
        - ``list_tools`` returns the provider's tools, each a :class:`toolindex.Tool` or an
          MCP-style mapping (``name``, ``description``, ``inputSchema``, ``outputSchema``...).
        - ``call_tool`` runs one tool by the provider's own name and returns its result: any
          JSON-compatible value (it becomes ``structured``), or a :class:`BackendResult` for
          full control (content blocks, ``is_error``).
        - Errors: an exception raised by ``call_tool`` is a tool failure (the runner raises
          ``ToolExecutionError`` chained to it), except ``ToolRunError`` subclasses (such as
          ``BackendUnavailableError``, or ``InputValidationError`` for arguments only the
          provider can judge), which propagate as they are.
        - Concurrency: ``call_tool`` may be called from many tasks at once.
        - Cancellation: cancelling the caller cancels ``call_tool`` at its next ``await``.
        - Ownership: if the provider has an ``aclose()`` coroutine method, the backend
          calls it when closed.
    """

    async def list_tools(self) -> Sequence[Tool | Mapping[str, Any]]:
        """The provider's tools."""
        ...

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> Any:
        """Run one tool and return its result."""
        ...


class ProviderBackend:
    """Wires a :class:`Provider` into the runner's pipeline.

    Tools are registered under ``namespace`` (default: the provider id) with
    ``BackendRef.of_provider(provider_id, tool=<provider's name>)``. A malformed tool is
    skipped with a logged reason; the provider's other tools stay usable. Every registered
    secret (see :func:`~toolrun.register_secrets`) a definition quotes is masked (``***``)
    before the tool is registered, as in results: a tool whose name would change is skipped.
    """

    def __init__(self, provider_id: str, provider: Provider, *, namespace: str | None = None) -> None:
        """Wrap a provider.

        Args:
            provider_id: Identifies the provider in backend references.
            provider: The provider.
            namespace: Namespace for its tools in the index (default: ``provider_id``).
        """
        self.provider_id = provider_id
        self.provider = provider
        self.namespace = namespace or provider_id
        self._closed = False
        self.skipped: dict[str, str] = {}
        """Tools skipped at the last ``attach``: name → reason."""

    @property
    def kind(self) -> BackendKind:
        """Always ``"provider"``."""
        return "provider"

    @property
    def supports_progress(self) -> bool:
        """``False``: the provider protocol has no progress channel."""
        return False

    def handles(self, ref: BackendRef) -> bool:
        """Whether ``ref`` points at this provider.

        Args:
            ref: A backend reference.

        Returns:
            ``True`` for a ``provider`` reference with this provider's id.
        """
        return ref.kind == "provider" and ref.provider == self.provider_id

    async def attach(self, index: Index) -> list[Tool]:
        """List the provider's tools and register them in ``index``.

        Args:
            index: The index to fill.

        Returns:
            The tools registered (malformed ones skipped, see ``skipped``).

        Raises:
            BackendUnavailableError: If listing the tools fails.
        """
        try:
            listed = await self.provider.list_tools()
        except ToolRunError:
            raise
        except Exception as e:  # any failure of foreign code while listing means the provider is unusable
            raise BackendUnavailableError(f"provider:{self.provider_id}", f"list_tools failed: {e}") from e
        with collector_paused(len(listed) >= _GC_PAUSE_TOOLS):
            items: list[tuple[Tool, BackendRef]] = []
            self.skipped = {}
            for entry in masked_listing(listed):
                try:
                    if isinstance(entry, InvalidToolError):
                        raise entry
                    if isinstance(entry, Tool):
                        tool = (
                            entry
                            if entry.namespace == self.namespace
                            else entry.model_copy(update={"namespace": self.namespace})
                        )
                    else:
                        tool = Tool.from_mcp(entry, namespace=self.namespace)
                except InvalidToolError as e:
                    name = mask_secrets(str(entry.get("name", "?"))) if isinstance(entry, Mapping) else "?"
                    self.skipped[name] = str(e)
                    _log.warning("provider.tool_skipped", provider=self.provider_id, tool=name, reason=str(e))
                    continue
                items.append((tool, BackendRef.of_provider(self.provider_id, tool=tool.name)))
            if items:
                index.register_many(items)
        return [t for t, _ in items]

    async def call(
        self,
        ref: BackendRef,
        tool: Tool,
        args: Mapping[str, Any],
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> BackendResult:
        """Call the provider's tool.

        Args:
            ref: A reference this backend handles.
            tool: The tool being run.
            args: Arguments, already validated by the runner.
            timeout: Seconds before ``ToolTimeoutError``; ``None`` for no limit.
            progress: Ignored (providers do not report progress).

        Returns:
            The normalised result.

        Raises:
            NoBackendError: If ``ref`` is not this provider's.
            BackendUnavailableError: If the backend was closed.
            ToolTimeoutError: If ``timeout`` expires.
            ToolRunError: Whatever the provider raises of this family.
        """
        if not self.handles(ref):
            raise NoBackendError(tool.id, [str(ref)])
        if self._closed:
            raise BackendUnavailableError(f"provider:{self.provider_id}", "the backend is closed")
        name = ref.tool or tool.name
        try:
            if timeout is None:
                return await self._call(name, args)
            with anyio.move_on_after(timeout) as scope:
                return await self._call(name, args)
        except (ToolTimeoutError, InputValidationError, ResponseTooLargeError, AddressRefusedError) as e:
            # The provider's own errors know its tool by the provider's name, not by the id the
            # index gives it (a namespace other than the provider's).
            if e.tool_id == tool.id:
                raise
            raise _renamed(e, tool.id) from e
        if scope.cancelled_caught:
            raise ToolTimeoutError(tool.id, timeout)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _call(self, name: str, args: Mapping[str, Any]) -> BackendResult:
        try:
            value = await self.provider.call_tool(name, args)
        except ToolRunError:
            raise
        except Exception as e:  # the provider's failure is a tool-level error, reported as a result
            text = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            return BackendResult(None, ({"type": "text", "text": text},), is_error=True, error=e)
        if isinstance(value, BackendResult):
            return value
        try:
            return BackendResult(to_jsonable_python(value))
        except (PydanticSerializationError, TypeError, ValueError) as e:
            text = f"the result ({type(value).__name__}) cannot be converted to JSON: {e}"
            return BackendResult(None, ({"type": "text", "text": text},), is_error=True, error=e)

    async def aclose(self) -> None:
        """Close the provider (if it has ``aclose``); idempotent."""
        if self._closed:
            return
        self._closed = True
        closer = getattr(self.provider, "aclose", None)
        if closer is not None:
            result = closer()
            if inspect.isawaitable(result):
                await result


def _renamed(
    e: ToolTimeoutError | InputValidationError | ResponseTooLargeError | AddressRefusedError, tool_id: str
) -> ToolTimeoutError | InputValidationError | ResponseTooLargeError | AddressRefusedError:
    """``e`` about the tool the index knows as ``tool_id``."""
    if isinstance(e, ToolTimeoutError):
        return ToolTimeoutError(tool_id, e.timeout)
    if isinstance(e, InputValidationError):  # arguments only the provider can judge (an OpenAPI path value)
        return InputValidationError(tool_id, e.problems)
    if isinstance(e, AddressRefusedError):  # an OpenAPI server the document chose, in this host's network
        return AddressRefusedError(tool_id, e.server or "", e.host, e.address)
    return ResponseTooLargeError(tool_id, e.server, e.limit, e.containers)
