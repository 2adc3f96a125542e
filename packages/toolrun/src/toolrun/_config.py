"""Server configuration: the standard ``{"mcpServers": {...}}`` JSON that MCP clients use.

>>> cfg = load_config({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}})
>>> cfg.servers["time"].command
'uvx'
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolindex import InvalidToolError, Tool
from toolrun._redact import MASK, looks_secret, redact_url, register_secrets
from toolrun.exceptions import ConfigError

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MCP_TIMEOUT",
    "HttpServerConfig",
    "OpenAPIServerConfig",
    "ServerConfig",
    "ServersConfig",
    "StdioServerConfig",
    "base_url_problem",
    "expand_vars",
    "header_secrets",
    "load_config",
    "url_secrets",
]

DEFAULT_MCP_TIMEOUT = 60.0
"""Seconds a call to an MCP server may take when neither the call nor the server's config says."""
DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
"""Bytes of one response read at most (an MCP server's message, an HTTP API's body); a larger one fails its call."""

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?\}")

# Synonyms other MCP clients write for the two transports.
_TYPES: dict[str, Literal["stdio", "http", "openapi"]] = {
    "stdio": "stdio",
    "openapi": "openapi",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamableHttp": "http",
}
# pydantic names a field by its Python name; errors name it as the config file spells it.
_ALIASES = {"base_url": "baseUrl", "output_schema": "outputSchema", "max_response_bytes": "maxResponseBytes"}


class _EntryBase(BaseModel):
    # Unknown keys are ignored: clients store their own settings (autoApprove, ...) next to ours.
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    disabled: bool = False
    """A disabled server is kept in the config but never started."""
    # A factory, so the module default is read when a config is made (tests lower it).
    timeout: float | None = Field(default_factory=lambda: DEFAULT_MCP_TIMEOUT, ge=0, allow_inf_nan=False)
    """Per-call timeout in seconds when the call gives none (default 60). ``0`` (or an explicit
    JSON ``null``) asks for no limit; leaving the key out never does. Stored as ``None`` for no limit."""
    connect_timeout: float = Field(default=30.0, gt=0, alias="connectTimeout")
    """Seconds allowed for starting the server and the MCP handshake (for an OpenAPI entry:
    for fetching its document)."""
    max_response_bytes: int = Field(default=DEFAULT_MAX_RESPONSE_BYTES, gt=0, alias="maxResponseBytes")
    """The largest response read (default 4 MiB): a larger one fails its call while it is being
    read, and is never kept whole. For an MCP server: every message it sends (a tool's result, a
    page of its tool list)."""

    @field_validator("timeout", mode="after")
    @classmethod
    def _zero_is_no_limit(cls, v: float | None) -> float | None:
        return None if v == 0 else v

    def secret_values(self) -> list[str]:
        """Values of this entry that must never appear in errors or logs (see :func:`~toolrun.redact`)."""
        return []

    def __repr_args__(self) -> Any:
        # A config in a log line or a traceback must not print its secrets.
        for name, value in super().__repr_args__():
            if name in ("env", "headers", "query") and isinstance(value, dict):
                yield name, dict.fromkeys(cast(dict[str, str], value), MASK)
            elif name in ("url", "openapi", "base_url") and isinstance(value, str):
                yield name, redact_url(value)
            else:
                yield name, value


class _ServerBase(_EntryBase):
    protocol: Literal["auto", "legacy"] = "auto"
    """``auto`` tries the 2026-07-28 protocol and falls back to the 2025-11-25 handshake;
    ``legacy`` goes straight to the handshake."""


class StdioServerConfig(_ServerBase):
    """A server started as a child process that speaks MCP over its stdin and stdout."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    """The executable (looked up on ``PATH``)."""
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict[str, str])
    """Extra environment for the child, over a minimal inherited set (see ``inherit_env``)."""
    cwd: str | None = None
    """Working directory of the child."""
    inherit_env: bool = Field(default=False, alias="inheritEnv")
    """Pass this process's whole environment to the child instead of the minimal set."""
    expose_stderr: bool = Field(default=False, alias="exposeStderr")
    """Quote the last lines of the child's stderr in errors that reach callers. Off by default:
    a server may print its tokens there, so its stderr goes to the operator's log only."""

    def secret_values(self) -> list[str]:
        """Every ``env`` value: a server's environment is where its credentials live."""
        return list(self.env.values())

    @field_validator("args", mode="before")
    @classmethod
    def _check_args(cls, v: Any) -> Any:
        # A single string would otherwise be rejected with pydantic's "valid tuple" wording.
        if not isinstance(v, list | tuple) or not all(isinstance(a, str) for a in cast(list[Any], v)):
            raise ValueError("must be a list of strings")
        return tuple(cast(list[str], v))


class HttpServerConfig(_ServerBase):
    """A server reached over streamable HTTP."""

    type: Literal["http"] = "http"
    url: str
    """Endpoint URL (``http://`` or ``https://``)."""
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    """Headers sent with every request (e.g. ``Authorization``)."""

    @field_validator("url")
    @classmethod
    def _check_url(cls, v: str) -> str:
        if not re.match(r"^https?://[^\s/]+", v):
            raise ValueError("must be an http:// or https:// URL")
        return v

    def secret_values(self) -> list[str]:
        """Header values (and the credential after ``Bearer``), URL credentials, secret query values."""
        return [*header_secrets(self.headers), *url_secrets(self.url)]


def header_secrets(headers: Mapping[str, str]) -> list[str]:
    """Every header value, and the credential after an authorization scheme (``Bearer abc`` → ``abc``)."""
    out: list[str] = []
    for value in headers.values():
        out.append(value)
        scheme, _, credential = value.strip().partition(" ")
        if credential and scheme.isalpha():
            out.append(credential.strip())
    return out


def base_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an OpenAPI entry's ``baseUrl`` (``None`` when it can).

    Calls append the operation's path to it, so it is an ``http(s)`` URL without a query or
    fragment (parameters sent with every call go in ``query``).
    """
    if not re.match(r"^https?://[^\s/?#]+", url):
        return "must be an http:// or https:// URL"
    if "?" in url or "#" in url:
        return "must not have a query or fragment (parameters for every call go in 'query')"
    return None


def url_secrets(url: str) -> list[str]:
    """A URL's user name and password, and its query and fragment values whose names look secret."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    out = [p for p in (parts.username, parts.password) if p]
    for query in (parts.query, parts.fragment):
        out += [v for k, v in parse_qsl(query, keep_blank_values=False) if looks_secret(k)]
    return out


class OpenAPIServerConfig(_EntryBase):
    """An HTTP API described by an OpenAPI 3.0/3.1 document: one tool per operation.

    Lives in ``mcpServers`` next to the MCP servers, told apart by its ``openapi`` key (or
    ``"type": "openapi"``); see :class:`~toolrun.OpenAPIProvider` for what becomes of it.
    """

    type: Literal["openapi"] = "openapi"
    openapi: str = Field(min_length=1)
    """The document: a file path (relative to the config file's folder) or an ``http(s)://`` URL."""
    base_url: str | None = Field(default=None, alias="baseUrl")
    """Where calls go (default: the document's first server URL)."""
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    """Headers sent with every call (``Authorization: Bearer ${TOKEN}``, ``X-API-Key: ${KEY}``);
    header parameters of these names are not arguments."""
    query: dict[str, str] = Field(default_factory=dict[str, str])
    """Query parameters sent with every call (``{"api_key": "${KEY}"}``), all secrets; query
    parameters of these names are not arguments."""
    include: tuple[str, ...] = ()
    """Globs over tool names or ``operationId`` s: only matching operations become tools (default: all)."""
    tags: tuple[str, ...] = ()
    """Only operations with one of these tags become tools (default: all)."""
    output_schema: bool = Field(default=True, alias="outputSchema")
    """Whether tools declare their success response's schema (checked per the runner's policy)."""

    @field_validator("openapi")
    @classmethod
    def _check_document(cls, v: str) -> str:
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", v) and not re.match(r"^https?://[^\s/]+", v):
            raise ValueError("must be a file path or an http:// or https:// URL")
        return v

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, v: str | None) -> str | None:
        if v is not None and (problem := base_url_problem(v)):
            raise ValueError(problem)
        return v

    @field_validator("include", "tags", mode="before")
    @classmethod
    def _check_globs(cls, v: Any) -> Any:
        if not isinstance(v, list | tuple) or not all(isinstance(a, str) for a in cast(list[Any], v)):
            raise ValueError("must be a list of strings")
        return tuple(cast(list[str], v))

    def secret_values(self) -> list[str]:
        """Header values (and credentials after a scheme), ``query`` values, URL credentials, secret query values."""
        urls = [u for u in (self.openapi, self.base_url) if u is not None]
        return [*header_secrets(self.headers), *self.query.values(), *(s for u in urls for s in url_secrets(u))]


ServerConfig = StdioServerConfig | HttpServerConfig
"""One configured MCP server."""


class ServersConfig(BaseModel):
    """Every configured server by name (disabled ones included): MCP servers and OpenAPI documents."""

    model_config = ConfigDict(frozen=True)

    servers: dict[str, ServerConfig] = Field(default_factory=dict[str, ServerConfig])
    """The MCP servers."""
    openapi: dict[str, OpenAPIServerConfig] = Field(default_factory=dict[str, OpenAPIServerConfig])
    """The OpenAPI entries (``{"openapi": "spec.yaml", ...}``)."""

    def enabled(self) -> dict[str, ServerConfig]:
        """The MCP servers that are not ``disabled``, in configuration order."""
        return {k: v for k, v in self.servers.items() if not v.disabled}

    def enabled_openapi(self) -> dict[str, OpenAPIServerConfig]:
        """The OpenAPI entries that are not ``disabled``, in configuration order."""
        return {k: v for k, v in self.openapi.items() if not v.disabled}


def expand_vars(value: str, env: Mapping[str, str], *, server: str | None = None, field: str | None = None) -> str:
    """Replace ``${VAR}`` and ``${VAR:-default}`` with values from ``env``.

    Args:
        value: The text to expand.
        env: Where variables come from (usually ``os.environ``).
        server: Server name, for the error message.
        field: Field name, for the error message.

    Returns:
        The expanded text.

    Raises:
        ConfigError: If a variable without a default is not set.
    """

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        got = env.get(name)
        if got is not None and (got or default is None):
            if looks_secret(name):
                register_secrets([got])
            return got
        if default is not None:
            return default
        raise ConfigError(server, field, f"environment variable {name!r} is not set (use ${{{name}:-default}})")

    return _VAR.sub(sub, value) if "${" in value else value


def check_server_name(name: str) -> None:
    """Check that a server name can be its tools' namespace.

    Raises:
        ConfigError: If it cannot (empty, too long, contains ``:`` or control characters).
    """
    try:
        Tool.validated(name="probe", namespace=name)
    except InvalidToolError as e:
        raise ConfigError(name, None, f"invalid server name ({e.reason}); it becomes the tools' namespace") from None


def _expand(data: Any, env: Mapping[str, str], server: str, path: str) -> Any:
    if isinstance(data, str):
        return expand_vars(data, env, server=server, field=path)
    if isinstance(data, list):
        items = cast(list[Any], data)
        return [_expand(v, env, server, f"{path}[{i}]") for i, v in enumerate(items)]
    if isinstance(data, dict):
        d = cast(dict[str, Any], data)
        return {k: _expand(v, env, server, f"{path}.{k}" if path else k) for k, v in d.items()}
    return data


def _server(name: str, raw: Any, env: Mapping[str, str], base_dir: Path | None) -> ServerConfig | OpenAPIServerConfig:
    check_server_name(name)
    if not isinstance(raw, dict):
        raise ConfigError(name, None, f"must be an object, got {type(raw).__name__}")
    data = cast(dict[str, Any], raw)
    has_cmd, has_url, has_doc = "command" in data, "url" in data, "openapi" in data
    kind = data.get("type")
    if kind is not None:
        if not isinstance(kind, str) or kind not in _TYPES:
            hint = " (SSE is not supported; use streamable HTTP)" if kind == "sse" else ""
            raise ConfigError(name, "type", f"unknown server type{hint}; expected 'stdio', 'http' or 'openapi'")
        kind = _TYPES[kind]
    if sum((has_cmd, has_url, has_doc)) > 1:
        keys = (("command", has_cmd), ("url", has_url), ("openapi", has_doc))
        given = " and ".join(repr(k) for k, has in keys if has)
        field = "command" if has_cmd else "url"
        raise ConfigError(name, field, f"give one of 'command' (stdio), 'url' (HTTP) or 'openapi', not {given}")
    if kind is None:
        if not (has_cmd or has_url or has_doc):
            raise ConfigError(name, None, "needs 'command' (stdio), 'url' (HTTP) or 'openapi' (an OpenAPI document)")
        kind = "stdio" if has_cmd else "http" if has_url else "openapi"
    data = {**data, "type": kind}
    # Disabled servers are kept but never started, so their variables need not be set.
    if data.get("disabled") is not True:
        data = cast(dict[str, Any], _expand(data, env, name, ""))
    model = {"stdio": StdioServerConfig, "http": HttpServerConfig, "openapi": OpenAPIServerConfig}[kind]
    try:
        server = model.model_validate(data)
    except ValidationError as e:
        err = e.errors(include_input=False, include_url=False)[0]
        field = ".".join(str(p) for p in err["loc"]) or None
        if field in _ALIASES:
            field = _ALIASES[field]
        reason = err["msg"].removeprefix("Value error, ")
        # Not chained: pydantic's own message quotes the offending value, which may be a secret.
        raise ConfigError(name, field, reason) from None
    if isinstance(server, OpenAPIServerConfig) and base_dir is not None:
        doc = server.openapi
        if not re.match(r"^https?://", doc) and not Path(doc).expanduser().is_absolute():
            server = server.model_copy(update={"openapi": str(base_dir / doc)})
    if not server.disabled:
        register_secrets(server.secret_values())
    return server


def load_config(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    env: Mapping[str, str] | None = None,
    base_dir: str | os.PathLike[str] | None = None,
) -> ServersConfig:
    """Load the standard MCP client configuration.

    Accepts ``{"mcpServers": {"name": {...}}}`` where each server is either
    ``{"command", "args", "env", "cwd", "exposeStderr"}`` (stdio) or ``{"url", "headers"}``
    (streamable HTTP), optionally with ``"type"``, ``"disabled"``, ``"timeout"`` (seconds per
    call, default 60, ``0`` for no limit) and ``"connectTimeout"``. An entry with ``"openapi"``
    (a document's path or URL) is an HTTP API instead (:class:`OpenAPIServerConfig`: ``baseUrl``,
    ``headers``, ``query``, ``include``, ``tags``, ``outputSchema``, ``maxResponseBytes``). ``${VAR}`` and
    ``${VAR:-default}`` in any string are replaced from the environment. Other top-level keys
    are ignored.

    Every secret the configuration holds (header values, ``env`` values, URL credentials,
    values of ``${VAR}`` whose name looks secret) is registered with
    :func:`~toolrun.register_secrets`, so no error or log line of toolrun shows it.

    Args:
        source: A path to a JSON file, or the already-parsed mapping.
        env: Variables for ``${VAR}`` expansion (default: ``os.environ``).
        base_dir: Folder that relative ``openapi`` document paths start from (default: the
            config file's folder; for a mapping, the working directory at load time).

    Returns:
        The typed configuration.

    Raises:
        ConfigError: If the file cannot be read or parsed, or a server is invalid; the error
            names the server and the field, never the value.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    if isinstance(source, Mapping):
        data: Any = source
        folder = Path(base_dir) if base_dir is not None else Path.cwd()
    else:
        path = Path(source)
        folder = Path(base_dir) if base_dir is not None else path.absolute().parent
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise ConfigError(None, None, f"cannot read {str(path)!r}: {e.strerror or e}") from e
        except json.JSONDecodeError as e:
            raise ConfigError(None, None, f"{str(path)!r} is not valid JSON: {e}") from e
    if not isinstance(data, Mapping):
        raise ConfigError(None, None, f"the configuration must be a JSON object, got {type(data).__name__}")
    top = cast(Mapping[str, Any], data)
    servers = top.get("mcpServers")
    if servers is None:
        raise ConfigError(None, "mcpServers", "missing (expected {'mcpServers': {'name': {...}}})")
    if not isinstance(servers, Mapping):
        raise ConfigError(None, "mcpServers", f"must be an object, got {type(servers).__name__}")
    items = cast(Mapping[str, Any], servers)
    mcp: dict[str, ServerConfig] = {}
    apis: dict[str, OpenAPIServerConfig] = {}
    for key, raw in items.items():
        entry = _server(str(key), raw, environ, folder)
        if isinstance(entry, OpenAPIServerConfig):
            apis[str(key)] = entry
        else:
            mcp[str(key)] = entry
    return ServersConfig(servers=mcp, openapi=apis)
