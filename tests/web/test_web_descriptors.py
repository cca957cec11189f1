"""Out of file descriptors, for real: `ballet serve` (asyncio's loop, the worker beside
the web app) and `ballet web` (uvloop, whose listening socket closes for good when
accept() fails so) under a low RLIMIT_NOFILE against
more connections than it has descriptors, and asyncio's accept loop out of them
with Ballet's logging. The server must keep serving and the log must not flood."""

from __future__ import annotations

import asyncio
import logging
import resource
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest
from ballet.logs import ExhaustionThrottle
from test_web_serve import (
    SECRET,
    env_without_settings,
    free_port,
    kill_if_running,
    wait_for,
)
from webhook_signing import delivery_headers

OPEN_FILES = 256
CONNECTIONS = 1100
EXHAUSTED = ("Too many open files", "out of system resource")


def few_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))


def open_connections(port: int, count: int) -> list[socket.socket]:
    """`count` connections to `port`, opened all at once, that say nothing."""

    async def one() -> socket.socket:
        sock = socket.socket()
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        return sock

    async def every() -> list[socket.socket]:
        return await asyncio.wait_for(asyncio.gather(*(one() for _ in range(count))), 60)

    return asyncio.run(every())


def exhaustion_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if any(words in line for words in EXHAUSTED)]


@pytest.mark.parametrize("command", ["serve", "web"])
def test_few_descriptors_outlive_more_connections_than_there_are(
    command: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = env_without_settings(BALLET_WEBHOOK_SECRET=SECRET, BALLET_DATA_DIR=str(tmp_path))
    if command == "web":
        env["REDIS_URL"] = request.getfixturevalue("web_redis_url")
    log = tmp_path / f"{command}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "ballet", command, "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=few_open_files,  # soft and hard: Ballet cannot raise it
        )
    held: list[socket.socket] = []
    try:
        wait_for(lambda: httpx.get(f"{base}/readyz").status_code == 200, "readyz", log)
        # Connections that say nothing, four times as many as its descriptors.
        held = open_connections(port, CONNECTIONS)
        assert process.poll() is None, log.read_text()
        assert httpx.get(f"{base}/healthz", timeout=30).status_code == 200
        body = b'{"action": "opened"}'
        headers = delivery_headers("issues", body, f"flooded-{command}", secret=SECRET)
        answer = httpx.post(f"{base}/webhooks", content=body, headers=headers, timeout=30)
        assert answer.status_code == 202, answer.text

        for sock in held:
            sock.close()
        held.clear()
        assert httpx.get(f"{base}/healthz", timeout=30).status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        for sock in held:
            sock.close()
        kill_if_running(process)
    output = log.read_text()
    assert len(exhaustion_lines(output)) <= 2, output[-5000:]
    assert len(output) < 200_000
    assert "web connections held to their limits" in output


ACCEPT_LOOP = textwrap.dedent(
    """
    import asyncio, resource, sys
    from ballet.logs import configure_logging

    configure_logging()
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    held = []

    async def main():
        server = await asyncio.start_server(lambda r, w: held.append(w), "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.sleep(float(sys.argv[1]))

    asyncio.run(main())
    """
)


def test_asyncio_s_accept_loop_out_of_descriptors_logs_once_not_every_second() -> None:
    # Plain asyncio out of descriptors logs "socket.accept() out of system resource"
    # with its traceback, again and again (hundreds of lines in 6 s without the throttle).
    process = subprocess.Popen(
        [sys.executable, "-c", ACCEPT_LOOP, "6"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    port = int(process.stdout.readline())
    held = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(100)]
    try:
        _, errors = process.communicate(timeout=60)
    finally:
        for sock in held:
            sock.close()
    accepts = [line for line in errors.splitlines() if "out of system resource" in line]
    assert 1 <= len(accepts) <= 2, errors[-5000:]
    assert "Too many open files" in errors


def test_the_throttle_lets_one_through_a_while_and_counts_the_rest() -> None:
    now = [0.0]
    throttle = ExhaustionThrottle(every_seconds=10, clock=lambda: now[0])

    def record(message: object, exc: BaseException | None = None) -> logging.LogRecord:
        exc_info = (type(exc), exc, None) if exc is not None else None
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, None, exc_info)

    emfile = OSError(24, "Too many open files")
    assert throttle.filter(record("socket.accept() out of system resource", emfile))
    assert not any(throttle.filter(record("accept failed", emfile)) for _ in range(999))
    assert not throttle.filter(record({"event": "redis: [Errno 24] Too many open files"}))
    # Anything else passes untouched, however often.
    assert all(throttle.filter(record("delivery handled")) for _ in range(100))
    now[0] = 10.0
    structlog_event = record({"event": "cannot open", "exception": "Too many open files"})
    assert throttle.filter(structlog_event)
    assert structlog_event.msg == {
        "event": "cannot open",
        "exception": "Too many open files",
        "held_back": "1000 more like it held back in the last 10 s",
    }
