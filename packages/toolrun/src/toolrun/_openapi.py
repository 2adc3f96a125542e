"""OpenAPIProvider: an HTTP API described by an OpenAPI 3.0/3.1 document, one tool per operation.

>>> provider = OpenAPIProvider("petstore", "petstore.yaml", base_url="http://127.0.0.1:8080")
>>> async with DefaultRunner(index, [ProviderBackend("petstore", provider)]) as runner:
...     await runner.attach()
...     pet = await runner.run("petstore:getPetById", {"petId": 1})

The tools are built by :func:`~toolrun._openapi_tools.build_tools` (names, schemas, ``$ref``
resolution); this module reads the document and makes the calls: real HTTP with ``httpx2``,
a timeout on the whole call (connecting, sending and reading), no redirects followed, a cap on
the bytes of a response that are read, credentials sent to one origin only, every request
URL checked to be its operation's path template with its segments filled
(:mod:`~toolrun._openapi_target`), and a server the document chose on another origin than its own
connected to only on a globally reachable address (:mod:`~toolrun._openapi_connect`).
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import os
import re
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final, cast
from urllib.parse import quote, quote_plus, urljoin

import anyio
import anyio.to_thread
import httpx2

from toolindex.log import get_logger
from toolrun._config import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MCP_TIMEOUT,
    OpenAPIServerConfig,
    base_url_problem,
    check_server_name,
    header_secrets,
    url_secrets,
)
from toolrun._gc import LARGE_DOCUMENT_BYTES, LARGE_DOCUMENT_PATHS, collector_paused
from toolrun._http_inflate import IDENTITY, UnreadableEncodingError, body_chunks
from toolrun._openapi_connect import AddressRefused, public_client
from toolrun._openapi_document import (
    MAX_DOCUMENT_BYTES,
    fetch_document,
    is_url,
    parse_document,
    plain_document,
    read_file,
)
from toolrun._openapi_target import PathError, PathTemplate, non_public_host, origin
from toolrun._openapi_tools import BuiltTools, Operation, ParamSpec, build_tools, is_method_override, wire_key
from toolrun._redact import redact, redact_url, register_secrets
from toolrun._size import container_bound, containers_at_most
from toolrun._types import BackendResult
from toolrun._validation import json_path
from toolrun.exceptions import (
    AddressRefusedError,
    BackendUnavailableError,
    ConfigError,
    HTTPStatusError,
    InputValidationError,
    ResponseTooLargeError,
    ToolTimeoutError,
    UpstreamProtocolError,
    ValidationProblem,
)

__all__ = ["OpenAPIProvider"]

_EXCERPT_CHARS: Final = 1_000
_SHOWN_URL: Final = 200
_HEADER_UNSAFE = re.compile(r"[\r\n\x00]")
_SHOWN_KEY: Final = 100

_log = get_logger("toolrun.openapi")
_NAMED_IN_SUMMARY = 5
"""Tools named in the one warning about tools kept without their output schema."""


class OpenAPIProvider:
    """A :class:`~toolrun.Provider` whose tools are the operations of an OpenAPI 3.0/3.1 document.

    Wrap it in a :class:`~toolrun.ProviderBackend` (``backends_from_config`` does that for an
    ``openapi`` entry of the config). ``list_tools`` reads the document (a file, an
    ``http(s)`` URL or an already-parsed mapping) and builds one tool per operation:

    - arguments: one per parameter (path, query, header, cookie), plus the JSON or form
      body's properties as arguments of their own when its schema is a plain object and no
      name collides, else the whole body as the argument ``body``;
    - the result: a JSON response's value (``structured``); any other text as a text block;
      no body as ``None``.

    A call that gets a status other than 2xx fails (``ToolExecutionError`` with the status and
    the start of the body, chained to :class:`~toolrun.HTTPStatusError`; a redirect is not
    followed); a call that takes longer than ``timeout`` raises ``ToolTimeoutError``; a server
    that cannot be reached raises ``BackendUnavailableError``; a response over
    ``max_response_bytes`` fails. A path parameter fills exactly one segment of the operation's
    path: a value that would make it empty, ``.`` or ``..``, or hold ``.`` or ``..`` between
    slashes once decoded, is refused with ``InputValidationError`` naming its argument, before
    any request. So is an object whose
    keys become names of the request's own (an exploded ``form`` query parameter's keys, the
    top-level fields of a ``body`` argument) when a key is a method override (``_method``,
    ``X-HTTP-Method-Override``…, which servers read as the request's method) or, for a query
    parameter, the name of another query parameter of the call (declared or configured).

    Credentials (``headers``, ``query``) go to one origin only: ``base_url``'s, or without it
    the origin the document was fetched from. An operation whose server is elsewhere (or a
    document read from a file or given as a mapping, without ``base_url``) is a
    ``ConfigError`` naming ``baseUrl`` when credentials are configured.

    Without ``base_url``, a server URL the document names on another origin than its own is the
    document's choice alone: a special-purpose address in it is refused when the tools are built,
    and its calls connect only to globally reachable addresses, checked on the address connected
    to (a name that resolves into this host's network, or is rebound there, is refused with
    :class:`~toolrun.AddressRefusedError` before anything is sent; so is such a call that a proxy
    of the environment would carry).

    Concurrency: calls may run from many tasks at once (pooled HTTP clients: one for ``base_url``
    and the document's own origin, one for the servers the document chose elsewhere).
    Ownership: :meth:`aclose` closes the HTTP clients (``ProviderBackend`` calls it).
    """

    def __init__(
        self,
        name: str,
        document: str | os.PathLike[str] | Mapping[str, Any],
        *,
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        query: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT_MCP_TIMEOUT,
        load_timeout: float = 30.0,
        include: Sequence[str] = (),
        tags: Sequence[str] = (),
        output_schemas: bool = True,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_document_bytes: int = MAX_DOCUMENT_BYTES,
    ) -> None:
        """Describe the API; nothing is read or connected until :meth:`list_tools`.

        Args:
            name: The API's name (its tools' namespace in a ``ProviderBackend``; used in errors).
            document: Path or ``http(s)`` URL of the document (JSON or YAML), or its parsed content.
            base_url: Where calls go (default: the first server URL the document declares for
                the operation, a relative one resolved against the document's URL); no query
                or fragment.
            headers: Sent with every call (authorization), and with the document's request when
                it is on the credentials' origin; the values are registered as secrets, and
                header parameters of these names (in any case) are not arguments.
            query: Query parameters sent with every call (``{"api_key": key}``); the values are
                registered as secrets, and query parameters of these names are not arguments.
                Not sent when the document is fetched from a URL.
            timeout: Seconds a call may take in all (connecting, sending, reading); ``None``
                for no limit.
            load_timeout: Seconds fetching the document from a URL may take in all (connecting
                and every read, however slowly the bytes arrive).
            include: Globs over tool names or ``operationId`` s; only matching operations
                become tools (default: all).
            tags: Only operations with one of these tags become tools (default: all).
            output_schemas: Whether tools declare their success response's schema.
            max_response_bytes: Most bytes of a response read; a larger one fails the call.
            max_document_bytes: Most bytes of the document read.

        Raises:
            ConfigError: If ``name`` cannot be a namespace, or ``base_url`` is not an ``http(s)``
                URL or has a query or fragment.
        """
        check_server_name(name)
        if base_url is not None and (problem := base_url_problem(base_url)):
            raise ConfigError(name, "baseUrl", problem)
        if timeout is not None and not timeout > 0:
            raise ConfigError(name, "timeout", "must be positive (None for no limit)")
        self.name = name
        self._document = document
        self._base_url = base_url
        self._headers = dict(headers or {})
        self._query = dict(query or {})
        self._timeout = timeout
        self._load_timeout = load_timeout
        self._include = tuple(include)
        self._tags = tuple(tags)
        self._output_schemas = output_schemas
        self._max_response = max_response_bytes
        self._max_document = max_document_bytes
        self._document_url: str | None = None
        self._targets: dict[str, PathTemplate] = {}
        self._client: httpx2.AsyncClient | None = None
        self._public_client: httpx2.AsyncClient | None = None
        self._chosen: set[str] = set()
        """The operations (by name) whose base URL the document chose on another origin than its own."""
        self._closed = False
        self.operations: dict[str, Operation] = {}
        """The operation behind each tool, by tool name (filled by :meth:`list_tools`)."""
        self.skipped: dict[str, str] = {}
        """Operations that did not become tools at the last :meth:`list_tools` (``METHOD /path``) → reason."""
        self.trimmed: dict[str, str] = {}
        """Tools kept without their output schema at the last :meth:`list_tools` (tool name → why)."""
        # Values given in code are secrets as much as those load_config registers.
        register_secrets(header_secrets(self._headers))
        # As given, and as a URL carries them (an API that quotes the request URL back).
        register_secrets(v for q in self._query.values() for v in (q, quote(q, safe=""), quote_plus(q)))
        register_secrets([s for u in (base_url, document) if isinstance(u, str) for s in url_secrets(u)])

    @classmethod
    def from_config(cls, name: str, config: OpenAPIServerConfig) -> OpenAPIProvider:
        """The provider for an ``openapi`` entry of the configuration.

        Args:
            name: The entry's name in ``mcpServers``.
            config: The entry, as :func:`~toolrun.load_config` loaded it.

        Returns:
            The provider (not yet loaded).

        Raises:
            ConfigError: If ``name`` cannot be a namespace.
        """
        return cls(
            name,
            config.openapi,
            base_url=config.base_url,
            headers=config.headers,
            query=config.query,
            timeout=config.timeout,
            load_timeout=config.connect_timeout,
            include=config.include,
            tags=config.tags,
            output_schemas=config.output_schema,
            max_response_bytes=config.max_response_bytes,
        )

    def _http(self, chosen: bool = False) -> httpx2.AsyncClient:
        # Created on first use (no await in between, so concurrent callers share one). Uncompressed
        # replies: a compressed one is inflated within maxResponseBytes (_http_inflate).
        if chosen:
            # A server the document chose: only globally reachable addresses, checked when connecting.
            if self._public_client is None:
                self._public_client = public_client(httpx2.Timeout(self._timeout), IDENTITY)
            return self._public_client
        if self._client is None:
            timeout = httpx2.Timeout(self._timeout)
            self._client = httpx2.AsyncClient(timeout=timeout, follow_redirects=False, headers=IDENTITY)
        return self._client

    async def list_tools(self) -> list[dict[str, Any]]:
        """Read the document and build one tool per operation.

        The document is parsed and the tools built in a worker thread, so a large document
        does not stall the event loop.

        Returns:
            MCP-style tool mappings (``name``, ``description``, ``inputSchema``, ``outputSchema``…).

        Raises:
            ConfigError: If the document cannot be read, is not OpenAPI 3.0/3.1 or has more than 25,000
                operations (after ``include`` and ``tags``), no base URL
                can be found for an operation, an operation would send the credentials to
                another origin than theirs, or the ``openapi`` extra is missing.
            BackendUnavailableError: If the document's URL cannot be fetched within ``load_timeout``.
        """
        if self._closed:
            raise BackendUnavailableError(f"openapi:{self.name}", "the provider is closed")
        started = time.perf_counter()
        source = self._document
        load: Callable[[], dict[str, Any]]
        if isinstance(source, Mapping):
            paths = source.get("paths")
            large = isinstance(paths, Mapping) and len(cast(Mapping[Any, Any], paths)) >= LARGE_DOCUMENT_PATHS
            load = partial(plain_document, source, server=self.name)
        elif is_url(str(source)):
            url = str(source)
            # The headers go with the document's request only on the credentials' origin (baseUrl's,
            # or without it the document's own): never to another host that serves the document.
            same = self._base_url is None or _origin_of(url, self.name, "openapi") == origin(self._base_url)
            load_timeout = httpx2.Timeout(self._load_timeout)
            async with httpx2.AsyncClient(timeout=load_timeout, follow_redirects=False, headers=IDENTITY) as c:
                raw = await fetch_document(
                    c,
                    url,
                    server=self.name,
                    max_bytes=self._max_document,
                    headers=self._headers if same else {},
                    timeout=self._load_timeout,
                )
            self._document_url = url
            large = len(raw) >= LARGE_DOCUMENT_BYTES
            load = partial(parse_document, raw, server=self.name)
        else:
            path = str(source)
            large = _file_size(path) >= LARGE_DOCUMENT_BYTES
            load = partial(self._read_path, path)
        # Abandoned when start-up is cancelled: the caller stops at once; the thread (bounded work
        # on a bounded document) ends on its own and its result is dropped.
        built: BuiltTools = await anyio.to_thread.run_sync(lambda: self._build(load, large), abandon_on_cancel=True)
        unusable = self._check_origins(built.operations.values())
        if unusable:
            # One operation's own server cannot be used: that operation goes, not the whole document.
            for name, reason in unusable.items():
                op = built.operations.pop(name)
                built.notes.pop(name, None)
                built.skipped[f"{op.method} {op.path}"] = reason
            built.tools = [t for t in built.tools if t.get("name") in built.operations]
        for where, reason in built.skipped.items():
            _log.warning("openapi.operation_skipped", server=self.name, operation=where, reason=reason)
        # A tool kept without its output schema still works: one line each at info, and one
        # warning that says how many (a large document can have hundreds).
        for tool, note in built.notes.items():
            _log.info("openapi.tool_trimmed", server=self.name, tool=tool, note=note)
        if built.notes:
            _log.warning(
                "openapi.tools_without_output_schema",
                server=self.name,
                tools=len(built.notes),
                first=list(itertools.islice(built.notes, _NAMED_IN_SUMMARY)),
                detail="provider.trimmed; log openapi.tool_trimmed (info) per tool",
            )
        self.operations = built.operations
        self._targets = {}
        self._chosen = set()
        self.skipped = built.skipped
        self.trimmed = built.notes
        _log.info(
            "openapi.loaded",
            server=self.name,
            operations=built.total,
            tools=len(built.tools),
            skipped=len(built.skipped),
            without_output_schema=len(built.notes),
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return built.tools

    def _build(self, load: Callable[[], dict[str, Any]], large: bool) -> BuiltTools:
        # One pause of the collector for parsing and building, over once the document is freed:
        # the collection that follows sees only what survives (the tools), not the document too.
        with collector_paused(large):
            doc = load()
            supplied = [
                *(("header", h) for h in self._headers),
                *(("query", q) for q in self._query),
                *(("cookie", c) for c in _cookie_names(self._headers)),
            ]
            built = build_tools(
                doc,
                server=self.name,
                include=self._include,
                tags=self._tags,
                output_schemas=self._output_schemas,
                supplied=supplied,
            )
            del doc
        return built

    def _read_path(self, path: str) -> dict[str, Any]:
        data = read_file(Path(path).expanduser(), server=self.name, max_bytes=self._max_document)
        return parse_document(data, server=self.name)

    def _base_for(self, op: Operation, *, config_error: bool = False) -> str:
        if self._base_url is not None:
            return self._base_url
        server = op.server
        base: str | None = None
        if server is not None and is_url(server):
            base = server
        elif server is not None and self._document_url is not None:
            joined = urljoin(self._document_url, server)
            base = joined if is_url(joined) else None
        problem = base_url_problem(base) if base is not None else None
        if base is not None and problem is None:
            problem = self._steered_inside(base)
        if base is not None and problem is None:
            return base
        if server is None:
            reason = "the document declares no server URL: set baseUrl"
        elif base is None:
            reason = f"the document's server URL {server!r} is not an http(s) URL: set baseUrl"
        else:
            reason = f"the document's server URL {server!r} {problem}: set baseUrl"
        if config_error:
            raise ConfigError(self.name, "baseUrl", reason)
        raise ValueError(reason)  # pragma: no cover - list_tools checked every operation

    def _steered_inside(self, base: str) -> str | None:
        # A document may not point calls at this host's own network (a metadata service, an admin
        # port on localhost): a special-purpose address is taken only on the document's own origin.
        try:
            host = non_public_host(base)
            if host is None or (self._document_url is not None and origin(base) == origin(self._document_url)):
                return None
        except httpx2.InvalidURL:
            return None  # _check_origins says what is wrong with it
        return (
            f"names {host[:_SHOWN_KEY]!r}, a loopback, private or link-local address, on another origin than the "
            "document's; a document does not choose to call into this host's network"
        )

    def _credentials_origin(self) -> str | None:
        # The one origin configured credentials may go to; None when the configuration names none.
        if self._base_url is not None:
            return origin(self._base_url)
        if self._document_url is not None:
            return origin(self._document_url)
        return None

    def _check_origins(self, operations: Iterable[Operation]) -> dict[str, str]:
        """The operations (by name) without a usable base URL, each with why; :class:`ConfigError` when none has one.

        With credentials configured, every operation must be on their origin (else :class:`ConfigError`).
        """
        fields = [f for f, given in (("headers", self._headers), ("query", self._query)) if given]
        allowed = self._credentials_origin() if fields else None
        origins: dict[str, str] = {}
        unusable: dict[str, str] = {}
        first: ConfigError | None = None
        usable = 0
        for op in operations:
            try:
                base = self._base_for(op, config_error=True)
                where = origins.get(base)
                if where is None:
                    where = origins[base] = _origin_of(base, self.name, "baseUrl")
            except ConfigError as e:
                first = first or e
                unusable[op.name] = e.reason
                continue
            usable += 1
            if not fields or where == allowed:
                continue
            what = " and ".join(repr(f) for f in fields)
            if allowed is None:
                reason = (
                    f"the credentials in {what} go only to baseUrl's origin (or to the origin a document is "
                    f"fetched from), and this document was not fetched from a URL; its operation {op.name!r} "
                    f"would send them to {where}: set baseUrl"
                )
            else:
                reason = (
                    f"operation {op.name!r} would send the credentials in {what} to {where}, the document's "
                    f"server URL, but they go only to {allowed}, where the document was fetched from: set "
                    "baseUrl to the API's URL to send them there"
                )
            raise ConfigError(self.name, "baseUrl", reason)
        if first is not None and not usable:
            raise first
        return unusable

    def _target(self, op: Operation) -> PathTemplate:
        target = self._targets.get(op.name)
        if target is None:
            base = self._base_for(op)
            if self._base_url is None and (self._document_url is None or origin(base) != origin(self._document_url)):
                self._chosen.add(op.name)
            target = self._targets[op.name] = PathTemplate(base, op.path)
        return target

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> BackendResult:
        """Call one operation over HTTP.

        Args:
            name: The tool's name.
            args: Its arguments (validated by the runner against the input schema).

        Returns:
            The result; ``is_error`` for a non-2xx status or an unreadable response.

        Raises:
            ToolTimeoutError: If the call takes longer than ``timeout``.
            BackendUnavailableError: If the server cannot be reached, or the provider is closed.
            LookupError: If no operation has this name.
            InputValidationError: If a path value would not fill exactly one segment, or an
                object's key would name a method override or another query parameter.
            InputValidationError: If a header value cannot be sent (a line break, a character outside ASCII).
            AddressRefusedError: If the server is one the document chose on another origin than its
                own (no ``base_url``) and its host resolves into this host's network, or a proxy of
                the environment would carry the call; nothing was sent.
        """
        if self._closed:
            raise BackendUnavailableError(f"openapi:{self.name}", "the provider is closed")
        op = self.operations.get(name)
        if op is None:
            raise LookupError(f"{self.name!r} has no operation {name!r}")
        tool_id = f"{self.name}:{name}"
        target = self._target(op)
        client = self._http(op.name in self._chosen)
        try:
            request = _Request.build(op, args, target, self._headers, self._query)
            sent = client.build_request(
                op.method,
                request.url,
                params=request.params,
                headers=request.headers,
                content=request.content,
                data=request.data,
                files=request.files,
            )
            # The one check on what leaves this host, however the URL above was made.
            target.check(sent.url)
        except PathError as e:
            if not e.params:
                raise
            raise _invalid_path(tool_id, op, e) from e
        except _RefusedKey as e:
            raise InputValidationError(tool_id, [e.problem]) from None
        started = time.perf_counter()
        with anyio.move_on_after(math.inf if self._timeout is None else self._timeout) as scope:
            try:
                result = await self._send(client, tool_id, op, sent, request.shown)
            except AddressRefused as e:
                raise AddressRefusedError(tool_id, self.name, e.host, e.address) from None
            except httpx2.TimeoutException as e:
                raise ToolTimeoutError(tool_id, self._timeout or 0.0) from e
            except httpx2.ConnectError as e:
                raise BackendUnavailableError(f"openapi:{self.name}", f"cannot connect to {target.origin}: {e}") from e
            except httpx2.HTTPError as e:  # the connection broke mid-call, a malformed answer
                text = f"{op.method} {redact_url(request.shown)} failed: {type(e).__name__}: {e}"
                return BackendResult(None, ({"type": "text", "text": redact(text)},), is_error=True, error=e)
            _log.debug(
                "openapi.call",
                server=self.name,
                tool=name,
                method=op.method,
                duration_ms=round((time.perf_counter() - started) * 1000, 1),
                is_error=result.is_error,
            )
            return result
        assert scope.cancelled_caught
        raise ToolTimeoutError(tool_id, self._timeout or 0.0)

    async def _send(
        self, client: httpx2.AsyncClient, tool_id: str, op: Operation, request: httpx2.Request, url: str
    ) -> BackendResult:
        response = await client.send(request, stream=True)
        try:
            chunks: list[bytes] = []
            size = 0
            too_big = False
            try:
                body_stream = body_chunks(response)
            except UnreadableEncodingError as e:
                raise UpstreamProtocolError(tool_id, f"{op.method} {redact_url(url)[:_SHOWN_URL]}: {e}") from None
            async for chunk in body_stream:
                size += len(chunk)
                if size > self._max_response:
                    too_big = True
                    chunks.append(chunk[: max(0, len(chunk) - (size - self._max_response))])
                    break
                chunks.append(chunk)
            body = b"".join(chunks)
            status, reason = response.status_code, response.reason_phrase
            content_type = response.headers.get("content-type", "")
            encoding = _text_encoding(response.charset_encoding)
            location = response.headers.get("location")
        finally:
            await response.aclose()
        shown = redact_url(url)
        if not 200 <= status < 300:
            excerpt = _excerpt(body, encoding)
            if 300 <= status < 400 and location is not None:
                note = f"redirects are not followed (to {redact_url(location)[:_SHOWN_URL]})"
                excerpt = f"{note}; {excerpt}" if excerpt else note
            err = HTTPStatusError(status, op.method, url, excerpt, reason)
            return BackendResult(None, ({"type": "text", "text": str(err)},), is_error=True, error=err)
        if too_big:
            raise ResponseTooLargeError(tool_id, self.name, self._max_response)
        if _is_json(body, content_type) and containers_at_most(body) > (bound := container_bound(self._max_response)):
            # Not parsed: json.loads costs per container and holds the GIL (every caller waits).
            raise ResponseTooLargeError(tool_id, self.name, self._max_response, bound)
        return _result(body, content_type, encoding, op, shown)

    async def aclose(self) -> None:
        """Close the HTTP clients; idempotent."""
        self._closed = True
        clients = (self._client, self._public_client)
        self._client = self._public_client = None
        for client in clients:
            if client is not None:
                await client.aclose()


def _file_size(path: str) -> int:
    try:
        return Path(path).expanduser().stat().st_size
    except (OSError, ValueError):  # reading it will say what is wrong
        return 0


def _origin_of(url: str, server: str, field: str) -> str:
    try:
        return origin(url)
    except httpx2.InvalidURL as e:
        raise ConfigError(server, field, f"{redact_url(url)[:_SHOWN_URL]!r} is not a valid URL: {e}") from None


def _invalid_path(tool_id: str, op: Operation, e: PathError) -> InputValidationError:
    paths = [json_path([s.arg]) for s in op.params if s.location == "path" and s.name in e.params]
    return InputValidationError(tool_id, [ValidationProblem(p, e.reason) for p in paths or ["$"]])


def _text_encoding(charset: str | None) -> str:
    # The charset the answer names, when Python reads it as text; else UTF-8 (an unknown name, or a
    # codec such as 'zlib' or 'rot13' that is no text encoding, failed the call with LookupError).
    if charset:
        try:
            b"a".decode(charset)  # not b"": that is '' for any name, unlooked-up
        except LookupError:
            return "utf-8"
        except ValueError:  # a text encoding that cannot read one byte alone (UTF-16)
            pass
        return charset
    return "utf-8"


def _excerpt(body: bytes, encoding: str) -> str:
    window = _EXCERPT_CHARS * 4
    words = body[:window].decode(encoding, errors="replace").split()
    if len(body) > window and words:
        words.pop()  # it may be a secret cut in two, which redaction would no longer find
    # Redacted before the cut, for the same reason.
    text = redact(" ".join(words))
    return text if len(text) <= _EXCERPT_CHARS else text[: _EXCERPT_CHARS - 1] + "…"


def _is_json(body: bytes, content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json") or (not media and body[:1] in (b"{", b"["))


def _result(body: bytes, content_type: str, encoding: str, op: Operation, shown: str) -> BackendResult:
    if not body:
        return BackendResult(None)
    media = content_type.split(";", 1)[0].strip().lower()
    if _is_json(body, content_type):
        try:
            return BackendResult(json.loads(body.decode(encoding, errors="strict")))
        except RecursionError as e:
            text = f"{op.method} {shown}: the JSON response nests too deeply to read"
            return BackendResult(None, ({"type": "text", "text": text},), is_error=True, error=e)
        except ValueError as e:
            text = f"{op.method} {shown}: the response says JSON but is not: {str(e)[:200]}"
            return BackendResult(None, ({"type": "text", "text": text},), is_error=True, error=e)
    if media.startswith("image/"):
        data = base64.b64encode(body).decode("ascii")
        return BackendResult(None, ({"type": "image", "data": data, "mimeType": media},))
    if media.startswith("text/") or "charset=" in content_type.lower() or media.endswith(("+xml", "/xml")) or not media:
        return BackendResult(None, ({"type": "text", "text": body.decode(encoding, errors="replace")},))
    try:
        return BackendResult(None, ({"type": "text", "text": body.decode("utf-8")},))
    except UnicodeDecodeError:
        text = f"({len(body):,} bytes of {media}, not text)"
        return BackendResult(None, ({"type": "text", "text": text},))


def _scalar(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _joined(value: Any, explode: bool, sep: str = ",") -> str:
    # The "simple" serialisation of arrays and objects (paths, headers, non-exploded query values).
    if isinstance(value, list):
        return sep.join(_scalar(v) for v in cast(list[Any], value))
    if isinstance(value, dict):
        items = cast(dict[str, Any], value).items()
        if explode:
            return sep.join(f"{k}={_scalar(v)}" for k, v in items)
        return sep.join(f"{k}{sep}{_scalar(v)}" for k, v in items)
    return _scalar(value)


class _Request:
    """An operation's arguments as an HTTP request."""

    __slots__ = ("content", "data", "files", "headers", "params", "shown", "url")

    def __init__(self) -> None:
        self.url = ""
        self.shown = ""
        self.params: list[tuple[str, str | int | float | bool | None]] = []
        self.headers: dict[str, str] = {}
        self.content: bytes | None = None
        self.data: dict[str, Any] | None = None
        self.files: list[tuple[str, tuple[None, str]]] | None = None

    @classmethod
    def build(
        cls,
        op: Operation,
        args: Mapping[str, Any],
        target: PathTemplate,
        headers: Mapping[str, str],
        query: Mapping[str, str] | None = None,
    ) -> _Request:
        req = cls()
        path_values: dict[str, str] = {}
        cookies: list[str] = []
        # Every name the call's query parameters have; an object's key never stands in for one.
        taken = {
            n.casefold() for n in itertools.chain((s.name for s in op.params if s.location == "query"), query or ())
        }
        for spec in op.params:
            if spec.arg not in args or args[spec.arg] is None:
                continue
            value = args[spec.arg]
            if spec.location == "path":
                path_values[spec.name] = _path_value(spec, value)
            elif spec.location == "query":
                req.params.extend(_query_pairs(spec, value, taken - {spec.name.casefold()}))
            elif spec.location == "header":
                text = json.dumps(value) if spec.as_json else _joined(value, spec.explode)
                req.headers[spec.name] = _header_safe(spec.arg, spec.name, text)
            else:
                text = json.dumps(value) if spec.as_json else _joined(value, spec.explode)
                cookies.append(f"{spec.name}={quote(text, safe='')}")
        if cookies:
            req.headers["Cookie"] = "; ".join(cookies)

        req.url = req.shown = target.fill(path_values)
        if op.accept is not None:
            req.headers["Accept"] = op.accept
        if op.body is not None:
            body = op.body
            if body.arg is not None:
                present, value = body.arg in args, args.get(body.arg)
                if isinstance(value, dict):
                    # Its keys are the caller's, and become the form's (or the JSON object's) field names.
                    for key in cast(dict[str, Any], value):
                        _check_key([body.arg, key], key, "a field of the request body")
            else:
                value = {f: args[f] for f in body.fields if f in args}
                present = bool(value) or body.required
            if present:
                req.encode_body(body.media_type, value)
        # The configuration's headers and query parameters (credentials) are sent as given; the
        # tools have no arguments of their names, and nothing else may send one (an object's key
        # of such a name is refused above; this is the last word). Names compare as services
        # read them: a second `cookie` header or an `API_KEY` beside `api_key` would let the
        # caller's credential stand in for the configured one.
        configured = {wire_key("header", h) for h in headers}
        arg_cookie = next((v for k, v in req.headers.items() if k.lower() == "cookie"), None)
        req.headers = {k: v for k, v in req.headers.items() if wire_key("header", k) not in configured}
        for name, value in headers.items():
            if name.lower() == "cookie" and arg_cookie:
                # One Cookie header: the configured cookies first (first wins in most parsers), then the
                # arguments', whose names differ from them (cookie parameters of their names are not arguments).
                value = f"{value}; {arg_cookie}"
            req.headers[name] = value
        if query:
            mine = {wire_key("query", q) for q in query}
            req.params = [(k, v) for k, v in req.params if wire_key("query", k) not in mine]
            req.params.extend(query.items())
        return req

    def encode_body(self, media_type: str, value: Any) -> None:
        media = media_type.split(";", 1)[0].strip().lower()
        if media == "application/x-www-form-urlencoded" and isinstance(value, dict):
            fields = cast(dict[str, Any], value)
            self.data = {k: v if isinstance(v, str) else _scalar(v) for k, v in fields.items() if v is not None}
            return
        if media == "multipart/form-data" and isinstance(value, dict):
            fields = cast(dict[str, Any], value)
            self.files = [(k, (None, _scalar(v))) for k, v in fields.items() if v is not None]
            return
        self.headers["Content-Type"] = media_type
        if media == "application/json" or media.endswith("+json") or not isinstance(value, str):
            self.content = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        else:
            self.content = value.encode("utf-8")


def _cookie_names(headers: Mapping[str, str]) -> list[str]:
    # The cookies a configured Cookie header sends (`session=…; csrf=…`): cookie parameters of those names are not
    # arguments.
    values = (v for k, v in headers.items() if k.lower() == "cookie")
    return [c.split("=", 1)[0].strip() for v in values for c in v.split(";") if "=" in c]


def _header_safe(arg: str, name: str, text: str) -> str:
    """``text`` as the value of header ``name`` (argument ``arg``), refused where no header can carry it."""
    if _HEADER_UNSAFE.search(text):
        reason = f"header parameter {name!r} holds a line break or NUL, which HTTP headers cannot carry"
        raise _RefusedKey([arg], reason)
    if not text.isascii():
        odd = next(c for c in text if not c.isascii())
        reason = f"header parameter {name!r} holds {odd!r} (U+{ord(odd):04X}): HTTP header values carry ASCII only"
        raise _RefusedKey([arg], reason)
    return text


def _path_value(spec: ParamSpec, value: Any) -> str:
    if spec.as_json:
        return quote(json.dumps(value, ensure_ascii=False), safe="")
    if spec.style == "label":
        sep = "." if spec.explode else ","
        return "." + quote(_joined(value, spec.explode, sep), safe=".,=")
    if spec.style == "matrix":
        if isinstance(value, list) and spec.explode:
            return "".join(f";{spec.name}={quote(_scalar(v), safe='')}" for v in cast(list[Any], value))
        return f";{spec.name}=" + quote(_joined(value, spec.explode), safe=",=")
    return quote(_joined(value, spec.explode), safe=",=" if isinstance(value, list | dict) else "")


class _RefusedKey(ValueError):
    """An object's key that would become a name the request may not carry; the call is refused."""

    def __init__(self, where: Sequence[str], reason: str) -> None:
        super().__init__(reason)
        self.problem = ValidationProblem(json_path(where), reason)


def _check_key(where: Sequence[str], key: str, becomes: str, taken: Collection[str] = ()) -> str:
    # A key that becomes a name of the request may not change what the request means: no method
    # override, and no second value for a parameter the document or the configuration names.
    shown = repr(key[:_SHOWN_KEY])
    if is_method_override(key):
        raise _RefusedKey(
            where,
            f"the key {shown} would be sent as {becomes}, and servers read that name as the request's method "
            "(a method override); it is never sent",
        )
    if key.casefold() in taken:
        raise _RefusedKey(
            where, f"the key {shown} would be sent as {becomes}, and the call has a query parameter of that name"
        )
    return key


def _query_pairs(spec: ParamSpec, value: Any, taken: Collection[str] = ()) -> list[tuple[str, str]]:
    if spec.as_json:
        return [(spec.name, json.dumps(value, ensure_ascii=False))]
    if isinstance(value, list):
        items = [_scalar(v) for v in cast(list[Any], value)]
        if spec.style == "form" and spec.explode:
            return [(spec.name, v) for v in items]
        sep = {"spaceDelimited": " ", "pipeDelimited": "|"}.get(spec.style, ",")
        return [(spec.name, sep.join(items))]
    if isinstance(value, dict):
        members = cast(dict[str, Any], value)
        if spec.style == "deepObject":
            return [(f"{spec.name}[{k}]", _scalar(v)) for k, v in members.items()]
        if spec.explode:
            # Each key is a query parameter of its own (style form, the default).
            becomes = f"a query parameter of its own (the object {spec.name!r} is exploded)"
            return [(_check_key([spec.arg, k], k, becomes, taken), _scalar(v)) for k, v in members.items()]
        return [(spec.name, _joined(members, False))]
    return [(spec.name, _scalar(value))]
