import pytest

from toolindex import InvalidToolIDError, ToolID


@pytest.mark.parametrize(
    ("raw", "namespace", "name", "version"),
    [
        ("get_weather", None, "get_weather", None),
        ("weather:get_weather", "weather", "get_weather", None),
        ("weather:get_weather:1.2.0", "weather", "get_weather", "1.2.0"),
        ("@org/server:tool.v2-x", "@org/server", "tool.v2-x", None),
    ],
)
def test_parse_and_format_round_trip(raw: str, namespace: str | None, name: str, version: str | None) -> None:
    tid = ToolID.parse(raw)
    assert (tid.namespace, tid.name, tid.version) == (namespace, name, version)
    assert str(tid) == raw
    assert tid.is_bare is (namespace is None)


def test_key_drops_the_version() -> None:
    assert ToolID.parse("ns:tool:3").key == "ns:tool"
    assert ToolID.parse("tool").key == "tool"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "the tool name is empty"),
        (":tool", "namespace before ':' is empty"),
        ("ns:", "the tool name is empty"),
        ("ns:tool:", "version after the second ':' is empty"),
        ("a:b:c:d", "at most 3 parts"),
        ("ns:bad name", "contains ' '"),
        ("ns:" + "x" * 129, "129 characters"),
        ("ns:tool:1 0", "version may use"),
    ],
)
def test_invalid_ids_say_what_is_wrong(raw: str, reason: str) -> None:
    with pytest.raises(InvalidToolIDError) as info:
        ToolID.parse(raw)
    assert reason in str(info.value)
    assert info.value.raw == raw


def test_version_without_namespace_is_rejected() -> None:
    with pytest.raises(InvalidToolIDError, match="needs a namespace"):
        ToolID(None, "tool", "1")


def test_non_string_is_rejected() -> None:
    with pytest.raises(InvalidToolIDError, match="expected a string"):
        ToolID.parse(42)  # type: ignore[arg-type]


def test_ids_order_and_hash() -> None:
    a, b = ToolID.parse("a:x"), ToolID.parse("b:x")
    assert sorted([b, a]) == [a, b]
    assert {a, ToolID.parse("a:x")} == {a}
