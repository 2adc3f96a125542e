"""Logging for the toolkit's packages: through the host's configuration, never to stdout on its own.

structlog's default configuration prints to standard output, which corrupts a stdio MCP server
or a command's piped output when a library logs before its host configured anything. Every
logger of ``toolindex``, ``tooldocs``, ``toolrun`` and ``toolcode`` comes from
:func:`get_logger`, which decides at each call:

- the host configured structlog (``structlog.configure``): the event goes to structlog, with the
  host's processors and logger factory;
- otherwise: the event goes to the standard library's :mod:`logging` under the logger's name
  (``toolrun.mcp``…), as one line ``event key=value …``, so the host's logging configuration
  decides where it goes (with none, Python prints warnings and errors to stderr).

Values pass the registered scrubbers first (``toolrun`` registers its secret redaction), whatever
the route.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Callable
from typing import Any, Final

__all__ = ["Logger", "add_scrubber", "get_logger"]

_scrubbers: list[Callable[[str], str]] = []
_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "exception": logging.ERROR,
    "critical": logging.CRITICAL,
}


def add_scrubber(scrub: Callable[[str], str]) -> None:
    """Pass every logged string through ``scrub`` (e.g. a secret redactor) before it leaves.

    Args:
        scrub: Returns its argument with what must not be logged masked; must not raise.
    """
    if scrub not in _scrubbers:
        _scrubbers.append(scrub)


def _scrubbed(value: Any) -> Any:
    if not _scrubbers:
        return value
    if isinstance(value, BaseException):
        value = repr(value)
    if isinstance(value, str):
        for scrub in _scrubbers:
            value = scrub(value)
    return value


class Logger:
    """A logger with structlog's call style (``log.warning("event", key=value)``); see the module docstring.

    Args:
        name: The logger's name (the standard-library logger it writes to when structlog is
            not configured).
        bound: Fields every line of this logger carries (``server="github"``).
    """

    __slots__ = ("_bound", "_proxy", "_std")

    def __init__(self, name: str, **bound: Any) -> None:
        self._std = logging.getLogger(name)
        self._bound = bound
        self._proxy: Any = None

    def _emit(self, method: str, event: str, fields: dict[str, Any]) -> None:
        # A host that configured structlog has imported it: a host that did not does not pay
        # for importing it (and the console renderer's ``rich``) in every process that logs.
        structlog: Any = sys.modules.get("structlog")
        if structlog is not None and structlog.is_configured():
            if self._proxy is None:
                self._proxy = structlog.get_logger(self._std.name, **self._bound)
            getattr(self._proxy, method)(_scrubbed(event), **{k: _scrubbed(v) for k, v in fields.items()})
            return
        level = _LEVELS[method]
        if not self._std.isEnabledFor(level):
            return
        with_traceback = fields.pop("exc_info", method == "exception")
        text = event + "".join(
            f" {k}={v!r}" if isinstance(v, str) else f" {k}={v}" for k, v in {**self._bound, **fields}.items()
        )
        if with_traceback:
            # Formatted here, not by the handler, so that the traceback is scrubbed as well.
            text += "\n" + traceback.format_exc().rstrip("\n")
        self._std.log(level, _scrubbed(text), stacklevel=3)

    def debug(self, event: str, **fields: Any) -> None:
        """Log at debug level."""
        self._emit("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        """Log at info level."""
        self._emit("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        """Log at warning level."""
        self._emit("warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        """Log at error level."""
        self._emit("error", event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        """Log at error level with the exception being handled."""
        self._emit("exception", event, fields)


def get_logger(name: str, **bound: Any) -> Logger:
    """The logger called ``name`` (see the module docstring for where its lines go).

    Args:
        name: A dotted name (``toolrun.mcp``).
        bound: Fields every line carries.

    Returns:
        The logger.
    """
    return Logger(name, **bound)
