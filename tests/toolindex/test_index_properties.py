from hypothesis import given, settings
from hypothesis import strategies as st

from toolindex import BackendRef, InMemoryIndex, Tool, ToolID

NAME = st.from_regex(r"[A-Za-z0-9_.\-]{1,20}", fullmatch=True)
NAMESPACE = st.from_regex(r"[a-z0-9_.\-]{1,12}", fullmatch=True)
VERSION = st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){0,2}", fullmatch=True)


@given(NAMESPACE, NAME, st.none() | VERSION)
def test_id_round_trip(namespace: str, name: str, version: str | None) -> None:
    tid = ToolID(namespace, name, version)
    assert ToolID.parse(str(tid)) == tid


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 30)), max_size=8)),
        st.tuples(st.just("remove"), st.tuples(st.sampled_from("abc"), st.integers(0, 30))),
        st.tuples(st.just("drop_backend"), st.sampled_from("abc")),
    ),
    max_size=25,
)


@settings(max_examples=60)
@given(OPS)
def test_search_agrees_with_the_registry_after_any_history(ops: list[tuple[str, object]]) -> None:
    index = InMemoryIndex()
    model: dict[str, str] = {}  # id -> namespace
    for op, arg in ops:
        if op == "add":
            items = {f"{ns}:t{i}": (ns, i) for ns, i in arg}  # type: ignore[union-attr]
            index.register_many(
                [
                    (Tool.validated(name=f"t{i}", namespace=ns, description=f"common word{i}"), BackendRef.mcp(ns))
                    for ns, i in items.values()
                ]
            )
            model.update({tid: ns for tid, (ns, _) in items.items()})
        elif op == "remove":
            ns, i = arg  # type: ignore[misc]
            tid = f"{ns}:t{i}"
            if tid in model:
                index.unregister(tid)
                del model[tid]
        else:
            removed = index.unregister_backend(BackendRef.mcp(str(arg)))
            assert sorted(removed) == sorted(t for t, ns in model.items() if ns == arg)
            model = {t: ns for t, ns in model.items() if ns != arg}
        hits = index.search("common", limit=1000)
        assert {h.id for h in hits} == set(model)
        assert len(index) == len(model)
        counts = {n.name: n.tool_count for n in index.namespaces()}
        assert counts == {ns: sum(1 for v in model.values() if v == ns) for ns in set(model.values())}
        for tid in model:
            assert index.search(f"common word{tid.split(':t')[1]}", limit=1000)[0].id.endswith(tid.split(":")[1])
