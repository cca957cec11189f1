"""Benchmark: what confining a session costs, side by side in one run.

1. Start-up: a session process that does nothing (`true`), run by
   `sessions.process.run_process` as the runner does, unconfined vs. confined
   (egress proxy started on its socket, bubblewrap with the session's mounts
   and namespaces, the in-sandbox relay, then the process). Interleaved,
   `--runs` times each, medians. Target (issue 10): ≤ 20 ms added per session.
2. Egress: a `--megabytes` MB download from an HTTP server on loopback by curl,
   direct vs. from inside the sandbox through the relay and Ballet's proxy,
   both as a proxied request (http_proxy) and through the transparent forward
   of an operator-allowed loopback port. Target: ≥ 0.8× direct.
3. Small answers on one kept-alive connection (an agent's model calls): 20 GETs
   of a 300-byte answer by one curl, ms a request after the first, the same three
   ways. Each relayed answer used to wait 40 ms for the agent's delayed ACK
   (Nagle's algorithm on the relay's socket).
4. Small POSTs through a kept-alive CONNECT tunnel (how an agent reaches its
   model over HTTPS), each written as httpx writes it: the head, then the body.
   Direct vs. through the relay and the proxy, ms a request after the first and
   how many took over 20 ms. Some used to wait 40 ms for the server's delayed
   ACK of the head (Nagle's algorithm on the proxy's upstream socket).

Run: .venv/bin/python bench/confinement.py [--runs N] [--megabytes N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ballet.core.egress import parse_rule
from ballet.sessions.confine import Isolation, SessionPaths, SessionSandbox, confined
from ballet.sessions.process import run_process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--megabytes", type=int, default=50)
    args = parser.parse_args()
    if shutil.which("bwrap") is None or shutil.which("curl") is None:
        sys.exit("bench/confinement.py needs bwrap and curl: apt-get install bubblewrap curl")
    with tempfile.TemporaryDirectory(prefix="ballet-bench-") as scratch:
        paths = _paths(Path(scratch))
        asyncio.run(_startup(paths, args.runs))
        with _payload_server(args.megabytes * 1024 * 1024) as port:
            asyncio.run(_egress(paths, port, args.megabytes, max(3, args.runs // 6)))
        with _payload_server(SMALL_ANSWER) as port:
            asyncio.run(_kept_alive(paths, port, max(3, args.runs // 6)))
            asyncio.run(_tunnelled(paths, port, max(3, args.runs // 6)))


def _paths(root: Path) -> SessionPaths:
    for name in ("repo", "home", "files", "mirror/objects"):
        (root / "workspaces" / name).mkdir(parents=True)
    base = root / "workspaces"
    return SessionPaths(base / "repo", base / "home", base / "files", base / "mirror/objects", base)


async def _startup(paths: SessionPaths, runs: int) -> None:
    env = {"PATH": os.environ["PATH"]}
    isolation = Isolation()

    async def plain() -> None:
        await run_process(["true"], cwd=paths.clone, env=env, timeout_seconds=30)

    async def boxed() -> None:
        async with confined(isolation, paths, ["true"], env, runtime_rules=(), session="b") as box:
            outcome = await run_process(
                box.argv, cwd=paths.clone, env=box.env, timeout_seconds=30, supervisor=box
            )
            assert outcome.exit_code == 0, outcome.output_tail(2000)

    times = await _interleaved({"unconfined": plain, "confined": boxed}, runs)
    print(f"session start-up, process `true`, {runs} runs each (median, p90):")
    for name, values in times.items():
        print(f"  {name:<11} {_ms(statistics.median(values))} ms   p90 {_ms(_p90(values))} ms")
    added = statistics.median(times["confined"]) - statistics.median(times["unconfined"])
    print(f"  added by confinement: {_ms(added)} ms per session (target ≤ 20 ms)\n")


async def _egress(paths: SessionPaths, port: int, megabytes: int, runs: int) -> None:
    url = f"http://127.0.0.1:{port}/"
    curl = ["curl", "-s", "-o", "/dev/null", "-w", "%{speed_download}", url]
    env = {"PATH": os.environ["PATH"]}
    allowed = Isolation(egress_allow=(parse_rule(f"127.0.0.1:{port}", trusted=True),))
    speeds: dict[str, list[float]] = {"direct": [], "proxied": [], "forwarded": []}

    async def fetch(
        name: str, argv: Sequence[str], run_env: dict[str, str], box: SessionSandbox | None = None
    ) -> None:
        outcome = await run_process(
            argv, cwd=paths.clone, env=run_env, timeout_seconds=120, supervisor=box
        )
        text = outcome.stdout.tail_text(100).strip()
        assert outcome.exit_code == 0 and text, outcome.output_tail(2000)
        speeds[name].append(float(text))

    for _ in range(runs):
        await fetch("direct", curl, env)
        async with confined(allowed, paths, curl, env, runtime_rules=(), session="b") as box:
            await fetch("proxied", box.argv, box.env, box)  # curl honours http_proxy
        no_proxy = ["curl", "--noproxy", "*", *curl[1:]]
        async with confined(allowed, paths, no_proxy, env, runtime_rules=(), session="b") as box:
            await fetch("forwarded", box.argv, box.env, box)
    direct = statistics.median(speeds["direct"])
    print(f"egress: {megabytes} MB over loopback by curl, {runs} runs each (median):")
    for name, values in speeds.items():
        speed = statistics.median(values)
        print(f"  {name:<10} {speed / 1e6:8.0f} MB/s   {speed / direct:4.2f}× direct")
    print("  target: ≥ 0.8× direct")


SMALL_ANSWER = 300
REQUESTS = 20


async def _kept_alive(paths: SessionPaths, port: int, runs: int) -> None:
    url = f"http://127.0.0.1:{port}/"
    # One curl, REQUESTS transfers of the same URL: one connection, kept alive.
    curl = ["curl", "-s", "-w", "%{time_total}\n"]
    for _ in range(REQUESTS):
        curl += ["-o", "/dev/null", url]
    env = {"PATH": os.environ["PATH"]}
    allowed = Isolation(egress_allow=(parse_rule(f"127.0.0.1:{port}", trusted=True),))
    each: dict[str, list[float]] = {"direct": [], "proxied": [], "forwarded": []}

    for _ in range(runs):
        each["direct"] += await _request_times(paths, curl, env)
        async with confined(allowed, paths, curl, env, runtime_rules=(), session="b") as box:
            each["proxied"] += await _request_times(paths, box.argv, box.env, box)
        no_proxy = ["curl", "--noproxy", "*", *curl[1:]]
        async with confined(allowed, paths, no_proxy, env, runtime_rules=(), session="b") as box:
            each["forwarded"] += await _request_times(paths, box.argv, box.env, box)
    print(f"\nkept alive: {REQUESTS} requests of {SMALL_ANSWER} bytes on one connection,")
    print(f"{runs} runs each, ms a request after the first (median, mean, p90):")
    for name, values in each.items():
        median, mean = _ms(statistics.median(values)), _ms(statistics.mean(values))
        print(f"  {name:<10} {median} ms   mean {mean} ms   p90 {_ms(_p90(values))} ms")


# A POST as httpx sends it, in two writes, REQUESTS times on one connection;
# through HTTPS_PROXY's CONNECT tunnel when it is set. Prints each request's seconds.
TUNNEL_CLIENT = """
import os, socket, sys, time
port = int(sys.argv[1])
proxy = os.environ.get("HTTPS_PROXY", "")
if proxy:
    host, _, proxy_port = proxy.rsplit("/", 1)[-1].partition(":")
    sock = socket.create_connection((host, int(proxy_port)))
    sock.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\n\\r\\n".encode())
    assert sock.recv(4096).startswith(b"HTTP/1.1 200"), "the tunnel was refused"
else:
    sock = socket.create_connection(("127.0.0.1", port))
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as httpx's clients do
answers = sock.makefile("rb")
body = b"{}" * 100
for _ in range(int(sys.argv[2])):
    began = time.perf_counter()
    head = f"POST / HTTP/1.1\\r\\nHost: m\\r\\nContent-Length: {len(body)}\\r\\n\\r\\n"
    sock.sendall(head.encode())
    sock.sendall(body)
    length = 0
    while (line := answers.readline()) != b"\\r\\n":
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    answers.read(length)
    print(time.perf_counter() - began)
"""


async def _tunnelled(paths: SessionPaths, port: int, runs: int) -> None:
    client = ["python3", "-c", TUNNEL_CLIENT, str(port), str(REQUESTS)]
    env = {"PATH": os.environ["PATH"]}
    allowed = Isolation(egress_allow=(parse_rule(f"127.0.0.1:{port}", trusted=True),))
    each: dict[str, list[float]] = {"direct": [], "tunnelled": []}

    for _ in range(runs):
        each["direct"] += await _request_times(paths, client, env)
        async with confined(allowed, paths, client, env, runtime_rules=(), session="b") as box:
            each["tunnelled"] += await _request_times(paths, box.argv, box.env, box)
    print(f"\nPOSTs in two writes through a kept-alive CONNECT tunnel, {REQUESTS} a connection,")
    print(f"{runs} runs each, ms a request after the first (median, p90, over 20 ms):")
    for name, values in each.items():
        slow = sum(v > 0.020 for v in values)
        median, p90 = _ms(statistics.median(values)), _ms(_p90(values))
        print(f"  {name:<10} {median} ms   p90 {p90} ms   {slow} of {len(values)} over 20 ms")


async def _request_times(
    paths: SessionPaths, argv: Sequence[str], env: dict[str, str], box: SessionSandbox | None = None
) -> list[float]:
    """Each request's seconds, as `argv` printed them, less the first (it connects)."""
    outcome = await run_process(argv, cwd=paths.clone, env=env, timeout_seconds=120, supervisor=box)
    times = [float(t) for t in outcome.stdout.tail_text(10_000).split()]
    assert outcome.exit_code == 0 and len(times) == REQUESTS, outcome.output_tail(2000)
    return times[1:]


async def _interleaved(
    cases: dict[str, Callable[[], Awaitable[None]]], runs: int
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in cases}
    for case in cases.values():  # warm caches (page cache, bwrap's binary, Python's stdlib)
        await case()
    for _ in range(runs):
        for name, case in cases.items():
            started = time.perf_counter()
            await case()
            times[name].append(time.perf_counter() - started)
    return times


@contextmanager
def _payload_server(size: int) -> Iterator[int]:
    chunk = os.urandom(1024 * 1024)

    class Payload(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # As a real server does: its own writes are not what is measured.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.do_GET()

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            sent = 0
            while sent < size:
                piece = chunk[: min(len(chunk), size - sent)]
                self.wfile.write(piece)
                sent += len(piece)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Payload)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:6.1f}"


def _p90(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.9) - 1]


if __name__ == "__main__":
    main()
