"""One installation's writes from four worker processes, through the real pacer: do
they stay within GitHub's limits?

GitHub asks for content-creating requests "at least one second" apart, and caps
them at 80 a minute and 500 an hour per installation. A thousand tickets in one
installation are ~17,000 writes, hours of GitHub's time, so this bench runs the
pacer on a shortened clock: `--scale 30` makes Ballet's second 1/30 s and its
hour 2 minutes (the spacing, the hour and the longest wait in a job all shrink by the
same factor). Four processes (as four workers would) with 25 writers each make
`--writes` writes through `WritePacer` on one embedded Valkey to a loopback HTTP
server, which notes when each arrives. A write deferred by the pacer sleeps
until its slot as a deferred job would, then asks again.

Prints, in GitHub's time (times × scale): writes, elapsed, deferrals, the
gaps between writes as the pacer let them go and as they arrived (minimum,
1st percentile, how many under the spacing: the machine's jitter between the
two is magnified by the scale too), and the most arrivals in any rolling
minute and in any rolling hour, against 80 and 500.

    .venv/bin/python bench/pacing.py [--writes 1100] [--scale 30]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import multiprocessing
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from ballet.embedded_valkey import embedded_valkey
from ballet.github.forge import RateLimited
from ballet.github.pacing import (
    DEFAULT_MAX_WAIT_SECONDS,
    DEFAULT_PER_HOUR,
    DEFAULT_SPACING_SECONDS,
    HOUR_SECONDS,
    WritePacer,
)
from redis.asyncio import Redis

WORKERS = 4
WRITERS = 25
INSTALLATION = 42


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Arrivals:
    """The loopback "GitHub": answers every write 201 and notes when it came."""

    def __init__(self) -> None:
        self.times: list[float] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.times.append(time.monotonic())
        await send({"type": "http.response.start", "status": 201, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


async def writer(
    pacer: WritePacer, redis: Redis, http: httpx.AsyncClient, url: str, let_go: list[float]
) -> int:
    deferred = 0
    while await redis.decr("bench:left") >= 0:
        request = http.build_request("POST", url, json={"body": "a comment"})
        while True:
            try:
                async with pacer.async_acquire(request):
                    let_go.append(time.time())
                    await http.send(request)
                break
            except RateLimited as exc:
                deferred += 1  # a deferred job comes back when its slot is near
                await asyncio.sleep(exc.retry_after_seconds)
    return deferred


async def worker_main(redis_url: str, url: str, scale: float) -> tuple[int, list[float]]:
    redis = Redis.from_url(redis_url)
    pacer = WritePacer(
        redis,
        INSTALLATION,
        spacing_seconds=DEFAULT_SPACING_SECONDS / scale,
        per_hour=DEFAULT_PER_HOUR,
        max_wait_seconds=DEFAULT_MAX_WAIT_SECONDS / scale,
        hour_seconds=HOUR_SECONDS / scale,
    )
    let_go: list[float] = []
    async with httpx.AsyncClient() as http:
        counts = await asyncio.gather(
            *(writer(pacer, redis, http, url, let_go) for _ in range(WRITERS))
        )
    await redis.aclose()
    return sum(counts), let_go


def worker(redis_url: str, url: str, scale: float, out: Any) -> None:
    out.put(asyncio.run(worker_main(redis_url, url, scale)))


def most_within(times: list[float], span: float) -> int:
    return max((bisect.bisect_left(times, t + span) - i for i, t in enumerate(times)), default=0)


async def main(writes: int, scale: float, redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    await redis.set("bench:left", writes)
    arrivals = Arrivals()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(arrivals, port=port, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    url = f"http://127.0.0.1:{port}/repos/o/r/issues/1/comments"
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(redis_url, url, scale, out)) for _ in range(WORKERS)]
    start = time.monotonic()
    for proc in procs:
        proc.start()
    deferred, let_go = 0, []
    for _ in procs:
        count, times = await asyncio.to_thread(out.get)
        deferred += count
        let_go += times
    for proc in procs:
        proc.join()
    elapsed = (time.monotonic() - start) * scale
    server.should_exit = True
    await serving
    await redis.aclose()
    times = sorted(t * scale for t in arrivals.times)
    gaps = sorted(b - a for a, b in itertools.pairwise(times))
    went = sorted(t * scale for t in let_go)
    went_gaps = sorted(b - a for a, b in itertools.pairwise(went))
    print(
        f"{WORKERS} processes × {WRITERS} writers, one installation, clock ÷{scale:g} "
        f"(spacing {DEFAULT_SPACING_SECONDS:g} s, cap {DEFAULT_PER_HOUR}/h in GitHub's time)"
    )
    print(f"writes arrived      {len(times)} of {writes}")
    print(f"elapsed             {elapsed / 3600:.2f} h ({elapsed:,.0f} s) in GitHub's time")
    print(f"deferrals           {deferred} (writes whose slot was too far to wait in a job)")
    for what, found in (("let go", went_gaps), ("arrived", gaps)):
        if found:
            p1, under = found[len(found) // 100], sum(g < DEFAULT_SPACING_SECONDS for g in found)
            print(
                f"gap {what + ':':<15} min {found[0]:.2f} s, p1 {p1:.2f} s,"
                f" under the spacing {under}"
            )
    print(f"most in a minute    {most_within(times, 60)} (GitHub's cap 80)")
    print(f"most in an hour     {most_within(times, 3600)} (GitHub's cap {DEFAULT_PER_HOUR})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=1100, help="writes in all (default 1100)")
    parser.add_argument("--scale", type=float, default=30, help="clock speed-up (default 30)")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="ballet-bench-pacing-") as tmp,
        embedded_valkey(Path(tmp)) as redis_url,
    ):
        asyncio.run(main(args.writes, args.scale, redis_url))
