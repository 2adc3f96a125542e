"""Hostile queries, ids and tool definitions: the index answers quickly, with bounded messages.

Each case once blocked a caller for seconds to minutes (a 4 MB query: 16 s; a tool with
30,000 properties: 21 s; suggestions for a 40 MB id: minutes) or echoed 40 MB back. The
time bounds are generous: they prove "did not stall", not speed.
"""

from __future__ import annotations

import functools
import random
import string
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from toolindex import (
    AmbiguousToolIDError,
    BackendRef,
    DuplicateToolError,
    InMemoryIndex,
    InvalidToolError,
    InvalidToolIDError,
    Tool,
    ToolID,
    ToolNotFoundError,
    _search,
)
from toolindex._limits import MAX_QUERY_CHARS, MAX_QUERY_WORDS, MAX_TYPO_NAMESPACE_ENTRIES, MAX_TYPO_WORD_CHARS

BOUND_S = 2.0
MESSAGE_CHARS = 1_000


@contextmanager
def computes_within(seconds: float) -> Iterator[None]:
    """Fail when the block uses more than ``seconds`` of this process's CPU time.

    CPU time, not wall time: the bugs guarded against here computed for seconds to minutes, and a busy
    machine stretches the wall time of a computation but not the CPU time it needs.
    """
    start = time.process_time()
    yield
    used = time.process_time() - start
    assert used < seconds, f"computed for {used:.2f} s of CPU time (bound {seconds} s)"


def catalog() -> InMemoryIndex:
    index = InMemoryIndex()
    tools = [
        Tool(name="get_weather", namespace="weather", description="Current weather for a city."),
        Tool(name="list_issues", namespace="github", description="List issues of a repository."),
        *(Tool(name=f"tool_{i}", namespace=f"ns{i % 7}", description=f"Does thing number {i}.") for i in range(200)),
    ]
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in tools])
    return index


@functools.cache
def word_pool() -> tuple[str, ...]:
    rnd = random.Random(0)
    return tuple(
        rnd.choice(string.ascii_uppercase) + "".join(rnd.choices(string.ascii_lowercase, k=rnd.randint(3, 9)))
        for _ in range(200_000)
    )


def random_words(n_chars: int, seed: int = 1) -> str:
    """About ``n_chars`` characters of capitalised made-up words (up to 200,000 distinct ones)."""
    return " ".join(random.Random(seed).choices(word_pool(), k=n_chars // 7))


# -- queries ----------------------------------------------------------------------------------


def test_a_4mb_query_answers_quickly() -> None:
    index = catalog()
    query = "weather in paris " + random_words(4_000_000)
    with computes_within(BOUND_S):
        hits = index.search(query)
    assert hits[0].id == "weather:get_weather"


def test_only_the_head_of_a_query_is_read() -> None:
    index = catalog()
    # Documented bounds: a word past the first MAX_QUERY_CHARS characters, or past the first
    # MAX_QUERY_WORDS searchable words, does not count.
    assert index.search("x" * MAX_QUERY_CHARS + " weather") == []
    many = " ".join(f"zq{i:04d}" for i in range(MAX_QUERY_WORDS))
    assert len(many) < MAX_QUERY_CHARS
    assert index.search(f"{many} weather") == []
    assert index.search(f"weather {many}")[0].id == "weather:get_weather"


def test_a_long_real_looking_query_is_unaffected() -> None:
    index = catalog()
    # Stopwords do not count towards the word bound.
    query = "please, can you tell me about the " * 60 + "weather"
    assert len(query) < MAX_QUERY_CHARS
    assert index.search(query)[0].id == "weather:get_weather"


# -- ids and messages -------------------------------------------------------------------------

HUGE = "a" * 40_000_000


@pytest.mark.parametrize(
    ("kind", "call"),
    [
        (InvalidToolIDError, lambda index: index.get(HUGE)),
        (InvalidToolIDError, lambda index: index.get("ns:" + HUGE)),
        (InvalidToolIDError, lambda index: index.get("a b" * 40)),
        (InvalidToolIDError, lambda index: index.resolve(HUGE + ":x:y:z")),
        (InvalidToolIDError, lambda index: ToolID.parse(HUGE)),
        (InvalidToolIDError, lambda index: index.describe_namespace(HUGE, "x")),
        (ToolNotFoundError, lambda index: index.get("n" * 128 + ":" + "m" * 128)),
        (ToolNotFoundError, lambda index: index.unregister("n" * 128 + ":" + "m" * 128)),
        (InvalidToolError, lambda index: Tool.from_mcp({"name": HUGE})),
        (InvalidToolError, lambda index: Tool.from_mcp({"name": "ok", "inputSchema": {"type": HUGE}})),
        (ValueError, lambda index: index.list_tools(cursor=HUGE)),
    ],
)
def test_errors_for_huge_ids_are_quick_and_clipped(kind: type[Exception], call: Callable[[InMemoryIndex], Any]) -> None:
    index = catalog()
    with computes_within(BOUND_S), pytest.raises(kind) as e:
        call(index)
    assert len(str(e.value)) < MESSAGE_CHARS


def test_a_not_found_error_keeps_the_whole_id_as_an_attribute() -> None:
    index = catalog()
    long_id = "n" * 128 + ":" + "m" * 128
    with pytest.raises(ToolNotFoundError) as e:
        index.get(long_id)
    assert e.value.tool_id == long_id
    assert str(e.value).startswith("tool not found: 'nnnn") and "…'" in str(e.value)


def test_suggestions_for_a_40mb_id_are_quick() -> None:
    index = catalog()
    with computes_within(BOUND_S):
        near = index.suggest("weather:get_wether" + "x" * 40_000_000)
        bare = index.suggest("get_wether")
    assert len(near) <= 3
    assert bare[0] == "weather:get_weather"


def test_an_ambiguous_name_lists_a_few_candidates() -> None:
    index = InMemoryIndex()
    index.register_many(
        [(Tool(name="search", namespace=f"server{i:03d}"), BackendRef.mcp(f"server{i:03d}")) for i in range(500)]
    )
    with pytest.raises(AmbiguousToolIDError) as e:
        index.get("search")
    assert len(e.value.candidates) == 500
    assert "and 490 more" in str(e.value)
    assert len(str(e.value)) < MESSAGE_CHARS


def test_a_duplicate_in_a_batch_names_the_id_clipped() -> None:
    tool = Tool(name="m" * 128, namespace="n" * 128)
    with pytest.raises(DuplicateToolError) as e:
        InMemoryIndex().register_many([(tool, BackendRef.mcp("x")), (tool, BackendRef.mcp("x"))])
    assert len(str(e.value)) < 300


# -- registration ---------------------------------------------------------------------------


def wide_tool(n: int) -> Tool:
    props = {f"param_{i}": {"type": "string", "description": f"Parameter {i} of a very wide tool."} for i in range(n)}
    return Tool(
        name="wide",
        namespace="hostile",
        description="Sends a message to a channel.",
        input_schema={"type": "object", "properties": props},
    )


def test_a_30000_property_tool_registers_quickly_and_stays_searchable() -> None:
    index = catalog()
    tool = wide_tool(30_000)
    with computes_within(BOUND_S):
        index.register(tool, BackendRef.mcp("hostile"))
        hits = index.search("send message channel")
        index.unregister("hostile:wide")
        index.register(tool, BackendRef.mcp("hostile"))
    assert hits[0].id == "hostile:wide"
    assert index.search("param_3")[0].id == "hostile:wide"  # an early parameter is indexed


def test_registration_indexes_a_bounded_amount_of_text() -> None:
    index = catalog()
    before = index._engine.stats()["terms"]  # pyright: ignore[reportPrivateUsage]
    huge = random_words(10_000_000, seed=2)  # about 1.5 million distinct words
    tool = Tool(
        name="talker",
        namespace="hostile",
        title=huge,
        description="Reads the news aloud. " + huge,
        tags=[huge[:100_000], huge[100_000:200_000]],
        input_schema={
            "type": "object",
            "properties": {
                "topic": {"type": "string", "description": huge, "enum": [huge[:1_000_000]] * 30},
                **wide_tool(30_000).input_schema["properties"],
            },
        },
    )
    with computes_within(BOUND_S):
        index.describe_namespace("hostile", huge)
        index.register(tool, BackendRef.mcp("hostile"))
        hits = index.search("news aloud")
    assert hits[0].id == "hostile:talker"
    assert hits[0].summary == "Reads the news aloud."
    added = index._engine.stats()["terms"] - before  # pyright: ignore[reportPrivateUsage]
    assert added < 50_000


# -- the typo vocabulary ---------------------------------------------------------------------
#
# Typo correction keeps, for each vocabulary word, its one-deletion variants (a word of n letters
# makes n + 1 entries). An upstream whose descriptions hold many distinct long words once made
# the first search with a typo (or any later registration) build millions of entries: about a
# gigabyte and seconds of CPU time. The bounds are checked by memory and by the index's own
# entry count, which a busy machine does not change.

TYPO_MB = 16


def distinct_words(n: int, length: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    return ["".join(rnd.choices(string.ascii_lowercase, k=length)) for _ in range(n)]


def flood_tools(namespace: str, n_tools: int, length: int = 12, seed: int = 7) -> list[Tool]:
    """``n_tools`` tools whose descriptions are 16 KB of distinct ``length``-letter words each."""
    per_tool = 16_384 // (length + 1)
    words = distinct_words(n_tools * per_tool, length, seed)
    return [
        Tool(name=f"t{i}", namespace=namespace, description=" ".join(words[i * per_tool : (i + 1) * per_tool]))
        for i in range(n_tools)
    ]


def register(index: InMemoryIndex, tools: list[Tool]) -> None:
    index.register_many([(t, BackendRef.mcp(t.namespace)) for t in tools])


def typo_stats(index: InMemoryIndex) -> dict[str, int]:
    return index._engine.stats()  # pyright: ignore[reportPrivateUsage]


@contextmanager
def traced() -> Iterator[list[int]]:
    """Yields [retained, peak] bytes allocated in the block (filled in when it ends)."""
    out = [0, 0]
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        yield out
        current, peak = tracemalloc.get_traced_memory()
        out[:] = [current - start, peak - start]
    finally:
        tracemalloc.stop()


def test_distinct_words_in_descriptions_build_a_bounded_typo_index() -> None:
    # 24 tools of 16 KB of distinct 12-letter words: 30,000 words, 400,000 deletion entries unbounded.
    index = catalog()
    register(index, flood_tools("evil", 24))
    with traced() as mem:
        hits = index.search("get the wether")  # a typo: builds the typo tables
    assert hits[0].id == "weather:get_weather"
    assert mem[1] < TYPO_MB * 2**20, f"the typo tables took {mem[1] / 2**20:.0f} MB"
    stats = typo_stats(index)
    assert stats["typo_entries"] <= 2 * MAX_TYPO_NAMESPACE_ENTRIES + 10_000
    assert index.search("wether", namespaces=["weather"])[0].id == "weather:get_weather"


def test_a_listing_after_the_typo_index_exists_adds_a_bounded_amount() -> None:
    flood = flood_tools("evil", 24)
    reference = catalog()
    with traced() as without:
        register(reference, flood)  # no typo tables: what registering costs anyway
    index = catalog()
    assert index.search("get the wether")[0].id == "weather:get_weather"  # typo tables built
    with traced() as with_typos:
        register(index, flood)
    extra = with_typos[0] - without[0]
    assert extra < TYPO_MB * 2**20, f"the typo tables grew by {extra / 2**20:.0f} MB"
    assert typo_stats(index)["typo_entries"] <= 2 * MAX_TYPO_NAMESPACE_ENTRIES + 10_000
    # Unregistering the tools gives their entries back.
    for tool in flood:
        index.unregister(f"evil:{tool.name}")
    assert typo_stats(index)["typo_entries"] <= 10_000


def test_a_flooded_namespace_keeps_its_names_and_others_keep_their_typos() -> None:
    index = catalog()
    register(index, flood_tools("evil", 24))
    index.search("wether")  # typo tables built
    register(
        index,
        [
            Tool(name="get_calendar", namespace="evil", description="Shows the agenda."),
            Tool(name="get_forecast", namespace="meteo", description="Tomorrow's outlook for a region."),
        ],
    )
    assert index.search("calender")[0].id == "evil:get_calendar"  # a name word: its own budget
    assert index.search("outlok for a regon")[0].id == "meteo:get_forecast"  # another namespace's budget


def test_the_typo_index_has_a_global_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_search, "MAX_TYPO_ENTRIES", 20_000)
    index = catalog()
    index.search("wether")
    for n in range(8):
        register(index, flood_tools(f"ns_flood{n}", 2, seed=n))
    assert typo_stats(index)["typo_entries"] <= 20_000
    # Exact words are found whatever the bound; a typo of a word left out is not corrected.
    word = flood_tools("ns_flood7", 2, seed=7)[1].description.split()[-1]
    assert index.search(word)[0].id == "ns_flood7:t1"


def test_words_longer_than_the_bound_are_not_typo_targets() -> None:
    index = catalog()
    long_word = "a" + "bcdefghij" * 4  # 37 letters
    ok_word = "internationalization"
    register(index, [Tool(name="odd", namespace="x", description=f"{long_word} {ok_word}")])
    assert index.search("internationalisation")[0].id == "x:odd"
    assert index.search(long_word[:-1] + "z") == []  # one letter changed: not corrected
    assert MAX_TYPO_WORD_CHARS < len(long_word)


def test_typo_budgets_are_given_back_whatever_the_order_of_removal() -> None:
    index = InMemoryIndex()
    tools = [
        Tool(name="x1", namespace="n", description="42"),  # no typo word at all
        Tool(name="get_weather", namespace="n", description="Current weather."),
        Tool(name="y2", namespace="n"),
    ]
    register(index, tools)
    assert index.search("wether")[0].id == "n:get_weather"
    for tool in tools:
        index.unregister(f"n:{tool.name}")
    assert typo_stats(index)["typo_entries"] == 0
    assert typo_stats(index)["typo_keys"] == 0
    register(index, tools[::-1])
    assert index.search("wether")[0].id == "n:get_weather"
