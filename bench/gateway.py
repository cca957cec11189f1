"""Benchmark: what the model gateway adds, side by side with going direct, in one run.

An upstream on loopback (its own process) plays Anthropic's Messages API; the
gateway (its own process, as in a worker: `ModelGateway` with the real meter,
`ProviderMetering`) serves one session's unix socket; this process is the CLI.
Each measure is taken direct to the upstream and through the gateway,
interleaved in blocks, on one kept-alive connection each:

1. a request with a small JSON answer: ms per request, p50 and p99, and what the
   gateway adds (goal: ≤ 1 ms at p50);
2. a streamed (SSE) answer: ms to its first byte, p50 and p99;
3. a 10 MB streamed answer (SSE text deltas, then the usage): MB/s
   (goal: ≥ 0.8× direct), and that the gateway metered its tokens.

The relay inside a sandbox adds its own share (bench/confinement.py measures it).
Run: .venv/bin/python bench/gateway.py [--requests N] [--megabytes N]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

UPSTREAM = r"""
import asyncio, json, sys
SMALL = json.dumps({"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
    "usage": {"input_tokens": 10, "output_tokens": 2}}).encode()
def sse(name, data):
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
START = sse("message_start", {"type": "message_start", "message": {"id": "m", "model":
    "claude-sonnet-4-5", "usage": {"input_tokens": 10, "output_tokens": 1}}})
DELTA = sse("content_block_delta", {"type": "content_block_delta", "index": 0,
    "delta": {"type": "text_delta", "text": "x" * 900}})
END = sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
    "usage": {"output_tokens": 7}}) + sse("message_stop", {"type": "message_stop"})
BIG = int(sys.argv[1])

def chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)

async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = await reader.readexactly(length)
            if b'"stream"' not in body:
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\n\r\n%s" % (len(SMALL), SMALL))
                await writer.drain()
                continue
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"transfer-encoding: chunked\r\n\r\n" + chunk(START))
            await writer.drain()
            if b'"big"' in body:
                block = DELTA * 64
                for _ in range(BIG // len(block)):
                    writer.write(chunk(block))
                    await writer.drain()
            else:
                writer.write(chunk(DELTA))
            writer.write(chunk(END) + b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()

async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(main())
"""

GATEWAY = r"""
import asyncio, json, sys
from pathlib import Path
from ballet.sessions.gateway import ModelGateway, ProviderMetering, SessionTerms
async def main():
    class Unmetered:
        def meter(self, *args):
            return None
    metering = ProviderMetering() if sys.argv[3] == "meter" else Unmetered()
    gateway = ModelGateway(metering, upstreams={"anthropic": sys.argv[1]})
    terms = SessionTerms(session="bench", repo="octo/bench")
    keys = {"ANTHROPIC_API_KEY": ("anthropic", "sk-ant-bench")}
    async with gateway.session(terms, keys, Path(sys.argv[2])) as served:
        print(served.tokens["ANTHROPIC_API_KEY"], flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        print(json.dumps(served.spend.model_dump()), flush=True)
asyncio.run(main())
"""


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("gateway")
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def ask(connection: http.client.HTTPConnection, path: str, body: bytes, token: str) -> float:
    """ms to the answer's first body byte; the whole answer read."""
    headers = {"content-type": "application/json", "x-api-key": token}
    started = time.perf_counter()
    connection.request("POST", path, body=body, headers=headers)
    answer = connection.getresponse()
    answer.read(1)
    first = (time.perf_counter() - started) * 1000
    while answer.read(1 << 16):
        pass
    return first


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--megabytes", type=int, default=10)
    parser.add_argument("--big-runs", type=int, default=7)
    parser.add_argument(
        "--unmetered",
        action="store_true",
        help="the gateway without its meter: what metering costs",
    )
    args = parser.parse_args()
    big = args.megabytes * 1024 * 1024
    with tempfile.TemporaryDirectory(prefix="ballet-gw-bench-") as scratch:
        socket_path = str(Path(scratch) / "gateway.sock")
        upstream = subprocess.Popen(
            [sys.executable, "-c", UPSTREAM, str(big)], stdout=subprocess.PIPE, text=True
        )
        assert upstream.stdout is not None
        port = int(upstream.stdout.readline())
        gateway = subprocess.Popen(
            [sys.executable, "-c", GATEWAY, f"http://127.0.0.1:{port}", socket_path,
             "none" if args.unmetered else "meter"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert gateway.stdout is not None and gateway.stdin is not None
        token = gateway.stdout.readline().strip()
        try:
            _run(args, big, port, socket_path, token)
            gateway.stdin.write("\n")
            gateway.stdin.flush()
            spend = json.loads(gateway.stdout.readline())
            print(f"\nmetered by the gateway: {spend['requests']} answers, "
                  f"{spend['output_tokens']} output tokens, ${spend['cost_usd']:.4f}")  # fmt: skip
        finally:
            for process in (gateway, upstream):
                process.terminate()
                process.wait()


def _run(args: argparse.Namespace, big: int, port: int, socket_path: str, token: str) -> None:
    direct = http.client.HTTPConnection("127.0.0.1", port)
    through = UnixConnection(socket_path)
    ways = {"direct": (direct, "/v1/messages"), "gateway": (through, "/anthropic/v1/messages")}
    small = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": []}).encode()
    stream = json.dumps({"model": "claude-sonnet-4-5", "stream": True, "messages": []}).encode()
    for connection, path in ways.values():  # connections up, interpreters warm
        for _ in range(50):
            ask(connection, path, small, token)
            ask(connection, path, stream, token)
    latency: dict[str, list[float]] = {name: [] for name in ways}
    first_byte: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.requests // 50):
        for name, (connection, path) in ways.items():
            for _ in range(50):
                started = time.perf_counter()
                ask(connection, path, small, token)
                latency[name].append((time.perf_counter() - started) * 1000)
                first_byte[name].append(ask(connection, path, stream, token))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{args.requests} requests each way, one kept-alive connection each, interleaved"
          f" ({os.cpu_count()} cores, load average {load})")  # fmt: skip
    print(f"{'':34}{'direct':>10}{'gateway':>10}{'added':>10}")
    for label, values in (
        ("small JSON answer, ms", latency),
        ("SSE answer, first byte, ms", first_byte),
    ):
        for p, tag in ((0.5, "p50"), (0.99, "p99")):
            d, g = percentile(values["direct"], p), percentile(values["gateway"], p)
            print(f"{label + ' ' + tag:34}{d:10.3f}{g:10.3f}{g - d:10.3f}")
    big_body = json.dumps({"model": "claude-sonnet-4-5", "stream": True, "big": True}).encode()
    rates: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.big_runs):
        for name, (connection, path) in ways.items():
            started = time.perf_counter()
            ask(connection, path, big_body, token)
            rates[name].append(big / (1024 * 1024) / (time.perf_counter() - started))
    d, g = statistics.median(rates["direct"]), statistics.median(rates["gateway"])
    print(f"\n{args.megabytes} MB streamed answer, median of {args.big_runs}: direct {d:.0f} MB/s, "
          f"gateway {g:.0f} MB/s ({g / d:.2f}× direct)")  # fmt: skip
    direct.close()
    through.close()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
