"""Local backend: plain Python functions, sync or async, registered with a decorator."""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, Required, TypeVar, cast, get_origin, get_type_hints, overload

import anyio
import anyio.from_thread
import anyio.to_thread
import pydantic
from pydantic import ConfigDict, Field, TypeAdapter
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticSerializationError, SchemaValidator, to_jsonable_python
from typing_extensions import TypedDict

from toolindex import BackendKind, BackendRef, Index, Tool
from toolindex.log import get_logger
from toolrun._types import BackendResult, ProgressCallback, ProgressEvent, quick_new
from toolrun._validation import json_path
from toolrun.exceptions import (
    BackendUnavailableError,
    InputValidationError,
    NoBackendError,
    ToolTimeoutError,
    ValidationProblem,
)

__all__ = ["LocalBackend", "Progress"]

_log = get_logger("toolrun.local")
_new_result = quick_new(BackendResult)

F = TypeVar("F", bound=Callable[..., Any])

_JSON_SCALARS: frozenset[type[Any]] = frozenset({str, int, float, bool, type(None)})
_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns|Return|Yields|Raises|Examples?|Notes?|Attributes|See Also|Warnings?)"
    r"\s*:\s*$"
)
_PARAM_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class Progress:
    """Progress reporter handed to a local function that declares a parameter of this type.

    The parameter is not part of the tool's input schema. When the call is not streamed,
    reporting is a cheap no-op. Async functions ``await progress.report(...)``; sync
    functions running in a worker thread call ``progress.report_sync(...)``.
    """

    __slots__ = ("_callback", "_tool_id")

    def __init__(self, tool_id: str, callback: ProgressCallback | None) -> None:
        self._tool_id = tool_id
        self._callback = callback

    @property
    def enabled(self) -> bool:
        """Whether anyone listens (the call is streamed)."""
        return self._callback is not None

    async def report(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress from an async function.

        Args:
            progress: Progress so far (should increase).
            total: The total, when known.
            message: A short human-readable status.
        """
        if self._callback is not None:
            await self._callback(ProgressEvent(self._tool_id, progress, total, message))

    def report_sync(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress from a sync function running in a worker thread.

        Args:
            progress: Progress so far (should increase).
            total: The total, when known.
            message: A short human-readable status.

        Raises:
            RuntimeError: If called from the event loop thread (use :meth:`report` there).
        """
        callback = self._callback
        if callback is not None:
            event = ProgressEvent(self._tool_id, progress, total, message)

            async def send() -> None:
                await callback(event)

            anyio.from_thread.run(send)


class _NoTitles(GenerateJsonSchema):
    # Property titles generated from parameter names ("A" for "a") are noise in tool docs.
    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and per-parameter descriptions.

    Args:
        doc: The docstring (may be ``None``).

    Returns:
        The text before the first section header, and ``{param: description}`` from the
        ``Args:`` section (continuation lines joined).
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    desc: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    base_indent = 0
    for line in lines:
        stripped = line.strip()
        m = _SECTION.match(stripped) if not line.startswith((" ", "\t")) else None
        if m:
            section = m.group(1).lower()
            current = None
            base_indent = -1
            continue
        if section is None:
            desc.append(line)
            continue
        if section not in ("args", "arguments", "parameters", "params") or not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if base_indent < 0:
            base_indent = indent
        pm = _PARAM_LINE.match(stripped)
        if indent <= base_indent and pm:
            current = str(pm.group(1))
            params[current] = str(pm.group(2)).strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return "\n".join(desc).strip(), params


@dataclass(frozen=True, slots=True)
class _LocalTool:
    fn: Callable[..., Any]
    tool: Tool
    is_async: bool
    inline: bool
    progress_param: str | None
    args_adapter: TypeAdapter[Any]
    result_adapter: TypeAdapter[Any] | None
    validate_args: Callable[[Any], Any]
    """``args_adapter.validate_python`` without the adapter's Python wrapper (same validator, same result)."""
    json_text: bool = False
    """The return annotation declares JSON (an object or an array): a ``str`` result is JSON text, parsed."""


class LocalBackend:
    """Runs plain Python functions registered with :meth:`tool`.

    The input schema comes from the parameters' type hints (pydantic), with parameter
    descriptions from the Google-style ``Args:`` section of the docstring; the output schema
    from the return annotation (none when there is no annotation or it is ``None``). A function
    whose return annotation declares JSON — its output schema is an object or an array (``dict``,
    ``list``, a ``TypedDict`` or a model; a union of them, ``None`` aside) — may return that
    JSON as text: a ``str`` result is parsed, and kept as text only when it is not the JSON of an
    object or an array (the output check then reports it). Sync
    functions run in a worker thread so they never block the event loop, unless registered
    with ``inline=True`` (for fast, pure functions). An exception raised by the function is
    a tool failure: the runner raises ``ToolExecutionError`` with its message, chained to it.

    Each function is referenced from the index as ``BackendRef.local("namespace:name")``.

    Example::

        local = LocalBackend()

        @local.tool(tags=["math"])
        def add(a: int, b: int = 1) -> int:
            '''Add two numbers.

    Args:
                a: The first number.
                b: The second number.
            '''
            return a + b
    """

    def __init__(self, *, max_threads: int | None = None) -> None:
        """Create an empty backend.

        Args:
            max_threads: Maximum sync functions running in worker threads at once (default:
                anyio's shared limit of 40).
        """
        self._tools: dict[str, _LocalTool] = {}
        self._indexes: list[Index] = []
        self._limiter = anyio.CapacityLimiter(max_threads) if max_threads is not None else None
        self._closed = False
        self._ref: BackendRef | None = None
        self._name = ""
        """The last call's reference and its ``name``, read once."""

    # -- Backend protocol ---------------------------------------------------------

    @property
    def kind(self) -> BackendKind:
        """Always ``"local"``."""
        return "local"

    @property
    def supports_progress(self) -> bool:
        """``True``: functions that take a :class:`Progress` parameter report progress."""
        return True

    def handles(self, ref: BackendRef) -> bool:
        """Whether ``ref`` points at a function registered here.

        Args:
            ref: A backend reference.

        Returns:
            ``True`` for a ``local`` reference to one of this backend's functions.
        """
        return ref.kind == "local" and ref.name in self._tools

    async def attach(self, index: Index) -> list[Tool]:
        """Register every function's tool in ``index``; later registrations go there too.

        Args:
            index: The index to fill.

        Returns:
            The tools registered.
        """
        tools = [(t.tool, BackendRef.local(key)) for key, t in self._tools.items()]
        if tools:
            index.register_many(tools)
        if index not in self._indexes:
            self._indexes.append(index)
        return [t for t, _ in tools]

    async def call(
        self,
        ref: BackendRef,
        tool: Tool,
        args: Mapping[str, Any],
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> BackendResult:
        """Call the function behind ``ref``.

        Args:
            ref: A ``local`` reference this backend handles.
            tool: The tool being run (for error messages and progress events).
            args: Arguments (validated and converted to the parameters' types here).
            timeout: Seconds before ``ToolTimeoutError``; ``None`` for no limit.
            progress: Receives progress events the function reports.

        Returns:
            The normalised result; ``is_error=True`` (with ``error`` set) if the function raised.

        Raises:
            NoBackendError: If ``ref`` names no function registered here.
            InputValidationError: If the arguments do not fit the parameters' types.
            ToolTimeoutError: If ``timeout`` expires.
            BackendUnavailableError: If the backend was closed.
        """
        if timeout is not None:
            with anyio.move_on_after(timeout) as scope:
                return await self.call(ref, tool, args, progress=progress)
            if scope.cancelled_caught:
                raise ToolTimeoutError(tool.id, timeout)
            raise AssertionError("unreachable")  # pragma: no cover
        # The call itself, inline: it runs once per tool call, and every frame counts there.
        if ref is not self._ref:  # a model's attribute costs a plain one's several times over
            self._ref, self._name = ref, ref.name or ""
        spec = self._tools.get(self._name)
        if spec is None:
            if self._closed:
                raise BackendUnavailableError("local", "the backend is closed")
            raise NoBackendError(tool.id, [str(ref)])
        try:
            kwargs: dict[str, Any] = spec.validate_args(args)
        except pydantic.ValidationError as e:
            raise InputValidationError(tool.id, _problems(e)) from e
        if spec.progress_param is not None:
            kwargs[spec.progress_param] = Progress(tool.id, progress)
        try:
            if spec.is_async:
                value = await spec.fn(**kwargs)
            elif spec.inline:
                value = spec.fn(**kwargs)
            else:
                # Abandon on cancel: a thread cannot be interrupted, but the caller's timeout must hold.
                value = await anyio.to_thread.run_sync(
                    functools.partial(spec.fn, **kwargs), abandon_on_cancel=True, limiter=self._limiter
                )
        except Exception as e:  # the function's own failure is a tool-level error, reported as a result
            text = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            return BackendResult(None, ({"type": "text", "text": text},), is_error=True, error=e)
        if type(value) in _JSON_SCALARS:
            if spec.json_text and type(value) is str:
                return BackendResult(_json_text(value))
            return _new_result(value, (), False, None)
        try:
            structured = _to_json(value, spec.result_adapter)
        except (PydanticSerializationError, TypeError, ValueError) as e:
            text = f"the result ({type(value).__name__}) cannot be converted to JSON: {e}"
            return BackendResult(None, ({"type": "text", "text": text},), is_error=True, error=e)
        return _new_result(structured, (), False, None)

    async def aclose(self) -> None:
        """Forget every registered function; idempotent."""
        self._closed = True
        self._tools.clear()
        self._indexes.clear()

    # -- registration -------------------------------------------------------------

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        namespace: str = "local",
        description: str | None = None,
        tags: Sequence[str] = (),
        inline: bool = False,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        namespace: str = "local",
        description: str | None = None,
        tags: Sequence[str] = (),
        inline: bool = False,
    ) -> F | Callable[[F], F]:
        """Decorator registering a function as a tool; the function itself is returned unchanged.

        Usable bare (``@local.tool``) or with options (``@local.tool(name="x")``).

        Args:
            fn: The function (when used bare).
            name: Tool name (default: the function's ``__name__``).
            namespace: Namespace of the tool in the index.
            description: Description (default: the docstring's text before its sections).
            tags: Tags for search.
            inline: Run a sync function directly on the event loop instead of in a worker
                thread. Only for fast functions that never block.

        Returns:
            The function, or a decorator when called with options.

        Raises:
            TypeError: If the function's signature cannot be exposed as a tool.
            ValueError: If a tool with the same namespace and name is already registered.
            toolindex.InvalidToolError: If the name or namespace is invalid.
        """

        def register(f: F) -> F:
            self.add(f, name=name, namespace=namespace, description=description, tags=tags, inline=inline)
            return f

        return register(fn) if fn is not None else register

    def add(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        namespace: str = "local",
        description: str | None = None,
        tags: Sequence[str] = (),
        inline: bool = False,
    ) -> Tool:
        """Register a function as a tool (the non-decorator form of :meth:`tool`).

        Args:
            fn: A sync or async function.
            name: Tool name (default: the function's ``__name__``).
            namespace: Namespace of the tool in the index.
            description: Description (default: from the docstring).
            tags: Tags for search.
            inline: Run a sync function on the event loop (see :meth:`tool`).

        Returns:
            The tool as registered.

        Raises:
            TypeError: If the function's signature cannot be exposed as a tool.
            ValueError: If a tool with the same namespace and name is already registered.
            toolindex.InvalidToolError: If the name or namespace is invalid.
        """
        spec = _build(fn, name=name, namespace=namespace, description=description, tags=tags, inline=inline)
        key = spec.tool.key
        if key in self._tools:
            raise ValueError(f"a local tool {key!r} is already registered")
        self._tools[key] = spec
        for index in self._indexes:
            index.register(spec.tool, BackendRef.local(key))
        return spec.tool

    @property
    def tools(self) -> list[Tool]:
        """The tools registered here, in registration order."""
        return [t.tool for t in self._tools.values()]


def _json_text(text: str) -> Any:
    """The object or array ``text`` holds as JSON; otherwise the text itself."""
    try:
        parsed: Any = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return cast(Any, parsed) if isinstance(parsed, dict | list) else text


def declares_json(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> bool:
    """Whether an output schema declares JSON: an object or an array, in every branch of a union.

    ``null`` branches do not count (``dict | None`` declares JSON); a local ``$ref`` is followed
    into the root's ``$defs``.
    """
    top = schema if root is None else root
    ref = schema.get("$ref")
    if isinstance(ref, str):
        defs = top.get("$defs")
        target = (
            cast("Mapping[str, Any]", defs).get(ref.removeprefix("#/$defs/")) if isinstance(defs, Mapping) else None
        )
        return ref.startswith("#/$defs/") and isinstance(target, Mapping) and declares_json(_schema_of(target), top)
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            kept = [_schema_of(b) for b in cast("list[Any]", branches) if not _is_null(b)]
            return bool(kept) and all(declares_json(b, top) for b in kept)
    return schema.get("type") in ("object", "array")


def _schema_of(value: Any) -> Mapping[str, Any]:
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def _is_null(branch: Any) -> bool:
    return _schema_of(branch).get("type") == "null"


def _to_json(value: Any, adapter: TypeAdapter[Any] | None) -> Any:
    if adapter is not None:
        # By alias, as the output schema (pydantic's serialization schema) names the fields.
        return adapter.dump_python(value, mode="json", by_alias=True, warnings=False)
    return to_jsonable_python(value)


def _problems(e: pydantic.ValidationError) -> list[ValidationProblem]:
    return [ValidationProblem(json_path(err["loc"]), err["msg"]) for err in e.errors(include_url=False)]


def _has_description(ann: Any) -> bool:
    if get_origin(ann) is not Annotated:
        return False
    return any(isinstance(m, FieldInfo) and m.description for m in ann.__metadata__)


def _build(
    fn: Callable[..., Any],
    *,
    name: str | None,
    namespace: str,
    description: str | None,
    tags: Sequence[str],
    inline: bool,
) -> _LocalTool:
    if not callable(fn):
        raise TypeError(f"expected a function, got {type(fn).__name__}")
    tool_name = name or getattr(fn, "__name__", None)
    if not tool_name:
        raise TypeError("the function has no __name__; pass name=")
    target = inspect.unwrap(fn)
    if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
        raise TypeError(f"tool {tool_name!r}: generator functions are not supported; return a value")
    is_async = inspect.iscoroutinefunction(target)
    try:
        hints = get_type_hints(target, include_extras=True)
    except (NameError, TypeError) as e:
        raise TypeError(f"tool {tool_name!r}: cannot resolve the type hints: {e}") from e
    sig = inspect.signature(target)
    doc_text, doc_params = parse_docstring(inspect.getdoc(target))

    td_fields: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    progress_param: str | None = None
    for p in sig.parameters.values():
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name!r}: *args and **kwargs cannot be described by a schema")
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(f"tool {tool_name!r}: positional-only parameter {p.name!r} cannot be passed by name")
        ann = hints.get(p.name, Any)
        if ann is Progress:
            if not is_async and inline:
                raise TypeError(
                    f"tool {tool_name!r}: an inline sync function cannot report progress (it runs on the event loop)"
                )
            progress_param = p.name
            continue
        # A description given in Annotated[..., Field(description=...)] wins over the docstring's.
        if p.name in doc_params and not _has_description(ann):
            ann = Annotated[ann, Field(description=doc_params[p.name])]
        if p.default is inspect.Parameter.empty:
            td_fields[p.name] = Required[ann]
        else:
            td_fields[p.name] = NotRequired[ann]
            defaults[p.name] = p.default

    # One TypedDict serves both the schema and per-call validation: no model instance per
    # call, omitted arguments stay omitted (Python applies the defaults), and parameter names
    # cannot clash with BaseModel attributes ("json", "schema", "copy").
    args_td: Any = TypedDict(f"{tool_name}_arguments", td_fields)  # type: ignore[misc]
    args_td.__pydantic_config__ = ConfigDict(extra="forbid")
    try:
        args_adapter: TypeAdapter[Any] = TypeAdapter(args_td)
        input_schema = args_adapter.json_schema(schema_generator=_NoTitles)
    except pydantic.PydanticUserError as e:
        raise TypeError(f"tool {tool_name!r}: the parameters cannot be described by a schema: {e}") from e
    input_schema.pop("title", None)
    props = input_schema.get("properties", {})
    for pname, default in defaults.items():
        try:
            props[pname]["default"] = to_jsonable_python(default)
        except (PydanticSerializationError, TypeError, ValueError):
            pass  # a default with no JSON form is simply not shown

    ret = hints.get("return", inspect.Signature.empty)
    result_adapter: TypeAdapter[Any] | None = None
    output_schema: dict[str, Any] | None = None
    if ret is not inspect.Signature.empty and ret is not None and ret is not type(None):
        try:
            result_adapter = TypeAdapter(ret)
            output_schema = result_adapter.json_schema(mode="serialization", schema_generator=_NoTitles)
        except pydantic.PydanticUserError as e:
            raise TypeError(f"tool {tool_name!r}: the return type cannot be described by a schema: {e}") from e
        output_schema.pop("title", None)

    desc = description if description is not None else doc_text
    tool = Tool.validated(
        name=tool_name,
        namespace=namespace,
        description=desc,
        input_schema=input_schema,
        output_schema=output_schema,
        tags=tuple(tags),
    )
    # The adapter is fully built by now (its schema was generated above); its core validator is
    # what ``TypeAdapter.validate_python`` calls, with these same (default) options. (With a
    # pydantic plugin installed the validator is a wrapper; then the adapter's method is kept.)
    validator = args_adapter.validator
    validate_args = (
        validator.validate_python if isinstance(validator, SchemaValidator) else args_adapter.validate_python
    )
    return _LocalTool(
        fn=fn,
        tool=tool,
        is_async=is_async,
        inline=inline,
        progress_param=progress_param,
        args_adapter=args_adapter,
        result_adapter=result_adapter,
        validate_args=validate_args,
        json_text=output_schema is not None and declares_json(output_schema),
    )
