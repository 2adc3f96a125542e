"""Every namespace as a Python module of the sandbox: ``from tools import github``.

Each namespace of the catalog is importable in a snippet as ``tools.<module>``, a module whose
functions are its tools, called with keyword arguments named as in the signature
``describe_tool`` shows; ``<name>_async`` is the awaitable form of each (for
``asyncio.gather``). The names are deterministic:

- the package is ``tools``, so a namespace never shadows a module the sandbox provides:
  ``from tools import time`` is the namespace ``time``, ``import time`` the standard module;
- a namespace's module name is its identifier form (``my-server`` → ``my_server``,
  ``class`` → ``class_``); one that would start with ``_`` (``2fa`` → ``_2fa``) gets the prefix
  ``ns`` instead (``ns_2fa``), because names starting with ``_`` are private;
- a module named like a standard-library module (``time``, ``json``, ...) also answers to that
  name with a trailing underscore (``time_``, its name before), unless another namespace has it;
- two namespaces with the same module name: the first in sorted order keeps it, the others get
  ``_2``, ``_3``, ... in sorted order;
- function names follow the same rule over the namespace's tool names (``list-issues`` →
  ``list_issues``; a leading ``_`` becomes ``tool``), unique within the module.

This module holds the rules and renders one namespace's module; :mod:`toolcode._module_views`
keeps them per catalog version and hands out what one caller's view holds.
"""

from __future__ import annotations

import dataclasses
import keyword
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from toolcode._view import CatalogView
from tooldocs import RENDER_TIERS, Budgets, Signature, py_identifier, render_module, tool_signature, unshadowed
from toolindex import Index, Tool

__all__ = [
    "ASYNC_SUFFIX",
    "PACKAGE",
    "ModuleFunction",
    "NamespaceModule",
    "every_tool",
    "function_map",
    "function_names",
    "keyword_signature",
    "module_names",
    "positional_message",
    "render",
]

PACKAGE: Final = "tools"
"""The sandbox package that holds one module per namespace."""
ASYNC_SUFFIX: Final = "_async"

CHECKER_TIERS: Final = tuple(
    dataclasses.replace(
        t, loose_open_objects=True, untyped_result="Any", tuples=False, descriptions=0, field_descriptions=0
    )
    for t in RENDER_TIERS
)
"""The documentation's detail tiers, typed loosely so that a type checker never rejects what it cannot
know (objects that admit undeclared keys are ``dict[str, Any]``, a result without an output schema is
``Any``), and typed as the run's values are (a fixed-length array is the ``list`` it decodes to, not a
``tuple``). Each tool's stub takes the richest tier that fits the ``schema`` budget, so ``describe_tool``
shows it whole. A more compact tier only drops comments or loosens types (``Literal`` to ``str``, deep
objects to ``dict``), never tightens them."""

SIGNATURE_BUDGET: Final = Budgets().schema
"""Characters a tool's stub should fit in (the ``schema`` level's budget)."""

_STUB_HEAD = (
    "from typing import Any, Awaitable, Callable, Literal, NotRequired, ParamSpec, Required, TypeVar, TypedDict\n"
    "\n"
    '_P = ParamSpec("_P")\n'
    '_R = TypeVar("_R")\n'
    "\n"
    "\n"
    "def _awaitable(f: Callable[_P, _R]) -> Callable[_P, Awaitable[_R]]: ...\n"
)
_HEADER_ROOM = 120
"""Room left in the budget for ``describe_tool``'s header, the import line and the awaitable form."""
_RESERVED = frozenset({"Any", "Awaitable", "Callable", "ParamSpec", "TypeVar", "_P", "_R", "_awaitable"})


def _module_base(namespace: str) -> str:
    return _public(py_identifier(namespace), "ns")


def _public(ident: str, prefix: str) -> str:
    # ExternalModule hides names starting with "_", and so does Python's own convention.
    return prefix + ident if ident.startswith("_") else ident


def _unique(names: Sequence[tuple[str, str]], taken: Iterable[str] = ()) -> dict[str, str]:
    """``{key: name}`` with clashes resolved in the order given (``name``, ``name_2``, ...)."""
    used = set(taken)
    out: dict[str, str] = {}
    for key, base in names:
        name, n = base, 2
        while name in used or keyword.iskeyword(name):
            name, n = f"{base}_{n}", n + 1
        used.add(name)
        out[key] = name
    return out


def module_names(namespaces: Iterable[str]) -> dict[str, str]:
    """The module name of each namespace (see the module docstring for the rule).

    Args:
        namespaces: Every namespace of the catalog (the rule depends on all of them).

    Returns:
        ``{namespace: module name}``.
    """
    ordered = sorted(set(namespaces))
    return _unique([(ns, _module_base(ns)) for ns in ordered])


def function_names(tools: Sequence[Tool]) -> dict[str, str]:
    """The function name of each tool of one namespace: ``{tool id: name}`` (sorted by tool name)."""
    ordered = sorted(tools, key=lambda t: (t.name, t.id))
    bases = [(t.id, _public(py_identifier(t.name), "tool")) for t in ordered]
    # The awaitable forms take ``<name>_async``: a tool already named so keeps its name, and the
    # other tool's awaitable form is not generated (reported as a collision).
    return _unique(bases, _RESERVED)


@dataclass(frozen=True, slots=True)
class ModuleFunction:
    """One function of a namespace module: the tool it calls, and whether it is the awaitable form."""

    tool_id: str
    awaitable: bool = False


@dataclass(frozen=True, slots=True)
class NamespaceModule:
    """One namespace as a module: its functions and its stub."""

    namespace: str
    name: str
    """The module name under ``tools``."""
    functions: Mapping[str, ModuleFunction]
    """Function name → what it calls, the awaitable forms (``<name>_async``) included."""
    stub: str
    """The module's ``.pyi`` text, as the type checker reads it (the awaitable forms bound to a helper;
    a builtin or ``typing`` name that a function is named after read through an alias,
    :func:`tooldocs.unshadowed`)."""
    tool_stubs: Mapping[str, str]
    """Tool id → what ``describe_tool`` shows: the import line a snippet writes, the tool's classes
    and function as the stub has them, and a comment naming the awaitable form."""
    signatures: Mapping[str, str]
    """Tool id → the tool's function as the stub has it (no import line, no awaitable form)."""
    collisions: tuple[str, ...] = ()
    """Names that could not be given as the rule says (reported, never merged)."""
    closed: frozenset[str] = frozenset()
    """The stub's classes whose object the schema closes (``additionalProperties: false``); another
    class's object may, by JSON Schema, carry keys the class does not declare."""

    @property
    def import_line(self) -> str:
        """``from tools import <name>``."""
        return f"from {PACKAGE} import {self.name}"


def render(namespace: str, name: str, tools: Sequence[Tool]) -> NamespaceModule:
    """One namespace's module over ``tools``: its functions and its stub."""
    names = function_names(tools)
    rendered = render_module(
        tools, function_names=names, reserved=_RESERVED, tiers=CHECKER_TIERS, fit=SIGNATURE_BUDGET - _HEADER_ROOM
    )
    tool_stubs: dict[str, str] = {}
    signatures: dict[str, str] = {}
    collisions: list[str] = [str(c) for c in rendered.collisions]
    functions = function_map(names)
    # What the checker reads spells a builtin a function is named after (a tool ``list``) through an
    # alias; what ``describe_tool`` shows keeps the plain spelling.
    header, checked = unshadowed([sig.text for sig in rendered.signatures], functions)
    parts: list[str] = [header + _STUB_HEAD]
    for tool, sig, checked_text in zip(tools, rendered.signatures, checked, strict=True):
        text = sig.text
        signatures[tool.id] = text
        alias = sig.name + ASYNC_SUFFIX
        if functions.get(alias) == ModuleFunction(tool.id, awaitable=True):
            # Not said again in each tool's docs: execute_code's description names the pattern once.
            parts.append(f"{checked_text}\n{alias} = _awaitable({sig.name})")
        else:
            parts.append(checked_text)
            collisions.append(f"{tool.id}: no awaitable form ({alias!r} is another tool)")
        tool_stubs[tool.id] = f"from {PACKAGE} import {name}\n\n{text}"
    stub = "\n\n\n".join(parts) + "\n"
    closed = frozenset(c for sig in rendered.signatures for c in sig.closed)
    return NamespaceModule(namespace, name, functions, stub, tool_stubs, signatures, tuple(collisions), closed)


def every_tool(catalog: Index | CatalogView, namespace: str | None = None) -> Iterator[Tool]:
    """Every tool of ``catalog`` (of one ``namespace``), in id order, read a page at a time."""
    cursor: str | None = None
    while True:
        page = catalog.list_tools(cursor=cursor, limit=1000, namespace=namespace)
        yield from page.tools
        if (cursor := page.next_cursor) is None:
            return


def positional_message(function: str, count: int) -> str:
    """Why a call of ``tools.<function>`` with positional arguments fails (the check and the run say it alike).

    Args:
        function: ``<module>.<function>``.
        count: The positional arguments given.

    Returns:
        The message.
    """
    return (
        f"{PACKAGE}.{function}() takes keyword arguments only (got {count} positional); "
        "name each argument as in its signature"
    )


def keyword_signature(tool: Tool) -> Signature | None:
    """The signature whose names a call's keywords may use for the tool's parameters (``from_`` for ``from``).

    A module function's keywords, and ``run_tool``'s, reach the tool under the wire names
    :meth:`~tooldocs.Signature.wire_args` of this signature gives them: the run maps them so, and
    the check before the run reads them so.

    Args:
        tool: The tool.

    Returns:
        The signature, or ``None`` when every parameter's wire name is an identifier (the keywords
        are the wire names as given).
    """
    props = tool.input_schema.get("properties")
    names: Mapping[str, Any] = cast("Mapping[str, Any]", props) if isinstance(props, Mapping) else {}
    if all(n.isidentifier() and not keyword.iskeyword(n) for n in names):
        return None
    return tool_signature(tool)


def function_map(names: Mapping[str, str]) -> dict[str, ModuleFunction]:
    """Sync names first; an awaitable form only where its name is free."""
    out = {name: ModuleFunction(tool_id) for tool_id, name in names.items()}
    for tool_id, name in names.items():
        out.setdefault(name + ASYNC_SUFFIX, ModuleFunction(tool_id, awaitable=True))
    return out
