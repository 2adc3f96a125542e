"""Console sign-ins: a token becomes a session kept in the state store; revoking the token or reaching the TTL ends it.

Two ``SignIns`` over one SQLite file are two replicas sharing one store.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from toolcode._settings import ConsoleSettings
from toolcode.console._auth import KIND, SESSION_COOKIE, SignIns
from toolcode.server import BearerTokens
from toolcode.state import SQLiteStateStore, StateStore

pytestmark = pytest.mark.anyio

ALICE, BOB, OPS = (secrets.token_urlsafe(32) for _ in range(3))


def _write(path: Path, text: str) -> None:
    # Replaced atomically, as the token file's docs ask; a new inode, so the change is seen at once.
    tmp = path.with_suffix(".new")
    tmp.write_text(text)
    tmp.chmod(0o600)
    os.replace(tmp, path)


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[tuple[StateStore, StateStore]]:
    """Two replicas' handles on one SQLite file."""
    a, b = SQLiteStateStore(tmp_path / "state.sqlite3"), SQLiteStateStore(tmp_path / "state.sqlite3")
    try:
        yield a, b
    finally:
        await a.aclose()
        await b.aclose()


def _cookie(sid: str | None) -> dict[str, str]:
    assert sid is not None
    return {SESSION_COOKIE: sid}


async def test_revoking_a_token_ends_its_console_sessions_on_every_replica(
    tmp_path: Path, stores: tuple[StateStore, StateStore]
) -> None:
    tokens_file = tmp_path / "tokens"
    _write(tokens_file, f"alice:{ALICE}\nops:{OPS}\n")
    a, b = (
        SignIns(s, BearerTokens(file=tokens_file), ConsoleSettings(), lambda caller: caller == "token:ops")
        for s in stores
    )
    assert await a.sign_in("not-a-token-of-this-server") is None
    alice, ops = _cookie(await a.sign_in(ALICE)), _cookie(await a.sign_in(OPS))
    seen = await b.viewer(alice)
    assert seen is not None and (seen.name, seen.caller, seen.operator) == ("alice", "token:alice", False)
    mine = await a.viewer(alice)
    assert mine is not None and mine.csrf == seen.csrf  # one session, one CSRF token, on both replicas
    viewer = await b.viewer(ops)
    assert viewer is not None and viewer.operator
    _write(tokens_file, f"ops:{OPS}\n")
    assert await b.viewer(alice) is None and await a.viewer(alice) is None  # revoked: signed out
    assert await a.viewer(ops) is not None
    await b.sign_out(ops)
    assert await a.viewer(ops) is None


async def test_replacing_a_token_under_the_same_name_ends_the_sessions_it_signed_in(
    tmp_path: Path, stores: tuple[StateStore, StateStore]
) -> None:
    # A leaked token is replaced, its name kept: the sessions the leaked token opened end too.
    tokens_file = tmp_path / "tokens"
    _write(tokens_file, f"alice:{ALICE}\n")
    a, b = (SignIns(s, BearerTokens(file=tokens_file), ConsoleSettings(), lambda caller: False) for s in stores)
    leaked = _cookie(await a.sign_in(ALICE))
    assert await b.viewer(leaked) is not None
    fresh = secrets.token_urlsafe(32)
    _write(tokens_file, f"alice:{fresh}\n")
    assert await b.viewer(leaked) is None and await a.viewer(leaked) is None
    assert await a.sign_in(ALICE) is None
    renewed = _cookie(await a.sign_in(fresh))
    seen = await b.viewer(renewed)
    assert seen is not None and seen.name == "alice"
    # What the store keeps of the token tells nothing of it.
    for info in await stores[1].list(KIND):
        record = await stores[1].get(KIND, info.key)
        assert record is not None and fresh not in record.value.decode() and ALICE not in record.value.decode()


async def test_the_store_holds_a_digest_of_the_id_never_the_id(stores: tuple[StateStore, StateStore]) -> None:
    signins = SignIns(stores[0], None, ConsoleSettings(), lambda caller: caller is None)
    sid = await signins.sign_in("")
    again = await signins.sign_in("")
    assert sid is not None and again is not None and sid != again  # a fresh id on every sign-in
    (info, _) = await stores[1].list(KIND)
    record = await stores[1].get(KIND, info.key)
    assert record is not None
    stored = info.key + record.value.decode()
    assert sid not in stored and sid.split(":")[1] not in stored
    assert hashlib.sha256(sid.encode()).hexdigest() in {k.key.split("/")[1] for k in await stores[1].list(KIND)}
    # What a reader of the store sees, presented as a cookie, signs nobody in.
    for key in [i.key for i in await stores[1].list(KIND)]:
        owner, digest = key.split("/")
        assert await signins.viewer({SESSION_COOKIE: f"{owner}:{digest}"}) is None
        assert await signins.viewer({SESSION_COOKIE: digest}) is None


async def test_a_sign_in_ends_at_its_ttl_on_every_replica_and_leaves_the_store(
    stores: tuple[StateStore, StateStore],
) -> None:
    short = SignIns(stores[0], None, ConsoleSettings(session_ttl=0.3), lambda caller: caller is None)
    lasting = SignIns(stores[1], None, ConsoleSettings(session_ttl=3600), lambda caller: caller is None)
    sid = await lasting.sign_in("")
    viewer = await short.viewer(_cookie(sid))  # seen on the other replica
    assert viewer is not None and (viewer.name, viewer.caller, viewer.operator) == ("local", None, True)
    (info,) = await stores[0].list(KIND)
    assert info.expires is not None and 3590 < info.expires - info.created <= 3600
    brief = await short.sign_in("")
    await anyio.sleep(0.6)  # past the short TTL (a busy machine only waits longer)
    assert await lasting.viewer(_cookie(brief)) is None
    assert [i.key.split("/")[1] for i in await stores[1].list(KIND)] == [hashlib.sha256(sid.encode()).hexdigest()]


async def test_one_name_keeps_at_most_its_cap_of_sign_ins_and_one_more_drops_its_oldest(
    stores: tuple[StateStore, StateStore],
) -> None:
    tokens = BearerTokens({"alice": ALICE, "bob": BOB})
    a, b = (SignIns(s, tokens, ConsoleSettings(max_signins=3), lambda caller: False) for s in stores)
    bobs = _cookie(await a.sign_in(BOB))  # the oldest sign-in of all, but another name's
    alices = [_cookie(await (a, b)[i % 2].sign_in(ALICE)) for i in range(4)]
    assert [await a.viewer(c) is not None for c in alices] == [False, True, True, True]
    assert await b.viewer(bobs) is not None
    assert len(await stores[0].list(KIND)) == 4  # alice's 3 and bob's 1


async def test_sign_ins_made_at_once_on_two_replicas_still_keep_the_cap(
    stores: tuple[StateStore, StateStore],
) -> None:
    # Each sign-in reads the name's sign-ins, drops the oldest and writes its own: made at the same
    # time, each could read the others' absence and the name would end over its cap.
    tokens = BearerTokens({"alice": ALICE})
    a, b = (SignIns(s, tokens, ConsoleSettings(max_signins=2), lambda caller: False) for s in stores)
    sids: list[str | None] = []

    async def sign_in(replica: SignIns) -> None:
        sids.append(await replica.sign_in(ALICE))

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(sign_in, (a, b)[i % 2])
    assert len(sids) == 8 and all(sids)
    assert len(await stores[0].list(KIND)) == 2
    # The ones kept are sign-ins that work.
    assert sum([await a.viewer(_cookie(sid)) is not None for sid in sids]) == 2
