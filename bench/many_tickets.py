"""Many tickets in flight at once over two worker processes: time and Redis memory.

Starts the sandbox, the web app and an embedded Valkey (the `ballet sandbox
demo` stack without its in-process worker), then two real `ballet worker`
processes on that Valkey. Files N demo tickets at once, each in a repository
of its own, with the scripted agent (instant sessions), and waits until every
one has merged. Prints the time to merge them all, tickets per minute, the
App's requests per ticket, and Valkey's memory: before, at the end, and per
ticket (`INFO memory`'s used_memory, after the live tickets' records ended).

    .venv/bin/python bench/many_tickets.py [--tickets 200] [--slots 4] [--spacing 0]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from ballet.demo.load import run_tickets
from ballet.demo.stack import running_stack, worker_process
from ballet.logs import configure_logging
from redis.asyncio import Redis


async def used_memory(url: str) -> int:
    redis = Redis.from_url(url)
    try:
        info = await redis.info("memory")
        return int(info["used_memory"])
    finally:
        await redis.aclose()


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
            logs = [Path(tmp) / f"worker-{i}.log" for i in (1, 2)]
            with worker_process(stack, logs[0]), worker_process(stack, logs[1]):
                print(
                    f"{args.tickets} tickets, two workers of {args.slots} session slots,"
                    f" writes {args.spacing}s apart",
                    flush=True,
                )
                try:
                    run = await run_tickets(
                        stack, "many", args.tickets, timeout=args.timeout, poll_seconds=5.0
                    )
                except TimeoutError as exc:
                    print(f"not all merged: {exc}", flush=True)
                    for log in logs:
                        print(f"--- {log.name} (tail)\n{log.read_text()[-3000:]}", flush=True)
                    return 1
                after = await used_memory(url)
    per_ticket = (after - before) / args.tickets
    print(run.describe("merged"), flush=True)
    print(
        f"{args.tickets / run.seconds * 60:.1f} tickets/minute; Valkey used_memory"
        f" {before / 1e6:.1f} MB before, {after / 1e6:.1f} MB after"
        f" ({per_ticket / 1e3:.1f} KB per finished ticket)",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=200)
    parser.add_argument("--slots", type=int, default=4, help="session slots per worker")
    parser.add_argument("--spacing", type=float, default=0.0, help="write pacing (s)")
    parser.add_argument("--timeout", type=float, default=3600)
    configure_logging("warning")
    sys.exit(asyncio.run(main(parser.parse_args())))
