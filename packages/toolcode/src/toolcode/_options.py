"""One options model for a run, used from the config file to the engine.

:class:`ExecuteOptions` is what every door accepts (the MCP ``options`` argument, the
``toolcode`` config section's ``limits``, ``toolcode exec`` flags, ``Toolbox.execute`` and
:class:`~toolcode.ExecuteParams`). A field left unset (``None`` in Python, absent in JSON)
inherits the next default down: call → server config → built-in. ``0`` — or ``null`` written
explicitly in JSON — switches a limit off; the built-in defaults are always bounded.
:meth:`ExecuteOptions.resolve` turns options into :class:`ResolvedOptions`, the concrete values
a run uses.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Self, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolcode._data import as_mapping
from toolcode.exceptions import InvalidArgumentsError, clip, limit_text

__all__ = [
    "DEFAULT_OPTIONS",
    "LIMIT_FIELDS",
    "UNLIMITED",
    "ExecuteOptions",
    "ResolvedOptions",
    "TraceDetail",
    "TypeCheck",
    "options_key",
    "parse_options",
]

TypeCheck = Literal["strict", "off"]
"""Whether a snippet that uses tools is type-checked against their signatures before it runs."""

TraceDetail = Literal["summary", "full", "none"]
"""How much of the tool-call trace a door returns: nothing (``none``, the default: the line with the
call count and duration only when a call or the run failed or output was cut), that line on every
result (``summary``), or the line and every call with its arguments and result (``full``)."""

UNLIMITED = 0
"""The value that switches a limit off (``timeout=0``: no time limit)."""

LIMIT_FIELDS: Final = ("timeout", "max_tool_calls", "max_chain_steps", "max_output_chars")
"""The options that bound a run (``0`` or ``null``: no bound)."""
_NO_COUNT_LIMIT = sys.maxsize


class ExecuteOptions(BaseModel):
    """Options of one run; ``None`` inherits, ``0`` (or an explicit JSON ``null``) means no limit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout: float | None = Field(default=None, ge=0, allow_inf_nan=False, description="Seconds for the whole run.")
    max_tool_calls: int | None = Field(default=None, ge=0, description="Tool calls allowed in the run.")
    max_chain_steps: int | None = Field(default=None, ge=0, description="Steps allowed in one run_chain.")
    max_output_chars: int | None = Field(
        default=None, ge=0, description="One budget for value, stdout, stderr, errors and trace."
    )
    allowed_namespaces: tuple[str, ...] | None = Field(default=None, description="Only these namespaces are visible.")
    trace: TraceDetail | None = Field(default=None, description="'none' (default), 'summary' or 'full'.")
    type_check: TypeCheck | None = Field(
        default=None, description="'strict' (default): check tool calls before running; 'off'."
    )
    speculate: bool | None = Field(
        default=None,
        description="true (default): reads whose arguments are known start before the code reaches them; false: never.",
    )

    @model_validator(mode="before")
    @classmethod
    def _explicit_null_is_unlimited(cls, data: object) -> object:
        # In JSON, ``"timeout": null`` written on purpose means "no limit"; absent means "inherit".
        raw = as_mapping(data)
        if raw is not None and any(k in raw and raw[k] is None for k in LIMIT_FIELDS):
            return {k: (UNLIMITED if k in LIMIT_FIELDS and v is None else v) for k, v in raw.items()}
        return data

    def resolve(self, defaults: ExecuteOptions | None = None) -> ResolvedOptions:
        """Concrete values for a run: unset fields from ``defaults``, then the built-in defaults.

        Args:
            defaults: Server-wide defaults (the config's ``toolcode.limits``).

        Returns:
            The resolved options (``math.inf`` / ``sys.maxsize`` where a limit is off).
        """
        layers = (self, DEFAULT_OPTIONS) if defaults is None else (self, defaults, DEFAULT_OPTIONS)

        def pick(name: str) -> Any:
            for o in layers:
                if (v := getattr(o, name)) is not None:
                    return v
            return None

        timeout, calls, steps, chars = (pick(name) for name in LIMIT_FIELDS)
        return ResolvedOptions(
            timeout=math.inf if timeout == UNLIMITED else float(timeout),
            max_tool_calls=_NO_COUNT_LIMIT if calls == UNLIMITED else calls,
            max_chain_steps=_NO_COUNT_LIMIT if steps == UNLIMITED else steps,
            max_output_chars=_NO_COUNT_LIMIT if chars == UNLIMITED else chars,
            allowed_namespaces=pick("allowed_namespaces"),
            trace=pick("trace") or "none",
            type_check=pick("type_check") or "strict",
            speculate=pick("speculate") is not False,
        )

    def within(self, ceilings: ExecuteOptions | None) -> Self:
        """Check that no limit asked for exceeds the server's ceiling.

        Args:
            ceilings: The highest values callers may ask for (``None`` fields: no ceiling).

        Returns:
            ``self``.

        Raises:
            InvalidArgumentsError: If a limit is above its ceiling, or switched off while the
                ceiling is finite (field ``options.<name>``).
        """
        if ceilings is None:
            return self
        for name in LIMIT_FIELDS:
            asked = getattr(self, name)
            cap = getattr(ceilings, name)
            if asked is None or cap is None or cap == UNLIMITED:
                continue
            if asked == UNLIMITED or asked > cap:
                shown = "no limit" if asked == UNLIMITED else limit_text(name, asked)
                raise InvalidArgumentsError(
                    f"options.{name}", f"{shown} is above this server's maximum of {limit_text(name, cap)}"
                )
        return self


DEFAULT_OPTIONS = ExecuteOptions(
    timeout=30.0, max_tool_calls=200, max_chain_steps=50, max_output_chars=50_000, trace="none", type_check="strict"
)
"""The built-in defaults: every limit bounded."""


@dataclass(frozen=True, slots=True)
class ResolvedOptions:
    """The concrete options of one run (what the executor and engines see)."""

    timeout: float
    """Seconds; ``math.inf`` when off."""
    max_tool_calls: int
    max_chain_steps: int
    max_output_chars: int
    allowed_namespaces: tuple[str, ...] | None
    trace: TraceDetail
    type_check: TypeCheck = "strict"
    speculate: bool = True
    """Whether reads whose arguments are known start before the code reaches them."""

    def applied(self) -> dict[str, float | int]:
        """The limits in force, for reports (``0`` where a limit is off)."""
        out: dict[str, float | int] = {}
        for name in LIMIT_FIELDS:
            v = getattr(self, name)
            out[name] = UNLIMITED if v in (math.inf, _NO_COUNT_LIMIT) else v
        return out


def parse_options(
    value: ExecuteOptions | Mapping[str, Any] | None, *, field: str = "options", **overrides: Any
) -> ExecuteOptions:
    """:class:`ExecuteOptions` from options, their JSON form or ``None``, with ``overrides`` on top (``None``: unset).

    Raises:
        InvalidArgumentsError: Naming the first invalid field and why.
    """
    try:
        if value is None:
            opts = ExecuteOptions()
        elif isinstance(value, ExecuteOptions):
            opts = value
        elif (given := as_mapping(value)) is not None:
            opts = ExecuteOptions.model_validate(dict(given))
        else:
            raise InvalidArgumentsError(field, f"must be an object of options, got {type(value).__name__}")
        extra = {k: v for k, v in overrides.items() if v is not None}
        if extra:
            if isinstance(extra.get("allowed_namespaces"), Sequence) and not isinstance(
                extra["allowed_namespaces"], str
            ):
                extra["allowed_namespaces"] = tuple(extra["allowed_namespaces"])
            opts = ExecuteOptions.model_validate({**opts.model_dump(exclude_none=True), **extra})
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        name = f"{field}.{where}" if where else field
        raise InvalidArgumentsError(name, clip(err["msg"].removeprefix("Value error, "))) from None
    return opts


_KEYED: Final = frozenset({type(None), bool, int, str})


def options_key(value: object) -> Hashable | None:
    """What tells options as a door gives them (``None`` or their JSON object) from any others, to reuse their parse.

    Each value is keyed with its exact type (``1``, ``1.0`` and ``True`` are equal keys in a dict,
    not the same option; a float with its sign, ``-0.0 == 0.0``), a list of names as a tuple of
    them. ``None``: not keyed (an :class:`ExecuteOptions`, a nested or odd value): parse it.
    """
    if value is None:
        return ()
    if type(value) is not dict:
        return None
    key: list[tuple[str, type, object]] = []
    for k, v in cast("dict[object, object]", value).items():
        t = type(v)
        if type(k) is not str:
            return None
        if t in _KEYED:
            key.append((k, t, v))
        elif t is float:
            key.append((k, t, (v, math.copysign(1.0, cast("float", v)))))
        elif (t is list or t is tuple) and all(type(x) is str for x in cast("Sequence[object]", v)):
            key.append((k, t, tuple(cast("Sequence[str]", v))))
        else:
            return None
    return tuple(key)
