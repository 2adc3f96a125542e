"""The OpenAPI provider against a real HTTP service (uvicorn + starlette) started by the test on 127.0.0.1."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anyio
import pytest
import structlog
from mcp_support import SERVERS_DIR, RunningServer

from toolcode import Toolbox
from toolindex import InMemoryIndex
from toolrun import (
    BackendUnavailableError,
    ConfigError,
    DefaultRunner,
    HTTPStatusError,
    InputValidationError,
    OpenAPIProvider,
    ProviderBackend,
    ToolExecutionError,
    ToolTimeoutError,
    backends_from_config,
    load_config,
    redact,
)

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SERVICE = SERVERS_DIR / "openapi_service.py"
SPEC = SERVERS_DIR / "openapi_service.yaml"
TOKEN = "pets-bearer-0f3a9c71"
API_KEY = "pets-key-7d21be55"


@pytest.fixture
def service(http_server: Callable[..., RunningServer]) -> RunningServer:
    env = {**os.environ, "PETS_TOKEN": TOKEN, "PETS_API_KEY": API_KEY}
    return http_server(
        [sys.executable, str(SERVICE), "--port", "{port}"], ready=r"Uvicorn running on", env=env, path=""
    )


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    yield {"PETS_TOKEN": TOKEN, "PETS_API_KEY": API_KEY}


@asynccontextmanager
async def runner_for(entry: dict[str, Any], env: dict[str, str]) -> AsyncIterator[DefaultRunner]:
    config = load_config({"mcpServers": {"pets": entry}}, env=env)
    backends = backends_from_config(config)
    assert [type(b) for b in backends] == [ProviderBackend]
    async with DefaultRunner(InMemoryIndex(), backends) as runner:
        with structlog.testing.capture_logs():
            await runner.attach()
        yield runner


def entry(service: RunningServer, **extra: Any) -> dict[str, Any]:
    return {"openapi": str(SPEC), "baseUrl": service.url, **extra}


async def test_path_query_header_and_cookie_parameters_reach_the_service(
    service: RunningServer, env: dict[str, str]
) -> None:
    async with runner_for(entry(service), env) as runner:
        args = {
            "word": "a b/c",
            "q": "x&y=z",
            "ids": [3, 1],
            "filter": {"color": "red"},
            "X-Request-Id": "req-42",
            "session": "s1",
        }
        seen = (await runner.run("pets:echo", args)).value
    assert seen["word"] == "a b/c"
    assert seen["raw_path"] == "/echo/a%20b%2Fc"  # one path segment, encoded
    assert seen["query"] == [["filter[color]", "red"], ["ids", "3,1"], ["q", "x&y=z"]]
    assert seen["request_id"] == "req-42"
    assert seen["cookies"] == {"session": "s1"}


async def test_query_arrays_typed_path_parameters_and_json_results(service: RunningServer, env: dict[str, str]) -> None:
    async with runner_for(entry(service), env) as runner:
        pets = (await runner.run("pets:listPets", {"tags": ["cat", "dog"], "limit": 5})).value
        assert {p["name"] for p in pets} == {"Rex", "Tom"}
        assert (await runner.run("pets:getPet", {"petId": 2})).value == {"id": 2, "name": "Tom", "tag": "cat"}
        # The schema says integer ≥ 1: checked before any request is made.
        with pytest.raises(InputValidationError, match="petId"):
            await runner.run("pets:getPet", {"petId": "two"})
        with pytest.raises(InputValidationError):
            await runner.run("pets:getPet", {"petId": 0})


async def test_bearer_token_from_the_environment_authorises_a_json_body(
    service: RunningServer, env: dict[str, str]
) -> None:
    authed = entry(service, headers={"Authorization": "Bearer ${PETS_TOKEN}"})
    async with runner_for(authed, env) as runner:
        # NewPet's properties are arguments of their own.
        made = (await runner.run("pets:pets_create", {"name": "Nemo", "tag": None})).value
        assert made["name"] == "Nemo" and made["id"] >= 3
    async with runner_for(entry(service), env) as runner:
        with pytest.raises(ToolExecutionError) as caught:
            await runner.run("pets:pets_create", {"name": "Dory"})
    err = caught.value
    assert "HTTP 401" in str(err) and "a bearer token is required" in str(err)
    assert isinstance(err.__cause__, HTTPStatusError) and err.__cause__.status == 401


async def test_api_key_header_from_the_environment(service: RunningServer, env: dict[str, str]) -> None:
    async with runner_for(entry(service, headers={"X-API-Key": "${PETS_API_KEY}"}), env) as runner:
        assert (await runner.run("pets:whoami")).value == "the test suite"  # text/plain: a text result
    async with runner_for(entry(service, headers={"X-API-Key": "wrong-key-123"}), env) as runner:
        with pytest.raises(ToolExecutionError, match=r"HTTP 403.*wrong or missing API key"):
            await runner.run("pets:whoami")


async def test_an_api_key_the_entry_sends_in_the_query_and_a_header_is_not_an_argument(
    service: RunningServer, env: dict[str, str]
) -> None:
    keyed = entry(service, query={"appid": "${PETS_API_KEY}"}, headers={"x-API-key": "${PETS_API_KEY}"})
    async with runner_for(keyed, env) as runner:
        schema = runner.index.get("pets:weather").input_schema
        assert set(schema["properties"]) == {"city"} and schema["required"] == ["city"]
        out = (await runner.run("pets:weather", {"city": "Paris"})).value
        assert out == {"city": "Paris", "sunny": True, "query": f"city=Paris&appid={API_KEY}"}
        with pytest.raises(InputValidationError, match="appid"):  # not the model's to send
            await runner.run("pets:weather", {"city": "Paris", "appid": "mine"})
    # A wrong key, one that a URL carries percent-encoded: the service quotes the URL and the key
    # back, the error shows neither.
    wrong = "wrong+key/0123 x"
    bad = entry(service, query={"appid": wrong}, headers={"X-API-Key": "${PETS_API_KEY}"})
    async with runner_for(bad, env) as runner:
        with pytest.raises(ToolExecutionError) as caught:
            await runner.run("pets:weather", {"city": "Paris"})
    text = str(caught.value)
    assert "HTTP 401" in text and "wrong API key: appid=" in text and "city=Paris" in text
    for shown in (wrong, quote(wrong, safe=""), quote_plus(wrong)):
        assert shown not in text and shown not in str(caught.value.__cause__)
    # Without them in the entry, the document's parameters are arguments.
    async with runner_for(entry(service), env) as runner:
        assert set(runner.index.get("pets:weather").input_schema["properties"]) == {"city", "appid", "x-api-key"}


async def test_a_body_that_is_not_an_object_is_the_body_argument(service: RunningServer, env: dict[str, str]) -> None:
    async with runner_for(entry(service), env) as runner:
        tool = runner.index.get("pets:putNoteLines")
        assert set(tool.input_schema["properties"]) == {"id", "body"}
        result = await runner.run("pets:putNoteLines", {"id": "n1", "body": ["one", "two", "three"]})
    assert result.value == {"id": "n1", "lines": 3}


async def test_errors_carry_the_status_and_a_redacted_excerpt(service: RunningServer, env: dict[str, str]) -> None:
    async with runner_for(entry(service, headers={"Authorization": "Bearer ${PETS_TOKEN}"}), env) as runner:
        with pytest.raises(ToolExecutionError) as caught:
            await runner.run("pets:fail")
        assert "HTTP 500" in str(caught.value) and "database on fire" in str(caught.value)
        # The service quotes the token it was sent: the error never does.
        assert TOKEN not in str(caught.value) and "***" in str(caught.value)
        assert TOKEN not in repr(caught.value.content) and TOKEN not in str(caught.value.__cause__)
        with pytest.raises(ToolExecutionError, match=r"HTTP 404.*no pet 99") as missing:
            await runner.run("pets:getPet", {"petId": 99})
        assert isinstance(missing.value.__cause__, HTTPStatusError) and missing.value.__cause__.status == 404
        assert redact(TOKEN) == "***"


async def test_a_slow_service_times_out(service: RunningServer, env: dict[str, str]) -> None:
    async with runner_for(entry(service, timeout=0.5), env) as runner:
        with anyio.fail_after(10), pytest.raises(ToolTimeoutError, match="pets:slow"):
            await runner.run("pets:slow")
        # The provider is still usable afterwards.
        assert (await runner.run("pets:getPet", {"petId": 1})).value["name"] == "Rex"


async def test_a_timeout_names_the_tool_by_its_id_under_another_namespace(service: RunningServer) -> None:
    # The provider times the call out itself; the error names the tool as the index knows it.
    provider = OpenAPIProvider("pets", SPEC, base_url=service.url, timeout=0.5)
    backend = ProviderBackend("pets", provider, namespace="animals")
    async with DefaultRunner(InMemoryIndex(), [backend]) as runner:
        with structlog.testing.capture_logs():
            await runner.attach()
        with anyio.fail_after(10), pytest.raises(ToolTimeoutError) as caught:
            await runner.run("animals:slow")
        assert caught.value.tool_id == "animals:slow"
        assert "'animals:slow' timed out after 0.5 s" in str(caught.value)


async def test_an_oversized_response_fails_without_being_read_whole(
    service: RunningServer, env: dict[str, str]
) -> None:
    async with runner_for(entry(service, maxResponseBytes=65536), env) as runner:
        with pytest.raises(ToolExecutionError, match=r"larger than 65,536 bytes \(maxResponseBytes\)"):
            await runner.run("pets:big")


async def test_the_document_can_come_from_the_service_itself(service: RunningServer, env: dict[str, str]) -> None:
    # No baseUrl: the document's relative server URL ("/") is resolved against where it came from.
    async with runner_for({"openapi": f"{service.url}/openapi.yaml"}, env) as runner:
        assert (await runner.run("pets:getPet", {"petId": 1})).value["name"] == "Rex"
        # An operation without operationId is named after its method and path.
        assert runner.index.get("pets:delete_pets_petId").annotations == {
            "readOnlyHint": False,
            "openWorldHint": True,
            "destructiveHint": True,
            "idempotentHint": True,
            "title": "Delete a pet",
        }
    # The same document packed with gzip: unpacked within the byte cap.
    async with runner_for({"openapi": f"{service.url}/openapi.yaml.gz"}, env) as runner:
        assert (await runner.run("pets:getPet", {"petId": 1})).value["name"] == "Rex"
    assert SPEC.stat().st_size > 2_000 > len(gzip.compress(SPEC.read_bytes()))
    small = OpenAPIProvider("pets", f"{service.url}/openapi.yaml.gz", max_document_bytes=2_000)
    with pytest.raises(ConfigError, match="unpacks to more than 2,000 bytes"):
        await small.list_tools()
    await small.aclose()


async def test_a_service_that_is_down_is_unavailable(env: dict[str, str]) -> None:
    from mcp_support import free_port

    down = {"openapi": str(SPEC), "baseUrl": f"http://127.0.0.1:{free_port()}"}
    async with runner_for(down, env) as runner:
        with pytest.raises(BackendUnavailableError, match="cannot connect"):
            await runner.run("pets:getPet", {"petId": 1})
    config = load_config({"mcpServers": {"pets": {"openapi": f"http://127.0.0.1:{free_port()}/openapi.yaml"}}})
    backend = backends_from_config(config)[0]
    with pytest.raises(BackendUnavailableError, match="openapi:pets"):
        await backend.attach(InMemoryIndex())


async def test_toolbox_serves_mcp_servers_and_an_openapi_service_from_one_config(
    service: RunningServer, tmp_path: Path, mcp_servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(SPEC, tmp_path / "pets.yaml")
    monkeypatch.setenv("PETS_TOKEN", TOKEN)
    config = tmp_path / "toolcode.json"
    servers = {
        "time": mcp_servers["time"],
        # A relative path: from the config file's folder.
        "pets": {"openapi": "pets.yaml", "baseUrl": service.url, "headers": {"Authorization": "Bearer ${PETS_TOKEN}"}},
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    code = (
        "pets = run_tool('pets:listPets', {'limit': 10})\n"
        "made = run_tool('pets:pets_create', {'name': 'Nemo'})\n"
        "now = run_tool('time:get_current_time', {'timezone': 'UTC'})\n"
        "try:\n"
        "    run_tool('pets:getPet', {'petId': 404})\n"
        "    missing = None\n"
        "except ToolError as e:\n"
        "    missing = str(e)\n"
        "__out = {'names': sorted(p['name'] for p in pets), 'made': made['name'], "
        "'tz': now['timezone'], 'missing': missing}"
    )
    async with Toolbox.from_config(config, engine="inprocess") as box:
        assert not box.failed
        hits = box.index.search("add a pet", limit=3)
        assert hits[0].id == "pets:pets_create"
        out = await box.codemode.execute(code)
    assert out.ok, out.error
    assert out.value["names"][:2] == ["Rex", "Tom"] and out.value["made"] == "Nemo"
    assert out.value["tz"] == "UTC"
    assert "HTTP 404" in out.value["missing"]
