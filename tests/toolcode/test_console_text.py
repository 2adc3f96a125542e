"""What the console shows is what is there: hostile text escaped, its invisible characters written out."""

from __future__ import annotations

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
