"""Stored results: what did not fit the output budget is kept, and read back a page at a time.

The full content is a record of the state store (kind ``result``, a TTL, a size cap) that only
the caller who produced it reads: ``read_result(ref, offset, limit)`` in every door, the MCP
resource ``toolcode://results/<ref>``, ``load_result(ref)`` in a snippet. Pages are character
ranges of the stored text: concatenated, they are the content exactly.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any, Final

from toolcode._sessions import owner_of
from toolcode._settings import ResultSettings
from toolcode.exceptions import InvalidArgumentsError
from toolcode.state import StateStore

__all__ = ["RESULT_URI_PREFIX", "Stored", "StoredResults", "result_ref_of_uri"]

KIND: Final = "result"
RESULT_URI_PREFIX: Final = "toolcode://results/"
_REF: Final = re.compile(r"^r-[0-9a-f]{12}\Z")
DEFAULT_PAGE_CHARS: Final = 100_000
MAX_PAGE_CHARS: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class Stored:
    """A stored content's reference and size."""

    ref: str
    what: str
    total_chars: int
    media: str
    expires: float

    @property
    def uri(self) -> str:
        """The MCP resource that returns it."""
        return RESULT_URI_PREFIX + self.ref


def result_ref_of_uri(uri: str) -> tuple[str, int, int | None] | None:
    """``(ref, offset, limit)`` of a ``toolcode://results/<ref>[?offset=N&limit=M]`` URI, or ``None``."""
    if not uri.startswith(RESULT_URI_PREFIX):
        return None
    ref, _, query = uri.removeprefix(RESULT_URI_PREFIX).partition("?")
    parts = {k: v for k, _, v in (p.partition("=") for p in query.split("&"))} if query else {}
    if not all(val.isdigit() for val in parts.values()):
        return None
    return ref, int(parts.get("offset", 0)), int(parts["limit"]) if "limit" in parts else None


class StoredResults:
    """The stored results of one state store.

    Each is kept under its owner's key (``<owner>/<ref>``), within a quota per caller (count and
    bytes): keeping one more drops that caller's oldest, never another caller's.

    Args:
        store: Where they live.
        settings: TTL and size cap.
    """

    def __init__(self, store: StateStore, settings: ResultSettings | None = None) -> None:
        self.store = store
        self.settings = settings or ResultSettings()

    async def keep(self, caller: str | None, what: str, text: str, media: str) -> Stored | None:
        """Keep ``text`` for ``caller``; ``None`` when it is over a size cap (then it is not kept).

        Its oldest results are dropped first when one more would pass its quota (``max_per_caller``,
        ``max_bytes_per_caller``).
        """
        if len(text) > self.settings.max_chars:
            return None
        ref = "r-" + secrets.token_hex(6)  # 48 random bits: a name, not a secret (only its owner reads it)
        expires = time.time() + self.settings.ttl
        owner = owner_of(caller)
        head = json.dumps({"v": 1, "owner": owner, "what": what, "media": media, "expires": expires})
        blob = head.encode() + b"\n" + text.encode("utf-8", "surrogatepass")
        if len(blob) > self.settings.max_bytes_per_caller:
            return None
        key = f"{owner}/{ref}"
        await self._make_room(owner, 1, len(blob))
        await self.store.put(KIND, key, blob, ttl=self.settings.ttl)
        # Trimmed again once written: results kept at once (on this server or others sharing the
        # store) each made room for itself alone; the last written sees the others, so together they
        # stay within the quota.
        await self._make_room(owner, 0, 0, keep=key)
        return Stored(ref, what, len(text), media, expires)

    async def _make_room(self, owner: str, count: int, size: int, *, keep: str = "") -> None:
        """Drop the owner's oldest results (never ``keep``) until ``count`` more, of ``size`` bytes, fit its quota."""
        s = self.settings
        kept = await self.store.list(KIND, prefix=owner + "/", limit=2 * s.max_per_caller + 16)
        kept.sort(key=lambda r: r.created)
        held, total = len(kept), sum(r.size for r in kept)
        for old in kept:
            if held + count <= s.max_per_caller and total + size <= s.max_bytes_per_caller:
                break
            if old.key == keep:
                continue
            await self.store.delete(KIND, old.key)
            held, total = held - 1, total - old.size

    @staticmethod
    def _unknown(ref: str) -> InvalidArgumentsError:
        return InvalidArgumentsError(
            "ref", f"no stored result {ref[:40]!r}: unknown, or expired (results are kept toolcode.results.ttl seconds)"
        )

    async def _load(self, ref: Any, caller: str | None) -> tuple[dict[str, Any], str]:
        if not isinstance(ref, str) or not _REF.match(ref):
            raise InvalidArgumentsError(
                "ref", f"must be a stored result's reference ('r-' and 12 hex digits), got {str(ref)[:50]!r}"
            )
        rec = await self.store.get(KIND, f"{owner_of(caller)}/{ref}")  # only the caller's own are read
        if rec is None:
            raise self._unknown(ref)
        head, _, body = rec.value.partition(b"\n")
        try:
            meta: dict[str, Any] = json.loads(head)
        except ValueError:
            raise self._unknown(ref) from None
        if meta.get("owner") != owner_of(caller):
            raise self._unknown(ref)  # another caller's: not even its existence is shown
        return meta, body.decode("utf-8", "surrogatepass")

    async def read(self, ref: Any, caller: str | None, offset: Any = 0, limit: Any = None) -> dict[str, Any]:
        """A page: ``{ref, offset, text, total_chars, next_offset, media}`` (``next_offset`` ``None`` at the end).

        Raises:
            InvalidArgumentsError: For a malformed, unknown, expired or another caller's reference,
                or an offset or limit out of range.
        """
        meta, text = await self._load(ref, caller)
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= len(text):
            raise InvalidArgumentsError("offset", f"must be an integer from 0 to {len(text)}, got {str(offset)[:20]!r}")
        if limit is None:
            limit = DEFAULT_PAGE_CHARS
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE_CHARS:
            raise InvalidArgumentsError(
                "limit", f"must be an integer from 1 to {MAX_PAGE_CHARS}, got {str(limit)[:20]!r}"
            )
        page = text[offset : offset + limit]
        end = offset + len(page)
        return {
            "ref": ref,
            "offset": offset,
            "text": page,
            "total_chars": len(text),
            "next_offset": end if end < len(text) else None,
            "media": meta.get("media", "text/plain"),
        }

    async def load(self, ref: Any, caller: str | None) -> Any:
        """The whole content: the value itself when it was stored as JSON, else the text."""
        meta, text = await self._load(ref, caller)
        if meta.get("media") == "application/json":
            try:
                return json.loads(text)
            except ValueError:
                return text
        return text
