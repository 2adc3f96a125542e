from collections.abc import Sequence

import pytest

from toolindex import (
    AmbiguousToolIDError,
    BackendRef,
    ChangeEvent,
    DuplicateToolError,
    Index,
    InMemoryIndex,
    InvalidToolError,
    InvalidToolIDError,
    PreparedBatch,
    Tool,
    ToolNotFoundError,
    indexing_cost,
)


def tool(name: str, namespace: str = "ns", version: str | None = None, **kw: object) -> Tool:
    return Tool.validated(name=name, namespace=namespace, version=version, description=f"{name} tool", **kw)


def recorder(index: InMemoryIndex) -> list[ChangeEvent]:
    events: list[ChangeEvent] = []
    index.subscribe(events.append)
    return events


def test_in_memory_index_satisfies_the_protocol() -> None:
    assert isinstance(InMemoryIndex(), Index)


def test_register_get_and_backends() -> None:
    index = InMemoryIndex()
    index.register(tool("a"), BackendRef.local("a"))
    index.register(tool("a"), [BackendRef.mcp("srv"), BackendRef.local("a")])  # adds only the new backend
    assert index.get("ns:a").name == "a"
    assert index.backends("ns:a") == [BackendRef.local("a"), BackendRef.mcp("srv")]
    assert len(index) == 1
    assert "ns:a" in index
    assert "ns:zzz" not in index
    assert 42 not in index


def test_register_many_is_atomic_on_a_bad_item() -> None:
    index = InMemoryIndex()
    index.register(tool("keep"), BackendRef.local("keep"))
    events = recorder(index)
    version = index.version
    bad_batches: list[list[object]] = [
        [(tool("x"), BackendRef.local("x")), ("not a tool", BackendRef.local("y"))],
        [(tool("x"), BackendRef.local("x")), (tool("y"), [])],
        [(tool("x"), BackendRef.local("x")), (tool("y"), ["mcp:srv"])],
        [(tool("x"), BackendRef.local("x")), (tool("y"),)],
        [(tool("x"), BackendRef.local("x")), (tool("keep"), BackendRef.mcp("s")), (tool("x"), BackendRef.local("x"))],
    ]
    for batch in bad_batches:
        with pytest.raises((InvalidToolError, DuplicateToolError)):
            index.register_many(batch)  # type: ignore[arg-type]
    assert [t.id for t in index.list_tools().tools] == ["ns:keep"]
    assert index.backends("ns:keep") == [BackendRef.local("keep")]
    assert index.search("x tool") == [] or all(h.id == "ns:keep" for h in index.search("x tool"))
    assert events == []
    assert index.version == version


def test_bad_item_error_names_the_item_and_field() -> None:
    index = InMemoryIndex()
    with pytest.raises(InvalidToolError) as info:
        index.register_many([(tool("a"), BackendRef.local("a")), (tool("b"), [])])
    assert info.value.tool == "ns:b"
    assert info.value.field == "backend"
    with pytest.raises(InvalidToolError, match="item 1"):
        index.register_many([(tool("a"), BackendRef.local("a")), ({"name": "b"}, BackendRef.local("b"))])  # type: ignore[list-item]


def test_duplicate_in_batch() -> None:
    index = InMemoryIndex()
    with pytest.raises(DuplicateToolError) as info:
        index.register_many([(tool("a"), BackendRef.local("a")), (tool("a"), BackendRef.local("b"))])
    assert info.value.tool_id == "ns:a"
    assert len(index) == 0


def test_events_carry_increasing_versions_and_kinds() -> None:
    index = InMemoryIndex()
    events = recorder(index)
    index.register_many([(tool("a"), BackendRef.local("a")), (tool("b"), BackendRef.local("b"))])
    index.register_many([(tool("a"), BackendRef.local("a")), (tool("c"), BackendRef.local("c"))])
    index.unregister("ns:b")
    index.describe_namespace("ns", "Tools for testing.")
    index.register_many([])  # no change, no event
    assert [(e.kind, e.tool_ids) for e in events] == [
        ("registered", ("ns:a", "ns:b")),
        ("registered", ("ns:c",)),
        ("updated", ("ns:a",)),
        ("unregistered", ("ns:b",)),
        ("updated", ("ns:a", "ns:c")),
    ]
    versions = [e.version for e in events]
    assert versions == sorted(set(versions))
    assert index.version == versions[-1]


def test_unsubscribe_and_failing_subscriber() -> None:
    index = InMemoryIndex()
    seen: list[int] = []

    def broken(event: ChangeEvent) -> None:
        raise RuntimeError("subscriber bug")

    index.subscribe(broken)
    stop = index.subscribe(lambda e: seen.append(e.version))
    index.register(tool("a"), BackendRef.local("a"))  # the broken subscriber does not stop it
    stop()
    stop()  # harmless twice
    index.register(tool("b"), BackendRef.local("b"))
    assert seen == [1]
    assert len(index) == 2


def test_unregister_all_versions_or_one() -> None:
    index = InMemoryIndex()
    for v in ("1.0", "1.10", "1.9"):
        index.register(tool("t", version=v), BackendRef.local("t"))
    assert index.get("ns:t").version == "1.10"  # numeric parts compare as numbers
    assert index.get("t").version == "1.10"
    index.unregister("ns:t:1.10")
    assert index.get("ns:t").version == "1.9"
    index.unregister("ns:t")  # every remaining version
    assert len(index) == 0
    with pytest.raises(ToolNotFoundError):
        index.unregister("ns:t")


def test_unversioned_counts_as_oldest() -> None:
    index = InMemoryIndex()
    index.register(tool("t"), BackendRef.local("t"))
    index.register(tool("t", version="0.1"), BackendRef.local("t"))
    assert index.get("ns:t").id == "ns:t:0.1"


def test_unregister_backend_removes_orphans_only() -> None:
    index = InMemoryIndex()
    srv, other = BackendRef.mcp("srv"), BackendRef.mcp("other")
    index.register(tool("only"), srv)
    index.register(tool("both"), [srv, other])
    index.register(tool("none"), other)
    events = recorder(index)
    assert index.unregister_backend(srv) == ["ns:only"]
    assert index.backends("ns:both") == [other]
    assert sorted(t.id for t in index.list_tools().tools) == ["ns:both", "ns:none"]
    assert [(e.kind, e.tool_ids) for e in events] == [("unregistered", ("ns:only",)), ("updated", ("ns:both",))]
    assert index.unregister_backend(BackendRef.mcp("unknown")) == []
    assert len(events) == 2


def test_get_bare_name_ambiguity_lists_candidates() -> None:
    index = InMemoryIndex()
    index.register(tool("search", namespace="github"), BackendRef.mcp("github"))
    index.register(tool("search", namespace="jira"), BackendRef.mcp("jira"))
    index.register(tool("unique", namespace="jira"), BackendRef.mcp("jira"))
    assert index.get("unique").id == "jira:unique"
    with pytest.raises(AmbiguousToolIDError) as info:
        index.get("search")
    assert info.value.candidates == ["github:search", "jira:search"]
    assert "github:search" in str(info.value) and "jira:search" in str(info.value)


def test_not_found_suggests_close_ids() -> None:
    index = InMemoryIndex()
    index.register(tool("get_weather", namespace="weather"), BackendRef.local("w"))
    with pytest.raises(ToolNotFoundError) as info:
        index.get("weather:get_wether")
    assert info.value.suggestions == ["weather:get_weather"]
    assert "did you mean" in str(info.value)
    with pytest.raises(ToolNotFoundError) as info2:
        index.get("weather:get_weather:9")
    assert info2.value.suggestions == ["weather:get_weather"]
    with pytest.raises(InvalidToolIDError):
        index.get("a:b:c:d")


def test_namespaces_and_descriptions() -> None:
    index = InMemoryIndex()
    index.describe_namespace("b", "Second.")  # allowed before the namespace has tools
    index.register_many(
        [(tool("x", namespace="b"), BackendRef.local("x")), (tool("y", namespace="a"), BackendRef.local("y"))]
    )
    index.register(tool("z", namespace="b"), BackendRef.local("z"))
    infos = index.namespaces()
    assert [(i.name, i.tool_count, i.description) for i in infos] == [("a", 1, None), ("b", 2, "Second.")]
    index.describe_namespace("b", None)
    assert index.namespaces()[1].description is None
    with pytest.raises(InvalidToolIDError):
        index.describe_namespace("bad:ns", "x")


def _ids(pages: Sequence[Sequence[Tool]]) -> list[str]:
    return [t.id for page in pages for t in page]


def test_paginated_listing_visits_every_tool_once() -> None:
    index = InMemoryIndex()
    index.register_many([(tool(f"t{i:03d}", namespace="ab"[i % 2]), BackendRef.local("f")) for i in range(25)])
    pages: list[Sequence[Tool]] = []
    cursor: str | None = None
    while True:
        page = index.list_tools(cursor=cursor, limit=10)
        pages.append(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [len(p) for p in pages] == [10, 10, 5]
    ids = _ids(pages)
    assert ids == sorted(ids) and len(set(ids)) == 25
    only_a = index.list_tools(namespace="a", limit=1000).tools
    assert len(only_a) == 13 and all(t.namespace == "a" for t in only_a)


def test_listing_rejects_bad_arguments() -> None:
    index = InMemoryIndex()
    with pytest.raises(ValueError, match="limit"):
        index.list_tools(limit=0)
    with pytest.raises(ValueError, match="cursor"):
        index.list_tools(cursor="%%%")


def test_large_batch_restores_the_garbage_collector_state() -> None:
    import gc

    items = [(tool(f"t{i}"), BackendRef.local("f")) for i in range(1200)]
    assert gc.isenabled()
    index = InMemoryIndex()
    index.register_many(items[:600])
    index.register_many(items[600:])
    assert gc.isenabled()
    gc.disable()
    try:
        InMemoryIndex().register_many(items)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert len(index) == 1200


def test_failure_half_way_through_a_large_batch_is_rolled_back(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolindex._index as index_module

    index = InMemoryIndex()
    old = [(tool(f"t{i}"), BackendRef.local("old")) for i in range(0, 3000, 2)]
    index.register_many(old)
    before_hits = index.search("t10 tool")
    before = {t.id: (t, index.backends(t.id)) for t in index.list_tools(limit=1000).tools}
    version = index.version
    events = recorder(index)

    real = index_module.document_fields
    calls = 0

    def flaky(*args: object) -> object:
        nonlocal calls
        calls += 1
        if calls == 2500:  # inside the third chunk: two chunks are already applied
            raise MemoryError("simulated")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(index_module, "document_fields", flaky)
    # Every other id exists already (an update with a new backend and description), the rest are new.
    batch = [
        (Tool.validated(name=f"t{i}", namespace="ns", description=f"changed {i}"), BackendRef.local("new"))
        for i in range(3000)
    ]
    with pytest.raises(MemoryError):
        index.register_many(batch)
    monkeypatch.setattr(index_module, "document_fields", real)

    assert events == []
    assert index.version == version
    assert len(index) == len(old)
    assert index.search("changed") == []
    assert index.search("t10 tool") == before_hits
    page = index.list_tools(limit=1000)
    for t in page.tools:
        assert (t, index.backends(t.id)) == before[t.id]


def test_a_prepared_batch_registers_as_register_many_does_in_parts_of_bounded_cost() -> None:
    def tools(word: str) -> list[tuple[Tool, BackendRef]]:
        return [
            (Tool(name=f"t{i}", namespace="ns", description=f"{word} {i} " * 300), BackendRef.mcp("ns", tool=f"t{i}"))
            for i in range(20)
        ]

    plain, parted = InMemoryIndex(), InMemoryIndex()
    plain.register_many(tools("alpha"))
    batch = parted.prepare_many(tools("alpha"))
    assert len(parted) == 0  # preparing changes nothing
    cost = max(indexing_cost(t) for t, _ in tools("alpha"))
    parts = batch.split(3 * cost)
    assert sum(len(p) for p in parts) == 20 and all(2 <= len(p) <= 3 for p in parts)
    assert all(isinstance(p, PreparedBatch) and p.cost <= 3 * cost for p in parts)
    assert batch.split(1) and all(len(p) == 1 for p in batch.split(1))  # a tool costing more: alone
    for part in parts:
        parted.register_prepared(part)
    assert [h.id for h in parted.search("alpha 7")] == [h.id for h in plain.search("alpha 7")]
    # Replacing costs the old definition's removal too; a changed namespace text is tokenised again.
    again = parted.prepare_many(tools("beta"))
    assert again.cost == batch.cost + sum(indexing_cost(t) for t, _ in tools("beta"))
    parted.describe_namespace("ns", "gamma things")
    parted.register_prepared(again)
    assert parted.search("gamma")[0].id.startswith("ns:")
    assert parted.search("beta 3")[0].id == "ns:t3"
    assert parted.search("alpha") == []
    with pytest.raises(ValueError, match="another index"):
        plain.register_prepared(again)
