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
    "DEFAULT_MCP_TIMEOUT",
    "HttpServerConfig",
    "ServerConfig",
    "ServersConfig",
    "StdioServerConfig",
    "expand_vars",
    "load_config",
]

DEFAULT_MCP_TIMEOUT = 60.0
"""Seconds a call to an MCP server may take when neither the call nor the server's config says."""

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?\}")

# Synonyms other MCP clients write for the two transports.
_TYPES: dict[str, Literal["stdio", "http"]] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamableHttp": "http",
}


class _ServerBase(BaseModel):
    # Unknown keys are ignored: clients store their own settings (autoApprove, ...) next to ours.
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    disabled: bool = False
    """A disabled server is kept in the config but never started."""
    # A factory, so the module default is read when a config is made (tests lower it).
    timeout: float | None = Field(default_factory=lambda: DEFAULT_MCP_TIMEOUT, ge=0, allow_inf_nan=False)
    """Per-call timeout in seconds when the call gives none (default 60). ``0`` (or an explicit
    JSON ``null``) asks for no limit; leaving the key out never does. Stored as ``None`` for no limit."""
    connect_timeout: float = Field(default=30.0, gt=0, alias="connectTimeout")
    """Seconds allowed for starting the server and the MCP handshake."""
    protocol: Literal["auto", "legacy"] = "auto"
    """``auto`` tries the 2026-07-28 protocol and falls back to the 2025-11-25 handshake;
    ``legacy`` goes straight to the handshake."""

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
            if name in ("env", "headers") and isinstance(value, dict):
                yield name, dict.fromkeys(cast(dict[str, str], value), MASK)
            elif name == "url" and isinstance(value, str):
                yield name, redact_url(value)
            else:
                yield name, value


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
        out: list[str] = []
        for value in self.headers.values():
            out.append(value)
            scheme, _, credential = value.strip().partition(" ")
            if credential and scheme.isalpha():
                out.append(credential.strip())
        try:
            parts = urlsplit(self.url)
        except ValueError:
            return out
        out += [p for p in (parts.username, parts.password) if p]
        for query in (parts.query, parts.fragment):
            out += [v for k, v in parse_qsl(query, keep_blank_values=False) if looks_secret(k)]
        return out


ServerConfig = StdioServerConfig | HttpServerConfig
"""One configured server."""


class ServersConfig(BaseModel):
    """Every configured server by name (disabled ones included)."""

    model_config = ConfigDict(frozen=True)

    servers: dict[str, ServerConfig] = Field(default_factory=dict[str, ServerConfig])

    def enabled(self) -> dict[str, ServerConfig]:
        """The servers that are not ``disabled``, in configuration order."""
        return {k: v for k, v in self.servers.items() if not v.disabled}


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


def _server(name: str, raw: Any, env: Mapping[str, str]) -> ServerConfig:
    check_server_name(name)
    if not isinstance(raw, dict):
        raise ConfigError(name, None, f"must be an object, got {type(raw).__name__}")
    data = cast(dict[str, Any], raw)
    has_cmd, has_url = "command" in data, "url" in data
    kind = data.get("type")
    if kind is not None:
        if not isinstance(kind, str) or kind not in _TYPES:
            hint = " (SSE is not supported; use streamable HTTP)" if kind == "sse" else ""
            raise ConfigError(name, "type", f"unknown server type{hint}; expected 'stdio' or 'http'")
        kind = _TYPES[kind]
    if has_cmd and has_url:
        raise ConfigError(name, "command", "give either 'command' (stdio) or 'url' (HTTP), not both")
    if kind is None:
        if not (has_cmd or has_url):
            raise ConfigError(name, None, "needs 'command' (stdio) or 'url' (HTTP)")
        kind = "stdio" if has_cmd else "http"
    data = {**data, "type": kind}
    # Disabled servers are kept but never started, so their variables need not be set.
    if data.get("disabled") is not True:
        data = cast(dict[str, Any], _expand(data, env, name, ""))
    model = StdioServerConfig if kind == "stdio" else HttpServerConfig
    try:
        server = model.model_validate(data)
    except ValidationError as e:
        err = e.errors(include_input=False, include_url=False)[0]
        field = ".".join(str(p) for p in err["loc"]) or None
        reason = err["msg"].removeprefix("Value error, ")
        # Not chained: pydantic's own message quotes the offending value, which may be a secret.
        raise ConfigError(name, field, reason) from None
    if not server.disabled:
        register_secrets(server.secret_values())
    return server


def load_config(
    source: str | os.PathLike[str] | Mapping[str, Any], *, env: Mapping[str, str] | None = None
) -> ServersConfig:
    """Load the standard MCP client configuration.

    Accepts ``{"mcpServers": {"name": {...}}}`` where each server is either
    ``{"command", "args", "env", "cwd", "exposeStderr"}`` (stdio) or ``{"url", "headers"}``
    (streamable HTTP), optionally with ``"type"``, ``"disabled"``, ``"timeout"`` (seconds per
    call, default 60, ``0`` for no limit) and ``"connectTimeout"``. ``${VAR}`` and
    ``${VAR:-default}`` in any string are replaced from the environment. Other top-level keys
    are ignored.

    Every secret the configuration holds (header values, ``env`` values, URL credentials,
    values of ``${VAR}`` whose name looks secret) is registered with
    :func:`~toolrun.register_secrets`, so no error or log line of toolrun shows it.

    Args:
        source: A path to a JSON file, or the already-parsed mapping.
        env: Variables for ``${VAR}`` expansion (default: ``os.environ``).

    Returns:
        The typed configuration.

    Raises:
        ConfigError: If the file cannot be read or parsed, or a server is invalid; the error
            names the server and the field, never the value.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    if isinstance(source, Mapping):
        data: Any = source
    else:
        path = Path(source)
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
    return ServersConfig(servers={str(k): _server(str(k), v, environ) for k, v in items.items()})
