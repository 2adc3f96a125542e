"""The MCP backend: one persistent session per configured server, over stdio or streamable HTTP."""

from __future__ import annotations

import json
import math
import time
import traceback
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from types import TracebackType
from typing import IO, Any, Self, TextIO, cast

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread
import httpx2
import mcp_types as types
from mcp import Client, ClientSession, MCPError, StdioServerParameters
from mcp.client.session import IncomingMessage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp_types import CONNECTION_CLOSED, HEADER_MISMATCH, PARSE_ERROR
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolindex import BackendKind, BackendRef, Index, PreparedBatch, Tool, ToolNotFoundError, indexing_cost
from toolindex.log import get_logger
from toolrun._child_env import child_env
from toolrun._compat_mcp import TransportStreams, is_closed
from toolrun._config import HttpServerConfig, ServerConfig, StdioServerConfig, check_server_name
from toolrun._definitions import masked_definitions
from toolrun._mcp_reader import (
    MALFORMED,
    TOO_LARGE,
    UNREADABLE,
    describe_parse_error,
    mend_http_response,
    mending,
    nested_deeper_than,
)
from toolrun._mcp_stderr import LogLimiter, StderrPump
from toolrun._mcp_stdio import bounded_stdio_client
from toolrun._mcp_wire import learn_param_headers, normalise_result, parse_tool, raw_request
from toolrun._redact import redact, redact_url, register_secrets
from toolrun._size import approx_size
from toolrun._spawn import watchdog_command
from toolrun._types import BackendResult, ProgressCallback, ProgressEvent
from toolrun.exceptions import (
    BackendUnavailableError,
    InputValidationError,
    ResponseTooLargeError,
    ToolExecutionError,
    ToolTimeoutError,
    UpstreamProtocolError,
    ValidationProblem,
)

__all__ = ["MCPBackend"]

_log = get_logger("toolrun.mcp")

_CLIENT_INFO = types.Implementation(name="toolrun", version="0.1.0")
_MAX_LIST_PAGES = 1000
_LIST_BYTES_PER_REPLY = 4
"""A whole tool listing holds at most this many times the server's ``maxResponseBytes``."""
_SHOWN_CURSOR = 100
"""Characters of a cursor quoted in the log."""
# Tools registered into the index per slice of a re-list, between which other tasks run (an
# index that cannot prepare a batch off the loop).
_REGISTER_SLICE = 100
# Work per slice of a re-list registered on the event loop, in characters of tool text indexed
# or unindexed (toolindex.indexing_cost): ~10 ms of index updates (a 16 KB description costs
# ~3 ms); a tool costing more (at most ~100,000) is a slice alone.
_REGISTER_COST = 48_000
# Skipped tools logged one by one per listing; the rest are counted.
_SKIP_LOG_MAX = 20
# A server announcing list changes in a storm is re-listed at most once per interval.
_RELIST_INTERVAL_S = 1.0
# Nesting of call arguments beyond this is refused before it reaches the session (the SDK's
# serialiser gives up at about 250 levels, a server's parser at about 200).
_MAX_ARG_DEPTH = 128


def _safe_cause(exc: BaseException) -> BaseException | None:
    # A chained exception is printed with the error: chain it only if its text holds no secret.
    text = "".join(traceback.format_exception(exc))
    return exc if redact(text) == text else None


def _leaf(exc: BaseException) -> BaseException:
    # Task groups wrap transport failures in exception groups; the first leaf says what happened.
    out: object = exc
    while True:
        inner: tuple[BaseException, ...] = getattr(out, "exceptions", ())
        if not inner:
            return out  # pyright: ignore[reportReturnType]
        out = inner[0]


def _error_reason(e: MCPError) -> Any:
    # ``error.data.reason`` of an error the reader made up (MALFORMED, TOO_LARGE), else None.
    data: Any = e.error.data
    return cast(dict[str, Any], data).get("reason") if isinstance(data, dict) else None


def _json_problem(value: Any) -> ValidationProblem:
    # Walks the arguments to say where they stop being JSON (only after json.dumps refused them).
    stack: list[tuple[Any, str, int] | int] = [(value, "$", 0)]
    ancestors: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, int):
            ancestors.discard(item)  # leaving a container
            continue
        v, path, depth = item
        if depth > _MAX_ARG_DEPTH:
            return ValidationProblem(path[:120] + "…", f"nested deeper than {_MAX_ARG_DEPTH} levels")
        if isinstance(v, dict | list | tuple):
            key = id(cast(object, v))
            if key in ancestors:
                return ValidationProblem(path[:120], "contains itself (a circular reference)")
            ancestors.add(key)
            stack.append(key)
        if isinstance(v, dict):
            for k, child in cast(dict[Any, Any], v).items():
                if not isinstance(k, str):
                    return ValidationProblem(path[:120], f"object keys must be strings, got {type(k).__name__}")
                stack.append((child, f"{path}.{k}" if k.isidentifier() else f"{path}[{json.dumps(k)}]", depth + 1))
        elif isinstance(v, list | tuple):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(cast(list[Any], v)))
        elif isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return ValidationProblem(path, "the string contains a lone surrogate, which JSON text cannot carry")
        elif isinstance(v, float) and not math.isfinite(v):
            return ValidationProblem(path, f"{v!r} is not a JSON number")
        elif not (v is None or isinstance(v, bool | int | float)):
            return ValidationProblem(path, f"a value of type {type(v).__name__} is not JSON")
    return ValidationProblem("$", "the arguments cannot be written as JSON")


def _json_arguments(tool_id: str, args: Mapping[str, Any]) -> dict[str, Any]:
    # One value the SDK cannot write (a class instance, a lone surrogate, nesting past pydantic's
    # serialiser limit of about 250 levels) would kill the session's writer, shared by every call:
    # such arguments fail this call, before anything is sent.
    arguments = dict(args)
    try:
        text = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except (TypeError, ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
        raise InputValidationError(tool_id, [_json_problem(arguments)]) from None
    if nested_deeper_than(text, _MAX_ARG_DEPTH + 1):  # +1: the arguments object itself
        raise InputValidationError(tool_id, [_json_problem(arguments)])
    return arguments


@asynccontextmanager
async def _mended(
    transport: AbstractAsyncContextManager[TransportStreams], on_drop: Any
) -> AsyncGenerator[TransportStreams]:
    async with transport as streams:
        yield mending(streams, on_drop)


@dataclass(eq=False)
class _Connection:
    client: Client
    session: ClientSession
    stderr: StderrPump | None
    expose_stderr: bool = False
    stop: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    dead: bool = False
    active: int = 0
    """Calls in flight: a retired session stays open until they are answered."""

    @property
    def usable(self) -> bool:
        return not self.dead and not is_closed(self.session)

    def stderr_note(self) -> str:
        if self.stderr is None:
            return ""
        if not self.expose_stderr:
            return "; the server's stderr is in the log (mcp.stderr)"
        tail = self.stderr.tail()
        return f"; server stderr: {tail[-500:]}" if tail else ""


class MCPBackend:
    """Runs the tools of one MCP server, over stdio or streamable HTTP.

    One persistent session per server: it is opened on the first :meth:`attach` or
    :meth:`call` (under a lock, so concurrent first calls share it), shared by every
    concurrent call, and reopened by the next call after the server dies. Every call is
    bounded: by its own timeout, else the server's configured ``timeout`` (60 s unless the
    config says otherwise, ``0`` for none); a timeout or a cancelled caller sends
    ``notifications/cancelled`` to the server. Progress notifications reach the call's
    ``progress`` callback.

    One call cannot hurt the others on the session: arguments that are not JSON fail that
    call before anything is sent; an error reply, a reply that is not valid JSON or JSON-RPC,
    or one nested too deep fails only the call it answers, at once
    (:class:`~toolrun.UpstreamProtocolError`); bytes that are not UTF-8 are read as U+FFFD. No
    message is read past the server's ``maxResponseBytes``: the call a larger reply answers fails
    with :class:`~toolrun.ResponseTooLargeError` while the rest is dropped unread; nor parsed
    when it holds more arrays and objects than the bound that comes with it (the same error,
    saying so). A notification over 64 KiB is dropped unparsed and logged.

    :meth:`attach` lists the server's tools (following ``nextCursor``) into the index under
    the server's name as namespace, and keeps them current when the server announces
    ``tools/list_changed``. A malformed tool is skipped with a logged reason (see
    :attr:`skipped`); the rest of the server stays usable. Checking the listed tools runs in
    a worker thread and registering them in slices, so a huge catalog does not stall the
    event loop; change storms are re-listed at most once a second. Every registered secret
    (see :func:`~toolrun.register_secrets`) a definition quotes is masked (``***``) before the
    tool is checked or indexed, as in results: a tool whose name would change is skipped.

    A stdio server's stderr is logged (``mcp.stderr``, redacted and rate-limited) and quoted
    in errors only when its config sets ``exposeStderr``.

    The session runs in a background task, so the backend must be entered
    (``async with backend:``, or by the runner that owns it) before it is used; entering
    does not connect.

    Args:
        name: The server's name in ``mcpServers``; also the namespace of its tools.
        config: How to reach it.

    Raises:
        ConfigError: If ``name`` cannot be a namespace (empty, contains ``:``, ...).
    """

    def __init__(self, name: str, config: ServerConfig) -> None:
        check_server_name(name)
        # A config built in code (not by load_config) holds secrets too.
        register_secrets(config.secret_values())
        self._name = name
        self._config = config
        # A lazy proxy: logs follow the configuration in force when they are written (a program may
        # send them to stderr after connecting, as serve_stdio does), not the one at construction.
        self._log = get_logger("toolrun.mcp", server=name)
        self._drops = LogLimiter()
        self._tg: anyio.abc.TaskGroup | None = None
        self._lock: anyio.Lock | None = None
        self._sync_lock: anyio.Lock | None = None
        self._conn: _Connection | None = None
        self._live: set[_Connection] = set()
        self._index: Index | None = None
        self._tools: dict[str, Tool] = {}
        self._skipped: dict[str, str] = {}
        # The last listing's verdict per tool, by label: an unchanged definition is not checked again.
        self._verdicts: dict[str, _Verdict] = {}
        self._entered = False
        self._depth = 0
        self._closed = False
        self._refreshing = False
        self._refresh_again = False
        self._last_relist = -math.inf

    # -- Backend protocol ------------------------------------------------------------

    @property
    def kind(self) -> BackendKind:
        """Always ``"mcp"``."""
        return "mcp"

    @property
    def supports_progress(self) -> bool:
        """MCP carries progress notifications, so calls can be streamed."""
        return True

    @property
    def name(self) -> str:
        """The server's name (and its tools' namespace)."""
        return self._name

    @property
    def config(self) -> ServerConfig:
        """The server's configuration."""
        return self._config

    @property
    def tools(self) -> dict[str, Tool]:
        """The server's usable tools by their name at the server, as last listed."""
        return dict(self._tools)

    @property
    def skipped(self) -> dict[str, str]:
        """Tools the server listed but that could not be used, with the reason, as last listed."""
        return dict(self._skipped)

    @property
    def protocol_version(self) -> str | None:
        """The protocol version of the open session (``None`` when not connected)."""
        conn = self._conn
        return conn.session.protocol_version if conn is not None and conn.usable else None

    def handles(self, ref: BackendRef) -> bool:
        """Whether ``ref`` points at this server."""
        return ref.kind == "mcp" and ref.server == self._name

    async def attach(self, index: Index) -> list[Tool]:
        """List the server's tools into ``index`` and keep them current on ``tools/list_changed``.

        Args:
            index: The index to register the tools in (namespace: the server's name).

        Returns:
            The usable tools.

        Raises:
            BackendUnavailableError: If the server cannot be started or reached, or listing fails.
        """
        async with self._listing_lock():
            if index is not self._index:
                # A new index starts empty for us: register everything, not just what changed.
                self._index, self._tools = index, {}
            return await self._sync_index()

    def _listing_lock(self) -> anyio.Lock:
        if self._sync_lock is None:
            raise BackendUnavailableError(
                self.label, "not started: enter the backend (`async with`) or the runner that owns it first"
            )
        return self._sync_lock

    async def call(
        self,
        ref: BackendRef,
        tool: Tool,
        args: Mapping[str, Any],
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> BackendResult:
        """Call one tool on the server.

        Args:
            ref: The tool's reference (``ref.tool`` is its name at the server, default ``tool.name``).
            tool: The tool as the index knows it.
            args: Arguments, sent as given; they must be JSON (``math.inf`` or a class instance is not).
            timeout: Seconds before the call is abandoned (default: the server's configured
                ``timeout``, 60 s unless configured; ``math.inf`` for no limit).
            progress: Receives the server's progress notifications for this call.

        Returns:
            The normalised result; a tool-level failure comes back with ``is_error=True``.

        Raises:
            InputValidationError: The arguments cannot be sent as JSON (the path says where).
            ToolTimeoutError: The call did not finish in time (the server was told to cancel it).
            BackendUnavailableError: The server could not be started, or died during the call.
            UpstreamProtocolError: The reply broke the protocol (not JSON, not JSON-RPC, too deep,
                not a tool result).
            ToolExecutionError: The server answered with a JSON-RPC error.
        """
        limit = timeout if timeout is not None else self._config.timeout
        arguments = _json_arguments(tool.id, args)
        on_progress: ProgressFnT | None = None
        if progress is not None:
            cb, tool_id = progress, tool.id

            async def forward(progress: float, total: float | None, message: str | None) -> None:
                await cb(ProgressEvent(tool_id, progress, total, message))

            on_progress = forward

        conn = await self._connection()
        name = ref.tool or tool.name
        params = {"name": name, "arguments": arguments}
        conn.active += 1
        try:
            try:
                raw = await self._send(conn, params, limit, on_progress)
            except MCPError as e:
                if e.code != HEADER_MISMATCH:
                    raise
                # 2026-07-28: the server wants Mcp-Param headers this session has not learned
                # (never listed, or the schema changed): re-list once and resend.
                await self._learn_headers(conn)
                raw = await self._send(conn, params, limit, on_progress)
        except TimeoutError:
            raise ToolTimeoutError(tool.id, limit or 0.0) from None
        except MCPError as e:
            # Not chained: the SDK's error carries the server's text as it came, unredacted.
            raise self._call_error(conn, tool, name, e) from None
        finally:
            conn.active -= 1
            if conn.dead and not conn.active:
                conn.stop.set()
        try:
            return normalise_result(raw)
        except ValueError as e:
            raise UpstreamProtocolError(tool.id, f"malformed result from the server: {e}") from e

    def _call_error(self, conn: _Connection, tool: Tool, name: str, e: MCPError) -> Exception:
        # CONNECTION_CLOSED (-32000) is also an ordinary error code a server may send: only a
        # transport that really ended (stdio: the dispatcher closed; HTTP: the request's stream
        # broke, which the SDK reports as "SSE stream ...") retires the session.
        http = isinstance(self._config, HttpServerConfig)
        if e.code == CONNECTION_CLOSED and (is_closed(conn.session) or (http and e.message.startswith("SSE stream"))):
            self._retire(conn)
            reason = f"the server closed the connection during a call to {name!r}"
            # Its last words are worth a warning (the stderr lines themselves are logged at info).
            tail = conn.stderr.tail() if conn.stderr is not None else ""
            self._log.warning("mcp.connection_lost", tool=name, stderr=tail[-500:] or None)
            return BackendUnavailableError(self.label, reason + conn.stderr_note())
        reason = _error_reason(e)
        if reason == TOO_LARGE:
            data = cast(dict[str, Any], e.error.data)
            containers = data.get("containers")
            containers = containers if isinstance(containers, int) else None
            return ResponseTooLargeError(tool.id, self._name, self._config.max_response_bytes, containers)
        if reason == MALFORMED:
            return UpstreamProtocolError(tool.id, e.message)
        if http and e.code == PARSE_ERROR and e.message.startswith("Failed to parse"):
            # The SDK's own parse errors quote pydantic's whole report (and part of the reply).
            return UpstreamProtocolError(tool.id, describe_parse_error(e.message))
        return ToolExecutionError(tool.id, f"{e.message} (MCP error {e.code})")

    @staticmethod
    async def _send(
        conn: _Connection, params: dict[str, Any], limit: float | None, progress: ProgressFnT | None
    ) -> dict[str, Any]:
        if limit is None:
            return await raw_request(conn.session, "tools/call", params, progress=progress)
        with anyio.fail_after(limit):
            return await raw_request(conn.session, "tools/call", params, progress=progress)

    async def aclose(self) -> None:
        """End every session (the stdio child exits or is killed); idempotent."""
        self._closed = True
        conns = list(self._live)
        for c in conns:
            c.stop.set()
        with anyio.CancelScope(shield=True):
            for c in conns:
                await c.done.wait()

    # -- context manager -------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._depth:
            # Entered again while open (open_backends, then a DefaultRunner that enters its
            # backends): the outermost entry owns the task group and closes it on its exit.
            self._depth += 1
            return self
        if self._entered:
            raise RuntimeError(f"{self.label} was already entered (and exited: a backend is not reusable)")
        self._entered = True
        self._depth = 1
        self._lock = anyio.Lock()
        self._sync_lock = anyio.Lock()
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._depth -= 1
        if self._depth:
            return  # an inner entry: the outer one closes
        try:
            await self.aclose()
        finally:
            tg, self._tg = self._tg, None
            if tg is not None:
                # Sessions are closed; what is left (a pending re-list) may go. The caller's own
                # exception is not handed in, so it propagates as itself, not in an ExceptionGroup.
                tg.cancel_scope.cancel()
                await tg.__aexit__(None, None, None)

    @property
    def label(self) -> str:
        """``mcp:<name>``, as used in error messages."""
        return f"mcp:{self._name}"

    def __repr__(self) -> str:
        return f"MCPBackend({self._name!r}, {self._config.type})"

    # -- sessions ----------------------------------------------------------------------

    async def _connection(self) -> _Connection:
        conn = self._conn
        if conn is not None and conn.usable:
            return conn
        if self._lock is None or self._tg is None:
            raise BackendUnavailableError(
                self.label, "not started: enter the backend (`async with`) or the runner that owns it first"
            )
        async with self._lock:
            conn = self._conn
            if conn is not None and conn.usable:
                return conn
            if conn is not None:
                self._log.info("mcp.reconnect", reason="the previous session ended")
                self._retire(conn)
            if self._closed:
                raise BackendUnavailableError(self.label, "the backend is closed")
            reconnect = self._conn is not None
            conn = await self._tg.start(self._serve)
            self._conn = conn
        if reconnect:
            # The server may have changed while it was down; re-list in the background.
            self._schedule_refresh()
        return conn

    def _retire(self, conn: _Connection) -> None:
        # New calls get a new session; the calls still in flight on this one are answered first.
        conn.dead = True
        if not conn.active:
            conn.stop.set()

    def _on_drop(self, what: str) -> None:
        if self._drops.allow():
            self._log.warning("mcp.unreadable_message", error=redact(what), suppressed=self._drops.take_suppressed())

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[_Connection]) -> None:
        # Owns one session from connect to close, so every scope the SDK opens is entered and
        # exited in this task. Nothing may escape once started: that would cancel the host task.
        cfg = self._config
        pump = StderrPump(self._log) if isinstance(cfg, StdioServerConfig) else None
        errlog = pump.open() if pump is not None else None
        if pump is not None and self._tg is not None:
            self._tg.start_soon(pump.run)
        conn: _Connection | None = None
        try:
            # A deadline on a scope around the whole session (lifted once connected): the SDK's
            # task groups opened during connect must close in the scope they were opened in.
            with anyio.CancelScope(deadline=anyio.current_time() + cfg.connect_timeout) as scope:
                async with AsyncExitStack() as stack:
                    try:
                        client = await self._open(stack, errlog)
                    except Exception as e:  # boundary: any failure to start or reach the server means unavailable
                        raise self._unavailable(e, pump) from _safe_cause(e)
                    finally:
                        if pump is not None:
                            pump.spawned()
                    scope.deadline = math.inf
                    expose = isinstance(cfg, StdioServerConfig) and cfg.expose_stderr
                    conn = _Connection(client, client.session, pump, expose)
                    self._live.add(conn)
                    self._log.info("mcp.connected", protocol=client.protocol_version)
                    task_status.started(conn)
                    try:
                        async with anyio.create_task_group() as inner:
                            if self._announces_list_changed(client):
                                inner.start_soon(self._listen, conn)
                            await conn.stop.wait()
                            inner.cancel_scope.cancel()
                    except Exception as e:  # boundary: a failing session must not take the host task down
                        self._log.warning("mcp.session_error", error=redact(repr(_leaf(e))))
            if conn is None:
                raise self._unavailable(TimeoutError(), pump)
        except Exception as e:
            if conn is None:
                raise
            self._log.info("mcp.close_error", error=redact(repr(_leaf(e))))
        finally:
            if conn is not None:
                conn.dead = True
                self._live.discard(conn)
                conn.done.set()
            if pump is not None:
                pump.close()

    async def _open(self, stack: AsyncExitStack, stderr: IO[bytes] | None) -> Client:
        cfg = self._config
        transport: AbstractAsyncContextManager[TransportStreams]
        if isinstance(cfg, StdioServerConfig):
            env = child_env(cfg.env, inherit=cfg.inherit_env)
            # Through the watchdog launcher: the server and its children die with this process, even by SIGKILL.
            command, args = watchdog_command(cfg.command, cfg.args, env=env, cwd=cfg.cwd)
            params = StdioServerParameters(command=command, args=args, env=env, cwd=cfg.cwd)
            # Bytes that are not UTF-8 become U+FFFD instead of killing the reader, and with it the session.
            params.encoding_error_handler = "replace"
            # The child's stderr goes to a pipe read by the StderrPump (the operator's log); its stdout
            # is read with every message bounded (the SDK's reader holds and re-copies a huge one).
            transport = bounded_stdio_client(
                params, cast(TextIO, stderr), max_bytes=cfg.max_response_bytes, on_drop=self._on_drop
            )
        else:
            assert isinstance(cfg, HttpServerConfig)
            # Reads may idle while a tool works; per-call timeouts are the real bound.
            read = max(300.0, (cfg.timeout or 0.0) + 30.0)
            http = httpx2.AsyncClient(
                # Uncompressed replies: a compressed one is inflated within maxResponseBytes (_http_inflate).
                headers={"accept-encoding": "identity", **cfg.headers},
                timeout=httpx2.Timeout(cfg.connect_timeout, read=read),
                event_hooks={
                    "response": [partial(mend_http_response, max_bytes=cfg.max_response_bytes, on_drop=self._on_drop)]
                },
            )
            await stack.enter_async_context(http)
            # The SDK caps one SSE event at 1 MiB by default; tool results can be larger.
            transport = streamable_http_client(cfg.url, http_client=http, max_sse_event_size=None)
        client = Client(
            _mended(transport, self._on_drop),
            mode=cfg.protocol,
            message_handler=self._on_message,
            client_info=_CLIENT_INFO,
            cache=None,
        )
        return await stack.enter_async_context(client)

    def _unavailable(self, e: BaseException, pump: StderrPump | None) -> BackendUnavailableError:
        """The error for a server that did not start: what happened, and (``fix``) what to do about it."""
        leaf = _leaf(e)
        cfg = self._config
        stdio = isinstance(cfg, StdioServerConfig)
        fix: str | None = None
        if isinstance(leaf, TimeoutError):
            reason = f"no MCP handshake within {cfg.connect_timeout:g} s"
            fix = 'if it is slow to start (a first uvx or npx run installs packages), raise its "connectTimeout"'
        elif isinstance(leaf, FileNotFoundError) and isinstance(cfg, StdioServerConfig):
            reason = f"cannot start {cfg.command!r}: command not found"
            fix = f'install {cfg.command!r}, or give its full path as "command" (it is looked up on PATH)'
        elif isinstance(leaf, OSError) and isinstance(cfg, StdioServerConfig):
            reason = f"cannot start {cfg.command!r}: {leaf.strerror or leaf}"
            fix = '"command" must name an executable file'
        elif isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED and stdio:
            reason = (
                "the server closed the connection during the handshake (did it exit?); stdio servers start with "
                'a minimal environment (PATH, HOME, locale, proxy and certificate settings) plus their "env"'
            )
            fix = (
                "its stderr says why; if the command works in your shell, it may need a variable from your "
                'environment: add it to the server\'s "env", or set "inheritEnv": true'
            )
        elif isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
            reason = "the server closed the connection during the handshake"
        elif isinstance(leaf, httpx2.HTTPError) and isinstance(cfg, HttpServerConfig):
            reason = f"cannot reach {redact_url(cfg.url)}: {type(leaf).__name__}: {leaf}"
            fix = "check the URL, and that the server is running"
        else:
            reason = f"{type(leaf).__name__}: {leaf}"
        # Read to the end first: the child's last words often say why. A child that wrote nothing
        # (or never started) has nothing to point at.
        tail = pump.tail() if pump is not None else ""
        if tail and isinstance(cfg, StdioServerConfig) and cfg.expose_stderr:
            reason += f"; server stderr: {tail[-500:]}"
        elif tail:
            reason += "; the server's stderr is in the log (mcp.stderr)"
        error = BackendUnavailableError(self.label, reason, fix=fix)
        # The operator's log gets the last lines of stderr even when the lines themselves are not shown.
        context = {k: v for k, v in (("fix", error.fix), ("stderr", tail[-500:])) if v}
        self._log.warning("mcp.unavailable", reason=error.reason, **context)
        return error

    # -- tool listing ------------------------------------------------------------------

    async def _list_raw(self, conn: _Connection) -> list[Any]:
        out: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        # The whole listing is bounded, not only each page: pages of a server that never gives
        # the last one would otherwise be held up to _MAX_LIST_PAGES of them.
        most = _LIST_BYTES_PER_REPLY * self._config.max_response_bytes
        held = 0
        for _ in range(_MAX_LIST_PAGES):
            page = await raw_request(conn.session, "tools/list", {"cursor": cursor} if cursor else None)
            tools = page.get("tools")
            if isinstance(tools, list):
                held += approx_size(tools, most - held)
                if held > most:
                    self._log.warning("mcp.list_size_cap", max_bytes=most, tools=len(out))
                    return out
                out.extend(cast(list[Any], tools))
            nxt = page.get("nextCursor")
            if not isinstance(nxt, str) or not nxt:
                return out
            if nxt in seen:
                self._log.warning("mcp.list_cursor_loop", cursor=nxt[:_SHOWN_CURSOR])
                return out
            held += len(nxt)
            seen.add(nxt)
            cursor = nxt
        self._log.warning("mcp.list_page_cap", pages=_MAX_LIST_PAGES)
        return out

    async def _learn_headers(self, conn: _Connection) -> None:
        raw_tools = await self._list_raw(conn)
        usable = [cast(dict[str, Any], t) for t in raw_tools if isinstance(t, dict)]
        learn_param_headers(conn.session, usable)

    async def _sync_index(self) -> list[Tool]:
        # Callers hold the listing lock: two listings interleaving would leave the older one's tools.
        conn = await self._connection()
        try:
            with anyio.fail_after(self._config.connect_timeout):
                raw_tools = await self._list_raw(conn)
        except TimeoutError:
            raise BackendUnavailableError(
                self.label, f"tools/list did not finish within {self._config.connect_timeout:g} s"
            ) from None
        except MCPError as e:
            if e.code == CONNECTION_CLOSED and is_closed(conn.session):
                self._retire(conn)
            reason = f"tools/list failed: {e.message}{conn.stderr_note()}"
            fix = f'raise the server\'s "maxResponseBytes" ({self._config.max_response_bytes:,})'
            fix_if = fix if _error_reason(e) == TOO_LARGE else None
            raise BackendUnavailableError(self.label, reason, fix=fix_if) from _safe_cause(e)
        modern = conn.session.protocol_version in MODERN_PROTOCOL_VERSIONS
        # Checking schemas is CPU work that grows with the catalog (seconds for a tool with 30,000
        # properties): a worker thread does it, so the event loop keeps serving every other call.
        index = self._index
        # An index that can (toolindex.InMemoryIndex) also tokenises the changed tools there.
        prepare: Callable[[list[tuple[Tool, BackendRef]]], PreparedBatch] | None = getattr(index, "prepare_many", None)
        register_prepared: Callable[[PreparedBatch], None] | None = getattr(index, "register_prepared", None)
        if register_prepared is None:
            prepare = None
        plan, prepared = await anyio.to_thread.run_sync(
            partial(
                _plan_and_prepare,
                partial(_plan_listing, raw_tools, self._name, modern, dict(self._tools), self._verdicts, conn.session),
                prepare,
            ),
            abandon_on_cancel=True,
        )
        for n, (label, reason) in enumerate(plan.skipped.items()):
            if n == _SKIP_LOG_MAX:
                self._log.warning("mcp.tools_skipped", more=len(plan.skipped) - n)
                break
            self._log.warning("mcp.tool_skipped", tool=redact(label), reason=redact(reason))
        if index is not None:
            # What is left of registering runs on the event loop (index events reach their
            # subscribers there): in slices of bounded work, with other tasks between. Each slice
            # is atomic; a reader between two sees some tools new and the others not yet.
            if prepared is not None and register_prepared is not None:
                for n, part in enumerate(prepared.split(_REGISTER_COST)):
                    if n:
                        await anyio.lowlevel.checkpoint()
                    register_prepared(part)
            else:
                for start in range(0, len(plan.changed), _REGISTER_SLICE):
                    if start:
                        await anyio.lowlevel.checkpoint()
                    index.register_many(plan.changed[start : start + _REGISTER_SLICE])
            # Removing a tool tokenises it again (to find its terms): sliced by the same measure.
            done = 0
            for old in plan.removed:
                if done >= _REGISTER_COST:
                    await anyio.lowlevel.checkpoint()
                    done = 0
                done += indexing_cost(old)
                try:
                    index.unregister(old.id)
                except ToolNotFoundError:
                    pass
        self._tools, self._skipped, self._verdicts = plan.tools, plan.skipped, plan.verdicts
        self._log.info("mcp.tools_listed", count=len(plan.tools), skipped=len(plan.skipped))
        return list(plan.tools.values())

    # -- list_changed ------------------------------------------------------------------

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._schedule_refresh()
        elif isinstance(message, Exception):
            self._log.debug("mcp.transport_error", error=redact(repr(message))[:500])

    @staticmethod
    def _announces_list_changed(client: Client) -> bool:
        # 2026-07-28 servers deliver change events only on a subscriptions/listen stream.
        caps = client.session.server_capabilities
        return (
            client.session.protocol_version in MODERN_PROTOCOL_VERSIONS
            and caps is not None
            and caps.tools is not None
            and bool(caps.tools.list_changed)
        )

    async def _listen(self, conn: _Connection) -> None:
        try:
            async with conn.client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    self._schedule_refresh()
        except Exception as e:  # boundary: losing the change stream must not end the session
            if not conn.stop.is_set():
                self._log.info("mcp.listen_ended", error=redact(repr(_leaf(e))))

    def _schedule_refresh(self) -> None:
        if self._index is None or self._tg is None or self._closed:
            return
        if self._refreshing:
            self._refresh_again = True
            return
        self._refreshing = True
        self._tg.start_soon(self._refresh)

    async def _refresh(self) -> None:
        try:
            while True:
                self._refresh_again = False
                # A storm of change notices costs one listing per interval, not one per notice.
                await anyio.sleep(max(0.0, self._last_relist + _RELIST_INTERVAL_S - anyio.current_time()))
                self._last_relist = anyio.current_time()
                try:
                    async with self._listing_lock():
                        await self._sync_index()
                except Exception as e:  # boundary: a failed re-list keeps the previous tools
                    self._log.warning("mcp.relist_failed", error=redact(repr(_leaf(e))))
                if not self._refresh_again or self._closed:
                    return
        finally:
            self._refreshing = False


@dataclass(frozen=True, slots=True)
class _Verdict:
    raw: Any
    """The definition as checked (masked)."""
    modern: bool
    outcome: Tool | str
    """The tool, or why it was skipped."""


@dataclass(frozen=True, slots=True)
class _Plan:
    tools: dict[str, Tool]
    skipped: dict[str, str]
    changed: list[tuple[Tool, BackendRef]]
    removed: list[Tool]
    verdicts: dict[str, _Verdict]


def _check_tool(raw: Any, server: str, modern: bool) -> Tool | str:
    if isinstance(raw, dict) and UNREADABLE in raw:
        return str(cast(dict[str, Any], raw)[UNREADABLE])
    try:
        return parse_tool(raw, server, modern=modern)
    except ValueError as e:
        return str(e)
    except RecursionError:
        return "its definition is nested too deep to check"
    except Exception as e:  # boundary: whatever one hostile definition does, the others are kept
        return f"cannot be read ({type(e).__name__})"


def _plan_and_prepare(
    plan_listing: Callable[[], _Plan], prepare: Callable[[list[tuple[Tool, BackendRef]]], PreparedBatch] | None
) -> tuple[_Plan, PreparedBatch | None]:
    # Runs in a worker thread: the listing's plan, and its changed tools checked and tokenised
    # for the index (which reads its own state under its lock).
    plan = plan_listing()
    return plan, prepare(plan.changed) if prepare is not None and plan.changed else None


def _plan_listing(
    raw_tools: list[Any],
    server: str,
    modern: bool,
    old: dict[str, Tool],
    verdicts: dict[str, _Verdict],
    session: ClientSession,
) -> _Plan:
    # Runs in a worker thread: reads only its arguments (and fills the session's header maps).
    tools: dict[str, Tool] = {}
    skipped: dict[str, str] = {}
    usable: list[dict[str, Any]] = []
    fresh: dict[str, _Verdict] = {}
    # Search, docs, stubs and digests all read the index: a secret is masked here, before a
    # definition is checked, compared or indexed. The wire form (``raw``) is what travels back to
    # this server (its ``Mcp-Param-*`` headers).
    shown = masked_definitions(raw_tools)
    for i, (raw, entry) in enumerate(zip(raw_tools, shown, strict=True)):
        name = cast(dict[str, Any], entry).get("name") if isinstance(entry, dict) else None
        label = name[:128] if isinstance(name, str) and name else f"#{i}"
        seen = verdicts.get(label)
        if seen is not None and seen.modern == modern and seen.raw == entry:
            outcome = seen.outcome
        else:
            outcome = _check_tool(entry, server, modern)
            # Hand the GIL over between tools: the event loop waits for it to serve other calls.
            time.sleep(0)
        fresh.setdefault(label, _Verdict(entry, modern, outcome))
        if isinstance(outcome, str):
            skipped[label] = outcome
        elif outcome.name in tools:
            skipped[label] = "listed twice; the first definition is kept"
        else:
            tools[outcome.name] = outcome
            usable.append(cast(dict[str, Any], raw))
    if modern:
        learn_param_headers(session, usable)
    changed = [(t, BackendRef.mcp(server, tool=n)) for n, t in tools.items() if old.get(n) != t]
    removed = [t for n, t in old.items() if n not in tools]
    return _Plan(tools, skipped, changed, removed, fresh)
