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
from collections.abc import AsyncIterable, AsyncIterator
from typing import Final

import httpx2

__all__ = ["IDENTITY", "STEP", "Inflated", "UnreadableEncodingError", "body_chunks", "inflatable"]

IDENTITY: Final = {"accept-encoding": "identity"}
"""The request header that asks for an uncompressed reply."""

STEP: Final = 64 * 1024
"""Bytes inflated at a time: what a reply's next chunk may grow to before the bound sees it."""
_WBITS: Final = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def inflatable(encoding: str) -> bool:
    """Whether a ``Content-Encoding`` value (lower-cased) is one this module inflates."""
    return encoding in _WBITS


class Inflated(httpx2.AsyncByteStream):
    """A compressed body's bytes, inflated at most :data:`STEP` at a time (the reader bounds the total).

    Args:
        inner: The raw (compressed) body.
        encoding: ``gzip`` or ``deflate`` (:func:`inflatable`).
    """

    def __init__(self, inner: AsyncIterable[bytes], encoding: str) -> None:
        self._inner = inner
        self._deflate = encoding == "deflate"
        self._z = zlib.decompressobj(_WBITS[encoding])
        self._first = True

    async def __aiter__(self) -> AsyncIterator[bytes]:
        # A body that does not inflate ends where it stops inflating: what came out so far is what
        # the reader reads (a reply cut short is not JSON, and fails its request as such).
        async for chunk in self._inner:
            data = chunk
            while data and not self._z.eof:
                try:
                    out = self._z.decompress(data, STEP)
                except zlib.error:
                    if not (self._deflate and self._first):
                        return
                    # Servers send raw deflate under "deflate" too: read it so.
                    self._z, self._first = zlib.decompressobj(-zlib.MAX_WBITS), False
                    continue
                self._first = False
                data = self._z.unconsumed_tail
                if out:
                    yield out
        while not self._z.eof and (rest := self._z.decompress(b"", STEP)):
            yield rest

    async def aclose(self) -> None:
        if isinstance(self._inner, httpx2.AsyncByteStream):
            await self._inner.aclose()


class UnreadableEncodingError(ValueError):
    """A reply in a ``Content-Encoding`` that is not inflated (:func:`inflatable`): it is not read."""

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
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return response.aiter_raw()
    if not inflatable(encoding):
        raise UnreadableEncodingError(encoding)
    return aiter(Inflated(response.aiter_raw(), encoding))


async def _once(content: bytes) -> AsyncIterator[bytes]:
    yield content
