"""``toolcode.search``: semantic search in the code-mode core; weak matches marked, never left out."""

from __future__ import annotations

import pytest

from toolcode import ConfigurationError, Settings, Toolbox
from toolcode._settings import SearchSettings
from toolindex import DEFAULT_WEAK_RELEVANCE
from toolindex import _semantic as semantic_module
from toolrun import LocalBackend

pytestmark = pytest.mark.anyio


def _backend() -> LocalBackend:
    local = LocalBackend()

    @local.tool(namespace="weather")
    def get_forecast(city: str) -> str:
        """Forecast of rain, wind and temperature for a city."""
        return f"sunny in {city}"

    @local.tool(namespace="mail")
    def send_email(to: str, body: str) -> str:
        """Send an email message to a recipient."""
        return "sent"

    return local


async def test_by_default_search_is_semantic_and_marks_weak_matches_with_a_hint() -> None:
    async with Toolbox([_backend()], engine="inprocess") as box:
        assert box.index.semantic and box.index.weak_relevance == DEFAULT_WEAK_RELEVANCE
        cm = box.codemode
        found = await cm.search_tools("will it be sunny tomorrow in Lisbon")
        assert found.hits[0].id == "weather:get_forecast" and not found.hits[0].weak and found.hint is None
        unserved = await cm.search_tools("fold the laundry and water the plants in the garden")
        assert unserved.hits and all(h.weak for h in unserved.hits)
        assert unserved.hint is not None and "weak" in unserved.hint
        assert "list_namespaces()" in unserved.hint and "list_tools(" in unserved.hint
        # The same answer inside a snippet: one core, every door.
        out = await cm.execute('__out = search_tools("fold the laundry and water the plants in the garden")')
        assert out.ok and out.value == unserved.model_dump(mode="json"), out


async def test_weak_relevance_zero_marks_nothing() -> None:
    settings = Settings(search=SearchSettings(weak_relevance=0))
    async with Toolbox([_backend()], settings=settings, engine="inprocess") as box:
        assert box.index.semantic and box.index.weak_relevance is None
        found = await box.codemode.search_tools("fold the laundry and water the plants")
        assert found.hits and not any(h.weak for h in found.hits) and found.hint is None


async def test_semantic_off_keeps_lexical_search() -> None:
    settings = Settings(search=SearchSettings(semantic=False))
    async with Toolbox([_backend()], settings=settings, engine="inprocess") as box:
        assert not box.index.semantic
        result = await box.codemode.search_tools("fold the laundry")
        assert result.hits == [] and result.hint is not None and "list_namespaces()" in result.hint


def test_semantic_on_without_the_extra_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic_module, "_loaded", [])
    monkeypatch.setattr(semantic_module, "_MODEL_PACKAGE", "no_such_model_package_here")
    with pytest.raises(ConfigurationError) as info:
        SearchSettings(semantic=True).build_index()
    assert info.value.field == "toolcode.search.semantic" and "toolindex[semantic]" in info.value.reason
    # Unset: lexical search, quietly.
    assert not SearchSettings().build_index().semantic


def test_search_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="weak_relevance"):
        Settings.model_validate({"search": {"weak_relevance": 2}})
    # The retired setting says what replaced it.
    with pytest.raises(ValueError, match=r"min_relevance is retired.*weak_relevance"):
        Settings.model_validate({"search": {"min_relevance": 0.2}})
    with pytest.raises(ValueError, match="sematic"):
        Settings.model_validate({"search": {"sematic": True}})
