from __future__ import annotations

import logging
from typing import Any

import pytest
import structlog

from toolrun import RedactingFilter, redact, redact_processor, redact_url, register_secrets
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
