"""Regenerate the committed catalog sample: `uv run python tests/tooldocs/snapshots/update.py`.

Picks a representative sample of the evaluation catalogs in tests/data/eval (tools with nested
objects, enums, unions, defaults, arrays, renamed parameters, plus evenly spaced others)
and stores each tool's definition with its rendered signature and docs. The test
`test_docs_catalogs.py::test_snapshot_sample` re-renders them and compares; review the
diff of `catalog_sample.json` when rendering changes on purpose.
"""

from __future__ import annotations

import gzip
import json
import keyword
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EVAL = HERE.parents[1] / "data" / "eval"
CATALOGS = {"github": "github_mcp_server_tools.json", "mcp_bench": "mcp_bench_tools.json"}
TOOL_KEYS = ("id", "namespace", "name", "title", "description", "tags", "input_schema")
FEATURES = ["properties", "enum", "anyOf", "oneOf", "default", "items", "additionalProperties", "prefixItems"]


def load(name: str) -> dict[str, Any]:
    with gzip.open(EVAL / f"{name}.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


def odd_name(name: str) -> bool:
    return not name.isidentifier() or keyword.iskeyword(name)


def features(schema: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k in FEATURES:
                found.add(k)
            found |= features(v)
    elif isinstance(schema, list):
        for v in schema:
            found |= features(v)
    return found


def pick(records: list[dict[str, Any]], n_spaced: int) -> list[dict[str, Any]]:
    chosen: dict[str, dict[str, Any]] = {}
    for feat in FEATURES:
        for r in records:
            if feat in features(r["input_schema"].get("properties", {})) and r["id"] not in chosen:
                chosen[r["id"]] = r
                break
    for r in records:
        if any(not k.isidentifier() for k in r["input_schema"].get("properties", {})) and r["id"] not in chosen:
            chosen[r["id"]] = r
            break
    step = max(len(records) // n_spaced, 1)
    for r in records[::step]:
        chosen.setdefault(r["id"], r)
    return sorted(chosen.values(), key=lambda r: r["id"])


def render_entry(catalog: str, record: dict[str, Any]) -> dict[str, Any]:
    sys.path.insert(0, str(HERE.parent))
    from _tooldocs_support import index_of, tool_from_record  # pyright: ignore[reportMissingImports]

    from tooldocs import InMemoryStore

    tool = tool_from_record(record)
    store = InMemoryStore(index_of([tool]))
    schema_doc = store.describe(tool.id, "schema")
    return {
        "catalog": catalog,
        "tool": {k: record[k] for k in TOOL_KEYS if k in record},
        "summary": store.describe(tool.id, "summary").render(),
        "signature": schema_doc.signature,
        "schema_doc": schema_doc.render(),
    }


def main() -> None:
    entries: list[dict[str, Any]] = []
    for key, file in CATALOGS.items():
        records = load(file)["tools"]
        entries.extend(render_entry(key, r) for r in pick(records, 10))
    # Neither catalog above has parameter names that are keywords or not identifiers; MSC does.
    msc = load("msc_bench_mcp.json")["tools"]
    odd = [r for r in msc if any(odd_name(k) for k in r["input_schema"].get("properties", {}))]
    entries.extend(render_entry("msc_bench", r) for r in odd[:: max(len(odd) // 4, 1)][:4])
    out = HERE / "catalog_sample.json"
    out.write_text(json.dumps(entries, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(entries)} tools to {out}")


if __name__ == "__main__":
    main()
