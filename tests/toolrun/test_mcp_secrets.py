"""Registered secrets are masked in what an MCP server sends, before the SDK parses it."""

from __future__ import annotations

import json
import re
from typing import Any

import mcp_types as types
import pytest

from toolrun import register_secrets
from toolrun._mcp_secrets import mask_message

SECRET = "mcpsec/Wq+7e=Hd!3k"  # "/", "+", "=" and "!" are escaped or encoded by some writers
# JSON writes a tab then "csec/…" as "\\tcsec/…": the text holds this value, the message does not.
LOOKALIKE = "tcsec/Wq+7e=Hd!3k"


@pytest.fixture(autouse=True)
def _secrets() -> None:
    register_secrets([SECRET, LOOKALIKE])


def error_reply(message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": -32001, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": 3, "error": error}


def read(text: str) -> dict[str, Any]:
    """``text`` as the SDK reads it, back as plain data."""
    message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    return message.model_dump(by_alias=True, exclude_unset=True)


def test_a_message_without_a_secret_is_passed_on_as_it_is() -> None:
    text = json.dumps(error_reply("bad key, try again", {"k": "v"}))
    assert mask_message(text) is text


def test_a_secret_in_an_error_is_masked_and_the_message_still_reads() -> None:
    text = json.dumps(error_reply(f"bad key {SECRET}", {"key": SECRET, SECRET: 1}))
    assert read(mask_message(text)) == error_reply("bad key ***", {"key": "***", "***": 1})


@pytest.mark.parametrize(
    "written",
    [
        # Letters of the secret as \u escapes: its literal part is nowhere in the text.
        "".join(f"\\u{ord(c):04x}" for c in SECRET),
        # Only the characters no anchor holds escaped ("/" as \u002f, "+" as \u002b, ...).
        "".join(c if c.isalnum() else f"\\u{ord(c):04X}" for c in SECRET),
        # JSON's short escape of "/".
        SECRET.replace("/", "\\/"),
    ],
)
def test_however_the_server_escapes_a_secret_it_is_masked(written: str) -> None:
    text = '{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"bad key ' + written + '"}}'
    assert json.loads(text)["error"]["message"] == f"bad key {SECRET}"
    assert read(mask_message(text)) == error_reply("bad key ***")


def test_text_that_only_looks_like_a_secret_across_an_escape_is_left_whole() -> None:
    # A tab then "csec/Wq+7e=Hd!3k": the text holds LOOKALIKE from the "t" of "\t" on, the value
    # does not. Masking the text would have left "\***" behind, which is no JSON.
    text = json.dumps(error_reply("bad key \tcsec/Wq+7e=Hd!3k"))
    assert "\\" + LOOKALIKE in text
    assert mask_message(text) is text


def test_a_listed_schema_keeps_a_valid_regular_expression() -> None:
    tool = {
        "name": "configure",
        "description": f"Your key is {SECRET}",
        "inputSchema": {"type": "object", "properties": {"mode": {"type": "string", "pattern": f"^(fast|{SECRET})$"}}},
    }
    text = json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"tools": [tool], "nextCursor": SECRET}})
    listed = read(mask_message(text))["result"]
    assert listed["nextCursor"] == "***"
    (shown,) = listed["tools"]
    assert shown["description"] == "Your key is ***"
    pattern = shown["inputSchema"]["properties"]["mode"]["pattern"]
    assert pattern == r"^(fast|\*\*\*)$"
    assert re.fullmatch(pattern, "***") and re.fullmatch(pattern, "fast")


def test_a_notification_and_a_request_of_the_server_are_masked() -> None:
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "error", "data": f"key {SECRET}"}}
    assert read(mask_message(json.dumps(log)))["params"]["data"] == "key ***"
    ask = {"jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage", "params": {"note": SECRET}}
    assert read(mask_message(json.dumps(ask)))["params"]["note"] == "***"


def test_text_that_is_not_json_is_masked_as_text() -> None:
    escaped = "".join(f"\\u{ord(c):04x}" for c in SECRET)
    text = f'{{"jsonrpc":"2.0","id":3,"error":{{"message":"bad key {SECRET} or {escaped}"'  # cut short
    masked = mask_message(text)
    assert masked == '{"jsonrpc":"2.0","id":3,"error":{"message":"bad key *** or ***"'


def test_an_escaped_backslash_is_not_read_as_an_escape() -> None:
    # "\\u0041" is a backslash and "u0041", not "A": the text is not JSON, and stays as it was there.
    text = '{"id":3,"note":"\\\\u0041 and ' + SECRET
    assert mask_message(text) == '{"id":3,"note":"\\\\u0041 and ***'
