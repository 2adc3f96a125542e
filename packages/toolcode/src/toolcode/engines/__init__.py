"""Engines: the Monty sandbox (default), the unsafe in-process engine, discovery by name, and what an engine needs.

Third-party engines register under the ``toolcode.engines`` entry-point group::

    [project.entry-points."toolcode.engines"]
    mine = "my_package.engine:MyEngine"

and are then usable as ``ExecutorConfig(engine="mine")`` or ``toolcode --engine mine``.

An engine binds the snippet globals and the ``tools`` package (docs/engines.md has the whole
contract); the names it needs to do so without copying lists are here: :func:`call_names` and
:func:`async_names` (the globals answered by a :class:`~toolcode.Tools` method),
:data:`TOOLS_PACKAGE` (the package of namespace modules, from :meth:`~toolcode.Tools.modules`),
:class:`ModuleFunction` (what each module function calls) and :data:`TOOL_ERROR_INFO_SOURCE`
(``tool_error_info`` as source, for an interpreter that cannot call back into the host for it).
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from typing import Any, Final

from toolcode._globals import TOOL_ERROR_INFO_SOURCE, async_names, call_names
from toolcode._modules import PACKAGE, ModuleFunction
from toolcode._types import Engine
from toolcode.engines.inprocess import UnsafeInProcessEngine
from toolcode.engines.monty import MontyEngine
from toolcode.exceptions import ConfigurationError

__all__ = [
    "ENTRY_POINT_GROUP",
    "TOOLS_PACKAGE",
    "TOOL_ERROR_INFO_SOURCE",
    "ModuleFunction",
    "MontyEngine",
    "UnsafeInProcessEngine",
    "async_names",
    "available_engines",
    "call_names",
    "load_engine",
]

TOOLS_PACKAGE: Final = PACKAGE
"""The package snippets import namespaces from (``from tools import github``): one module per
entry of :meth:`toolcode.Tools.modules`."""

ENTRY_POINT_GROUP = "toolcode.engines"
"""The entry-point group engines register under."""

_BUILTIN: dict[str, type[Any]] = {"monty": MontyEngine, "inprocess": UnsafeInProcessEngine}


def available_engines() -> dict[str, str]:
    """Engines that can be loaded by name.

    Returns:
        ``{name: "module:attr"}`` for the built-in engines and every ``toolcode.engines``
        entry point (an entry point of the same name overrides nothing: built-ins win).
    """
    found: dict[str, str] = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    for name, cls in _BUILTIN.items():
        found[name] = f"{cls.__module__}:{cls.__qualname__}"
    return dict(sorted(found.items()))


def load_engine(name: str, **kwargs: Any) -> Engine:
    """Create an engine by name.

    Args:
        name: ``"monty"``, ``"inprocess"`` or the name of a ``toolcode.engines`` entry point.
        **kwargs: Passed to the engine's constructor.

    Returns:
        A new engine instance.

    Raises:
        ConfigurationError: If no engine has that name, or it cannot be loaded or built
            (field ``engine``).
    """
    cls = _BUILTIN.get(name)
    if cls is None:
        eps: list[EntryPoint] = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
        if not eps:
            known = ", ".join(available_engines())
            raise ConfigurationError("engine", f"no engine named {name!r}; available: {known}")
        try:
            cls = eps[0].load()
        except Exception as e:  # a third-party plug-in failing to import is a configuration problem
            raise ConfigurationError("engine", f"engine {name!r} ({eps[0].value}) failed to load: {e}") from e
    try:
        engine = cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigurationError("engine", f"engine {name!r} cannot be created: {e}") from e
    if not isinstance(engine, Engine):
        raise ConfigurationError("engine", f"{name!r} ({cls!r}) does not implement the Engine protocol")
    return engine
