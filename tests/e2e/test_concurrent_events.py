"""50 events for one ticket at once, over two worker processes: applied one at a
time, in some order, none lost, the record's version strictly increasing.

A person's ticket waits on a question; 50 comments saying `/ballet status`
are posted at once. Each is a real webhook delivery to the web app, queued on
Valkey and taken by one of two `ballet worker` processes. Redis's MONITOR
shows every write of the ticket's record as Valkey saw it: the versions must
run v+1, v+2, ... v+50 with no repeat (a repeat is two workers applying
events to the same record at once, and one of them lost), and every comment
gets exactly one reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from pathlib import Path

import pytest
from ballet.demo.stack import Stack, worker_process
from ballet.demo.watch import View
from redis.asyncio import Redis
from scenarios import comment, markers, new_repo, ticket, wait_until, waiting_for

pytestmark = pytest.mark.anyio

EVENTS = 50
# The record's own version is its last "version" (the pinned pipeline's comes first).
VERSION = re.compile(r'"version":(\d+)')


async def record_writes(url: str, key: str, versions: list[int], ready: asyncio.Event) -> None:
    """Append the version of every SET of the record `key`, in the order Valkey ran them."""
    redis = Redis.from_url(url)
    try:
        async with redis.monitor() as monitor:
            ready.set()
            async for info in monitor.listen():
                command = str(info.get("command", ""))
                if command.startswith("SET ") and key in command.split(" ", 2)[1]:
                    found = VERSION.findall(command)
                    if found:
                        versions.append(int(found[-1]))
    finally:
        await redis.aclose()


async def settled_version(url: str, ticket: str) -> int:
    """The record's version in Redis once the ticket's outbox is empty.

    The tracking comment can lag Redis: an effect carried out after the waiting
    state was shown (the wait's check run, whose id is fed back) saves the record
    again without rewriting the comment. Counting from the comment's version
    would count that write as one of the 50.
    """
    redis = Redis.from_url(url)
    try:
        for _ in range(600):
            if not await redis.llen(f"ballet:outbox:{ticket}"):
                raw = await redis.get(f"ballet:record:{ticket}")
                assert raw is not None
                return int(VERSION.findall(raw.decode())[-1])
            await asyncio.sleep(0.05)
        raise AssertionError(f"the outbox of {ticket} never emptied")
    finally:
        await redis.aclose()


async def test_fifty_events_at_once_over_two_workers_are_applied_one_at_a_time(
    bare_stack: Stack, tmp_path: Path
) -> None:
    stack = bare_stack
    logs = [tmp_path / "worker-1.log", tmp_path / "worker-2.log"]
    with worker_process(stack, logs[0]), worker_process(stack, logs[1]):
        repo = await new_repo(stack, "busy")
        number = await ticket(stack, repo, directives="demo:implement=question@1")
        view = await wait_until(stack, repo, number, waiting_for("question"), timeout=120)
        assert view.record is not None and view.record.pr_number is not None
        shown = view.record.version
        pr = view.record.pr_number

        versions: list[int] = []
        ready = asyncio.Event()
        url = stack.settings.redis_url
        assert url is not None
        key = f"record:{repo}#{number}"
        before = await settled_version(url.get_secret_value(), f"{repo}#{number}")
        watcher = asyncio.create_task(record_writes(url.get_secret_value(), key, versions, ready))
        await ready.wait()
        try:
            posted = await asyncio.gather(
                *(comment(stack, repo, pr, "alice", "/ballet status") for _ in range(EVENTS))
            )
            ids = [c["id"] for c in posted]

            def all_applied(v: View) -> bool:
                # Every reply posted and the record saved at the last version; a lost
                # event would keep it short. (`/ballet status` changes nothing people
                # see, so the tracking comment is not rewritten: Redis is watched.)
                replied = sum(":reply:" in m for m in markers(v)) >= EVENTS
                return replied and max(versions, default=0) >= before + EVENTS

            view = await wait_until(stack, repo, number, all_applied, timeout=180)
            await asyncio.sleep(0.5)  # the last write's MONITOR line
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    assert view.record is not None
    assert view.record.version == shown  # no tracking-comment edit for nothing visible
    assert max(versions) == before + EVENTS  # none lost
    applied = [v for v in versions if v > before]
    assert applied == list(range(before + 1, before + EVENTS + 1)), versions
    replies = [m for m in markers(view) if ":reply:" in m]
    assert sorted(replies) == sorted(set(replies)) and len(replies) == EVENTS  # none doubled
    for comment_id in ids:
        assert sum(f":{comment_id}:" in m for m in replies) == 1
    handled = [
        sum("ticket advanced" in line and "command_issued" in line for line in log.open())
        for log in logs
    ]
    assert sum(handled) == EVENTS and all(n > 0 for n in handled), handled  # both took some
    print(
        f"\n{EVENTS} events applied as versions {before + 1}..{before + EVENTS}; "
        f"commands applied per worker: {handled}"
    )
