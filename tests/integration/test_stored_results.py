"""Stored results over real servers: what does not fit the output budget is kept and read back exactly."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_support import npm_server, toolcode_serve_args

from toolcode import ExecuteOptions, InvalidArgumentsError, Settings, Toolbox
from toolcode._settings import ResultSettings, StateSettings

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

BUDGET = 2_000
MESSAGE = "".join(f"line {i}: {'é' * 20} {i * 7}\n" for i in range(3_000))  # ~100,000 chars, not ASCII


def _servers() -> dict[str, Any]:
    return {"everything": {"command": str(npm_server("mcp-server-everything")), "args": ["stdio"]}}


def _box(tmp_path: Path, url: str | None = None, **results: Any) -> Toolbox:
    settings = Settings(
        state=StateSettings(url=url) if url else StateSettings(dir=str(tmp_path / "state")),
        limits=ExecuteOptions(max_output_chars=BUDGET),
        results=ResultSettings(**results),
    )
    return Toolbox.from_config({"mcpServers": _servers()}, settings=settings)


async def _read_all(box: Toolbox, ref: str, limit: int) -> str:
    out, offset = "", 0
    while True:
        page = await box.codemode.read_result(ref, offset, limit)
        out += page.text
        if page.next_offset is None:
            return out
        assert page.next_offset == offset + len(page.text)
        offset = page.next_offset


async def test_a_direct_result_over_the_budget_is_previewed_and_read_back_exactly(tmp_path: Path) -> None:
    async with _box(tmp_path) as box:
        whole = (await box.runner.run("everything:echo", {"message": MESSAGE})).value
        out = await box.codemode.run_tool("everything:echo", {"message": MESSAGE})
        assert out.stored is not None and out.stored.what == "result"
        assert isinstance(out.value, str) and len(out.value) <= BUDGET
        assert f"read_result('{out.stored.ref}'" in out.value and f"{out.stored.total_chars:,} chars" in out.value
        text = await _read_all(box, out.stored.ref, 7_777)
        assert text == json.dumps(whole, ensure_ascii=False)
        assert out.stored.total_chars == len(text)


async def test_a_run_value_and_stdout_are_kept_and_a_later_run_loads_the_value(tmp_path: Path) -> None:
    # A structured value: its compact JSON (what the budget counts) is shorter than json.dumps' default.
    code = "r = run_tool('everything:echo', message=input)\nprintln('y' * 5000)\n{'echo': r, 'sizes': [len(r), 1]}"
    async with _box(tmp_path) as box:
        cm = box.codemode
        out = await cm.execute(code, input=MESSAGE)
        assert out.ok, out.error
        kinds = {s.what: s for s in out.stored}
        assert set(kinds) == {"value", "stdout"}
        assert f"whole stdout: read_result({kinds['stdout'].ref!r})" in out.stdout
        assert "value" in out.truncated and "stdout" in out.truncated
        assert (await _read_all(box, kinds["stdout"].ref, 999)) == "y" * 5000 + "\n"
        value_text = await _read_all(box, kinds["value"].ref, 50_000)
        # The cut's marker, total_chars and the stored text count the same characters, and the
        # preview is where the stored text begins.
        assert isinstance(out.value, str) and f"[truncated result: {len(value_text)} chars, " in out.value
        assert kinds["value"].total_chars == len(value_text)
        assert value_text.startswith(out.value.split("…[truncated result: ")[0])
        # A later run loads the value by reference instead of calling the tool again.
        later = await cm.execute(
            f"v = load_result({kinds['value'].ref!r})\nlen(str(v)) > 90000", options={"trace": "full"}
        )
        assert later.ok and later.value is True, later.error
        assert later.calls.count == 0
        loaded = await cm.execute(f"load_result({kinds['value'].ref!r}) == input", input=json.loads(value_text))
        assert loaded.value is True
        # Another caller cannot read it.
        other = await cm.execute(f"load_result({kinds['value'].ref!r})", caller="token:someone-else")
        assert other.error is not None and other.error.code == "invalid_arguments"


async def test_stored_results_expire(tmp_path: Path) -> None:
    async with _box(tmp_path, ttl=1) as box:
        out = await box.codemode.run_tool("everything:echo", {"message": MESSAGE})
        assert out.stored is not None
        await anyio.sleep(1.3)
        from toolcode.exceptions import InvalidArgumentsError

        with pytest.raises(InvalidArgumentsError, match="expired"):
            await box.codemode.read_result(out.stored.ref)


async def test_mcp_resource_link_resources_read_and_read_result_page_through_it(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    cfg = tmp_path / "serve.json"
    section = {
        "tools": ["execute_code", "read_result"],
        "limits": {"max_output_chars": BUDGET},
        "state": {"dir": str(tmp_path / "serve-state")},
    }
    cfg.write_text(json.dumps({"mcpServers": _servers(), "toolcode": section}))
    params = StdioServerParameters(command=sys.executable, args=toolcode_serve_args(cfg))
    async with Client(params) as client:
        res = await client.call_tool(
            "execute_code", {"code": "run_tool('everything:echo', message=input)", "input": MESSAGE}
        )
        assert not res.is_error, res.content
        links = [c for c in res.content if getattr(c, "type", None) == "resource_link"]
        assert len(links) == 1
        link: Any = links[0]
        assert str(link.uri).startswith("toolcode://results/r-") and link.name == "value"
        ref = str(link.uri).rsplit("/", 1)[1]
        # The cut says how much is left out and where the whole value is.
        assert f"whole value: read_result({ref!r})" in res.content[0].text  # type: ignore[union-attr]
        assert (await client.list_resources()).resources == []  # reached by links, never listed
        # resources/read, a page at a time (the next page's URI in _meta)
        via_resources, uri = "", str(link.uri)
        while True:
            got = await client.read_resource(uri)
            page: Any = got.contents[0]
            via_resources += page.text
            nxt = (page.meta or {}).get("next")
            if nxt is None:
                break
            uri = nxt
        # read_result, a page at a time
        via_tool, offset = "", 0
        while True:
            r = await client.call_tool("read_result", {"ref": ref, "offset": offset, "limit": 30_000})
            assert r.structured_content is not None
            via_tool += r.structured_content["text"]
            offset = r.structured_content["next_offset"]
            if offset is None:
                break
        assert via_resources == via_tool
        value = json.loads(via_tool)
        assert MESSAGE.strip() in (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        assert len(via_tool) > len(MESSAGE)


async def test_the_cli_writes_a_stored_result_to_a_file(tmp_path: Path) -> None:
    from toolcode.cli import main

    async with _box(tmp_path) as box:
        out = await box.codemode.run_tool("everything:echo", {"message": MESSAGE})
        assert out.stored is not None
        whole = await _read_all(box, out.stored.ref, 1_000_000)
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": _servers()}))
    target = tmp_path / "whole.json"
    argv = ["result", out.stored.ref, "--config", str(cfg), "--state-dir", str(tmp_path / "state"), "-o", str(target)]
    assert await anyio.to_thread.run_sync(main, argv) == 0
    assert target.read_text(encoding="utf-8") == whole


async def test_a_result_that_is_not_kept_says_so_and_what_to_do(tmp_path: Path) -> None:
    async with _box(tmp_path, enabled=False) as box:
        out = await box.codemode.run_tool("everything:echo", {"message": MESSAGE})
    assert out.stored is None and isinstance(out.value, str) and len(out.value) <= BUDGET
    assert "narrow the query or return fewer fields" in out.value and "read_result" not in out.value


@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_each_caller_keeps_its_stored_results_within_its_own_quota(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    # MESSAGE's stored JSON is about 160 kB: a 400 kB quota holds two of a caller's, a count of 3 three.
    url = str(request.getfixturevalue("redis_url")) if store == "redis" else None
    async with _box(tmp_path, url, max_per_caller=3, max_bytes_per_caller=400_000) as box:
        cm = box.codemode

        async def store(caller: str) -> str:
            out = await cm.run_tool("everything:echo", {"message": MESSAGE}, caller=caller)
            assert out.stored is not None, out
            return out.stored.ref

        bobs = await store("token:bob")
        alices = [await store("token:alice") for _ in range(4)]
        for ref in alices[:2]:  # the oldest made room, within alice's own quota
            with pytest.raises(InvalidArgumentsError):
                await cm.read_result(ref, 0, 10, caller="token:alice")
        for ref in alices[2:]:
            assert (await cm.read_result(ref, 0, 10, caller="token:alice")).text
        assert (await cm.read_result(bobs, 0, 10, caller="token:bob")).text  # another caller's quota is its own
        with pytest.raises(InvalidArgumentsError):
            await cm.read_result(bobs, 0, 10, caller="token:alice")
        records = await box.state.list("result", limit=100)
        assert len(records) == 3 and sum(r.size for r in records if "alice" in r.key) <= 400_000
