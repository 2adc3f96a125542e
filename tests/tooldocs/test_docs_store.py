from __future__ import annotations

import ast
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from _tooldocs_support import index_of

from tooldocs import (
    STUB_IMPORTS,
    ArgsTooLargeError,
    Budgets,
    DetailLevel,
    DocNotFoundError,
    InMemoryStore,
    InvalidDetailLevelError,
    InvalidExampleError,
    ShapeFileWarning,
    Store,
    ToolExample,
    definition_fingerprint,
)
from toolindex import BackendRef, InMemoryIndex, Tool, ToolNotFoundError

ISSUES = Tool(
    name="list_issues",
    namespace="github",
    title="List issues",
    description=(
        "List issues in a GitHub repository. Results are paginated; see "
        "https://docs.github.com/rest/issues for the fields.\n\nUse `state` to filter."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "owner": {"type": "string"},
            "repo": {"type": "string"},
            "state": {"type": "string", "enum": ["open", "closed"], "default": "open"},
            "perPage": {"type": "integer", "default": 30},
        },
        "required": ["owner", "repo"],
    },
)
TYPED = Tool(
    name="get_time",
    namespace="time",
    description="Current time.",
    input_schema={"type": "object", "properties": {"tz": {"type": "string"}}},
    output_schema={"type": "object", "properties": {"iso": {"type": "string"}}, "required": ["iso"]},
)
BARE = Tool(name="ping", namespace="util")


@pytest.fixture
def index() -> InMemoryIndex:
    return index_of([ISSUES, TYPED, BARE])


@pytest.fixture
def store(index: InMemoryIndex) -> InMemoryStore:
    return InMemoryStore(index)


# -- levels ----------------------------------------------------------------------------


def test_summary_level(store: InMemoryStore) -> None:
    doc = store.describe("github:list_issues", "summary")
    assert doc.level is DetailLevel.SUMMARY
    assert doc.render() == "github:list_issues — List issues in a GitHub repository."
    assert doc.signature is None and doc.input_schema is None and doc.examples == ()
    assert doc.to_dict() == {
        "id": "github:list_issues",
        "level": "summary",
        "name": "list_issues",
        "namespace": "github",
        "summary": "List issues in a GitHub repository.",
        "title": "List issues",
    }


def test_summary_works_for_a_tool_without_schema_or_description(store: InMemoryStore) -> None:
    assert store.describe("util:ping", "summary").render() == "util:ping — ping"
    doc = store.describe("util:ping", "schema")
    assert doc.signature is not None and doc.signature.startswith("def ping(**kwargs: Any) -> dict[str, Any]:")


def test_schema_level(store: InMemoryStore) -> None:
    doc = store.describe("github:list_issues")
    assert doc.level is DetailLevel.SCHEMA
    assert doc.required == ("owner", "repo")
    assert doc.defaults == {"state": "open", "perPage": 30}
    assert doc.input_schema == ISSUES.input_schema
    assert doc.output_schema is None
    assert doc.returns == "dict[str, Any]"
    assert doc.signature is not None
    ast.parse(f"{STUB_IMPORTS}\n{doc.signature}")
    text = doc.render()
    assert text.startswith("# github:list_issues\ndef list_issues(")
    assert 'state: Literal["open", "closed"] = "open"' in text
    assert doc.notes == () and doc.description is None
    json.dumps(doc.to_dict())


def test_output_schema_is_the_return_type(store: InMemoryStore) -> None:
    doc = store.describe("time:get_time")
    assert doc.returns == "GetTimeResult"
    assert doc.signature is not None and "class GetTimeResult(TypedDict):\n    iso: str" in doc.signature


def test_full_level_has_description_notes_examples_references(store: InMemoryStore) -> None:
    store.add_notes("github:list_issues", ["Labels are case-insensitive.", "Closed issues include PRs."])
    store.add_references("github:list_issues", "https://example.com/guide")
    store.add_example(
        "github:list_issues",
        {"title": "Open bugs", "args": {"owner": "octo", "repo": "hello", "state": "open"}, "result_hint": "[{...}]"},
    )
    doc = store.describe("github:list_issues", DetailLevel.FULL)
    assert doc.notes == ("Labels are case-insensitive.", "Closed issues include PRs.")
    assert doc.references == ("https://docs.github.com/rest/issues", "https://example.com/guide")
    assert [e.title for e in doc.examples] == ["Open bugs"]
    assert doc.description == ISSUES.description
    text = doc.render()
    assert "Use `state` to filter." in text
    assert "- Labels are case-insensitive." in text
    assert 'run_tool("github:list_issues", {"owner": "octo", "repo": "hello", "state": "open"})' in text
    assert "References: https://docs.github.com/rest/issues https://example.com/guide" in text
    data = doc.to_dict()
    assert data["examples"][0]["args"] == {"owner": "octo", "repo": "hello", "state": "open"}
    json.dumps(data)


@pytest.mark.parametrize("level", ["SCHEMA", " full ", DetailLevel.SUMMARY])
def test_levels_are_parsed_leniently(store: InMemoryStore, level: Any) -> None:
    assert store.describe("github:list_issues", level).level == str(level).strip().lower()


@pytest.mark.parametrize("level", ["verbose", "", 3, None])
def test_bad_level(store: InMemoryStore, level: Any) -> None:
    with pytest.raises(InvalidDetailLevelError, match="invalid detail level"):
        store.describe("github:list_issues", level)
    with pytest.raises(InvalidDetailLevelError):
        store.describe_many(["github:list_issues"], level)


# -- lookups ---------------------------------------------------------------------------


def test_unknown_id_is_doc_not_found_chained_with_suggestions(store: InMemoryStore) -> None:
    with pytest.raises(DocNotFoundError) as info:
        store.describe("github:list_issue")
    err = info.value
    assert isinstance(err.__cause__, ToolNotFoundError)
    assert "github:list_issues" in err.suggestions
    assert "did you mean" in str(err)
    for call in (
        lambda: store.examples("nope:nothing"),
        lambda: store.record_result("nope:nothing", {}),
        lambda: store.add_notes("nope:nothing", "x"),
        lambda: store.result_shape("nope:nothing"),
    ):
        with pytest.raises(DocNotFoundError):
            call()


def test_ambiguous_and_malformed_ids(index: InMemoryIndex) -> None:
    index.register(Tool(name="ping", namespace="other"), BackendRef.local("ping2"))
    store = InMemoryStore(index)
    with pytest.raises(DocNotFoundError, match="ambiguous") as info:
        store.describe("ping")
    assert set(info.value.suggestions) == {"other:ping", "util:ping"}
    with pytest.raises(DocNotFoundError, match="at most 3 parts"):
        store.describe("a:b:c:d")


def test_bare_names_resolve_and_docs_use_the_full_id(store: InMemoryStore) -> None:
    assert store.describe("list_issues", "summary").id == "github:list_issues"


def test_docs_follow_index_updates(index: InMemoryIndex, store: InMemoryStore) -> None:
    assert "List issues" in store.describe("github:list_issues").render()
    index.register(ISSUES.model_copy(update={"description": "Find issues fast."}), BackendRef.mcp("github"))
    assert '"""Find issues fast."""' in store.describe("github:list_issues").render()


def test_store_satisfies_the_protocol(store: InMemoryStore) -> None:
    assert isinstance(store, Store)


# -- budgets ---------------------------------------------------------------------------


def test_budgets_shrink_detail_before_cutting() -> None:
    many = {f"param_{i}": {"type": "string", "description": f"Parameter number {i} does something."} for i in range(8)}
    tool = Tool(name="big", namespace="ns", input_schema={"type": "object", "properties": many})
    roomy = InMemoryStore(index_of([tool])).describe("ns:big")
    tight = InMemoryStore(index_of([tool]), budgets=Budgets(schema=300)).describe("ns:big")
    assert "does something" in roomy.render()
    assert "does something" not in tight.render()
    assert len(tight.render()) <= 300
    assert "cut at" not in tight.render()
    # Every parameter is still there.
    assert all(f"param_{i}:" in tight.render() for i in range(8))


def test_over_budget_text_is_cut_with_a_visible_marker() -> None:
    many = {f"p{i}": {"type": "string"} for i in range(40)}
    tool = Tool(name="huge", namespace="ns", input_schema={"type": "object", "properties": many})
    doc = InMemoryStore(index_of([tool]), budgets=Budgets(schema=200)).describe("ns:huge")
    assert len(doc.render()) <= 200
    assert doc.render().endswith("# … cut at 200 characters")
    # The signature field is never cut.
    assert doc.signature is not None and "p39: str = ...," in doc.signature


def test_budget_values_are_checked() -> None:
    with pytest.raises(ValueError, match="'schema'"):
        Budgets(schema=10)


def test_describe_many_keeps_order_and_downgrades_from_the_end() -> None:
    tools = [
        Tool(
            name=f"tool_{i}",
            namespace="ns",
            description=f"Tool {i}.",
            input_schema={"type": "object", "properties": {f"arg_{j}": {"type": "integer"} for j in range(10)}},
        )
        for i in range(6)
    ]
    store = InMemoryStore(index_of(tools), budgets=Budgets(many=900))
    docs = store.describe_many([t.id for t in reversed(tools)], "schema")
    assert [d.id for d in docs] == [t.id for t in reversed(tools)]
    levels = [d.level for d in docs]
    assert levels[0] is DetailLevel.SCHEMA and levels[-1] is DetailLevel.SUMMARY
    assert levels == sorted(levels, key=lambda lv: lv is DetailLevel.SUMMARY)
    assert sum(len(d.render()) + 1 for d in docs) <= 900
    with pytest.raises(DocNotFoundError):
        store.describe_many(["ns:tool_0", "ns:missing"])


# -- notes and examples --------------------------------------------------------------


def test_examples_are_capped_replaced_by_id_and_limited(store: InMemoryStore) -> None:
    for i in range(5):
        store.add_example("github:list_issues", ToolExample(id=f"e{i}", args={"owner": "o", "repo": str(i)}))
    store.add_example("github:list_issues", ToolExample(id="e1", title="again", args={"owner": "o", "repo": "x"}))
    assert [e.id for e in store.examples("github:list_issues", max=10)] == ["e0", "e2", "e3", "e4", "e1"]
    assert [e.id for e in store.examples("github:list_issues")] == ["e3", "e4", "e1"]
    assert store.examples("github:list_issues", max=0) == []


def test_example_args_must_fit_the_schema(store: InMemoryStore) -> None:
    with pytest.raises(InvalidExampleError, match=r"'args\.repo'") as info:
        store.add_example("github:list_issues", {"id": "x", "args": {"owner": "o"}})
    assert info.value.tool_id == "github:list_issues"
    with pytest.raises(InvalidExampleError, match=r"'args\.colour'.*not a parameter"):
        store.add_example("github:list_issues", {"id": "x", "args": {"owner": "o", "repo": "r", "colour": 1}})
    with pytest.raises(InvalidExampleError, match="unknown field"):
        store.add_example("github:list_issues", {"args": {}, "output": 1})


def test_oversized_example_args_name_the_tool(store: InMemoryStore) -> None:
    with pytest.raises(ArgsTooLargeError) as info:
        store.add_example("github:list_issues", {"title": "huge", "args": {"owner": "o" * 5000, "repo": "r"}})
    err = info.value
    assert err.cap == "chars" and err.tool_id == "github:list_issues" and err.example == "huge"
    assert "github:list_issues" in str(err)


def test_notes_are_one_line_deduplicated(store: InMemoryStore) -> None:
    store.add_notes("github:list_issues", "Line one\nline two")
    store.add_notes("github:list_issues", ["Line one line two", "  ", "Other"])
    assert store.describe("github:list_issues", "full").notes == ("Line one line two", "Other")


# -- learned result shapes ------------------------------------------------------------------


def test_record_result_merges_shapes_and_full_shows_them(store: InMemoryStore) -> None:
    store.record_result("github:list_issues", [{"id": 1, "title": "a", "labels": ["x"]}])
    store.record_result("github:list_issues", [{"id": 2, "title": "b", "assignee": None}, {"id": 3.5, "title": "c"}])
    shape = store.result_shape("github:list_issues")
    assert shape is not None
    item = shape["items"]
    assert item["required"] == ["id", "title"]
    assert item["properties"]["id"] == {"type": "number"}
    doc = store.describe("github:list_issues", "full")
    assert doc.result_shape == shape
    assert doc.result_count == 2
    assert doc.returns == "list[ListIssuesResultItem]"
    assert doc.signature is not None
    assert "class ListIssuesResultItem(TypedDict):\n    id: float\n    title: str\n" in doc.signature
    assert "    labels: NotRequired[list[str]]" in doc.signature
    assert "    assignee: NotRequired[None]" in doc.signature
    assert "shape learned from 2 result(s)" in doc.render()
    # The schema level uses the learned shape as the return type too.
    assert store.describe("github:list_issues").returns == "list[ListIssuesResultItem]"


def test_record_result_is_a_no_op_with_an_output_schema_or_no_value(store: InMemoryStore) -> None:
    store.record_result("time:get_time", {"iso": "2024", "extra": 1})
    assert store.result_shape("time:get_time") is None
    store.record_result("github:list_issues", None)
    assert store.result_shape("github:list_issues") is None


def test_learned_shapes_survive_a_restart(tmp_path: Path, index: InMemoryIndex) -> None:
    path = tmp_path / "shapes.json"
    first = InMemoryStore(index, shapes_path=path)
    first.record_result("github:list_issues", {"total": 2, "items": [{"n": 1}]})
    first.record_result("github:list_issues", {"total": 3, "items": [], "next": "c2"})
    before = first.describe("github:list_issues", "full")
    again = InMemoryStore(index, shapes_path=path)
    after = again.describe("github:list_issues", "full")
    assert after.result_shape == before.result_shape
    assert after.signature == before.signature
    assert after.result_shape is not None and after.result_shape["required"] == ["items", "total"]
    data = json.loads(path.read_text())
    assert data["format"] == "tooldocs.result-shapes" and "github:list_issues" in data["tools"]


def test_the_file_is_written_only_when_a_shape_changes(tmp_path: Path, index: InMemoryIndex) -> None:
    path = tmp_path / "shapes.json"
    store = InMemoryStore(index, shapes_path=path, learn_every=1)
    store.record_result("github:list_issues", {"a": 1})
    ino = path.stat().st_ino
    for i in range(50):
        store.record_result("github:list_issues", {"a": i})
    assert path.stat().st_ino == ino  # atomic writes replace the file; none happened
    store.record_result("github:list_issues", {"a": 1, "b": "new"})
    assert path.stat().st_ino != ino


def test_stable_shapes_are_sampled_but_changes_are_still_learned(index: InMemoryIndex) -> None:
    store = InMemoryStore(index, stable_after=4, learn_every=5)
    for i in range(10):
        store.record_result("github:list_issues", {"a": i})
    for _ in range(4):
        store.record_result("github:list_issues", {"a": 1, "b": True})
    shape = store.result_shape("github:list_issues")
    assert shape is not None and "b" not in shape["properties"]  # sampled out so far
    store.record_result("github:list_issues", {"a": 1, "b": True})
    shape = store.result_shape("github:list_issues")
    assert shape is not None and "b" in shape["properties"]  # learned within learn_every results
    assert store.describe("github:list_issues", "full").result_count == 15
    with pytest.raises(ValueError, match="learn_every"):
        InMemoryStore(index, learn_every=0)


def test_autosave_off_writes_on_flush_only(tmp_path: Path, index: InMemoryIndex) -> None:
    path = tmp_path / "shapes.json"
    store = InMemoryStore(index, shapes_path=path, autosave=False)
    store.record_result("github:list_issues", {"a": 1})
    assert not path.exists()
    assert store.flush() is True
    assert InMemoryStore(index, shapes_path=path).result_shape("github:list_issues") == {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
    }


def test_corrupt_file_warns_and_is_moved_aside_not_overwritten(tmp_path: Path, index: InMemoryIndex) -> None:
    path = tmp_path / "shapes.json"
    path.write_text('{"format": "tooldocs.result-shapes", "version": 1, "tools": {', encoding="utf-8")
    original = path.read_text()
    with pytest.warns(ShapeFileWarning, match="is not valid JSON"):
        store = InMemoryStore(index, shapes_path=path)
    assert path.read_text() == original  # loading never touches it
    assert store.result_shape("github:list_issues") is None
    with pytest.warns(ShapeFileWarning, match="moved to"):
        store.record_result("github:list_issues", {"a": 1})
    backup = tmp_path / "shapes.json.corrupt"
    assert backup.read_text() == original
    assert InMemoryStore(index, shapes_path=path).result_shape("github:list_issues") is not None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[]", "not a learned-shapes file"),
        ('{"format": "tooldocs.result-shapes", "version": 99, "tools": {}}', "version 99"),
        ('{"format": "tooldocs.result-shapes", "version": 1, "tools": {"a:b": {"shape": 3}}}', "unreadable entries"),
        (b"\xff\xfe\x00garbage", "not valid JSON"),
    ],
)
def test_other_kinds_of_corrupt_files(tmp_path: Path, index: InMemoryIndex, content: str | bytes, message: str) -> None:
    path = tmp_path / "shapes.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.warns(ShapeFileWarning, match=message):
        InMemoryStore(index, shapes_path=path)


def test_partially_bad_file_keeps_the_good_entries(tmp_path: Path, index: InMemoryIndex) -> None:
    path = tmp_path / "shapes.json"
    good = {"shape": {"type": "string"}, "count": 4, "definition": definition_fingerprint(ISSUES)}
    path.write_text(
        json.dumps({"format": "tooldocs.result-shapes", "version": 1, "tools": {"github:list_issues": good, "x:y": 1}})
    )
    with pytest.warns(ShapeFileWarning, match="1 unreadable entries"):
        store = InMemoryStore(index, shapes_path=path)
    assert store.result_shape("github:list_issues") == {"type": "string"}


def test_unwritable_file_warns_without_failing_the_call(tmp_path: Path, index: InMemoryIndex) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.warns(ShapeFileWarning, match="cannot be read"):
        store = InMemoryStore(index, shapes_path=blocker / "shapes.json")
    with pytest.warns(ShapeFileWarning, match="cannot write"):
        store.record_result("github:list_issues", {"a": 1})
    assert store.result_shape("github:list_issues") is not None
    with pytest.warns(ShapeFileWarning):
        assert store.flush() is False


def test_concurrent_record_result(tmp_path: Path, index: InMemoryIndex) -> None:
    store = InMemoryStore(index, shapes_path=tmp_path / "s.json")
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(100):
                store.record_result("github:list_issues", {"common": i, f"k{n}": str(i)})
        except BaseException as e:  # collected for the assertion below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    shape = store.result_shape("github:list_issues")
    assert shape is not None
    assert set(shape["properties"]) == {"common"} | {f"k{n}" for n in range(6)}
    assert shape["required"] == ["common"]
    assert store.describe("github:list_issues", "full").result_count == 600
    reloaded = InMemoryStore(index, shapes_path=tmp_path / "s.json")
    assert reloaded.result_shape("github:list_issues") == shape


# -- a learned shape belongs to the definition it was learned from ----------------------------


def _redefined(tool: Tool, **changes: Any) -> Tool:
    return tool.model_copy(update=changes)


def test_a_changed_definition_starts_a_fresh_shape(index: InMemoryIndex) -> None:
    # Keyed by tool id only, the shape learned from one definition was shown for the next one
    # under the same id (another server's tool, another caller's saved snippet).
    store = InMemoryStore(index)
    store.record_result("github:list_issues", {"secret_field": 1, "n": 1})
    assert store.result_shape("github:list_issues") is not None
    index.register(_redefined(ISSUES, meta={"owner-version": "2"}), BackendRef.local("x"))
    assert store.result_shape("github:list_issues") is None
    doc = store.describe("github:list_issues", "full")
    assert doc.result_shape is None and doc.result_count == 0
    assert "secret_field" not in doc.render()
    store.record_result("github:list_issues", {"n": 2})
    shape = store.result_shape("github:list_issues")
    assert shape is not None and set(shape["properties"]) == {"n"}
    assert store.describe("github:list_issues", "full").result_count == 1
    # Back to the first definition: its shape is gone, it was replaced (never merged).
    index.register(ISSUES, BackendRef.local("x"))
    assert store.result_shape("github:list_issues") is None


@pytest.mark.parametrize(
    "changes",
    [
        {"description": "Another tool."},
        {"input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}},
        {"annotations": {"readOnlyHint": True}},
        {"meta": {"rev": "b"}},
        {"title": "Other"},
    ],
)
def test_each_part_of_a_definition_tells_it_apart(changes: dict[str, Any]) -> None:
    before, after = InMemoryIndex(), InMemoryIndex()
    before.register(ISSUES, BackendRef.local("x"))
    after.register(_redefined(ISSUES, **changes), BackendRef.local("x"))
    learned = InMemoryStore(before)
    learned.record_result("github:list_issues", {"old_field": 1})
    other = InMemoryStore(after)
    assert other.restore_shapes(learned.learned_shapes()) == 0
    assert other.result_shape("github:list_issues") is None


def test_tags_are_not_part_of_the_definition() -> None:
    # Tags are the catalog's labels (config may add some), not what the tool returns.
    before, after = InMemoryIndex(), InMemoryIndex()
    before.register(ISSUES, BackendRef.local("x"))
    after.register(_redefined(ISSUES, tags=("extra",)), BackendRef.local("x"))
    learned = InMemoryStore(before)
    learned.record_result("github:list_issues", {"a": 1})
    other = InMemoryStore(after)
    assert other.restore_shapes(learned.learned_shapes()) == 1
    assert other.result_shape("github:list_issues") == learned.result_shape("github:list_issues")


def test_restoring_a_shape_of_another_definition_is_ignored() -> None:
    old_index, new_index = InMemoryIndex(), InMemoryIndex()
    old_index.register(ISSUES, BackendRef.local("x"))
    new_index.register(_redefined(ISSUES, meta={"rev": "new"}), BackendRef.local("x"))
    stale, current = InMemoryStore(old_index), InMemoryStore(new_index)
    stale.record_result("github:list_issues", {"old_owner_field": 1, "n": 1})
    # Nothing learned here yet: the stale shape is not taken.
    assert current.restore_shapes(stale.learned_shapes()) == 0
    assert current.result_shape("github:list_issues") is None
    assert "github:list_issues" not in current.learned_shapes()
    # Learned here: the stale shape neither widens nor replaces it.
    current.record_result("github:list_issues", {"n": 2})
    mine = current.result_shape("github:list_issues")
    assert current.restore_shapes(stale.learned_shapes()) == 0
    assert current.result_shape("github:list_issues") == mine
    # The other way round, the store with the old catalog keeps the shape of its definition.
    assert stale.restore_shapes(current.learned_shapes()) == 0
    shape = stale.result_shape("github:list_issues")
    assert shape is not None and "old_owner_field" in shape["properties"]
    # The same definition merges as before.
    twin = InMemoryStore(new_index)
    twin.record_result("github:list_issues", {"n": 3, "extra": True})
    assert current.restore_shapes(twin.learned_shapes()) == 1
    shape = current.result_shape("github:list_issues")
    assert shape is not None and set(shape["properties"]) == {"n", "extra"}


def test_a_shape_of_the_current_definition_replaces_a_stale_one() -> None:
    # A shape kept for a tool this store did not know then (restored) may turn out stale once the
    # tool is there: one of the current definition takes its place.
    old_index, new_index = InMemoryIndex(), InMemoryIndex()
    old_index.register(ISSUES, BackendRef.local("x"))
    new_index.register(_redefined(ISSUES, meta={"rev": "new"}), BackendRef.local("x"))
    stale, current = InMemoryStore(old_index), InMemoryStore(new_index)
    stale.record_result("github:list_issues", {"old_owner_field": 1})
    current.record_result("github:list_issues", {"n": 1})
    later = InMemoryIndex()
    store = InMemoryStore(later)
    assert store.restore_shapes(stale.learned_shapes()) == 1  # an unknown tool: kept, not shown
    later.register(_redefined(ISSUES, meta={"rev": "new"}), BackendRef.local("x"))
    assert store.result_shape("github:list_issues") is None
    assert store.restore_shapes(current.learned_shapes()) == 1
    assert store.result_shape("github:list_issues") == current.result_shape("github:list_issues")
    assert store.restore_shapes(stale.learned_shapes()) == 0
    assert store.result_shape("github:list_issues") == current.result_shape("github:list_issues")


def test_a_shape_recorded_without_its_definition_is_never_shown(tmp_path: Path, index: InMemoryIndex) -> None:
    # Records of the version before definitions were kept: which definition they were learned
    # from is unknown, so they count as no definition's (a few results learn the shape again).
    old = {"github:list_issues": {"shape": {"type": "object", "properties": {"old_owner_field": {}}}, "count": 9}}
    store = InMemoryStore(index)
    assert store.restore_shapes(old) == 0
    assert store.result_shape("github:list_issues") is None
    path = tmp_path / "shapes.json"
    path.write_text(json.dumps({"format": "tooldocs.result-shapes", "version": 1, "tools": old}))
    from_file = InMemoryStore(index, shapes_path=path)
    assert from_file.result_shape("github:list_issues") is None
    from_file.record_result("github:list_issues", {"n": 1})
    shape = from_file.result_shape("github:list_issues")
    assert shape is not None and set(shape["properties"]) == {"n"}
    assert "old_owner_field" not in path.read_text()


def test_learned_shapes_name_their_definition(index: InMemoryIndex) -> None:
    store = InMemoryStore(index)
    store.record_result("github:list_issues", {"a": 1})
    entry = store.learned_shapes()["github:list_issues"]
    assert entry["definition"] == definition_fingerprint(ISSUES)
    assert definition_fingerprint(ISSUES) == definition_fingerprint(_redefined(ISSUES))
    assert definition_fingerprint(ISSUES) != definition_fingerprint(_redefined(ISSUES, meta={"a": 1}))
