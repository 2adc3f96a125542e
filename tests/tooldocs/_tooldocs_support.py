"""Helpers shared by the tooldocs tests (a uniquely named module: ``conftest`` is ambiguous across test folders)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolindex import BackendRef, InMemoryIndex, Tool

REPO = Path(__file__).resolve().parents[2]
EVAL_DIR = REPO.parent / "shared" / "eval"
SNAPSHOT_DIR = Path(__file__).parent / "snapshots"
CATALOGS = {"github": "github_mcp_server_tools.json", "mcp_bench": "mcp_bench_tools.json"}


def load_catalog_records(key: str) -> list[dict[str, Any]]:
    path = EVAL_DIR / CATALOGS[key]
    if not path.exists():
        # Not a skip: CI has the catalogs beside the clone, and a skip would hide a moved or renamed file.
        pytest.fail(
            f"{path} is absent: the golden and size tests need the shared evaluation catalogs "
            "(../shared/eval next to the repository)"
        )
    return json.loads(path.read_text(encoding="utf-8"))["tools"]


def tool_from_record(record: dict[str, Any]) -> Tool:
    return Tool.from_mcp(record, namespace=record["namespace"], tags=record.get("tags") or [])


def index_of(tools: list[Tool]) -> InMemoryIndex:
    index = InMemoryIndex()
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in tools])
    return index
