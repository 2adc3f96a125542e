"""Another caller's private snippet changes nothing of what a caller's search returns.

A private snippet was hidden from other callers' hits, but it sat in the one catalog index among
the tools every search is scored against: its words moved the statistics (document frequencies,
field lengths, the typo vocabulary, the semantic mean), so bob could save a snippet holding a guess
and a control word and read from his own scores whether alice's private description holds the
guess. Private snippets are registered in their owner's partition of the index (see
``docs/toolindex.md``): searched only by their owner, never counted in anyone's statistics.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from toolcode import Settings, Toolbox
from toolcode._settings import PolicySettings, SearchSettings, StateSettings
from toolrun import LocalBackend

pytestmark = pytest.mark.anyio

ALICE, BOB, OP = "token:alice", "token:bob", "token:op"
QUERIES = (
    "zeusmerger",
    "quokkaplan",
    "zeusmergr",  # one typo away from alice's word
    "zeusm",  # a prefix of it
    "zeusmerger_notes",  # the exact name of alice's snippet
    "probe zeusmerger",
    "prepare the term sheet",
    "term sheet for a merger",
    "read a text file",
    "weather forecast",
)


def _backend() -> LocalBackend:
    local = LocalBackend()

    @local.tool(namespace="files")
    def read_file(path: str) -> str:
        """Read a text file."""
        return path

    @local.tool(namespace="files")
    def write_file(path: str, text: str) -> str:
        """Write a text file, replacing what it held."""
        return path

    @local.tool(namespace="weather")
    def get_forecast(city: str) -> str:
        """Forecast of rain, wind and temperature for a city."""
        return city

    @local.tool(namespace="deals")
    def list_deals(stage: str) -> str:
        """List the deals of the sales pipeline at a stage."""
        return stage

    return local


@pytest.fixture(params=["lexical", "semantic"])
async def box(request: pytest.FixtureRequest) -> AsyncIterator[Toolbox]:
    policy = PolicySettings.model_validate({"operators": [OP], "preset": "allow-all"})
    search = SearchSettings(semantic=request.param == "semantic")
    settings = Settings(policy=policy, search=search, state=StateSettings(memory=True))
    async with Toolbox([_backend()], settings=settings, engine="inprocess") as b:
        assert b.index.semantic == (request.param == "semantic")
        await b.codemode.save_snippet("probe", "__out = 2", "probe zeusmerger quokkaplan", caller=BOB)
        await b.codemode.save_snippet("team_report", "__out = 1", "The team's weekly report.", shared=True, caller=OP)
        yield b


async def _results(box: Toolbox, caller: str) -> list[list[dict[str, Any]]]:
    return [(await box.codemode.search_tools(q, 20, caller=caller)).model_dump(mode="json")["hits"] for q in QUERIES]


async def _alice_saves_private_snippets(box: Toolbox) -> None:
    cm = box.codemode
    await cm.save_snippet(
        "zeusmerger_notes", "__out = 1", "zeusmerger: prepare the zeusmerger term sheet", caller=ALICE
    )
    schema = {"type": "object", "properties": {"sheet": {"type": "string", "description": "The term sheet."}}}
    await cm.save_snippet("merger_sheet", "__out = 3", "Term sheet of a merger: read, weather", schema, caller=ALICE)


async def test_another_callers_private_snippets_change_nothing_of_a_search(box: Toolbox) -> None:
    before = await _results(box, BOB)
    local_before = await _results(box, "local")
    await _alice_saves_private_snippets(box)
    after = await _results(box, BOB)
    assert after == before
    assert await _results(box, "local") == local_before  # an operator-less local caller: the same
    # The oracle of the review: bob's own snippet scores the same for his guess and his control.
    guess, control = after[QUERIES.index("zeusmerger")], after[QUERIES.index("quokkaplan")]
    assert guess[0]["id"] == control[0]["id"] == "snippets:probe" and guess[0]["score"] == control[0]["score"]
    dumped = str(after)
    assert "zeusmerger_notes" not in dumped and "merger_sheet" not in dumped


async def test_an_operator_search_is_not_moved_by_other_callers_private_snippets(box: Toolbox) -> None:
    before = await _results(box, OP)
    await _alice_saves_private_snippets(box)
    assert await _results(box, OP) == before


async def test_a_caller_finds_their_own_private_snippets_by_their_words(box: Toolbox) -> None:
    await _alice_saves_private_snippets(box)
    cm = box.codemode

    async def ids(query: str) -> list[str]:
        return [h.id for h in (await cm.search_tools(query, 5, caller=ALICE)).hits]

    assert (await ids("zeusmerger"))[0] == "snippets:zeusmerger_notes"
    assert (await ids("zeusmerger_notes"))[0] == "snippets:zeusmerger_notes"  # an exact name first
    assert (await ids("term sheet of a merger"))[:2] == ["snippets:merger_sheet", "snippets:zeusmerger_notes"]
    assert (await ids("read a text file"))[0] == "files:read_file"  # ranked among the others, not above them
    assert (await ids("the team's weekly report"))[0] == "snippets:team_report"  # a shared one
    # Bob sees his own, never alice's.
    bobs = [h.id for h in (await cm.search_tools("zeusmerger", 10, caller=BOB)).hits]
    assert bobs[0] == "snippets:probe" and "snippets:zeusmerger_notes" not in bobs


async def test_a_snippet_published_shared_counts_for_everyone_and_one_deleted_for_no_one(box: Toolbox) -> None:
    cm = box.codemode
    before = await _results(box, BOB)
    await cm.save_snippet("op_notes", "__out = 1", "zeusmerger kickoff", caller=OP)  # the operator's own
    assert await _results(box, BOB) == before
    await cm.save_snippet("op_notes", "__out = 1", "zeusmerger kickoff", shared=True, caller=OP)
    shared = [h.id for h in (await cm.search_tools("zeusmerger kickoff", 5, caller=BOB)).hits]
    assert shared[0] == "snippets:op_notes"
    assert await cm.delete_snippet("op_notes", caller=OP)
    await _alice_saves_private_snippets(box)
    assert await cm.delete_snippet("zeusmerger_notes", caller=ALICE)
    assert await _results(box, BOB) == before


async def test_attaching_the_runners_backends_again_leaves_private_snippets_in_their_partition(box: Toolbox) -> None:
    await _alice_saves_private_snippets(box)
    await box.runner.attach()  # the snippets' provider lists none: the library registers them itself
    hits = await _results(box, BOB)
    guess, control = hits[QUERIES.index("zeusmerger")], hits[QUERIES.index("quokkaplan")]
    assert guess[0]["id"] == control[0]["id"] == "snippets:probe" and guess[0]["score"] == control[0]["score"]
    assert "zeusmerger_notes" not in str(hits) and "merger_sheet" not in str(hits)
    assert (await box.codemode.search_tools("zeusmerger", 5, caller=ALICE)).hits[0].id == "snippets:zeusmerger_notes"
