"""Hostile input against a real `toolcode serve`: each attack fails cleanly, and a bystander answers.

One `toolcode serve --http` process fronts our hostile MCP server (schemas, replies, churn, a
secret on stderr). Every check runs an attack through the server's own tools — hostile snippets,
hostile arguments, hostile upstream replies, a hung upstream — and, at the same time, a
bystander's trivial run on its own MCP session, which must answer promptly.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_support import toolcode_serve_http

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

HOSTILE = Path(__file__).parent / "servers" / "hostile_server.py"
SECRET = "hostile-secret-8f3c2a91d7"
# Only a stall: the attacks stalled every caller for 20 s to minutes before, and a busy machine stretches a
# trivial run to seconds. The bystander's latency itself is measured by bench/bystander.py.
BYSTANDER_BOUND_S = 15.0


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def server_url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    root = tmp_path_factory.mktemp("hostile-serve")
    hostile = {
        "command": sys.executable,
        "args": [str(HOSTILE), "--schemas", "redos,remote_ref,file_ref,deep,wide,recursive_allof", "--secret", SECRET],
        # A short per-call timeout so the hung-upstream check is quick (the default is 60 s).
        "timeout": 2,
    }
    config = root / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"hostile": hostile}, "toolcode": {"tools": ["*"]}}))
    async with toolcode_serve_http(config) as served:
        assert SECRET not in served.log, "the upstream's stderr secret reached the server log"
        yield served.url


@asynccontextmanager
async def _clients(url: str) -> AsyncIterator[tuple[Client, Client]]:
    async with Client(url) as attacker, Client(url) as bystander:
        yield attacker, bystander


async def _with_bystander(url: str, attack: Callable[[Client], Awaitable[Any]]) -> tuple[Any, float]:
    """Run ``attack`` and, while it runs, a bystander's trivial run; return the attack's outcome
    and the bystander's latency (it must have answered 42)."""
    outcome: list[Any] = []
    latency: list[float] = []
    async with _clients(url) as (attacker, bystander):

        async def attack_task() -> None:
            outcome.append(await attack(attacker))

        async with anyio.create_task_group() as tg:
            tg.start_soon(attack_task)
            await anyio.sleep(0.3)  # the attack is under way
            t0 = time.perf_counter()
            with anyio.fail_after(30):
                res = await bystander.call_tool("execute_code", {"code": "__out = 6 * 7"})
            latency.append(time.perf_counter() - t0)
            assert not res.is_error and res.structured_content is not None
            assert res.structured_content["value"] == 42
    return outcome[0], latency[0]


def _error(res: Any) -> dict[str, Any]:
    assert res.is_error, res.content
    assert res.structured_content is not None and res.structured_content["ok"] is False, res.content
    err: dict[str, Any] = res.structured_content["error"]
    return err


def _no_secret(res: Any) -> None:
    assert SECRET not in json.dumps(res.model_dump(mode="json")), "a secret from upstream stderr reached the caller"


SNIPPET_ATTACKS = {
    # Arguments that are not JSON (they used to crash the shared upstream session).
    "ellipsis argument": ("run_tool('hostile:echo', text=...)", "invalid_arguments"),
    "builtin argument": ("run_tool('hostile:echo', text=len)", "invalid_arguments"),
    "exception argument": ("run_tool('hostile:echo', text=ValueError('x'))", "invalid_arguments"),
    # The sandbox turns a lone surrogate into U+FFFD on its way out: a valid string, no protocol error.
    "lone surrogate": ("run_tool('hostile:echo', text='\\ud800')", None),
    # A 40 MB tool id and a 10 MB exception message: bounded replies.
    "huge tool id": ("run_tool('x' * 40_000_000)", "invalid_arguments"),
    "huge exception": ("raise ValueError('m' * 10_000_000)", "runtime_error"),
    # Wrong values to the snippet globals are catchable argument errors, not engine failures.
    "infinite limit": ("search_tools('echo', limit=float('inf'))", "invalid_arguments"),
    # Hostile upstream replies, through the sandbox.
    "error reply -32000": ("run_tool('hostile:reply', kind='error', code=-32000)", "tool_error"),
    "truncated reply": ("run_tool('hostile:reply', kind='truncated')", "tool_error"),
    "invalid UTF-8 reply": ("run_tool('hostile:reply', faults=['invalid_utf8'])", None),
    "reply 5000 levels deep": ("run_tool('hostile:reply', kind='deep', levels=5000)", "tool_error"),
    "garbage before the reply": ("run_tool('hostile:reply', faults=['garbage', 'not_rpc'])", None),
    "50 MB reply": ("run_tool('hostile:reply', kind='huge', size=50_000_000)", "response_too_large"),
    # The ReDoS pattern is checked in linear time.
    "ReDoS argument": ("run_tool('hostile:schema_redos', text='a' * 40 + '!')", "invalid_arguments"),
    # A CPU-bound snippet is stopped by its timeout.
    "CPU loop": ("while True:\n    pass", "timeout"),
    # Aimed at the check before the run: literals it evaluates, modules it loads, code it wraps.
    "ReDoS literal": ("run_tool('hostile:schema_redos', text='" + "a" * 40 + "!')", "invalid_arguments"),
    "megabyte literal": ("len(run_tool('hostile:echo', text='" + "a" * 1_000_000 + "')['text'])", None),
    "deeply nested literal": ("run_tool('hostile:echo', text=" + "[" * 3000 + "]" * 3000 + ")", None),
    "hostile module": ("from tools import hostile\nhostile.schema_recursive_allof(x=1)", None),
    "form feed out of the wrapper": ("from tools import hostile\nx = 1\n\fprint('escaped')\n\fif True:", None),
}
CAUGHT_BEFORE_THE_RUN = {"ellipsis argument", "ReDoS literal"}
"""Attacks the check before the run answers itself (``type_error``) when it is on."""


@pytest.mark.parametrize("type_check", ["strict", "off"])
@pytest.mark.parametrize("name", list(SNIPPET_ATTACKS))
async def test_a_hostile_snippet_fails_cleanly_while_a_bystander_answers(
    server_url: str, name: str, type_check: str
) -> None:
    code, expected = SNIPPET_ATTACKS[name]
    if type_check == "strict" and name in CAUGHT_BEFORE_THE_RUN:
        expected = "type_error"

    async def attack(c: Client) -> Any:
        # 3 s stops the CPU loop quickly; building and refusing 40 MB takes longer on a busy machine.
        options = {"timeout": 10 if name == "huge tool id" else 3, "type_check": type_check}
        return await c.call_tool("execute_code", {"code": code, "options": options})

    res, latency = await _with_bystander(server_url, attack)
    reply = json.dumps(res.model_dump(mode="json"))
    assert len(reply) < 60_000, f"{name}: a {len(reply):,}-character reply is over the output budget"
    _no_secret(res)
    if expected is None:  # the session survives: the call answers (with its value or a clean error)
        assert res.structured_content is not None
    else:
        assert _error(res)["code"] == expected, (name, res.content)
    if "escaped" in code:
        assert "escaped" not in reply.replace(code, ""), "code outside the checker's wrapper ran"
    if expected == "type_error":
        assert res.structured_content["calls"]["count"] == 0, res.structured_content
    assert latency < BYSTANDER_BOUND_S, f"{name}: the bystander waited {latency:.1f} s"


async def test_the_session_survives_every_attack(server_url: str) -> None:
    # After all of the above (same server, same upstream session), an ordinary call still works.
    async with Client(server_url) as c:
        res = await c.call_tool("run_tool", {"tool_id": "hostile:echo", "args": {"text": "still here"}})
        assert not res.is_error and res.structured_content is not None
        assert res.structured_content["value"] == {"text": "still here"}


async def test_a_hung_upstream_behind_the_direct_run_tool_times_out(server_url: str) -> None:
    async def attack(c: Client) -> Any:
        return await c.call_tool("run_tool", {"tool_id": "hostile:hang", "args": {}})

    t0 = time.perf_counter()
    res, latency = await _with_bystander(server_url, attack)
    # The upstream's per-call timeout is 2 s, the default 60 s: ending well before that shows which applied.
    assert _error(res)["code"] == "timeout" and time.perf_counter() - t0 < 30
    assert latency < BYSTANDER_BOUND_S


async def test_hostile_schemas_cost_only_their_own_tools(server_url: str) -> None:
    async with Client(server_url) as c:
        listed = await c.call_tool("list_tools", {"namespace": "hostile", "limit": 1000})
        assert listed.structured_content is not None
        ids = {t["id"] for t in listed.structured_content["tools"]}
        # Schemas that would fetch, read files, nest 5,000 deep or hold 30,000 properties are not tools.
        for refused in ("remote_ref", "file_ref", "deep", "wide"):
            assert f"hostile:schema_{refused}" not in ids
        assert {"hostile:echo", "hostile:schema_redos"} <= ids
        described = await c.call_tool("describe_tool", {"tool_id": "hostile:schema_recursive_allof"})
        text = " ".join(getattr(b, "text", "") for b in described.content)
        assert len(text) < 20_000 and "root:x:0:0" not in text


async def test_a_catalog_storm_does_not_stall_a_bystander(server_url: str) -> None:
    async def attack(c: Client) -> Any:
        return await c.call_tool("run_tool", {"tool_id": "hostile:churn", "args": {"storm": 5, "tools": 3000}})

    res, latency = await _with_bystander(server_url, attack)
    assert not res.is_error, res.content
    assert latency < BYSTANDER_BOUND_S


async def test_a_4mb_search_query_is_refused_cleanly(server_url: str) -> None:
    async def attack(c: Client) -> Any:
        try:
            return await c.call_tool("search_tools", {"query": "x" * 3_000_000})
        except Exception as e:  # the HTTP door may refuse the request body itself
            return e

    res, latency = await _with_bystander(server_url, attack)
    if not isinstance(res, Exception):
        assert _error(res)["code"] == "invalid_arguments"
    assert latency < BYSTANDER_BOUND_S
