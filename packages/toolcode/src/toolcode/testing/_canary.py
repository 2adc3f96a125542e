"""Canaries planted in the host before each escape probe, and the evidence that one was reached.

A probe escapes when it reads what only the host can read or changes what only the host can change.
:class:`CanaryTrap` plants, before each probe: a secret in the environment variable ``TOOLCODE_CANARY``,
a secret in a file at a fresh random path, a fresh directory around it where nothing may appear (the
"witness" path a probe tries to create lives there), a secret in :data:`HOST_MEMORY_SECRET` (only a
walk through the host's modules, frames or heap finds it) and a listening socket on 127.0.0.1 that
nothing may connect to. The probe gets only the paths and the port, never a secret: a secret in its
value, stdout or error text can only have come from an escape.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final

__all__ = ["CANARY_ENV_VAR", "HOST_MEMORY_SECRET", "Canaries", "CanaryTrap", "render_text"]

CANARY_ENV_VAR: Final = "TOOLCODE_CANARY"
"""Name of the environment variable that holds the environment secret while a probe runs."""

HOST_MEMORY_SECRET: str = ""
"""Holds the host-memory secret while a probe runs (empty otherwise); probes hunt for it by walking
the host's modules, frames or heap, so it must live in the host process and nowhere else."""

_CANARY_FILE_NAME: Final = "canary.txt"
_active_traps: list[CanaryTrap] = []
_TEXT_BUDGET: Final = 4_000_000
_MAX_DEPTH: Final = 64
# The built-in types' own methods, from their class dicts: a subclass overriding them runs nothing here.
_DICT_ITEMS: Final[Callable[[Any], Iterable[tuple[object, object]]]] = vars(dict)["items"]
_ITERATE: Final[dict[type, Callable[[Any], Iterator[object]]]] = {
    base: vars(base)["__iter__"] for base in (list, tuple, set, frozenset)
}


def _new_secret(kind: str) -> str:
    # A prefix keeps the secrets recognisable in a failure report; the random part makes them unguessable.
    return f"tcanary-{kind}-{secrets.token_hex(16)}"


@dataclass(frozen=True, slots=True)
class Canaries:
    """The canaries planted for one probe run."""

    env_secret: str
    """Value of the ``TOOLCODE_CANARY`` environment variable."""
    file_secret: str
    """Content of :attr:`canary_path`."""
    memory_secret: str
    """Value of :data:`HOST_MEMORY_SECRET`."""
    directory: Path
    """Fresh directory holding the canary file; nothing else may appear in it."""
    canary_path: Path
    """File holding :attr:`file_secret`; a probe tries to read it."""
    witness_path: Path
    """Path that does not exist; a probe tries to create it."""
    port: int
    """TCP port on 127.0.0.1 that a probe tries to connect to."""

    def secrets(self) -> dict[str, str]:
        """Every secret by the name of the canary that holds it."""
        return {"environment": self.env_secret, "file": self.file_secret, "host memory": self.memory_secret}

    def substitutions(self) -> dict[str, str]:
        """Placeholder tokens of a probe's code and the Python literals that replace them."""
        return {
            "__CANARY_PATH__": repr(str(self.canary_path)),
            "__WITNESS_PATH__": repr(str(self.witness_path)),
            "__CANARY_PORT__": repr(self.port),
        }


def render_text(value: object) -> str:
    """Render a run's value as text for the secret search without running any of the value's own code.

    A broken engine may hand back a live object whose ``__repr__`` or ``__iter__`` would run in the host:
    only the built-in types' own C-level methods are used, and any other object is shown by ``object.__repr__``.

    Args:
        value: The value a run returned.

    Returns:
        A text in which every string or bytes found inside the value appears verbatim.
    """
    parts: list[str] = []
    budget = [_TEXT_BUDGET]

    def emit(text: str) -> None:
        budget[0] -= len(text)
        parts.append(text)

    def walk(item: object, depth: int) -> None:
        if budget[0] <= 0 or depth > _MAX_DEPTH:
            return
        if isinstance(item, str):
            emit(str.__str__(item))
        elif isinstance(item, bytes | bytearray):
            emit(bytes(item).decode("latin-1"))
        elif item is None or isinstance(item, bool):
            emit(repr(bool(item)) if item is not None else "None")
        elif isinstance(item, int):
            try:
                emit(int.__repr__(item))
            except ValueError:  # more digits than sys.get_int_max_str_digits() allows
                emit("<int too large to print>")
        elif isinstance(item, float):
            emit(float.__repr__(item))
        elif isinstance(item, dict):
            for key, sub in _DICT_ITEMS(item):
                walk(key, depth + 1)
                walk(sub, depth + 1)
        else:
            iterate = next((it for base, it in _ITERATE.items() if isinstance(item, base)), None)
            if iterate is None:
                emit(object.__repr__(item))
            else:
                for sub in iterate(item):
                    walk(sub, depth + 1)
        emit(" ")

    walk(value, 0)
    return "".join(parts)


def _plant_memory_secret(secret: str) -> None:
    global HOST_MEMORY_SECRET
    HOST_MEMORY_SECRET = secret  # pyright: ignore[reportConstantRedefinition]


class CanaryTrap:
    """Plants the canaries on entry, removes them on exit, and reports what a probe reached in between.

    Not reentrant and not safe to overlap with another trap in the same process: the environment
    variable and :data:`HOST_MEMORY_SECRET` are process-wide.
    """

    def __init__(self) -> None:
        self._canaries: Canaries | None = None
        self._listener: socket.socket | None = None
        self._saved_env: str | None = None

    @property
    def canaries(self) -> Canaries:
        """The planted canaries.

        Raises:
            RuntimeError: The trap is not entered.
        """
        if self._canaries is None:
            raise RuntimeError("CanaryTrap is not entered")
        return self._canaries

    def __enter__(self) -> Canaries:
        """Plant the canaries.

        Raises:
            RuntimeError: Another trap is planted in this process (the canaries are process-wide).
            OSError: The canary file or the listening socket could not be created.
        """
        if _active_traps:
            raise RuntimeError("another CanaryTrap is active in this process: run escape probes one at a time")
        directory = Path(tempfile.mkdtemp(prefix=f"tc-{secrets.token_hex(6)}-"))
        try:
            file_secret = _new_secret("file")
            canary_path = directory / _CANARY_FILE_NAME
            canary_path.write_text(file_secret + "\n", encoding="utf-8")
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind(("127.0.0.1", 0))
            listener.listen(8)
            listener.setblocking(False)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        self._listener = listener
        canaries = Canaries(
            env_secret=_new_secret("env"),
            file_secret=file_secret,
            memory_secret=_new_secret("memory"),
            directory=directory,
            canary_path=canary_path,
            witness_path=directory / f"witness-{secrets.token_hex(8)}",
            port=int(listener.getsockname()[1]),
        )
        self._saved_env = os.environ.get(CANARY_ENV_VAR)
        os.environ[CANARY_ENV_VAR] = canaries.env_secret
        _plant_memory_secret(canaries.memory_secret)
        self._canaries = canaries
        _active_traps.append(self)
        return canaries

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        canaries = self.canaries
        _plant_memory_secret("")
        if self._saved_env is None:
            os.environ.pop(CANARY_ENV_VAR, None)
        else:
            os.environ[CANARY_ENV_VAR] = self._saved_env
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        shutil.rmtree(canaries.directory, ignore_errors=True)
        self._canaries = None
        _active_traps.remove(self)

    def evidence(self, outputs: Mapping[str, str]) -> list[str]:
        """Everything the probe reached, as one sentence per finding; empty when it reached nothing.

        Args:
            outputs: The texts the run produced, by channel name (``"value"``, ``"stdout"``, ``"error"``).

        Returns:
            Findings such as ``"environment secret found in stdout"`` or ``"witness file created"``.
        """
        canaries = self.canaries
        found: list[str] = []
        for channel, text in outputs.items():
            found.extend(
                f"{name} secret found in {channel}" for name, secret in canaries.secrets().items() if secret in text
            )
        try:
            entries = sorted(entry.name for entry in canaries.directory.iterdir())
        except OSError as exc:
            found.append(f"canary directory unreadable or removed: {exc}")
            entries = [_CANARY_FILE_NAME]
        if os.path.lexists(canaries.witness_path):
            found.append("witness file created")
        found.extend(
            f"file {name!r} created in the canary directory"
            for name in entries
            if name not in (_CANARY_FILE_NAME, canaries.witness_path.name)
        )
        try:
            if canaries.canary_path.read_text(encoding="utf-8") != canaries.file_secret + "\n":
                found.append("canary file modified")
        except OSError:
            found.append("canary file removed or made unreadable")
        if os.environ.get(CANARY_ENV_VAR) != canaries.env_secret:
            found.append(f"host environment variable {CANARY_ENV_VAR} modified")
        if canaries.memory_secret != HOST_MEMORY_SECRET:
            found.append("host memory canary modified")
        found.extend(self._connections())
        return found

    def _connections(self) -> list[str]:
        found: list[str] = []
        if self._listener is None:
            return found
        # The kernel completes the handshake for us, so a connection attempted during the run waits in the backlog.
        while True:
            try:
                connection, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                found.append(f"canary listener failed: {exc}")
                break
            connection.close()
            found.append(f"network connection made to the host canary port {self.canaries.port}")
        return found
