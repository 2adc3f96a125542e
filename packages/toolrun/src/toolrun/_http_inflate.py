"""Compressed HTTP replies (of an MCP server, an OpenAPI service), inflated within the bound on them.

An HTTP client inflates a ``Content-Encoding: gzip`` body after every bound on its bytes was
counted, so a reply of a few hundred kilobytes could inflate to gigabytes in the server's
memory (1,000 to 1 in ``gzip``). toolrun asks for uncompressed replies (``Accept-Encoding:
identity``); a server that compresses anyway has its body inflated here, step by step, before
anything counts or parses it, so ``maxResponseBytes`` bounds what it inflates to. ``gzip`` and
``deflate`` are inflated; any other coding (``br``, ``zstd``, several at once) is not read: the
request fails with a :func:`~toolrun._mcp_reader.malformed_error` saying so. OpenAPI services'
replies and documents are read through :func:`body_chunks` alike.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from typing import Final, TypeVar

import httpx2

__all__ = ["IDENTITY", "STEP", "Inflated", "UnreadableEncodingError", "body_chunks", "inflating"]

IDENTITY: Final = {"accept-encoding": "identity"}
"""The request header that asks for an uncompressed reply."""

STEP: Final = 64 * 1024
"""Bytes inflated at a time: what a reply's next chunk may grow to before the bound sees it."""
_WBITS: Final = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


S = TypeVar("S", bound=AsyncIterable[bytes])


def inflating(raw: S, encoding: str) -> S | Inflated:
    """``raw`` as it inflates under ``encoding`` (a ``Content-Encoding`` value): as it is for ``identity``.

    Raises:
        UnreadableEncodingError: If the body is in a coding that is not inflated (``br``, several).
    """
    coding = encoding.strip().lower()
    if coding in ("", "identity"):
        return raw
    if coding not in _WBITS:
        raise UnreadableEncodingError(coding)
    return Inflated(raw, coding)


class Inflated(httpx2.AsyncByteStream):
    """A compressed body's bytes, inflated at most :data:`STEP` at a time (the reader bounds the total).

    A ``gzip`` body may hold several members, one after another: each is inflated in turn. A
    ``deflate`` body is zlib data or, as some servers send it, raw deflate: told by its first two
    bytes (a zlib header is a multiple of 31). A body that does not inflate ends where it stops
    inflating: what came out so far is what the reader reads (a reply cut short is not JSON, and
    fails its request as such).

    Args:
        inner: The raw (compressed) body.
        encoding: ``gzip`` or ``deflate`` (lower-cased; see :func:`inflating`).
    """

    def __init__(self, inner: AsyncIterable[bytes], encoding: str) -> None:
        self._inner = inner
        self._gzip = encoding != "deflate"
        self._z = zlib.decompressobj(_WBITS[encoding]) if self._gzip else None
        self._head = b""
        """A ``deflate`` body's first bytes, until there are two to tell its format by."""
        self._ended = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            for out in self._inflate(chunk):
                yield out
            if self._ended:
                return
        z = self._z
        while z is not None and not z.eof and (rest := z.decompress(b"", STEP)):
            yield rest

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        z = self._z
        if z is None:
            self._head += data
            if len(self._head) < 2:
                return
            data, self._head = self._head, b""
            zlib_header = data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            z = self._z = zlib.decompressobj(zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)
        while data:
            if z.eof:
                if not self._gzip:  # bytes after the end of zlib or raw deflate data: not read
                    self._ended = True
                    return
                z = self._z = zlib.decompressobj(_WBITS["gzip"])  # the next gzip member
            try:
                out = z.decompress(data, STEP)
            except zlib.error:
                self._ended = True
                return
            data = z.unconsumed_tail or (z.unused_data if z.eof else b"")
            if out:
                yield out

    async def aclose(self) -> None:
        if isinstance(self._inner, httpx2.AsyncByteStream):
            await self._inner.aclose()


class UnreadableEncodingError(ValueError):
    """A reply in a ``Content-Encoding`` that is not inflated (:func:`inflating`): it is not read."""

    def __init__(self, encoding: str) -> None:
        super().__init__(f"the reply is compressed ({encoding[:40]}), which is not read")
        self.encoding = encoding


def body_chunks(response: httpx2.Response) -> AsyncIterator[bytes]:
    """A streamed response's body, inflated at most :data:`STEP` bytes at a time if it is compressed.

    Use it in place of ``response.aiter_bytes()``, whose decoder inflates each chunk whole
    before the caller can count it.

    Raises:
        UnreadableEncodingError: If the body is in a coding that is not inflated.
    """
    if response.is_stream_consumed:  # read whole already (a transport of its own did): as it is
        return _once(response.content)
    return aiter(inflating(response.aiter_raw(), response.headers.get("content-encoding", "identity")))


async def _once(content: bytes) -> AsyncIterator[bytes]:
    yield content
