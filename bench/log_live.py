"""Benchmark the session logs: a live line's latency, and a finished 20 MB log read back.

On a fresh embedded Valkey configured as in production (append-only file, fsync
every second) and the logs' object store (a local directory, as `ballet serve`
keeps them; with --moto, moto's S3 server on loopback), it measures:

- live: a writer appends `--lines` lines one at a time at a steady `--rate`
  through `SessionLogs.append` (the worker's pool), while a reader tails them
  as the web's server-sent-events endpoint will, `SessionLogs.live` with BLOCK
  in a loop on a pool of its own. Latency: from just before the append to the
  line in the reader's hands. Target p50 <= 250 ms;
- finished: a `--log-mb` MiB log-like text is finished (gzip, put), then read
  back `--reads` times: time to the first byte of the download (`read_raw`, the
  stored gzip and decompressed), and the whole `read`. Target first byte <= 100 ms.

    .venv/bin/python bench/log_live.py [--lines 1000] [--rate 200] [--log-mb 20]
                                       [--reads 10] [--moto]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ballet.embedded_valkey import embedded_valkey
from ballet.queue import connect, open_pool
from ballet.sessionlog.objects import open_object_store, parse_options
from ballet.sessionlog.sink import LogLine
from ballet.sessionlog.steps import Step
from ballet.sessionlog.store import SessionLogs

JOB_KEY = "bench/logs#1:implement:1:1"
MIB = 2**20


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def log_text(size: int) -> bytes:
    """Text that compresses like a session's output: varied lines, repeated words."""
    words = ("ok", "collecting", "passed", "running", "src/app/models.py", "error", "warning")
    out = bytearray()
    i = 0
    while len(out) < size:
        first, second = words[i % len(words)], words[i * 3 % len(words)]
        out += f"{i:07d} {first} {second} {i * 7919 % 99991}\n".encode()
        i += 1
    return bytes(out[:size])


async def live_latency(
    writer: SessionLogs, reader: SessionLogs, lines: int, rate: float
) -> list[float]:
    sent: dict[int, float] = {}
    latencies: list[float] = []
    job_key = f"{JOB_KEY}:live"

    async def read() -> None:
        after = "0-0"
        while len(latencies) < lines:
            chunk = await reader.live(job_key, after=after, block_ms=1000)
            now = time.perf_counter()
            latencies.extend(now - sent[line.seq] for line in chunk.lines)
            after = chunk.last_id

    async def write() -> None:
        start = time.perf_counter()
        for seq in range(lines):
            # A steady rate: each line at its own time, not as fast as Redis takes them.
            await asyncio.sleep(max(0.0, start + seq / rate - time.perf_counter()))
            sent[seq] = time.perf_counter()
            line = LogLine(
                seq=seq, stream="stdout", text=f"line {seq} of the bench", at=time.time()
            )
            await writer.append(job_key, [line])

    tailing = asyncio.create_task(read())
    await asyncio.sleep(0.1)  # the reader is blocked on the empty stream, as a page would be
    await write()
    await asyncio.wait_for(tailing, timeout=30)
    return latencies


async def first_byte(
    chunks: Callable[[], Awaitable[AsyncIterator[bytes] | None]],
) -> tuple[float, int]:
    """Seconds to the first chunk, and the bytes of the whole stream."""
    start = time.perf_counter()
    stream = await chunks()
    assert stream is not None, "the finished log is not in the store"
    first = None
    total = 0
    async for chunk in stream:
        if first is None:
            first = time.perf_counter() - start
        total += len(chunk)
    return first or 0.0, total


async def finished_reads(logs: SessionLogs, size: int, reads: int) -> None:
    log = log_text(size)
    steps = [Step(kind="tool", title=f"step {i}", body="ok", seq=i) for i in range(200)]
    start = time.perf_counter()
    await logs.finish(JOB_KEY, log, steps)
    finish_s = time.perf_counter() - start
    meta = await logs.meta(JOB_KEY)
    assert meta is not None
    print(
        f"finish     {size / MIB:.0f} MiB log -> {meta.stored_size / MIB:.2f} MiB gzip"
        f" ({size / meta.stored_size:.1f}x) in {finish_s * 1000:.0f} ms (gzip + put)"
    )

    async def gzip_stream() -> AsyncIterator[bytes] | None:
        raw = await logs.read_raw(JOB_KEY)
        return raw.chunks if raw else None

    async def plain_stream() -> AsyncIterator[bytes] | None:
        raw = await logs.read_raw(JOB_KEY, decompress=True)
        return raw.chunks if raw else None

    for name, stream, expect in (
        ("gzip", gzip_stream, meta.stored_size),
        ("plain", plain_stream, size),
    ):
        firsts: list[float] = []
        for _ in range(reads):
            first, total = await first_byte(stream)
            assert total == expect, f"{name}: {total} bytes, expected {expect}"
            firsts.append(first)
        print(
            f"download   {name:<5} first byte p50 {statistics.median(firsts) * 1000:6.2f} ms"
            f"   max {max(firsts) * 1000:6.2f} ms   (target <= 100 ms)"
        )
    wholes: list[float] = []
    for _ in range(reads):
        start = time.perf_counter()
        found = await logs.read(JOB_KEY)
        wholes.append(time.perf_counter() - start)
        assert found is not None and found.log == log and len(found.steps) == len(steps)
    print(f"read       whole log + steps p50 {statistics.median(wholes) * 1000:6.1f} ms")


@contextmanager
def moto_s3() -> Iterator[tuple[str, str]]:
    """moto's S3 server on loopback with a bucket: (store URL, its options)."""
    try:
        import boto3
        from moto.server import ThreadedMotoServer
    except ImportError:
        sys.exit("--moto needs the test extra: .venv/bin/pip install -e '.[test]'")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        creds = {"aws_access_key_id": "bench", "aws_secret_access_key": "bench"}
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **creds).create_bucket(
            Bucket="bench"
        )
        yield (
            "s3://bench/logs",
            f"endpoint={endpoint},region=us-east-1,access_key_id=bench,secret_access_key=bench",
        )
    finally:
        server.stop()


async def run(
    args: argparse.Namespace, redis_url: str, data: Path, store: tuple[str, str] | None
) -> None:
    objects = (
        open_object_store(store[0], data, parse_options(store[1]))
        if store
        else open_object_store(None, data)
    )
    worker_pool = await connect(redis_url)  # the worker's pool, as the capture side uses it
    web_pool = open_pool(redis_url)  # the web's pool, as the live page uses it
    try:
        writer = SessionLogs(worker_pool, objects)
        reader = SessionLogs(web_pool, objects)
        latencies = await live_latency(writer, reader, args.lines, args.rate)
        ms = [s * 1000 for s in latencies]
        print(
            f"live       {len(ms)} lines at {args.rate:g}/s   p50 {pct(ms, 50):6.2f} ms"
            f"   p99 {pct(ms, 99):6.2f} ms   max {max(ms):6.2f} ms   (target p50 <= 250 ms)"
        )
        await finished_reads(writer, args.log_mb * MIB, args.reads)
    finally:
        await worker_pool.aclose(close_connection_pool=True)
        await web_pool.aclose(close_connection_pool=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=200.0, help="lines a second")
    parser.add_argument("--log-mb", type=int, default=20, help="MiB of the finished log")
    parser.add_argument("--reads", type=int, default=10)
    parser.add_argument("--moto", action="store_true", help="the object store is moto's S3")
    args = parser.parse_args()
    where = "moto's S3 on loopback" if args.moto else "a local directory"
    print(f"{os.cpu_count()} cores; the object store: {where}")
    with tempfile.TemporaryDirectory() as scratch, embedded_valkey(Path(scratch)) as redis_url:
        if args.moto:
            with moto_s3() as store:
                asyncio.run(run(args, redis_url, Path(scratch), store))
        else:
            asyncio.run(run(args, redis_url, Path(scratch), None))


if __name__ == "__main__":
    main()
