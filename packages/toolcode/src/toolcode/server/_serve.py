"""Run a :class:`CodeModeServer` over stdio or streamable HTTP."""

from __future__ import annotations

import contextlib
import logging
import math
import signal
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from types import FrameType
from typing import Any, cast

import anyio
import uvicorn
from mcp.server import NotificationOptions
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

from toolcode._app import Toolbox
from toolcode._compat_mcp import session_ender
from toolcode.exceptions import ConfigurationError
from toolcode.server._compat_uvicorn import (
    BODY_TIMEOUT,
    HEAD_TIMEOUT,
    deadline_protocol,
    stop_listening,
    streams_left_to_the_door,
    take_signals,
)
from toolcode.server._http_address import check_bind, is_loopback
from toolcode.server._http_guard import (
    MAX_SESSIONS,
    MAX_SESSIONS_PER_CALLER,
    ASGIApp,
    HTTPGuard,
    Receive,
    Scope,
    Send,
)
from toolcode.server._http_leaving import CancelOnLeave
from toolcode.server._http_stopping import STOP_GRACE, Stopping
from toolcode.server._http_tokens import BearerTokens
from toolcode.server._server import CodeModeServer
from toolcode.server._stdio import AnsweringReadStream, OpenRequests
from toolcode.server._stdio_in import StdinLines
from toolindex.log import get_logger
from toolrun import RedactingFilter, redact_processor

__all__ = ["log_to_stderr", "serve_http", "serve_stdio"]

log = get_logger("toolcode.server")

_Task = Callable[[], Coroutine[Any, Any, None]]

SESSION_IDLE_TIMEOUT = 30 * 60.0
"""Seconds a 2025-11-25 HTTP session may go without a request in flight before it ends, by default."""


class _Server(uvicorn.Server):
    """Uvicorn's server with an event for "listening", and a graceful stop (:mod:`._http_stopping`).

    A signal it stops on is not raised again once it has stopped (uvicorn's way): SIGTERM would kill
    the process before the upstream servers are closed. :attr:`signals` says which it stopped on.
    """

    def __init__(self, config: uvicorn.Config, stopping: Stopping, grace: float) -> None:
        super().__init__(config)
        self.ready = anyio.Event()
        self.stopping = stopping
        self.grace = grace
        self.signals: list[signal.Signals] = []
        self.cancelled = False

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.signals.append(signal.Signals(sig))
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        with super().capture_signals():
            yield
            take_signals(self)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        stop_listening(self)
        why = self.signals[0].name if self.signals else "cancelled" if self.cancelled else ""
        await self.stopping.stop(self.grace, why=why)
        await super().shutdown(sockets=sockets)

    async def serve_until_cancelled(self, sock: socket.socket) -> None:
        """Serve on ``sock``; cancelled, stop as on SIGTERM (uvicorn's own stop, under a shield) and return.

        Cut mid-way, uvicorn's ``serve`` skipped its shutdown: the requests in flight got no grace, and
        its lifespan task, left to the loop, logged a ``CancelledError`` traceback when the loop ended.
        """
        async with anyio.create_task_group() as tg:

            async def stop_when_cancelled() -> None:
                try:
                    await anyio.sleep_forever()
                finally:
                    self.cancelled = self.should_exit = True

            tg.start_soon(stop_when_cancelled)
            with anyio.CancelScope(shield=True):
                await self.serve(sockets=[sock])
            tg.cancel_scope.cancel()


def log_to_stderr(level: int = logging.INFO) -> None:
    """Send standard-library and structlog logs to stderr, timestamped, at ``level`` (the ``toolcode`` command's setup).

    The packages never log to stdout on their own (:mod:`toolindex.log`): with structlog not
    configured their events go to the standard library as ``event key=value`` lines, under one
    handler with the ``mcp`` SDK's and the HTTP client's. structlog is set up too when the process
    has imported it (a host that uses it), and is not imported otherwise. Every line is redacted
    (``toolrun.redact``): configured header and env values, URL credentials and secret-looking
    parameters never reach the log.

    Args:
        level: The lowest level logged (a ``logging`` constant).
    """
    logging.basicConfig(
        stream=sys.stderr, level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S"
    )
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
    structlog: Any = sys.modules.get("structlog")
    if structlog is None:
        return

    def stderr_logger(*_args: object) -> Any:
        return structlog.PrintLogger(sys.stderr)  # sys.stderr as it is when each logger is made

    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="%H:%M:%S"),
            redact_processor,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=stderr_logger,
        cache_logger_on_first_use=False,
    )


def _with_console(app: ASGIApp, toolbox: Toolbox, tokens: BearerTokens | None) -> ASGIApp:
    """``app`` with the console (:mod:`toolcode.console`) answering its own paths."""
    from toolcode.console import Console, is_console_path  # the console's modules load only when it is on

    console = Console(toolbox.codemode, tokens)

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        # By path for HTTP and WebSocket alike: the guard lets both through to console paths without a token.
        chosen = console if scope["type"] != "lifespan" and is_console_path(str(scope.get("path", ""))) else app
        await chosen(scope, receive, send)

    return route


async def _serve(server: CodeModeServer, main: Callable[[], Awaitable[None]], *beside: _Task) -> None:
    """Run ``main`` (and ``beside`` it) while catalog changes go to the clients; the server is closed after."""
    try:
        async with anyio.create_task_group() as tg:
            for task in (server.notify_changes, *beside):
                tg.start_soon(task)
            await main()
            tg.cancel_scope.cancel()
    finally:
        server.close()


async def serve_stdio(toolbox: Toolbox, *, expose: Sequence[str] | None = None) -> None:
    """Serve the code-mode tools over stdin/stdout until the client closes stdin, or the process is told to stop.

    Nothing but the protocol reaches stdout while serving: text a program printed before is
    flushed first, and the packages never log to stdout (:func:`log_to_stderr` is a ready-made setup).
    When stdin ends, the requests read before its end are answered first (for up to 10 seconds,
    :data:`~toolcode.server._http_stopping.STOP_GRACE`). Cancelling the caller's scope stops the
    server at once, whether or not its client is sending; called from the main thread, SIGTERM and
    SIGINT do the same (logged as ``server.stopping``): runs in flight are cancelled, then it
    returns (SIGTERM) or raises ``KeyboardInterrupt`` (SIGINT), as
    :func:`serve_http` does; the toolbox is the caller's to close.

    Args:
        toolbox: A connected toolbox (not closed here).
        expose: Upstream tools to publish directly as well (``namespace:name`` patterns;
            ``None``: the config's ``toolcode.expose``).
    """
    # Lines printed before now may still sit in sys.stdout's buffer: out with them before the first message.
    sys.stdout.flush()
    server = CodeModeServer(toolbox, expose=expose)
    options = server.server.create_initialization_options(NotificationOptions(tools_changed=True))

    stopped_on: list[signal.Signals] = []

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_on_signals, tg.cancel_scope, stopped_on)
            async with StdinLines() as lines, stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (read, write):
                # At the end of input, the requests sent before it are answered first (for up to the grace).
                requests = OpenRequests(STOP_GRACE)
                reading = requests.reading(AnsweringReadStream(read, write))
                await server.server.run(reading, requests.writing(write), options)
            tg.cancel_scope.cancel()

    await _serve(server, run)
    _stopped(stopped_on)


async def _stop_on_signals(scope: anyio.CancelScope, received: list[signal.Signals]) -> None:
    """Cancel ``scope`` on SIGINT or SIGTERM, which goes in ``received`` (main thread only: signals are its alone)."""
    if threading.current_thread() is not threading.main_thread():
        return
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for sig in signals:
            received.append(signal.Signals(sig))
            log.info("server.stopping", why=received[0].name)
            scope.cancel()
            return


def _stopped(signals: list[signal.Signals]) -> None:
    """After a server stopped on ``signals``: say so, and raise ``KeyboardInterrupt`` for SIGINT."""
    if signals:
        log.info("server.stopped", why=signals[0].name)
    if signal.SIGINT in signals:
        raise KeyboardInterrupt


async def serve_http(
    toolbox: Toolbox,
    host: str,
    port: int,
    *,
    expose: Sequence[str] | None = None,
    path: str = "/mcp",
    on_ready: Callable[[str], Awaitable[None] | None] | None = None,
    tokens: BearerTokens | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    head_timeout: float = HEAD_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
    session_idle_timeout: float = SESSION_IDLE_TIMEOUT,
    sessions_per_caller: int = MAX_SESSIONS_PER_CALLER,
    stop_grace: float = STOP_GRACE,
) -> None:
    """Serve streamable HTTP on ``host:port`` (``port=0`` picks a free port) until cancelled or signalled.

    In the main thread, SIGTERM and SIGINT stop it gracefully: it stops listening, lets the requests
    in flight finish for up to ``stop_grace`` seconds, then cancels the rest and answers each
    (``503``, or its response ended), one log line per request cut; then it returns (SIGTERM) or
    raises ``KeyboardInterrupt`` (SIGINT). Cancelled, it stops the same way (the grace included), then
    lets the cancellation go on.

    Both protocol eras are served on the same endpoint: 2026-07-28 requests are stateless,
    2025-11-25 clients get a session after ``initialize``. Every request passes an
    :class:`~toolcode.server.HTTPGuard` first (Host, Origin, and with ``tokens`` the bearer
    token and the session's owner). With ``tokens`` each caller holds at most
    ``sessions_per_caller`` sessions: opening one more ends its least recently used, so that a
    caller within its share can always open a session, whatever the others do; without tokens
    (one local user) the server holds at most 10,000. A non-loopback ``host`` is refused without
    ``tokens``, and logs a warning when served: this server speaks plain HTTP, so TLS belongs in a
    reverse proxy in front of it.
    With ``toolcode.console.enabled`` the console is served under ``/console`` on the same port
    (signed in with the same tokens; docs/console.md).

    Args:
        toolbox: A connected toolbox (not closed here).
        host: Interface to bind: a loopback address (``127.0.0.1``, ``::1``, ``localhost``),
            or, with ``tokens``, any other address (``""`` or ``0.0.0.0``: every IPv4 interface).
        port: TCP port, or 0 for any free one.
        expose: Upstream tools to publish directly as well (``None``: the config's ``toolcode.expose``).
        path: The MCP endpoint path.
        on_ready: Called with the endpoint URL once the socket listens.
        tokens: The bearer tokens callers must present (required off loopback).
        allowed_hosts: Extra ``Host`` values, ``NAME`` or ``NAME:PORT`` (a reverse proxy's public name).
        allowed_origins: Extra allowed ``Origin`` values, e.g. ``https://app.example.com``.
        head_timeout: Seconds a request's head may take to arrive (from the connection's start, or
            from its first byte after a response); a connection past it is closed unanswered, so
            half-sent requests cannot hold the server's connections.
        body_timeout: Seconds a request's body may take to arrive after its head; a connection past
            it is closed.
        session_idle_timeout: Seconds a 2025-11-25 session may go without a request in flight (no
            request being served, no open ``GET`` stream) before it ends; its id answers 404 after.
        sessions_per_caller: With ``tokens``, the sessions one caller may hold at once.
        stop_grace: Seconds the requests in flight may take to finish once a signal stops the server.

    Raises:
        ConfigurationError: A non-loopback ``host`` without ``tokens``; a malformed
            ``allowed_hosts`` or ``allowed_origins`` entry; a port outside 0-65535; a timeout that
            is not a finite number of seconds > 0; ``sessions_per_caller`` below 1.
        InvalidArgumentsError: The console is on and the toolbox has no state store.
    """
    check_bind(host, tokens)
    if not 0 <= port <= 65535:
        raise ConfigurationError("port", f"{port} is not a port number from 0 to 65535")
    timeouts = (
        ("head_timeout", head_timeout),
        ("body_timeout", body_timeout),
        ("session_idle_timeout", session_idle_timeout),
        ("stop_grace", stop_grace),
    )
    for field, seconds in timeouts:
        if not 0 < seconds < math.inf:
            raise ConfigurationError(field, f"{seconds!r} is not a finite number of seconds > 0")
    bind_host = host.strip("[]") or "0.0.0.0"
    server = CodeModeServer(toolbox, expose=expose)
    sock = socket.socket(socket.AF_INET6 if ":" in bind_host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: without it Nagle's algorithm and delayed ACKs add about
        # 40 ms to every 2026-07-28 (one POST per request) exchange.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((bind_host, port))
        bound_port = int(sock.getsockname()[1])
        # The SDK's own Host check (on for loopback names) would refuse what the operator allowed; the
        # guard in front applies the same checks with those additions, on every path.
        off = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        security = off if allowed_hosts or allowed_origins else None
        # With tokens the guard bounds the sessions (per caller, and in all) and ends in the SDK each
        # one it forgets: an SDK limit of its own would let one caller's sessions refuse every other's.
        app = server.server.streamable_http_app(
            streamable_http_path=path, host=bind_host, transport_security=security,
            session_idle_timeout=session_idle_timeout, max_sessions=None if tokens is not None else MAX_SESSIONS,
        )  # fmt: skip
        console = toolbox.settings.console.enabled
        app = CancelOnLeave(app)
        guarded = HTTPGuard(
            _with_console(app, toolbox, tokens) if console else app, host=bind_host, port=bound_port, tokens=tokens,
            allowed_hosts=allowed_hosts, allowed_origins=allowed_origins, signs_in=("/console",) if console else (),
            end_session=session_ender(server.server.session_manager), sessions_per_caller=sessions_per_caller,
        )  # fmt: skip
        stopping = Stopping(guarded)
    except BaseException:
        sock.close()
        server.close()
        raise
    shown = f"[{bind_host}]:{bound_port}" if ":" in bind_host else f"{bind_host}:{bound_port}"
    url = f"http://{shown}{path}"
    if not is_loopback(bind_host):
        log.warning(
            "http.non_loopback_bind",
            detail=f"serving HTTP on {shown}, a non-loopback address: callers need a bearer token, "
            "and this server speaks plain HTTP, so terminate TLS at a reverse proxy in front of it "
            "(docs/security.md, 'Running the HTTP door')",
            address=shown,
            tokens=len(tokens) if tokens is not None else 0,
        )
    protocol = deadline_protocol(head_timeout, body_timeout)
    # Its own wait is a backstop only: the requests are ended by `stopping` first.
    config = uvicorn.Config(stopping, http=protocol, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    web = _Server(config, stopping, stop_grace)

    async def announce() -> None:
        await web.ready.wait()
        # Not ``auth=``: the log's redaction hides the values of keys that look secret.
        log.info("server.listening", url=url, callers="bearer tokens" if tokens is not None else "any local")
        if toolbox.settings.console.enabled:
            log.info("server.console", url=f"http://{shown}/console")
        if on_ready is not None and (out := on_ready(url)) is not None:
            await out

    try:
        with streams_left_to_the_door():  # its Stopping ends them, after the grace
            await _serve(server, lambda: web.serve_until_cancelled(sock), announce)
    finally:
        sock.close()
    _stopped(web.signals)
