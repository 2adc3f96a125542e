"""Large real OpenAPI documents become usable tools.

GitHub Enterprise Cloud's REST description (1,471 operations) and Microsoft Graph's v1.0
description (11,422 operations); see tests/data/openapi/README.md. How fast they register is
measured by ``bench/openapi_register.py``, not asserted here.
"""

from __future__ import annotations

import ast
import gzip
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import structlog

from tooldocs import render_module
from toolindex import InMemoryIndex, Tool
from toolrun import OpenAPIProvider, ProviderBackend, compile_schema

pytestmark = pytest.mark.anyio

DATA = Path(__file__).parents[1] / "data" / "openapi"
GHEC = DATA / "ghec.json.gz"
MSGRAPH = DATA / "msgraph-v1.0.json.gz"


def unpack(document: Path, into: Path) -> Path:
    path = into / document.name.removesuffix(".gz")
    path.write_bytes(gzip.decompress(document.read_bytes()))
    return path


async def attach(
    tmp_path: Path, name: str, document: Path
) -> tuple[list[Tool], OpenAPIProvider, ProviderBackend, InMemoryIndex, list[dict[str, Any]]]:
    provider = OpenAPIProvider(name, unpack(document, tmp_path))
    backend = ProviderBackend(name, provider)
    index = InMemoryIndex()
    with structlog.testing.capture_logs() as logs:
        tools = await backend.attach(index)
    return tools, provider, backend, index, logs


def check_signatures_and_schemas(tools: Sequence[Tool], label: str) -> None:
    """Every signature is valid Python that keeps every parameter; every schema compiles."""
    module = render_module(tools)
    tree = ast.parse(module.text)
    compile(module.text, f"<{label} stubs>", "exec")
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert len(functions) == len(tools)
    for tool, sig in zip(tools, module.signatures, strict=True):
        props = set(tool.input_schema.get("properties") or {})
        assert {p.wire_name for p in sig.params} == props, tool.id
        assert {a.arg for a in functions[sig.name].args.kwonlyargs} == {p.name for p in sig.params}, tool.id
        assert set(sig.required) == set(tool.input_schema.get("required") or []), tool.id
        # The runner can compile (and so validate against) every schema the provider kept.
        compile_schema(tool.input_schema)
        if tool.output_schema is not None:
            compile_schema(tool.output_schema)


async def test_every_operation_of_a_large_document_becomes_a_tool_with_a_valid_signature(tmp_path: Path) -> None:
    tools, provider, backend, index, _ = await attach(tmp_path, "github", GHEC)
    assert len(tools) == 1471 and not provider.skipped and not backend.skipped
    assert len({t.name for t in tools}) == 1471
    # One output schema is over the runner's bound on expanded size: that tool is kept without it.
    assert list(provider.trimmed) == ["issues_list-events-for-timeline"]

    check_signatures_and_schemas(tools, "github")

    hit = index.search("create an issue in a repository", limit=5)
    assert "github:issues_create" in [h.id for h in hit]


@pytest.mark.slow
async def test_thousands_of_operations_become_tools_or_are_skipped_for_the_runners_bound(tmp_path: Path) -> None:
    tools, provider, backend, index, logs = await attach(tmp_path, "graph", MSGRAPH)
    # Every operation is a tool, or skipped because its input schema is over the runner's bound
    # on expanded size (a body that is an entity with all its navigation properties, such as
    # PATCH /deviceManagement: millions of values): the runner would refuse every call to it.
    assert len(tools) == 11_271 and len(provider.skipped) == 151 and not backend.skipped
    assert len(tools) + len(provider.skipped) == 11_422
    over = re.compile(r"its input schema has at least [\d,]+ values with references expanded \(bound: 50,000\)")
    assert all(over.fullmatch(reason) for reason in provider.skipped.values()), provider.skipped
    assert len({t.name for t in tools}) == len(tools)
    # Output schemas over the same bound are left out; those tools are kept.
    trimmed = provider.trimmed
    assert len(trimmed) == 448 and all("values with references expanded" in note for note in trimmed.values())
    by_name = {t.name: t for t in tools}
    assert all(by_name[name].output_schema is None for name in trimmed)
    # One warning says how many, instead of one per tool.
    summary = [e for e in logs if e["log_level"] == "warning" and e["event"] != "openapi.operation_skipped"]
    assert [(e["event"], e["tools"], len(e["first"])) for e in summary] == [
        ("openapi.tools_without_output_schema", 448, 5)
    ]

    check_signatures_and_schemas(tools, "graph")

    hit = index.search("send mail", limit=5)
    assert "graph:me.sendMail" in [h.id for h in hit]
