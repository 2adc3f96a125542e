"""Secrets out of text: credentials in URLs, secret-looking parameters, and known secret values.

Error messages and log lines quote URLs, upstream error text and upstream stderr; any of them
may carry a token. :func:`redact` removes:

- the user information of URLs (``https://user:pass@host`` → ``https://***@host``);
- the values of parameters whose names look secret (``api_key=…``, ``access_token=…``,
  ``"password": "…"``, ``Authorization: …``, ``Bearer …``), in URLs or anywhere else;
- every value registered with :func:`register_secrets`: :func:`~toolrun.load_config` registers
  each server's header values, ``env`` values, URL credentials, and the values of ``${VAR}``
  whose name looks secret. Values shorter than :data:`MIN_SECRET_LENGTH` characters are not
  registered (``"1"`` or ``"true"`` would blank every message).

Each is replaced by ``***``. The registry is process-wide and only grows.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, MutableMapping
from typing import Any

from toolindex.log import add_scrubber

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "RedactingFilter",
    "Redactor",
    "looks_secret",
    "redact",
    "redact_processor",
    "redact_url",
    "register_secrets",
]

MASK = "***"
"""What a secret is replaced by."""

MIN_SECRET_LENGTH = 6
"""Shorter values are never registered as secrets."""

# Parameter names that carry credentials: the word alone or as the last part of a longer name
# (``api_key``, ``client_secret``, ``x-api-key``, ``access_token``, ``db.password``).
_SECRET_WORDS = (
    r"api[_-]?key|apikey|key|token|access[_-]?token|refresh[_-]?token|id[_-]?token|secret|password|passwd|pwd"
    r"|pass|auth|authorization|signature|sig|credentials?|session[_-]?id|sessionid|private[_-]?key|cookie"
    r"|client[_-]?secret|code[_-]?verifier|jwt|bearer"
)
_NAME = rf"(?:[A-Za-z0-9]+[_.-])*(?:{_SECRET_WORDS})"
_SECRET_NAME = re.compile(rf"^{_NAME}$", re.IGNORECASE)
# name=value (query strings, command lines, log lines); the value ends at a separator or quote.
# A trailing colon is left out when a separator follows ("cannot reach http://h/?key=abc: …").
_ASSIGNMENT = re.compile(
    rf"(?<![A-Za-z0-9_.])({_NAME})=(['\"]?)([^\s&#;,'\"<>)\]}}]+?)(?=:?(?:[\s&#;,'\"<>)\]}}]|$))", re.IGNORECASE
)
# "name": "value" (JSON).
_JSON_PAIR = re.compile(rf'("{_NAME}"\s*:\s*")((?:[^"\\]|\\.)*)(")', re.IGNORECASE)
# Header lines: everything after the colon.
_HEADER = re.compile(
    r"(?<![A-Za-z0-9_-])((?:proxy-)?authorization|x-api-key|api-key|x-auth-token|cookie|set-cookie)(\s*:\s*)([^\r\n]+)",
    re.IGNORECASE,
)
# An authorization scheme and its credential. Only "Bearer" is taken on its own: after "Basic" or
# "Token" the word must look like a credential (a digit, a symbol, or an upper-case letter after a
# lower-case one), or "Token expired" and "Basic Configuration" would go.
_SCHEME_TOKEN = re.compile(
    r"\b(?:(Bearer)(\s+)([A-Za-z0-9._~+/=-]{6,})|(Basic|Token|Digest)(\s+)"
    r"((?=[A-Za-z]*(?:[0-9._~+/=-]|(?-i:[a-z][A-Z])))[A-Za-z0-9._~+/=-]{8,}))",
    re.IGNORECASE,
)
# scheme://userinfo@ — userinfo is everything up to the last @ before the host part ends.
_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]{0,30}://)[^\s/?#@'\"<>]*@")


def looks_secret(name: str) -> bool:
    """Whether a parameter, header or variable name looks like it holds a secret.

    >>> looks_secret("GITHUB_TOKEN"), looks_secret("api_key"), looks_secret("HOME")
    (True, True, False)
    """
    return bool(_SECRET_NAME.match(name))


class Redactor:
    """Replaces credentials and registered secret values in text by ``***``.

    Thread-safe: registering swaps an immutable pattern; redacting reads it once.

    Args:
        secrets: Values to replace wherever they appear.
        min_length: Values shorter than this are ignored.
    """

    def __init__(self, secrets: Iterable[str] = (), *, min_length: int = MIN_SECRET_LENGTH) -> None:
        self._min = min_length
        self._lock = threading.Lock()
        self._values: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        """Register secret values (blank and short ones are skipped).

        Args:
            secrets: The values.
        """
        fresh = {s for s in secrets if isinstance(s, str) and len(s.strip()) >= self._min}  # pyright: ignore[reportUnnecessaryIsInstance]
        with self._lock:
            if fresh <= self._values:
                return
            values = self._values | fresh
            # Longest first, so a value containing another is replaced whole.
            alternatives = "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True))
            self._values, self._pattern = values, re.compile(alternatives)

    @property
    def secrets(self) -> frozenset[str]:
        """The registered values."""
        return self._values

    def redact(self, text: str) -> str:
        """``text`` with credentials and registered secrets replaced by ``***``.

        Args:
            text: Any text (an error message, a log line, a URL).

        Returns:
            The redacted text (``text`` itself when nothing was found).
        """
        pattern = self._pattern
        if pattern is not None:
            text = pattern.sub(MASK, text)
        if "://" in text:
            text = _USERINFO.sub(rf"\1{MASK}@", text)
        if "=" in text:
            text = _ASSIGNMENT.sub(rf"\1=\2{MASK}", text)
        if '"' in text:
            text = _JSON_PAIR.sub(rf"\g<1>{MASK}\g<3>", text)
        if ":" in text:
            text = _HEADER.sub(rf"\1\2{MASK}", text)
        return _SCHEME_TOKEN.sub(_mask_scheme, text)

    __call__ = redact


def _mask_scheme(m: re.Match[str]) -> str:
    scheme, space = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(5))
    return f"{scheme}{space}{MASK}"


_default = Redactor()
# Every line the packages log passes the redactor, whichever route it takes (toolindex.log).
add_scrubber(_default.redact)


def register_secrets(secrets: Iterable[str]) -> None:
    """Register values that :func:`redact` replaces from now on, process-wide.

    Args:
        secrets: The values (shorter than :data:`MIN_SECRET_LENGTH`: ignored).
    """
    _default.add(secrets)


def redact(text: str) -> str:
    """``text`` with URL credentials, secret-looking parameters and registered secrets replaced by ``***``.

    >>> redact("GET https://bob:hunter22@api.example.com/mcp?api_key=abc123&page=2")
    'GET https://***@api.example.com/mcp?api_key=***&page=2'

    Args:
        text: Any text.

    Returns:
        The redacted text.
    """
    return _default.redact(text)


def redact_url(url: str) -> str:
    """A URL fit to print: no user information, no secret-looking query or fragment parameters.

    >>> redact_url("https://user:pw@example.org/mcp?token=t0ps3cret&x=1")
    'https://***@example.org/mcp?token=***&x=1'

    Args:
        url: The URL.

    Returns:
        The redacted URL.
    """
    return _default.redact(url)


def _scrub(key: str, value: Any) -> Any:
    if isinstance(value, str):
        return _default.redact(value)
    if isinstance(value, BaseException) and key != "exc_info":
        return _default.redact(repr(value))
    return value


def redact_processor(logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """A structlog processor that redacts every string value of the event (and exception values).

    Put it after ``format_exc_info`` (so tracebacks are strings by then) and before the renderer.

    Args:
        logger: Unused (structlog's processor signature).
        method_name: Unused.
        event_dict: The event.

    Returns:
        The event with its values redacted.
    """
    for k, v in event_dict.items():
        event_dict[k] = _scrub(k, v)
    return event_dict


class RedactingFilter(logging.Filter):
    """A :mod:`logging` filter that redacts the formatted message of every record it sees.

    Attach it to a handler (filters on a handler see every record that reaches it, including
    the ``mcp`` SDK's and the HTTP client's, which may quote URLs):
    ``handler.addFilter(RedactingFilter())``.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact ``record`` in place; never drops it."""
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler to report
            return True
        record.msg, record.args = _default.redact(message), None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            record.exc_text = _default.redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = _default.redact(record.exc_text)
        return True
