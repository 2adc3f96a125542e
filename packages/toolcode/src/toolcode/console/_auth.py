"""Sign-in to the console: a bearer token exchanged for a session cookie, and the checks on every action.

A session id is ``<owner>:<256 random bits>`` in an ``HttpOnly; SameSite=Strict`` cookie scoped to the
console's path; a fresh one on every sign-in. It lives in the state store the core already has, so
every replica sharing that store sees the same sign-ins, and a restart keeps them: under the key
``<owner>/<sha256 of the id>`` (a reader of the store learns no id it could present), with the
token's name, a fingerprint of the token (a digest of its digest) and a CSRF token as its value,
and the sign-in's TTL as the record's (an expired sign-in disappears by itself). One token name
keeps at most ``console.max_signins`` sign-ins; one more drops that name's oldest, never another
name's. Every request looks the token up again among the tokens accepted right now, so revoking
a token, or replacing it under the same name, ends the sessions it opened on every replica. Every
POST needs an ``Origin`` header (the guard in front has already refused a foreign one) and the
session's CSRF token; the sign-in form, made before there is a session, carries one bound to a
short-lived cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from starlette.requests import Request
from starlette.responses import Response

from toolcode._sessions import owner_of

if TYPE_CHECKING:
    from toolcode._settings import ConsoleSettings
    from toolcode.server._http_tokens import BearerTokens
    from toolcode.state import StateStore

__all__ = ["KIND", "PRE_COOKIE", "SESSION_COOKIE", "SignIns", "Viewer", "may_post", "same", "set_cookie"]

SESSION_COOKIE: Final = "toolcode_console"
PRE_COOKIE: Final = "toolcode_console_pre"
KIND: Final = "console"
"""The state store's kind of console sign-ins."""
_OWNER: Final = re.compile(r"[A-Za-z0-9_.-]{1,80}")


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is signed in: a token's name (``local`` without tokens), as the core knows them, and their role."""

    name: str
    caller: str | None
    """``token:NAME`` (what the MCP door passes to the core), or ``None`` for the local user."""
    operator: bool
    csrf: str


def _key(sid: str) -> str:
    """The store key of a session id (``""``: not one of ours); the id itself is never stored."""
    owner, sep, _ = sid.partition(":")
    return f"{owner}/{hashlib.sha256(sid.encode()).hexdigest()}" if sep and _OWNER.fullmatch(owner) else ""


def _caller(name: str | None) -> str | None:
    return f"token:{name}" if name is not None else None


class SignIns:
    """The console's signed-in sessions, in the state store shared by every replica.

    Args:
        store: The core's state store.
        tokens: The door's bearer tokens (``None``: a loopback door without tokens; anyone who can
            reach it signs in as the local user).
        settings: ``session_ttl`` (seconds a sign-in lasts) and ``max_signins`` (per token name).
        is_operator: Whether a core caller is an operator (``Services.is_operator``).
    """

    def __init__(
        self,
        store: StateStore,
        tokens: BearerTokens | None,
        settings: ConsoleSettings,
        is_operator: Callable[[str | None], bool],
    ) -> None:
        self.store, self.tokens, self.settings, self.is_operator = store, tokens, settings, is_operator

    async def sign_in(self, token: str) -> str | None:
        """A new session id for ``token``; ``None`` when the door does not accept it.

        Raises:
            StateUnavailableError: If the state store cannot be reached (nobody is signed in).
        """
        name: str | None = None
        bound: dict[str, Any] = {}
        if self.tokens is not None:
            name = self.tokens.verify(token.strip()) if token.strip() else None
            if name is None:
                return None
            # The sign-in lasts as long as this very token does: replaced under its name, it ends.
            bound["token"] = self.tokens.fingerprint(token.strip())
        owner = owner_of(_caller(name))
        sid = f"{owner}:{secrets.token_urlsafe(32)}"
        value = json.dumps({"name": name, "csrf": secrets.token_urlsafe(32), **bound}).encode()
        await self.store.put(KIND, _key(sid), value, ttl=self.settings.session_ttl)
        # Trimmed after the write, not before: of sign-ins made at once (on any replica), the last
        # to be written sees every other one, so the name ends within its cap.
        most = self.settings.max_signins
        held = sorted(await self.store.list(KIND, prefix=owner + "/", limit=most + 100), key=lambda i: i.created)
        for info in held[: max(0, len(held) - most)]:  # the oldest go first
            await self.store.delete(KIND, info.key)
        return sid

    async def sign_out(self, cookies: Mapping[str, str]) -> None:
        """End the session of these cookies.

        Raises:
            StateUnavailableError: If the state store cannot be reached.
        """
        if key := _key(cookies.get(SESSION_COOKIE, "")):
            await self.store.delete(KIND, key)

    async def viewer(self, cookies: Mapping[str, str]) -> Viewer | None:
        """The signed-in viewer of a request, or ``None`` (no session, expired, or its token revoked).

        Raises:
            StateUnavailableError: If the state store cannot be reached (nobody is signed in).
        """
        key = _key(cookies.get(SESSION_COOKIE, ""))
        if not key or (record := await self.store.get(KIND, key)) is None:
            return None
        try:
            held: Any = json.loads(record.value)
            name, csrf = held["name"], held["csrf"]
        except (ValueError, TypeError, KeyError):
            return None
        if self.tokens is not None:  # revoked or replaced since: signed out everywhere
            fingerprint = held.get("token")
            current = isinstance(name, str) and isinstance(fingerprint, str)
            current = current and self.tokens.still_accepts(name, fingerprint)
        else:
            current = name is None
        if not current or not isinstance(csrf, str):
            await self.store.delete(KIND, key)
            return None
        caller = _caller(name)
        return Viewer(name or "local", caller, self.is_operator(caller), csrf)


def same(a: str, b: str) -> bool:
    """Constant-time comparison of two tokens."""
    return bool(a) and hmac.compare_digest(a.encode(), b.encode())


def may_post(request: Request, form: Mapping[str, str], csrf: str) -> bool:
    """Whether a POST carries an ``Origin`` header (checked by the guard already) and the right CSRF token."""
    return "origin" in request.headers and same(form.get("csrf", ""), csrf)


def set_cookie(
    response: Response, request: Request, name: str, value: str, max_age: int | None, *, https: bool = False
) -> None:
    """Set one of the console's cookies: ``HttpOnly; SameSite=Strict``, its path, ``Secure`` over HTTPS.

    ``https``: people open the console at an ``https://`` address (``console.url``); the cookie is then
    ``Secure`` even when the proxy in front says nothing of the scheme.
    """
    secure = https or request.url.scheme == "https" or request.headers.get("x-forwarded-proto", "") == "https"
    response.set_cookie(
        name, value, max_age=max_age, path="/console", httponly=True, samesite="strict", secure=secure
    )  # fmt: skip
