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
   (goal: ≥ 0.8× direct), and that the gateway metered its tokens; beside it
   the CPU time per answer (/proc's schedstat) of the gateway (or relay), the
   upstream and this client: the steadier measure on a shared machine.

With --floor, two byte relays on unix sockets carry the 10 MB answer in the
same run, side by side: what any hop costs on this machine, no HTTP and no
meter. `python relay`: two threads, recv_into one buffer and sendall it (the
least a Python process that reads the bytes can do); `splice relay`: the bytes
moved by the kernel through a pipe, never read (what a hop that meters nothing
costs).

The relay inside a sandbox adds its own share (bench/confinement.py measures it).
Run: .venv/bin/python bench/gateway.py [--requests N] [--megabytes N] [--unmetered] [--floor]
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

RELAY = r"""
import os, socket, sys, threading
how, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
listener = socket.socket(socket.AF_UNIX)
listener.bind(path)
listener.listen()
print("listening", flush=True)

def pump(source, sink):
    if how == "splice":
        out, into = os.pipe()
        while moved := os.splice(source.fileno(), into, 1 << 20):
            while moved:
                moved -= os.splice(out, sink.fileno(), moved)
    else:
        buffer = memoryview(bytearray(1 << 18))
        while got := source.recv_into(buffer):
            sink.sendall(buffer[:got])

while True:
    client, _ = listener.accept()
    upstream = socket.create_connection(("127.0.0.1", port))
    upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for ends in ((client, upstream), (upstream, client)):
        threading.Thread(target=pump, args=ends, daemon=True).start()
"""
FLOORS = {"python relay": "threads", "splice relay": "splice"}


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


def cpu_ms(pid: int | None) -> float:
    """The CPU time a process ran, all its threads (/proc/PID/task/*/schedstat), in ms."""
    if pid is None:
        return 0.0
    tasks = Path(f"/proc/{pid}/task")
    return sum(int((t / "schedstat").read_text().split()[0]) for t in tasks.iterdir()) / 1e6


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
    parser.add_argument(
        "--floor", action="store_true", help="two byte relays beside it: what any hop costs"
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
        relays: dict[str, subprocess.Popen[str]] = {}
        for name, how in FLOORS.items() if args.floor else ():
            at = str(Path(scratch) / f"{how}.sock")
            relay = relays[name] = subprocess.Popen(
                [sys.executable, "-c", RELAY, how, str(port), at], stdout=subprocess.PIPE, text=True
            )
            assert relay.stdout is not None
            relay.stdout.readline()  # listening
        floors = {name: str(Path(scratch) / f"{how}.sock") for name, how in FLOORS.items()}
        hops = {"gateway": gateway.pid} | {name: relay.pid for name, relay in relays.items()}
        try:
            _run(args, big, port, socket_path, token, {n: floors[n] for n in relays},
                 hops | {"upstream": upstream.pid})  # fmt: skip
            gateway.stdin.write("\n")
            gateway.stdin.flush()
            spend = json.loads(gateway.stdout.readline())
            print(f"\nmetered by the gateway: {spend['requests']} answers, "
                  f"{spend['output_tokens']} output tokens, ${spend['cost_usd']:.4f}")  # fmt: skip
        finally:
            for process in (gateway, upstream, *relays.values()):
                process.terminate()
                process.wait()


def _run(
    args: argparse.Namespace,
    big: int,
    port: int,
    socket_path: str,
    token: str,
    floors: dict[str, str],
    pids: dict[str, int],
) -> None:
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
    relayed = {name: UnixConnection(path) for name, path in floors.items()}
    ways |= {name: (connection, "/v1/messages") for name, connection in relayed.items()}
    rates: dict[str, list[float]] = {name: [] for name in ways}
    cpu: dict[str, list[tuple[float, float, float]]] = {name: [] for name in ways}
    for connection, path in ways.values():
        ask(connection, path, big_body, token)  # the relays' connections up
    for _ in range(args.big_runs):
        for name, (connection, path) in ways.items():
            before = cpu_ms(pids.get(name)), cpu_ms(pids["upstream"]), time.thread_time()
            started = time.perf_counter()
            ask(connection, path, big_body, token)
            rates[name].append(big / (1024 * 1024) / (time.perf_counter() - started))
            after = cpu_ms(pids.get(name)), cpu_ms(pids["upstream"]), time.thread_time()
            hop, up, client = (b - a for a, b in zip(before, after, strict=True))
            cpu[name].append((hop, up, client * 1000))
    d = statistics.median(rates["direct"])
    print(f"\n{args.megabytes} MB streamed answer, median of {args.big_runs}, interleaved;"
          " CPU ms per answer of the hop, the upstream, this client:")  # fmt: skip
    for name, measured in rates.items():
        m = statistics.median(measured)
        hop, up, client = (statistics.median(t[i] for t in cpu[name]) for i in range(3))
        print(f"  {name:14}{m:8.0f} MB/s  {m / d:5.2f}× direct"
              f"  CPU {hop:5.1f} {up:5.1f} {client:5.1f}")  # fmt: skip
    for connection, _ in ways.values():
        connection.close()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
