"""The semantic signal (``toolindex[semantic]``): dense vectors fused with lexical search.

These tests load the real model that ships in the wordllama wheel (the workspace installs the
extra); a small deterministic embedder stands in only where a test is about the seam itself.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from toolindex import (
    DEFAULT_WEAK_RELEVANCE,
    BackendRef,
    Embedder,
    InMemoryIndex,
    SearchParams,
    SemanticUnavailableError,
    StaticEmbedder,
    Tool,
    default_embedder,
)
from toolindex import _semantic as semantic_module
from toolindex._dense import DenseVectors
from toolindex._semantic import query_texts, tool_gist, tool_text

TOOLS = [
    Tool(name="get_forecast", namespace="weather", description="Forecast of rain, wind and temperature for a city."),
    Tool(name="search_papers", namespace="scholar", description="Find academic research articles and preprints."),
    Tool(name="send_email", namespace="mail", description="Send an email message to a recipient."),
    Tool(name="create_issue", namespace="github", description="Open a new issue in a GitHub repository."),
    Tool(name="list_issues", namespace="github", description="List issues of a GitHub repository."),
    Tool(name="play_track", namespace="music", description="Start playing a song on the speaker."),
    Tool(name="convert_currency", namespace="finance", description="Convert an amount between currencies."),
]


def build(tools: Sequence[Tool] = TOOLS, **kw: object) -> InMemoryIndex:
    index = InMemoryIndex(semantic=True, **kw)  # type: ignore[arg-type]
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in tools])
    return index


def ids(index: InMemoryIndex, query: str, **kw: object) -> list[str]:
    return [h.id for h in index.search(query, **kw)]  # type: ignore[arg-type]


def test_a_paraphrase_with_no_shared_word_finds_its_tool_where_lexical_search_finds_nothing() -> None:
    query = "will it be sunny tomorrow in Lisbon"
    lexical = InMemoryIndex()
    lexical.register_many([(t, BackendRef.mcp(t.namespace)) for t in TOOLS])
    assert lexical.search(query) == []
    assert ids(build(), query)[0] == "weather:get_forecast"


def test_hits_carry_a_relevance_and_scores_in_zero_to_one() -> None:
    hits = build().search("find scientific publications about proteins")
    assert hits[0].id == "scholar:search_papers"
    assert all(h.relevance is not None and 0.0 <= h.relevance <= 1.0 for h in hits)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert hits[0].relevance == max(h.relevance or 0.0 for h in hits)


def test_lexical_hits_carry_no_relevance() -> None:
    index = InMemoryIndex()
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in TOOLS])
    hits = index.search("list issues")
    assert hits and all(h.relevance is None for h in hits)
    assert not index.semantic


@pytest.mark.parametrize("semantic", [True, False])
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("create_issue", "github:create_issue"),
        ("github:list_issues", "github:list_issues"),
        ("please run `list_issues` for the repo that plays music", "github:list_issues"),
        ("send_email", "mail:send_email"),
    ],
)
def test_an_exact_tool_name_always_ranks_first(semantic: bool, query: str, expected: str) -> None:
    index = InMemoryIndex(semantic=semantic)
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in TOOLS])
    hits = index.search(query)
    assert hits[0].id == expected
    if semantic:
        assert hits[0].relevance == 1.0


def test_an_exact_name_outside_the_namespaces_asked_for_is_not_promoted() -> None:
    hits = build().search("create_issue", namespaces=["mail"])
    assert "github:create_issue" not in [h.id for h in hits]


def test_weak_matches_are_marked_and_never_left_out() -> None:
    index = build(weak_relevance=DEFAULT_WEAK_RELEVANCE)
    unserved = index.search("fold the laundry and water the plants in the garden")
    assert unserved, "a weak match is returned, marked, not left out"
    assert all(h.weak and (h.relevance or 0.0) < DEFAULT_WEAK_RELEVANCE for h in unserved)
    # A request a tool serves, worded its own way: its tool comes first, not weak.
    served = index.search("email my landlord about the broken heater")
    assert served[0].id == "mail:send_email" and not served[0].weak
    assert [h.weak for h in served] == [(h.relevance or 0.0) < DEFAULT_WEAK_RELEVANCE for h in served]
    # Without weak_relevance nothing is marked; the hits are the same.
    plain = build().search("fold the laundry and water the plants in the garden")
    assert [h.id for h in plain] == [h.id for h in unserved] and not any(h.weak for h in plain)


def test_weak_relevance_needs_the_semantic_signal_and_a_value_in_range() -> None:
    with pytest.raises(ValueError, match="semantic"):
        InMemoryIndex(weak_relevance=0.2)
    with pytest.raises(ValueError, match="between 0 and 1"):
        build(weak_relevance=1.5)


def test_lexical_hits_are_never_marked_weak() -> None:
    index = InMemoryIndex()
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in TOOLS])
    assert index.search("play a song") and not any(h.weak for h in index.search("play a song"))


def test_registration_is_incremental_and_unregistering_removes_the_vector() -> None:
    index = build()
    query = "translate a sentence into French"
    assert "lang:translate_text" not in ids(index, query)
    index.register(
        Tool(name="translate_text", namespace="lang", description="Translate text between languages."),
        BackendRef.mcp("lang"),
    )
    assert ids(index, query)[0] == "lang:translate_text"
    index.unregister("lang:translate_text")
    assert "lang:translate_text" not in ids(index, query)


def test_vectors_follow_their_tools_through_compaction() -> None:
    # Enough removals to compact the slots: every remaining tool must still be found by its meaning.
    fillers = [Tool(name=f"filler_{i}", namespace="junk", description=f"Placeholder number {i}.") for i in range(1500)]
    index = build([*fillers, *TOOLS])
    for t in fillers:
        index.unregister(t.id)
    assert index._engine.stats()["slots"] < len(fillers)  # compacted  # pyright: ignore[reportPrivateUsage]
    assert ids(index, "will it rain in Oslo")[0] == "weather:get_forecast"
    assert ids(index, "exchange dollars for yen")[0] == "finance:convert_currency"


def test_namespace_filter_applies_to_the_dense_side() -> None:
    hits = build().search("will it rain in Oslo", namespaces=["music", "mail"])
    assert hits and {h.namespace for h in hits} <= {"music", "mail"}


def test_a_multi_step_request_is_also_embedded_clause_by_clause() -> None:
    texts = query_texts("Find the weather in Paris, then send an email to Ana with it. Finally play a song.")
    assert texts[0].startswith("Find the weather")
    assert len(texts) >= 3
    assert query_texts("weather in Paris") == ["weather in Paris"]
    # A query's clauses are bounded, whatever its length.
    assert len(query_texts("do the thing now. " * 1000)) <= 1 + semantic_module.MAX_CLAUSES


def test_a_quoted_value_is_no_step_of_a_request() -> None:
    # Its words stay out of the clauses (its full stop ends none), and the whole query keeps them.
    query = "Email Ana the text 'Rain in Oslo. Stay home', then list my notes"
    assert query_texts(query) == [query, "Email Ana the text", "list my notes"]
    code = "Run the command `ls -la. rm -rf tmp`, then list my notes"
    assert query_texts(code) == [code, "Run the command", "list my notes"]
    # A query that is nothing but a quotation is read as the request it quotes.
    quoted = '"Find the weather in Paris, then send an email to Ana with it."'
    assert len(query_texts(quoted)) == 3


def test_the_words_of_a_quoted_value_do_not_pull_a_step_to_another_tool() -> None:
    # The forecast tool only matches the text of the email; the request's steps are the email and
    # the notes. With the value inside the first clause, that clause's vector leaned to the weather.
    tools = [*TOOLS, Tool(name="list_notes", namespace="notes", description="List all notes.")]
    index = build(tools)
    top = ids(index, "Email Ana the text 'the forecast says rain and wind in Oslo tomorrow', then list my notes")
    assert set(top[:2]) == {"notes:list_notes", "mail:send_email"}
    assert top.index("weather:get_forecast") > 1
    # A request that quotes what it looks for still finds it: the whole query keeps the quotation.
    assert ids(index, "find a tool to 'play a song on the speaker'")[0] == "music:play_track"


def test_a_huge_query_costs_bounded_work() -> None:
    index = build()
    query = "weather " * 500_000  # 4 MB
    start = time.process_time()  # CPU time: "did not stall", not speed, and a busy machine does not stretch it
    hits = index.search(query)
    assert time.process_time() - start < 2.0
    assert hits[0].id == "weather:get_forecast"


def test_a_hostile_tool_description_is_embedded_with_bounded_work() -> None:
    huge = Tool(name="huge", namespace="hostile", description="word " * 1_000_000)
    assert len(tool_text(huge)) <= semantic_module.MAX_TEXT_CHARS
    index = build([*TOOLS, huge])
    assert ids(index, "will it rain in Oslo")[0] == "weather:get_forecast"


def test_the_default_model_is_loaded_once_and_shared() -> None:
    assert default_embedder() is default_embedder()
    vectors = default_embedder().embed(["send an email", "", "send an email"])
    assert vectors.shape == (3, default_embedder().dim) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[0]), 1.0)
    assert not vectors[1].any()  # nothing to embed: a zero row
    assert np.array_equal(vectors[0], vectors[2])


def test_a_missing_model_is_a_clear_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic_module, "_MODEL_PACKAGE", "no_such_model_package_here")
    with pytest.raises(SemanticUnavailableError, match=r"toolindex\[semantic\]"):
        StaticEmbedder.from_package()


class HashEmbedder:
    """A deterministic bag-of-words embedder: the Embedder seam with a model of one's own."""

    dim = 64

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, sum(map(ord, word)) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


def test_any_embedder_can_replace_the_default() -> None:
    embedder = HashEmbedder()
    assert isinstance(embedder, Embedder)
    index = InMemoryIndex(semantic=embedder, search_params=SearchParams(dense_weight=1.0))
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in TOOLS])
    assert index.semantic
    assert index.search("song speaker")[0].id == "music:play_track"


def test_a_tool_s_gist_is_its_name_first_sentence_and_namespace() -> None:
    tool = Tool(
        name="create_issue",
        namespace="git_hub",
        description="Create an issue in a repository. Labels and assignees are optional.",
    )
    assert tool_gist(tool) == "create issue.  Create an issue in a repository. git hub"
    head = tool_gist(tool).removesuffix(" git hub")
    assert tool_text(tool).startswith(head) and "git hub" not in tool_text(tool)
    endless = Tool(name="x", namespace="n", description="word " * 200)
    assert len(tool_gist(endless)) == len("x. ") + 200 + len(" n")  # no sentence end: 200 characters after the name


def test_a_namespace_that_says_what_its_tools_are_about_lifts_them() -> None:
    # The tools' own words do not say "memory"; their namespace does (a server's name).
    tools = [
        Tool(name="create_entities", namespace="memory", description="Create entities of a graph."),
        Tool(name="create_file", namespace="files", description="Create a file."),
    ]
    index = InMemoryIndex(semantic=HashEmbedder(), search_params=SearchParams(dense_weight=1.0))
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in tools])
    assert index.search("create memory")[0].id == "memory:create_entities"


def _gist_index(gist_pool: int, extra: Sequence[Tool] = ()) -> InMemoryIndex:
    # A tool whose first sentence says what it does, then a long tail that dilutes its whole vector.
    tail = " ".join(f"word{i}" for i in range(120))
    tools = [
        *extra,
        Tool(name="alpha", namespace="a", description=f"Compute tax refunds. {tail}"),
        Tool(name="beta", namespace="b", description="Compute the tax owed by a company"),
    ]
    index = InMemoryIndex(semantic=HashEmbedder(), search_params=SearchParams(dense_weight=1.0, gist_pool=gist_pool))
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in tools])
    return index


def test_the_best_candidates_also_meet_each_tool_s_gist() -> None:
    assert ids(_gist_index(gist_pool=0), "compute tax refunds.")[0] == "b:beta"
    assert ids(_gist_index(gist_pool=50), "compute tax refunds.")[0] == "a:alpha"


def test_gists_follow_their_tools_through_removal_and_compaction() -> None:
    fillers = [Tool(name=f"filler_{i}", namespace="junk", description=f"Placeholder number {i}.") for i in range(1500)]
    index = _gist_index(gist_pool=50, extra=fillers)
    for t in fillers:
        index.unregister(t.id)
    assert index._engine.stats()["slots"] < len(fillers)  # compacted  # pyright: ignore[reportPrivateUsage]
    assert ids(index, "compute tax refunds.")[:2] == ["a:alpha", "b:beta"]
    index.unregister("a:alpha")
    assert "a:alpha" not in ids(index, "compute tax refunds.")


class WrongShapeEmbedder(HashEmbedder):
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.zeros((len(texts) + 1, self.dim), dtype=np.float32)


def test_an_embedder_returning_the_wrong_shape_registers_nothing() -> None:
    index = InMemoryIndex(semantic=WrongShapeEmbedder())
    with pytest.raises(ValueError, match="shape"):
        index.register_many([(t, BackendRef.mcp(t.namespace)) for t in TOOLS])
    assert len(index) == 0


def test_search_and_registration_from_many_threads() -> None:
    index = build()
    errors: list[BaseException] = []
    stop = threading.Event()

    def searcher() -> None:
        try:
            while not stop.is_set():
                hits = index.search("will it rain in Oslo")
                assert hits[0].id == "weather:get_forecast"
        except BaseException as e:  # collected and re-raised in the test thread
            errors.append(e)

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(200):
        index.register(Tool(name=f"t{i}", namespace="bulk", description=f"Bulk tool {i}."), BackendRef.mcp("bulk"))
    stop.set()
    for t in threads:
        t.join()
    assert not errors
    assert len(index) == len(TOOLS) + 200


def _with_fixes(index: InMemoryIndex, query: str) -> str:
    """The text the model reads for ``query``: its misspelt words followed by their corrections."""
    engine = index._engine  # pyright: ignore[reportPrivateUsage]
    return engine._with_fixes(query, engine._query(query, frozenset()).fixes)  # pyright: ignore[reportPrivateUsage]


def test_a_correction_made_as_the_word_cache_fills_up_is_kept_for_its_query() -> None:
    index = build()
    engine = index._engine  # pyright: ignore[reportPrivateUsage]
    for i in range(10_001):  # a long-lived index has met many unknown words: its caches start again
        engine.query_terms("zq" + "".join(chr(97 + int(d)) for d in str(i)))
    assert ids(index, "convert curency amounts")[0] == "finance:convert_currency"
    assert _with_fixes(index, "convert curency amounts") == "convert curency (currency) amounts"


def test_a_misspelt_query_is_corrected_for_the_dense_side_too() -> None:
    index = build()
    assert ids(index, "convert curency amounts")[0] == "finance:convert_currency"
    # The lexical engine's correction is handed to the model next to the word as typed.
    assert _with_fixes(index, "convert curency amounts") == "convert curency (currency) amounts"
    # A word the vocabulary lacks and that is no typo of one stays as it is.
    assert _with_fixes(index, "email my landlord") == "email my landlord"
    # A quoted value is a literal (a name, a file): the model reads it as the user wrote it.
    quoted = "convert curency amounts in 'curency.csv'"
    assert _with_fixes(index, quoted) == quoted  # as the lexical side, which corrects a quoted word nowhere
    assert _with_fixes(index, "convert curency amounts in 'rates.csv'") == (
        "convert curency (currency) amounts in 'rates.csv'"
    )
    # Only the query's own words are corrected: a correction another query needed is not carried over.
    assert _with_fixes(index, "curency") == "curency (currency)"
    assert _with_fixes(index, "getCurency rates") == "getCurency rates"


# -- the default model's query path and the two-pass search of large catalogs -------------

EVAL_DIR = Path(__file__).resolve().parents[1] / "data" / "eval"


def _eval_doc(name: str) -> dict[str, Any]:
    with gzip.open(EVAL_DIR / f"{name}.gz", "rt", encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    return doc


def _eval_tools(name: str) -> list[Tool]:
    return [
        Tool(
            name=r["name"],
            namespace=r["namespace"],
            description=r.get("description") or "",
            input_schema=r.get("input_schema") or {"type": "object"},
        )
        for r in _eval_doc(name)["tools"]
    ]


def _encoded(embedder: StaticEmbedder, text: str) -> list[int]:
    return list(embedder._tokenizer.encode(text, add_special_tokens=False).ids)  # pyright: ignore[reportPrivateUsage]


def test_a_query_read_word_by_word_gets_the_tokens_of_the_whole_text() -> None:
    """The default model reads a query word by word from caches; the tokens must be the tokenizer's own."""
    embedder = StaticEmbedder.from_package()
    texts = [t for q in _eval_doc("livemcpbench.json")["queries"] for t in query_texts(q["query"])]
    texts += [t for q in _eval_doc("msc_bench_mcp.json")["queries"] for t in query_texts(q["query"])]
    texts += [tool_text(t) for t in _eval_tools("github_mcp_server_tools.json")]
    texts += ["", "a", "two  spaces", " leading", "trailing ", "<s> special </s>", "tab\tand\nnewline"]
    texts += ["naïve café 東京", "C++ vs. C#: 3.5x faster?!", "a \u2581b", "find \u2581\u2581issues now"]
    most = semantic_module.MAX_TOOL_TOKENS
    for round_ in range(2):  # the second round reads the words the first one learnt
        for text in texts:
            with embedder._lock:  # pyright: ignore[reportPrivateUsage]
                got = embedder._small_ids(text)  # pyright: ignore[reportPrivateUsage]
            assert got[:most] == _encoded(embedder, text)[:most], (round_, text)
    assert embedder._words  # pyright: ignore[reportPrivateUsage]  # some words were learnt, not all looked up


def test_every_whole_word_token_is_how_the_tokenizer_encodes_that_word() -> None:
    embedder = StaticEmbedder.from_package()
    whole = embedder._whole_words  # pyright: ignore[reportPrivateUsage]
    assert len(whole) > 10_000
    wrong = [w for w, ids in whole.items() if _encoded(embedder, w) != ids]
    assert wrong == []


def test_a_query_embeds_the_same_alone_and_in_a_batch() -> None:
    embedder = default_embedder()
    texts = [q["query"] for q in _eval_doc("livemcpbench.json")["queries"][:20]]
    batch = embedder.embed(texts)  # more than a small batch: the tokenizer's batch call
    alone = np.vstack([embedder.embed([t]) for t in texts])  # word by word
    assert np.array_equal(batch, alone)


def _two_indexes(tools: Sequence[Tool]) -> tuple[InMemoryIndex, InMemoryIndex]:
    exact = build(tools, search_params=SearchParams(dense_exact_max=100_000))
    two_pass = build(tools, search_params=SearchParams(dense_exact_max=0))
    return exact, two_pass


def test_the_two_pass_search_of_a_large_catalog_finds_what_the_exact_search_finds() -> None:
    tools = _eval_tools("livemcpbench.json")  # 527 tools: the first pass keeps 100 of them
    exact, two_pass = _two_indexes(tools)
    queries = [q["query"] for q in _eval_doc("livemcpbench.json")["queries"]]
    found = sum(len(set(ids(exact, q, limit=5)) & set(ids(two_pass, q, limit=5))) for q in queries)
    assert found >= 0.97 * sum(len(ids(exact, q, limit=5)) for q in queries)  # 98.3 % measured


def test_the_two_pass_mean_cosine_follows_every_change_of_the_vectors() -> None:
    """Above ``dense_exact_max`` the catalog's mean cosine comes from a kept mean vector."""
    rng = np.random.default_rng(7)

    def unit(k: int) -> npt.NDArray[np.float32]:
        v = rng.normal(size=(k, 256)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    dense = DenseVectors(default_embedder(), 400)
    dense.put(0, unit(300), unit(300))
    query = unit(1)
    none = np.zeros(0, dtype=np.intp)

    def means(n: int, alive: int) -> tuple[float, float]:
        exact = dense.candidates(query, n, alive, 0.5, exact_max=10_000, keep=none, eligible=None).mean
        two_pass = dense.candidates(query, n, alive, 0.5, exact_max=0, keep=none, eligible=None).mean
        return exact, two_pass

    assert means(300, 300)[0] == pytest.approx(means(300, 300)[1], abs=1e-5)
    for slot in range(0, 300, 3):
        dense.clear(slot)
    assert means(300, 200)[0] == pytest.approx(means(300, 200)[1], abs=1e-5)
    dense.put(300, unit(50), unit(50))
    assert means(350, 250)[0] == pytest.approx(means(350, 250)[1], abs=1e-5)
    dense.compact(np.array([s for s in range(350) if s % 3 or s >= 300], dtype=np.intp))
    assert means(250, 250)[0] == pytest.approx(means(250, 250)[1], abs=1e-5)
    # Rows that do not count (a partition's tools) change neither mean.
    before = means(250, 250)
    dense.put(250, unit(20), unit(20), counted=False)
    counted = np.arange(270) < 250
    exact = dense.candidates(query, 270, 250, 0.5, exact_max=10_000, keep=none, eligible=None, counted=counted).mean
    assert (exact, means(270, 250)[1]) == before
    dense.compact(np.arange(270, dtype=np.intp), counted)
    assert means(270, 250)[1] == pytest.approx(before[1], abs=1e-6)


def test_the_first_pass_keeps_more_rows_in_a_larger_catalog() -> None:
    rng = np.random.default_rng(3)
    n = 30_000
    vectors = rng.normal(size=(n, 256)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    dense = DenseVectors(default_embedder(), n)
    dense.put(0, vectors, vectors)
    query = vectors[:1]
    none = np.zeros(0, dtype=np.intp)
    small = dense.candidates(query, 10_000, 10_000, 0.5, exact_max=0, keep=none, eligible=None)
    large = dense.candidates(query, n, n, 0.5, exact_max=0, keep=none, eligible=None)
    assert len(small.slots) == 100 and len(large.slots) == n // 250
    assert 0 in large.slots.tolist()  # the query's own row is among them


def test_the_two_pass_search_follows_removals() -> None:
    tools = _eval_tools("livemcpbench.json")
    exact, two_pass = _two_indexes(tools)
    query = "search the web for recent news"
    removed = ids(exact, query, limit=40)
    for index in (exact, two_pass):
        for tid in removed:
            index.unregister(tid)
    after = ids(two_pass, query, limit=50)
    assert after and not set(after) & set(removed)
    # The two-pass search approximates the exact one (the test above: 98 % of its top 5): after
    # the removals they still agree on the best hit and on four of the top five.
    expected = ids(exact, query, limit=5)
    assert after[0] == expected[0] and len(set(after[:5]) & set(expected)) >= 4


_LAZY_MODEL = """
import json, sys
from toolindex import BackendRef, InMemoryIndex, Tool
from toolindex import _semantic

tools = [Tool(**t) for t in json.loads(sys.argv[1])]
fillers = [Tool(name=f"filler_{i}", namespace="junk", description=f"Placeholder number {i}.") for i in range(1500)]
deferred = InMemoryIndex(semantic=True)
deferred.register_many([(t, BackendRef.mcp(t.namespace)) for t in [*fillers, *tools]])
for t in fillers:  # removed and compacted while their vectors are still deferred
    deferred.unregister(t.id)
before = {m: m in sys.modules for m in ("tokenizers", "rapidfuzz")} | {"loaded": bool(_semantic._loaded)}
queries = ["will it be sunny tomorrow in Lisbon", "exchange dollars for yen", "translate a sentence into French"]
first = [[(h.id, round(h.score, 6)) for h in deferred.search(q)] for q in queries]
# Registered after the model is in memory: embedded at once, as before deferral existed.
eager = InMemoryIndex(semantic=True)
eager.register_many([(t, BackendRef.mcp(t.namespace)) for t in tools])
same = [[(h.id, round(h.score, 6)) for h in eager.search(q)] for q in queries]
print(json.dumps({"before": before, "loaded": bool(_semantic._loaded), "first": first, "eager": same}))
"""


def test_the_model_loads_at_the_first_search_and_embeds_the_tools_registered_before_it() -> None:
    import subprocess
    import sys

    # A fresh process: the model is process-wide, and this one's other tests have loaded it.
    tools = [{"name": t.name, "namespace": t.namespace, "description": t.description} for t in TOOLS]
    out = subprocess.run(
        [sys.executable, "-c", _LAZY_MODEL, json.dumps(tools)], capture_output=True, text=True, timeout=120, check=True
    )
    got = json.loads(out.stdout)
    # Registration held none of the model, nor the fuzzy matcher only searches and lookups need.
    assert got["before"] == {"loaded": False, "tokenizers": False, "rapidfuzz": False}
    assert got["loaded"] is True
    assert got["first"][0][0][0] == "weather:get_forecast"  # by meaning: no word is shared
    assert got["first"][1][0][0] == "finance:convert_currency"
    assert got["first"] == got["eager"]  # deferred vectors rank exactly as vectors made at registration
