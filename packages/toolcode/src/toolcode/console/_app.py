"""The console's ASGI application, served by ``toolcode serve --http`` under ``/console`` (docs/console.md)."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import aclosing, suppress
from importlib.resources import files
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qsl

import anyio
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route, Router

from toolcode._core import CodeMode
from toolcode.console import _html
from toolcode.console._auth import PRE_COOKIE, SESSION_COOKIE, SignIns, Viewer, may_post, same, set_cookie
from toolcode.console._views import AuditFilter, Views
from toolcode.exceptions import InvalidArgumentsError, StateUnavailableError, ToolCodeError

if TYPE_CHECKING:
    from toolcode.server._http_tokens import BearerTokens

__all__ = ["CONSOLE_PATH", "MAX_IN_FLIGHT", "Console", "is_console_path"]

CONSOLE_PATH: Final = "/console"
_CSP: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)
_HEADERS: Final = [
    (b"content-security-policy", _CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
_MAX_FORM: Final = 64 * 1024
MAX_IN_FLIGHT: Final = 8
"""Console requests one signed-in name may have in flight at once (its live lists aside, bounded apart)."""
_AFTER: Final = "toolcode.console.after"
"""The scope key of what to do once a console response is sent (give a request's place back)."""
_STALE: Final = "The form is stale or was not sent from this site."
_EXPORT_BATCH: Final = 500
"""Audit entries written to the export at a time."""
_LOOK_AGAIN_S: Final = 2.0
"""How often the live list looks again without a nudge (runs paused by another process sharing the store)."""
_STATIC: Final = {
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
}

Scope = MutableMapping[str, Any]
Handler = Callable[[Request, Viewer], Awaitable[Response]]


def is_console_path(path: str) -> bool:
    """Whether a request path is the console's."""
    return path == CONSOLE_PATH or path.startswith(CONSOLE_PATH + "/")


async def _home(_request: Request) -> Response:
    return RedirectResponse(CONSOLE_PATH + "/runs", 303)


def _message(viewer: Viewer | None, title: str, text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(_html.message(viewer, title, text), status)


def _unavailable(viewer: Viewer | None, e: StateUnavailableError) -> HTMLResponse:
    return _message(viewer, "State store unavailable", str(e), 503)


class _Held(StreamingResponse):
    """A streamed response that gives its place back however it ends (done, cancelled, the client gone)."""

    def __init__(self, release: Callable[[], None], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._release = release

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


class Console:
    """The console: sign-in, paused runs (live), quarantine, audit and state pages over one core.

    Args:
        codemode: The core the MCP door serves (with a state store).
        tokens: The door's bearer tokens (``None``: a loopback door without tokens).

    Raises:
        InvalidArgumentsError: If the core has no state store.
    """

    def __init__(self, codemode: CodeMode, tokens: BearerTokens | None) -> None:
        services = codemode.services
        self.views = Views(codemode, lambda: tokens.names if tokens is not None else [])
        store, console = self.views.stores.sessions.store, services.settings.console
        self.signins = SignIns(store, tokens, console, services.is_operator)
        self._settings = services.settings
        self._https = (console.url or "").lower().startswith("https://")
        self._streams: dict[str, int] = {}
        """Live lists open now, per signed-in name."""
        self._in_flight: dict[str, int] = {}
        """Requests being served now (their answers not sent yet), per signed-in name."""
        self._static = {n: files("toolcode.console").joinpath("static", n).read_bytes() for n in _STATIC}
        signed: list[tuple[str, Handler, str]] = [
            ("/runs", self._runs, "GET"),
            ("/runs/{execution_id}", self._run, "GET"),
            ("/runs/{execution_id}", self._decide, "POST"),
            ("/events", self._events, "GET"),
            ("/quarantine", self._quarantine, "GET"),
            ("/quarantine", self._quarantine_act, "POST"),
            ("/audit", self._audit, "GET"),
            ("/audit.jsonl", self._export, "GET"),
            ("/state", self._state, "GET"),
        ]
        routes = [Route(CONSOLE_PATH + p, self._signed(h, counted=p != "/events"), methods=[m]) for p, h, m in signed]
        routes += [
            Route(CONSOLE_PATH, _home),
            Route(CONSOLE_PATH + "/", _home),
            Route(CONSOLE_PATH + "/signin", self._signin_form, methods=["GET"]),
            Route(CONSOLE_PATH + "/signin", self._signin, methods=["POST"]),
            Route(CONSOLE_PATH + "/signout", self._signout, methods=["POST"]),
            Route(CONSOLE_PATH + "/static/{name}", self._asset, methods=["GET"]),
        ]
        self.app = Router(routes=routes)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Serve a console request; every response carries the security headers (CSP, no sniffing, no framing)."""

        async def secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        after: list[Callable[[], None]] = []
        try:
            await self.app({**scope, _AFTER: after}, receive, secured)
        finally:  # the answer is sent, or the client left
            for done in after:
                done()

    # -- sign-in ------------------------------------------------------------------------------

    def _signed(self, handler: Handler, *, counted: bool) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            viewer: Viewer | None = None
            try:
                if (viewer := await self.signins.viewer(request.cookies)) is None:
                    if request.method == "GET" and not request.url.path.endswith((".jsonl", "/events")):
                        return RedirectResponse(CONSOLE_PATH + "/signin", 303)
                    return _message(None, "Sign in first", "This needs a signed-in session.", 401)
                if counted and not self._hold(request, viewer.name):
                    text = f"You have {MAX_IN_FLIGHT} requests being served already, at most {MAX_IN_FLIGHT}: retry."
                    response = _message(viewer, "Too many requests", text, 429)
                    response.headers["retry-after"] = "1"
                    return response
                return await handler(request, viewer)
            except InvalidArgumentsError as e:
                return _message(viewer, "Not found", e.reason, 404)
            except StateUnavailableError as e:  # never signed in without the store
                return _unavailable(viewer, e)
            except ToolCodeError as e:  # not_allowed: another caller's, or an operator's action
                return _message(viewer, "Not allowed", str(e), 403)

        return endpoint

    def _hold(self, request: Request, name: str) -> bool:
        """Count a request of ``name``'s until its answer is sent; ``False`` when it has its share in flight."""
        # The door's bound on a caller's requests in flight (HTTPGuard) counts bearer tokens; the console's
        # cookie-signed requests are counted here, so no caller's requests hold the server's reads and memory.
        held = self._in_flight.get(name, 0)
        if held >= MAX_IN_FLIGHT:
            return False
        self._in_flight[name] = held + 1

        def release() -> None:
            if left := self._in_flight.pop(name) - 1:
                self._in_flight[name] = left

        request.scope[_AFTER].append(release)
        return True

    async def _signin_form(self, request: Request, *, failed: bool = False) -> Response:
        pre = secrets.token_urlsafe(32)
        page = _html.signin(pre, failed=failed, open_door=self.signins.tokens is None)
        response = HTMLResponse(page, 401 if failed else 200)
        set_cookie(response, request, PRE_COOKIE, pre, 600, https=self._https)
        return response

    async def _signin(self, request: Request) -> Response:
        form = await _form(request)
        if form is None or "origin" not in request.headers:
            return _message(None, "Refused", "This form must be sent from the sign-in page.", 403)
        if not same(form.get("csrf", ""), request.cookies.get(PRE_COOKIE, "")):
            return _message(None, "Refused", "The sign-in form expired; open it again.", 403)
        try:
            if (sid := await self.signins.sign_in(form.get("token", ""))) is None:
                return await self._signin_form(request, failed=True)
            await self.signins.sign_out(request.cookies)  # a fresh id on every sign-in: no session fixation
        except StateUnavailableError as e:
            return _unavailable(None, e)
        response = RedirectResponse(CONSOLE_PATH + "/runs", 303)
        set_cookie(response, request, SESSION_COOKIE, sid, int(self.signins.settings.session_ttl), https=self._https)
        response.delete_cookie(PRE_COOKIE, path=CONSOLE_PATH)
        return response

    async def _signout(self, request: Request) -> Response:
        try:
            # No CSRF token asked: a tab of an earlier sign-in carries that one's, and its "Sign out" must end
            # the session the browser holds now. A form with an Origin header (same-site: the guard refused
            # another) can only end a session, never open or act in one.
            if await _form(request) is not None and "origin" in request.headers:
                await self.signins.sign_out(request.cookies)
        except StateUnavailableError as e:
            return _unavailable(None, e)
        response = RedirectResponse(CONSOLE_PATH + "/signin", 303)
        response.delete_cookie(SESSION_COOKIE, path=CONSOLE_PATH)
        return response

    async def _asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return Response("not found\n", 404, media_type="text/plain")
        return Response(self._static[name], media_type=_STATIC[name])

    async def _posted(self, request: Request, viewer: Viewer) -> dict[str, str] | None:
        form = await _form(request)
        return form if form is not None and may_post(request, form, viewer.csrf) else None

    # -- pages --------------------------------------------------------------------------------

    async def _rows(self, viewer: Viewer) -> list[dict[str, str]]:
        return [_html.run_row(r, self.views.who(r.owner)) for r in await self.views.runs(viewer)]

    async def _runs(self, request: Request, viewer: Viewer) -> Response:
        return HTMLResponse(_html.runs(viewer, await self._rows(viewer)))

    async def _run(self, request: Request, viewer: Viewer) -> Response:
        run = await self.views.run(viewer, request.path_params["execution_id"])
        about = {p.tool_id: self.views.description(p.tool_id) for p in run.pending}
        unlike = self.views.unlike_bound(run)
        return HTMLResponse(_html.run(viewer, run, self.views.who(run.owner), about, unlike, self.views.shown(run)))

    async def _decide(self, request: Request, viewer: Viewer) -> Response:
        form = await self._posted(request, viewer)
        if form is None:
            return _message(viewer, "Refused", _STALE, 403)
        decision = form.get("decision", "")
        if decision in ("approve", "approve_run"):
            # Approving binds the definition the run paused under: only from a page that showed that one
            # (whichever replica serves the page, and whichever receives the decision).
            try:
                run = await self.views.run(viewer, request.path_params["execution_id"])
            except InvalidArgumentsError:
                run = None  # decided or expired meanwhile: the core answers with how it ended
            unlike = self.views.unlike_bound(run) if run is not None else []
            if run is not None and (unlike or not same(form.get("shown", ""), self.views.shown(run))):
                text = _html.unlike_text(unlike or [p.tool_id for p in run.pending])
                return _message(viewer, "Not decided", text, 409)
            if run is not None and (missing := _html.not_kept(run)):
                return _message(viewer, "Not decided", _html.not_kept_text(missing), 409)
        out = await self.views.decide(viewer, request.path_params["execution_id"], decision)
        if out.error is not None and out.error.code == "invalid_arguments":
            return _message(viewer, "Not decided", out.error.message, 404)
        return HTMLResponse(_html.decided(viewer, decision, out))

    async def _events(self, request: Request, viewer: Viewer) -> Response:
        if request.method == "HEAD":  # Starlette's HEAD of a GET route: the head alone, no stream run for nobody
            return Response(media_type="text/event-stream")
        paused, most = self.views.stores.paused, self._settings.console.max_streams
        if self._streams.get(viewer.name, 0) >= most:
            # Each live list polls the store: one caller's many open lists must not load it for everyone.
            text = f"You hold {most} live lists open already, at most {most}: close a tab, then reload."
            return _message(viewer, "Too many live lists", text, 429)
        self._streams[viewer.name] = self._streams.get(viewer.name, 0) + 1

        def release() -> None:
            left = self._streams.pop(viewer.name) - 1
            if left:
                self._streams[viewer.name] = left

        async def stream() -> AsyncIterator[str]:
            # Each look compares the ids alone (the store's keys); only a new run's record is read.
            known: set[str] = set()
            with suppress(StateUnavailableError):  # the store gone: the stream ends, the next look gets 503
                while (now := await self.signins.viewer(request.cookies)) is not None:
                    seen = paused.changes
                    ids = await self.views.waiting(now)
                    for eid in ids - known:
                        try:
                            run = await self.views.run(now, eid)
                        except InvalidArgumentsError:  # decided or expired meanwhile
                            ids.discard(eid)
                            continue
                        row = _html.run_row(run, self.views.who(run.owner))
                        yield f"event: pause\ndata: {json.dumps(row)}\n\n"
                    for eid in known - ids:
                        yield f"event: gone\ndata: {json.dumps({'id': eid})}\n\n"
                    if ids == known:
                        yield ": still here\n\n"
                    known = ids
                    with anyio.move_on_after(_LOOK_AGAIN_S):
                        await paused.changed_since(seen)

        return _Held(release, stream(), media_type="text/event-stream", headers={"x-accel-buffering": "no"})

    async def _quarantine(self, request: Request, viewer: Viewer) -> Response:
        enabled = self.views.stores.quarantine is not None
        changes = await self.views.quarantine() if enabled else []
        return HTMLResponse(_html.quarantine(viewer, changes, enabled=enabled))

    async def _quarantine_act(self, request: Request, viewer: Viewer) -> Response:
        form = await self._posted(request, viewer)
        if form is None:
            return _message(viewer, "Refused", _STALE, 403)
        tool_id = form.get("tool_id", "")
        if form.get("action") == "approve":
            try:
                approved = await self.views.approve_tool(viewer, tool_id, form.get("digest", ""))
            except InvalidArgumentsError as e:  # a digest that is not one (not this page's): nothing approved
                return _message(viewer, "Not approved", str(e), 400)
            if approved is None:
                text = f"{tool_id}'s definition is not the one shown (it changed since): nothing approved; look again."
            else:
                text = f"Approved {', '.join(approved)}." if approved else f"No tool {tool_id!r} to approve."
        else:
            await self.views.keep_blocked(viewer, tool_id)
            text = f"{tool_id} stays blocked."
        return _message(viewer, "Quarantine", text)

    async def _audit(self, request: Request, viewer: Viewer) -> Response:
        f = AuditFilter.of(request.query_params, viewer)
        shown, older = await self.views.audit_page(f)
        return HTMLResponse(_html.audit(viewer, f, shown, older=older))

    async def _export(self, request: Request, viewer: Viewer) -> Response:
        entries = self.views.audit(AuditFilter.of(request.query_params, viewer))

        async def lines() -> AsyncGenerator[str, None]:
            # Streamed a batch at a time: an export of 100,000 entries holds a batch, not all of them.
            async with aclosing(entries):
                batch: list[str] = []
                async for e in entries:
                    batch.append(json.dumps(e, ensure_ascii=False, default=str) + "\n")
                    if len(batch) >= _EXPORT_BATCH:
                        yield "".join(batch)
                        batch.clear()
                yield "".join(batch)

        body = lines()
        first = await anext(body)  # a store that cannot be read answers 503 before the download starts
        headers = {"content-disposition": 'attachment; filename="audit.jsonl"'}
        return StreamingResponse(_chain(first, body), media_type="application/x-ndjson", headers=headers)

    async def _state(self, request: Request, viewer: Viewer) -> Response:
        return HTMLResponse(_html.state(viewer, await self.views.state(viewer), self._settings))


async def _chain(first: str, rest: AsyncGenerator[str, None]) -> AsyncGenerator[str, None]:
    yield first
    async with aclosing(rest):
        async for chunk in rest:
            yield chunk


async def _form(request: Request) -> dict[str, str] | None:
    """A small URL-encoded form (``None``: another type, too large, or not text)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_FORM:
            return None
    try:
        return dict(parse_qsl(body.decode("utf-8"), max_num_fields=20))
    except (UnicodeDecodeError, ValueError):
        return None
