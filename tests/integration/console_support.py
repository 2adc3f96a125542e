"""A real `serve --http` with the console on, a real upstream with a counted write tool, and a real Chromium."""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from toolcode import Toolbox
from toolcode._settings import ConsoleSettings, PolicySettings, Settings, StateSettings
from toolcode.server import BearerTokens, serve_http

LEDGER = Path(__file__).parent / "servers" / "ledger_server.py"
OPS, ALICE, BOB = (secrets.token_urlsafe(32) for _ in range(3))
"""An operator, and two ordinary callers."""
CHROMIUM = os.environ.get("TOOLCODE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
SHOTS = os.environ.get("TOOLCODE_SCREENSHOTS")
"""A folder (docs/) to write the pages' screenshots to, when set."""
WRITE = "run_tool('ledger:add_note', text={text!r})\n__out = 'done'"


@dataclass
class Served:
    """The console's base URL, the toolbox behind it, and the upstream's ledger (one line per write call)."""

    base: str
    box: Toolbox
    ledger: Path

    def notes(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []

    async def pause(self, caller: str, text: str = "hello") -> str:
        """A run of ``caller`` that pauses at the write; its execution id."""
        out = await self.box.codemode.execute(WRITE.format(text=text), caller=f"token:{caller}")
        assert out.approval is not None, out
        return out.approval.execution_id


@asynccontextmanager
async def served(
    tmp_path: Path,
    *,
    quarantine: bool = False,
    url: str | None = None,
    tokens: BearerTokens | None = None,
    state: StateSettings | None = None,
) -> AsyncIterator[Served]:
    """Serve the console over a toolbox whose writes ask (``ask-writes``), with ``token:ops`` as operator.

    Two of these on one ``tmp_path`` (or one ``state``) are two replicas sharing one state store.
    """
    ledger = tmp_path / "ledger.txt"
    settings = Settings(
        state=state or StateSettings(dir=str(tmp_path / "state")),
        console=ConsoleSettings(enabled=True, url=url),
        policy=PolicySettings(preset="ask-writes", operators=("token:ops",), quarantine=quarantine),
    )
    servers = {"ledger": {"command": sys.executable, "args": [str(LEDGER), str(ledger)]}}
    tokens = tokens or BearerTokens({"ops": OPS, "alice": ALICE, "bob": BOB})
    async with Toolbox.from_config({"mcpServers": servers}, settings=settings) as box:
        urls: list[str] = []
        ready = anyio.Event()

        def on_ready(address: str) -> None:
            urls.append(address)
            ready.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(serve_http, box, "127.0.0.1", 0, tokens=tokens, on_ready=on_ready))
            with anyio.fail_after(60):
                await ready.wait()
            yield Served(urls[0].removesuffix("/mcp"), box, ledger)
            tg.cancel_scope.cancel()


def csrf_of(page: str) -> str:
    """The CSRF token of a console page's first form."""
    return page.split('name="csrf" value="', 1)[1].split('"', 1)[0]


@asynccontextmanager
async def console_client(base: str, token: str) -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP client signed in to the console with ``token`` (the sign-in form, as a browser sends it)."""
    async with httpx2.AsyncClient(base_url=base) as http:
        page = await http.get("/console/signin")
        form = {"csrf": csrf_of(page.text), "token": token}
        done = await http.post("/console/signin", data=form, headers={"Origin": base})
        assert done.status_code == 303 and done.headers["location"] == "/console/runs"
        yield http


def write_tokens(path: Path, tokens: dict[str, str]) -> None:
    """Write a token file atomically, as its docs ask (a new inode: the servers see the change at once)."""
    tmp = path.with_suffix(".new")
    tmp.write_text("".join(f"{name}:{token}\n" for name, token in tokens.items()))
    tmp.chmod(0o600)
    os.replace(tmp, path)


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """Debian's headless Chromium, driven by Playwright (never a downloaded browser)."""
    if CHROMIUM is None:
        pytest.skip("no chromium binary found (Debian: apt-get install chromium; .ci/run installs it)")
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield browser
        finally:
            await browser.close()


async def signed_in(browser: Any, base: str, token: str, *, phone: bool = False) -> Any:
    """A page of a fresh browser context, signed in to the console with ``token``, on the paused-runs list."""
    viewport = {"width": 412, "height": 860} if phone else {"width": 1100, "height": 760}
    context = await browser.new_context(viewport=viewport, device_scale_factor=1)
    page = await context.new_page()
    await page.goto(base + "/console/")
    assert page.url.endswith("/console/signin"), page.url
    await page.fill("input[name=token]", token)
    await page.click("form.card button")
    await page.wait_for_url("**/console/runs")
    return page


async def shot(page: Any, name: str) -> None:
    """Write the page's screenshot to ``$TOOLCODE_SCREENSHOTS/console-<name>.png`` when that is set."""
    if SHOTS:
        await page.screenshot(path=str(Path(SHOTS) / f"console-{name}.png"), full_page=True)
