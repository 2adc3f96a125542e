"""Which of the type checker's findings are certain failures of the run.

``ty`` reports what it cannot prove correct; the check refuses only what would certainly fail. A
finding is kept when its rule says the operation fails for the type named (a key a
``TypedDict`` result does not have, an attribute or operator a type does not have, indexing a
list with a string) and every type it names is one value's type: a union (``str | None``, or
``Literal["a", 1]``) fails only for some of its members, so a finding about one is left to the
run. What it says about the tools themselves (an unknown function, the arguments of a call) is
the argument check's (:mod:`toolcode._typecheck._arguments`), in the run's own words.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from toolcode._modules import PACKAGE
from toolcode._typecheck._diagnostic import Positions

__all__ = ["Finding", "certain", "parse", "subscript_keys"]

_LINE: Final = re.compile(r"^[^:\n]*:(\d+):(\d+): error\[([\w-]+)\] (.*)$")
_TYPE: Final = re.compile(r"`([^`]*)`")
_GETITEM: Final = re.compile(
    r"^Method `__getitem__` of type .* cannot be called with key of type `([^`]*)` on object of type `([^`]*)`$"
)

_RULES: Final = {
    "invalid-key": "KeyError",  # t["titel"] on a TypedDict result (see _KEY)
    "unresolved-attribute": "AttributeError",  # "x".uper(), a module member that does not exist
    "unsupported-operator": "TypeError",  # "a" + 1
    "not-iterable": "TypeError",  # for x in 3
    "call-non-callable": "TypeError",  # a result called
    "invalid-await": "TypeError",  # await of a plain (not awaitable) value
}
"""The rules whose findings fail at run time whenever the types they name are the values' types,
and the exception the snippet meets there. Not here: ``not-subscriptable`` and the
``__getitem__`` form of ``invalid-argument-type``, which ``ty`` reports for one member of a union
without naming the union (``x = None`` then ``x = item`` in a loop: "cannot subscript ``None``");
calls (``invalid-argument-type``, ``no-matching-overload``), whose expected types are often
narrower than what the call accepts at run time; assignments, which Python does not check."""
_KEY: Final = re.compile(r'^Unknown key "|got key of type `Literal\[-?\d+\]`')
"""The ``invalid-key`` findings about a key written as a literal (a ``str`` variable may hold a valid key)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One ``ty`` diagnostic, in the checked text's coordinates."""

    line: int
    column: int
    rule: str
    message: str


def parse(rendered: str) -> list[Finding]:
    """The errors of ``ty``'s concise output (warnings and notes are not findings)."""
    out: list[Finding] = []
    for text in rendered.splitlines():
        m = _LINE.match(text.strip())
        if m is not None:
            out.append(Finding(int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)))
    return out


def _top_level(text: str, sep: str) -> int:
    """How many parts ``text`` has, split at ``sep`` outside brackets and quotes."""
    depth, parts, quote = 0, 1, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == sep and depth == 0:
            parts += 1
    return parts


def _one_value_type(t: str) -> bool:
    """Whether ``t`` is the type of each value it stands for (no union, nothing unknown)."""
    if not t or "Unknown" in t or "@Todo" in t or t == "Any":
        return False
    if _top_level(t, "|") > 1:
        return False
    return not (t.startswith("Literal[") and t.endswith("]") and _top_level(t[8:-1], ",") > 1)


def certain(finding: Finding, stores: Mapping[tuple[int, int], bool], at: tuple[int, int]) -> str | None:
    """The exception the run would certainly raise where ``finding`` is (``None``: it may not fail).

    Args:
        finding: The diagnostic.
        stores: ``(line, column)`` of each subscript key → whether the subscript is written to
            (``t["k"] = v`` adds a key; only reading a key a result lacks fails).
        at: The finding's ``(line, column)`` in the snippet.

    Returns:
        The exception's name when it is a certain failure the check reports.
    """
    rule, message = finding.rule, finding.message
    raised = _RULES.get(rule)
    if raised is None or " in union " in message or re.search(r"\b(possibly|may)\b", message, re.IGNORECASE):
        return None
    if f"Module `{PACKAGE}" in message:
        return None  # the tools' modules are the argument check's
    if rule == "invalid-key" and (stores.get(at, True) or not _KEY.search(message)):
        return None
    types = _TYPE.findall(message)
    named = [t for t in types if not _is_name_quoted(t, message)]
    return raised if all(_one_value_type(t) for t in named) else None


def _is_name_quoted(t: str, message: str) -> bool:
    # Backticks quote names too (an operator, an attribute): only the types matter here.
    return bool(re.search(rf"(Operator|operator|attribute|member|Attribute) `{re.escape(t)}`", message))


def subscript_keys(tree: ast.AST, positions: Positions) -> dict[tuple[int, int], bool]:
    """``(line, column)`` of each subscript's key → whether that subscript is written to or deleted."""
    out: dict[tuple[int, int], bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            out[positions.of(node.slice)] = isinstance(node.ctx, ast.Store | ast.Del)
    return out
