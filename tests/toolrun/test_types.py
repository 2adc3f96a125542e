"""Result value semantics and chain result helpers."""

from __future__ import annotations

from toolindex import BackendRef
from toolrun import BackendResult, ChainResult, ChainStep, RunResult, StepResult, ToolExecutionError

REF = BackendRef.local("local:t")


def test_value_prefers_structured() -> None:
    r = RunResult("local:t", REF, {"a": 1}, ({"type": "text", "text": "ignored"},))
    assert r.value == {"a": 1}


def test_value_joins_text_blocks_when_there_is_no_structured_value() -> None:
    blocks = ({"type": "text", "text": "one"}, {"type": "text", "text": "two"})
    assert RunResult("local:t", REF, None, blocks).value == "one\ntwo"


def test_value_keeps_mixed_blocks_as_a_list() -> None:
    blocks = ({"type": "text", "text": "caption"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"})
    assert RunResult("local:t", REF, None, blocks).value == list(blocks)


def test_value_of_an_empty_result_is_none() -> None:
    assert RunResult("local:t", REF, None).value is None


def test_backend_result_error_is_not_part_of_equality() -> None:
    a = BackendResult(None, is_error=True, error=ValueError("x"))
    b = BackendResult(None, is_error=True, error=ValueError("y"))
    assert a == b
    assert "ValueError" not in repr(a)


def test_chain_result_final_and_ok() -> None:
    ok = StepResult(ChainStep("t"), 0, RunResult("local:t", REF, 1), None, 1.0)
    bad = StepResult(ChainStep("t"), 1, None, ToolExecutionError("local:t", "boom"), 1.0)
    assert ok.ok and not bad.ok
    assert ChainResult((ok, bad), aborted=True, duration_ms=2.0).final is ok.result
    assert ChainResult((bad,), aborted=True, duration_ms=1.0).final is None


def test_results_keep_their_dataclass_behaviour() -> None:
    # RunResult and BackendResult get a cheaper __init__ (they are built on every call): same
    # signature, defaults, equality, hashing and immutability as the generated one.
    import dataclasses
    import inspect
    import pickle

    import pytest

    assert list(inspect.signature(RunResult).parameters) == [
        "tool_id", "backend", "structured", "content", "is_error", "duration_ms"
    ]  # fmt: skip
    assert list(inspect.signature(BackendResult).parameters) == ["structured", "content", "is_error", "error"]
    r = RunResult("local:t", REF, {"a": 1})
    assert (r.content, r.is_error, r.duration_ms) == ((), False, 0.0)
    assert r == RunResult("local:t", REF, {"a": 1}, (), False, 0.0)
    assert r == RunResult(tool_id="local:t", backend=REF, structured={"a": 1})
    assert hash(BackendResult(1)) == hash(BackendResult(1))
    err = ValueError("x")
    b = BackendResult(None, ({"type": "text", "text": "x"},), is_error=True, error=err)
    assert b.error is err and b.is_error and b == BackendResult(None, ({"type": "text", "text": "x"},), True)
    assert pickle.loads(pickle.dumps(r)) == r
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.structured = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        RunResult("local:t")  # type: ignore[call-arg]
    # The object is of the class itself (not of the twin its __init__ borrows), and so is a subclass's.
    assert type(r) is RunResult and type(b) is BackendResult

    class Sub(RunResult):
        pass

    s = Sub("local:t", REF, 2)
    assert type(s) is Sub and (s.tool_id, s.structured, s.duration_ms) == ("local:t", 2, 0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.structured = 3  # type: ignore[misc]
