"""Benchmark what strangers' connections cost `ballet web` (docs/security.md, Public endpoints).

`ballet web` runs on a fresh embedded Valkey, as in production, and on loopback:

- memory: the web process's high-water mark of resident memory (VmHWM in
  /proc/PID/status) idle, then after `--uploads` concurrent 25 MiB POSTs to
  /webhooks without a signature, each client sending its whole body as fast as
  the server takes it; then the same with a signature header that is well
  formed but wrong (its body must be read to be checked). Goal: the unsigned
  uploads cost <= 20 MB over idle.
- /healthz latency: `--probes` GETs one after another, each on a new connection
  as a kubelet's probe makes them, with no other connection open and then with
  `--idle` connections open that send nothing (BALLET_WEB_IDLE_SECONDS is raised
  for the run so they stay open). Goal: p99 <= 100 ms.

With `--open-files N` the web process runs with that open-file limit (soft and
hard, so it cannot raise it): fewer connections than `--idle` then stay open,
the oldest idle ones closed to make room, and /healthz must still answer.

    .venv/bin/python bench/public_endpoints.py [--uploads 12] [--idle 2000] [--probes 500]
                                               [--open-files 1024]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

UPLOAD_BYTES = 25 * 1024 * 1024
CHUNK = b"x" * (256 * 1024)
SECRET = "bench-secret"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def high_water_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmHWM in /proc: run this on Linux")


def healthz_once(port: int) -> float:
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: ballet\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    if not answer.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"/healthz answered {answer[:60]!r}")
    return (time.perf_counter() - started) * 1000


def percentiles(port: int, probes: int) -> tuple[float, float]:
    times = sorted(healthz_once(port) for _ in range(probes))
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.99))]


async def upload(port: int, signature: str | None) -> str:
    """One 25 MiB POST; the status line the server answered (or how it ended)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = [
        "POST /webhooks HTTP/1.1",
        "Host: ballet",
        f"Content-Length: {UPLOAD_BYTES}",
        "Content-Type: application/json",
        "X-GitHub-Event: issues",
        "X-GitHub-Delivery: bench-upload",
    ]
    if signature:
        head.append(f"X-Hub-Signature-256: {signature}")
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
    try:
        for _ in range(UPLOAD_BYTES // len(CHUNK)):
            writer.write(CHUNK)
            await writer.drain()
        status = (await reader.readline()).decode().strip()
    except ConnectionError as exc:
        status = f"connection ended while sending ({type(exc).__name__})"
    finally:
        writer.close()
    return status


async def uploads(port: int, count: int, signature: str | None) -> list[str]:
    return list(await asyncio.gather(*(upload(port, signature) for _ in range(count))))


async def hold_idle(port: int, count: int) -> list[socket.socket]:
    async def one() -> socket.socket:
        sock = socket.socket()
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        return sock

    return list(await asyncio.gather(*(one() for _ in range(count))))


def start_web(
    redis_url: str, data: str, open_files: int | None
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BALLET_")} | {
        "REDIS_URL": redis_url,
        "BALLET_DATA_DIR": data,
        "BALLET_WEBHOOK_SECRET": SECRET,
        "BALLET_WEB_IDLE_SECONDS": "300",  # the idle connections stay for the measure
        "BALLET_LOG_LEVEL": "warning",
    }

    def limit_open_files() -> None:
        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    process = subprocess.Popen(
        [sys.executable, "-m", "ballet", "web", "--port", str(port)],
        env=env,
        preexec_fn=limit_open_files,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"ballet web exited with {process.returncode}")
        try:
            healthz_once(port)
            return process, port
        except OSError:
            time.sleep(0.1)
    raise SystemExit("ballet web did not answer /healthz within 60 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uploads", type=int, default=12)
    parser.add_argument("--idle", type=int, default=2000)
    parser.add_argument("--probes", type=int, default=500)
    parser.add_argument("--open-files", type=int, default=None)
    args = parser.parse_args()

    from ballet.embedded_valkey import embedded_valkey

    with tempfile.TemporaryDirectory() as data, embedded_valkey(Path(data)) as redis_url:
        process, port = start_web(redis_url, data, args.open_files)
        try:
            percentiles(port, 50)  # warm: imports, first pages of the allocator
            idle_mb = high_water_mb(process.pid)
            answers = asyncio.run(uploads(port, args.uploads, None))
            unsigned_mb = high_water_mb(process.pid)
            print(f"unsigned uploads answered: {sorted(set(answers))}", flush=True)
            bogus = "sha256=" + "0" * 64
            answers = asyncio.run(uploads(port, args.uploads, bogus))
            bogus_mb = high_water_mb(process.pid)
            print(f"bogus-signature uploads answered: {sorted(set(answers))}", flush=True)

            quiet = percentiles(port, args.probes)
            held = asyncio.run(hold_idle(port, args.idle))
            try:
                busy = percentiles(port, args.probes)
                alive = sum(1 for sock in held if _still_open(sock))
            finally:
                for sock in held:
                    sock.close()
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)

    print()
    print(f"memory high-water mark of `ballet web` (VmHWM), {args.uploads} concurrent 25 MiB POSTs")
    print(f"  {'':<38} {'VmHWM':>9} {'over idle':>10}   goal")
    print(f"  {'idle':<38} {idle_mb:>6.1f} MB")
    print(
        f"  {'unsigned':<38} {unsigned_mb:>6.1f} MB {unsigned_mb - idle_mb:>+7.1f} MB"
        f"   <= 20 MB {'met' if unsigned_mb - idle_mb <= 20 else 'MISSED'}"
    )
    print(
        f"  {'well-formed but wrong signature':<38} {bogus_mb:>6.1f} MB"
        f" {bogus_mb - idle_mb:>+7.1f} MB   (bodies read to be checked)"
    )
    print()
    print(f"/healthz latency, {args.probes} probes, each on a new connection")
    print(f"  {'':<38} {'p50':>9} {'p99':>9}   goal p99")
    for name, (p50, p99) in (
        ("no other connection", quiet),
        (f"{args.idle} idle connections ({alive} open after)", busy),
    ):
        verdict = "met" if p99 <= 100 else "MISSED"
        print(f"  {name:<38} {p50:>6.2f} ms {p99:>6.2f} ms   <= 100 ms {verdict}")


def _still_open(sock: socket.socket) -> bool:
    """True unless the server closed it (a read finds the end, not "would block")."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


if __name__ == "__main__":
    main()
