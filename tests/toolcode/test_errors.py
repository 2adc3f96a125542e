"""The error text every door reports: redacted before it is clipped, so a clipped secret is not half shown."""

from __future__ import annotations

import importlib
import pathlib
import re

import pytest

from toolcode._errors import LOWER_ERRORS, as_tool_error, error_info, message_of
from toolcode.exceptions import MAX_MESSAGE
from toolrun import register_secrets

ROOT = pathlib.Path(__file__).resolve().parents[2]
SECRET = "errors-clip-s3cret-value"


def test_a_message_is_redacted_before_it_is_clipped() -> None:
    register_secrets([SECRET])
    # The secret straddles the clip: clipped first, its first half would no longer be recognised.
    error = RuntimeError("x" * (MAX_MESSAGE - 10) + " " + SECRET + " and the rest")
    for text in (message_of(error), error_info(error).message):
        assert "errors-clip" not in text and "***" in text and len(text) <= MAX_MESSAGE


@pytest.mark.parametrize("package", ["toolindex", "tooldocs", "toolrun"])
def test_every_public_error_of_a_lower_package_maps_to_a_documented_code(package: str) -> None:
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", (ROOT / "docs" / "errors.md").read_text(), re.MULTILINE))
    module = importlib.import_module(f"{package}.exceptions")
    errors = [c for n in module.__all__ if isinstance(c := getattr(module, n), type) and issubclass(c, Exception)]
    assert errors
    for cls in errors:
        # Listed by name, not only covered by its package's root: a new error class is mapped on purpose.
        assert cls in LOWER_ERRORS, f"{package}.{cls.__name__} is missing from toolcode._errors.LOWER_ERRORS"
        assert LOWER_ERRORS[cls].code.value in documented, cls


def test_a_lower_error_maps_to_the_same_code_in_a_snippet_and_at_a_door() -> None:
    import toolrun

    for exc, code, hint in (
        (toolrun.ToolNotFoundError("a:b", ["a:c"]), "unknown_tool", "nearest tools: a:c"),
        (toolrun.AmbiguousToolIDError("b", ["x:b", "y:b"]), "unknown_tool", "qualify the name: x:b, y:b"),
        (toolrun.ToolTimeoutError("a:b", 2), "timeout", None),
        (toolrun.BackendUnavailableError("mcp:a", "gone", fix="install it"), "upstream_unavailable", "install it"),
        (toolrun.ConfigError("a", "command", "missing"), "config_error", None),
    ):
        err = as_tool_error(exc, "a:b")
        info = error_info(exc)
        assert (err.code.value, err.hint) == (info.code, info.hint) == (code, hint), exc
