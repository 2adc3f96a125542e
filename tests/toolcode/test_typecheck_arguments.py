"""The argument check before the run (``toolcode._typecheck._arguments``): what the text does not settle is the run's.

Each correct snippet runs with the check on as it runs with it off; each broken twin is still
refused before anything runs, with the code the run fails with.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from toolcode import Toolbox
from toolrun import ProviderBackend

pytestmark = pytest.mark.anyio

_S = {"type": "string"}
_B = {"type": "boolean"}


class _Forms:
    """Tools whose input schemas name arguments beyond ``properties`` or constrain which keys an object has."""

    async def list_tools(self) -> list[dict[str, Any]]:
        echo = {"type": "object", "additionalProperties": True}
        return [
            {
                "name": "export",
                "description": "Export; csv also takes a delimiter and a header (declared under if/then).",
                "inputSchema": {
                    "type": "object",
                    "properties": {"format": {"enum": ["csv", "json"]}},
                    "required": ["format"],
                    "if": {"properties": {"format": {"const": "csv"}}},
                    "then": {"properties": {"delimiter": _S, "header": _B}},
                },
                "outputSchema": echo,
            },
            {
                "name": "pay",
                "description": "Pay by card (with its cvv, declared under dependentSchemas) or by iban.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"card": _S, "iban": _S},
                    "dependentSchemas": {"card": {"properties": {"cvv": _S}, "required": ["cvv"]}},
                    "dependencies": {"iban": {"properties": {"bic": _S}}},
                },
                "outputSchema": echo,
            },
            {
                "name": "lookup",
                "description": "A record by id or by name.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"id": {"type": "integer"}, "name": _S},
                    "additionalProperties": False,
                    "anyOf": [{"required": ["id"]}, {"required": ["name"]}],
                },
                "outputSchema": echo,
            },
            {
                "name": "patch",
                "description": "Change some fields (at least one), or list orders by status.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "fields": {
                            "type": "object",
                            "properties": {"bio": _S, "age": {"type": "integer"}},
                            "additionalProperties": False,
                            "minProperties": 1,
                        },
                        "status": {"enum": ["open", "closed"]},
                    },
                    "additionalProperties": False,
                },
                "outputSchema": echo,
            },
            {
                "name": "tag",
                "description": "Tag a record: any other argument is a flag (unevaluatedProperties).",
                "inputSchema": {
                    "type": "object",
                    "properties": {"name": _S},
                    "required": ["name"],
                    "unevaluatedProperties": _B,
                },
                "outputSchema": echo,
            },
            {
                "name": "note",
                "description": "A note with any other arguments (unevaluatedProperties true).",
                "inputSchema": {"type": "object", "properties": {"text": _S}, "unevaluatedProperties": True},
                "outputSchema": echo,
            },
        ]

    async def call_tool(self, name: str, args: Any) -> Any:
        return dict(sorted(args.items()))

    async def aclose(self) -> None:
        return None


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def forms() -> AsyncIterator[Toolbox]:
    async with Toolbox([ProviderBackend("forms", _Forms())]) as box:
        yield box


_UNKNOWN_LOOKUP = 'key = {"name": "n"} if input is None else {"id": 1}\n'
# Correct snippets: (code, the value they return).
VALID: dict[str, tuple[str, Any]] = {
    "argument declared under then, as a keyword": (
        'from tools import forms\nforms.export(format="csv", header=True)',
        {"format": "csv", "header": True},
    ),
    "argument declared under then, in run_tool's arguments": (
        'run_tool("forms:export", {"format": "csv", "delimiter": ";"})',
        {"delimiter": ";", "format": "csv"},
    ),
    "argument declared under dependentSchemas": (
        'from tools import forms\nforms.pay(card="4242", cvv="123")',
        {"card": "4242", "cvv": "123"},
    ),
    "argument declared under dependencies": (
        'run_tool("forms:pay", {"iban": "DE00", "bic": "MARKDEF1"})',
        {"bic": "MARKDEF1", "iban": "DE00"},
    ),
    "keys of the arguments spread from a dict made at run time (anyOf of required)": (
        f"from tools import forms\n{_UNKNOWN_LOOKUP}forms.lookup(**key)",
        {"name": "n"},
    ),
    "run_tool's arguments made at run time (anyOf of required)": (
        f'{_UNKNOWN_LOOKUP}run_tool("forms:lookup", key)',
        {"name": "n"},
    ),
    "run_tool's arguments spread into a display (anyOf of required)": (
        f'{_UNKNOWN_LOOKUP}run_tool("forms:lookup", {{**key}})',
        {"name": "n"},
    ),
    "an object spread from a dict made at run time (minProperties)": (
        'from tools import forms\nchanges = {"bio": "hi"} if input is None else {"age": 3}\n'
        "forms.patch(fields={**changes})",
        {"fields": {"bio": "hi"}},
    ),
    "an object with a computed key (minProperties)": (
        'from tools import forms\nfield = "bio"\nforms.patch(fields={field: "hi"})',
        {"fields": {"bio": "hi"}},
    ),
    "a placeholder a later spread replaces": (
        'from tools import forms\nover = {"status": "open"} if input is None else {"status": "closed"}\n'
        'forms.patch(**{"status": None, **over})',
        {"status": "open"},
    ),
    "an argument unevaluatedProperties admits, as a keyword": (
        'from tools import forms\nforms.tag(name="n", urgent=True)',
        {"name": "n", "urgent": True},
    ),
    "an argument unevaluatedProperties admits, in run_tool's arguments": (
        'run_tool("forms:note", {"text": "t", "color": "red"})',
        {"color": "red", "text": "t"},
    ),
    "run_tool's argument its keywords replace": (
        'over = {"status": "open"} if input is None else {"status": "closed"}\n'
        'run_tool("forms:patch", {"status": "any"}, **over)',
        {"status": "open"},
    ),
}
# Broken twins: (code, words of the diagnostic); each fails when run with ``invalid_arguments``.
BROKEN: dict[str, tuple[str, str]] = {
    "argument declared under then, of the wrong type": (
        'from tools import forms\nforms.export(format="csv", header="yes")',
        '$.header: "yes" is not of type "boolean"',
    ),
    "argument a dependentSchemas asks for, missing": (
        'from tools import forms\nforms.pay(card="4242")',
        "$.cvv: required property is missing",
    ),
    "no key at all where one of two is required": (
        "from tools import forms\nforms.lookup()",
        "is not valid under any of the schemas listed in the 'anyOf' keyword",
    ),
    "an argument unevaluatedProperties admits, of the wrong type (the run's words for it)": (
        'from tools import forms\nforms.tag(name="n", urgent="yes")',
        "$.urgent: unexpected property (not in the schema)",
    ),
    "a misspelt key beside a spread": (
        f'{_UNKNOWN_LOOKUP}run_tool("forms:lookup", {{**key, "nmae": "x"}})',
        "$.nmae: unexpected property (not in the schema)",
    ),
    "an empty object where one key is the least": (
        "from tools import forms\nforms.patch(fields={})",
        "$.fields: {} has less than 1 property",
    ),
    "a wrong value beside a spread": (
        'from tools import forms\nchanges = {"bio": "hi"} if input is None else {"age": 3}\n'
        'forms.patch(fields={**changes, "age": "old"})',
        '$.fields.age: "old" is not of type "integer"',
    ),
    "a wrong value after a spread (nothing replaces it)": (
        'from tools import forms\nover = {"fields": {"bio": "x"}} if input is None else {}\n'
        'forms.patch(**{**over, "status": "done"})',
        '$.status: "done" is not one of',
    ),
}


@pytest.mark.parametrize("name", list(VALID))
async def test_what_only_the_run_settles_is_not_refused(forms: Toolbox, name: str) -> None:
    code, expected = VALID[name]
    checked = await forms.codemode.execute(code)
    unchecked = await forms.codemode.execute(code, options={"type_check": "off"})
    assert unchecked.ok and unchecked.value == expected, unchecked.error
    assert checked.ok and checked.value == expected, checked.error


@pytest.mark.parametrize("name", list(BROKEN))
async def test_what_the_text_settles_is_still_refused(forms: Toolbox, name: str) -> None:
    code, words = BROKEN[name]
    out = await forms.codemode.execute(code)
    assert out.error is not None and out.error.code == "type_error", out
    assert [d.code for d in out.error.diagnostics or []] == ["invalid_arguments"], out.error
    assert words in out.error.message, out.error.message
    unchecked = await forms.codemode.execute(code, options={"type_check": "off"})
    assert unchecked.error is not None and unchecked.error.code == "invalid_arguments", unchecked
