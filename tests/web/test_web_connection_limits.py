"""A stranger's connections against real uvicorn on loopback: unsigned or oversized
uploads refused from their head, slow and idle connections closed, and past the
connection limit the oldest idle one goes (or a newcomer is answered 503) while
/healthz still answers. Every wait has a 30 s bound that only catches a hang."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from arq.connections import ArqRedis
from ballet.settings import MAX_WEBHOOK_BYTES, Settings
from ballet.web import create_app
from ballet.web.limits import ConnectionLimits
from ballet.web.server import WebServer
from webhook_signing import delivery_headers

pytestmark = pytest.mark.anyio

HANG = 30.0  # seconds: only a hang takes longer
Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


Serve = Callable[[ConnectionLimits], Any]


@pytest.fixture
async def serve(settings: Settings, redis: ArqRedis) -> AsyncIterator[Serve]:
    """Start the web app on a port of its own with the given limits; its port."""
    servers: list[tuple[WebServer, asyncio.Task[None]]] = []

    async def start(limits: ConnectionLimits) -> int:
        port = free_port()
        server = WebServer(create_app(settings), "127.0.0.1", port, limits)
        servers.append((server, asyncio.create_task(server.run())))
        while True:
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                return port
            await asyncio.sleep(0.05)

    yield start
    for server, task in servers:
        server.stop()
        await asyncio.wait_for(task, HANG)


def limits(
    max_connections: int = 64, backlog: int = 16, idle: float = 30.0, body: float = 30.0
) -> ConnectionLimits:
    return ConnectionLimits(max_connections, backlog, idle, body)


def head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: ballet"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def connect(port: int, data: bytes = b"") -> Connection:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    if data:
        writer.write(data)
        await writer.drain()
    return reader, writer


async def answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], dict[str, Any]]:
    raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HANG)
    status_line, *lines = raw.decode("latin-1").split("\r\n")[:-2]
    headers = dict(line.lower().split(": ", 1) for line in lines)
    body = await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), HANG)
    return int(status_line.split()[1]), headers, json.loads(body)


async def closed(reader: asyncio.StreamReader) -> bool:
    """True once the server closed the connection (whatever it said first is skipped)."""
    with contextlib.suppress(ConnectionResetError):
        while await asyncio.wait_for(reader.read(65536), HANG):
            pass
    return True


async def healthz(port: int) -> int:
    reader, writer = await connect(port, head("GET", "/healthz", {}))
    status, _, _ = await answer(reader)
    writer.close()
    return status


async def test_an_unsigned_upload_is_refused_from_its_head_alone(serve: Serve) -> None:
    port = await serve(limits())
    upload = {"Content-Length": str(MAX_WEBHOOK_BYTES), **delivery_headers("issues", b"{}")}
    for signature in (None, "sha256=short", "sha1=" + "0" * 40):
        headers = {k: v for k, v in upload.items() if k != "X-Hub-Signature-256"}
        if signature is not None:
            headers["X-Hub-Signature-256"] = signature
        # Only the head is sent: the answer comes without a byte of the 25 MiB body.
        reader, writer = await connect(port, head("POST", "/webhooks", headers))
        status, response_headers, content = await answer(reader)
        assert (status, content["error"]) == (401, "signature")
        assert "BALLET_WEBHOOK_SECRET" in content["message"]
        assert response_headers["connection"] == "close"
        assert await closed(reader)
        writer.close()


async def test_an_oversized_content_length_is_refused_from_its_head_alone(serve: Serve) -> None:
    port = await serve(limits())
    signed = delivery_headers("issues", b"{}")
    reader, writer = await connect(
        port, head("POST", "/webhooks", {"Content-Length": str(MAX_WEBHOOK_BYTES + 1), **signed})
    )
    status, response_headers, content = await answer(reader)
    assert (status, content["error"]) == (413, "too_large")
    assert "25 MB" in content["message"]
    assert response_headers["connection"] == "close"
    assert await closed(reader)
    writer.close()


async def test_a_half_sent_body_is_answered_408_and_closed(serve: Serve) -> None:
    port = await serve(limits(body=0.5))
    body = b'{"action": "labeled", "padding": "' + b"x" * 1000 + b'"}'
    signed = {"Content-Length": str(len(body)), **delivery_headers("issues", body)}
    reader, writer = await connect(port, head("POST", "/webhooks", signed) + body[:100])
    status, response_headers, content = await answer(reader)
    assert (status, content["error"]) == (408, "timeout")
    assert "BALLET_WEB_BODY_SECONDS" in content["message"]
    assert response_headers["connection"] == "close"
    assert await closed(reader)
    writer.close()
    # A whole body in time is still taken.
    reader, writer = await connect(port, head("POST", "/webhooks", signed) + body)
    status, _, content = await answer(reader)
    assert status == 202, content
    writer.close()


async def test_idle_and_slow_headed_connections_are_closed(serve: Serve) -> None:
    port = await serve(limits(idle=0.5))
    silent, silent_writer = await connect(port)
    # A head trickled a byte at a time, each well within the idle time: still closed.
    trickling, trickling_writer = await connect(port, b"GET /healthz HTTP/1.1\r\nX-Slow: ")

    async def trickle() -> None:
        with contextlib.suppress(ConnectionError):
            while not trickling_writer.is_closing():
                trickling_writer.write(b"a")
                await trickling_writer.drain()
                await asyncio.sleep(0.1)

    trickler = asyncio.create_task(trickle())
    # Kept alive after an answer, then idle: closed too.
    kept, kept_writer = await connect(port, head("GET", "/healthz", {}))
    assert (await answer(kept))[0] == 200

    assert await closed(silent)
    status, _, content = await answer(trickling)
    assert (status, content["error"]) == (408, "timeout")
    assert "BALLET_WEB_IDLE_SECONDS" in content["message"]
    assert await closed(trickling)
    assert await closed(kept)
    trickler.cancel()
    for writer in (silent_writer, trickling_writer, kept_writer):
        writer.close()


async def test_a_head_over_64_kib_is_answered_431(serve: Serve) -> None:
    port = await serve(limits())
    reader, writer = await connect(port, b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 70_000)
    status, _, content = await answer(reader)
    assert (status, content["error"]) == (431, "head_too_large")
    assert "over 64 KiB" in content["message"]
    assert await closed(reader)
    writer.close()


async def test_the_431_names_the_servers_own_limit(serve: Serve) -> None:
    smaller = ConnectionLimits(64, 16, 30.0, 30.0, max_head_bytes=16 * 1024)
    port = await serve(smaller)
    reader, writer = await connect(port, b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 20_000)
    status, _, content = await answer(reader)
    assert (status, content["error"]) == (431, "head_too_large")
    assert "over 16 KiB: send fewer or shorter headers" in content["message"]
    writer.close()


async def test_a_body_answered_before_it_was_read_is_still_a_body(serve: Serve) -> None:
    # 405 comes from the head; the 100 KB after it are that request's body, not the
    # next head (no 431), and the connection then waits for its next request.
    port = await serve(limits(idle=0.5))
    reader, writer = await connect(port, head("POST", "/healthz", {"Content-Length": "100000"}))
    assert (await answer(reader))[0] == 405
    writer.write(b"x" * 50_000)
    await asyncio.sleep(0.6)  # past the idle time: still a body, under its own deadline
    writer.write(b"x" * 50_000 + head("GET", "/healthz", {}))
    assert (await answer(reader))[0] == 200
    assert await closed(reader)
    writer.close()


async def test_past_the_limit_the_oldest_idle_connection_makes_room(serve: Serve) -> None:
    port = await serve(limits(max_connections=8))
    idle = [await connect(port) for _ in range(20)]
    assert await healthz(port) == 200
    # The first twelve, and one more for the probe, were closed to make room.
    for reader, _ in idle[:13]:
        assert await closed(reader)
    # The newest seven are still open: each is answered.
    for reader, writer in idle[13:]:
        writer.write(head("GET", "/healthz", {}))
        assert (await answer(reader))[0] == 200
    for _, writer in idle:
        writer.close()


async def test_past_the_limit_with_every_connection_busy_only_probes_are_answered(
    serve: Serve,
) -> None:
    port = await serve(limits(max_connections=8, backlog=4))
    body = b'{"action": "labeled"}'
    expecting = {"Content-Length": str(len(body)), "Expect": "100-continue"}
    # Eight uploads under way, their heads whole and their bodies awaited (the server
    # says so with "100 Continue"): none of them may be closed to make room.
    busy = [
        await connect(port, head("POST", "/webhooks", expecting | delivery_headers("issues", body)))
        for _ in range(8)
    ]
    for reader, _ in busy:
        assert await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HANG) == (
            b"HTTP/1.1 100 Continue\r\n\r\n"
        )

    page, page_writer = await connect(port, head("GET", "/metrics", {}))
    status, _, content = await answer(page)
    assert (status, content["error"]) == (503, "busy")
    assert "BALLET_WEB_MAX_CONNECTIONS" in content["message"]
    assert await closed(page)
    probe, probe_writer = await connect(port, head("GET", "/healthz", {}))
    status, headers, _ = await answer(probe)
    assert (status, headers["connection"]) == (200, "close")
    assert await closed(probe)
    # Newcomers that say nothing make room for each other, never at an upload's cost.
    waiting = [await connect(port) for _ in range(4)]
    for reader, _ in waiting[:3]:
        assert await closed(reader)

    # The uploads were kept whole all along: each finishes and is taken.
    for reader, writer in busy:
        writer.write(body)
        await writer.drain()
        assert (await answer(reader))[0] == 202
    for _, writer in [*busy, *waiting]:
        writer.close()
    for writer in (probe_writer, page_writer):
        writer.close()


async def test_bodies_read_before_their_signature_is_checked_are_bounded(serve: Serve) -> None:
    port = await serve(limits())
    # A signature of the right form for another body: only the whole body can tell.
    wrong = {
        "Content-Length": str(MAX_WEBHOOK_BYTES),
        "Expect": "100-continue",
        **delivery_headers("issues", b"{}"),
    }
    continuing = b"HTTP/1.1 100 Continue\r\n\r\n"
    reading = [await connect(port, head("POST", "/webhooks", wrong)) for _ in range(2)]
    for reader, _ in reading:
        assert await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HANG) == continuing
    # Two 25 MiB bodies under way are all unchecked bodies may hold: a third is refused.
    third, third_writer = await connect(port, head("POST", "/webhooks", wrong))
    status, headers, content = await answer(third)
    assert (status, content["error"], headers["connection"]) == (503, "busy", "close")
    assert "redelivery" in content["message"]
    # Once one is read (and found wrong), another may be.
    reader, writer = reading[0]
    writer.write(b"x" * MAX_WEBHOOK_BYTES)
    await writer.drain()
    assert (await answer(reader))[0] == 401
    fourth, fourth_writer = await connect(port, head("POST", "/webhooks", wrong))
    assert await asyncio.wait_for(fourth.readuntil(b"\r\n\r\n"), HANG) == continuing
    for writer in (*(w for _, w in reading), third_writer, fourth_writer):
        writer.close()
