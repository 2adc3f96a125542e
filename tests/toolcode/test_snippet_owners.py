"""Who owns a saved snippet is settled by the store, not by a replica's copy of it.

Each replica keeps a copy of the snippets, brought up to date every few seconds. A save or a
delete that trusted its own copy let another caller, on another replica, take over or delete a
snippet saved there in the meantime.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from toolcode._snippets import SnippetLibrary
from toolcode.exceptions import InvalidArgumentsError, LimitExceededError
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


@pytest.mark.parametrize("together", [False, True])
async def test_a_callers_snippet_quota_holds_across_replicas(tmp_path: Path, together: bool) -> None:
    # Each replica counted the caller's snippets in its own copy, brought up to date every two
    # seconds: saves on another replica meanwhile went past the quota.
    store = SQLiteStateStore(tmp_path / "state.sqlite3")
    replicas = [SnippetLibrary(store, InMemoryIndex()) for _ in range(3)]

    async def save(replica: SnippetLibrary, name: str) -> bool:
        try:
            await replica.save(name, "__out = 1", "a report", None, _no_problems, owner="alice", quota=2)
        except LimitExceededError as e:
            assert e.code == "quota_exceeded"
            return False
        return True

    try:
        names = [f"r{i}" for i in range(6)]
        if together:  # at once, each replica's saves interleaved with the others'
            saved: list[bool] = []
            async with anyio.create_task_group() as tg:
                for i, name in enumerate(names):

                    async def one(r: SnippetLibrary = replicas[i % 3], n: str = name) -> None:
                        saved.append(await save(r, n))

                    tg.start_soon(one)
        else:  # one after another, none of the replicas synced in between
            saved = [await save(replicas[i % 3], name) for i, name in enumerate(names)]
        kept = [i.key for i in await store.list("snippet")]
        assert len(kept) <= 2, kept
        assert saved.count(True) == len(kept), (saved, kept)
        if not together:
            assert saved == [True, True, False, False, False, False]
        # Saves at once may all step back where one would have fitted: alice fills her quota first.
        for extra in range(2 - len(kept)):
            assert await save(replicas[0], f"more{extra}")
        # Another caller's quota is its own.
        assert await save(replicas[0], "bobs") is False  # still alice
        await replicas[1].save("bobs", "__out = 1", "bob's", None, _no_problems, owner="bob", quota=2)
    finally:
        await store.aclose()
