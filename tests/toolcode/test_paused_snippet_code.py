"""A paused run keeps each saved snippet's code once, and is never written whole only to be refused.

Each pending call of a saved snippet carried its own copy of the code of every snippet its approval
covers: 200 calls of a hub naming 20 snippets of 99 KB built ~380 MiB of JSON on the event loop,
and 200 calls of one 90 KB snippet could no longer pause (17 MiB > 16 MiB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolcode import Settings, Toolbox
from toolcode._outcome import REFUSALS, shown_to_decide
from toolcode._settings import PolicySettings, StateSettings
from toolrun import LocalBackend

pytestmark = pytest.mark.anyio

_PAD = ("#" + "x" * 99 + "\n") * 900  # 90,900 characters of comment


def _box(tmp_path: Path, **policy: Any) -> Toolbox:
    local = LocalBackend()

    @local.tool(namespace="l", inline=True)
    def zap(x: int = 0, blob: str = "") -> str:
        """Zap (the policy asks about it)."""
        return "z"

    rules = {"rules": [{"tools": "l:zap", "decision": "ask"}], **policy}
    settings = Settings(state=StateSettings(dir=str(tmp_path)), policy=PolicySettings.model_validate(rules))
    return Toolbox([local], settings=settings)


async def test_many_calls_of_one_big_snippet_pause_with_its_code_kept_once(tmp_path: Path) -> None:
    async with _box(tmp_path) as box:
        cm = box.codemode
        body = "run_tool('l:zap')\n" + _PAD
        await cm.save_snippet("big", body, "Big.")
        out = await cm.execute("run_tools([('snippets:big', {'x': i}) for i in range(200)])")
        assert out.approval is not None, out.error
        a = out.approval
        assert len(a.pending) == 200 and list(a.snippet_code.values()) == [body]
        assert {tuple(p.snippets.items()) for p in a.pending} == {(("snippets:big", next(iter(a.snippet_code))),)}
        stores = cm.services.stores
        assert stores is not None
        [info] = await stores.paused.store.list("paused")
        record = await stores.paused.store.get("paused", info.key)
        assert record is not None and len(record.value) < 2 * len(body)  # one copy, not 200
        text, offered = shown_to_decide(a.pending, a.snippet_code)
        assert text.count("code of snippets:big") <= 1 and offered == REFUSALS  # long: approved where read whole
        listed = (await cm.list_paused()).paused[0]
        assert listed.snippet_code == a.snippet_code


async def test_code_past_what_one_question_keeps_is_said_and_cannot_be_approved_there(tmp_path: Path) -> None:
    from toolcode.calls import MAX_SNIPPET_CODE

    async with _box(tmp_path) as box:
        cm = box.codemode
        leaves = MAX_SNIPPET_CODE // len(_PAD) + 2
        for k in range(leaves):
            await cm.save_snippet(f"s{k}", f"__out = {k}\n" + _PAD, "Leaf.")
        hub = "run_tool('l:zap')\n" + "".join(f"run_tool('snippets:s{k}')\n" for k in range(leaves))
        await cm.save_snippet("hub", hub, "Hub.")
        out = await cm.execute("run_tools([('snippets:hub', {'x': i}) for i in range(50)])")
        assert out.approval is not None, out.error
        a = out.approval
        assert sum(map(len, a.snippet_code.values())) <= MAX_SNIPPET_CODE
        assert len(a.snippet_code) < leaves + 1  # none of the snippets past the cap: never a part of one
        text, offered = shown_to_decide(a.pending, a.snippet_code)
        assert offered == REFUSALS and "(not shown: the code of " in text and f"snippets:s{leaves - 1}" in text
        # Without the run's code at hand, nothing is approved unseen either.
        assert shown_to_decide(a.pending)[1] == REFUSALS


async def test_a_run_too_large_to_pause_is_refused_before_it_is_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolcode._paused_run as paused_run

    written: list[int] = []
    real = paused_run.json_text

    def counting(value: Any) -> str:
        text = real(value)
        written.append(len(text))
        return text

    monkeypatch.setattr(paused_run, "json_text", counting)
    most = 1 << 20
    async with _box(tmp_path, max_paused_bytes=most) as box:
        # 200 calls of 50,000 characters each: 10 MB of pending calls, ten times what may be kept.
        code = "blob = 'b' * 50_000\nrun_tools([('l:zap', {'x': i, 'blob': blob}) for i in range(200)])"
        out = await box.codemode.execute(code)
    assert out.error is not None and out.error.code == "memory_limit", out
    assert 0 < sum(written) <= most + 60_000  # written only until past the limit (and one call more)
