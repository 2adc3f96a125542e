"""Generated parts of the docs stay equal to what the code declares."""

from __future__ import annotations

import json
import re
from pathlib import Path

from toolcode import SETTINGS_SCHEMA, ErrorCode
from toolcode._cli._parser import EXIT_BY_CODE, EXIT_CODES
from toolcode._globals import SNIPPET_GLOBALS, snippet_api_table
from toolcode.exceptions import ERROR_CODE_MEANINGS
from toolcode.server import DESCRIPTIONS

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _block(page: str, name: str) -> str:
    text = (DOCS / page).read_text()
    m = re.search(rf"<!-- {name}:begin -->\n(.*?)\n<!-- {name}:end -->", text, re.DOTALL)
    assert m, f"{page} has no {name} block"
    return m.group(1)


def test_snippet_api_page_lists_exactly_the_declared_globals() -> None:
    assert _block("snippet-api.md", "snippet-globals") == snippet_api_table()
    calls = [g.name for g in SNIPPET_GLOBALS if g.kind == "call"]
    # The model's copy (execute_code's description) names every call too.
    assert all(f"{name}(" in DESCRIPTIONS["execute_code"] for name in calls)


def test_every_error_code_is_documented_with_its_exit_code() -> None:
    rows = [f"| `{c.value}` | {ERROR_CODE_MEANINGS[c]} | {EXIT_BY_CODE[c.value]} |" for c in ErrorCode]
    expected = "\n".join(["| code | meaning | exit code |", "|---|---|---|", *rows])
    assert _block("errors.md", "error-codes") == expected
    assert set(EXIT_BY_CODE) == {c.value for c in ErrorCode}
    assert set(EXIT_BY_CODE.values()) <= set(EXIT_CODES)


def test_configuration_page_publishes_the_settings_schema() -> None:
    block = _block("configuration.md", "settings-schema")
    assert block.startswith("```json\n") and block.endswith("\n```")
    assert json.loads(block[len("```json\n") : -len("\n```")]) == SETTINGS_SCHEMA


def test_snippet_api_page_shows_what_describe_tool_returns() -> None:
    # The page's example is the text describe_tool returns, which is what the checker reads.
    import anyio

    from toolcode import Toolbox
    from toolcode.demo import helpdesk_backend

    async def describe() -> str:
        async with Toolbox([helpdesk_backend()], engine="inprocess") as box:
            return (await box.codemode.describe_tool("helpdesk:list_tickets")).text

    block = _block("snippet-api.md", "describe-example")
    assert block == f"```text\n{anyio.run(describe)}\n```"
