"""Where sessions, saved snippets, learned result shapes and logs live: the :class:`StateStore`.

Three implementations of one protocol:

- :class:`SQLiteStateStore`: the default, one file in the platform's user state directory
  (:func:`default_state_dir`; ``--state-dir`` or the config's ``toolcode.state.dir`` move it);
- :class:`RedisStateStore`: shared by several ``toolcode serve`` replicas
  (``toolcode.state.url = "redis://..."``, extra ``toolcode[redis]``);
- :class:`MemoryStateStore`: this process only (``--no-state``).
"""

from __future__ import annotations

import os
from pathlib import Path

from toolcode.exceptions import ConfigurationError
from toolcode.state._local import MemoryStateStore, SQLiteStateStore
from toolcode.state._protocol import ABSENT, ANY, Expect, LogEntry, Record, RecordInfo, Release, StateStore, check_key
from toolcode.state._redis import RedisStateStore

__all__ = [
    "ABSENT",
    "ANY",
    "DB_NAME",
    "STATE_DIR_ENV",
    "Expect",
    "LogEntry",
    "MemoryStateStore",
    "Record",
    "RecordInfo",
    "RedisStateStore",
    "Release",
    "SQLiteStateStore",
    "StateStore",
    "check_key",
    "default_state_dir",
    "open_state_store",
]

DB_NAME = "state.sqlite3"
"""The SQLite file's name inside the state directory."""
STATE_DIR_ENV = "TOOLCODE_STATE_DIR"
"""Environment variable that moves the default state directory."""


def default_state_dir() -> Path:
    """``$TOOLCODE_STATE_DIR``, else the platform's user state directory (``~/.local/state/toolcode`` on Linux)."""
    override = os.environ.get(STATE_DIR_ENV)
    if override:
        return Path(override)
    import platformdirs  # only when needed: most processes never read the default folder

    return Path(platformdirs.user_state_dir("toolcode", appauthor=False))


def open_state_store(
    *, url: str | None = None, directory: str | Path | None = None, memory: bool = False
) -> StateStore:
    """The state store a configuration names.

    Args:
        url: ``redis://...`` for a shared store (wins over ``directory``).
        directory: Folder of the SQLite file (default: :func:`default_state_dir`).
        memory: Keep state in this process only.

    Returns:
        The store (the caller closes it).

    Raises:
        ConfigurationError: If the URL is not a Redis URL or the redis extra is missing.
        StateUnavailableError: If the SQLite file cannot be opened.
    """
    if memory:
        return MemoryStateStore()
    if url is not None:
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ConfigurationError("state.url", "must be a redis://, rediss:// or unix:// URL")
        return RedisStateStore(url)
    folder = Path(directory) if directory is not None else default_state_dir()
    return SQLiteStateStore(folder / DB_NAME)
