"""Benchmark the listing, the fleet page and a ticket's page as tickets grow.

Starts the sandbox, an embedded Valkey and Ballet's web app as a `ballet web`
process of its own (no worker), makes `--repos` public repositories, and saves
`--ended` ended and `--live` live tickets through the record store as the
engine would (each ended one ran implement, review and verify, one review sent
back; its run tallies counted, its model spend in the ledger). Then fetches
each page `--reads` times, one at a time, after a few warm-up reads (access
answers are kept a minute, as for any reader), and prints each page's p50 and
p99 in milliseconds. For scale it also prints what the old listing did on
every request: scan and parse every record in Redis. Goal: p99 <= 150 ms.

    .venv/bin/python bench/pages.py [--ended 10000] [--live 200] [--repos 10] [--reads 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from ballet.core.config import Runtime
from ballet.core.events import SessionFinished, TicketRequested
from ballet.core.machine import advance
from ballet.core.record import Record
from ballet.core.report import Report
from ballet.core.resolve import default_config, resolve_pipeline
from ballet.core.spend import Spend
from ballet.demo.stack import running_stack
from ballet.queue import connect
from ballet.spend_ledger import SpendLedger
from ballet.tickets.store import RecordStore

NOW = datetime.now(UTC)
LOG = ""  # the web process's log, shown when a page fails
OUTCOMES = ("done", "changes_requested", "done", "done", "passed")


def started(repo: str, number: int, at: datetime) -> Record:
    pipeline = resolve_pipeline(
        default_config(Runtime(adapter="command", command=("python3", "agent.py"))), ()
    )
    record, _ = advance(
        None,
        TicketRequested(
            now=at,
            repo=repo,
            issue=number,
            author="alice",
            title=f"Ticket {number}: make the thing do what it says",
            pipeline=pipeline,
            default_branch="main",
        ),
    )
    return record


async def save(store: RecordStore, repo: str, number: int, at: datetime, ended: bool) -> None:
    record = started(repo, number, at)
    await store.commit(record, [], None, before=None, tally=True)
    if not ended:
        return
    for step, outcome in enumerate(OUTCOMES[:4]):
        run = record.open_run
        if run is None or run.job_key is None:
            break
        after, _ = advance(
            record,
            SessionFinished(
                now=at + timedelta(minutes=7 * (step + 1)),
                job_key=run.job_key,
                stage=run.stage,
                iteration=run.iteration,
                attempt=run.attempt,
                report=Report(outcome=outcome, summary="what the stage did, in a line"),
            ),
        )
        await store.commit(after, [], None, before=record, tally=True)
        record = after
    done = record.model_copy(
        update={
            "status": "done",
            "version": record.version + 1,
            "updated_at": at + timedelta(hours=1),
        }
    )
    await store.commit(done, [], None, before=record, tally=True)


async def fill(redis_url: str, repos: list[str], ended: int, live: int) -> None:
    redis = await connect(redis_url)
    store, ledger = RecordStore(redis), SpendLedger(redis)
    gate = asyncio.Semaphore(32)

    async def one(i: int, is_ended: bool) -> None:
        async with gate:
            repo = repos[i % len(repos)]
            at = NOW - timedelta(minutes=(ended + live - i) * 3 % (25 * 24 * 60))
            await save(store, repo, i + 1, at, is_ended)

    begun = time.perf_counter()
    await asyncio.gather(*(one(i, True) for i in range(ended)))
    await asyncio.gather(*(one(ended + i, False) for i in range(live)))
    for day in range(14):
        for repo in repos:
            await ledger.add(
                repo=repo,
                installation_id=None,
                provider="anthropic",
                model="claude-sonnet-4-5",
                spend=Spend(requests=3, input_tokens=9000, output_tokens=2000, cost_usd=0.42),
                at=NOW - timedelta(days=day),
            )
    print(f"saved {ended} ended and {live} live tickets in {time.perf_counter() - begun:.1f} s")
    await redis.aclose()


async def old_listing_scan(redis_url: str, reads: int) -> list[float]:
    """What `/tickets` did on every request before the index: read every record."""
    redis = await connect(redis_url)
    store = RecordStore(redis)
    took = []
    for _ in range(reads):
        begun = time.perf_counter()
        _ = [r async for r in store.records()]
        took.append((time.perf_counter() - begun) * 1000)
    await redis.aclose()
    return took


async def timed(web_url: str, path: str, reads: int) -> list[float]:
    async with httpx.AsyncClient(base_url=web_url, timeout=60) as client:
        for _ in range(5):
            _ok(await client.get(path))
        took = []
        for _ in range(reads):
            begun = time.perf_counter()
            response = await client.get(path)
            took.append((time.perf_counter() - begun) * 1000)
            _ok(response)
    return took


def _ok(response: httpx.Response) -> None:
    if response.status_code != 200:
        log = Path(LOG).read_text()[-3000:] if Path(LOG).exists() else ""
        raise SystemExit(f"{response.request.url} answered {response.status_code}\n{log}")


def line(name: str, took: list[float]) -> str:
    ordered = sorted(took)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return f"{name:<28} p50 {statistics.median(took):7.1f} ms   p99 {p99:7.1f} ms"


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="ballet-bench-pages-") as tmp:
        data = Path(tmp)
        global LOG
        LOG = str(data / "web.log")
        async with running_stack(data, worker=False, web_log=data / "web.log") as stack:
            repos = [f"bench/repo{i}" for i in range(args.repos)]
            async with stack.admin() as admin:
                for repo in repos:
                    owner, name = repo.split("/")
                    created = await admin.post(
                        "/_sandbox/repos",
                        json={"owner": owner, "name": name, "private": False},
                    )
                    created.raise_for_status()
            assert stack.settings.redis_url is not None
            url = stack.settings.redis_url.get_secret_value()
            await fill(url, repos, args.ended, args.live)
            live_ticket = f"/tickets/{repos[args.ended % len(repos)]}/{args.ended + 1}"
            print(f"{args.reads} reads each, one at a time, of Ballet's pages over loopback:")
            pages = (("/tickets", "/tickets"), ("/fleet", "/fleet"), ("a ticket", live_ticket))
            for name, path in pages:
                print(line(name, await timed(stack.web_url, path, args.reads)))
            scans = await old_listing_scan(url, max(args.reads // 20, 3))
            print(line("old listing: every record", scans))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ended", type=int, default=10_000)
    parser.add_argument("--live", type=int, default=200)
    parser.add_argument("--repos", type=int, default=10)
    parser.add_argument("--reads", type=int, default=200)
    asyncio.run(main(parser.parse_args()))
