"""The error text every door reports: redacted before it is clipped, so a clipped secret is not half shown."""

from __future__ import annotations

from toolcode._errors import error_info, message_of
from toolcode.exceptions import MAX_MESSAGE
from toolrun import register_secrets

SECRET = "errors-clip-s3cret-value"


def test_a_message_is_redacted_before_it_is_clipped() -> None:
    register_secrets([SECRET])
    # The secret straddles the clip: clipped first, its first half would no longer be recognised.
    error = RuntimeError("x" * (MAX_MESSAGE - 10) + " " + SECRET + " and the rest")
    for text in (message_of(error), error_info(error).message):
        assert "errors-clip" not in text and "***" in text and len(text) <= MAX_MESSAGE
