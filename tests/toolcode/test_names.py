"""Names and ids checked at the edge are whole: a trailing line break is not part of a valid one.

``$`` in a regular expression also matches before a final ``\\n``: ``report\\n`` passed as the snippet
name ``report`` and was saved next to it, looking the same wherever it was shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from toolcode import _results
from toolcode._paused import PausedRuns
from toolcode._sessions import Sessions
from toolcode._snippets import SnippetLibrary
from toolcode.exceptions import InvalidArgumentsError
from toolcode.state import check_key
from toolindex import InvalidToolIDError
from toolindex._ids import validate_name, validate_namespace


def _matched(pattern: re.Pattern[str], value: str) -> str:
    if not pattern.match(value):
        raise ValueError(value)
    return value


VALID: list[tuple[str, Callable[[str], Any], str]] = [
    ("snippet name", SnippetLibrary.check_name, "report"),
    ("session name", Sessions.check_name, "s1"),
    ("execution id", PausedRuns.check_id, "0123456789abcdef0123456789abcdef"),
    ("result reference", lambda v: _matched(_results._REF, v), "r-0123456789ab"),  # pyright: ignore[reportPrivateUsage]
    ("state key", lambda v: check_key("key", v), "alice/s1"),
    ("tool name", validate_name, "list_tickets"),
    ("namespace", validate_namespace, "helpdesk"),
]


@pytest.mark.parametrize(("what", "check", "name"), VALID, ids=[v[0] for v in VALID])
@pytest.mark.parametrize("tail", ["\n", "\r\n", " ", "\x00"])
def test_a_name_with_a_trailing_break_is_refused(what: str, check: Callable[[str], Any], name: str, tail: str) -> None:
    assert check(name) == name
    with pytest.raises((InvalidArgumentsError, ValueError, InvalidToolIDError)):
        check(name + tail)
