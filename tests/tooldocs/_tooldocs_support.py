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
        pytest.skip(
            f"{path} is absent (the shared evaluation catalogs live next to the repository); "
            "the committed snapshot sample in tests/tooldocs/snapshots still runs"
        )
    return json.loads(path.read_text(encoding="utf-8"))["tools"]


def tool_from_record(record: dict[str, Any]) -> Tool:
    return Tool.from_mcp(record, namespace=record["namespace"], tags=record.get("tags") or [])


def index_of(tools: list[Tool]) -> InMemoryIndex:
    index = InMemoryIndex()
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in tools])
    return index
