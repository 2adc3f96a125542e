"""Partitions: a partitioned tool changes nothing of a search that does not name its partition.

A tool registered in a partition (say, the owner of a private tool) is found only by searches
naming that partition, and counts in none of the statistics search ranks with: document
frequencies, the number of tools, average field lengths, the typo and abbreviation vocabulary,
the dense side's mean cosine. So another search's ids, order, scores and relevance are those of
an index that never held it: nothing of its words shows in them.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from toolindex import (
    AmbiguousToolIDError,
    BackendRef,
    InMemoryIndex,
    SearchHit,
    SearchParams,
    Tool,
    ToolNotFoundError,
)

DATA = json.loads((Path(__file__).parent / "data" / "mini_catalog.json").read_text())
PUBLIC = [Tool.from_mcp(t, namespace=t["namespace"]) for t in DATA["tools"]]
_SHEET = {"type": "object", "properties": {"sheet": {"type": "string", "description": "The zeusmerger term sheet."}}}
PRIVATE = [
    # A rare word, one a typo or a prefix could reach, words every catalog has, a long text
    # (field lengths), a tag, a name a public tool has in another namespace.
    Tool(name="zeusmerger_notes", namespace="snippets", description="zeusmerger: prepare the zeusmerger term sheet"),
    Tool(
        name="weather_files",
        namespace="snippets",
        description="Read the weather forecast file, write a file, list files. " * 20,
        tags=("weather",),
        input_schema=_SHEET,
    ),
    Tool(name="get_forecast", namespace="private", description="Forecst of the zeusmerger deal's closing."),
]
QUERIES = [
    *(q for q, _ in DATA["queries"]),
    "zeusmerger",
    "zeusmergr",  # one typo from the private word
    "zeusm",  # a prefix of it
    "zeusmerger_notes",  # a private tool's exact name
    "private:get_forecast",
    "forecst",
    "weather forecast file",
    "term sheet",
    "read a file",
    "wether forcast",
]


def _index(*, semantic: bool = False, private: bool, dense_exact_max: int = 4096) -> InMemoryIndex:
    index = InMemoryIndex(semantic=semantic, search_params=SearchParams(dense_exact_max=dense_exact_max))
    for ns, text in DATA["namespaces"].items():
        index.describe_namespace(ns, text)
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in PUBLIC[: len(PUBLIC) // 2]])
    if private:  # in the middle of the public tools, and in two partitions
        index.register_many([(t, BackendRef.local("f")) for t in PRIVATE[:2]], partition="alice")
        index.register(PRIVATE[2], BackendRef.local("f"), partition="carol")
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in PUBLIC[len(PUBLIC) // 2 :]])
    return index


def _results(index: InMemoryIndex, **kw: Any) -> list[list[SearchHit]]:
    return [index.search(q, limit=20, **kw) for q in QUERIES]


def test_a_partitioned_tool_changes_nothing_of_a_search_that_does_not_name_its_partition() -> None:
    without = _results(_index(private=False))
    index = _index(private=True)
    assert _results(index) == without
    assert _results(index, partitions=("bob",)) == without  # another partition's search: the same
    assert _results(index, namespaces=["weather", "snippets"]) == _results(
        _index(private=False), namespaces=["weather", "snippets"]
    )
    # Nothing of it is found, not even by its exact name.
    assert not any(h.id.startswith(("snippets:", "private:")) for hits in _results(index) for h in hits)


def test_typo_correction_never_corrects_to_a_word_only_a_partition_has() -> None:
    index = _index(private=True)
    engine = index._engine  # pyright: ignore[reportPrivateUsage]
    assert engine.query_terms("zeusmergr") == {} and engine.query_terms("zeusm") == {}
    assert index.search("zeusmergr") == [] and index.search("zeusm") == []
    # Nor for the partition itself: a correction is made from the public vocabulary, the same for all.
    assert engine.query_terms("zeusmergr", frozenset({"alice"})) == {}
    assert index.search("zeusmergr", partitions=["alice"]) == []


def test_a_search_naming_a_partition_finds_its_tools_among_the_public_ones() -> None:
    index = _index(private=True)
    found = [h.id for h in index.search("zeusmerger", partitions=["alice"])]
    assert found == ["snippets:zeusmerger_notes", "snippets:weather_files"]  # the name, then a parameter's text
    assert index.search("zeusmerger", partitions=["carol"])[0].id == "private:get_forecast"
    assert index.search("zeusmerger_notes", partitions=["alice"])[0].id == "snippets:zeusmerger_notes"
    assert index.search("prepare the term sheet", partitions=["alice"])[0].id == "snippets:zeusmerger_notes"
    # Scored with the public statistics, among the public tools: a public tool named by the
    # query keeps its place above a partitioned one that only repeats its words.
    hits = index.search("weather forecast", partitions=["alice"], limit=5)
    assert hits[0].id == "weather:get_forecast" and "snippets:weather_files" in [h.id for h in hits]
    # Filters hold for partitioned tools too.
    assert index.search("zeusmerger", partitions=["alice"], namespaces=["weather"]) == []
    assert [h.id for h in index.search("forecast", partitions=["alice"], tags=["weather"])] == [
        "snippets:weather_files"
    ]


def test_moving_a_tool_out_of_or_into_a_partition_and_removing_it() -> None:
    index = _index(private=True)
    without = _results(_index(private=False))
    tool = PRIVATE[0]
    index.register(tool, BackendRef.local("f"))  # published: now public, counted, found by all
    assert index.search("zeusmerger")[0].id == "snippets:zeusmerger_notes"
    assert index.search("zeusmergr")[0].id == "snippets:zeusmerger_notes"  # and a typo target
    index.register(tool, BackendRef.local("f"), partition="alice")  # private again
    assert _results(index) == without
    index.describe_namespace("snippets", "Saved programs: zeusmerger weather files.")
    assert index.search("zeusmerger", partitions=["alice"])[0].id == "snippets:zeusmerger_notes"
    index.describe_namespace("snippets", None)
    assert _results(index) == without  # a namespace re-indexed keeps each tool in its partition
    for t in PRIVATE:
        index.unregister(t.id)
    assert _results(index) == without
    assert index._engine.stats()["partitioned"] == 0  # pyright: ignore[reportPrivateUsage]


def test_many_partitioned_tools_removed_compact_without_changing_results() -> None:
    index = _index(private=True)
    without = _results(_index(private=False))
    fillers = [Tool(name=f"f{i}", namespace="fill", description=f"zeusmerger filler {i}") for i in range(1100)]
    index.register_many([(t, BackendRef.local("f")) for t in fillers], partition="dave")
    assert _results(index) == without
    for t in fillers:
        index.unregister(t.id)
    assert index._engine.stats()["slots"] < len(fillers)  # compacted  # pyright: ignore[reportPrivateUsage]
    assert _results(index) == without
    assert index.search("zeusmerger", partitions=["alice"])[0].id == "snippets:zeusmerger_notes"


@pytest.mark.parametrize("dense_exact_max", [4096, 0], ids=["exact", "two-pass"])
def test_with_the_semantic_signal_scores_and_relevance_are_unchanged_too(dense_exact_max: int) -> None:
    without = _results(_index(semantic=True, private=False, dense_exact_max=dense_exact_max))
    index = _index(semantic=True, private=True, dense_exact_max=dense_exact_max)
    assert _results(index) == without
    assert all(h.relevance is not None for hits in without for h in hits)
    mine = index.search("prepare the term sheet of the merger", partitions=["alice"])
    assert mine[0].id == "snippets:zeusmerger_notes"


def test_partition_arguments_are_checked() -> None:
    index = InMemoryIndex()
    with pytest.raises(ValueError, match="partition"):
        index.register(PRIVATE[0], BackendRef.local("f"), partition="")
    assert len(index) == 0
    with pytest.raises(ValueError, match="partitions"):
        index.search("zeusmerger", partitions="alice")
    for lookup in (index.get, index.resolve, index.suggest):
        with pytest.raises(ValueError, match="partitions"):
            lookup("zeusmerger", partitions="alice")
    with pytest.raises(ValueError, match="partitions"):
        index.list_tools(partitions="alice")
    with pytest.raises(ValueError, match="partitions"):
        index.namespaces(partitions="alice")


def _ledger() -> InMemoryIndex:
    """Public bank tools; alice's tools, one named closer to a guess than any public one; bob's own."""
    index = InMemoryIndex()
    public = ["wire_transfer", "wire_transfers", "wire_transfer_ach", "notes"]
    index.register_many([(Tool(name=n, namespace="bank", description="Bank."), BackendRef.mcp("bank")) for n in public])
    index.register(Tool(name="rates", namespace="bank", description="Rates.", version="1"), BackendRef.mcp("bank"))
    alices = [
        Tool(name="wire_transfer_acme", namespace="snippets", description="Alice's."),
        Tool(name="notes", namespace="snippets", description="Alice's notes."),
        Tool(name="rates", namespace="bank", description="Alice's rates.", version="2"),
    ]
    index.register_many([(t, BackendRef.local("f")) for t in alices], partition="alice")
    index.register(
        Tool(name="ledger", namespace="snippets", description="Bob's."), BackendRef.local("f"), partition="bob"
    )
    return index


def test_lookups_given_partitions_read_only_the_public_tools_and_theirs() -> None:
    index = _ledger()
    bob = ["bob"]
    # Suggestions: the three closest bob may see, though alice's tool is closer than all of them.
    assert "snippets:wire_transfer_acme" in index.suggest("wire_transfer_acme")  # no partitions: every tool
    near = index.suggest("wire_transfer_acme", partitions=bob)
    assert len(near) == 3 and all(i.startswith("bank:wire_transfer") for i in near), near
    assert index.suggest("wire_transfer_acme", partitions=bob, namespaces=["snippets"]) == []
    assert index.suggest("ledgr", partitions=bob) == ["snippets:ledger"]
    assert index.suggest("ledgr", partitions=[]) == []
    # Ids: another partition's tool is not there; a bare name resolves among the tools bob sees.
    with pytest.raises(ToolNotFoundError) as e:
        index.get("snippets:wire_transfer_acme", partitions=bob)
    assert len(e.value.suggestions) == 3 and "snippets:wire_transfer_acme" not in e.value.suggestions
    with pytest.raises(ToolNotFoundError):
        index.get("wire_transfer_acme", partitions=bob)
    assert index.get("snippets:wire_transfer_acme", partitions=["alice"]).description == "Alice's."
    assert index.get("notes", partitions=bob).id == "bank:notes"
    with pytest.raises(AmbiguousToolIDError) as amb:
        index.get("notes", partitions=["alice"])
    assert amb.value.candidates == ["bank:notes", "snippets:notes"]
    with pytest.raises(AmbiguousToolIDError):
        index.get("notes")  # no partitions: every tool, as before
    # Versions: the latest one bob sees; alice's newer version is not his.
    assert index.resolve("bank:rates", partitions=bob) == "bank:rates:1"
    assert index.resolve("bank:rates", partitions=["alice"]) == index.resolve("bank:rates") == "bank:rates:2"
    with pytest.raises(ToolNotFoundError) as e:
        index.get("bank:rates:2", partitions=bob)
    assert e.value.suggestions == ["bank:rates:1"]


def test_listings_given_partitions_page_and_count_only_the_public_tools_and_theirs() -> None:
    index = _ledger()
    ids: list[str] = []
    cursors: list[str] = []
    cursor: str | None = None
    while True:
        page = index.list_tools(cursor=cursor, limit=1, partitions=["bob"])
        assert len(page.tools) == 1  # every page full
        ids.append(page.tools[0].id)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        cursors.append(base64.urlsafe_b64decode(cursor).decode())
    assert ids == [
        "bank:notes",
        "bank:rates:1",
        "bank:wire_transfer",
        "bank:wire_transfer_ach",
        "bank:wire_transfers",
        "snippets:ledger",
    ]
    assert not any("acme" in c or "rates:2" in c or "snippets:notes" in c for c in cursors), cursors
    assert [t.id for t in index.list_tools(namespace="snippets", partitions=[]).tools] == []
    assert len(index.list_tools().tools) == len(index) == 9  # no partitions: every tool, as before
    counts = {n.name: n.tool_count for n in index.namespaces(partitions=["bob"])}
    assert counts == {"bank": 5, "snippets": 1}
    assert {n.name: n.tool_count for n in index.namespaces(partitions=[])} == {"bank": 5}
    assert {n.name: n.tool_count for n in index.namespaces()} == {"bank": 6, "snippets": 3}
    assert {n.name: n.tool_count for n in index.namespaces(partitions=["alice", "bob"])} == {"bank": 6, "snippets": 3}
    # Moving a tool out of a partition, and removing one, keep the counts.
    index.register(Tool(name="ledger", namespace="snippets", description="Bob's."), BackendRef.local("f"))
    assert {n.name: n.tool_count for n in index.namespaces(partitions=[])} == {"bank": 5, "snippets": 1}
    index.unregister("snippets:wire_transfer_acme")
    assert {n.name: n.tool_count for n in index.namespaces(partitions=["alice"])} == {"bank": 6, "snippets": 2}
