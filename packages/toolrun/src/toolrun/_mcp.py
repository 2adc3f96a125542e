"""The MCP backend: one persistent session per configured server, over stdio or streamable HTTP."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import AsyncGenerator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, Any, Self, TextIO, cast

import anyio
import anyio.abc
import httpx2
import mcp_types as types
import structlog
from mcp import Client, ClientSession, MCPError, StdioServerParameters
from mcp.client.session import IncomingMessage
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp_types import CONNECTION_CLOSED, HEADER_MISMATCH
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolindex import BackendKind, BackendRef, Index, Tool, ToolNotFoundError
from toolrun._config import HttpServerConfig, ServerConfig, ServersConfig, StdioServerConfig, check_server_name
from toolrun._mcp_wire import is_closed, learn_param_headers, normalise_result, parse_tool, raw_request
from toolrun._spawn import watchdog_command
from toolrun._types import BackendResult, ProgressCallback, ProgressEvent
from toolrun.exceptions import BackendUnavailableError, ToolExecutionError, ToolTimeoutError

__all__ = ["MCPBackend", "backends_from_config", "open_backends"]

_log = structlog.get_logger("toolrun.mcp")

_CLIENT_INFO = types.Implementation(name="toolrun", version="0.1.0")
# What a stdio child inherits when the config does not ask for the whole environment:
# enough to find executables, a home directory, temp space and the locale.
_INHERITED_ENV = (
    "HOME",
    "LOGNAME",
    "USER",
    "PATH",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "SYSTEMROOT",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
    "PATHEXT",
)
_MAX_LIST_PAGES = 1000
_STDERR_TAIL = 2000
_STDERR_MAX = 4 * 1024 * 1024
_STDERR_CHECK_S = 30.0


def _child_env(cfg: StdioServerConfig) -> dict[str, str]:
    env = dict(os.environ) if cfg.inherit_env else {k: os.environ[k] for k in _INHERITED_ENV if k in os.environ}
    env.update(cfg.env)
    return env


def _leaf(exc: BaseException) -> BaseException:
    # Task groups wrap transport failures in exception groups; the first leaf says what happened.
    out: object = exc
    while True:
        inner: tuple[BaseException, ...] = getattr(out, "exceptions", ())
        if not inner:
            return out  # pyright: ignore[reportReturnType]
        out = inner[0]


def _tail(f: IO[bytes] | None) -> str:
    if f is None:
        return ""
    try:
        # pread leaves the file offset alone: the child shares it and keeps appending.
        fd = f.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - _STDERR_TAIL)
        return os.pread(fd, size - start, start).decode("utf-8", errors="replace").strip()
    except (OSError, ValueError):
        return ""


async def _trim_stderr(f: IO[bytes]) -> None:
    # A chatty server would otherwise grow the file for as long as the session lives. The
    # offset is shared with the child, so rewinding it makes the child write from the start.
    while True:
        await anyio.sleep(_STDERR_CHECK_S)
        try:
            if os.fstat(f.fileno()).st_size > _STDERR_MAX:
                os.ftruncate(f.fileno(), 0)
                os.lseek(f.fileno(), 0, os.SEEK_SET)
        except (OSError, ValueError):
            return


@dataclass(eq=False)
class _Connection:
    client: Client
    session: ClientSession
    stderr: IO[bytes] | None
    stop: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    dead: bool = False

    @property
    def usable(self) -> bool:
        return not self.dead and not is_closed(self.session)

    def stderr_note(self) -> str:
        tail = _tail(self.stderr)
        return f"; server stderr: {tail[-500:]}" if tail else ""


class MCPBackend:
    """Runs the tools of one MCP server, over stdio or streamable HTTP.

    One persistent session per server: it is opened on the first :meth:`attach` or
    :meth:`call` (under a lock, so concurrent first calls share it), shared by every
    concurrent call, and reopened by the next call after the server dies. Each call may
    carry a timeout; a timeout or a cancelled caller sends ``notifications/cancelled`` to
    the server. Progress notifications reach the call's ``progress`` callback.

    :meth:`attach` lists the server's tools (following ``nextCursor``) into the index under
    the server's name as namespace, and keeps them current when the server announces
    ``tools/list_changed``. A malformed tool is skipped with a logged reason (see
    :attr:`skipped`); the rest of the server stays usable.

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
        self._name = name
        self._config = config
        self._log = _log.bind(server=name)
        self._tg: anyio.abc.TaskGroup | None = None
        self._lock: anyio.Lock | None = None
        self._conn: _Connection | None = None
        self._live: set[_Connection] = set()
        self._index: Index | None = None
        self._tools: dict[str, Tool] = {}
        self._skipped: dict[str, str] = {}
        self._entered = False
        self._depth = 0
        self._closed = False
        self._refreshing = False
        self._refresh_again = False

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
        if index is not self._index:
            # A new index starts empty for us: register everything, not just what changed.
            self._index, self._tools = index, {}
        return await self._sync_index()

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
            args: Arguments, sent as given.
            timeout: Seconds before the call is abandoned (default: the server's configured ``timeout``).
            progress: Receives the server's progress notifications for this call.

        Returns:
            The normalised result; a tool-level failure comes back with ``is_error=True``.

        Raises:
            ToolTimeoutError: The call did not finish in time (the server was told to cancel it).
            BackendUnavailableError: The server could not be started, or died during the call.
            ToolExecutionError: The server answered with a protocol error or a malformed result.
        """
        limit = timeout if timeout is not None else self._config.timeout
        on_progress: ProgressFnT | None = None
        if progress is not None:
            cb, tool_id = progress, tool.id

            async def forward(progress: float, total: float | None, message: str | None) -> None:
                await cb(ProgressEvent(tool_id, progress, total, message))

            on_progress = forward

        conn = await self._connection()
        params = {"name": ref.tool or tool.name, "arguments": dict(args)}
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
            if e.code == CONNECTION_CLOSED:
                self._retire(conn)
                reason = f"the server closed the connection during a call to {params['name']!r}"
                raise BackendUnavailableError(self.label, reason + conn.stderr_note()) from e
            raise ToolExecutionError(tool.id, f"{e.message} (MCP error {e.code})") from e
        try:
            return normalise_result(raw)
        except ValueError as e:
            raise ToolExecutionError(tool.id, f"malformed result from the server: {e}") from e

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
        conn.dead = True
        conn.stop.set()

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[_Connection]) -> None:
        # Owns one session from connect to close, so every scope the SDK opens is entered and
        # exited in this task. Nothing may escape once started: that would cancel the host task.
        cfg = self._config
        stderr: IO[bytes] | None = tempfile.TemporaryFile() if isinstance(cfg, StdioServerConfig) else None
        conn: _Connection | None = None
        try:
            # A deadline on a scope around the whole session (lifted once connected): the SDK's
            # task groups opened during connect must close in the scope they were opened in.
            with anyio.CancelScope(deadline=anyio.current_time() + cfg.connect_timeout) as scope:
                async with AsyncExitStack() as stack:
                    try:
                        client = await self._open(stack, stderr)
                    except Exception as e:  # boundary: any failure to start or reach the server means unavailable
                        raise self._unavailable(e, stderr) from e
                    scope.deadline = math.inf
                    conn = _Connection(client, client.session, stderr)
                    self._live.add(conn)
                    self._log.info("mcp.connected", protocol=client.protocol_version)
                    task_status.started(conn)
                    try:
                        async with anyio.create_task_group() as inner:
                            if self._announces_list_changed(client):
                                inner.start_soon(self._listen, conn)
                            if stderr is not None:
                                inner.start_soon(_trim_stderr, stderr)
                            await conn.stop.wait()
                            inner.cancel_scope.cancel()
                    except Exception as e:  # boundary: a failing session must not take the host task down
                        self._log.warning("mcp.session_error", error=repr(_leaf(e)))
            if conn is None:
                raise self._unavailable(TimeoutError(), stderr)
        except Exception as e:
            if conn is None:
                raise
            self._log.info("mcp.close_error", error=repr(_leaf(e)))
        finally:
            if conn is not None:
                conn.dead = True
                self._live.discard(conn)
                conn.done.set()
            if stderr is not None:
                stderr.close()

    async def _open(self, stack: AsyncExitStack, stderr: IO[bytes] | None) -> Client:
        cfg = self._config
        if isinstance(cfg, StdioServerConfig):
            env = _child_env(cfg)
            # Through the watchdog launcher: the server and its children die with this process, even by SIGKILL.
            command, args = watchdog_command(cfg.command, cfg.args, env=env, cwd=cfg.cwd)
            params = StdioServerParameters(command=command, args=args, env=env, cwd=cfg.cwd)
            # The child's stderr goes to a temp file so a failure can quote its last lines.
            transport = stdio_client(params, errlog=cast(TextIO, stderr))
        else:
            assert isinstance(cfg, HttpServerConfig)
            # Reads may idle while a tool works; per-call timeouts are the real bound.
            read = max(300.0, (cfg.timeout or 0.0) + 30.0)
            http = httpx2.AsyncClient(headers=cfg.headers, timeout=httpx2.Timeout(cfg.connect_timeout, read=read))
            await stack.enter_async_context(http)
            # The SDK caps one SSE event at 1 MiB by default; tool results can be larger.
            transport = streamable_http_client(cfg.url, http_client=http, max_sse_event_size=None)
        client = Client(
            transport, mode=cfg.protocol, message_handler=self._on_message, client_info=_CLIENT_INFO, cache=None
        )
        return await stack.enter_async_context(client)

    def _unavailable(self, e: BaseException, stderr: IO[bytes] | None) -> BackendUnavailableError:
        leaf = _leaf(e)
        cfg = self._config
        if isinstance(leaf, TimeoutError):
            reason = f"no MCP handshake within {cfg.connect_timeout:g} s"
        elif isinstance(leaf, FileNotFoundError) and isinstance(cfg, StdioServerConfig):
            reason = f"cannot start {cfg.command!r}: command not found"
        elif isinstance(leaf, OSError) and isinstance(cfg, StdioServerConfig):
            reason = f"cannot start {cfg.command!r}: {leaf.strerror or leaf}"
        elif isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
            reason = "the server closed the connection during the handshake (did it exit?)"
        elif isinstance(leaf, httpx2.HTTPError) and isinstance(cfg, HttpServerConfig):
            reason = f"cannot reach {cfg.url}: {type(leaf).__name__}: {leaf}"
        else:
            reason = f"{type(leaf).__name__}: {leaf}"
        tail = _tail(stderr)
        if tail:
            reason += f"; server stderr: {tail[-500:]}"
        self._log.warning("mcp.unavailable", reason=reason)
        return BackendUnavailableError(self.label, reason)

    # -- tool listing ------------------------------------------------------------------

    async def _list_raw(self, conn: _Connection) -> list[Any]:
        out: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(_MAX_LIST_PAGES):
            page = await raw_request(conn.session, "tools/list", {"cursor": cursor} if cursor else None)
            tools = page.get("tools")
            if isinstance(tools, list):
                out.extend(cast(list[Any], tools))
            nxt = page.get("nextCursor")
            if not isinstance(nxt, str) or not nxt:
                return out
            if nxt in seen:
                self._log.warning("mcp.list_cursor_loop", cursor=nxt)
                return out
            seen.add(nxt)
            cursor = nxt
        self._log.warning("mcp.list_page_cap", pages=_MAX_LIST_PAGES)
        return out

    async def _learn_headers(self, conn: _Connection) -> None:
        raw_tools = await self._list_raw(conn)
        usable = [cast(dict[str, Any], t) for t in raw_tools if isinstance(t, dict)]
        learn_param_headers(conn.session, usable)

    async def _sync_index(self) -> list[Tool]:
        conn = await self._connection()
        try:
            with anyio.fail_after(self._config.connect_timeout):
                raw_tools = await self._list_raw(conn)
        except TimeoutError:
            raise BackendUnavailableError(
                self.label, f"tools/list did not finish within {self._config.connect_timeout:g} s"
            ) from None
        except MCPError as e:
            if e.code == CONNECTION_CLOSED:
                self._retire(conn)
            raise BackendUnavailableError(self.label, f"tools/list failed: {e.message}{conn.stderr_note()}") from e
        tools: dict[str, Tool] = {}
        skipped: dict[str, str] = {}
        modern = conn.session.protocol_version in MODERN_PROTOCOL_VERSIONS
        usable: list[dict[str, Any]] = []
        for i, raw in enumerate(raw_tools):
            label = str(cast(dict[str, Any], raw).get("name", f"#{i}")) if isinstance(raw, dict) else f"#{i}"
            try:
                tool = parse_tool(raw, self._name, modern=modern)
            except ValueError as e:
                skipped[label] = str(e)
                self._log.warning("mcp.tool_skipped", tool=label, reason=str(e))
                continue
            if tool.name in tools:
                skipped[label] = "listed twice; the first definition is kept"
                self._log.warning("mcp.tool_skipped", tool=label, reason=skipped[label])
                continue
            tools[tool.name] = tool
            usable.append(cast(dict[str, Any], raw))
        if modern:
            learn_param_headers(conn.session, usable)
        index = self._index
        if index is not None:
            changed = [(t, BackendRef.mcp(self._name, tool=n)) for n, t in tools.items() if self._tools.get(n) != t]
            if changed:
                index.register_many(changed)
            for n, old in self._tools.items():
                if n not in tools:
                    try:
                        index.unregister(old.id)
                    except ToolNotFoundError:
                        pass
        self._tools, self._skipped = tools, skipped
        self._log.info("mcp.tools_listed", count=len(tools), skipped=len(skipped))
        return list(tools.values())

    # -- list_changed ------------------------------------------------------------------

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._schedule_refresh()
        elif isinstance(message, Exception):
            self._log.debug("mcp.transport_error", error=repr(message))

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
                self._log.info("mcp.listen_ended", error=repr(_leaf(e)))

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
                try:
                    await self._sync_index()
                except Exception as e:  # boundary: a failed re-list keeps the previous tools
                    self._log.warning("mcp.relist_failed", error=repr(_leaf(e)))
                if not self._refresh_again or self._closed:
                    return
        finally:
            self._refreshing = False


def backends_from_config(config: ServersConfig) -> list[MCPBackend]:
    """One :class:`MCPBackend` per enabled server, in configuration order.

    Args:
        config: Loaded with :func:`~toolrun.load_config`.

    Returns:
        The backends (not yet entered or connected).
    """
    return [MCPBackend(name, cfg) for name, cfg in config.enabled().items()]


@asynccontextmanager
async def open_backends(config: ServersConfig) -> AsyncGenerator[list[MCPBackend]]:
    """Enter one :class:`MCPBackend` per enabled server; close them all on exit.

    Entering connects nothing: each server starts on its first ``attach`` or call.

    >>> async with open_backends(load_config("mcp.json")) as backends, DefaultRunner(index, backends) as runner:
    ...     await runner.attach()

    Args:
        config: Loaded with :func:`~toolrun.load_config`.

    Yields:
        The entered backends, in configuration order.
    """
    backends = backends_from_config(config)
    async with AsyncExitStack() as stack:
        for b in backends:
            await stack.enter_async_context(b)
        yield backends
