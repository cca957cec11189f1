"""Many tickets in flight at once over several worker processes: time, requests, Redis memory.

Starts the sandbox, the web app and an embedded Valkey (the `ballet sandbox
demo` stack without its in-process worker), then `--workers` real `ballet
worker` processes on that Valkey; the web app is a `ballet web` process of its
own (on the bench's event loop, beside the sandbox and the watchers, it answered
the sandbox's webhooks too late at 1,000 tickets), and so is the sandbox, a
`ballet sandbox serve` spoken to over HTTP only (`--sandbox-in-process`: on the
bench's event loop, as before; it fell thousands of webhooks behind at 1,000
tickets). Files N demo tickets at once,
`--per-repo` to a repository (each an issue on a branch of its own; creating a
repository runs the sandbox's CI), with the scripted agent (instant sessions) and
write pacing off (`--spacing`, as the sandbox allows), and waits until every one
has merged. Then, once the App has gone quiet, it checks that
nothing was doubled (each issue: one pull request, one merge, one tracking
comment, one report comment per stage run, one check run per stage name on
the head, no session run twice; read from the sandbox's admin API) and prints
the time, tickets per minute, the App's requests per ticket (charged and
writes), and Valkey's memory: `INFO memory`'s used_memory before and after,
per finished ticket, and `MEMORY USAGE` of every key summed by key family
(with how many keys expire, and when). The processes it starts run `python3` as
this interpreter, not through a version manager's shim (bench/direct_python.py;
`--shim-python` leaves PATH alone).

Its repositories set `policy: {merge: auto}` (demo.LANDS_ALONE_YML): tickets land
with no person's approval, so the figures are Ballet's alone.

    .venv/bin/python bench/many_tickets.py [--tickets 1000] [--workers 4] [--per-repo 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import direct_python
from ballet.demo import repo as demo
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


def cpu_seconds(pid: int) -> tuple[float, float]:
    """A live process's CPU time (user + system) and its reaped children's (sessions, git)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    own = (int(fields[11]) + int(fields[12])) / tick
    return own, (int(fields[13]) + int(fields[14])) / tick


async def valkey_cpu(url: str) -> float:
    redis = Redis.from_url(url)
    try:
        info = await redis.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    finally:
        await redis.aclose()


# A stage's timeout counts its session's time queued for a slot: a thousand tickets
# at once on 16 slots wait far longer than the demo's 5 minutes (at 200, 21 timed
# out and asked a person).
# `policy: {merge: auto}`: every ticket lands with no person's approval to wait for.
BALLET_YML = demo.LANDS_ALONE_YML.replace("timeout_minutes: 5", "timeout_minutes: 240")
assert BALLET_YML != demo.LANDS_ALONE_YML


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
        logs_dir = Path(args.logs or tmp)
        logs_dir.mkdir(parents=True, exist_ok=True)
        async with running_stack(
            Path(tmp),
            session_slots=args.slots,
            worker=False,
            write_spacing_seconds=args.spacing,
            web_log=logs_dir / "web.log",
            # One at a time, a thousand tickets' deliveries fell minutes behind.
            webhooks_at_once=args.webhooks_at_once,
            sandbox_log=None if args.sandbox_in_process else logs_dir / "sandbox.log",
        ) as stack:
            url = stack.settings.require_redis_url()
            before = await used_memory(url)
            logs = [logs_dir / f"worker-{i}.log" for i in range(1, args.workers + 1)]
            with ExitStack() as workers:
                procs = [workers.enter_context(worker_process(stack, log)) for log in logs]
                repos = -(-args.tickets // args.per_repo)
                pacing = f"{args.spacing}s apart" if args.spacing else "pacing off"
                print(
                    f"{args.tickets} tickets in {repos} repositories, {args.workers} workers"
                    f" of {args.slots} session slots, a `ballet web` process, writes {pacing},"
                    f" {args.webhooks_at_once} webhooks posted at once",
                    flush=True,
                )
                started = time.monotonic()

                async def progress(merged: int, seconds: float) -> None:
                    waiting = await stack.webhooks_waiting()
                    print(
                        f"  {merged} merged after {seconds:.0f} s; {waiting} webhooks waiting",
                        flush=True,
                    )

                try:
                    # Each look reads a repository's whole state from the busy sandbox:
                    # ~40 looks a second at most.
                    poll = max(5.0, args.tickets / 50)
                    run = await run_tickets(
                        stack,
                        "many",
                        args.tickets,
                        timeout=args.timeout,
                        poll_seconds=poll,
                        per_repo=args.per_repo,
                        ballet_yml=BALLET_YML,
                        progress=progress,
                    )
                except TimeoutError as exc:
                    print(f"not all merged: {exc}", flush=True)
                    for log in [*logs, logs_dir / "web.log", logs_dir / "sandbox.log"]:
                        if not log.exists():
                            continue
                        print(f"--- {log.name} (tail)\n{log.read_text()[-3000:]}", flush=True)
                    return 1
                cpu = {
                    "workers (own)": sum(cpu_seconds(p.pid)[0] for p in procs),
                    "their sessions and git": sum(cpu_seconds(p.pid)[1] for p in procs),
                }
                if stack.web_process is not None:
                    cpu["web"] = sum(cpu_seconds(stack.web_process.pid))
                mine = resource.getrusage(resource.RUSAGE_SELF)
                theirs = resource.getrusage(resource.RUSAGE_CHILDREN)
                if stack.sandbox_process is not None:
                    own, children = cpu_seconds(stack.sandbox_process.pid)
                    cpu["sandbox"], cpu["sandbox's CI and git"] = own, children
                    cpu["bench: watching"] = mine.ru_utime + mine.ru_stime
                else:
                    cpu["bench: sandbox, watching"] = mine.ru_utime + mine.ru_stime
                    cpu["bench's children: CI, git"] = theirs.ru_utime + theirs.ru_stime
                cpu["valkey"] = await valkey_cpu(url)
                creating = time.monotonic() - started - run.seconds
                waiting = await stack.webhooks_waiting()
                print(
                    f"{repos} repositories created in {creating:.1f} s; from the first ticket"
                    f" filed, all merged in {run.seconds:.1f} s ({waiting} webhooks waiting);"
                    " waiting for quiet",
                    flush=True,
                )
                quiet = time.monotonic()
                problems = await recheck(stack, run)
                print(f"quiet and checked after {time.monotonic() - quiet:.1f} s", flush=True)
                after = await used_memory(url)
                found = await families(url)
    per_ticket = (after - before) / args.tickets
    print(run.describe("merged"), flush=True)
    print(f"{args.tickets / run.seconds * 60:.1f} tickets/minute", flush=True)
    print(
        f"CPU seconds until all merged, {sum(cpu.values()) / args.tickets:.2f} a ticket: "
        + ", ".join(f"{name} {seconds:.0f}" for name, seconds in cpu.items()),
        flush=True,
    )
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
    parser.add_argument("--spacing", type=float, default=0.0, help="write pacing (s); 0: off")
    parser.add_argument("--per-repo", type=int, default=10, help="tickets to a repository")
    parser.add_argument(
        "--webhooks-at-once", type=int, default=8, help="deliveries the sandbox posts at once"
    )
    parser.add_argument(
        "--sandbox-in-process",
        action="store_true",
        help="run the sandbox on the bench's event loop, not as a process of its own",
    )
    parser.add_argument("--logs", default=None, help="keep the processes' logs in this directory")
    parser.add_argument("--timeout", type=float, default=7200)
    parser.add_argument(
        "--shim-python",
        action="store_true",
        help="leave PATH as it is (a pyenv shim: ~170 ms a `python3` start, 4-5 a ticket)",
    )
    configure_logging("warning")
    args = parser.parse_args()
    if not args.shim_python:
        direct_python.put_first_on_path()
    sys.exit(asyncio.run(main(args)))
