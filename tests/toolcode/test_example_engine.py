"""The engine contract in docs/engines.md is complete: an engine written to it passes the conformance suite.

``examples/subprocess_engine.py`` is such an engine, written as a third party would: it imports
only toolcode's public names, and passes every check except the escape probes, which it
declares unsupported (it is not a sandbox).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from toolcode import Tools
from toolcode.testing import CHECKS, EngineConformance, run_conformance

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "subprocess_engine.py"
ENGINES_DOC = ROOT / "docs" / "engines.md"


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("subprocess_engine_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TestSubprocessEngine(EngineConformance):
    @pytest.fixture
    async def engine(self) -> AsyncIterator[Any]:
        engine = _example().SubprocessEngine()
        yield engine
        await engine.aclose()


@pytest.mark.anyio
async def test_only_the_escape_probes_are_left_out_and_they_are_declared() -> None:
    engine = _example().SubprocessEngine()
    report = await run_conformance(engine, categories=["engine", "escape"])
    unsupported = {o.check.category for o in report.outcomes if o.status == "unsupported"}
    assert unsupported == {"escape"} and set(engine.info.unsupported) == {"escape"}
    assert report.ok, report.summary()
    assert sum(c.category != "escape" for c in CHECKS) >= 45  # what the class above runs, all passing


def test_the_example_uses_only_public_names() -> None:
    tree = ast.parse(EXAMPLE.read_text())
    imported = [
        (node.module or "", alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]
    ours = [(m, n) for m, n in imported if m.split(".")[0] == "toolcode"]
    assert ours, "the example imports toolcode"
    for module, name in ours:
        assert not any(part.startswith("_") for part in module.split(".")), module
        assert not name.startswith("_"), name
        assert name in __import__(module, fromlist=["__all__"]).__all__, (module, name)


def test_the_contract_names_every_method_the_suite_uses_and_no_private_helper() -> None:
    text = ENGINES_DOC.read_text()
    contract = text[text.index("## Writing an engine") : text.index("### The conformance suite")]
    methods = [n for n, _ in inspect.getmembers(Tools, inspect.isfunction) if not n.startswith("_")]
    assert {"modules", "call_function", "write", "run_tool"} <= set(methods)
    for name in methods:
        assert f"`{name}" in contract or f".{name}(" in contract, f"docs/engines.md does not describe Tools.{name}"
    assert not re.search(r"toolcode\._", text), "docs/engines.md points at a private module"
    for public in ("call_names", "async_names", "TOOLS_PACKAGE", "ModuleFunction", "TOOL_ERROR_INFO_SOURCE"):
        assert f"toolcode.engines.{public}" in contract or f"`{public}" in contract, public
