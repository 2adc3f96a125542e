"""Secrets never reach a caller through a result, on any path a result takes, nor through a tool's definition.

Every kind of registered secret meets a real upstream that echoes it back in a successful result
— as it is, percent-encoded in a link, base64-encoded alone and inside a ``Basic`` credential,
as a key: a stdio MCP server given it in ``env`` (and one that inherits it from the host's
environment), an HTTP MCP server given it in a header, an OpenAPI service given it as a query
key and a header (the real service on 127.0.0.1), and a local tool whose value the host
registered. The result is then looked for in every place it goes: the value a snippet sees, what
it prints, the trace, the stored result, the audit log, OpenTelemetry spans, log lines and error
messages.

The same upstreams also quote their credential in a tool's definition (description, title,
schemas, annotations, ``_meta``; an OpenAPI document written for the key's holder): the definition
is looked for in the index and its search, every discovery operation at a door and in a snippet,
the type checker's stubs and its diagnostics, and the log.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anyio
import mcp.shared._otel as mcp_otel
import pytest
import structlog
from mcp_support import SERVERS_DIR, RunningServer
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import toolcode._otel as otel
from toolcode import ExecuteOptions, Settings, Toolbox
from toolcode._settings import AuditSettings, PolicySettings, StateSettings
from toolcode._types import ToolCallRecord
from toolcode._view import CatalogView
from toolrun import LocalBackend, register_secrets

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

LEAKY = SERVERS_DIR / "leaky_server.py"
OPENAPI_SERVICE = SERVERS_DIR / "openapi_service.py"
OPENAPI_SPEC = SERVERS_DIR / "openapi_service.yaml"

# Each has characters that percent-encoding and base64 change, so every encoding differs from the value.
STDIO_SECRET = "stdio/Tk+9q=Lx!7v"  # a stdio server's env value
INHERITED_SECRET = "inh/Er1t+Ed=Zq!4w"  # the host's LEAKY_TOKEN, passed on by inheritEnv
HTTP_SECRET = "http/Hd+8w=Pn!2zk"  # an HTTP server's Authorization header
API_SECRET = "api/Qk+3m=Rv!5yg"  # an OpenAPI entry's query key and X-API-Key header
LOCAL_SECRET = "loc/Vt+6j=Wc!8ub"  # a value the host application registered
SECRETS = (STDIO_SECRET, INHERITED_SECRET, HTTP_SECRET, API_SECRET, LOCAL_SECRET)
# Words no tool uses, so a search for them finds a definition only by its secret.
WORDY_SECRET = "quokka/Zephyr+8=Marigold!3"
BUDGET = 400  # the run's value is larger: it is stored, and read back


def encodings(secret: str) -> dict[str, str]:
    """Every form of ``secret`` that must not be seen, by name."""
    data = secret.encode()
    out = {
        "plain": secret,
        "percent": quote(secret, safe=""),
        "percent (path)": quote(secret),
        "form-encoded": quote_plus(secret),
        "base64": base64.b64encode(data).decode(),
        "base64url": base64.urlsafe_b64encode(data).decode(),
    }
    # Inside a longer base64 text the secret starts at one of three bit offsets; the characters
    # that depend on its bytes alone are the same wherever it is (Basic base64("svc:" + secret)).
    for k in range(3):
        encoded = base64.b64encode(bytes(k) + data).decode()
        core = encoded[-(-8 * k // 6) : 8 * (k + len(data)) // 6]
        out[f"base64 at offset {k}"] = core
        out[f"base64url at offset {k}"] = core.replace("+", "-").replace("/", "_")
    return out


def assert_clean(text: str, where: str, secrets: tuple[str, ...] = SECRETS) -> None:
    for secret in secrets:
        for name, form in encodings(secret).items():
            assert form not in text, f"{where} shows {secret!r} {name} ({form!r})"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.fixture
def leaky_http(http_server: Callable[..., RunningServer]) -> RunningServer:
    return http_server([sys.executable, str(LEAKY), "--http", "--port", "{port}"], ready=r"Uvicorn running on")


@pytest.fixture
def service(http_server: Callable[..., RunningServer]) -> RunningServer:
    env = {**os.environ, "PETS_TOKEN": "pets-bearer-unused", "PETS_API_KEY": API_SECRET}
    return http_server(
        [sys.executable, str(OPENAPI_SERVICE), "--port", "{port}"], ready=r"Uvicorn running on", env=env, path=""
    )


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    provider = TracerProvider()
    exported = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    # As if the application had called trace.set_tracer_provider(provider) (global, once per process).
    monkeypatch.setattr(otel, "_tracer", lambda: provider.get_tracer("toolcode"))
    # The MCP SDK's client spans too, which it makes with a tracer it took from the global provider.
    monkeypatch.setattr(mcp_otel, "_tracer", provider.get_tracer("mcp-python-sdk"))
    return exported


@contextmanager
def log_events(until: Callable[[dict[str, Any]], bool], arrived: anyio.Event) -> Iterator[list[dict[str, Any]]]:
    """Every structlog event while the block runs (``arrived`` is set at the first that ``until`` accepts)."""
    events: list[dict[str, Any]] = []

    def keep(_logger: Any, _method: str, event: Any) -> Any:
        events.append(dict(event))
        if until(event):
            arrived.set()
        raise structlog.DropEvent

    configured = structlog.is_configured()
    if not configured:  # the events go to structlog only once a host configured it (toolindex.log)
        structlog.configure(processors=[])
    processors = structlog.get_config()["processors"]
    saved = list(processors)
    processors[:] = [keep]  # in place: loggers already made keep the same list
    try:
        yield events
    finally:
        processors[:] = saved
        if not configured:
            structlog.reset_defaults()


def _stderr_line(event: dict[str, Any]) -> bool:
    return event.get("event") == "mcp.stderr" and "calling the API" in str(event.get("line"))


def vault() -> LocalBackend:
    local = LocalBackend()

    @local.tool(namespace="vault")
    def status() -> dict[str, Any]:
        """The connection the application uses (a careless diagnostics tool)."""
        return {
            "dsn": f"postgres://app:{quote(LOCAL_SECRET, safe='')}@db.internal/app",
            "token": LOCAL_SECRET,
            "token_b64": b64(LOCAL_SECRET),
        }

    return local


SNIPPET = """
results = {}
for tool in input:
    results[tool] = run_tool(tool)
    print(tool, results[tool])
try:
    run_tool('stdio:fail')
except ToolError as e:
    results['stdio:fail'] = str(e)
for tool in ('stdio:refuse', 'http:refuse'):
    try:
        run_tool(tool)
    except ToolError as e:
        results[tool] = str(e)
results
"""
MCP_TOOLS = ("stdio:account", "inherit:account", "http:account")
TOOLS = (*MCP_TOOLS, "pets:account", "vault:status")


async def test_no_secret_reaches_a_caller_through_any_result_path(
    tmp_path: Path,
    leaky_http: RunningServer,
    service: RunningServer,
    spans: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LEAKY_TOKEN", INHERITED_SECRET)
    register_secrets([LOCAL_SECRET])
    config = {
        "mcpServers": {
            "stdio": {"command": sys.executable, "args": [str(LEAKY)], "env": {"LEAKY_TOKEN": STDIO_SECRET}},
            "inherit": {"command": sys.executable, "args": [str(LEAKY)], "inheritEnv": True},
            "http": {"url": leaky_http.url, "headers": {"Authorization": f"Bearer {HTTP_SECRET}"}},
            "pets": {
                "openapi": str(OPENAPI_SPEC),
                "baseUrl": service.url,
                "query": {"appid": API_SECRET},
                "headers": {"X-API-Key": API_SECRET},
            },
        }
    }
    settings = Settings(
        state=StateSettings(dir=str(tmp_path / "state")),
        limits=ExecuteOptions(max_output_chars=BUDGET),
        policy=PolicySettings(preset="allow-all", audit=AuditSettings(args=True, results=True)),
    )
    records: list[ToolCallRecord] = []

    async def on_call(record: ToolCallRecord) -> None:
        records.append(record)

    stderr_logged = anyio.Event()
    with log_events(_stderr_line, stderr_logged) as events:
        async with Toolbox.from_config(config, extra_backends=[vault()], settings=settings, strict=True) as box:
            # toolrun alone: what a library user gets from the runner.
            direct = {tool: await box.runner.run(tool) for tool in TOOLS}
            # A direct call at a door, and a snippet that calls everything, prints it and returns it.
            door = await box.codemode.run_tool("http:account", {})
            cm = box.codemode
            out = await cm.execute(SNIPPET, input=list(TOOLS), options={"trace": "full"}, on_tool_call=on_call)
            assert out.ok, out.error
            failed = await cm.execute("run_tool('stdio:fail')")
            (stored,) = [s for s in out.stored if s.what == "value"]
            page = await cm.read_result(stored.ref, 0, 1_000_000)
            assert page.next_offset is None
            audit = await box.stores.audit.read()
            with anyio.fail_after(30):  # the child's stderr is read by a task of its own
                await stderr_logged.wait()

    # The secrets did come back, and only they are gone: everything around them is as it came.
    for tool in MCP_TOOLS:
        value = direct[tool].structured
        assert value["owner"] == "the test suite" and value["credential"] == "***", tool
        assert value["next"] == "https://api.example.test/items?page=2&access=***"
        assert value["debug"]["credential_b64"] == "***"
        # Every base64 character carrying a bit of the secret is masked; "svc:" stays readable.
        assert value["debug"]["upstream_auth"] == "Basic c3ZjO***"
        assert base64.b64decode("c3ZjOg==") == b"svc:"
        assert value["by_credential"] == {"***": "active"}
        text, resource = direct[tool].content
        assert json.loads(text["text"]) == value
        assert resource["resource"] == {
            "uri": "mem://accounts?access=***",
            "mimeType": "text/plain",
            "text": "cached ***",
        }
    pets = direct["pets:account"].value
    assert pets["owner"] == "the test suite" and pets["key"] == "***"
    assert pets["next"] == f"{service.url}/secure/account?appid=***&page=2"
    assert pets["debug"] == {"key_b64": "***", "upstream_auth": "Basic c3ZjO***"}
    assert direct["vault:status"].value == {
        "dsn": "postgres://app:***@db.internal/app",
        "token": "***",
        "token_b64": "***",
    }
    run_value = json.loads(page.text)
    assert {k: v for k, v in run_value.items() if k in TOOLS} == {t: direct[t].value for t in TOOLS}
    assert run_value["stdio:fail"] == "[tool_error] stdio:fail: upstream refused credential ***"
    for tool in ("stdio:refuse", "http:refuse"):
        assert run_value[tool] == f"[tool_error] {tool}: upstream refused credential *** (MCP error -32001)"
    assert failed.error is not None and failed.error.message == "ToolError: upstream refused credential ***"
    stderr_lines = [e["line"] for e in events if e.get("event") == "mcp.stderr"]
    assert "calling the API with credential ***" in stderr_lines

    # And no secret, in any encoding, anywhere a result goes.
    for tool, result in direct.items():
        assert_clean(json.dumps([result.structured, list(result.content)]), f"runner.run({tool!r})")
    assert_clean(door.model_dump_json(), "a direct call at the door")
    assert_clean(out.model_dump_json(), "the run's outcome (value preview, stdout, trace)")
    assert "stdio:account {" in out.stdout
    assert [r.tool_id for r in records] == [*TOOLS, "stdio:fail", "stdio:refuse", "http:refuse"]
    assert [r.structured for r in records[: len(TOOLS)]] == [direct[t].value for t in TOOLS]
    assert_clean(json.dumps([(r.structured, r.error) for r in records]), "the trace")
    assert_clean(page.text, "the stored result")
    assert_clean(failed.model_dump_json(), "an uncaught tool error")
    assert {e["tool_id"] for e in audit if e.get("result") is not None} == set(TOOLS)
    assert_clean(json.dumps(audit), "the audit log")
    finished = spans.get_finished_spans()
    assert {s.name for s in finished} >= {"toolcode.execute", "toolcode.tool_call", "MCP send tools/call account"}
    # The SDK's client span of a refused call says why, as the server said it, with the secret masked.
    refused = [s for s in finished if s.name == "MCP send tools/call refuse"]
    assert len(refused) == 2
    for span in refused:
        assert span.status.status_code == StatusCode.ERROR
        assert span.status.description == "upstream refused credential ***"
    assert_clean("".join(s.to_json() for s in finished), "the OpenTelemetry spans")
    assert_clean(json.dumps(events, default=repr), "the log")


DEFINITION_SECRETS = (WORDY_SECRET, HTTP_SECRET, API_SECRET)
DEFINED = ("stdio:configure", "http:configure", "pets:weather")


def personal_document(path: Path) -> Path:
    """The test service's document as a portal writes it for the key's holder: the key in a summary and a default."""
    text = OPENAPI_SPEC.read_text()
    summary = "summary: The weather in a city (needs the API key as the appid query parameter and as X-API-Key)"
    assert summary in text
    text = text.replace(summary, f"summary: {json.dumps(f'The weather in a city (your key is {API_SECRET})')}")
    city = "- {name: city, in: query, required: true, schema: {type: string}}"
    assert city in text
    text = text.replace(
        city, f"- {{name: city, in: query, required: true, schema: {{type: string, default: {b64(API_SECRET)}}}}}"
    )
    path.write_text(text)
    return path


DEFINITION_SNIPPET = """
docs = [describe_tool(t, level=level) for t in input for level in ('summary', 'schema', 'full')]
found = search_tools('configure the client', detail='schema')
print(docs, found)
[docs, found, list_namespaces()]
"""


async def test_no_secret_reaches_a_caller_through_a_tool_definition(tmp_path: Path, leaky_http: RunningServer) -> None:
    config = {
        "mcpServers": {
            "stdio": {"command": sys.executable, "args": [str(LEAKY)], "env": {"LEAKY_TOKEN": WORDY_SECRET}},
            "http": {"url": leaky_http.url, "headers": {"Authorization": f"Bearer {HTTP_SECRET}"}},
            "pets": {
                "openapi": str(personal_document(tmp_path / "pets.yaml")),
                "baseUrl": "http://127.0.0.1:9",  # never called here
                "query": {"appid": API_SECRET},
                "headers": {"X-API-Key": API_SECRET},
            },
        }
    }
    settings = Settings(state=StateSettings(dir=str(tmp_path / "state")), policy=PolicySettings(preset="allow-all"))
    seen: dict[str, str] = {}
    with log_events(lambda _event: False, anyio.Event()) as events:
        async with Toolbox.from_config(config, settings=settings, strict=True) as box:
            index, cm = box.index, box.codemode
            tools = {t: index.get(t) for t in DEFINED}
            seen["the index"] = json.dumps([t.model_dump(mode="json") for t in index.list_tools(limit=1000).tools])
            seen["the index's search"] = json.dumps([h.model_dump(mode="json") for h in index.search("configure")])
            seen["search_tools"] = (await cm.search_tools("configure the client", detail="schema")).model_dump_json()
            seen["list_tools"] = (await cm.list_tools()).model_dump_json()
            for level in ("summary", "schema", "full"):
                seen[f"describe_tool {level}"] = (await cm.describe_tool(list(DEFINED), level)).model_dump_json()
            seen["the stubs"] = "".join(
                m.stub
                for ns in ("stdio", "http", "pets")
                if (m := box.services.modules.seen_by(CatalogView(box.index)).module(ns))
            )
            snippet = await cm.execute(DEFINITION_SNIPPET, input=list(DEFINED), options={"trace": "full"})
            assert snippet.ok, snippet.error
            seen["a snippet's discovery"] = snippet.model_dump_json()
            # The type checker refuses a wrong argument, quoting the parameter's enum.
            refused = await cm.execute("run_tool('stdio:configure', credential=7)")
            assert not refused.ok
            seen["a type check's diagnostics"] = refused.model_dump_json()
            by_secret = index.search("quokka zephyr marigold")
            by_words = [h.id for h in index.search("configures the client")]
            stdio_backend = next(b for b in box.backends if getattr(b, "name", None) == "stdio")
            seen["the backend's tools"] = json.dumps([t.model_dump(mode="json") for t in stdio_backend.tools.values()])
    seen["the log"] = json.dumps(events, default=repr)

    # The definitions are all there, and only the secrets in them are masked.
    for tool_id in ("stdio:configure", "http:configure"):
        tool = tools[tool_id]
        assert tool.title == "Configure the client for ***"
        assert tool.description == (
            "Configures the client. Your credential is ***; the next page is "
            'https://api.example.test/items?access=***; sample config {"token": "***"}; upstream auth Basic c3ZjO***.'
        )
        credential = tool.input_schema["properties"]["credential"]
        assert credential == {
            "type": "string",
            "default": "***",
            "enum": ["***", "anonymous"],
            "examples": ["***"],
            "description": "Defaults to ***.",
        }
        # In a regular expression the mask is a regex literal (``***`` is none: the tool would be unusable).
        assert tool.input_schema["properties"]["mode"] == {"type": "string", "pattern": r"^(fast|\*\*\*)$"}
        assert tool.output_schema is not None
        assert tool.output_schema["properties"]["by_credential"] == {
            "type": "object",
            "properties": {"***": {"type": "string"}},
            "required": ["***"],
        }
        assert tool.annotations == {"title": "configure ***", "readOnlyHint": True}
        assert tool.meta == {"credential": "***", "credential_b64": "***"}
    weather = tools["pets:weather"]
    assert weather.title == "The weather in a city (your key is ***)"
    assert weather.input_schema["properties"]["city"]["default"] == "***"
    assert "appid" not in weather.input_schema["properties"]  # a configured query key is no argument
    # Search reads the masked text: the secret's words find nothing, the definition's own words find it.
    assert [h.id for h in by_secret if not h.weak] == []
    assert "stdio:configure" in by_words
    # The type checker reads the masked schema, and so does what it says.
    assert 'credential: Literal["***", "anonymous"] = "***",' in seen["the stubs"]
    assert refused.error is not None and '7 is not one of "***" or "anonymous"' in refused.error.message
    for where, text in seen.items():
        assert_clean(text, where, DEFINITION_SECRETS)
