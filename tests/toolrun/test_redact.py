from __future__ import annotations

import base64
import json
import logging
import re
import sys
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
import structlog

from toolrun import RedactingFilter, mask_secrets, redact, redact_processor, redact_url, register_secrets
from toolrun._mcp_stderr import MAX_LINE, StderrPump
from toolrun._openapi import _excerpt  # pyright: ignore[reportPrivateUsage]
from toolrun._redact import MASK, Redactor, looks_secret


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://user:pa55@api.example.com/mcp", "https://***@api.example.com/mcp"),
        ("https://T0KEN@github.com/org/repo.git", "https://***@github.com/org/repo.git"),
        ("http://h/mcp?api_key=abc&page=2", "http://h/mcp?api_key=***&page=2"),
        ("http://h/mcp?page=2&apikey=abc", "http://h/mcp?page=2&apikey=***"),
        ("http://h/mcp?access_token=abc#frag", "http://h/mcp?access_token=***#frag"),
        ("http://h/cb#id_token=abc&state=1", "http://h/cb#id_token=***&state=1"),
        ("http://h/x?X-Amz-Signature=abc&X-Amz-Date=1", "http://h/x?X-Amz-Signature=***&X-Amz-Date=1"),
        (
            "http://h/x?client_secret=a&password=b&passwd=c&auth=d",
            "http://h/x?client_secret=***&password=***&passwd=***&auth=***",
        ),
        ("http://h/x?monkey=banana&author=me&keys=1", "http://h/x?monkey=banana&author=me&keys=1"),
        ("http://127.0.0.1:8765/mcp", "http://127.0.0.1:8765/mcp"),
    ],
)
def test_urls_lose_their_credentials(url: str, expected: str) -> None:
    assert redact_url(url) == expected
    assert redact(f"cannot reach {url}: ConnectError") == f"cannot reach {expected}: ConnectError"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.def-123", "Authorization: ***"),
        ("sent Bearer eyJhbGciOi.x.y to the server", f"sent Bearer {MASK} to the server"),
        ("Basic dXNlcjpwYXNz", f"Basic {MASK}"),
        ('{"password": "hunter2", "user": "bob"}', '{"password": "***", "user": "bob"}'),
        ("--api-key=abc123 --verbose", "--api-key=*** --verbose"),
        ("token='abc123'", "token='***'"),
        ("x-api-key: abc", "x-api-key: ***"),
        # Ordinary prose stays as it was.
        ("Token expired, please log in", "Token expired, please log in"),
        ("Basic Configuration", "Basic Configuration"),
        ("Bearer abcdefghijklmno", f"Bearer {MASK}"),  # a token of letters alone is still a token
        ("line 1: key = value", "line 1: key = value"),
        ("unexpected token at column 3", "unexpected token at column 3"),
    ],
)
def test_secret_looking_parameters_are_masked(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_registered_values_are_masked_wherever_they_appear() -> None:
    r = Redactor(["s3cr3t-value", "s3cr3t-value-longer"])
    assert r.redact("a s3cr3t-value-longer and a s3cr3t-value") == "a *** and a ***"
    assert r.redact("prefix-s3cr3t-value-suffix") == "prefix-***-suffix"
    assert r.redact("nothing here") == "nothing here"


def test_short_and_blank_values_are_not_registered() -> None:
    r = Redactor(["1", "true", "     ", "abcde"])
    assert r.secrets == frozenset()
    assert r.redact("true 1 abcde") == "true 1 abcde"
    r.add(["abcdef"])
    assert r.secrets == {"abcdef"}


def test_values_with_regex_characters() -> None:
    r = Redactor(["a+b*c?(d)[e]"])
    assert r.redact("x a+b*c?(d)[e] y") == "x *** y"


def test_the_process_wide_registry() -> None:
    assert redact("wide-r3gistry-value") == "wide-r3gistry-value"
    register_secrets(["wide-r3gistry-value"])
    assert redact("got wide-r3gistry-value back") == "got *** back"


@pytest.mark.parametrize("name", ["api_key", "API_KEY", "GITHUB_TOKEN", "x-api-key", "db.password", "client_secret"])
def test_names_that_look_secret(name: str) -> None:
    assert looks_secret(name)


@pytest.mark.parametrize("name", ["HOME", "PATH", "author", "monkey", "keys", "tokens_used"])
def test_names_that_do_not(name: str) -> None:
    assert not looks_secret(name)


def test_structlog_processor() -> None:
    register_secrets(["struct-l0g-secret"])
    captured: list[dict[str, Any]] = []

    def keep(_: Any, __: str, event: dict[str, Any]) -> str:
        captured.append(dict(event))
        return ""

    log = structlog.wrap_logger(
        structlog.PrintLogger(),
        processors=[redact_processor, keep],
        context_class=dict,
        cache_logger_on_first_use=False,
    )
    log.warning(
        "failed with struct-l0g-secret",
        url="https://u:p@h/x?token=abc",
        error=RuntimeError("struct-l0g-secret"),
        count=3,
    )
    (event,) = captured
    assert event["event"] == "failed with ***"
    assert event["url"] == "https://***@h/x?token=***"
    assert event["error"] == "RuntimeError('***')"
    assert event["count"] == 3


def test_logging_filter(caplog: pytest.LogCaptureFixture) -> None:
    register_secrets(["std-l0g-secret"])
    logger = logging.getLogger("test_redact.filter")
    handler = caplog.handler
    handler.addFilter(RedactingFilter())
    try:
        with caplog.at_level(logging.INFO, logger="test_redact.filter"):
            logger.info("HTTP Request: POST %s %s", "https://h/mcp?api_key=abc", "std-l0g-secret")
            try:
                raise ValueError("std-l0g-secret in a traceback")
            except ValueError:
                logger.exception("boom")
    finally:
        handler.removeFilter(handler.filters[-1])
    text = caplog.text
    assert "std-l0g-secret" not in text
    assert "api_key=***" in text
    assert "*** in a traceback" in text


# -- every encoding, in results ---------------------------------------------------------------

SECRET = "tok/9Zq+Kp=wX7!m é"  # characters that percent-encoding, JSON and base64 all change


def _b64(data: bytes, *, url: bool = False) -> str:
    return (base64.urlsafe_b64encode if url else base64.b64encode)(data).decode()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"plain {SECRET} here", "plain *** here"),
        (f"?k={quote(SECRET, safe='')}&page=2", "?k=***&page=2"),
        (f"?k={re.sub('%..', lambda m: m[0].lower(), quote(SECRET, safe=''))}&p=2", "?k=***&p=2"),  # hex: either case
        (f"?k={quote_plus(SECRET)}&page=2", "?k=***&page=2"),  # a space as '+'
        (f"/v1/{quote(SECRET)}/items", "/v1/***/items"),  # '/' left as it is
        (json.dumps({"k": SECRET}), '{"k": "***"}'),  # JSON with \u00e9
        (json.dumps({"k": SECRET}, ensure_ascii=False).replace("/", "\\/"), '{"k": "***"}'),  # PHP-style \/
        (f"auth {_b64(SECRET.encode())} end", "auth *** end"),
        (f"auth {_b64(SECRET.encode(), url=True)} end", "auth *** end"),
        (f"auth {quote(_b64(SECRET.encode()), safe='')} end", "auth *** end"),  # base64 in a URL
        # Inside a longer base64 text, at each of the three offsets: the characters that carry a
        # bit of the secret go, those that carry only its neighbours' stay.
        (f"Basic {_b64(b'svc:' + SECRET.encode())}", "Basic c3ZjO***"),
        (f"Basic {_b64(b'sv:' + SECRET.encode())}", "Basic c3Y6***"),
        (f"Basic {_b64(b'svcs:' + SECRET.encode())}", "Basic c3Zjcz***"),
        (f"{_b64(b'svc:' + SECRET.encode() + b':more-after-it')}", "c3ZjO***6bW9yZS1hZnRlci1pdA=="),
    ],
)
def test_a_registered_secret_is_masked_in_each_encoding(text: str, expected: str) -> None:
    r = Redactor([SECRET])
    assert r.mask(text) == expected
    assert r.redact(text) == expected  # errors and logs get the same


def test_no_base64_character_that_carries_a_bit_of_the_secret_is_left() -> None:
    r = Redactor([SECRET])
    data = SECRET.encode()
    for before in range(7):
        for after in range(4):
            encoded = _b64(bytes(range(65, 65 + before)) + data + bytes(range(97, 97 + after)))
            # Character i carries bits 6i..6i+5: those before the secret's first bit and after its last stay.
            first, end = 8 * before // 6, -(-8 * (before + len(data)) // 6)
            expected = encoded[:first] + MASK + (encoded[end:] if after else "")  # bare padding goes with it
            assert r.mask(encoded) == expected, (before, after)


def test_results_lose_only_registered_secrets_not_what_looks_like_a_credential() -> None:
    r = Redactor([SECRET])
    value = {"next": "https://h/x?api_key=public-demo-key&page=2", "auth": "Bearer someone-elses"}
    assert r.mask(value) is value  # data that only looks like a credential stays in a result
    assert r.redact(value["next"]) == "https://h/x?api_key=***&page=2"  # an error message would not show it


def test_structured_values_are_masked_in_strings_and_keys_at_any_depth() -> None:
    r = Redactor([SECRET])
    clean = {"kept": [1, 2.5, None, True, "x"]}
    value = {
        "a": [{"b": (f"x {SECRET}", 3)}, SECRET],
        SECRET: {"nested": quote(SECRET, safe="")},
        "untouched": clean,
    }
    masked = r.mask(value)
    assert masked == {"a": [{"b": ("x ***", 3)}, "***"], "***": {"nested": "***"}, "untouched": clean}
    assert masked["untouched"] is clean  # rebuilt only where something was masked
    assert value["a"][1] == SECRET  # the original is not changed
    assert r.mask(clean) is clean and r.mask(("a", 1)) == ("a", 1) and r.mask(5) == 5 and r.mask(None) is None


def test_a_value_nested_deeper_than_the_recursion_limit_is_masked() -> None:
    r = Redactor([SECRET])
    value: Any = SECRET
    for _ in range(sys.getrecursionlimit() * 3):
        value = [value]
    masked = r.mask(value)
    for _ in range(sys.getrecursionlimit() * 3):
        masked = masked[0]
    assert masked == MASK


def test_a_value_that_contains_itself() -> None:
    r = Redactor([SECRET])
    loop: list[Any] = ["clean"]
    loop.append(loop)
    assert r.mask(loop) is loop  # nothing to mask: returned as it is
    loop.append(SECRET)
    with pytest.raises(ValueError, match="contains itself"):
        r.mask(loop)


def test_objects_other_than_plain_data_are_walked_without_running_their_code() -> None:
    class Opaque:
        def __reduce__(self) -> Any:
            raise AssertionError("never serialised")

    r = Redactor([SECRET])
    o = Opaque()
    assert r.mask({"o": o, "s": SECRET}) == {"o": o, "s": "***"}


def test_a_secret_without_a_literal_run_is_still_found() -> None:
    r = Redactor(["é/ü!ö+ä"])
    assert r.mask(f"a {quote('é/ü!ö+ä', safe='')} b") == "a *** b"
    assert r.mask({"k": "é/ü!ö+ä"}) == {"k": "***"}


def test_nothing_registered_costs_nothing() -> None:
    r = Redactor()
    value = {"k": ["v"] * 10}
    assert r.mask(value) is value and r.mask("text") == "text"


def test_the_process_wide_mask_secrets() -> None:
    assert mask_secrets({"k": "wide-m4sk-value"}) == {"k": "wide-m4sk-value"}
    register_secrets(["wide-m4sk-value"])
    assert mask_secrets({"k": _b64(b"wide-m4sk-value")}) == {"k": "***"}


@pytest.mark.anyio
async def test_a_stderr_line_is_redacted_before_it_is_cut() -> None:
    register_secrets(["stderr-cut-s3cret"])
    logged: list[dict[str, Any]] = []

    class Log:
        def warning(self, event: str, **kw: Any) -> None:
            logged.append({"event": event, **kw})

        info = warning

    pump = StderrPump(Log())
    writer = pump.open()
    # The secret straddles the cut: cut first, its first half would no longer be recognised.
    writer.write(b"x" * (MAX_LINE - 6) + b" stderr-cut-s3cret and more\n")
    pump.spawned()
    pump.drain()
    pump.close()
    (line,) = [e["line"] for e in logged if e["event"] == "mcp.stderr"]
    assert line.startswith("x" * (MAX_LINE - 6) + " ***") and "stderr" not in line
    assert "stderr" not in pump.tail()


def test_an_error_excerpt_is_redacted_before_it_is_cut() -> None:
    register_secrets(["excerpt-cut-s3cret"])
    body = b"y" * 995 + b" excerpt-cut-s3cret " + b"z" * 5000
    text = _excerpt(body, "utf-8")
    assert "excerpt" not in text and text.startswith("y" * 995 + " ***")


def test_content_blocks_are_masked_in_every_field() -> None:
    r = Redactor([SECRET])
    blob = _b64(b"\x89PNG header " + SECRET.encode() + b" more bytes")
    content = (
        {"type": "text", "text": f"token {SECRET}"},
        {"type": "resource", "resource": {"uri": f"mem://x?k={quote(SECRET, safe='')}", "text": SECRET}},
        {"type": "image", "data": blob, "mimeType": "image/png"},
        {"type": "text", "text": "clean", "annotations": {"audience": ["user"]}},
    )
    text, resource, image, clean = r.mask(content)
    assert text == {"type": "text", "text": "token ***"}
    assert resource == {"type": "resource", "resource": {"uri": "mem://x?k=***", "text": "***"}}
    assert MASK in image["data"] and image["mimeType"] == "image/png"  # the secret's bytes in binary data too
    assert clean is content[3]


@pytest.mark.anyio
async def test_one_drain_of_stderr_reads_a_bounded_amount_however_fast_the_child_writes() -> None:
    # A child that writes as fast as it is read kept the reading loop, and with it the event loop
    # every caller shares, busy for as long as it wrote.
    import threading

    from toolrun._mcp_stderr import _DRAIN  # pyright: ignore[reportPrivateUsage]

    class Counting(StderrPump):
        read = 0

        def _feed(self, chunk: bytes) -> None:
            self.read += len(chunk)
            super()._feed(chunk)

    pump = Counting(structlog.get_logger("test"))
    writer = pump.open()
    total = 64 * 1024 * 1024
    stop = threading.Event()

    def flood() -> None:
        line = b"x" * 1023 + b"\n"
        written = 0
        try:
            while written < total and not stop.is_set():
                written += writer.write(line) or 0
        except (BrokenPipeError, OSError, ValueError):
            return

    t = threading.Thread(target=flood, daemon=True)
    t.start()
    try:
        while pump.read == 0:
            pump.drain()
        before = pump.read
        assert pump.drain() is True  # still open: more to read later
        assert pump.read - before <= _DRAIN
    finally:
        stop.set()
        pump.close()
        t.join(timeout=60)
    assert not t.is_alive()
