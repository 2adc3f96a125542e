"""A small HTTP API described by ``openapi_service.yaml``, for the OpenAPI provider's tests.

Run: ``python openapi_service.py --port PORT``; it prints uvicorn's "Uvicorn running on" when
ready. Credentials it accepts come from the environment: ``PETS_TOKEN`` (bearer, for adding a
pet) and ``PETS_API_KEY`` (``X-API-Key``, for ``/secure/whoami`` and ``/secure/account``).

For the tests of where requests and credentials go, it records every request (method, raw path,
query, ``Authorization`` and ``X-API-Key``) except those to ``/_test/...``, its control routes:
``/_test/seen`` answers the record; ``/_test/dripping`` answers once a ``/drip.yaml`` (the
document, one byte every ``?every=`` seconds) has begun, ``/_test/drip-ended`` once it stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gzip
import json
import os
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

SPEC = Path(__file__).with_name("openapi_service.yaml")
PETS: dict[int, dict[str, object]] = {
    1: {"id": 1, "name": "Rex", "tag": "dog"},
    2: {"id": 2, "name": "Tom", "tag": "cat"},
}
SEEN: list[dict[str, Any]] = []
DRIPPING = asyncio.Event()
DRIP_ENDED = asyncio.Event()


class Recorder:
    """ASGI middleware: what arrived, for the tests to read at ``/_test/seen``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith("/_test/"):
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            SEEN.append(
                {
                    "method": scope["method"],
                    "raw_path": scope["raw_path"].decode("latin-1"),
                    "query": scope["query_string"].decode("latin-1"),
                    "authorization": headers.get("authorization"),
                    "x-api-key": headers.get("x-api-key"),
                    "accept-encoding": headers.get("accept-encoding"),
                }
            )
        await self.app(scope, receive, send)


async def seen(request: Request) -> Response:
    return JSONResponse(SEEN)


async def spec_for(request: Request) -> Response:
    # The document with another server URL, as a document on one host may name another.
    server = f"  - url: '{request.query_params['server']}'\n"
    if "h" in request.query_params:  # the server URL's variable h, with this default
        server += f"    variables:\n      h:\n        default: '{request.query_params['h']}'\n"
    text = SPEC.read_text().replace("  - url: /\n", server, 1)
    return PlainTextResponse(text, media_type="application/yaml")


async def drip(request: Request) -> Response:
    every = float(request.query_params.get("every", "0.3"))

    async def trickle():  # the document, one byte at a time
        try:
            for byte in SPEC.read_bytes():
                yield bytes([byte])
                DRIPPING.set()
                await asyncio.sleep(every)
        finally:
            DRIP_ENDED.set()

    return StreamingResponse(trickle(), media_type="application/yaml")


async def dripping(request: Request) -> Response:
    await DRIPPING.wait()
    return Response(status_code=204)


async def drip_ended(request: Request) -> Response:
    await DRIP_ENDED.wait()
    return Response(status_code=204)


async def redirect(request: Request) -> Response:
    return RedirectResponse(request.query_params["to"], status_code=307)


async def v1(request: Request) -> Response:
    # The tenants API of the path tests: says what arrived.
    return JSONResponse({"method": request.method, "raw_path": request.scope["raw_path"].decode("latin-1")})


async def spec(request: Request) -> Response:
    return PlainTextResponse(SPEC.read_text(), media_type="application/yaml")


async def spec_gz(request: Request) -> Response:
    # A packed file as it is, not a Content-Encoding the client would undo.
    return Response(gzip.compress(SPEC.read_bytes()), media_type="application/gzip")


async def list_pets(request: Request) -> Response:
    limit = int(request.query_params.get("limit", "20"))
    tags = request.query_params.getlist("tags")
    pets = [p for p in PETS.values() if not tags or p["tag"] in tags]
    return JSONResponse(pets[:limit])


async def create_pet(request: Request) -> Response:
    if request.headers.get("authorization") != f"Bearer {os.environ['PETS_TOKEN']}":
        return JSONResponse({"message": "a bearer token is required"}, status_code=401)
    body = await request.json()
    pet = {"id": max(PETS) + 1, **body}
    PETS[int(pet["id"])] = pet
    return JSONResponse(pet, status_code=201)


async def get_pet(request: Request) -> Response:
    pet = PETS.get(int(request.path_params["pet_id"]))
    if pet is None:
        return JSONResponse({"message": f"no pet {request.path_params['pet_id']}"}, status_code=404)
    return JSONResponse(pet)


async def delete_pet(request: Request) -> Response:
    PETS.pop(int(request.path_params["pet_id"]), None)
    return Response(status_code=204)


async def echo(request: Request) -> Response:
    return JSONResponse(
        {
            "word": request.path_params["word"],
            "raw_path": request.scope["raw_path"].decode(),
            "query": sorted(request.query_params.multi_items()),
            "request_id": request.headers.get("x-request-id"),
            "cookies": dict(request.cookies),
        }
    )


async def headers_seen(request: Request) -> Response:
    # Every header line as sent (a name twice stays twice) and the query as sent.
    raw = [[k.decode("latin-1"), v.decode("latin-1")] for k, v in request.scope["headers"]]
    return JSONResponse({"headers": raw, "query": request.scope["query_string"].decode("latin-1")})


async def charset(request: Request) -> Response:
    # Text in whatever charset the path names, known or not, with the status the query asks for.
    headers = {"content-type": f"text/plain; charset={request.path_params['name']}"}
    return Response(b"caf\xc3\xa9", status_code=int(request.query_params.get("status", 200)), headers=headers)


async def put_note(request: Request) -> Response:
    lines = await request.json()
    return JSONResponse({"id": request.path_params["id"], "lines": len(lines)})


async def whoami(request: Request) -> Response:
    if request.headers.get("x-api-key") != os.environ["PETS_API_KEY"]:
        return PlainTextResponse("wrong or missing API key", status_code=403)
    return PlainTextResponse("the test suite")


async def account(request: Request) -> Response:
    # An API that echoes the key it was sent, as careless ones do: a pagination link carries it
    # percent-encoded, a debug field base64-encoded, alone and inside a Basic credential.
    key = request.headers.get("x-api-key", "")
    if key != os.environ["PETS_API_KEY"]:
        return PlainTextResponse("wrong or missing API key", status_code=403)
    b64 = base64.b64encode(key.encode()).decode()
    return JSONResponse(
        {
            "owner": "the test suite",
            "key": key,
            "next": str(request.url.include_query_params(page=2)),
            "debug": {"key_b64": b64, "upstream_auth": "Basic " + base64.b64encode(f"svc:{key}".encode()).decode()},
        }
    )


async def weather(request: Request) -> Response:
    key = os.environ["PETS_API_KEY"]
    appid = request.query_params.get("appid", "")
    if appid != key or request.headers.get("x-api-key") != key:
        return PlainTextResponse(f"wrong API key: appid={appid!r} in {request.url}", status_code=401)
    return JSONResponse({"city": request.query_params["city"], "sunny": True, "query": request.url.query})


async def slow(request: Request) -> Response:
    await asyncio.sleep(60)  # the caller's timeout is what is tested
    return PlainTextResponse("late")


async def big(request: Request) -> Response:
    chunk = json.dumps(["x" * 1000] * 1024).encode()[1:-1]
    encoding = request.query_params.get("encoding")
    if encoding:  # compressed whatever the client asked for: gzip for real, any other name as is
        body = b"[" + b",".join([chunk] * 8) + b"]"
        packed = gzip.compress(body, compresslevel=9) if encoding == "gzip" else body[:1000]
        headers = {"content-encoding": encoding}
        return Response(packed, media_type="application/json", headers=headers)

    async def items():  # 8 MiB of JSON, streamed
        yield b"["
        for i in range(8):
            yield (b"," if i else b"") + chunk
        yield b"]"

    return StreamingResponse(items(), media_type="application/json")


async def fail(request: Request) -> Response:
    auth = request.headers.get("authorization", "")
    return PlainTextResponse(f"database on fire; you sent {auth!r}", status_code=500)


app = Starlette(
    middleware=[Middleware(Recorder)],
    routes=[
        Route("/_test/seen", seen),
        Route("/_test/dripping", dripping),
        Route("/_test/drip-ended", drip_ended),
        Route("/openapi.yaml", spec),
        Route("/openapi-for", spec_for),
        Route("/drip.yaml", drip),
        Route("/redirect", redirect, methods=["GET", "POST", "DELETE"]),
        Route("/v1/{rest:path}", v1, methods=["GET", "POST", "DELETE"]),
        Route("/headers", headers_seen, methods=["POST"]),
        Route("/charset/{name}", charset),
        Route("/openapi.yaml.gz", spec_gz),
        Route("/pets", list_pets, methods=["GET"]),
        Route("/pets", create_pet, methods=["POST"]),
        Route("/pets/{pet_id:int}", get_pet, methods=["GET"]),
        Route("/pets/{pet_id:int}", delete_pet, methods=["DELETE"]),
        Route("/echo/{word:path}", echo),
        Route("/notes/{id}", put_note, methods=["PUT"]),
        Route("/secure/whoami", whoami),
        Route("/secure/account", account),
        Route("/secure/weather", weather),
        Route("/slow", slow),
        Route("/big", big),
        Route("/fail", fail),
    ],
)

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="info")
