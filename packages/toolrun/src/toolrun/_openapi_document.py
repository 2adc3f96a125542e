"""Reading an OpenAPI document (a file, a URL or a mapping) within bounds, into plain JSON values.

A document comes from outside, so it is hostile input: it may be huge, nest without end, use
YAML aliases to expand a few kilobytes into gigabytes, or hold values JSON has no word for
(YAML dates, integer keys). What this module hands on is plain JSON (``dict`` with ``str``
keys, ``list``, ``str``, finite numbers, booleans, ``None``) of bounded size; everything
else is refused with a :class:`~toolrun.ConfigError` naming the server and the ``openapi``
field. Fetching a document from a URL has a deadline on the whole fetch (however slowly the
bytes arrive), a byte cap, and follows no redirect. YAML needs the
``openapi`` extra (``pip install 'toolrun[openapi]'``); the import happens here, lazily, so
toolrun imports without it.
"""

from __future__ import annotations

import datetime
import json
import math
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, cast

import anyio
import httpx2

from toolrun._gc import LARGE_DOCUMENT_BYTES, collector_paused
from toolrun._http_inflate import UnreadableEncodingError, body_chunks
from toolrun._redact import redact_url
from toolrun.exceptions import BackendUnavailableError, ConfigError

__all__ = [
    "EXTRA_HINT",
    "MAX_DOCUMENT_BYTES",
    "MAX_DOCUMENT_DEPTH",
    "MAX_DOCUMENT_NODES",
    "fetch_document",
    "is_url",
    "parse_document",
    "plain_document",
    "read_file",
]

MAX_DOCUMENT_BYTES: Final = 64 * 1024 * 1024
"""Default cap on a document's size in bytes (GitHub's largest published document has 14 MB)."""
MAX_DOCUMENT_NODES: Final = 5_000_000
"""Most JSON values a YAML document may expand to, its aliases expanded (GitHub's: 278,064)."""
MAX_DOCUMENT_DEPTH: Final = 256
"""Most nested objects/arrays in a YAML document (GitHub's: 22)."""

EXTRA_HINT: Final = "OpenAPI documents need the 'openapi' extra: pip install 'toolrun[openapi]'"


def is_url(source: str) -> bool:
    """Whether ``source`` is an ``http://`` or ``https://`` URL (else it is a file path)."""
    return source.startswith(("http://", "https://"))


def read_file(path: Path, *, server: str, max_bytes: int) -> bytes:
    """The bytes of a document file, refused when larger than ``max_bytes``.

    A gzip file (told by its first bytes, whatever its name) is decompressed, and the cap
    applies to what it holds: a small file that unpacks to more is refused once that much
    came out, without unpacking the rest.

    Raises:
        ConfigError: If the file cannot be read, is too large, or is a broken gzip file.
    """
    try:
        with path.open("rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise ConfigError(server, "openapi", f"cannot read {str(path)!r}: {e.strerror or e}") from e
    if len(data) > max_bytes:
        raise ConfigError(server, "openapi", f"{str(path)!r} is larger than {max_bytes:,} bytes")
    if data[:2] == _GZIP_MAGIC:
        data = _gunzip(data, repr(str(path)), server=server, max_bytes=max_bytes)
    return data


_GZIP_MAGIC: Final = b"\x1f\x8b"


def _gunzip(data: bytes, what: str, *, server: str, max_bytes: int) -> bytes:
    """``data`` unpacked (one gzip member), refused once more than ``max_bytes`` came out."""
    unpack = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = unpack.decompress(data, max_bytes + 1)
    except zlib.error as e:
        raise ConfigError(server, "openapi", f"{what} is not a valid gzip file ({e})") from e
    if len(out) > max_bytes:
        raise ConfigError(server, "openapi", f"{what} unpacks to more than {max_bytes:,} bytes")
    if not unpack.eof:
        raise ConfigError(server, "openapi", f"{what} is a truncated gzip file")
    if unpack.unused_data:
        raise ConfigError(server, "openapi", f"{what} holds data after its gzip member")
    return out


async def fetch_document(
    client: httpx2.AsyncClient,
    url: str,
    *,
    server: str,
    max_bytes: int,
    headers: Mapping[str, str],
    timeout: float,
) -> bytes:
    """GET a document within ``timeout`` seconds in all, reading at most ``max_bytes`` of it.

    The deadline covers connecting and every read: a server that sends a byte now and then
    cannot keep the fetch (and a start-up waiting for it) going past it. A redirect is not
    followed (the client must not follow them): it fails, naming where it points. A gzip file
    (told by its first bytes) is unpacked within the same cap, as :func:`read_file` does; a
    compressed reply (``Content-Encoding``) is counted as it inflates (:func:`~toolrun._http_inflate.body_chunks`).

    Raises:
        BackendUnavailableError: If the URL cannot be reached, answers other than 2xx, or the
            whole document has not arrived within ``timeout``.
        ConfigError: If the document is larger than ``max_bytes`` or a broken gzip file.
    """
    shown = redact_url(url)
    chunks: list[bytes] = []
    with anyio.move_on_after(timeout) as deadline:
        try:
            async with client.stream("GET", url, headers=dict(headers)) as response:
                if not 200 <= response.status_code < 300:
                    answer = f"GET {shown} answered HTTP {response.status_code} {response.reason_phrase}"
                    if (location := response.headers.get("location")) and 300 <= response.status_code < 400:
                        answer += f"; redirects are not followed (to {redact_url(location)[:200]})"
                    raise BackendUnavailableError(f"openapi:{server}", answer)
                size = 0
                try:
                    body_stream = body_chunks(response)
                except UnreadableEncodingError as e:
                    raise ConfigError(server, "openapi", f"the document at {shown}: {e}") from None
                async for chunk in body_stream:
                    size += len(chunk)
                    if size > max_bytes:
                        raise ConfigError(
                            server, "openapi", f"the document at {shown} is larger than {max_bytes:,} bytes"
                        )
                    chunks.append(chunk)
        except httpx2.TimeoutException as e:
            raise BackendUnavailableError(f"openapi:{server}", f"GET {shown} timed out") from e
        except httpx2.HTTPError as e:
            raise BackendUnavailableError(f"openapi:{server}", f"cannot fetch {shown}: {type(e).__name__}: {e}") from e
    if deadline.cancelled_caught:
        raise BackendUnavailableError(
            f"openapi:{server}", f"GET {shown}: the document did not arrive within {timeout:g} s (connectTimeout)"
        )
    data = b"".join(chunks)
    if data[:2] == _GZIP_MAGIC:
        data = _gunzip(data, f"the document at {shown}", server=server, max_bytes=max_bytes)
    return data


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


_BOM = b"\xef\xbb\xbf"
_UNREAD: Any = object()


def _text(data: bytes, server: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(server, "openapi", f"the document is not UTF-8 text (byte {e.start})") from None


def _fast_json(data: bytes) -> Any:
    # orjson reads a large document in half the time (and without decoding it to a str first);
    # anything it refuses (integers over 64 bits, lone surrogates, nesting over 1,024 levels,
    # invalid input) goes to the standard library, whose answer or error is the one given.
    try:
        import orjson
    except ImportError:  # pragma: no cover - part of the openapi extra
        return _UNREAD
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return _UNREAD


def _json(text: str, server: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ConfigError(server, "openapi", "the document nests too deeply") from None
    except ValueError as e:  # JSONDecodeError included; its message quotes no input
        raise ConfigError(server, "openapi", f"the document is not valid JSON: {str(e)[:200]}") from None


def parse_document(data: bytes, *, server: str, max_nodes: int = MAX_DOCUMENT_NODES) -> dict[str, Any]:
    """Parse a document's bytes: JSON when it starts with ``{``, else YAML (safe loading only).

    Args:
        data: The document.
        server: Its server name, for errors.
        max_nodes: Most JSON values a YAML document may expand to.

    Returns:
        The document as plain JSON values.

    Raises:
        ConfigError: If it is not valid UTF-8 JSON or YAML, not an object, over a bound, or
            YAML is needed and the extra is missing.
    """
    large = len(data) >= LARGE_DOCUMENT_BYTES
    body = data.removeprefix(_BOM)
    if body.lstrip()[:1] == b"{":
        with collector_paused(large):
            doc: Any = _fast_json(body)
            if doc is _UNREAD:
                doc = _json(_text(data, server), server)
    else:
        text = _text(data, server)
        loaded = _load_yaml(text, server)  # the YAML loader's own objects are left to the collector
        with collector_paused(large):
            doc = plain_document(loaded, server=server, max_nodes=max_nodes)
    if not isinstance(doc, dict):
        raise ConfigError(server, "openapi", f"the document must be an object, got {type(doc).__name__}")
    return cast(dict[str, Any], doc)


def _load_yaml(text: str, server: str) -> Any:
    try:
        import yaml
    except ImportError as e:
        raise ConfigError(server, "openapi", EXTRA_HINT) from e
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)
    except RecursionError:
        raise ConfigError(server, "openapi", "the document nests too deeply") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or type(e).__name__
        raise ConfigError(server, "openapi", f"the document is not valid YAML: {str(problem)[:200]}{where}") from None


def plain_document(
    doc: Any, *, server: str, max_nodes: int = MAX_DOCUMENT_NODES, max_depth: int = MAX_DOCUMENT_DEPTH
) -> Any:
    """A copy of a loaded YAML document (or a caller's mapping) as plain JSON values.

    Walks iteratively (no depth can crash it) and counts every value it copies, so YAML
    aliases are paid for at their expanded size, and a recursive structure is refused by the
    depth bound. Keys become strings (YAML reads ``200:`` as an integer), dates become ISO
    text; other values JSON has no word for are refused.

    Raises:
        ConfigError: If a bound is crossed or a value is not JSON.
    """
    root: list[Any] = [None]
    # (value, container to put the copy in, key or index there, depth)
    stack: list[tuple[Any, Any, Any, int]] = [(doc, root, 0, 1)]
    nodes = 0
    while stack:
        value, parent, key, depth = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise ConfigError(
                server, "openapi", f"the document has more than {max_nodes:,} values (YAML aliases count)"
            )
        if depth > max_depth:
            raise ConfigError(server, "openapi", f"the document nests deeper than {max_depth} levels")
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            parent[key] = out
            for k, v in cast(Mapping[Any, Any], value).items():
                if isinstance(k, bool) or not isinstance(k, str | int | float):
                    raise ConfigError(server, "openapi", f"the document has a key of type {type(k).__name__}")
                out[str(k)] = None
                stack.append((v, out, str(k), depth + 1))
        elif isinstance(value, list | tuple):
            items = cast(list[Any], value)
            copy: list[Any] = [None] * len(items)
            parent[key] = copy
            stack.extend((v, copy, i, depth + 1) for i, v in enumerate(items))
        elif value is None or isinstance(value, str | bool | int):
            parent[key] = value
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise ConfigError(server, "openapi", "the document has a number that is not finite")
            parent[key] = value
        elif isinstance(value, datetime.date):
            parent[key] = value.isoformat()
        else:
            raise ConfigError(server, "openapi", f"the document has a value of type {type(value).__name__}")
    return root[0]
