"""What a snippet's text settles before it runs (toolcode.calls._foresee and _known): known calls, and what is not."""

from __future__ import annotations

from typing import Any

import pytest

from toolcode._module_views import ToolModules
from toolcode._view import CatalogView
from toolcode.calls._foresee import foresee
from toolindex import InMemoryIndex

_INDEX = InMemoryIndex()
MODULES = ToolModules(_INDEX).seen_by(CatalogView(_INDEX))


def known(code: str, given: Any = None) -> list[tuple[str, dict[str, Any]]]:
    seen = foresee(code, MODULES, given)
    return [] if seen is None else [(c.tool_id, c.args) for c in seen.calls]


@pytest.mark.parametrize(
    ("code", "given", "expected"),
    [
        ("N = 3\nrun_tool('t:get', {'q': f'issue-{N}', 'n': N * 2 - 1})", None, [{"q": "issue-3", "n": 5}]),
        ("run_tool('t:get', {'n': input['k'], 'm': input.get('m', 0)})", {"k": 5}, [{"n": 5, "m": 0}]),
        ("run_tool('t:get', n=1, s=str(2) + 'x', k=len([1, 2]))", None, [{"n": 1, "s": "2x", "k": 2}]),
        ("out = [run_tool('t:get', {'n': i}) for i in [1, 2] if i != 2]", None, [{"n": 1}]),
        (
            "for a, b in [[1, 'x'], [2, 'y']]:\n    run_tool('t:get', {'n': a, 'b': b})",
            None,
            [{"n": 1, "b": "x"}, {"n": 2, "b": "y"}],
        ),
    ],
)
def test_arguments_made_of_literals_constants_and_input_are_known(code: str, given: Any, expected: Any) -> None:
    assert [args for _, args in known(code, given)] == expected


@pytest.mark.parametrize(
    "code",
    [
        "x = compute()\nrun_tool('t:get', {'n': x})",  # a value only the run knows
        "N = 1\nN = 2\nrun_tool('t:get', {'n': N})",  # bound twice: which one is not settled
        "for i in range(3):\n    i = i + 1\n    run_tool('t:get', {'n': i})",  # the loop variable changed
        "run_tool('t:get', {'s': 'x' * 1000000000})",  # nothing large is ever built
        "run_tool('t:get', {'n': 2 ** 4000})",
        "run_tool('t:get', {'n': " + "[" * 500 + "]" * 500 + "})",  # deeper than the evaluator goes
        "run_tool('t:get', {'n': 1}, n=2)",  # an object and keywords: the run merges them
        "def run_tool(*a):\n    return a\nrun_tool('t:get', {'n': 1})",  # not the global
    ],
)
def test_what_the_text_does_not_settle_starts_nothing(code: str) -> None:
    assert known(code) == []


def test_a_loop_over_an_earlier_result_is_known_when_that_result_arrives() -> None:
    code = "r = run_tool('t:list', {'page': 1})\nrows = [run_tool('t:get', {'n': x['id']}) for x in r['items']]"
    seen = foresee(code, MODULES, None)
    assert seen is not None and len(seen.loops) == 1
    loop = seen.loops[0]
    assert (loop.source.tool_id, loop.source.args) == ("t:list", {"page": 1})
    later = loop.calls({"items": [{"id": 7}, {"id": 8}, {"no": 1}]})
    assert [c.args for c in later] == [{"n": 7}, {"n": 8}]  # an element the argument does not fit: skipped
    assert loop.calls("not a mapping") == []


def test_every_call_site_is_listed_with_its_tool_or_none_when_computed() -> None:
    code = "run_tool('t:get', {'n': 1})\nrun_tool(name, {})\nrun_chain([])\nrun_tool('t:put', {'n': 1})"
    seen = foresee(code, MODULES, None, lambda tool_id: tool_id == "t:get")
    assert seen is not None
    assert [tool_id for _, tool_id in seen.sites] == ["t:get", None, None, "t:put"]
    assert [c.tool_id for c in seen.calls] == ["t:get"]
