"""Errors raised by toolrun.

Every error derives from :class:`ToolRunError`, so ``except ToolRunError`` catches every failure
of a runner. The three lookup errors are toolindex's, raised as toolrun's own (each is also the
toolindex class of the same name); :data:`INDEX_ERRORS` is the one table that maps them::

    ToolRunError
    ├── ToolNotFoundError         no tool has the id (also toolindex.ToolNotFoundError; suggestions)
    ├── AmbiguousToolIDError      a bare name matches several namespaces (also toolindex's; candidates)
    ├── InvalidToolIDError        the id is malformed (also toolindex.InvalidToolIDError)
    ├── ConfigError               bad server configuration (names the server and the field)
    │   └── AddressRefusedError   an OpenAPI call a document pointed into this host's network was not made
    ├── NoBackendError            the tool has no backend this runner can use
    ├── InputValidationError      args do not match the input schema (JSON path of each problem)
    ├── OutputValidationError     the result does not match the output schema
    ├── InvalidSchemaError        a tool's JSON Schema cannot be used (invalid, refers outside itself)
    │   └── SchemaLimitError      the schema is over one of its bounds (depth, size, $ref expansion, …)
    ├── ToolExecutionError        the tool ran and failed (MCP isError, an exception in a local function)
    │   ├── UpstreamProtocolError the server's reply broke the protocol (invalid JSON, too deep, wrong shape)
    │   └── ResponseTooLargeError the server's reply was over its maxResponseBytes bound (it was not read)
    ├── HTTPStatusError           an HTTP API answered non-2xx (the cause of an OpenAPI tool's ToolExecutionError)
    ├── ToolTimeoutError          the call exceeded its timeout (also a TimeoutError)
    ├── BackendUnavailableError   the backend cannot be reached (server crashed, failed to start)
    ├── StreamNotSupportedError   the backend cannot stream progress
    └── ChainError                a chain is invalid (too many steps, a malformed step)

Messages never carry secrets: the text of ``ConfigError``, ``ToolExecutionError``,
``HTTPStatusError`` and ``BackendUnavailableError`` goes through :func:`toolrun.redact` (URL
credentials, secret-looking parameters and every registered secret value, in any of its
encodings, become ``***``); the problems of an ``OutputValidationError`` are masked like the
result they quote.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import toolindex.exceptions as index_errors
from toolrun._redact import mask_secrets, redact

__all__ = [
    "INDEX_ERRORS",
    "AddressRefusedError",
    "AmbiguousToolIDError",
    "BackendUnavailableError",
    "ChainError",
    "ConfigError",
    "HTTPStatusError",
    "InputValidationError",
    "InvalidSchemaError",
    "InvalidToolIDError",
    "NoBackendError",
    "OutputValidationError",
    "ResponseTooLargeError",
    "SchemaLimitError",
    "StreamNotSupportedError",
    "ToolExecutionError",
    "ToolNotFoundError",
    "ToolRunError",
    "ToolTimeoutError",
    "UpstreamProtocolError",
    "ValidationProblem",
    "from_index_error",
]


class ToolRunError(Exception):
    """Root of every error raised by toolrun."""


class ToolNotFoundError(index_errors.ToolNotFoundError, ToolRunError):
    """No tool has the id: toolindex's error (``tool_id``, ``suggestions``), raised by the runner."""


class AmbiguousToolIDError(index_errors.AmbiguousToolIDError, ToolRunError):
    """A bare name matches tools in several namespaces: toolindex's error (``candidates``), raised by the runner."""


class InvalidToolIDError(index_errors.InvalidToolIDError, ToolRunError):
    """The id is malformed: toolindex's error (``raw``, ``reason``), raised by the runner."""


INDEX_ERRORS: Final[Mapping[type[index_errors.ToolIndexError], type[ToolRunError]]] = {
    index_errors.ToolNotFoundError: ToolNotFoundError,
    index_errors.AmbiguousToolIDError: AmbiguousToolIDError,
    index_errors.InvalidToolIDError: InvalidToolIDError,
}
"""Each toolindex error a runner meets, and the toolrun error it raises in its place."""


def from_index_error(error: index_errors.ToolIndexError) -> ToolRunError:
    """The toolrun error that stands for a toolindex error (:data:`INDEX_ERRORS`), with its attributes.

    An error the table does not name (none of toolindex's lookups raise one) becomes a plain
    :class:`ToolRunError` with its message.
    """
    cls = INDEX_ERRORS.get(type(error))
    if cls is None:
        return ToolRunError(str(error))
    lifted = cls.__new__(cls, *error.args)
    lifted.__dict__.update(vars(error))
    return lifted


class ConfigError(ToolRunError, ValueError):
    """Server configuration is invalid.

    The message names the server and the field, never the offending value.

    Attributes:
        server: The server's name in ``mcpServers`` (``None`` for the file as a whole).
        field: The offending field, or ``None``.
        reason: Why.
    """

    def __init__(self, server: str | None, field: str | None, reason: str) -> None:
        self.server = server
        self.field = field
        self.reason = reason = redact(reason)
        where = "config" if server is None else f"server {server!r}"
        if field:
            where += f" field {field!r}"
        super().__init__(f"{where}: {reason}")


class AddressRefusedError(ConfigError):
    """An OpenAPI call was not made: the server a document chose would be reached in this host's network.

    Without ``baseUrl``, a call to a server URL that the document names on another origin than its
    own connects only to globally reachable addresses; its host here is a name that resolves to a
    loopback, private, link-local or other special-purpose address (``169.254.169.254``, the
    metadata service), or the call would go through a proxy of the environment, which resolves the
    name where the address cannot be checked. Nothing was sent. ``baseUrl`` is the configuration's
    word and may name any address.

    Attributes:
        tool_id: The tool whose call was refused.
        server: The OpenAPI entry's name.
        field: ``"baseUrl"``, the field that would name the address.
        host: The server URL's host (clipped to 100 characters).
        address: The address it resolved to; ``None`` when the call would go through a proxy.
        reason: Why.
    """

    def __init__(self, tool_id: str, server: str, host: str, address: str | None) -> None:
        self.tool_id = tool_id
        self.host = host
        self.address = address
        where = f"its server URL, which the document names on another origin than its own, has the host {host!r}"
        if address is None:
            why = (
                f"{where}, and a proxy of the environment (HTTP_PROXY, HTTPS_PROXY or ALL_PROXY) would carry the "
                "call and resolve that name itself, where the address cannot be checked against this host's "
                "network: list the host in NO_PROXY to connect directly (the address is then checked), or set "
                "baseUrl"
            )
        else:
            why = (
                f"{where}, which resolves to {address}, a loopback, private or link-local address; a document does "
                "not choose to call into this host's network: set baseUrl"
            )
        super().__init__(server, "baseUrl", f"tool {tool_id!r} was not called: {why}")


class NoBackendError(ToolRunError):
    """No configured backend can run the tool.

    Attributes:
        tool_id: The tool.
        refs: The backend references the index holds for it (as strings).
    """

    def __init__(self, tool_id: str, refs: Sequence[str]) -> None:
        self.tool_id = tool_id
        self.refs = list(refs)
        have = ", ".join(self.refs) or "none"
        super().__init__(f"no backend available for tool {tool_id!r} (its backends: {have})")


@dataclass(frozen=True, slots=True)
class ValidationProblem:
    """One schema violation."""

    path: str
    """JSON path of the offending value, e.g. ``$.items[2].name`` (``$`` for the root)."""
    message: str
    """What is wrong."""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class _ValidationError(ToolRunError, ValueError):
    def __init__(self, what: str, tool_id: str, problems: Sequence[ValidationProblem]) -> None:
        self.tool_id = tool_id
        self.problems = list(problems)
        lines = "; ".join(str(p) for p in self.problems[:10])
        more = f" (+{len(self.problems) - 10} more)" if len(self.problems) > 10 else ""
        super().__init__(f"{what} for tool {tool_id!r}: {lines}{more}")


class InputValidationError(_ValidationError):
    """Arguments do not match the tool's input schema.

    Attributes:
        tool_id: The tool.
        problems: Each violation with its JSON path.
    """

    def __init__(self, tool_id: str, problems: Sequence[ValidationProblem]) -> None:
        super().__init__("invalid arguments", tool_id, problems)


class OutputValidationError(_ValidationError):
    """A result does not match the tool's output schema.

    Attributes:
        tool_id: The tool.
        problems: Each violation with its JSON path.
    """

    def __init__(self, tool_id: str, problems: Sequence[ValidationProblem]) -> None:
        super().__init__("result does not match the output schema", tool_id, problems)


class ToolExecutionError(ToolRunError):
    """The tool ran and reported failure.

    Attributes:
        tool_id: The tool.
        message: The tool's own error text (MCP ``isError`` content, or the exception message).
        content: MCP content blocks of the failing result, if any.
    """

    def __init__(self, tool_id: str, message: str, content: Sequence[dict[str, Any]] = ()) -> None:
        self.tool_id = tool_id
        self.message = message = redact(message)
        self.content = tuple(_redact_block(b) for b in content)
        super().__init__(f"tool {tool_id!r} failed: {message}")


def _redact_block(block: dict[str, Any]) -> dict[str, Any]:
    # Error results are upstream text that travels to the caller: every string of the block loses
    # the registered secrets (a resource's text and URI too), and the text what looks like a credential.
    block = mask_secrets(block)
    text = block.get("text")
    if isinstance(text, str) and (clean := redact(text)) != text:
        return {**block, "text": clean}
    return block


class UpstreamProtocolError(ToolExecutionError):
    """The server's reply to a call broke the protocol.

    The reply was not valid JSON, not JSON-RPC, nested too deep to read, or not shaped like a
    ``CallToolResult``. Only that call fails, at once; the session stays usable for the others.

    Attributes:
        tool_id: The tool.
        message: What was wrong with the reply.
    """


class ResponseTooLargeError(ToolExecutionError):
    """The server's reply to a call was larger than the server's ``maxResponseBytes``.

    Or, within that many bytes, it held more arrays and objects than the bound that comes
    with it (``containers``; parsing costs per container, far more than per byte). The reply
    was refused while it was being read, and never held or parsed whole; only that call fails,
    and the session stays usable for the others.

    Attributes:
        tool_id: The tool.
        server: The server's name in ``mcpServers`` (an MCP server or an OpenAPI service).
        limit: The bound, in bytes.
        containers: The bound on arrays and objects the reply crossed, or ``None`` when it was its size.
    """

    def __init__(self, tool_id: str, server: str, limit: int, containers: int | None = None) -> None:
        self.server = server
        self.limit = limit
        self.containers = containers
        if containers is None:
            why = f"is larger than its bound of {limit:,} bytes (maxResponseBytes)"
        else:
            why = (
                f"holds more than {containers:,} arrays and objects, the bound that comes with its "
                f"maxResponseBytes of {limit:,}"
            )
        super().__init__(tool_id, f"the reply of server {server!r} {why}, so it was not read")


class HTTPStatusError(ToolRunError):
    """An HTTP API answered a call with a status other than 2xx.

    An OpenAPI tool's call does not raise it to the caller: the runner raises
    ``ToolExecutionError`` (whose message says the same) chained to it, so
    ``err.__cause__.status`` tells a 404 from a 503.

    Attributes:
        status: The HTTP status code.
        method: The request's method.
        url: The request's URL, redacted, without its query.
        body: The start of the response body as text (redacted, at most 1,000 characters).
        reason: The status line's reason phrase (redacted, at most 100 characters): upstream text
            too, which a service or a proxy may fill with what it was sent.
    """

    def __init__(self, status: int, method: str, url: str, body: str, reason: str = "") -> None:
        self.status = status
        self.method = method
        self.url = url = redact(url)
        self.body = body = redact(body)
        # Redacted before the cut, which could leave a secret too short to be recognised.
        self.reason = reason = _clipped(redact(reason), _MAX_REASON)
        head = f"HTTP {status}{f' {reason}' if reason else ''} from {method} {url}"
        super().__init__(f"{head}: {body}" if body else head)


_MAX_REASON: Final = 100
"""Most characters of an HTTP reason phrase kept (a standard one has at most 31)."""


def _clipped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ToolTimeoutError(ToolRunError, TimeoutError):
    """The call did not finish within its timeout.

    Attributes:
        tool_id: The tool.
        timeout: The timeout in seconds.
    """

    def __init__(self, tool_id: str, timeout: float) -> None:
        self.tool_id = tool_id
        self.timeout = timeout
        super().__init__(f"tool {tool_id!r} timed out after {timeout:g} s")


class BackendUnavailableError(ToolRunError):
    """The backend cannot be reached (failed to start, crashed, connection refused).

    Attributes:
        backend: The backend's description (e.g. ``mcp:git``).
        reason: What went wrong.
        fix: What the operator can do about it, when the cause is known (a server that never
            started: install the command, give it an environment variable, allow more time);
            ``None`` when trying again later is the remedy (a server that crashed is restarted by
            the next call).
    """

    def __init__(self, backend: str, reason: str, *, fix: str | None = None) -> None:
        self.backend = backend
        self.reason = reason = redact(reason)
        self.fix = redact(fix) if fix is not None else None
        super().__init__(f"backend {backend} unavailable: {reason}")


class StreamNotSupportedError(ToolRunError):
    """The tool's backend cannot report progress, so it cannot be streamed."""

    def __init__(self, tool_id: str, backend: str) -> None:
        self.tool_id = tool_id
        self.backend = backend
        super().__init__(f"tool {tool_id!r}: backend {backend} does not support streaming")


class ChainError(ToolRunError, ValueError):
    """A chain is invalid before it runs (too many steps, a malformed step)."""


class InvalidSchemaError(ToolRunError, ValueError):
    """A JSON Schema cannot be used.

    It is not valid JSON Schema, names an unknown dialect, or refers outside its own document
    (nothing is ever fetched).

    Attributes:
        pointer: JSON pointer of the offending part inside the schema (``""`` for the root).
        reason: Why, clipped (it never echoes a large part of the schema).
    """

    def __init__(self, reason: str, pointer: str = "") -> None:
        self.reason = reason
        self.pointer = pointer
        super().__init__(f"{self._what()} at {_where(pointer)}: {reason}")

    def _what(self) -> str:
        return "not valid JSON Schema"


class SchemaLimitError(InvalidSchemaError):
    """A JSON Schema is over one of the bounds of :class:`toolrun.SchemaLimits`.

    Attributes:
        limit: The bound's name, e.g. ``max_depth``.
        maximum: Its value.
        pointer: Where the bound was crossed (a JSON pointer, clipped when very long).
        reason: What was found there.
    """

    def __init__(self, limit: str, maximum: int, reason: str, pointer: str = "") -> None:
        self.limit = limit
        self.maximum = maximum
        super().__init__(reason, pointer)

    def _what(self) -> str:
        return f"over the {self.limit} bound ({self.maximum:,})"


def _where(pointer: str) -> str:
    # "properties/a/type", as users read it in messages; "(root)" for the whole schema.
    return pointer.lstrip("/") or "(root)"
