"""The escape-probe catalogue: :data:`PROBES`, loaded from the packaged ``probes.toml`` and validated on import.

The probes are data (snippets with their advisories), so they live in a data file; this module holds
their types and validates each ``[[probe]]`` table into an :class:`EscapeProbe`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from enum import StrEnum
from importlib.resources import files
from typing import Final

from pydantic import ConfigDict, TypeAdapter

from toolcode.testing._canary import Canaries

__all__ = ["PROBES", "Category", "EscapeProbe", "Judge", "load_probes"]


class Category(StrEnum):
    """The family of escape a probe belongs to."""

    DUNDER_WALK = "dunder-walk"
    FORMAT_STRING = "format-string"
    DEL_TIMEBOMB = "del-timebomb"
    MODULE_WALK = "module-walk"
    CTYPES = "ctypes"
    IMPORTLIB = "importlib"
    OPEN_IO = "open/io"
    GLOBALS_BUILTINS = "globals/builtins"
    DUNDER_IMPORT = "__import__"
    FRAMES = "frames/tracebacks"
    EVAL_COMPILE = "eval/compile"
    GC_WEAKREF = "gc/weakref"
    PICKLE_MARSHAL = "pickle/marshal"
    OS_PROCESS = "signal/os/subprocess"
    NETWORK = "network"
    HOST_CRASH = "host-crash"
    RESOURCE = "resource-bomb"


class Judge(StrEnum):
    """What, beyond the canaries, a probe must satisfy to count as contained."""

    LEAK = "leak"
    """Contained when no canary was reached, the host stayed responsive and the run ended before the deadline."""
    STOPPED = "stopped"
    """A resource bomb: as LEAK, and the run must end with an error (a limit stopped it)."""
    BOUNDED_OUTPUT = "bounded-output"
    """An output flood: as LEAK, and stdout must stay within the stdout bound."""


@dataclass(frozen=True, slots=True)
class EscapeProbe:
    """One escape attempt: a snippet, where it comes from, and how to judge it.

    The snippet refers to the canaries through placeholder tokens, replaced by :meth:`render`:
    ``__CANARY_PATH__`` (a file holding a secret), ``__WITNESS_PATH__`` (a path to create),
    ``__CANARY_PORT__`` (a port on 127.0.0.1); the environment variable is ``TOOLCODE_CANARY`` and the
    host-memory secret is ``toolcode.testing._canary.HOST_MEMORY_SECRET``. It ends with a trailing
    expression, its result.
    """

    id: str
    """Stable slug, unique among :data:`PROBES`."""
    category: Category
    """The family of escape."""
    title: str
    """What the snippet does, in one line."""
    source: str
    """The public advisory, write-up or project the technique is drawn from."""
    code: str
    """The snippet, with placeholder tokens."""
    judge: Judge = Judge.LEAK
    """How to judge the run beyond the canaries."""
    escapes_plain_exec: bool = True
    """Whether the probe escapes CPython's plain ``exec`` in a subprocess (checked by the project's own tests)."""
    settle_s: float = 0.0
    """Seconds to wait after the run before inspecting the canaries, for time bombs that fire late."""

    def render(self, canaries: Canaries) -> str:
        """The snippet with the placeholders replaced by the planted canaries' paths and port.

        Args:
            canaries: The planted canaries.

        Returns:
            Runnable Python source.
        """
        code = self.code
        for token, literal in canaries.substitutions().items():
            code = code.replace(token, literal)
        return code


# Unknown keys are refused so that a misspelt optional key cannot silently fall back to its default.
_ADAPTER: Final = TypeAdapter(list[EscapeProbe], config=ConfigDict(extra="forbid"))


def load_probes(text: str) -> tuple[EscapeProbe, ...]:
    """Validate a probe catalogue in the format of the packaged ``probes.toml``.

    Args:
        text: The TOML text: an array of ``[[probe]]`` tables.

    Returns:
        The probes, in the file's order.

    Raises:
        ValueError: The text is not TOML, a probe is malformed (a ``pydantic.ValidationError`` naming the
            probe's index and field), or two probes share an id.
    """
    probes = tuple(_ADAPTER.validate_python(tomllib.loads(text).get("probe")))
    ids = [probe.id for probe in probes]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValueError(f"escape probe ids appear more than once: {repeated}")
    return probes


PROBES: Final[tuple[EscapeProbe, ...]] = load_probes(
    files("toolcode.testing").joinpath("probes.toml").read_text(encoding="utf-8")
)
"""Every escape probe, in a stable order."""
