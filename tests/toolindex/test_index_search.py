import json
from pathlib import Path
from typing import Any

import pytest

from toolindex import BackendRef, InMemoryIndex, SearchParams, Tool
from toolindex._search import SearchEngine
from toolindex._tokenize import split_words, tokenize

DATA = json.loads((Path(__file__).parent / "data" / "mini_catalog.json").read_text())


def build(catalog: dict[str, Any] = DATA, **kw: Any) -> InMemoryIndex:
    index = InMemoryIndex(**kw)
    for ns, text in catalog.get("namespaces", {}).items():
        index.describe_namespace(ns, text)
    index.register_many(
        [(Tool.from_mcp(t, namespace=t["namespace"]), BackendRef.mcp(t["namespace"])) for t in catalog["tools"]]
    )
    return index


def of_tools(tools: list[tuple[str, str, str]]) -> InMemoryIndex:
    """An index of ``(namespace, name, description)`` tools."""
    index = InMemoryIndex()
    index.register_many(
        [(Tool.validated(name=n, namespace=ns, description=d), BackendRef.local("f")) for ns, n, d in tools]
    )
    return index


def rank_of(index: InMemoryIndex, query: str, gold: str) -> int | None:
    ids = [h.id for h in index.search(query, limit=10)]
    return ids.index(gold) + 1 if gold in ids else None


# -- tokeniser -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("list_issues", ["list", "issues"]),
        ("getApiOverview", ["get", "api", "overview"]),
        ("HTTPServer", ["http", "server"]),
        ("parseHTMLResponse", ["parse", "html", "response"]),
        ("kebab-case-name", ["kebab", "case", "name"]),
        ("dotted.tool.name", ["dotted", "tool", "name"]),
        ("Café Résumé", ["cafe", "resume"]),
        ("mp3", ["mp", "3", "mp3"]),
        ("upload to s3 bucket", ["upload", "to", "s", "3", "bucket", "s3"]),
        ("", []),
    ],
)
def test_split_words(text: str, words: list[str]) -> None:
    assert split_words(text) == words


def test_tokenize_stems_and_drops_stopwords() -> None:
    assert tokenize("Can you please list the open issues?") == ["list", "open", "issu"]
    assert tokenize("searching searches searched") == ["search", "search", "search"]


def test_data_blobs_are_not_words() -> None:
    blob = "iVBORw0KGgoAAAANSUhEUgAAAgAAAAIACAYAAAD0eNT6AAAABHNCSVQICAgIfAhkiAAAAAlwSFlz"
    assert split_words(f"describe this image {blob}") == ["describe", "this", "image"]


def test_cjk_text_is_indexed_as_bigrams() -> None:
    assert split_words("搜索关键词") == ["搜索", "索关", "关键", "键词"]


def test_words_of_a_repeated_run_are_the_same_the_second_time() -> None:
    # Runs of identifier characters are split once and remembered; the answer must not change.
    text = "list_issues s3 HTTPServer; list_issues again, s3 again"
    first = split_words(text)
    assert first == split_words(text)
    assert first == [
        *["list", "issues", "s", "3", "http", "server", "list", "issues", "again", "s", "3", "again"],
        *["s3", "s3"],  # short letter-digit words, kept whole, follow the rest
    ]
    assert tokenize(text) == tokenize(text)


def test_the_memory_of_runs_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolindex import _tokenize

    monkeypatch.setattr(_tokenize, "_RUNS", {})
    monkeypatch.setattr(_tokenize, "_MAX_RUNS", 10)
    for i in range(100):
        split_words(f"word{i}x other{i}y")
        assert len(_tokenize._RUNS) <= 10  # pyright: ignore[reportPrivateUsage]
    long_run = "a" * 65
    split_words(long_run)
    assert long_run not in _tokenize._RUNS  # pyright: ignore[reportPrivateUsage]


# -- ranking ---------------------------------------------------------------------------------


def test_mini_catalog_quality() -> None:
    """A regression guard: every query finds its tool, nearly always first."""
    index = build()
    ranks = [rank_of(index, q, gold) for q, gold in DATA["queries"]]
    assert all(r is not None and r <= 3 for r in ranks), list(zip(DATA["queries"], ranks, strict=True))
    mrr = sum(1 / r for r in ranks if r) / len(ranks)
    assert mrr >= 0.85


def test_identifier_queries_find_the_tool() -> None:
    index = build()
    assert index.search("getFileContents")[0].id == "github:getFileContents"
    assert index.search("get_file_contents")[0].id == "github:getFileContents"
    assert index.search("merge-pull-request")[0].id == "github:merge_pull_request"


def test_hits_carry_summary_and_descending_scores() -> None:
    hits = build().search("file", limit=5)
    assert 1 < len(hits) <= 5
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    first = hits[0]
    assert first.summary and first.namespace == first.id.split(":")[0] and first.id.endswith(first.name)


def test_two_words_one_word_apart_count_as_a_looser_phrase() -> None:
    # "list all my wallet groups": list_groups is named by "list ... groups" (one word between, once
    # "all" and "my" are dropped), while add_wallets_to_group holds the adjacent "wallet group". Read
    # as adjacent pairs only, the query matched the other tool's phrase and not the one it asks for.
    tools = [
        ("wallet", "add_wallets_to_group", "Add wallets to a group."),
        ("wallet", "list_groups", "List all wallet groups."),
        ("wallet", "get_group", "Details of one wallet group."),
        ("notes", "create_note", "Create a note with a title and a body."),
        ("notes", "get_note", "Read a note."),
        ("notes", "list_notes", "List notes of a folder."),
        ("notes", "create_new_tag", "Create a new tag for notes."),
        ("drive", "create_folder", "Create a folder."),
        ("drive", "list_folders", "List the folders of a directory."),
        ("drive", "new_file_from_template", "New file from a template in a folder."),
    ]
    index = of_tools(tools)
    assert [h.id for h in index.search("list all my wallet groups", limit=2)] == [
        "wallet:list_groups",
        "wallet:add_wallets_to_group",
    ]


def test_typo_tolerance() -> None:
    index = build()
    assert index.search("wether forcast")[0].id == "weather:get_forecast"
    assert index.search("translte text")[0].id == "translate:translate_text"
    assert index.search("curency conversoin")[0].id == "finance:convert_currency"


def test_abbreviation_expands_by_prefix() -> None:
    index = build()
    assert index.search("dir listing")[0].id == "fs:list_directory"


def test_a_quoted_value_is_not_corrected_as_a_typo() -> None:
    # "Marc" is one letter from "mark": read as a typo, the name the message goes to pulled the tool
    # that marks messages read up to second place. Quoted, it is a value, not a word to correct.
    tools = [
        ("chat", "send_message", "Send a message to a contact."),
        ("chat", "mark_message_read", "Mark a message as read so it no longer shows as new in the inbox."),
        ("chat", "delete_message", "Delete a message."),
        ("chat", "pin_message", "Pin a message to the top of a chat."),
        ("chat", "list_contacts", "List contacts."),
    ]
    index = of_tools(tools)
    plain = [h.id for h in index.search("send a message")]
    assert plain[0] == "chat:send_message" and plain[1] != "chat:mark_message_read"
    # Unquoted, an unknown word is still read as a typo of the closest word the catalog has.
    assert [h.id for h in index.search("send a message to Marc")][1] == "chat:mark_message_read"
    for quoted in ('"Marc"', "'Marc'", "`Marc`"):
        assert [h.id for h in index.search(f"send a message to {quoted}")] == plain, quoted


def test_namespace_description_is_searched() -> None:
    index = build()
    assert index.search("openstreetmap routing")[0].namespace == "maps"
    index.describe_namespace("maps", None)
    assert all(h.namespace != "maps" for h in index.search("openstreetmap"))


def test_filters_by_namespace_and_tags() -> None:
    index = build()
    index.register(
        Tool.validated(name="tagged_file", namespace="extra", description="Read a file.", tags=["Read Only", "fs"]),
        BackendRef.local("x"),
    )
    hits = index.search("file", namespaces=["fs"], limit=10)
    assert hits and {h.namespace for h in hits} == {"fs"}
    assert {h.namespace for h in index.search("file", namespaces=["fs", "extra"])} == {"fs", "extra"}
    assert [h.id for h in index.search("file", tags=["read only"])] == ["extra:tagged_file"]
    assert index.search("file", tags=["read-only", "missing"]) == []
    assert index.search("file", namespaces=["nope"]) == []
    assert index.search("file", namespaces=[]) == []


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "the of and", "!!! ???"])
def test_empty_or_meaningless_query_returns_nothing(query: str) -> None:
    assert build().search(query) == []


def test_unknown_words_return_nothing() -> None:
    assert build().search("zzzqqq xxyyzz") == []


def test_limit_is_respected_and_validated() -> None:
    index = build()
    assert len(index.search("get", limit=2)) == 2
    with pytest.raises(ValueError, match="limit"):
        index.search("get", limit=0)


def test_ties_break_by_id_deterministically() -> None:
    index = InMemoryIndex()
    for ns in ("b", "a", "c"):
        index.register(Tool.validated(name="same", namespace=ns, description="identical"), BackendRef.local("f"))
    assert [h.id for h in index.search("identical")] == ["a:same", "b:same", "c:same"]


def test_search_is_incremental() -> None:
    index = build()
    assert index.search("kubernetes pods") == []
    index.register(
        Tool.validated(name="list_pods", namespace="k8s", description="List Kubernetes pods in a namespace."),
        BackendRef.local("k"),
    )
    assert index.search("kubernetes pods")[0].id == "k8s:list_pods"
    index.unregister("k8s:list_pods")
    assert index.search("kubernetes pods") == []
    # Updating a tool replaces what search knows about it.
    index.register(
        Tool.validated(name="read_file", namespace="fs", description="Decode barcodes."), BackendRef.local("r")
    )
    assert index.search("barcodes")[0].id == "fs:read_file"
    assert index.search("complete") == []  # a word only the old description had


def test_many_removals_compact_without_changing_results() -> None:
    engine = SearchEngine()
    tools = [Tool.validated(name=f"tool_{i}", namespace="n", description=f"alpha beta item{i}") for i in range(3000)]
    for t in tools:
        engine.add(t.id, t)
    before = engine.search("alpha item2999", 5)
    for t in tools[:2500]:  # enough dead slots to trigger compaction
        engine.remove(t.id)
    assert len(engine) == 500
    after = engine.search("alpha item2999", 5)
    assert after[0].tid == before[0].tid == "n:tool_2999"
    assert len(engine.search("alpha", 1000)) == 500
    assert all(int(r.tid.rsplit("_", 1)[1]) >= 2500 for r in engine.search("alpha item17", 1000))
    assert engine.stats()["slots"] < 3000  # compacted once dead slots outnumbered live ones


def test_search_params_change_ranking() -> None:
    catalog = {
        "tools": [
            {"namespace": "a", "name": "alpha", "description": "Does unrelated work."},
            {"namespace": "b", "name": "other", "description": "Alpha alpha alpha helper for alpha jobs."},
        ]
    }
    # "alphas", not "alpha": a query that is a tool's exact name ranks that tool first whatever the weights.
    assert build(catalog).search("alphas")[0].id == "a:alpha"  # the name field weighs most by default
    weights = (0.1, 2.0, 3.0, 0.6, 0.45, 1.0, 0.8, 0.25, 0.0)
    assert build(catalog, search_params=SearchParams(weights=weights)).search("alphas")[0].id == "b:other"
    with pytest.raises(ValueError, match="weights"):
        SearchEngine(SearchParams(weights=(1.0,)))
