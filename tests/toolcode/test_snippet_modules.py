"""The ``tools.snippets`` module holds what the caller's view holds: never another caller's private snippet.

Alice saves a private snippet; bob must find nothing of it through ``tools.snippets`` either: not in
``describe_tool(..., level="module")``, not in the check's suggestions or argument messages, not in
the module a run imports (a call answers as for a name no one holds). Bob's own private snippets and
the shared ones stay his to describe, check and call. Real SQLite state, both engines.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from toolcode import Settings, Toolbox, ToolError
from toolcode._settings import PolicySettings, StateSettings
from toolrun import LocalBackend

pytestmark = pytest.mark.anyio

ALICE, BOB, OP = "token:alice", "token:bob", "token:op"
IBAN = "CH93-0076-2011-6238-5295-7"
SECRET = "Pay ACME's invoices (private: merger target)"
ACCOUNT = {"type": "object", "required": ["account"], "properties": {"account": {"type": "string"}}}


def _schema(*accounts: str) -> dict[str, object]:
    return {**ACCOUNT, "properties": {"account": {"type": "string", "enum": list(accounts)}}}


def _backend() -> LocalBackend:
    local = LocalBackend()

    @local.tool(namespace="files")
    def read_file(path: str) -> str:
        """Read a text file."""
        return f"contents of {path}"

    return local


@pytest.fixture(params=["monty", "inprocess"])
async def box(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Toolbox]:
    policy = PolicySettings.model_validate({"operators": [OP], "preset": "allow-all"})
    settings = Settings(policy=policy, state=StateSettings(dir=str(tmp_path / "state")))
    async with Toolbox([_backend()], settings=settings, engine=request.param) as b:
        cm = b.codemode
        code = "__out = 'sent ' + input['account']"
        await cm.save_snippet("wire_transfer_acme", code, SECRET, _schema(IBAN), caller=ALICE)
        await cm.save_snippet("wire_transfer", code, "Bob's transfers.", _schema("BOB-1"), caller=BOB)
        await cm.save_snippet("team_report", "__out = 'report'", "The team's report.", shared=True, caller=OP)
        yield b


async def _messages(box: Toolbox, code: str, caller: str) -> list[tuple[int, str, str]]:
    out = await box.codemode.execute(code, caller=caller)
    assert out.error is not None and out.error.code == "type_error", out
    return [(d.line, str(d.code), d.message) for d in out.error.diagnostics or []]


async def test_the_module_describes_only_the_snippets_the_caller_sees(box: Toolbox) -> None:
    bob = (await box.codemode.describe_tool("snippets", "module", caller=BOB)).text
    assert "def wire_transfer(" in bob and "BOB-1" in bob and "def team_report(" in bob, bob
    assert "wire_transfer_acme" not in bob and IBAN not in bob and SECRET not in bob, bob
    alice = (await box.codemode.describe_tool("snippets", "module", caller=ALICE)).text
    assert "def wire_transfer_acme(" in alice and IBAN in alice and "def team_report(" in alice, alice
    assert "def wire_transfer(" not in alice and "BOB-1" not in alice, alice
    # By a tool id too: only one the caller sees names the module.
    out = await box.codemode.describe_tool(["snippets:wire_transfer_acme"], "module", caller=BOB)
    assert IBAN not in out.model_dump_json() and SECRET not in out.model_dump_json(), out


async def test_the_check_knows_only_the_snippets_the_caller_sees(box: Toolbox) -> None:
    code = "from tools import snippets\nsnippets.wire_transfr(account='?')\nsnippets.{}(account='?')\n"
    theirs = await _messages(box, code.format("wire_transfer_acme"), BOB)
    nobodys = await _messages(box, code.format("wire_transfer_acmf"), BOB)
    # Another caller's private snippet is answered as a name no one holds, word for word.
    assert [(line, c, m.replace("wire_transfer_acme", "wire_transfer_acmf")) for line, c, m in theirs] == nobodys
    assert [c for _, c, _ in theirs] == ["unknown_tool", "unknown_tool"], theirs
    assert "did you mean 'wire_transfer'" in theirs[0][2], theirs  # bob's own snippet is suggested
    assert all(IBAN not in m and "wire_transfer_acme'," not in m for _, _, m in theirs), theirs
    # The owner's own check still reads its schema; bob's reads his own.
    mine = await _messages(box, code.format("wire_transfer_acme"), ALICE)
    assert mine[1][1] == "invalid_arguments" and IBAN in mine[1][2], mine
    assert "did you mean 'wire_transfer_acme'" in mine[0][2], mine
    bobs = await _messages(box, "from tools import snippets\nsnippets.wire_transfer(account='?')\n", BOB)
    assert bobs[0][1] == "invalid_arguments" and "BOB-1" in bobs[0][2], bobs


async def test_a_run_calls_only_the_snippets_the_caller_sees(box: Toolbox) -> None:
    cm = box.codemode
    ok = (
        "from tools import snippets\n"
        "__out = [snippets.wire_transfer(account='BOB-1'), snippets.team_report(), "
        "await snippets.team_report_async()]"
    )
    out = await cm.execute(ok, caller=BOB)
    assert out.ok and out.value == ["sent BOB-1", "report", "report"], out.error
    out = await cm.execute(ok.replace("wire_transfer(account='BOB-1')", f"wire_transfer_acme(account={IBAN!r})"))
    assert out.error is not None and out.error.code == "type_error", out  # the local caller sees none either
    got = await cm.execute(
        f"from tools import snippets\n__out = snippets.wire_transfer_acme(account={IBAN!r})", caller=ALICE
    )
    assert got.ok and got.value == f"sent {IBAN}", got.error
    # Past the check (a name computed at run time, or the check off): as for a name no one holds.
    call = "from tools import snippets\n__out = getattr(snippets, 'wire_transfer_' + {!r})(account='x')"
    for options in ({}, {"type_check": "off"}):
        theirs = await cm.execute(call.format("acme"), caller=BOB, options=options)
        nobodys = await cm.execute(call.format("acmf"), caller=BOB, options=options)
        assert theirs.error is not None and nobodys.error is not None, (theirs, nobodys)
        assert theirs.error.code == nobodys.error.code, (theirs.error, nobodys.error)
        assert theirs.error.message.replace("acme", "acmf") == nobodys.error.message, (theirs.error, nobodys.error)
        assert theirs.error.code == "unknown_tool" and theirs.calls.count == 0, theirs
    direct = "from tools import snippets\n__out = snippets.wire_transfer_acme(account='x')"
    theirs = await cm.execute(direct, caller=BOB, options={"type_check": "off"})
    nobodys = await cm.execute(direct.replace("acme", "acmf"), caller=BOB, options={"type_check": "off"})
    assert theirs.error is not None and nobodys.error is not None, (theirs, nobodys)
    assert theirs.error.code == nobodys.error.code == "unknown_tool", (theirs.error, nobodys.error)
    assert theirs.error.message.replace("acme", "acmf") == nobodys.error.message, (theirs.error, nobodys.error)
    assert IBAN not in theirs.error.message and SECRET not in theirs.error.message, theirs.error


async def test_paging_the_catalog_shows_nothing_of_another_callers_snippets(box: Toolbox) -> None:
    # A page was filtered after the index made it: a page where alice's snippet stood came back
    # short (here empty) with the index's cursor, which spells the last id it listed.
    import base64

    pages: list[list[str]] = []
    cursors: list[str] = []
    cursor: str | None = None
    while True:
        page = await box.codemode.list_tools("snippets", cursor, 1, caller=BOB)
        pages.append([t.id for t in page.tools])
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        cursors.append(base64.urlsafe_b64decode(cursor + "==").decode("utf-8", "replace"))
    assert pages == [["snippets:team_report"], ["snippets:wire_transfer"]], pages
    assert not any("wire_transfer_acme" in c for c in cursors), cursors
    everything = await box.codemode.list_tools(None, None, 1000, caller=BOB)
    assert "snippets:wire_transfer_acme" not in [t.id for t in everything.tools]


async def test_an_unknown_id_suggests_three_the_caller_sees_though_another_callers_is_closer(box: Toolbox) -> None:
    # Suggestions were the index's three nearest ids over every tool, less those hidden from the
    # caller: alice's private snippet, the nearest of all, took a place and left bob two (which
    # told him that something he may not see stood there).
    cm = box.codemode
    for name in ("wire_transfers", "wire_transfer_ach"):
        await cm.save_snippet(name, "__out = 1", "Bob's other transfers.", caller=BOB)
    for asked in ("snippets:wire_transfer_acme", "wire_transfer_acme"):
        with pytest.raises(ToolError) as info:
            await cm.run_tool(asked, {"account": "x"}, caller=BOB)
        assert info.value.code == "unknown_tool", info.value
        near = (info.value.hint or "").removeprefix("nearest tools: ").split(", ")
        assert sorted(near) == ["snippets:wire_transfer", "snippets:wire_transfer_ach", "snippets:wire_transfers"], near
    with pytest.raises(ToolError) as info:
        await cm.run_tool("snippets:wire_transfer_acm", {"account": "x"}, caller=ALICE)
    assert "snippets:wire_transfer_acme" in (info.value.hint or ""), info.value
