"""The check before the run on the corpus of ``bench/typecheck.py``: it never refuses working code.

Every snippet the docs show (found in docs/*.md and README.md, so a new example is checked as soon
as it is written), every correct snippet of the corpus in both call styles, and one broken snippet
of each kind, refused with the code its run fails with. The tools: the demo (help desk, the real
``mcp-server-time``), the recorded tools of ``mcp-server-git``, ``server-filesystem``,
``server-memory`` and ``server-everything`` answered by local fakes, and the docs' own tools.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from toolcode import Settings, Toolbox
from toolcode._view import CatalogView

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from typecheck_corpus import (
    BROKEN_ARGUMENTS,
    BROKEN_MODULE,
    DEMO,
    IDIOMS,
    LITERAL_BROKEN,
    LITERAL_IDIOMS,
    RUN_TOOL_BROKEN,
    RUN_TOOL_CORRECT,
    DocExample,
    doc_examples,
    literal_style,
)
from typecheck_tools import corpus_backends, reset

pytestmark = pytest.mark.anyio

DOCS = doc_examples()
CODES = {
    "unknown_tool": "unknown_tool",
    "unknown_module": "unknown_tool",
    "typed_result": "runtime_error",
}
"""The code each kind of mistake fails with (every other kind: ``invalid_arguments``)."""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def backends() -> list[Any]:
    return corpus_backends()


@pytest.fixture(scope="module")
async def box(backends: list[Any]) -> AsyncIterator[Toolbox]:
    settings = Settings.model_validate({"state": {"memory": True}, "policy": {"preset": "allow-all"}})
    async with Toolbox(backends, engine="inprocess", settings=settings) as b:
        yield b


def _resolve(box: Toolbox) -> Callable[[str, str], tuple[str, bool] | None]:
    modules = box.services.modules.seen_by(CatalogView(box.index))

    def resolve(module: str, function: str) -> tuple[str, bool] | None:
        ns = modules.namespace_of(module)
        fn = modules.functions(ns).get(function) if ns is not None else None
        return (fn.tool_id, fn.awaitable) if fn is not None else None

    return resolve


async def _check(box: Toolbox, code: str) -> list[tuple[int, int, str, str]]:
    found = await box.services.checker.check(code, CatalogView(box.index, None))
    return [(d.line, d.column, str(d.code), d.message) for d in found]


def test_the_docs_examples_are_found() -> None:
    # The extraction finds the examples the issue names: the snippet API page's module-style loop
    # (the one the check used to refuse) and snippets written inside host code and CLI lines.
    assert any('key=lambda r: -r["urgent"]' in ex.code and "from tools import" in ex.code for ex in DOCS)
    assert any(ex.where.startswith("quickstart.md") and "git:git_log" in ex.code for ex in DOCS)
    assert any(ex.where.startswith("executor.md") and ex.input == [1, 2, 3] for ex in DOCS)
    assert any(ex.refused for ex in DOCS)  # the page's example of a refused snippet
    assert len(DOCS) >= 12


@pytest.mark.parametrize("example", DOCS, ids=[ex.where for ex in DOCS])
async def test_every_doc_example_passes_the_check(box: Toolbox, example: DocExample) -> None:
    found = await _check(box, example.code)
    # An example the docs show as refused (a ``python refused`` block) is refused.
    assert bool(found) == example.refused, found


@pytest.mark.parametrize("name", [name for name, _ in IDIOMS])
async def test_every_idiom_passes_the_check_in_both_styles(box: Toolbox, name: str) -> None:
    code = dict(IDIOMS)[name]
    assert await _check(box, code) == []
    assert await _check(box, literal_style(code, _resolve(box))) == []


@pytest.mark.parametrize("name", [name for name, _, broken in DEMO if not broken])
async def test_every_correct_demo_snippet_passes_the_check(box: Toolbox, name: str) -> None:
    assert await _check(box, {n: code for n, code, _ in DEMO}[name]) == []


@pytest.mark.parametrize("name", [name for name, _ in LITERAL_IDIOMS])
async def test_every_run_tool_idiom_passes_the_check(box: Toolbox, name: str) -> None:
    assert await _check(box, dict(LITERAL_IDIOMS)[name]) == []


async def test_the_snippets_of_the_finding_pass_and_run(box: Toolbox, backends: list[Any]) -> None:
    # The three everyday snippets the check used to refuse, as the finding wrote them.
    ents = 'ents = [{"name": "c", "entityType": "service", "observations": ["x"]}]\n'
    built = "from tools import memory\n" + ents + "memory.create_entities(entities=ents)"
    appended = (
        "from tools import memory\nents = []\n"
        'ents.append({"name": "c", "entityType": "service", "observations": ["x"]})\n'
        "memory.create_entities(entities=ents)"
    )
    docs = next(ex.code for ex in DOCS if 'key=lambda r: -r["urgent"]' in ex.code and "from tools" in ex.code)
    for code in (built, appended, docs):
        reset(backends)
        out = await box.codemode.execute(code)
        assert out.ok, (code, out.error)


BROKEN = [
    *((f"{name} (module)", code, kind) for name, code, kind in BROKEN_ARGUMENTS),
    *((f"{name} (module)", code, kind) for name, code, kind in BROKEN_MODULE),
    *((f"{name} (run_tool)", code, kind) for name, code, kind in LITERAL_BROKEN),
]


@pytest.mark.parametrize(("name", "code", "kind"), BROKEN, ids=[b[0] for b in BROKEN])
async def test_a_broken_snippet_is_refused_with_the_code_its_run_fails_with(
    box: Toolbox, backends: list[Any], name: str, code: str, kind: str
) -> None:
    await _refused(box, backends, code, CODES.get(kind, "invalid_arguments"))


@pytest.mark.parametrize(("name", "code", "kind"), BROKEN_ARGUMENTS, ids=[b[0] for b in BROKEN_ARGUMENTS])
async def test_an_argument_mistake_is_refused_in_the_run_tool_style_too(
    box: Toolbox, backends: list[Any], name: str, code: str, kind: str
) -> None:
    await _refused(box, backends, literal_style(code, _resolve(box)), "invalid_arguments")


async def _refused(box: Toolbox, backends: list[Any], code: str, expected: str) -> None:
    found = await _check(box, code)
    assert found and all(c == expected for _, _, c, _ in found), found
    reset(backends)
    checked = await box.codemode.execute(code)
    assert checked.error is not None and checked.error.code == "type_error" and checked.calls.count == 0
    reset(backends)
    run = await box.codemode.execute(code, options={"type_check": "off"})
    if run.ok:
        # Only a misspelt optional argument of a tool whose schema lets unknown keys through runs:
        # the tool ignores it.
        assert "unexpected property" in found[0][3], (code, found)
    else:
        assert run.error is not None and run.error.code == expected, (code, run.error)


@pytest.mark.parametrize("name", [name for name, _ in RUN_TOOL_CORRECT])
async def test_every_correct_program_of_the_run_tool_corpus_passes_and_runs(
    box: Toolbox, backends: list[Any], name: str
) -> None:
    code = dict(RUN_TOOL_CORRECT)[name]
    assert await _check(box, code) == []
    reset(backends)
    out = await box.codemode.execute(code)
    assert out.ok, out.error


@pytest.mark.parametrize(("name", "code", "kind"), RUN_TOOL_BROKEN, ids=[b[0] for b in RUN_TOOL_BROKEN])
async def test_every_broken_program_of_the_run_tool_corpus_is_refused(
    box: Toolbox, backends: list[Any], name: str, code: str, kind: str
) -> None:
    reset(backends)
    run = await box.codemode.execute(code, options={"type_check": "off"})
    assert run.error is not None, "the corpus is wrong: it runs"
    await _refused(box, backends, code, CODES.get(kind, "invalid_arguments"))
