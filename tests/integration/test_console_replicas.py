"""Console sign-ins over replicas: two real `serve --http` sharing one state store (one SQLite file, or one Redis).

A person behind a load balancer reaches either replica on every request: a sign-in, a sign-out and a
revoked token must hold on both, and a store that cannot be reached signs nobody in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from console_support import ALICE, OPS, console_client, csrf_of, served, write_tokens

from toolcode._settings import StateSettings
from toolcode.server import BearerTokens

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

COOKIE = "toolcode_console"


@pytest.fixture(params=["sqlite", "redis"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> StateSettings:
    """One state store for both replicas: a SQLite file in a shared folder, or the test session's Redis."""
    if request.param == "redis":
        return StateSettings(url=request.getfixturevalue("redis_url"))
    return StateSettings(dir=str(tmp_path / "state"))


async def _status(base: str, sid: str) -> int:
    """What a replica answers a browser holding the session cookie ``sid`` that opens the paused runs."""
    async with httpx2.AsyncClient(base_url=base, cookies={COOKIE: sid}) as http:
        return (await http.get("/console/runs")).status_code


async def test_a_sign_in_on_one_replica_holds_and_ends_on_the_other(tmp_path: Path, state: StateSettings) -> None:
    tokens_file = tmp_path / "tokens"
    write_tokens(tokens_file, {"alice": ALICE, "ops": OPS})

    def replica() -> Any:
        return served(tmp_path, tokens=BearerTokens(file=tokens_file), state=state)

    async with replica() as a, replica() as b:
        async with console_client(a.base, ALICE) as on_a:
            sid = on_a.cookies[COOKIE]
            async with httpx2.AsyncClient(base_url=b.base, cookies={COOKIE: sid}) as on_b:
                page = await on_b.get("/console/runs")  # the cookie A set works on B
                assert page.status_code == 200 and "alice" in page.text
                out = await on_b.post("/console/signout", data={"csrf": csrf_of(page.text)}, headers={"Origin": b.base})
                assert out.status_code == 303
            signed_out = await on_a.get("/console/runs")  # signed out on B: A sends the same cookie to sign-in
            assert signed_out.status_code == 303 and signed_out.headers["location"] == "/console/signin"
        async with console_client(b.base, ALICE) as alice, console_client(a.base, OPS) as ops:
            sid, ops_sid = alice.cookies[COOKIE], ops.cookies[COOKIE]
            assert [await _status(a.base, sid), await _status(b.base, sid)] == [200, 200]
            write_tokens(tokens_file, {"ops": OPS})  # alice's token revoked
            assert [await _status(a.base, sid), await _status(b.base, sid)] == [303, 303]
            assert [await _status(a.base, ops_sid), await _status(b.base, ops_sid)] == [200, 200]


async def test_a_store_out_of_reach_signs_nobody_in(tmp_path: Path, redis_url: str, redis_server: Any) -> None:
    async with served(tmp_path, state=StateSettings(url=redis_url)) as s, console_client(s.base, ALICE) as alice:
        form = {"csrf": csrf_of((await alice.get("/console/signin")).text), "token": ALICE}
        csrf = csrf_of((await alice.get("/console/runs")).text)
        redis_server.stop()
        try:
            with anyio.fail_after(60):  # a bound against hangs only: a live list that streams would never end
                answers = [
                    await alice.get("/console/runs"),
                    await alice.get("/console/events"),
                    await alice.post("/console/signin", data=form, headers={"Origin": s.base}),
                    await alice.post("/console/signout", data={"csrf": csrf}, headers={"Origin": s.base}),
                ]
            for answer in answers:
                assert answer.status_code == 503 and "State store unavailable" in answer.text, answer
                assert "toolcode_console=" not in answer.headers.get("set-cookie", "")
        finally:
            redis_server.start()
        assert (await alice.get("/console/runs")).status_code == 200  # the store is back: still signed in
