"""A large real OpenAPI document (GitHub Enterprise Cloud, 1,471 operations) becomes usable tools.

How fast it registers is measured by ``bench/openapi_register.py``, not asserted here.
"""

from __future__ import annotations

import ast
import gzip
from pathlib import Path

import pytest
import structlog

from tooldocs import render_module
from toolindex import InMemoryIndex
from toolrun import OpenAPIProvider, ProviderBackend, compile_schema

pytestmark = pytest.mark.anyio

GHEC = Path(__file__).parents[1] / "data" / "openapi" / "ghec.json.gz"


async def test_every_operation_of_a_large_document_becomes_a_tool_with_a_valid_signature(tmp_path: Path) -> None:
    path = tmp_path / "ghec.json"
    path.write_bytes(gzip.decompress(GHEC.read_bytes()))
    provider = OpenAPIProvider("github", path)
    backend = ProviderBackend("github", provider)
    index = InMemoryIndex()
    with structlog.testing.capture_logs() as logs:
        tools = await backend.attach(index)
    assert len(tools) == 1471 and not provider.skipped and not backend.skipped
    assert len({t.name for t in tools}) == 1471
    # One output schema is over the runner's bound on expanded size: that tool is kept without it.
    trimmed = [e["tool"] for e in logs if e["event"] == "openapi.tool_trimmed"]
    assert trimmed == ["issues_list-events-for-timeline"]

    module = render_module(tools)
    tree = ast.parse(module.text)
    compile(module.text, "<github stubs>", "exec")
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert len(functions) == len(tools)
    for tool, sig in zip(tools, module.signatures, strict=True):
        props = set(tool.input_schema.get("properties") or {})
        assert {p.wire_name for p in sig.params} == props, tool.id
        assert {a.arg for a in functions[sig.name].args.kwonlyargs} == {p.name for p in sig.params}, tool.id
        assert set(sig.required) == set(tool.input_schema.get("required") or []), tool.id
        # The runner can compile (and so validate against) every schema the document gave.
        compile_schema(tool.input_schema)
        if tool.output_schema is not None:
            compile_schema(tool.output_schema)

    hit = index.search("create an issue in a repository", limit=5)
    assert "github:issues_create" in [h.id for h in hit]
