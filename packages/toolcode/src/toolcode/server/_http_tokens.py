"""Bearer tokens for the HTTP door: from an environment variable or a file, named, checked in constant time."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from toolcode.exceptions import ConfigurationError
from toolindex.log import get_logger

__all__ = ["MIN_TOKEN_LENGTH", "TOKENS_ENV", "BearerTokens"]

log = get_logger("toolcode.server")

TOKENS_ENV = "TOOLCODE_HTTP_TOKENS"
"""Environment variable ``toolcode serve --http`` reads bearer tokens from (comma or space separated)."""

MIN_TOKEN_LENGTH = 16
"""Shortest token accepted (characters); ``secrets.token_urlsafe(32)`` gives 43."""

_MAX_TOKEN_LENGTH = 1024
_MAX_TOKEN_FILE = 1 << 20
# RFC 6750 b64token: what a Bearer credential may contain; it also keeps ':', ',', '#' and spaces free
# as separators in token files and the environment variable.
_TOKEN_RE = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_NAME_RE = re.compile(r"[A-Za-z0-9_.@-]{1,64}")


@dataclass(frozen=True, slots=True)
class _Entry:
    name: str
    digest: bytes


def _digest(token: str) -> bytes:
    # Comparing fixed-size digests keeps compare_digest from returning early on a length mismatch.
    return hashlib.sha256(token.encode("utf-8")).digest()


def _fingerprint(digest: bytes) -> str:
    return hashlib.sha256(b"toolcode console sign-in\0" + digest).hexdigest()


def _token_id(token: str) -> str:
    return "token-" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:12]


def _entry(where: str, item: str, source: str) -> tuple[str, str]:
    """``NAME:TOKEN`` or ``TOKEN`` → (name, token); the token itself never appears in an error."""
    name, sep, token = item.partition(":")
    if not sep:
        name, token = "", item
    elif not _NAME_RE.fullmatch(name):
        raise ConfigurationError(source, f"{where}: the name before ':' must be 1-64 of [A-Za-z0-9_.@-]")
    if len(token) < MIN_TOKEN_LENGTH:
        raise ConfigurationError(
            source,
            f"{where}: the token is {len(token)} characters long; use at least {MIN_TOKEN_LENGTH} random ones "
            "(python -c 'import secrets; print(secrets.token_urlsafe(32))')",
        )
    if len(token) > _MAX_TOKEN_LENGTH or not _TOKEN_RE.fullmatch(token):
        raise ConfigurationError(
            source,
            f"{where}: a token is at most {_MAX_TOKEN_LENGTH} of the characters A-Z a-z 0-9 - . _ ~ + / "
            "(then optional '=' padding)",
        )
    return (name or _token_id(token)), token


def _entries(items: Iterable[tuple[str, str]]) -> list[_Entry]:
    return [_Entry(name, _digest(token)) for name, token in items]


def _check_unique(entries: Sequence[_Entry], source: str) -> None:
    names: set[str] = set()
    digests: set[bytes] = set()
    for entry in entries:
        if entry.name in names:
            raise ConfigurationError(source, f"the token name {entry.name!r} is used twice")
        if entry.digest in digests:
            raise ConfigurationError(source, f"the token of {entry.name!r} is also given under another name")
        names.add(entry.name)
        digests.add(entry.digest)


def _file_items(path: Path) -> list[tuple[str, str]]:
    source = f"token file {path}"
    with path.open("rb") as f:
        data = f.read(_MAX_TOKEN_FILE + 1)
    if len(data) > _MAX_TOKEN_FILE:
        raise ConfigurationError(source, f"larger than {_MAX_TOKEN_FILE} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigurationError(source, "not UTF-8 text") from None
    items: list[tuple[str, str]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()  # '#' cannot occur in a token: the rest is a comment
        if not line:
            continue
        if len(line.split()) > 1:
            raise ConfigurationError(source, f"line {number}: one NAME:TOKEN or TOKEN per line")
        items.append(_entry(f"line {number}", line, source))
    return items


def _file_key(path: Path) -> tuple[int, int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size


class BearerTokens:
    """The bearer tokens the HTTP door accepts, each with a name that identifies its caller.

    Tokens are compared in constant time: the presented token's SHA-256 digest against every
    configured digest with :func:`hmac.compare_digest`, all of them every time, so neither
    timing nor the order of the list tells which one matched or how close a guess came. The
    tokens themselves are not kept, only their digests.

    A token file is read again when it changes (checked on each request, one ``stat``), so
    tokens can be added and revoked without a restart; replace it atomically (write a new file,
    rename it over the old one). A file that has become unreadable or invalid revokes its tokens
    (fail closed) until it is fixed, and says why in the log.

    Args:
        tokens: Named tokens (``{name: token}``), or tokens alone (each then named
            ``token-`` + the first 12 hex digits of its SHA-256).
        file: A token file: one ``NAME:TOKEN`` or ``TOKEN`` per line; blank lines and ``#``
            comments are ignored.

    Raises:
        ConfigurationError: No token at all, a token shorter than :data:`MIN_TOKEN_LENGTH` or with
            characters a Bearer credential cannot carry, a name used twice, a token given twice, an
            unreadable or non-UTF-8 file.
        FileNotFoundError: ``file`` does not exist.
    """

    def __init__(
        self, tokens: Mapping[str, str] | Iterable[str] = (), *, file: str | os.PathLike[str] | None = None
    ) -> None:
        if isinstance(tokens, Mapping):
            named = cast(Mapping[str, str], tokens)  # pyright keeps an Iterable[str] that is a Mapping too
            items = [_entry(f"token {n!r}", f"{n}:{t}", "tokens") for n, t in named.items()]
        else:
            items = [_entry(f"token {i + 1}", t, "tokens") for i, t in enumerate(tokens)]
        self._static = _entries(items)
        _check_unique(self._static, "tokens")
        self._file = Path(file) if file is not None else None
        self._file_entries: list[_Entry] = []
        self._file_key: tuple[int, int, int, int] | None = None
        if self._file is not None:
            source = f"token file {self._file}"
            self._file_key = _file_key(self._file)
            self._file_entries = _entries(_file_items(self._file))
            if not self._file_entries:
                raise ConfigurationError(source, "holds no token")
            _check_unique([*self._static, *self._file_entries], source)
            self._warn_if_readable_by_others()
        if not self._static and not self._file_entries:
            raise ConfigurationError("tokens", "no token given")

    @classmethod
    def load(cls, *, env: str | None = TOKENS_ENV, file: str | os.PathLike[str] | None = None) -> BearerTokens | None:
        """Tokens from the environment variable ``env`` and the file ``file``, together.

        The variable holds ``NAME:TOKEN`` or ``TOKEN`` items separated by commas or whitespace.

        Args:
            env: The variable's name (``None``: do not read the environment).
            file: A token file (see :class:`BearerTokens`), or ``None``.

        Returns:
            The tokens, or ``None`` when the variable is unset or blank and no file is given.

        Raises:
            ConfigurationError: As for :class:`BearerTokens`; the variable is named in the message.
            FileNotFoundError: ``file`` does not exist.
        """
        text = os.environ.get(env, "") if env is not None else ""
        words = [w for w in re.split(r"[\s,]+", text) if w]
        items = [_entry(f"item {i + 1}", w, env or "") for i, w in enumerate(words)]
        if not items and file is None:
            return None
        _check_unique(_entries(items), env or "tokens")
        return cls(dict(items), file=file)

    def __len__(self) -> int:
        """The number of tokens accepted right now."""
        self._refresh()
        return len(self._static) + len(self._file_entries)

    @property
    def names(self) -> list[str]:
        """The caller names (identities) of the accepted tokens."""
        self._refresh()
        return [e.name for e in (*self._static, *self._file_entries)]

    def fingerprint(self, presented: str) -> str:
        """What names the token ``presented`` among tokens without revealing it (kept with a console sign-in).

        Not its digest as compared here: a digest of that, so a reader of the store learns nothing
        the door accepts.
        """
        return _fingerprint(_digest(presented))

    def still_accepts(self, name: str, fingerprint: str) -> bool:
        """Whether the token of ``name`` is still the one ``fingerprint`` was made from (replaced or revoked: no)."""
        self._refresh()
        found = False
        for entry in (*self._static, *self._file_entries):
            # Every entry compared, whatever matched before (as in verify).
            if hmac.compare_digest(_fingerprint(entry.digest), fingerprint) and entry.name == name:
                found = True
        return found

    def verify(self, presented: str) -> str | None:
        """The name of the token ``presented`` matches, or ``None``.

        Args:
            presented: The credential from an ``Authorization: Bearer`` header.

        Returns:
            The caller's name, ``None`` when no configured token matches.
        """
        self._refresh()
        digest = _digest(presented)
        found: str | None = None
        for entry in (*self._static, *self._file_entries):
            # No early exit: every digest is compared whatever matched before.
            if hmac.compare_digest(digest, entry.digest) and found is None:
                found = entry.name
        return found

    def _refresh(self) -> None:
        if self._file is None:
            return
        key = _file_key(self._file)
        if key == self._file_key:
            return
        self._file_key = key
        source = f"token file {self._file}"
        try:
            entries = _entries(_file_items(self._file))
            _check_unique([*self._static, *entries], source)
        except (OSError, ConfigurationError) as exc:
            self._file_entries = []
            log.error(
                "http.token_file_unusable",
                detail="its tokens are refused until it is fixed",
                path=str(self._file),
                error=str(exc),
            )
            return
        self._file_entries = entries
        log.info("http.token_file_reloaded", path=str(self._file), tokens=len(entries))

    def _warn_if_readable_by_others(self) -> None:
        assert self._file is not None
        mode = self._file.stat().st_mode
        if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning(
                "http.token_file_permissions",
                detail="the token file is accessible to other users; restrict it with chmod 600",
                path=str(self._file),
                mode=oct(stat.S_IMODE(mode)),
            )
