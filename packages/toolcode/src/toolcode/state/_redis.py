"""``RedisStateStore``: state shared by several ``toolcode serve`` replicas (extra ``toolcode[redis]``)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from toolcode.exceptions import ConfigurationError, StateConflictError, StateUnavailableError
from toolcode.state._protocol import (
    ANY,
    Expect,
    LogEntry,
    Record,
    RecordInfo,
    Release,
    check_key,
    check_limit,
    check_record,
    check_ttl,
)
from toolrun import redact, register_secrets
from toolrun._config import url_secrets

if TYPE_CHECKING:
    import redis.asyncio as aredis

__all__ = ["RedisStateStore"]

_IDLE_CHECK = 1.0
"""Seconds without a successful command after which a PING checks the connection first."""

# Every write is one Lua script: Redis runs it atomically, so a conditional write cannot
# interleave with another replica's. Records are hashes (value, version, created, updated);
# a sorted set per kind indexes their keys for listing; the TTL is Redis's own.
# KEYS[3] holds the last version given to any record: every write takes the next one, so a record
# made again (after a delete or its expiry) never takes a version it had, and a reader of the old
# one cannot act on the new one with it.
_PUT = """
local cur = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
local expect = ARGV[1]
if expect ~= 'any' and tonumber(expect) ~= cur then
  return {-1, cur}
end
local version = redis.call('INCR', KEYS[3])
if version <= cur then
  version = cur + 1
  redis.call('SET', KEYS[3], version)
end
local now = ARGV[3]
local created = redis.call('HGET', KEYS[1], 'created') or now
if cur == 0 then created = now end
redis.call('HSET', KEYS[1], 'value', ARGV[2], 'version', version, 'created', created, 'updated', now)
local ttl = tonumber(ARGV[4])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) else redis.call('PERSIST', KEYS[1]) end
redis.call('ZADD', KEYS[2], 0, ARGV[5])
return {version, cur}
"""
_DELETE = """
local cur = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if cur == 0 then
  redis.call('ZREM', KEYS[2], ARGV[2])
  return 0
end
if ARGV[1] ~= 'any' and tonumber(ARGV[1]) ~= cur then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1
"""
_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_APPEND = """
local seq = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], '0-' .. seq, 'at', ARGV[1], 'value', ARGV[2])
return seq
"""


class RedisStateStore:
    """State in Redis, shared by every replica that points at the same server and prefix.

    Each write is a server-side script (atomic, compare-and-set on the version); TTLs are
    Redis's own expiry. Connection failures are :class:`StateUnavailableError` at once (no
    retry loop): the caller decides, and nothing is half-written.

    Args:
        url: ``redis://[:password@]host:port/db`` (or ``rediss://``, ``unix://``).
        prefix: Key prefix, so several deployments can share one Redis.
        timeout: Seconds to connect and for each command.

    Raises:
        ConfigurationError: If the ``redis`` package is missing (install ``toolcode[redis]``)
            or the URL is invalid.
    """

    def __init__(self, url: str, *, prefix: str = "toolcode", timeout: float = 3.0) -> None:
        try:
            import redis.asyncio as aredis_mod
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ConfigurationError(
                "state.url", "a redis:// state store needs the redis package: pip install 'toolcode[redis]'"
            ) from e
        check_key("prefix", prefix)
        self._prefix = prefix
        register_secrets(url_secrets(url))  # its password is masked wherever it might show, results included
        self._shown = redact(url)
        try:
            # Commands are never retried by the client (a write whose reply was lost must not run
            # twice); see _call for how a connection left over from before a restart is replaced.
            self._client: aredis.Redis = aredis_mod.Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
                url, socket_timeout=timeout, socket_connect_timeout=timeout, retry_on_timeout=False, retry=None
            )
        except ValueError as e:
            raise ConfigurationError("state.url", f"not a Redis URL: {redact(str(e))}") from e
        self._last_ok = 0.0
        self._put = self._client.register_script(_PUT)
        self._delete = self._client.register_script(_DELETE)
        self._append = self._client.register_script(_APPEND)
        self._unlock = self._client.register_script(_UNLOCK)

    @property
    def name(self) -> str:
        """The URL, credentials redacted."""
        return self._shown

    def _key(self, kind: str, key: str) -> str:
        return f"{self._prefix}:r:{kind}:{key}"

    def _index(self, kind: str) -> str:
        return f"{self._prefix}:i:{kind}"

    async def _call(self, what: str, make: Callable[[], Awaitable[Any]]) -> Any:
        """Run one command (``make()`` builds it), mapping failures to :class:`StateUnavailableError`.

        A pooled connection may be left over from before a Redis restart; its first use fails
        without the command having run. So after a second without a successful command, a
        PING goes first (retried once: a dead connection is dropped and the retry opens a new
        one); the command itself is never sent twice.
        """
        import redis.exceptions as rex

        try:
            if time.monotonic() - self._last_ok > _IDLE_CHECK:
                try:
                    await self._client.ping()  # pyright: ignore[reportUnknownMemberType]
                except (rex.ConnectionError, rex.TimeoutError, OSError):
                    await self._client.ping()  # pyright: ignore[reportUnknownMemberType]
            out = await make()
        except (rex.RedisError, OSError) as e:
            raise StateUnavailableError(self.name, f"{what}: {type(e).__name__}: {redact(str(e))}") from None
        self._last_ok = time.monotonic()
        return out

    async def get(self, kind: str, key: str) -> Record | None:
        """See :meth:`StateStore.get`."""
        check_record(kind, key)
        k = self._key(kind, key)
        pipe = self._client.pipeline(transaction=True)
        pipe.hmget(k, "value", "version", "created", "updated")
        pipe.pttl(k)
        (value, version, created, updated), pttl = await self._call("get", lambda: pipe.execute())
        if version is None or value is None:
            return None
        expires = time.time() + pttl / 1000 if isinstance(pttl, int) and pttl > 0 else None
        data = bytes(value)
        return Record(kind, key, int(version), len(data), float(created), float(updated), expires, data)

    async def put(self, kind: str, key: str, value: bytes, *, ttl: float | None = None, expect: Expect = ANY) -> int:
        """See :meth:`StateStore.put`."""
        check_record(kind, key, expect)
        ttl = check_ttl(ttl)
        ttl_ms = max(1, int(ttl * 1000)) if ttl else 0
        args = [str(expect), bytes(value), repr(time.time()), ttl_ms, key]
        keys = [self._key(kind, key), self._index(kind), f"{self._prefix}:versions"]
        result = await self._call("put", lambda: self._put(keys=keys, args=args))
        version, current = (int(x) for x in result)
        if version < 0:
            raise StateConflictError(kind, key, expect, current)
        return version

    async def delete(self, kind: str, key: str, *, expect: Expect = ANY) -> bool:
        """See :meth:`StateStore.delete`."""
        check_record(kind, key, expect)
        keys = [self._key(kind, key), self._index(kind)]
        return bool(await self._call("delete", lambda: self._delete(keys=keys, args=[str(expect), key])))

    async def list(self, kind: str, *, prefix: str = "", limit: int = 1000) -> list[RecordInfo]:
        """See :meth:`StateStore.list`."""
        check_key("kind", kind)
        check_limit(limit)
        low = f"[{prefix}" if prefix else "-"
        high = f"[{prefix}\xff" if prefix else "+"
        out: list[RecordInfo] = []
        start = 0
        while len(out) < limit:
            raw = await self._call(
                "list", lambda start=start: self._client.zrangebylex(self._index(kind), low, high, start, limit)
            )
            keys = [k.decode() if isinstance(k, bytes) else str(k) for k in raw]
            if not keys:
                break
            start += len(keys)
            pipe = self._client.pipeline(transaction=False)
            for key in keys:
                pipe.hmget(self._key(kind, key), "version", "created", "updated")
                pipe.hstrlen(self._key(kind, key), "value")
                pipe.pttl(self._key(kind, key))
            replies = await self._call("list", pipe.execute)
            gone: list[str] = []
            now = time.time()
            for i, key in enumerate(keys):
                (version, created, updated), size, pttl = replies[3 * i : 3 * i + 3]
                if version is None:
                    gone.append(key)  # expired: Redis removed the record, not its index entry
                    continue
                expires = now + pttl / 1000 if isinstance(pttl, int) and pttl > 0 else None
                out.append(RecordInfo(kind, key, int(version), int(size), float(created), float(updated), expires))
                if len(out) >= limit:
                    break
            if gone:
                await self._call("list", lambda gone=gone: self._client.zrem(self._index(kind), *gone))
                start -= len(gone)
        return out

    async def append(self, kind: str, value: bytes) -> int:
        """See :meth:`StateStore.append`."""
        check_key("kind", kind)
        keys = [f"{self._prefix}:log:{kind}", f"{self._prefix}:seq:{kind}"]
        return int(await self._call("append", lambda: self._append(keys=keys, args=[repr(time.time()), bytes(value)])))

    async def read_log(
        self, kind: str, *, after: int = 0, before: int | None = None, limit: int = 1000, newest_first: bool = False
    ) -> list[LogEntry]:
        """See :meth:`StateStore.read_log`: ``XRANGE``, or ``XREVRANGE`` newest first (entry ids are ``0-<seq>``)."""
        check_key("kind", kind)
        check_limit(limit)
        if before is not None and before <= after + 1:
            return []
        key, low, high = f"{self._prefix}:log:{kind}", f"0-{after + 1}", "+" if before is None else f"0-{before - 1}"
        if newest_first:
            raw = await self._call("read_log", lambda: self._client.xrevrange(key, high, low, count=limit))
        else:
            raw = await self._call("read_log", lambda: self._client.xrange(key, low, high, count=limit))
        out: list[LogEntry] = []
        for entry_id, fields in raw:
            eid = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
            f = {(k.decode() if isinstance(k, bytes) else k): v for k, v in fields.items()}
            out.append(LogEntry(int(eid.split("-", 1)[1]), float(f["at"]), bytes(f["value"])))
        return out

    async def try_lock(self, name: str, *, ttl: float) -> Release | None:
        """See :meth:`StateStore.try_lock`: ``SET NX PX`` with a token only its holder can delete."""
        check_key("name", name)
        if check_ttl(ttl) is None:
            raise ValueError("ttl must be a number of seconds > 0, got None")
        key = f"{self._prefix}:lock:{name}"
        token = secrets.token_hex(16)
        ok = await self._call("lock", lambda: self._client.set(key, token, nx=True, px=max(1, int(ttl * 1000))))
        if not ok:
            return None
        done = False

        async def release() -> None:
            nonlocal done
            if not done:
                # Marked done only once it worked: a release that failed (the store was away) can be retried.
                await self._call("unlock", lambda: self._unlock(keys=[key], args=[token]))
                done = True

        return release

    async def aclose(self) -> None:
        """Close the connection pool; idempotent."""
        await self._client.aclose()
