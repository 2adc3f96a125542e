import doctest
import importlib

import pytest

import toolindex


@pytest.mark.parametrize("module", ["toolindex", "toolindex._tokenize"])
def test_docstring_examples_hold(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0
    assert result.failed == 0


def test_all_lists_exactly_the_public_names() -> None:
    public = {n for n in dir(toolindex) if not n.startswith("_")} - {"exceptions", "log"}  # public modules
    assert set(toolindex.__all__) == public
    for name in toolindex.__all__:
        assert getattr(toolindex, name) is not None


def test_every_error_derives_from_the_root() -> None:
    from toolindex import exceptions

    for name in exceptions.__all__:
        assert issubclass(getattr(exceptions, name), toolindex.ToolIndexError)
