"""Helpers shared by the tooldocs tests (a uniquely named module: ``conftest`` is ambiguous across test folders)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from toolindex import BackendRef, InMemoryIndex, Tool

REPO = Path(__file__).resolve().parents[2]
EVAL_DIR = REPO / "tests" / "data" / "eval"
"""The evaluation catalogs that ship with the repository (gzip-compressed JSON; provenance in its README.md)."""
SNAPSHOT_DIR = Path(__file__).parent / "snapshots"
CATALOGS = {"github": "github_mcp_server_tools.json.gz", "mcp_bench": "mcp_bench_tools.json.gz"}


def load_eval_file(name: str) -> dict[str, Any]:
    """One file of ``tests/data/eval`` (``name`` ends in ``.json.gz``)."""
    path = EVAL_DIR / name
    if not path.exists():
        # Not a skip: the file ships with the repository, and a skip would hide a moved or renamed file.
        pytest.fail(f"{path} is absent: the golden and size tests read the catalogs in tests/data/eval")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def load_catalog_records(key: str) -> list[dict[str, Any]]:
    return load_eval_file(CATALOGS[key])["tools"]


def tool_from_record(record: dict[str, Any]) -> Tool:
    return Tool.from_mcp(record, namespace=record["namespace"], tags=record.get("tags") or [])


def index_of(tools: list[Tool]) -> InMemoryIndex:
    index = InMemoryIndex()
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in tools])
    return index
