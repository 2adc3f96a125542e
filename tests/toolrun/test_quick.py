"""quick_init and quick_new: the same frozen objects as the dataclass's own constructor, built for less."""

from __future__ import annotations

import dataclasses

import pytest

from toolindex import BackendRef
from toolrun import BackendResult, RunResult, quick_new


def test_quick_new_builds_the_object_the_class_builds() -> None:
    ref = BackendRef.local("f")
    made = quick_new(RunResult)("ns:f", ref, {"a": 1}, (), False, 2.5)
    assert type(made) is RunResult
    assert made == RunResult("ns:f", ref, {"a": 1}, (), False, 2.5)
    assert made.value == {"a": 1} and made.duration_ms == 2.5
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.structured = None  # type: ignore[misc]


def test_quick_new_applies_the_defaults() -> None:
    made = quick_new(BackendResult)("x")
    assert made == BackendResult("x") and made.content == () and made.error is None
    assert hash(made) == hash(BackendResult("x"))


def test_quick_new_of_a_class_without_quick_init_is_refused() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Plain:
        a: int

    with pytest.raises(KeyError):
        quick_new(Plain)
