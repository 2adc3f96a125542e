"""Every backend a configuration describes: MCP servers and OpenAPI documents, by one mechanism."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager

from toolrun._config import ServersConfig
from toolrun._mcp import MCPBackend
from toolrun._openapi import OpenAPIProvider
from toolrun._provider import ProviderBackend

__all__ = ["backends_from_config", "open_backends"]


def backends_from_config(config: ServersConfig) -> list[MCPBackend | ProviderBackend]:
    """One backend per enabled entry of the configuration, under the entry's name.

    An :class:`MCPBackend` per MCP server, then a :class:`ProviderBackend` over an
    :class:`OpenAPIProvider` per ``openapi`` entry, each kind in configuration order.

    Args:
        config: Loaded with :func:`~toolrun.load_config`.

    Returns:
        The backends (not yet entered or connected).
    """
    backends: list[MCPBackend | ProviderBackend] = [MCPBackend(name, cfg) for name, cfg in config.enabled().items()]
    backends += [
        ProviderBackend(name, OpenAPIProvider.from_config(name, cfg)) for name, cfg in config.enabled_openapi().items()
    ]
    return backends


@asynccontextmanager
async def open_backends(config: ServersConfig) -> AsyncGenerator[list[MCPBackend | ProviderBackend]]:
    """Enter every backend of :func:`backends_from_config`; close them all on exit.

    Entering connects nothing: each server starts (each document is read) on its first
    ``attach`` or call.

    >>> async with open_backends(load_config("mcp.json")) as backends, DefaultRunner(index, backends) as runner:
    ...     await runner.attach()

    Args:
        config: Loaded with :func:`~toolrun.load_config`.

    Yields:
        The entered backends, in the order of :func:`backends_from_config`.
    """
    backends = backends_from_config(config)
    async with AsyncExitStack() as stack:
        for b in backends:
            if isinstance(b, MCPBackend):
                await stack.enter_async_context(b)
            else:
                stack.push_async_callback(b.aclose)
        yield backends
