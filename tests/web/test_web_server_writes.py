"""The web server as GitHub meets it: real uvicorn on a socket with Ballet's
coalesced writes (a response's head and body go out together), every response
arriving complete and in order, several on one kept-alive connection."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator

import httpx
import pytest
from arq.connections import ArqRedis
from ballet.queue import EVENTS_QUEUE
from ballet.settings import Settings
from ballet.web import create_app
from ballet.web.server import WebServer
from webhook_signing import delivery_headers

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def port(settings: Settings, redis: ArqRedis) -> AsyncIterator[int]:
    port = free_port()
    server = WebServer(create_app(settings), "127.0.0.1", port)
    task = asyncio.create_task(server.run())
    while True:
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            break
        await asyncio.sleep(0.05)
    yield port
    server.stop()
    await task


def request(
    method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: ballet", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")[:-2]
    headers = dict(line.lower().split(": ", 1) for line in header_lines)
    body = await reader.readexactly(int(headers["content-length"]))
    return int(status_line.split()[1]), headers, body


async def test_pipelined_requests_on_one_connection_are_each_answered_whole(port: int) -> None:
    body = b'{"action": "labeled"}'
    signed = delivery_headers("issues", body, "written-whole")
    unsigned = {**signed, "X-Hub-Signature-256": "sha256=" + "0" * 64}
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        request("GET", "/healthz")
        + request("POST", "/webhooks", body, signed)
        + request("POST", "/webhooks", body, unsigned)
        + request("GET", "/metrics")
    )
    await writer.drain()

    health = await read_response(reader)
    accepted = await read_response(reader)
    refused = await read_response(reader)
    metrics = await read_response(reader)
    writer.close()

    assert (health[0], json.loads(health[2])) == (200, {"status": "ok"})
    assert accepted[0] == 202
    assert accepted[1]["content-type"] == "application/json"
    assert json.loads(accepted[2]) == {"status": "accepted", "delivery": "written-whole"}
    assert refused[0] == 401
    assert json.loads(refused[2])["error"] == "signature"
    assert metrics[0] == 200
    assert b"ballet_webhook_deliveries_total" in metrics[2]


async def test_a_get_on_the_webhook_path_is_refused_with_405(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request("GET", "/webhooks"))
    await writer.drain()
    status, _, body = await read_response(reader)
    writer.close()
    assert status == 405
    assert "POST /webhooks" in json.loads(body)["message"]


async def test_the_queue_holds_what_the_socket_was_told(port: int, redis: ArqRedis) -> None:
    body = b'{"action": "opened"}'
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for n in range(5):
        writer.write(request("POST", "/webhooks", body, delivery_headers("issues", body, f"s-{n}")))
    await writer.drain()
    statuses = [(await read_response(reader))[0] for _ in range(5)]
    writer.close()
    assert statuses == [202] * 5
    assert sorted(m.decode() for m in await redis.zrange(EVENTS_QUEUE, 0, -1)) == [
        f"s-{n}" for n in range(5)
    ]


async def test_a_delivery_before_the_app_is_ready_is_answered_503(
    settings: Settings, redis: ArqRedis
) -> None:
    app = create_app(settings)  # its lifespan has not run: no queue yet
    body = b'{"action": "opened"}'
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://b") as http:
        response = await http.post(
            "/webhooks", content=body, headers=delivery_headers("issues", body)
        )
    assert response.status_code == 503
    assert response.json()["error"] == "starting"
    assert await redis.dbsize() == 0
