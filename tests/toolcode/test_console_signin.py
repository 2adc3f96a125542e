"""Console sign-ins: a token becomes a session; revoking the token or reaching the TTL ends it."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from toolcode.console._auth import SESSION_COOKIE, SignIns
from toolcode.server import BearerTokens

ALICE, OPS = secrets.token_urlsafe(32), secrets.token_urlsafe(32)


def _write(path: Path, text: str) -> None:
    # Replaced atomically, as the token file's docs ask; a new inode, so the change is seen at once.
    tmp = path.with_suffix(".new")
    tmp.write_text(text)
    tmp.chmod(0o600)
    os.replace(tmp, path)


def test_revoking_a_token_ends_its_console_sessions(tmp_path: Path) -> None:
    tokens_file = tmp_path / "tokens"
    _write(tokens_file, f"alice:{ALICE}\nops:{OPS}\n")
    signins = SignIns(BearerTokens(file=tokens_file), 3600, lambda caller: caller == "token:ops")
    assert signins.sign_in("not-a-token-of-this-server") is None
    alice, ops = signins.sign_in(ALICE), signins.sign_in(OPS)
    assert alice is not None and ops is not None
    seen = signins.viewer({SESSION_COOKIE: alice})
    assert seen is not None and (seen.name, seen.caller, seen.operator) == ("alice", "token:alice", False)
    viewer = signins.viewer({SESSION_COOKIE: ops})
    assert viewer is not None and viewer.operator
    _write(tokens_file, f"ops:{OPS}\n")
    assert signins.viewer({SESSION_COOKIE: alice}) is None  # revoked: signed out
    assert signins.viewer({SESSION_COOKIE: ops}) is not None
    signins.sign_out({SESSION_COOKIE: ops})
    assert signins.viewer({SESSION_COOKIE: ops}) is None


def test_a_sign_in_ends_at_its_ttl_and_without_tokens_it_is_the_local_users() -> None:
    signins = SignIns(None, 1e-9, lambda caller: caller is None)
    sid = signins.sign_in("")
    assert sid is not None and signins.viewer({SESSION_COOKIE: sid}) is None  # already past its TTL
    lasting = SignIns(None, 3600, lambda caller: caller is None)
    sid = lasting.sign_in("")
    viewer = lasting.viewer({SESSION_COOKIE: sid or ""})
    assert viewer is not None and (viewer.name, viewer.caller, viewer.operator) == ("local", None, True)
