"""The OpenAPI provider against a real HTTP service (uvicorn + starlette) started by the test on 127.0.0.1."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import socket
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anyio
import httpx2
import pytest
import structlog
from mcp_support import SERVERS_DIR, RunningServer

from toolcode import Toolbox
from toolindex import InMemoryIndex
from toolrun import (
    AddressRefusedError,
    BackendUnavailableError,
    ConfigError,
    DefaultRunner,
    HTTPStatusError,
    InputValidationError,
    OpenAPIProvider,
    ProviderBackend,
    ResponseTooLargeError,
    ToolExecutionError,
    ToolTimeoutError,
    UpstreamProtocolError,
    backends_from_config,
    load_config,
    redact,
)
from toolrun._openapi_target import PathTemplate

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

HANG_S = 60
"""Seconds after which a call or a wait counts as hung: a bound for a hang, not a speed (a busy machine
stretches calls that take milliseconds here to seconds)."""

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
def other(http_server: Callable[..., RunningServer]) -> RunningServer:
    """The same service on another port: another origin."""
    env = {**os.environ, "PETS_TOKEN": TOKEN, "PETS_API_KEY": API_KEY}
    return http_server(
        [sys.executable, str(SERVICE), "--port", "{port}"], ready=r"Uvicorn running on", env=env, path=""
    )


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    yield {"PETS_TOKEN": TOKEN, "PETS_API_KEY": API_KEY}


async def seen_by(server: RunningServer) -> list[dict[str, Any]]:
    """Every request the service received (method, raw_path, query, authorization, x-api-key)."""
    async with httpx2.AsyncClient() as client:
        return (await client.get(f"{server.url}/_test/seen")).json()


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
        # The service got the key (or it would answer 401) and quotes it back: the result masks it.
        assert out == {"city": "Paris", "sunny": True, "query": "city=Paris&appid=***"}
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
        with anyio.fail_after(HANG_S), pytest.raises(ToolTimeoutError, match="pets:slow"):
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
        with anyio.fail_after(HANG_S), pytest.raises(ToolTimeoutError) as caught:
            await runner.run("animals:slow")
        assert caught.value.tool_id == "animals:slow"
        assert "'animals:slow' timed out after 0.5 s" in str(caught.value)


async def test_an_oversized_response_fails_without_being_read_whole(
    service: RunningServer, env: dict[str, str]
) -> None:
    async with runner_for(entry(service, maxResponseBytes=65536), env) as runner:
        too_large = r"larger than its bound of 65,536 bytes \(maxResponseBytes\)"
        with pytest.raises(ResponseTooLargeError, match=too_large) as e:
            await runner.run("pets:big")
        assert (e.value.tool_id, e.value.limit) == ("pets:big", 65536)
        # The same error, under the id the index gives the tool in another namespace.
        provider = OpenAPIProvider("pets", SPEC, base_url=service.url, max_response_bytes=65536)
        async with DefaultRunner(InMemoryIndex(), [ProviderBackend("pets", provider, namespace="animals")]) as other:
            with structlog.testing.capture_logs():
                await other.attach()
            with pytest.raises(ResponseTooLargeError) as e:
                await other.run("animals:big")
            assert e.value.tool_id == "animals:big"


async def test_a_compressed_response_is_bounded_as_it_inflates(service: RunningServer, env: dict[str, str]) -> None:
    # 8 MiB of JSON gzip-compressed to ~40 KB: the client inflated each chunk it read whole before
    # the bound counted it. Uncompressed replies are asked for; a compressed one inflates 64 KiB at a time.
    async with runner_for(entry(service, maxResponseBytes=65536), env) as runner:
        with pytest.raises(ResponseTooLargeError):
            await runner.run("pets:big", {"encoding": "gzip"})
        with pytest.raises(UpstreamProtocolError, match=r"compressed \(br\), which is not read"):
            await runner.run("pets:big", {"encoding": "br"})
    asked = [s["accept-encoding"] for s in await seen_by(service) if s["raw_path"] == "/big"]
    assert asked[-2:] == ["identity", "identity"]


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


# -- path parameters are data -----------------------------------------------------------------


def _path(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}, **extra}


def _op(op_id: str, *params: dict[str, Any]) -> dict[str, Any]:
    answer = {"description": "what arrived", "content": {"application/json": {"schema": {"type": "object"}}}}
    return {"operationId": op_id, "parameters": list(params), "responses": {"200": answer}}


TENANTS: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Tenants", "version": "1"},
    "paths": {
        "/tenants/{tenant}": {"delete": _op("deleteTenant", _path("tenant"))},
        "/tenants/{tenant}/items": {"get": _op("listItems", _path("tenant"))},
        "/tenants/{tenant}/items/{id}": {"delete": _op("deleteItem", _path("tenant"), _path("id"))},
        "/labels/{label}": {"get": _op("byLabel", _path("label", style="label"))},
        "/matrix/{m}": {"get": _op("byMatrix", _path("m", style="matrix"))},
        "/tags/{tags}": {"get": _op("byTags", _path("tags", schema={"type": "array", "items": {"type": "string"}}))},
        "/json/{doc}": {
            "get": _op(
                "byJson",
                {"name": "doc", "in": "path", "required": True, "content": {"application/json": {"schema": {}}}},
            )
        },
    },
}
"""An API under a base path (``/v1``, the service's catch-all that says what arrived)."""


@asynccontextmanager
async def tenants(service: RunningServer, namespace: str = "tenants") -> AsyncIterator[DefaultRunner]:
    provider = OpenAPIProvider("tenants", TENANTS, base_url=f"{service.url}/v1/")
    async with DefaultRunner(InMemoryIndex(), [ProviderBackend("tenants", provider, namespace=namespace)]) as runner:
        with structlog.testing.capture_logs():
            await runner.attach()
        yield runner


async def test_a_path_value_that_would_move_through_the_path_is_refused_before_any_request(
    service: RunningServer,
) -> None:
    cases = [
        ("deleteItem", {"tenant": "acme", "id": ".."}, "id"),  # was DELETE /v1/tenants/acme: the tenant
        ("listItems", {"tenant": ".."}, "tenant"),  # was GET /v1/items
        ("listItems", {"tenant": "."}, "tenant"),  # was GET /v1/tenants/items
        ("listItems", {"tenant": ""}, "tenant"),  # /v1/tenants//items, which servers read as /v1/tenants/items
        ("byLabel", {"label": "."}, "label"),  # label style: '..'
        ("byLabel", {"label": ""}, "label"),  # label style: '.'
        ("byTags", {"tags": [".."]}, "tags"),
    ]
    async with tenants(service) as runner:
        for tool, args, refused in cases:
            with pytest.raises(InputValidationError) as caught:
                await runner.run(f"tenants:{tool}", args)
            assert [p.path for p in caught.value.problems] == [f"$.{refused}"], (tool, args)
            assert "a path parameter fills exactly one segment" in str(caught.value)
    # The error names the tool by its id in the index, whatever the namespace.
    async with tenants(service, namespace="acme") as runner:
        with pytest.raises(InputValidationError) as caught:
            await runner.run("acme:listItems", {"tenant": ".."})
        assert caught.value.tool_id == "acme:listItems"
    assert await seen_by(service) == []  # nothing was sent


async def test_path_values_reach_the_service_as_exactly_one_segment_each(service: RunningServer) -> None:
    cases = [
        ("deleteItem", {"tenant": "acme", "id": "group/project"}, "DELETE", "/v1/tenants/acme/items/group%2Fproject"),
        ("deleteItem", {"tenant": "acme", "id": "a/.b/c../..."}, "DELETE", "/v1/tenants/acme/items/a%2F.b%2Fc..%2F..."),
        ("deleteItem", {"tenant": "acme", "id": "..."}, "DELETE", "/v1/tenants/acme/items/..."),
        ("deleteItem", {"tenant": "acme", "id": "%2E%2E"}, "DELETE", "/v1/tenants/acme/items/%252E%252E"),
        ("listItems", {"tenant": "a?b#c"}, "GET", "/v1/tenants/a%3Fb%23c/items"),
        ("byLabel", {"label": "x/y"}, "GET", "/v1/labels/.x%2Fy"),
        ("byMatrix", {"m": ".."}, "GET", "/v1/matrix/;m=.."),
        ("byMatrix", {"m": "a/b"}, "GET", "/v1/matrix/;m=a%2Fb"),
        ("byTags", {"tags": ["a/b", ".."]}, "GET", "/v1/tags/a%2Fb,.."),
        ("byJson", {"doc": ".."}, "GET", "/v1/json/%22..%22"),
    ]
    async with tenants(service) as runner:
        for tool, args, method, raw_path in cases:
            assert (await runner.run(f"tenants:{tool}", args)).value == {"method": method, "raw_path": raw_path}
    assert [(r["method"], r["raw_path"]) for r in await seen_by(service)] == [(m, p) for _, _, m, p in cases]


async def test_a_path_value_holding_a_move_between_slashes_is_refused_before_any_request(
    service: RunningServer,
) -> None:
    # Each is one encoded segment here, but a front end that decodes the path before resolving dot
    # segments (nginx: '%2F'; IIS: '\\'; an NFKC step: full-width dots and slashes) reads a move.
    cases = [
        ("deleteItem", {"tenant": "acme", "id": "x/../.."}, "id"),  # nginx: DELETE /v1/tenants/acme, the tenant
        ("deleteItem", {"tenant": "acme", "id": "a/../b"}, "id"),  # nginx: DELETE /v1/tenants/acme/items/b
        ("deleteItem", {"tenant": "acme", "id": "x\\..\\.."}, "id"),
        ("deleteItem", {"tenant": "acme", "id": "x\uff0f\uff0e\uff0e\uff0f\uff0e\uff0e"}, "id"),
        ("deleteItem", {"tenant": "acme", "id": "\u2025/x"}, "id"),  # the two-dot leader is '..' under NFKC
        ("deleteItem", {"tenant": "acme", "id": "\uff0e\uff0e"}, "id"),
        ("listItems", {"tenant": "./x"}, "tenant"),
        ("byLabel", {"label": "x/.."}, "label"),
        ("byMatrix", {"m": "x/../.."}, "m"),
        ("byTags", {"tags": ["a", "b/../.."]}, "tags"),
        ("byJson", {"doc": "/../"}, "doc"),
    ]
    async with tenants(service) as runner:
        for tool, args, refused in cases:
            with pytest.raises(InputValidationError) as caught:
                await runner.run(f"tenants:{tool}", args)
            assert [p.path for p in caught.value.problems] == [f"$.{refused}"], (tool, args)
            assert "a path parameter fills exactly one segment" in str(caught.value)
    assert await seen_by(service) == []  # nothing was sent


async def test_no_argument_sends_a_second_credential_beside_the_configured_one(service: RunningServer) -> None:
    # A second Cookie header (Node joins them and its parsers keep the first `session`), `API_KEY`
    # beside `api_key` (ASP.NET reads both as one name, and binds the first), `X_Api_Key` beside
    # `X-Api-Key` (CGI and WSGI read both as HTTP_X_API_KEY): the service would act as whoever the
    # snippet's credential names, and the writes the policy allowed would land in that account.
    def param(name: str, where: str) -> dict[str, Any]:
        return {"name": name, "in": where, "schema": {"type": "string"}}

    names = [("session", "cookie"), ("theme", "cookie"), ("API_KEY", "query"), ("page", "query")]
    names += [("X_Api_Key", "header"), ("x-api-key", "header"), ("X-Trace", "header")]
    document = {
        "openapi": "3.0.3",
        "info": {"title": "Notes", "version": "1"},
        "paths": {"/headers": {"post": _op("whatArrived", *(param(n, w) for n, w in names))}},
    }
    session = "session=victim-session-5e1f"
    provider = OpenAPIProvider(
        "notes",
        document,
        base_url=service.url,
        headers={"cookie": session, "X-Api-Key": API_KEY},
        query={"api_key": TOKEN},
    )
    async with DefaultRunner(InMemoryIndex(), [ProviderBackend("notes", provider)]) as runner:
        with structlog.testing.capture_logs():
            await runner.attach()
        tool = runner.index.get("notes:whatArrived")
        assert tool is not None and list(tool.input_schema["properties"]) == ["theme", "page", "X-Trace"]
        seen = (await runner.run("notes:whatArrived", {"theme": "dark", "page": "2", "X-Trace": "t1"})).value
    headers = [(k, v) for k, v in seen["headers"] if k in ("cookie", "x-api-key", "x_api_key", "x-trace")]
    # One Cookie header, the configured cookie first; one API key; the arguments' own values beside
    # them (the configured values are secrets: the echo shows them masked).
    assert sorted(headers) == [("cookie", "***; theme=dark"), ("x-api-key", "***"), ("x-trace", "t1")]
    assert seen["query"] == "page=2&api_key=***"


async def test_an_answer_in_a_charset_python_does_not_read_is_read_as_utf_8(service: RunningServer) -> None:
    # An unknown name, or a codec that is no text encoding, failed every call with LookupError.
    query = {"name": "status", "in": "query", "schema": {"type": "integer"}}
    name = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
    document = {
        "openapi": "3.0.3",
        "info": {"title": "Text", "version": "1"},
        "paths": {
            "/charset/{name}": {"get": {**_op("text", name, query), "responses": {"200": {"description": "text"}}}}
        },
    }
    provider = OpenAPIProvider("text", document, base_url=service.url)
    async with DefaultRunner(InMemoryIndex(), [ProviderBackend("text", provider)]) as runner:
        with structlog.testing.capture_logs():
            await runner.attach()
        for charset in ("x-bogus", "zlib_codec", "rot13", "utf-8"):
            result = await runner.run("text:text", {"name": charset})
            assert [c["text"] for c in result.content] == ["café"], charset
        assert (await runner.run("text:text", {"name": "latin-1"})).content[0]["text"] == "cafÃ©"
        with pytest.raises(ToolExecutionError) as caught:
            await runner.run("text:text", {"name": "x-bogus", "status": 404})
    assert str(caught.value).endswith("/charset/x-bogus: café")


async def test_the_url_check_stops_a_request_that_another_way_of_building_gets_wrong(
    service: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stands for any other way of making the URL: the template filled with no rule about values.
    def naive(self: PathTemplate, values: dict[str, str]) -> str:
        base = self._base  # pyright: ignore[reportPrivateUsage]
        return base + re.sub(r"\{([^{}/]+)\}", lambda m: values[m.group(1)], self.template)

    monkeypatch.setattr(PathTemplate, "fill", naive)
    cases = [
        ("deleteItem", {"tenant": "acme", "id": ".."}, ["$.tenant", "$.id"]),
        ("listItems", {"tenant": ".."}, ["$.tenant"]),
        ("listItems", {"tenant": "."}, ["$.tenant"]),
        ("listItems", {"tenant": ""}, ["$.tenant"]),
        ("byLabel", {"label": "."}, ["$.label"]),
    ]
    async with tenants(service) as runner:
        for tool, args, named in cases:
            with pytest.raises(InputValidationError) as caught:
                await runner.run(f"tenants:{tool}", args)
            assert [p.path for p in caught.value.problems] == named, (tool, args)
        # What the check lets through is the template, filled.
        out = await runner.run("tenants:deleteItem", {"tenant": "acme", "id": "x"})
        assert out.value == {"method": "DELETE", "raw_path": "/v1/tenants/acme/items/x"}
    assert [r["raw_path"] for r in await seen_by(service)] == ["/v1/tenants/acme/items/x"]


async def test_a_snippet_gets_invalid_arguments_for_a_path_value_that_would_move(service: RunningServer) -> None:
    provider = OpenAPIProvider("tenants", TENANTS, base_url=f"{service.url}/v1")
    code = (
        "try:\n"
        "    run_tool('tenants:listItems', {'tenant': '..'})\n"
        "    __out = None\n"
        "except ToolError as e:\n"
        "    __out = str(e)"
    )
    async with Toolbox([ProviderBackend("tenants", provider)], engine="inprocess") as box:
        out = await box.codemode.execute(code)
    assert out.ok, out.error
    assert out.value.startswith("[invalid_arguments] tenants:listItems:") and "$.tenant" in out.value
    assert await seen_by(service) == []


async def test_a_snippet_cannot_override_the_method_through_an_object_in_the_query(service: RunningServer) -> None:
    # POST judged a write; with ?_method=DELETE, Laravel, Symfony and Rails run it as a DELETE.
    options = {"name": "options", "in": "query", "schema": {"type": "object"}}
    document = {**TENANTS, "paths": {"/notes/{id}/archive": {"post": _op("archive", _path("id"), options)}}}
    provider = OpenAPIProvider("notes", document, base_url=f"{service.url}/v1")
    code = (
        "try:\n"
        "    run_tool('notes:archive', {'id': '7', 'options': {'_method': 'DELETE'}})\n"
        "    refused = None\n"
        "except ToolError as e:\n"
        "    refused = str(e)\n"
        "__out = [refused, run_tool('notes:archive', {'id': '7', 'options': {'color': 'red'}})]"
    )
    async with Toolbox([ProviderBackend("notes", provider)], engine="inprocess") as box:
        out = await box.codemode.execute(code)
    assert out.ok, out.error
    refused, sent = out.value
    assert refused.startswith("[invalid_arguments] notes:archive:") and "$.options._method" in refused
    assert "method override" in refused
    assert sent == {"method": "POST", "raw_path": "/v1/notes/7/archive"}
    assert [(r["method"], r["query"]) for r in await seen_by(service)] == [("POST", "color=red")]


# -- credentials stay with their origin -------------------------------------------------------


async def test_credentials_never_go_to_another_origin_a_fetched_document_names(
    service: RunningServer, other: RunningServer, env: dict[str, str]
) -> None:
    # The document on A says the API is on B (a public host: a loopback one is refused for
    # another reason, see the test below), or on C.
    public = {"openapi": f"{service.url}/openapi-for?server=https://api.example.org"}
    elsewhere = {"openapi": f"{service.url}/openapi-for?server={other.url}"}
    for creds in ({"headers": {"Authorization": "Bearer ${PETS_TOKEN}"}}, {"query": {"appid": "${PETS_API_KEY}"}}):
        with pytest.raises(ConfigError) as caught:
            async with runner_for({**public, **creds}, env):
                pass
        assert caught.value.field == "baseUrl"
        assert "to https://api.example.org, the document's server URL" in caught.value.reason
        assert f"only to {service.url}, where the document was fetched from" in caught.value.reason
    # Without credentials either: B is a loopback address on another origin than the document's,
    # which a document may not point calls at (see the test below).
    with pytest.raises(ConfigError) as caught:
        async with runner_for(elsewhere, env):
            pass
    assert caught.value.field == "baseUrl" and "a loopback, private or link-local address" in caught.value.reason
    # baseUrl names B: the credentials go there, and not to A with the document's request.
    async with runner_for(
        {**elsewhere, "baseUrl": other.url, "headers": {"Authorization": "Bearer ${PETS_TOKEN}"}}, env
    ) as runner:
        assert (await runner.run("pets:pets_create", {"name": "Nemo"})).value["name"] == "Nemo"
    at_b = await seen_by(other)
    assert [(r["method"], r["raw_path"], r["authorization"]) for r in at_b] == [("POST", "/pets", f"Bearer {TOKEN}")]
    # The document's requests: with the headers only while A was the credentials' origin (no
    # baseUrl); never with the query credentials; not once baseUrl named B.
    assert [(r["raw_path"], "appid" in r["query"], r["authorization"]) for r in await seen_by(service)] == [
        ("/openapi-for", False, f"Bearer {TOKEN}"),
        ("/openapi-for", False, None),
        ("/openapi-for", False, None),
        ("/openapi-for", False, None),
    ]


async def test_a_document_never_points_calls_at_this_host_s_network(
    service: RunningServer, other: RunningServer, env: dict[str, str]
) -> None:
    # The document on A names B, a loopback address (as it would the metadata service at
    # 169.254.169.254, or an admin port): plainly, relative to the document, through a variable.
    host, port = "127.0.0.1", other.url.rsplit(":", 1)[1]
    servers = [f"http://{host}:{port}", f"//{host}:{port}", "http://{h}:" + port, f"http://2130706433:{port}"]
    for server in servers:
        with pytest.raises(ConfigError) as caught:
            url = f"{service.url}/openapi-for?server={quote(server, safe='')}&h={host}"
            async with runner_for({"openapi": url}, env):
                pass
        assert caught.value.field == "baseUrl", server
        assert "a loopback, private or link-local address, on another origin than the document's" in caught.value.reason
    # The document's own origin is its own to name, and baseUrl is the configuration's word.
    async with runner_for({"openapi": f"{service.url}/openapi.yaml"}, env) as runner:
        assert (await runner.run("pets:getPet", {"petId": 1})).value["name"] == "Rex"
    async with runner_for({"openapi": f"{service.url}/openapi-for?server={other.url}", "baseUrl": other.url}, env) as r:
        assert (await r.run("pets:getPet", {"petId": 2})).value["name"] == "Tom"
    assert [r["raw_path"] for r in await seen_by(other)] == ["/pets/2"]


REBOUND = "pets.rebound.test"
"""A host name that resolves to 127.0.0.1 in this process only (see ``rebound``)."""


@pytest.fixture
def rebound(monkeypatch: pytest.MonkeyPatch) -> str:
    """:data:`REBOUND` resolves to 127.0.0.1, as an attacker's name resolves to the metadata service.

    The resolver itself is patched (every lookup the process makes goes through it), and only for
    that name: no network is needed, and nothing above the resolver knows.
    """
    real = socket.getaddrinfo

    def getaddrinfo(host: bytes | str | None, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None and name.rstrip(".").lower() == REBOUND:
            return real("127.0.0.1", *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return REBOUND


async def test_a_document_s_host_name_that_resolves_into_this_host_s_network_is_refused_when_connecting(
    service: RunningServer, other: RunningServer, rebound: str
) -> None:
    # The document on A names a host name (no address to see in it) that resolves to B on loopback:
    # as `metadata.attacker.example` would to 169.254.169.254, or a name rebound after a check.
    port = other.url.rsplit(":", 1)[1]
    server = f"http://{rebound}:{port}"
    document = f"{service.url}/openapi-for?server={quote(server, safe='')}"
    code = (
        "try:\n"
        "    run_tool('pets:getPet', {'petId': 1})\n"
        "    refused = None\n"
        "except ToolError as e:\n"
        "    refused = str(e)\n"
        "__out = refused"
    )
    with structlog.testing.capture_logs():
        async with Toolbox([ProviderBackend("pets", OpenAPIProvider("pets", document))], engine="inprocess") as box:
            out = await box.codemode.execute(code)
    assert out.ok, out.error
    assert out.value is not None, "the call went through"
    message = out.value
    assert message.startswith("[config_error] pets:getPet: ")
    assert f"{rebound!r}, which resolves to 127.0.0.1, a loopback, private or link-local address" in message
    assert "tool 'pets:getPet' was not called" in message and "set baseUrl" in message
    assert await seen_by(other) == []  # refused before connecting: nothing reached B
    # baseUrl naming that host is the configuration's word.
    provider = OpenAPIProvider("pets", document, base_url=server)
    async with Toolbox([ProviderBackend("pets", provider)], engine="inprocess") as box:
        out = await box.codemode.execute("__out = run_tool('pets:getPet', {'petId': 2})['name']")
    assert out.ok and out.value == "Tom", out.error
    assert [r["raw_path"] for r in await seen_by(other)] == ["/pets/2"]


async def test_a_proxy_of_the_environment_does_not_carry_calls_to_a_server_the_document_chose(
    service: RunningServer, other: RunningServer, rebound: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # B stands for the proxy: it would resolve the name itself, where no address can be checked.
    port = other.url.rsplit(":", 1)[1]
    documents = {
        "api.example.org": f"{service.url}/openapi-for?server=http://api.example.org",
        rebound: f"{service.url}/openapi-for?server={quote(f'http://{rebound}:{port}', safe='')}",
    }
    refused: dict[str, AddressRefusedError] = {}
    with monkeypatch.context() as env:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
            for variant in (name, name.lower()):
                env.delenv(variant, raising=False)
        env.setenv("HTTP_PROXY", other.url)
        # Connected to directly: the documents' origin, and the name that is then checked.
        env.setenv("NO_PROXY", f"127.0.0.1,{rebound}")
        for host, document in documents.items():
            async with DefaultRunner(
                InMemoryIndex(), [ProviderBackend("pets", OpenAPIProvider("pets", document))]
            ) as r:
                with structlog.testing.capture_logs():
                    await r.attach()
                with pytest.raises(AddressRefusedError) as caught:
                    await r.run("pets:getPet", {"petId": 1})
            refused[host] = caught.value
    through_proxy = refused["api.example.org"]
    assert through_proxy.tool_id == "pets:getPet" and through_proxy.address is None
    assert "a proxy of the environment" in str(through_proxy) and "NO_PROXY" in str(through_proxy)
    direct = refused[rebound]
    assert (direct.host, direct.address, direct.field) == (rebound, "127.0.0.1", "baseUrl")
    assert await seen_by(other) == []  # nothing went to the proxy, nor to what the name resolves to


async def test_without_base_url_credentials_go_to_the_origin_the_document_came_from(
    service: RunningServer, env: dict[str, str]
) -> None:
    authed = {"openapi": f"{service.url}/openapi.yaml", "headers": {"Authorization": "Bearer ${PETS_TOKEN}"}}
    async with runner_for(authed, env) as runner:
        assert (await runner.run("pets:pets_create", {"name": "Dory"})).value["name"] == "Dory"
    assert [(r["raw_path"], r["authorization"]) for r in await seen_by(service)] == [
        ("/openapi.yaml", f"Bearer {TOKEN}"),
        ("/pets", f"Bearer {TOKEN}"),
    ]


async def test_redirects_are_never_followed_with_credentials(
    service: RunningServer, other: RunningServer, env: dict[str, str]
) -> None:
    creds = {"Authorization": "Bearer ${PETS_TOKEN}", "X-API-Key": "${PETS_API_KEY}"}
    # A call answered by a redirect to B.
    async with runner_for(entry(service, headers=creds, query={"appid": "${PETS_API_KEY}"}), env) as runner:
        with pytest.raises(ToolExecutionError) as caught:
            await runner.run("pets:redirect", {"to": f"{other.url}/pets"})
    assert "HTTP 307" in str(caught.value) and f"redirects are not followed (to {other.url}/pets)" in str(caught.value)
    # The document's request redirected to B.
    moved = {"openapi": f"{service.url}/redirect?to={other.url}/openapi.yaml", "baseUrl": service.url, "headers": creds}
    with pytest.raises(BackendUnavailableError, match=r"HTTP 307.*redirects are not followed"):
        async with runner_for(moved, env):
            pass
    assert await seen_by(other) == []
    assert [r["raw_path"] for r in await seen_by(service)] == ["/redirect", "/redirect"]


# -- a deadline on the document, and a start-up that can be cancelled --------------------------


async def test_a_document_that_trickles_in_is_bounded_by_connect_timeout(
    service: RunningServer, tmp_path: Path
) -> None:
    # One byte every 0.3 s: each read is quick, the whole document would take 25 minutes.
    slow = {"openapi": f"{service.url}/drip.yaml?every=0.3", "connectTimeout": 1}
    pets = {"openapi": str(SPEC), "baseUrl": service.url}
    config = {"mcpServers": {"slow": slow, "pets": pets}}
    with anyio.fail_after(60):  # a real hang only: 60 times the deadline
        async with Toolbox.from_config(config, engine="inprocess") as box:
            out = await box.codemode.execute("__out = run_tool('pets:getPet', {'petId': 1})['name']")
    assert list(box.failed) == ["slow"]
    assert "the document did not arrive within 1 s (connectTimeout)" in box.failed["slow"]
    assert out.ok and out.value == "Rex"


async def test_cancelling_start_up_stops_it_at_once(service: RunningServer) -> None:
    config = {"mcpServers": {"slow": {"openapi": f"{service.url}/drip.yaml?every=0.3", "connectTimeout": 600}}}
    box = Toolbox.from_config(config, engine="inprocess")
    entered = False

    async def start() -> None:
        nonlocal entered
        async with box:
            entered = True

    with anyio.fail_after(60):  # a real hang only: the deadline is 600 s
        async with httpx2.AsyncClient(timeout=None) as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(start)
                await client.get(f"{service.url}/_test/dripping")  # the document has begun to arrive
                tg.cancel_scope.cancel()
            # The cancelled start-up closed what it had opened: the service saw the fetch end.
            assert (await client.get(f"{service.url}/_test/drip-ended")).status_code == 204
    assert not entered
    [backend] = box.backends
    assert isinstance(backend, ProviderBackend)
    with pytest.raises(BackendUnavailableError, match="the provider is closed"):
        await backend.provider.list_tools()
