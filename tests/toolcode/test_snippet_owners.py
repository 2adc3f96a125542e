"""Who owns a saved snippet is settled by the store, not by a replica's copy of it.

Each replica keeps a copy of the snippets, brought up to date every few seconds. A save or a
delete that trusted its own copy let another caller, on another replica, take over or delete a
snippet saved there in the meantime.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolcode._snippets import SnippetLibrary
from toolcode.exceptions import InvalidArgumentsError
from toolcode.state import SQLiteStateStore
from toolindex import InMemoryIndex

pytestmark = pytest.mark.anyio


async def _no_problems(code: str) -> list[Any]:
    return []


async def test_a_replica_that_has_not_seen_a_snippet_yet_still_honours_its_owner(tmp_path: Path) -> None:
    store = SQLiteStateStore(tmp_path / "state.sqlite3")
    a, b = SnippetLibrary(store, InMemoryIndex()), SnippetLibrary(store, InMemoryIndex())
    try:
        await a.save("report", "__out = 1", "alice's report", None, _no_problems, owner="alice")
        # Replica b has not synced: its copy does not know "report" yet.
        assert "report" not in b.snippets
        with pytest.raises(InvalidArgumentsError, match="another caller"):
            await b.save("report", "__out = 2", "bob's", None, _no_problems, owner="bob")
        with pytest.raises(InvalidArgumentsError, match="another caller"):
            await b.delete("report", owner="bob")
        await a.sync()
        assert a.snippets["report"].code == "__out = 1" and a.snippets["report"].owner == "alice"
        # Its owner may change it from either replica; an operator too.
        await b.save("report", "__out = 3", "alice's report", None, _no_problems, owner="alice")
        await a.sync()
        assert a.snippets["report"].code == "__out = 3"
        assert await a.delete("report", owner="carol", operator=True)
    finally:
        await store.aclose()
