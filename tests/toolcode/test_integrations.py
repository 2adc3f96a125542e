"""The doors' shared pieces and the framework integrations' packaging (no servers, no framework run)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from toolcode import Toolbox
from toolcode._metatools import (  # pyright: ignore[reportPrivateUsage]
    _OPERATIONS,
    INPUT_SCHEMAS,
    call_metatool,
    input_schema,
    parse_arguments,
)
from toolcode._settings import META_TOOLS
from toolcode.exceptions import ConfigurationError, InvalidArgumentsError
from toolcode.state import MemoryStateStore

pytestmark = pytest.mark.anyio


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)  # a hang bound


def test_every_code_mode_tool_has_one_operation_and_one_input_model() -> None:
    assert set(_OPERATIONS) == set(META_TOOLS) == set(INPUT_SCHEMAS)
    for name in META_TOOLS:
        schema = input_schema(name)
        assert schema["type"] == "object" and "title" not in schema and "$defs" not in schema, name


def test_importing_toolcode_imports_no_framework() -> None:
    proc = _python(
        "import sys, toolcode, toolcode.integrations, toolcode.server\n"
        "print(sorted(m for m in ('pydantic_ai', 'agents') if m in sys.modules))"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [("pydantic_ai", "pydantic_ai", "toolcode[pydantic-ai]"), ("openai_agents", "agents", "toolcode[openai-agents]")],
)
def test_an_integration_without_its_extra_says_what_to_install(module: str, framework: str, extra: str) -> None:
    # ``None`` in sys.modules makes the import fail as if the package were not installed.
    proc = _python(f"import sys; sys.modules[{framework!r}] = None; import toolcode.integrations.{module}")
    assert proc.returncode == 1
    assert "ImportError" in proc.stderr and f"pip install '{extra}'" in proc.stderr, proc.stderr[-2000:]


async def test_unknown_tools_and_arguments_are_refused_by_name() -> None:
    async with Toolbox(engine="inprocess", state=MemoryStateStore()) as box:
        unknown = await call_metatool(box.codemode, "rm_rf", {})
        bad = await call_metatool(box.codemode, "list_namespaces", {"verbose": True})
        ok = await call_metatool(box.codemode, "list_namespaces", {})
        one = await call_metatool(box.codemode, "describe_tool", {"tool_id": "nope:nothing"})
        nothing = await call_metatool(box.codemode, "describe_tool", {"tool_id": ["nope:nothing", "nope:else"]})
    assert unknown.is_error and unknown.text.startswith("error [invalid_arguments]: invalid 'name'")
    assert bad.is_error
    assert bad.text == "error [invalid_arguments]: invalid 'verbose': list_namespaces has no such argument"
    assert bad.structured()["ok"] is False and bad.structured()["error"]["code"] == "invalid_arguments"
    assert not ok.is_error and ok.error is None and ok.structured()["namespaces"] == []
    # Describing only unknown ids is a mistake (a list of them is a result over MCP, with an error per id).
    assert one.is_error and one.text.startswith("error [unknown_tool]: unknown tool 'nope:nothing'")
    assert not nothing.is_error and nothing.error is not None
    assert nothing.error.code == "unknown_tool" and nothing.text.startswith("error [unknown_tool] nope:nothing:")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"code": ', "not valid JSON (Expecting value)"),
        ('["x"]', "must be a JSON object"),
        ("3", "must be a JSON object"),
    ],
)
def test_arguments_that_are_not_an_object_are_invalid_arguments(text: str, reason: str) -> None:
    assert parse_arguments("") == parse_arguments("  ") == {} and parse_arguments(b'{"a": 1}') == {"a": 1}
    with pytest.raises(InvalidArgumentsError) as e:
        parse_arguments(text)
    assert (e.value.field, e.value.reason) == ("arguments", reason)


def test_choosing_a_tool_that_does_not_exist_is_a_configuration_error() -> None:
    pytest.importorskip("pydantic_ai")
    from toolcode.integrations.pydantic_ai import CodeModeToolset

    with pytest.raises(ConfigurationError, match="unknown tool 'rm_rf'"):
        CodeModeToolset(lambda: Toolbox(), tools=["execute_code", "rm_rf"])
