"""What the sandbox adds to an answer's time, and what its request log says of it.

The sandbox stands in for GitHub, and benches subtract the time it spends
answering the App from a transition to get Ballet's own. So it must not add a
delay GitHub does not (Nagle's algorithm holding an answer's body for the
client's delayed ACK, 40 ms on a kept-alive connection), and its log must end
an answer with its last byte, not with what the sandbox does after it (a push's
webhooks and CI), while the App goes on.
"""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import pytest
from ballet.sandbox.app import RequestLog, new_sandbox
from ballet.sandbox.auth import Actor
from ballet.sandbox.server import bind
from starlette.types import Message, Receive, Scope, Send

pytestmark = pytest.mark.anyio


async def test_a_connection_the_sandbox_accepts_has_nagle_off() -> None:
    listener = bind("127.0.0.1", 0)
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def serve(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    # As uvicorn serves on the socket: asyncio's server on the listener it was given.
    server = await asyncio.start_server(serve, sock=listener)
    try:
        host, port = listener.getsockname()[:2]
        _, writer = await asyncio.open_connection(host, port)
        assert await asyncio.wait_for(accepted, 10) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()


async def test_the_request_log_holds_an_answer_as_its_last_byte_goes_out(tmp_path: Path) -> None:
    moments: dict[str, float] = {}
    logged_by_then: list[int] = []

    async def answer_then_work_on(_scope: Scope, _receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})
        moments["answered"] = time.monotonic()
        logged_by_then.append(len(sandbox.requests))
        await asyncio.sleep(0.05)  # the push's webhooks and CI, after the answer
        moments["returned"] = time.monotonic()

    sandbox = new_sandbox(tmp_path, "http://127.0.0.1:1", None)
    logged = RequestLog(answer_then_work_on, sandbox)
    scope: Scope = {
        "type": "http",
        "method": "POST",
        "path": "/acme/x.git/git-receive-pack",
        "state": {"actor": Actor("installation", "ballet[bot]", installation_id=1)},
    }

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_message: Message) -> None:
        pass

    await logged(scope, receive, send)
    (entry,) = sandbox.requests
    assert entry["ended"] <= moments["answered"] < moments["returned"]
    assert logged_by_then == [1]  # in the log before its client could have the answer
    assert entry["status"] == 200
