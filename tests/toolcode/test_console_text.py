"""What the console shows is what is there: hostile text escaped, its invisible characters written out."""

from __future__ import annotations

import pytest

from toolcode.console._html import esc, run_row


def test_bidi_overrides_and_invisible_characters_are_shown_written_out() -> None:
    # A path shown as ".../authorized_keys/..." by a right-to-left override (Trojan Source) is
    # shown with the override written out; tag characters hide text from a reader altogether.
    spoof = "/home/alice/.ssh/\u202esyek_dezirohtua\u202c/../notes.txt"
    assert esc(spoof) == "/home/alice/.ssh/\\u202esyek_dezirohtua\\u202c/../notes.txt"
    for ch in ("\u2066", "\u2069", "\u200b", "\u200f", "\ufeff", "\x1b", "\x00", "\u00ad"):
        assert ch not in esc(f"a{ch}b") and f"\\u{ord(ch):04x}" in esc(f"a{ch}b")
    assert esc("x\U000e0041y") == "x\\U000e0041y"  # a tag character, never ambiguous with \\ue004
    # Text as it is otherwise: tabs, new lines, accents and scripts, and HTML escaped.
    assert esc("é 中\tx\n<b>'\"") == "é 中\tx\n&lt;b&gt;&#x27;&quot;"


def test_the_live_list_row_writes_them_out_too() -> None:
    from types import SimpleNamespace

    run = SimpleNamespace(
        execution_id="e" * 32,
        pending=[SimpleNamespace(tool_id="fs:write\u202efile")],
        paused_at=0.0,
        expires=None,
    )
    assert run_row(run, "alice")["tools"] == "fs:write\\u202efile"  # type: ignore[arg-type]


def test_a_question_about_pending_calls_writes_them_out_too() -> None:
    # The elicitation form and the terminal read the same text: what is approved reads as it is.
    from toolcode._outcome import shown_to_decide
    from toolcode.models import PendingCallInfo

    spoof = {"path": "/home/alice/.ssh/\u202esyek_dezirohtua\u202c/../notes.txt"}
    call = PendingCallInfo(tool_id="fs:write_file", args=spoof, tier="write", reason="writes\u200b")
    text, offered = shown_to_decide([call])
    assert "\u202e" not in text and "\\u202e" in text and "\\u200b" in text
    assert offered == ("approve", "approve_run", "deny", "abort")


_DEFAULT_IGNORABLE = [
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
]  # fmt: skip
"""Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, 15.1): what a font does not draw."""


def test_every_character_nothing_draws_is_written_out() -> None:
    # Only a hand-picked list was written out: a secret spelt in variation selectors after "ok"
    # rendered pixel-identical to "ok" in Chromium, and a person approved a call carrying it unseen.
    import sys
    import unicodedata

    undrawn = {c for first, last in _DEFAULT_IGNORABLE for c in range(first, last + 1)}
    undrawn |= {
        c
        for c in range(sys.maxunicode + 1)
        if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp") and chr(c) not in "\t\n\r"
    }
    kept = [hex(c) for c in sorted(undrawn) if chr(c) in esc(f"a{chr(c)}b")]
    assert not kept, kept
    secret = "".join(chr(0xFE00 + b) if b < 16 else chr(0xE0100 + b - 16) for b in b"AKIA-SECRET")
    assert esc("ok" + secret).startswith("ok\\U000e0131") and esc("ok" + secret).isascii()


def test_the_line_a_question_quotes_is_written_out_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The snippet's line that the elicitation question and the terminal quote came from the code as it was.
    from toolcode._cli._common import ask_terminal
    from toolcode.models import PendingCallInfo
    from toolcode.server._ask import _question

    call = PendingCallInfo(tool_id="fs:write_file", args={"path": "a"}, tier="write", reason="asks")
    code = "x = 1\nrun_tool('fs:write_file', path='a')  # \u202eok\ufe01\u3164\n"
    question = _question([call], 2, code)[0]
    assert question.endswith("at line 2: run_tool('fs:write_file', path='a')  # \\u202eok\\ufe01\\u3164"), question
    monkeypatch.setattr("builtins.input", lambda: "n")
    assert ask_terminal([call], 2, code) == "deny"
    assert "# \\u202eok\\ufe01\\u3164" in capsys.readouterr().err


def test_a_question_quotes_the_line_the_interpreter_numbers(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lines were split where the interpreter does not end one (U+2028, \x0c, \x1c, \x85): "at line 2"
    # quoted a comment's tail instead of the call.
    from toolcode._cli._common import ask_terminal
    from toolcode._outcome import code_lines
    from toolcode.models import PendingCallInfo
    from toolcode.server._ask import _question

    call = PendingCallInfo(tool_id="fs:write_file", args={"path": "a"}, tier="write", reason="asks")
    for sep in ("\u2028", "\u2029", "\x0c", "\x0b", "\x1c", "\x85", "\r"):
        code = f"x = 1  # a note{sep}print('only reads')\r\nrun_tool('fs:write_file', path='a')\n"
        assert _question([call], 2, code)[0].endswith("at line 2: run_tool('fs:write_file', path='a')"), repr(sep)
        monkeypatch.setattr("builtins.input", lambda: "n")
        assert ask_terminal([call], 2, code) == "deny"
        assert "line 2: run_tool('fs:write_file', path='a')" in capsys.readouterr().err, repr(sep)
        assert len(code_lines(code)) == 2 and "\\u" in code_lines(code)[0], repr(sep)
    assert code_lines("") == [""] and code_lines("a\n\n") == ["a", ""]


def test_a_question_about_a_saved_snippet_shows_the_code_approving_it_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The question showed a snippet's arguments and the tools it names, never its code, while
    # approving covered exactly that code (its digest): a person approved code they never read.
    from toolcode._cli._common import ask_terminal
    from toolcode._outcome import REFUSALS, shown_to_decide
    from toolcode.models import PendingCallInfo
    from toolcode.server._ask import _question

    tidy = "run_tool('snippets:wipe')  # tidy up\u202e\nrun_tool('fs:write_file', path='a', content='b')\r\n"
    code = {"d1": tidy, "d2": "run_tool('fs:delete', path='/')"}  # the paused run's, by digest
    snippets = {"snippets:tidy": "d1", "snippets:wipe": "d2"}
    call = PendingCallInfo(tool_id="snippets:tidy", args={}, tier="write", reason="asks", snippets=snippets)
    text, offered = shown_to_decide([call, call], code)  # called twice: its code is shown once
    assert text.endswith(
        "code of snippets:tidy that approving runs (2 lines):\n"
        "  1 | run_tool('snippets:wipe')  # tidy up\\u202e\n"
        "  2 | run_tool('fs:write_file', path='a', content='b')\n"
        "code of snippets:wipe that approving runs (1 line):\n"
        "  1 | run_tool('fs:delete', path='/')"
    ), text
    assert offered == ("approve", "approve_run", "deny", "abort")
    assert "code of snippets:wipe" in _question([call], None, "", code)[0]
    monkeypatch.setattr("builtins.input", lambda: "n")
    assert ask_terminal([call], None, "", code) == "deny"
    assert "  1 | run_tool('fs:delete', path='/')" in capsys.readouterr().err
    # Too long to show here: said so, never cut silently, and it cannot be approved here.
    long = PendingCallInfo(
        tool_id="snippets:tidy", args={}, tier="write", reason="asks", snippets={"snippets:tidy": "d"}
    )
    text, offered = shown_to_decide([long], {"d": "x = 1\n" * 5_000})
    assert "too long to show here in full: " in text and "read it whole in the console" in text
    assert offered == REFUSALS
