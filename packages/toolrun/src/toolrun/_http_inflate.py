"""Compressed HTTP replies of an MCP server, inflated within the server's bound.

An HTTP client inflates a ``Content-Encoding: gzip`` body after every bound on its bytes was
counted, so a reply of a few hundred kilobytes could inflate to gigabytes in the server's
memory (1,000 to 1 in ``gzip``). toolrun asks for uncompressed replies (``Accept-Encoding:
identity``); a server that compresses anyway has its body inflated here, step by step, before
anything counts or parses it, so ``maxResponseBytes`` bounds what it inflates to. ``gzip`` and
``deflate`` are inflated; any other coding (``br``, ``zstd``, several at once) is not read: the
request fails with a :func:`~toolrun._mcp_reader.malformed_error` saying so.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator
from typing import Final

import httpx2

__all__ = ["STEP", "Inflated", "inflatable"]

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

    def __init__(self, inner: httpx2.AsyncByteStream, encoding: str) -> None:
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
        await self._inner.aclose()
