from __future__ import annotations

import json
import time
from typing import Any

import pytest

from toolrun._mcp_reader import (
    MALFORMED,
    MAX_DEPTH,
    UNREADABLE,
    describe_parse_error,
    mend_text,
    request_id_at_end,
)


def nested(levels: int) -> str:
    return '{"type":"object","properties":{"a":' * levels + "{}" + "}}" * levels


def listing(*tools: str, request_id: int = 7) -> str:
    return f'{{"jsonrpc":"2.0","id":{request_id},"result":{{"tools":[{",".join(tools)}],"nextCursor":"2"}}}}'


def test_a_too_deep_tool_becomes_a_stub_and_the_others_stay() -> None:
    good = '{"name":"fine","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}}'
    deep = f'{{"name":"deep","inputSchema":{nested(5000)}}}'
    mended = mend_text(listing(good, deep, good.replace("fine", "also_fine")))
    assert mended is not None
    assert mended["id"] == 7
    assert mended["result"]["nextCursor"] == "2"
    tools: list[dict[str, Any]] = mended["result"]["tools"]
    assert tools[0] == json.loads(good)
    assert tools[1] == {"name": "deep", UNREADABLE: f"its definition is nested deeper than {MAX_DEPTH} levels"}
    assert tools[2]["name"] == "also_fine"


def test_a_too_deep_tool_without_a_usable_name() -> None:
    mended = mend_text(listing(f'{{"name":42,"inputSchema":{nested(300)}}}'))
    assert mended is not None
    assert mended["result"]["tools"][0]["name"] == "?"


def test_any_other_too_deep_reply_becomes_an_error_for_its_request() -> None:
    text = '{"jsonrpc":"2.0","id":"r-1","result":{"structuredContent":' + "[" * 5000 + "]" * 5000 + "}}"
    assert mend_text(text) == {
        "jsonrpc": "2.0",
        "id": "r-1",
        "error": {
            "code": -32700,
            "message": f"the server's reply is nested deeper than {MAX_DEPTH} levels",
            "data": {"reason": MALFORMED},
        },
    }


@pytest.mark.parametrize(
    ("text", "request_id", "words"),
    [
        ('{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","te', 12, "EOF while parsing"),
        ('{"jsonrpc":"2.0","result":{"content":[{"id":99}]},"id":"abc","x":[', "abc", "not valid JSON"),
        ('{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"\\ud800"}]}}', 3, "not valid JSON"),
        ('{"jsonrpc":"2.0","id":5,"result":"not an object"}', 5, "not a valid JSON-RPC response"),
    ],
)
def test_a_broken_reply_with_a_findable_id_becomes_an_error(text: str, request_id: int | str, words: str) -> None:
    mended = mend_text(text)
    assert mended is not None
    assert mended["id"] == request_id
    assert words in mended["error"]["message"]
    assert mended["error"]["data"] == {"reason": MALFORMED}
    assert "ud800" not in mended["error"]["message"]  # says where, never quotes the reply


@pytest.mark.parametrize(
    "text",
    [
        "this is not JSON at all",
        '{"hello": "world"}',
        '{"jsonrpc":"2.0","method":"notifications/message","params":' + "[" * 300 + "]" * 300 + "}",
        '{"jsonrpc":"2.0","id":true,"result":{}',
        '[{"jsonrpc":"2.0","id":1,"result":{}}',
    ],
)
def test_what_answers_no_request_is_left_alone(text: str) -> None:
    assert mend_text(text) is None


def test_describe_parse_error() -> None:
    sdk = (
        "Failed to parse JSON response: 1 validation error for union[JSONRPCRequest,JSONRPCResponse]\n"
        "  Invalid JSON: EOF while parsing a string at line 1 column 88 [type=json_invalid, input_value='{...'"
    )
    assert (
        describe_parse_error(sdk)
        == "the server's reply is not valid JSON (EOF while parsing a string at line 1 column 88)"
    )
    shape = "Failed to parse SSE message: 4 validation errors for union[...]\nJSONRPCRequest.method\n  Field required"
    assert describe_parse_error(shape) == "the server's reply is not a valid JSON-RPC response"


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ('xxxx"}]},"id":7}', 7),
        ('xxxx"}]},"id":"a-1","jsonrpc":"2.0"}\n', "a-1"),
        ('xxxx"}]}, "id" : -3 }', -3),
        ('{"id":5,"result":{}}', None),  # the id is not the last member
        ('"x":{"id":5}}', None),  # a nested id closes two objects
    ],
)
def test_the_id_of_a_reply_is_found_at_its_end(tail: str, expected: int | str | None) -> None:
    assert request_id_at_end(tail) == expected


def test_the_id_search_takes_time_in_proportion_to_the_text() -> None:
    # A broken message that is one long string full of escaped quotes: each quote must not start
    # another scan to the end (15 s for 64 KiB when it did). Compared with itself on a text 8 times
    # shorter, in CPU time, so a busy machine does not matter.
    from toolrun._mcp_reader import find_request_id

    def cost(n: int) -> float:
        text = '{"jsonrpc": "2.0", "result": {"x": "' + '\\"' * n
        start = time.process_time()
        for _ in range(50):
            assert find_request_id(text) is None
        return time.process_time() - start

    cost(100)
    small, large = cost(2_000), cost(16_000)
    assert large < 24 * max(small, 1e-4), (small, large)  # 8x the text: about 8x, never 64x
    assert find_request_id('{"jsonrpc": "2.0", "id": 7, "result": {"x": "a\\"b"}}') == 7
    assert find_request_id('{"result": {"x": "\\"", "id": 3}, "id": "r-1"}') == "r-1"
    assert find_request_id('{"id": 5, "result": "cut short \\') == 5


@pytest.mark.parametrize(
    "line",
    [
        '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"a":[1,2.5]}}}',
        '{"jsonrpc":"2.0","id":3,"result":{"big":' + "9" * 5000 + "}}",
        '{"jsonrpc":"2.0","id":4,"result":{"emoji":"\\ud83d\\ude00"}}',
        '{"jsonrpc":"2.0","id":5,"result":{"lone":"\\ud800 here"}}',
        '{"jsonrpc":"2.0","id":6,"result":{"deep":' + "[" * 3000 + "]" * 3000 + "}}",
        '{"jsonrpc":"2.0","id":7,"result":{"broken":',
        '{"jsonrpc":"2.0","id":8,"result":{"a":1,"a":2}}',
        '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}',
    ],
)
def test_a_line_is_read_as_the_sdk_reads_it(line: str) -> None:
    # Parsed with json first (a fifth of the memory for a reply of many small containers), with the
    # SDK's own parser where json reads otherwise: the same message, or an error, either way.
    import mcp_types as types

    from toolrun._mcp_stdio import _parse  # pyright: ignore[reportPrivateUsage]

    got = _parse(line)
    try:
        want: object = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as e:
        want = e
    if isinstance(want, Exception):
        assert isinstance(got, Exception) and type(got) is type(want)
    else:
        assert not isinstance(got, Exception) and repr(got.message) == repr(want)  # NaN is not equal to itself


def test_nan_or_infinity_in_a_reply_fails_the_call_it_answers() -> None:
    import mcp_types as types

    from toolrun._mcp_reader import MALFORMED
    from toolrun._mcp_stdio import _parse  # pyright: ignore[reportPrivateUsage]

    asks = _parse('{"jsonrpc":"2.0","id":2,"method":"sampling/createMessage","params":{"t":NaN}}')
    assert not isinstance(asks, Exception) and not isinstance(asks.message, types.JSONRPCError)  # the server's own
    for rid in (2, 0):  # an id of 0 is an id too
        got = _parse(f'{{"jsonrpc":"2.0","id":{rid},"result":{{"v":NaN,"w":Infinity}}}}')
        assert not isinstance(got, Exception)
        message = got.message
        assert isinstance(message, types.JSONRPCError) and message.id == rid
        assert "NaN" in message.error.message and message.error.data == {"reason": MALFORMED}


@pytest.mark.anyio
async def test_nan_or_infinity_over_http_fails_the_call_it_answers() -> None:
    # The SDK's HTTP client reads NaN as a float: a JSON body and an SSE event are read first.
    import httpx2

    from toolrun._mcp_reader import mend_http_response

    async def answer(body: bytes, ctype: str) -> Any:
        class Body(httpx2.AsyncByteStream):
            async def __aiter__(self) -> Any:
                yield body

        request = httpx2.Request("POST", "http://127.0.0.1/mcp", content=b'{"jsonrpc":"2.0","id":5,"method":"x"}')
        response = httpx2.Response(200, headers={"content-type": ctype}, stream=Body(), request=request)
        await mend_http_response(response)
        return b"".join([chunk async for chunk in response.stream])

    def sse(data: bytes) -> bytes:
        return b"event: message\ndata: " + data + b"\n\n"

    for rid in (5, 0):
        bad = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"structuredContent":{"v":-Infinity}}}' % rid
        tail = b'{"jsonrpc":"2.0","result":{"structuredContent":{"v":NaN}},"id":%d}' % rid  # the id written last
        for body, ctype in ((bad, "application/json"), (tail, "application/json"), (sse(bad), "text/event-stream")):
            got = (await answer(body, ctype)).decode()
            data = json.loads(got.partition("data: ")[2] if ctype == "text/event-stream" else got)
            assert data["id"] == rid and data["error"]["data"] == {"reason": MALFORMED}
            assert "which JSON does not have" in data["error"]["message"]
    # The words in a string, and a notification (no call to fail), are left as they are.
    fine = b'{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"NaN and Infinity"}]}}'
    note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":NaN}}'
    # A request of the server's carries its own id: failing our call of that number would be wrong.
    asks = b'{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"t":NaN}}'
    for body in (fine, note, asks):
        assert await answer(body, "application/json") == body
        assert await answer(sse(body), "text/event-stream") == sse(body)


def test_a_message_is_screened_before_it_is_parsed() -> None:
    from toolrun._mcp_reader import MAX_NOTIFICATION_BYTES, TOO_LARGE, screen

    limit = 4 * 1024 * 1024
    data = json.dumps("n" * MAX_NOTIFICATION_BYTES)
    note = f'{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":{data}}}}}'
    refused = screen(note, len(note), limit)
    assert refused is not None and refused.reply is None and "nnn" not in refused.why
    # A request of the server's (its id last, as the TypeScript SDK writes it) is answered, not dropped.
    asks = f'{{"method":"sampling/createMessage","params":{{"d":{data}}},"jsonrpc":"2.0","id":4}}'
    assert screen(asks, len(asks), limit) is None
    lists = "[" + ",".join(["[]"] * 300_000) + "]"
    for bomb in (f'{{"jsonrpc":"2.0","id":9,"result":{{"v":{lists}}}}}', f'{{"result":{{"v":{lists}}},"id":9}}'):
        refused = screen(bomb, len(bomb), limit)
        assert refused is not None and refused.reply is not None
        assert refused.reply["id"] == 9 and refused.reply["error"]["data"] == {
            "reason": TOO_LARGE,
            "limit": limit,
            "containers": 262_144,
        }
    records = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"rows": [{"id": i, "v": i} for i in range(200_000)]}})
    assert screen(records, len(records), limit) is None  # 5.6 MB of two-field records, under the bound


@pytest.mark.anyio
async def test_a_compressed_reply_is_bounded_by_what_it_inflates_to() -> None:
    # A gzip body of ~100 KiB inflated to 100 MiB in the client, after every bound on its bytes
    # had been counted: maxResponseBytes now bounds the inflated reply, step by step.
    import gzip
    import zlib

    import httpx2

    from toolrun._http_inflate import STEP
    from toolrun._mcp_reader import TOO_LARGE, mend_http_response

    async def answer(body: bytes, encoding: str, ctype: str = "application/json", limit: int = 1 << 20) -> Any:
        class Body(httpx2.AsyncByteStream):
            async def __aiter__(self) -> Any:
                for i in range(0, len(body), 8192):
                    yield body[i : i + 8192]

        request = httpx2.Request("POST", "http://127.0.0.1/mcp", content=b'{"jsonrpc":"2.0","id":5,"method":"x"}')
        headers = {"content-type": ctype, "content-encoding": encoding}
        response = httpx2.Response(200, headers=headers, stream=Body(), request=request)
        await mend_http_response(response, max_bytes=limit)
        chunks = [chunk async for chunk in response.stream]
        return b"".join(chunks), response

    def reply(text: str) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": text}]}}).encode()

    # Within the bound, each coding servers use reads as the plain reply (raw deflate too).
    plain = reply("hello")
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    for body, encoding in (
        (gzip.compress(plain), "gzip"),
        (zlib.compress(plain), "deflate"),
        (raw.compress(plain) + raw.flush(), "deflate"),
    ):
        got, response = await answer(body, encoding)
        assert got == plain and "content-encoding" not in response.headers
        # The client does not inflate again: what the SDK reads is the reply.
        assert json.loads(got)["result"]["content"][0]["text"] == "hello"

    # Over the bound: refused once the inflated bytes pass it, not inflated whole.
    bomb = gzip.compress(reply("A" * (24 << 20)), compresslevel=9)
    assert len(bomb) < (1 << 20)

    class Counted(httpx2.AsyncByteStream):
        def __init__(self) -> None:
            self.read = 0

        async def __aiter__(self) -> Any:
            for i in range(0, len(bomb), 8192):
                self.read += 8192
                yield bomb[i : i + 8192]

    counted = Counted()
    request = httpx2.Request("POST", "http://127.0.0.1/mcp", content=b'{"jsonrpc":"2.0","id":5,"method":"x"}')
    response = httpx2.Response(
        200, headers={"content-type": "application/json", "content-encoding": "gzip"}, stream=counted, request=request
    )
    await mend_http_response(response, max_bytes=1 << 20)
    error = json.loads(b"".join([chunk async for chunk in response.stream]))
    assert error["id"] == 5 and error["error"]["data"]["reason"] == TOO_LARGE
    # It stopped reading soon after the bound (1 MiB of 24 inflated), not at the bomb's end.
    assert counted.read <= len(bomb) // 8 + STEP

    # Over SSE alike.
    event = b"event: message\ndata: " + reply("B" * (4 << 20)) + b"\n\n"
    got, _ = await answer(gzip.compress(event), "gzip", "text/event-stream")
    assert TOO_LARGE.encode() in got and len(got) < 1024

    # A coding that is not inflated fails the request; a body that does not inflate is no reply.
    for body, encoding in ((b"\x1b\x00\x00", "br"), (gzip.compress(plain), "gzip, gzip")):
        got, response = await answer(body, encoding)
        failed = json.loads(got)
        assert failed["id"] == 5 and failed["error"]["data"] == {"reason": MALFORMED}
        assert encoding in failed["error"]["message"]
    got, _ = await answer(gzip.compress(plain)[:-30], "gzip")  # cut short: the SDK's parse fails the request
    with pytest.raises(ValueError):
        json.loads(got)
    got, _ = await answer(b"not compressed at all", "gzip")
    assert got == b""


@pytest.mark.anyio
async def test_every_reply_is_read_within_its_bound_whatever_its_type_and_members() -> None:
    # The SDK reads "application/jsonx" as JSON (a prefix), and any other type's body on an error
    # status: the bound held only for the two exact types, so such a gzip reply inflated whole.
    import gzip
    import zlib

    import httpx2

    from toolrun._mcp_reader import TOO_LARGE, mend_http_response

    async def answer(body: bytes, ctype: str, encoding: str, *, first: int = 8192, status: int = 200) -> bytes:
        class Body(httpx2.AsyncByteStream):
            async def __aiter__(self) -> Any:
                yield body[:first]
                for i in range(first, len(body), 8192):
                    yield body[i : i + 8192]

        request = httpx2.Request("POST", "http://127.0.0.1/mcp", content=b'{"jsonrpc":"2.0","id":5,"method":"x"}')
        headers = {"content-type": ctype, "content-encoding": encoding}
        response = httpx2.Response(status, headers=headers, stream=Body(), request=request)
        await mend_http_response(response, max_bytes=1 << 20)
        return b"".join([chunk async for chunk in response.stream])

    reply = json.dumps({"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "x" * (8 << 20)}]}})
    bomb = gzip.compress(reply.encode(), compresslevel=9)
    got = await answer(bomb, "application/jsonx", "gzip")
    assert TOO_LARGE.encode() in got and len(got) < 1024
    page = await answer(bomb, "text/html", "gzip", status=400)  # an error page: read up to the bound
    assert len(page) == 1 << 20

    # A gzip body of two members (a notification, then the reply) reads as both.
    note = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"hi"}}\n\n'
    last = b'event: message\ndata: {"jsonrpc":"2.0","id":5,"result":{"content":[]}}\n\n'
    assert await answer(gzip.compress(note) + gzip.compress(last), "text/event-stream", "gzip") == note + last

    # Raw deflate whose first chunk is one byte is told from zlib data by its first two bytes.
    plain = b'{"jsonrpc":"2.0","id":5,"result":{"content":[]}}'
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    for body in (raw.compress(plain) + raw.flush(), zlib.compress(plain)):
        assert await answer(body, "application/json", "deflate", first=1) == plain
