"""A small HTTP API described by ``openapi_service.yaml``, for the OpenAPI provider's tests.

Run: ``python openapi_service.py --port PORT``; it prints uvicorn's "Uvicorn running on" when
ready. Credentials it accepts come from the environment: ``PETS_TOKEN`` (bearer, for adding a
pet) and ``PETS_API_KEY`` (``X-API-Key``, for ``/secure/whoami``).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

SPEC = Path(__file__).with_name("openapi_service.yaml")
PETS: dict[int, dict[str, object]] = {
    1: {"id": 1, "name": "Rex", "tag": "dog"},
    2: {"id": 2, "name": "Tom", "tag": "cat"},
}


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


async def put_note(request: Request) -> Response:
    lines = await request.json()
    return JSONResponse({"id": request.path_params["id"], "lines": len(lines)})


async def whoami(request: Request) -> Response:
    if request.headers.get("x-api-key") != os.environ["PETS_API_KEY"]:
        return PlainTextResponse("wrong or missing API key", status_code=403)
    return PlainTextResponse("the test suite")


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
    async def items():  # 8 MiB of JSON, streamed
        yield b"["
        chunk = json.dumps(["x" * 1000] * 1024).encode()[1:-1]
        for i in range(8):
            yield (b"," if i else b"") + chunk
        yield b"]"

    return StreamingResponse(items(), media_type="application/json")


async def fail(request: Request) -> Response:
    auth = request.headers.get("authorization", "")
    return PlainTextResponse(f"database on fire; you sent {auth!r}", status_code=500)


app = Starlette(
    routes=[
        Route("/openapi.yaml", spec),
        Route("/openapi.yaml.gz", spec_gz),
        Route("/pets", list_pets, methods=["GET"]),
        Route("/pets", create_pet, methods=["POST"]),
        Route("/pets/{pet_id:int}", get_pet, methods=["GET"]),
        Route("/pets/{pet_id:int}", delete_pet, methods=["DELETE"]),
        Route("/echo/{word:path}", echo),
        Route("/notes/{id}", put_note, methods=["PUT"]),
        Route("/secure/whoami", whoami),
        Route("/secure/weather", weather),
        Route("/slow", slow),
        Route("/big", big),
        Route("/fail", fail),
    ]
)

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="info")
