"""Many tickets in flight at once over several worker processes: time, requests, Redis memory.

Starts the sandbox, the web app and an embedded Valkey (the `ballet sandbox
demo` stack without its in-process worker), then `--workers` real `ballet
worker` processes on that Valkey. Files N demo tickets at once, each in a
repository of its own, with the scripted agent (instant sessions), and waits
until every one has merged. Then, once the App has gone quiet, it checks that
nothing was doubled (each issue: one pull request, one merge, one tracking
comment, one report comment per stage run, one check run per stage name on
the head, no session run twice; read from the sandbox's admin API) and prints
the time, tickets per minute, the App's requests per ticket (charged and
writes), and Valkey's memory: `INFO memory`'s used_memory before and after,
per finished ticket, and `MEMORY USAGE` of every key summed by key family
(with how many keys expire, and when).

    .venv/bin/python bench/many_tickets.py [--tickets 1000] [--workers 4] [--slots 4]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from ballet.demo.load import recheck, run_tickets
from ballet.demo.stack import running_stack, worker_process
from ballet.logs import configure_logging
from redis.asyncio import Redis

# A key's family: its name with what names one ticket, job or session replaced.
_VARIABLE = [
    (re.compile(r"many-\d+"), "R"),  # the bench's repositories
    (re.compile(r"[0-9a-f]{32}"), "H"),  # job ids, delivery ids, hashes
    (re.compile(r"[0-9a-f]{8}-[0-9a-f-]{27}"), "U"),  # uuids
    (re.compile(r"\d+"), "N"),
]


def family(key: str) -> str:
    for pattern, replacement in _VARIABLE:
        key = pattern.sub(replacement, key)
    return key


@dataclass
class Family:
    keys: int = 0
    bytes: int = 0
    without_ttl: int = 0
    ttls: list[int] = field(default_factory=list)

    def ttl_range(self) -> str:
        if not self.ttls:
            return "never"
        low, high = min(self.ttls), max(self.ttls)
        spans = f"{_span(low)}" if _span(low) == _span(high) else f"{_span(low)}–{_span(high)}"
        return spans + (f" ({self.without_ttl} never)" if self.without_ttl else "")


def _span(seconds: int) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:.0f} d"
    if seconds >= 3600:
        return f"{seconds / 3600:.0f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds} s"


async def used_memory(url: str) -> int:
    redis = Redis.from_url(url)
    try:
        info = await redis.info("memory")
        return int(info["used_memory"])
    finally:
        await redis.aclose()


async def families(url: str) -> dict[str, Family]:
    """`MEMORY USAGE` (every element counted) and TTL of every key, summed by family."""
    found: dict[str, Family] = defaultdict(Family)
    redis = Redis.from_url(url)
    try:
        keys = [k async for k in redis.scan_iter(count=1000)]
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            async with redis.pipeline(transaction=False) as pipe:
                for key in chunk:
                    pipe.memory_usage(key, samples=0)
                    pipe.ttl(key)
                answers = await pipe.execute()
            for key, used, ttl in zip(chunk, answers[::2], answers[1::2], strict=True):
                entry = found[family(key.decode(errors="replace"))]
                entry.keys += 1
                entry.bytes += int(used or 0)
                if ttl is not None and int(ttl) >= 0:
                    entry.ttls.append(int(ttl))
                else:
                    entry.without_ttl += 1
    finally:
        await redis.aclose()
    return found


def print_families(found: dict[str, Family], tickets: int) -> None:
    total = sum(f.bytes for f in found.values())
    print(f"\nkeys by family ({sum(f.keys for f in found.values())} keys, {total / 1e6:.1f} MB):")
    print(f"{'family':<60} {'keys':>7} {'MB':>7} {'KB/ticket':>9}  expires in")
    for name, entry in sorted(found.items(), key=lambda kv: -kv[1].bytes):
        if entry.bytes < total / 1000:
            continue
        print(
            f"{name[:60]:<60} {entry.keys:>7} {entry.bytes / 1e6:>7.2f}"
            f" {entry.bytes / tickets / 1e3:>9.1f}  {entry.ttl_range()}"
        )
    print(f"{'all keys':<60} {'':>7} {total / 1e6:>7.2f} {total / tickets / 1e3:>9.1f}")
    # What stays past the hour, against what goes within it (results, live logs, ticks).
    lasting = sum(f.bytes for f in found.values() if f.without_ttl or max(f.ttls) > 3600)
    print(
        f"of them kept past an hour: {lasting / tickets / 1e3:.1f} KB a ticket;"
        f" going within the hour: {(total - lasting) / tickets / 1e3:.1f} KB a ticket"
    )


async def main(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="ballet-bench-many-") as tmp:
        async with running_stack(
            Path(tmp),
            session_slots=args.slots,
            worker=False,
            write_spacing_seconds=args.spacing,
        ) as stack:
            url = stack.settings.require_redis_url()
            before = await used_memory(url)
            logs = [Path(tmp) / f"worker-{i}.log" for i in range(1, args.workers + 1)]
            with ExitStack() as workers:
                for log in logs:
                    workers.enter_context(worker_process(stack, log))
                print(
                    f"{args.tickets} tickets, {args.workers} workers of {args.slots} session"
                    f" slots, writes {args.spacing}s apart",
                    flush=True,
                )
                try:
                    # Each look reads a repository's whole state from the sandbox, which
                    # shares its process with the web app: ~40 looks a second at most.
                    poll = max(5.0, args.tickets / 40)
                    run = await run_tickets(
                        stack, "many", args.tickets, timeout=args.timeout, poll_seconds=poll
                    )
                except TimeoutError as exc:
                    print(f"not all merged: {exc}", flush=True)
                    for log in logs:
                        print(f"--- {log.name} (tail)\n{log.read_text()[-3000:]}", flush=True)
                    return 1
                print(f"all merged in {run.seconds:.1f} s; waiting for quiet", flush=True)
                quiet = time.monotonic()
                problems = await recheck(stack, run)
                print(f"quiet and checked after {time.monotonic() - quiet:.1f} s", flush=True)
                after = await used_memory(url)
                found = await families(url)
    per_ticket = (after - before) / args.tickets
    print(run.describe("merged"), flush=True)
    print(f"{args.tickets / run.seconds * 60:.1f} tickets/minute", flush=True)
    if problems:
        print(f"DOUBLED in {len(problems)} tickets:")
        for key, what in sorted(problems.items())[:20]:
            print(f"  {key}: {'; '.join(what)}")
    else:
        print(f"none doubled: all {args.tickets} checked", flush=True)
    print(
        f"Valkey used_memory {before / 1e6:.1f} MB before, {after / 1e6:.1f} MB after"
        f" ({per_ticket / 1e3:.1f} KB per finished ticket)",
        flush=True,
    )
    print_families(found, args.tickets)
    return 1 if problems else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=4, help="`ballet worker` processes")
    parser.add_argument("--slots", type=int, default=4, help="session slots per worker")
    parser.add_argument("--spacing", type=float, default=0.0, help="write pacing (s)")
    parser.add_argument("--timeout", type=float, default=7200)
    configure_logging("warning")
    sys.exit(asyncio.run(main(parser.parse_args())))
