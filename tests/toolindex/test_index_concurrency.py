import threading
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest

from toolindex import BackendRef, ChangeEvent, InMemoryIndex, Tool

HANG_S = 120
"""Seconds after which the writers and readers count as deadlocked: a bound for a hang, not a speed."""

N_WRITERS = 8
PER_WRITER = 40


def make(writer: int, i: int) -> Tool:
    return Tool.validated(
        name=f"tool_{writer}_{i}",
        namespace=f"w{writer}",
        description=f"Shared topic widget number {i} from writer {writer}.",
    )


def test_threads_registering_and_searching_stay_consistent() -> None:
    index = InMemoryIndex()
    events: list[ChangeEvent] = []
    lock = threading.Lock()

    def on_event(e: ChangeEvent) -> None:
        with lock:
            events.append(e)

    index.subscribe(on_event)
    start = threading.Barrier(N_WRITERS + 4)
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        start.wait()
        for i in range(0, PER_WRITER, 2):
            index.register_many([(make(w, i), BackendRef.local("f")), (make(w, i + 1), BackendRef.local("f"))])
        for i in range(0, PER_WRITER, 4):
            index.unregister(f"w{w}:tool_{w}_{i}")

    def reader() -> None:
        start.wait()
        for _ in range(200):
            try:
                hits = index.search("shared topic widget", limit=20)
                # Every hit is a live, fully registered tool, and scores are ordered.
                assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
                for h in hits:
                    assert h.summary.startswith("Shared topic widget")
                index.namespaces()
                index.list_tools(limit=50)
            except BaseException as e:  # collected and re-raised in the main thread
                errors.append(e)
                raise

    with ThreadPoolExecutor(N_WRITERS + 4) as pool:
        futures = [pool.submit(writer, w) for w in range(N_WRITERS)] + [pool.submit(reader) for _ in range(4)]
        for f in futures:
            f.result()
    assert not errors
    expected = N_WRITERS * (PER_WRITER - PER_WRITER // 4)
    assert len(index) == expected
    assert sum(n.tool_count for n in index.namespaces()) == expected
    # Search agrees with the registry: every live tool is findable, no removed one is.
    hits = index.search("shared topic widget", limit=expected + 50)
    assert len(hits) == expected
    assert {h.id for h in hits} == {t.id for t in index.list_tools(limit=1000).tools}
    versions = [e.version for e in events]
    assert sorted(versions) == list(range(1, len(events) + 1))
    assert index.version == len(events)


@pytest.mark.anyio
async def test_tasks_registering_and_searching_concurrently() -> None:
    index = InMemoryIndex()
    seen: list[int] = []
    index.subscribe(lambda e: seen.append(e.version))
    done = anyio.Event()
    searches = 0

    async def register(w: int) -> None:
        for i in range(PER_WRITER):
            # Hand the tool to a worker thread so tasks really interleave with the other threads.
            await anyio.to_thread.run_sync(index.register, make(w, i), BackendRef.local("f"))

    async def search() -> None:
        nonlocal searches
        while not done.is_set():
            hits = await anyio.to_thread.run_sync(lambda: index.search("widget", limit=5))
            assert len(hits) <= 5
            searches += 1
            await anyio.lowlevel.checkpoint()

    with anyio.fail_after(HANG_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(search)
            async with anyio.create_task_group() as writers:
                for w in range(N_WRITERS):
                    writers.start_soon(register, w)
            done.set()
    assert len(index) == N_WRITERS * PER_WRITER
    assert seen == list(range(1, N_WRITERS * PER_WRITER + 1))
    assert searches > 0
    assert index.search("writer 3 widget number 7")[0].id == "w3:tool_3_7"
