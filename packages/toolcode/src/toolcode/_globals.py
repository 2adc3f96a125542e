"""The snippet globals, declared once.

Every engine binds exactly these names, the ``execute_code`` description and
docs/snippet-api.md are written from this list, and a test checks each of them against it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "ASYNC_SUFFIX",
    "SNIPPET_GLOBALS",
    "TOOL_ERROR_INFO_SOURCE",
    "SnippetGlobal",
    "async_names",
    "call_names",
    "globals_stub",
    "snippet_api_table",
    "snippet_api_text",
    "tool_error_info",
]

ASYNC_SUFFIX: Final = "_async"
"""Awaitable variants (``run_tool_async``) are named with this suffix."""

GlobalKind = Literal["call", "output", "value", "helper"]


@dataclass(frozen=True, slots=True)
class SnippetGlobal:
    """One name a snippet can use without importing anything."""

    name: str
    signature: str
    """How it is called and what it returns, as shown to a model."""
    doc: str
    """One line: what it does."""
    kind: GlobalKind
    """``call``: answered by the host (a :class:`~toolcode.Tools` method of the same name);
    ``output``: printing; ``value``: data bound before the run; ``helper``: defined in the sandbox."""
    has_async: bool = False
    """Whether an awaitable ``<name>_async`` variant exists (for ``asyncio.gather`` fan-out)."""


SNIPPET_GLOBALS: Final[tuple[SnippetGlobal, ...]] = (
    SnippetGlobal(
        "run_tool",
        "run_tool(tool_id, args=None, **kwargs) -> value",
        "call a tool; keywords may use the signature's names (from_ for from)",
        "call",
        has_async=True,
    ),
    SnippetGlobal(
        "run_tools",
        "run_tools([(tool_id, args), ...]) -> [value, ...]",
        "several calls at once, in parallel",
        "call",
        has_async=True,
    ),
    SnippetGlobal(
        "run_chain",
        "run_chain(steps) -> {steps, aborted, final}",
        'steps: [{"tool_id", "args", "id", "use_previous", "on_error"}]; '
        '"{{steps.N.path}}" or "{{ID.path}}" in args: an earlier result',
        "call",
        has_async=True,
    ),
    SnippetGlobal(
        "search_tools",
        'search_tools(query, limit=10, detail="summary") -> {hits, hint}',
        "find tools; detail 'schema' adds signatures",
        "call",
        has_async=True,
    ),
    SnippetGlobal(
        "describe_tool",
        'describe_tool(tool_id or [ids], level="schema") -> {text, docs, errors}',
        "a tool's signature and docs",
        "call",
        has_async=True,
    ),
    SnippetGlobal(
        "list_tools",
        "list_tools(namespace=None, cursor=None, limit=100) -> {tools, next_cursor}",
        "the catalog",
        "call",
    ),
    SnippetGlobal(
        "list_namespaces", "list_namespaces() -> {namespaces}", "namespaces, tool counts, failed servers", "call"
    ),
    SnippetGlobal(
        "list_tool_examples", "list_tool_examples(tool_id, max=3) -> {id, examples}", "worked examples", "call"
    ),
    SnippetGlobal(
        "save_snippet",
        "save_snippet(name, code, description, input_schema=None) -> {name, tool_id, ...}",
        "keep a program that reads `input` as the tool snippets:<name>",
        "call",
    ),
    SnippetGlobal(
        "load_result",
        "load_result(ref) -> value",
        "a result an earlier run stored because it did not fit (its `ref`), whole",
        "call",
    ),
    SnippetGlobal("println", "println(*values)", "print a line (print works too)", "output"),
    SnippetGlobal("input", "input", "the run's input value", "value"),
    SnippetGlobal("ToolError", "ToolError", "raised by failed calls (a RuntimeError): catch it", "helper"),
    SnippetGlobal(
        "tool_error_info",
        "tool_error_info(e) -> {code, tool_id, message}",
        "the code and tool of a caught ToolError",
        "helper",
    ),
)
"""Every snippet global, in the order the docs show them."""

_STUBS: Final = {
    "run_tool": "def run_tool(tool_id: str, args: Mapping[str, Any] | None = None, **kwargs: Any) -> Any: ...",
    "run_tools": "def run_tools(calls: Sequence[Any]) -> list[Any]: ...",
    "run_chain": "def run_chain(steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]: ...",
    "search_tools": (
        "def search_tools(query: str, limit: int = 10, detail: str = 'summary', "
        "namespaces: Sequence[str] | None = None) -> dict[str, Any]: ..."
    ),
    "describe_tool": "def describe_tool(tool_id: str | Sequence[str], level: str = 'schema') -> dict[str, Any]: ...",
    "list_tools": (
        "def list_tools(namespace: str | None = None, cursor: str | None = None, limit: int = 100) "
        "-> dict[str, Any]: ..."
    ),
    "list_namespaces": "def list_namespaces() -> dict[str, Any]: ...",
    "list_tool_examples": "def list_tool_examples(tool_id: str, max: int = 3) -> dict[str, Any]: ...",
    "save_snippet": (
        "def save_snippet(name: str, code: str, description: str, "
        "input_schema: Mapping[str, Any] | None = None) -> dict[str, Any]: ..."
    ),
    "load_result": "def load_result(ref: str) -> Any: ...",
    "println": "def println(*values: object) -> None: ...",
    "input": "input: Any",
    "ToolError": "ToolError = RuntimeError",
    "tool_error_info": "def tool_error_info(e: BaseException | str) -> dict[str, Any]: ...",
}


def globals_stub() -> str:
    """The snippet globals as a stub module, for the type checker (awaitable variants included)."""
    lines = ["from collections.abc import Mapping, Sequence", "from typing import Any", ""]
    for g in SNIPPET_GLOBALS:
        stub = _STUBS[g.name]
        lines.append(stub)
        if g.has_async:
            lines.append("async " + stub.replace(f"def {g.name}(", f"def {g.name}{ASYNC_SUFFIX}(", 1))
    return "\n".join(lines) + "\n"


def call_names() -> tuple[str, ...]:
    """Names of the globals the host answers (each a :class:`~toolcode.Tools` method)."""
    return tuple(g.name for g in SNIPPET_GLOBALS if g.kind == "call")


def async_names() -> dict[str, str]:
    """``{"run_tool_async": "run_tool", ...}``: awaitable variant → the method behind it."""
    return {g.name + ASYNC_SUFFIX: g.name for g in SNIPPET_GLOBALS if g.has_async}


def snippet_api_text() -> str:
    """The snippet API in a few lines, for a model (the ``execute_code`` description uses it)."""
    calls = [g for g in SNIPPET_GLOBALS if g.kind == "call"]
    return "  " + "; ".join(g.signature for g in calls[:2]) + "\n  also: " + ", ".join(g.name + "()" for g in calls[2:])


def snippet_api_table() -> str:
    """The globals as a markdown table (docs/snippet-api.md holds exactly this; a test checks it)."""
    rows = ["| global | what it does |", "|---|---|"]
    for g in SNIPPET_GLOBALS:
        variant = f" (awaitable: `{g.name}{ASYNC_SUFFIX}`)" if g.has_async else ""
        rows.append(f"| `{g.signature}` | {g.doc}{variant} |")
    return "\n".join(rows)


TOOL_ERROR_INFO_SOURCE: Final = """\
def tool_error_info(e):
    text = str(e)
    if not text.startswith("[") or "] " not in text:
        return {"code": "runtime_error", "tool_id": None, "message": text}
    code, rest = text[1:].split("] ", 1)
    head, sep, tail = rest.partition(": ")
    if sep and ":" in head and "(" not in head and ")" not in head and "\\n" not in head:
        return {"code": code, "tool_id": head, "message": tail}
    return {"code": code, "tool_id": None, "message": rest}
"""
""":func:`tool_error_info` as sandbox source (engines whose exceptions carry no attributes define it in the sandbox)."""


def _defined(source: str, name: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # a constant of this module: the one definition, for the host as for the sandbox
    return namespace[name]


tool_error_info: Callable[[BaseException | str], dict[str, Any]] = _defined(TOOL_ERROR_INFO_SOURCE, "tool_error_info")
"""``{"code", "tool_id", "message"}`` of a caught tool failure, read from its ``"[code] tool_id: message"`` text
(anything else: ``runtime_error``): the sandbox's own definition, so every engine answers alike."""
