"""Golden tests over real tool catalogs.

The whole catalogs ship in tests/data/eval (gzip-compressed, provenance in its README.md); a
representative sample with its expected output is committed in snapshots/.
"""

from __future__ import annotations

import ast
import json
import statistics
from typing import Any

import pytest
from _tooldocs_support import SNAPSHOT_DIR, index_of, load_catalog_records, tool_from_record

from tooldocs import STUB_IMPORTS, Budgets, InMemoryStore, render_module
from toolindex import Tool


def check_module(tools: list[Tool]) -> None:
    mod = render_module(tools)
    tree = ast.parse(mod.text)
    compile(mod.text, "<catalog stubs>", "exec")
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert len(fns) == len(tools)
    for tool, sig in zip(tools, mod.signatures, strict=True):
        props = set(tool.input_schema.get("properties") or {})
        assert {p.wire_name for p in sig.params} == props, tool.id
        fn = fns[sig.name]
        assert {a.arg for a in fn.args.kwonlyargs} == {p.name for p in sig.params}, tool.id
        required = set(tool.input_schema.get("required") or []) & props
        assert set(sig.required) == required, tool.id


def test_catalog_signatures_are_valid_python_and_keep_every_parameter(catalog_tools: list[Tool]) -> None:
    assert len(catalog_tools) in (117, 257)
    check_module(catalog_tools)


def test_catalog_docs_fit_their_budgets(catalog_tools: list[Tool]) -> None:
    store = InMemoryStore(index_of(catalog_tools))
    budgets = store.budgets
    for tool in catalog_tools:
        summary = store.describe(tool.id, "summary")
        assert len(summary.render()) <= 200, tool.id
        assert len(summary.summary) <= 200, tool.id
        schema = store.describe(tool.id, "schema")
        assert len(schema.render()) <= budgets.schema, tool.id
        assert schema.signature is not None
        ast.parse(f"{STUB_IMPORTS}\n{schema.signature}")
        full = store.describe(tool.id, "full")
        assert len(full.render()) <= budgets.full, tool.id
        json.dumps(full.to_dict())


def test_github_median_schema_doc_is_at_most_half_the_raw_definition() -> None:
    tools = [tool_from_record(r) for r in load_catalog_records("github")]
    store = InMemoryStore(index_of(tools))
    ratios = [
        len(store.describe(t.id, "schema").render()) / len(json.dumps(t.to_mcp(), separators=(",", ":"))) for t in tools
    ]
    assert statistics.median(ratios) <= 0.5


def test_describe_many_of_a_whole_catalog_stays_within_budget(catalog_tools: list[Tool]) -> None:
    store = InMemoryStore(index_of(catalog_tools), budgets=Budgets(many=3000))
    ids = [t.id for t in catalog_tools[:12]]
    full_size = sum(len(store.describe(i, "schema").render()) + 1 for i in ids)
    assert full_size > 3000  # otherwise this test would prove nothing
    docs = store.describe_many(ids, "schema")
    assert [d.id for d in docs] == ids
    assert sum(len(d.render()) + 1 for d in docs) <= 3000
    assert docs[0].level == "schema" and docs[-1].level == "summary"


# -- committed sample with its expected output ---------------------------------------------


def sample() -> list[dict[str, Any]]:
    return json.loads((SNAPSHOT_DIR / "catalog_sample.json").read_text(encoding="utf-8"))


def test_snapshot_sample_is_representative() -> None:
    entries = sample()
    assert {e["catalog"] for e in entries} >= {"github", "mcp_bench"}
    assert len(entries) >= 25
    text = "\n".join(e["signature"] for e in entries)
    for construct in ("Literal[", "TypedDict", "list[", " | None", " = ...", "wire name"):
        assert construct in text, construct


@pytest.mark.parametrize("entry", sample(), ids=lambda e: e["tool"]["id"])
def test_snapshot_sample(entry: dict[str, Any]) -> None:
    tool = tool_from_record(entry["tool"])
    store = InMemoryStore(index_of([tool]))
    doc = store.describe(tool.id, "schema")
    assert doc.signature == entry["signature"]
    assert doc.render() == entry["schema_doc"]
    assert store.describe(tool.id, "summary").render() == entry["summary"]
    check_module([tool])
