"""Results, chain steps, progress events and the two seams: :class:`Runner` and :class:`Backend`."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, ParamSpec, Protocol, TypeVar, cast, runtime_checkable

from toolindex import BackendKind, BackendRef, Index, Tool

__all__ = [
    "Backend",
    "BackendResult",
    "ChainResult",
    "ChainStep",
    "OnError",
    "ProgressCallback",
    "ProgressEvent",
    "RunResult",
    "Runner",
    "StepResult",
    "ValidationPolicy",
    "quick_init",
    "quick_new",
]

_C = TypeVar("_C", bound=type)
_P = ParamSpec("_P")
_T = TypeVar("_T")


def quick_init(cls: _C) -> _C:
    """Give a frozen slotted dataclass an equivalent ``__init__`` that costs about a third as much.

    The generated ``__init__`` of a frozen dataclass sets each field with ``object.__setattr__``.
    This one lends the new object, for the length of its ``__init__``, the class of a twin with the
    same slots and Python's own attribute setting (a plain ``self.field = value`` each), then gives
    it its class back. Same signature, defaults and resulting object; the class stays frozen, and a
    subclass's object is set field by field through the slots. Used on the results built once or
    twice per tool call.

    Raises:
        TypeError: A field with a default factory, ``init=False`` or keyword-only.
    """
    params: list[str] = []
    fast: list[str] = []
    slow: list[str] = []
    plain = {"__slots__": (), "__setattr__": object.__setattr__, "__delattr__": object.__delattr__}
    env: dict[str, Any] = {"_cls": cls, "_twin": type(cls.__name__, (cls,), plain), "_setattr": object.__setattr__}
    for i, f in enumerate(dataclasses.fields(cls)):
        if f.default_factory is not dataclasses.MISSING or not f.init or f.kw_only:
            raise TypeError(f"{cls.__name__}.{f.name}: only plain fields with plain defaults are supported")
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            params.append(f"{f.name}=_default_{i}")
            env[f"_default_{i}"] = f.default
        env[f"_set_{i}"] = getattr(cls, f.name).__set__
        fast.append(f"        self.{f.name} = {f.name}\n")
        slow.append(f"        _set_{i}(self, {f.name})\n")
    source = (
        f"def __init__(self, {', '.join(params)}):\n"
        "    if self.__class__ is _cls:\n"
        f"        _setattr(self, '__class__', _twin)\n{''.join(fast)}        self.__class__ = _cls\n"
        f"    else:\n{''.join(slow)}"
        # quick_new's: born a twin, so one class swap and no type call
        f"def _new({', '.join(params)}):\n        self = _object_new(_twin)\n{''.join(fast)}"
        "        self.__class__ = _cls\n        return self\n"
    )
    env["_object_new"] = object.__new__
    exec(source, env)  # source built above from field names
    _QUICK_NEW[cls] = env["_new"]
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = dict(cls.__init__.__annotations__)
    init.__doc__ = cls.__init__.__doc__
    setattr(cls, "__init__", init)  # noqa: B010 - assigning a method on a class
    return cls


_QUICK_NEW: dict[type, Callable[..., Any]] = {}


def quick_new(cls: Callable[_P, _T]) -> Callable[_P, _T]:
    """The constructor of a :func:`quick_init` class, without the class call: about half the cost of ``cls(...)``.

    Same signature and resulting object as ``cls(...)``, but for exactly ``cls`` (not a subclass);
    for the objects built on every tool call.

    Raises:
        KeyError: If ``cls`` was not made with :func:`quick_init`.
    """
    return cast("Callable[_P, _T]", _QUICK_NEW[cast("type", cls)])


ValidationPolicy = Literal["error", "warn", "off"]
"""What to do when a result does not match the tool's output schema."""
OnError = Literal["abort", "continue"]
"""What a chain does when a step fails."""


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """A progress notification from a running tool."""

    tool_id: str
    progress: float
    """Progress so far (monotonic, in the backend's unit)."""
    total: float | None = None
    """Total, when the backend knows it."""
    message: str | None = None


ProgressCallback = Callable[[ProgressEvent], Awaitable[None]]
"""Receives progress events while a call runs."""


@quick_init
@dataclass(frozen=True, slots=True)
class BackendResult:
    """What a backend returns for one call, already normalised.

    ``structured`` is the plain-Python value of the result: MCP ``structured_content``
    when present, else a single text block parsed as JSON, else ``None`` (then
    ``content`` holds the blocks). ``is_error`` is MCP's ``isError``.
    """

    structured: Any
    content: tuple[dict[str, Any], ...] = ()
    """MCP content blocks in wire form (``{"type": "text", "text": ...}``, images, audio, resources)."""
    is_error: bool = False
    error: BaseException | None = field(default=None, compare=False, repr=False)
    """With ``is_error``: the exception behind the failure, if there is one (a local function's
    exception, a provider's); the runner chains ``ToolExecutionError`` to it."""


@quick_init
@dataclass(frozen=True, slots=True)
class RunResult:
    """The result of one successful tool call."""

    tool_id: str
    """Fully qualified id of the tool that ran."""
    backend: BackendRef
    """The backend that ran it."""
    structured: Any
    """Plain-Python value (dicts, lists, str, numbers, None)."""
    content: tuple[dict[str, Any], ...] = ()
    """Content blocks as returned by the backend (empty for local functions)."""
    is_error: bool = False
    """Always ``False`` on a returned result; a failing call raises ``ToolExecutionError``."""
    duration_ms: float = 0.0
    """Wall time of the whole pipeline for this call."""

    @property
    def value(self) -> Any:
        """``structured`` when present, else the text of the content blocks joined by newlines."""
        if self.structured is not None or not self.content:
            return self.structured
        texts = [b.get("text", "") for b in self.content if b.get("type") == "text"]
        return "\n".join(texts) if len(texts) == len(self.content) else list(self.content)


@dataclass(frozen=True, slots=True)
class ChainStep:
    """One step of a chain.

    With ``use_previous=True`` the previous step's result (its ``value``) is put under
    ``args["previous"]``. With ``on_error="continue"`` a failure is recorded and the chain goes on.
    """

    tool_id: str
    args: Mapping[str, Any] = field(default_factory=dict[str, Any])
    use_previous: bool = False
    on_error: OnError = "abort"


@dataclass(frozen=True, slots=True)
class StepResult:
    """The outcome of one chain step: a result or an error, with its own duration."""

    step: ChainStep
    index: int
    result: RunResult | None
    error: BaseException | None
    duration_ms: float

    @property
    def ok(self) -> bool:
        """Whether the step succeeded."""
        return self.error is None


@dataclass(frozen=True, slots=True)
class ChainResult:
    """Every step that ran, partial ones included, in order."""

    steps: tuple[StepResult, ...]
    aborted: bool
    """Whether a failing ``on_error="abort"`` step stopped the chain."""
    duration_ms: float

    @property
    def final(self) -> RunResult | None:
        """The last successful step's result, if any."""
        for s in reversed(self.steps):
            if s.result is not None:
                return s.result
        return None


@runtime_checkable
class Backend(Protocol):
    """A place tools run: local functions, one MCP server, or one provider.

    Contract:
        - Concurrency: ``call`` may be invoked from many tasks at once; a backend that
          holds a connection shares it (one persistent session per MCP server).
        - Cancellation: cancelling the calling task cancels the call (and, for MCP,
          notifies the server); ``timeout`` raises ``ToolTimeoutError``.
        - Errors: only ``ToolRunError`` subclasses; a tool-level failure is returned as
          ``BackendResult(is_error=True)``, not raised, so the runner maps it uniformly.
        - Ownership: the runner that was given a backend closes it in ``aclose``.
    """

    @property
    def kind(self) -> BackendKind:
        """``"local"``, ``"mcp"`` or ``"provider"``."""
        ...

    @property
    def supports_progress(self) -> bool:
        """Whether ``call`` can report progress (needed by ``Runner.stream``)."""
        ...

    def handles(self, ref: BackendRef) -> bool:
        """Whether this backend serves the reference (kind and owner match)."""
        ...

    async def attach(self, index: Index) -> list[Tool]:
        """Register this backend's tools in the index (and keep them current); return them."""
        ...

    async def call(
        self,
        ref: BackendRef,
        tool: Tool,
        args: Mapping[str, Any],
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> BackendResult:
        """Call one tool and return its normalised result."""
        ...

    async def aclose(self) -> None:
        """Release connections and processes; idempotent."""
        ...


@runtime_checkable
class Runner(Protocol):
    """Runs tools by id through resolve → backend → validate → call → normalise → validate.

    Contract:
        - Concurrency: all methods are safe to call from many tasks at once.
        - Cancellation: cancelling the caller cancels the backend call.
        - Errors: ``ToolRunError`` subclasses (an unknown id is toolrun's ``ToolNotFoundError``,
          also toolindex's); a lower layer's error is chained with ``from``.
        - Ownership: the runner owns the backends it was given; ``aclose`` closes them.
    """

    async def run(
        self, tool_id: str, args: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> RunResult:
        """Run one tool; raises on failure (``ToolExecutionError`` for a tool-level error)."""
        ...

    async def run_chain(self, steps: Sequence[ChainStep]) -> ChainResult:
        """Run steps in order; returns every step's outcome (see ``ChainStep``)."""
        ...

    def stream(self, tool_id: str, args: Mapping[str, Any] | None = None) -> AsyncIterator[ProgressEvent | RunResult]:
        """Yield progress events as they arrive, then the ``RunResult`` last."""
        ...

    async def aclose(self) -> None:
        """Close every backend; idempotent."""
        ...
