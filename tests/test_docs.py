"""Generated parts of the docs stay equal to what the code declares."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from toolcode import ErrorCode
from toolcode._cli._parser import EXIT_BY_CODE, EXIT_CODES
from toolcode._globals import SNIPPET_GLOBALS, snippet_api_table
from toolcode.cli import main
from toolcode.exceptions import ERROR_CODE_MEANINGS
from toolcode.server import DEFAULT_TOOLS, DESCRIPTIONS, META_TOOLS, SETTINGS_SCHEMA

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


_META = "|".join(META_TOOLS)
_TOOL_RUN = re.compile(rf"`(?:{_META})`(?:(?:,\s+|,?\s+and\s+)`(?:{_META})`)+")
"""A list of code-mode tools in prose: `a`, `b` and `c`."""


def _listed_tools() -> tuple[list[str], list[str]]:
    """What ``toolcode serve`` lists to an MCP client without elicitation, and to one with it."""
    import anyio
    from mcp import Client

    from toolcode import Toolbox
    from toolcode.server import CodeModeServer
    from toolcode.state import MemoryStateStore

    async def elicit(context: object, params: object) -> object:
        raise AssertionError("not asked in this test")

    async def listed() -> tuple[list[str], list[str]]:
        async with Toolbox(engine="inprocess", state=MemoryStateStore()) as box:
            server = CodeModeServer(box)
            async with Client(server.server) as client:
                plain = [t.name for t in (await client.list_tools()).tools]
            async with Client(server.server, elicitation_callback=elicit) as client:  # type: ignore[arg-type]
                asking = [t.name for t in (await client.list_tools()).tools]
            server.close()
        return plain, asking

    return anyio.run(listed)


def test_serve_help_and_every_doc_list_the_tools_the_server_lists(capsys: pytest.CaptureFixture[str]) -> None:
    plain, asking = _listed_tools()
    assert plain == list(DEFAULT_TOOLS) and asking == plain  # a dismissed question needs resume_execution
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    described = re.search(r"streamable HTTP: (.*?), or those the config", help_text)
    assert described is not None, help_text
    assert re.split(r", | and ", described.group(1)) == plain
    assert "(any of: " + ", ".join(META_TOOLS) + ")" in help_text
    # Every list in the docs that starts as the defaults do is the defaults, in the server's order;
    # the tools `["*"]` adds are all the others.
    checked = 0
    for page in sorted([*DOCS.glob("*.md"), DOCS.parent / "README.md"]):
        text = page.read_text()
        for m in _TOOL_RUN.finditer(text):
            names = re.findall(r"`(\w+)`", m.group(0))
            if names[:2] == plain[:2]:
                assert names == plain, (page.name, names)
                checked += 1
            elif text[: m.start()].rstrip().endswith('`["*"]` adds'):
                others = [t for t in META_TOOLS if t not in plain]
                assert names == others or names == others[: len(names)], (page.name, names)
    assert checked >= 5


def test_configuration_page_names_every_variable_a_stdio_server_gets() -> None:
    from toolrun._child_env import BASE_ENV, NETWORK_ENV

    text = (DOCS / "configuration.md").read_text()
    section = text[text.index("**Environment.**") : text.index("### Variables")]
    named = set(re.findall(r"`([A-Z][A-Za-z_]+|[a-z]+_[a-z_]+)`", section))  # variable names, not `uvx`
    npm = {n for n in NETWORK_ENV if n.startswith("NPM_CONFIG_")}  # written once, as `NPM_CONFIG_…`
    lower_proxies = {n for n in NETWORK_ENV if n.endswith("_proxy") and not n.startswith("npm")}  # "also in lower case"
    assert set(BASE_ENV) | set(NETWORK_ENV) - npm - lower_proxies <= named
    assert {n.upper() for n in lower_proxies} <= named
    assert named - set(BASE_ENV) - set(NETWORK_ENV) <= {"NPM_TOKEN", "UV_PUBLISH_TOKEN", "GITHUB_TOKEN"}


def test_stored_result_references_in_the_docs_have_the_form_the_server_writes() -> None:
    from toolcode._results import _REF  # pyright: ignore[reportPrivateUsage]

    refs = [
        (page.name, ref)
        for page in sorted([*DOCS.glob("*.md"), DOCS.parent / "README.md"])
        for ref in re.findall(r"\br-[0-9a-f]{4,}\b", page.read_text())
    ]
    assert refs, "no stored-result reference found in the docs"
    assert [r for r in refs if not _REF.match(r[1])] == []
