"""The collector pause around large batches: restores what was there, leaves no young objects behind."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from toolindex._gc import collector_paused


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def _generation_of(obj: object) -> int | None:
    for generation in range(3):
        if any(o is obj for o in gc.get_objects(generation)):
            return generation
    return None


def test_paused_inside_and_on_again_after() -> None:
    with collector_paused(True):
        assert not gc.isenabled()
    assert gc.isenabled()


def test_small_work_is_not_paused() -> None:
    with collector_paused(False):
        assert gc.isenabled()
    assert gc.isenabled()


def test_a_pause_begun_elsewhere_is_left_to_end_there() -> None:
    gc.disable()
    try:
        with collector_paused(True):
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_objects_made_during_the_pause_end_in_the_oldest_generation() -> None:
    # The first collection after the pause must not walk them all again: they are long-lived.
    with collector_paused(True):
        made = [{"k": [i]} for i in range(1000)]
    assert _generation_of(made) == 2
    assert _generation_of(made[-1]) == 2


def test_on_again_after_an_error() -> None:
    with pytest.raises(RuntimeError), collector_paused(True):
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_objects_the_application_froze_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with collector_paused(True):
            made = [{"k": [i]} for i in range(10)]
        # Still frozen (an unfreeze would empty the permanent generation; a few frozen objects
        # may have been freed meanwhile, which lowers the count).
        assert gc.get_freeze_count() > frozen // 2
        assert _generation_of(made) is not None  # tracked as usual, not frozen with the application's
    finally:
        gc.unfreeze()
