"""A learned result shape is its tool's definition's: it never reaches the next owner of a snippet's name.

Saved snippets' names are one namespace for every caller. Alice's private snippet ``report``
returns a field only she should know of; its result shape is learned and kept in the state store
every replica shares. Once she deletes it, Bob may save his own ``report`` (the same description,
the same arguments): what Alice's results looked like is none of his business, whichever replica
he asks and whatever a replica that still had her snippet in its catalog wrote to the store
meanwhile. Against a real Redis (and a real SQLite file), with toolboxes as replicas, each
started and stopped by the test so that what reaches the store when is known (a toolbox loads
the stored shapes when it starts and saves its own when it stops).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolcode import Settings, Toolbox
from toolcode._settings import StateSettings
from toolcode.state import open_state_store

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ALICE, BOB = "token:alice", "token:bob"
FIELD = "alice_salary_2025"
DESCRIPTION = "The monthly report."
"""Both callers' ``report`` say the same: only who saved it, and when, tells them apart."""
SHAPES = ("shapes", "learned")
"""Where the toolboxes keep learned shapes in the state store (:class:`toolcode._shapes.ShapeSync`)."""


@pytest.fixture(params=["redis", "sqlite"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    if request.param == "redis":
        return Settings(state=StateSettings(url=str(request.getfixturevalue("redis_url"))))
    return Settings(state=StateSettings(dir=str(tmp_path / "state")))


async def _full(box: Toolbox, caller: str) -> str:
    return (await box.codemode.describe_tool("snippets:report", "full", caller=caller)).text


async def test_a_freed_snippet_name_does_not_show_its_next_owner_the_old_results_shape(settings: Settings) -> None:
    async with Toolbox([], settings=settings) as first:
        await first.codemode.save_snippet("report", f"{{'{FIELD}': 123000, 'n': 1}}", DESCRIPTION, caller=ALICE)
        for _ in range(3):
            out = await first.codemode.run_tool("snippets:report", {}, caller=ALICE)
            assert out.value == {FIELD: 123000, "n": 1}
        assert FIELD in await _full(first, ALICE)  # learned, and shown to its owner
    # A replica started now has Alice's snippet in its catalog and her shape from the store.
    async with Toolbox([], settings=settings) as stale:
        assert FIELD in await _full(stale, ALICE)
        alices = await stale.state.get(*SHAPES)
        assert alices is not None and FIELD.encode() in alices.value
        async with Toolbox([], settings=settings) as current:
            assert await current.codemode.delete_snippet("report", caller=ALICE)
            await current.codemode.save_snippet("report", "{'n': 2}", DESCRIPTION, caller=BOB)
            # The replica where the name changed owner: the shape learned before is not Bob's.
            doc = await _full(current, BOB)
            assert DESCRIPTION in doc and FIELD not in doc, doc
            assert (await current.codemode.run_tool("snippets:report", {}, caller=BOB)).value == {"n": 2}
            assert FIELD not in await _full(current, BOB)
        # ``stale`` writes the shapes it has when it stops: Alice's among them.
    # What a replica whose catalog still had Alice's snippet wrote last, in this version's form and
    # in the form of the version before (without definitions): neither brings her shape back.
    old_form = json.dumps({k: {"shape": v["shape"], "count": v["count"]} for k, v in json.loads(alices.value).items()})
    for written in (alices.value, old_form.encode()):
        store = open_state_store(url=settings.state.url, directory=settings.state.dir)
        try:
            await store.put(*SHAPES, written)
        finally:
            await store.aclose()
        async with Toolbox([], settings=settings) as later:
            doc = await _full(later, BOB)
            assert DESCRIPTION in doc and FIELD not in doc, doc
            assert (await later.codemode.run_tool("snippets:report", {}, caller=BOB)).value == {"n": 2}
            doc = await _full(later, BOB)
            assert "n: int" in doc and FIELD not in doc, doc


async def test_saving_a_snippet_again_starts_its_result_shape_afresh(settings: Settings) -> None:
    # The same owner, the same name and description, other code: another saved version, whose
    # results are not the old ones' (a shape only widens: the old fields would stay for good).
    async with Toolbox([], settings=settings) as box:
        cm = box.codemode
        await cm.save_snippet("report", f"{{'{FIELD}': 1}}", "A report.", caller=ALICE)
        await cm.run_tool("snippets:report", {}, caller=ALICE)
        assert FIELD in await _full(box, ALICE)
        await cm.save_snippet("report", "{'n': 2}", "A report.", caller=ALICE)
        assert FIELD not in await _full(box, ALICE)
        await cm.run_tool("snippets:report", {}, caller=ALICE)
        doc = await _full(box, ALICE)
        assert "n: int" in doc and FIELD not in doc, doc
