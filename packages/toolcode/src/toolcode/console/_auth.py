"""Sign-in to the console: a bearer token exchanged for a session cookie, and the checks on every action.

A session is a random id in an ``HttpOnly; SameSite=Strict`` cookie scoped to the console's path,
mapped in memory to the token's name, a CSRF token and an expiry. Every request looks the name up
again among the tokens accepted right now, so revoking a token ends its sessions. Every POST needs
an ``Origin`` header (the guard in front has already refused a foreign one) and the session's CSRF
token; the sign-in form, made before there is a session, carries one bound to a short-lived cookie.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from starlette.requests import Request
from starlette.responses import Response

if TYPE_CHECKING:
    from toolcode.server._http_tokens import BearerTokens

__all__ = ["PRE_COOKIE", "SESSION_COOKIE", "SignIns", "Viewer", "may_post", "same", "set_cookie"]

SESSION_COOKIE: Final = "toolcode_console"
PRE_COOKIE: Final = "toolcode_console_pre"
_MAX_SESSIONS: Final = 10_000


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is signed in: a token's name (``local`` without tokens), as the core knows them, and their role."""

    name: str
    caller: str | None
    """``token:NAME`` (what the MCP door passes to the core), or ``None`` for the local user."""
    operator: bool
    csrf: str


@dataclass(slots=True)
class _Session:
    name: str | None
    csrf: str
    expires: float


class SignIns:
    """The console's signed-in sessions (in this process's memory: a restart signs everyone out).

    Args:
        tokens: The door's bearer tokens (``None``: a loopback door without tokens; anyone who can
            reach it signs in as the local user).
        ttl: Seconds a sign-in lasts.
        is_operator: Whether a core caller is an operator (``Services.is_operator``).
    """

    def __init__(self, tokens: BearerTokens | None, ttl: float, is_operator: Callable[[str | None], bool]) -> None:
        self.tokens = tokens
        self.ttl = ttl
        self.is_operator = is_operator
        self._sessions: dict[str, _Session] = {}

    def sign_in(self, token: str) -> str | None:
        """A new session id for ``token``; ``None`` when the door does not accept it."""
        name: str | None = None
        if self.tokens is not None:
            name = self.tokens.verify(token.strip()) if token.strip() else None
            if name is None:
                return None
        now = time.time()
        if len(self._sessions) >= _MAX_SESSIONS:
            self._sessions = {k: s for k, s in self._sessions.items() if s.expires > now}
            while len(self._sessions) >= _MAX_SESSIONS:  # the oldest go first
                del self._sessions[next(iter(self._sessions))]
        sid = secrets.token_urlsafe(32)
        self._sessions[sid] = _Session(name, secrets.token_urlsafe(32), now + self.ttl)
        return sid

    def sign_out(self, cookies: Mapping[str, str]) -> None:
        """Forget the session of these cookies."""
        self._sessions.pop(cookies.get(SESSION_COOKIE, ""), None)

    def viewer(self, cookies: Mapping[str, str]) -> Viewer | None:
        """The signed-in viewer of a request, or ``None`` (no session, expired, or its token revoked)."""
        sid = cookies.get(SESSION_COOKIE, "")
        s = self._sessions.get(sid)
        if s is None:
            return None
        if s.expires <= time.time() or (self.tokens is not None and s.name not in self.tokens.names):
            del self._sessions[sid]
            return None
        caller = f"token:{s.name}" if s.name is not None else None
        return Viewer(s.name or "local", caller, self.is_operator(caller), s.csrf)


def same(a: str, b: str) -> bool:
    """Constant-time comparison of two tokens."""
    return bool(a) and hmac.compare_digest(a.encode(), b.encode())


def may_post(request: Request, form: Mapping[str, str], csrf: str) -> bool:
    """Whether a POST carries an ``Origin`` header (checked by the guard already) and the right CSRF token."""
    return "origin" in request.headers and same(form.get("csrf", ""), csrf)


def set_cookie(response: Response, request: Request, name: str, value: str, max_age: int | None) -> None:
    """Set one of the console's cookies: ``HttpOnly; SameSite=Strict``, its path, ``Secure`` over HTTPS."""
    secure = request.url.scheme == "https" or request.headers.get("x-forwarded-proto", "") == "https"
    response.set_cookie(
        name, value, max_age=max_age, path="/console", httponly=True, samesite="strict", secure=secure
    )  # fmt: skip
