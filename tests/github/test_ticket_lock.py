"""The per-ticket lock: one holder at a time, waiters served in arrival order."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from ballet.tickets.lock import TicketBusy, TicketLock
from cuttable_redis import Cuttable
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio
LINE = "t:line:o/r#1"


async def until(condition: Callable[[], Awaitable[bool]]) -> None:
    while not await condition():
        await asyncio.sleep(0.01)


async def test_waiters_take_the_lock_in_the_order_they_arrived(redis: Redis) -> None:
    lock = TicketLock(redis, "t", timeout_seconds=30, wait_seconds=30)
    order: list[str] = []
    release = asyncio.Event()

    async def holder() -> None:
        async with lock.hold("o/r#1"):
            order.append("first")
            await release.wait()

    async def waiter(name: str) -> None:
        async with lock.hold("o/r#1"):
            order.append(name)

    tasks = [asyncio.create_task(holder())]
    await until(lambda: _has(order, "first"))
    for index, name in enumerate(["b", "c", "d", "e"]):
        tasks.append(asyncio.create_task(waiter(name)))
        await until(lambda n=index + 1: _line_is(redis, n))
    release.set()
    await asyncio.gather(*tasks)
    assert order == ["first", "b", "c", "d", "e"]
    assert await redis.llen(LINE) == 0  # type: ignore[misc]


async def test_a_waiter_is_woken_when_the_lock_is_let_go(redis: Redis) -> None:
    # Its own look comes only after a minute: it takes the lock because the
    # holder's release wakes it (a ticket's next event is not held back ~50 ms).
    lock = TicketLock(redis, "t", timeout_seconds=30, wait_seconds=120, fallback_seconds=60)
    release = asyncio.Event()
    held = asyncio.Event()

    async def holder() -> None:
        async with lock.hold("o/r#1"):
            held.set()
            await release.wait()

    async def waiter() -> None:
        async with lock.hold("o/r#1"):
            pass

    first = asyncio.create_task(holder())
    await held.wait()
    second = asyncio.create_task(waiter())
    await until(lambda: _line_is(redis, 1))
    await asyncio.sleep(0.1)  # it has looked, found the lock held, and waits
    release.set()
    await asyncio.wait_for(asyncio.gather(first, second), timeout=20)
    assert await redis.keys("t:wake:*") == []


HOLDER = """
import asyncio, sys
from redis.asyncio import Redis
from ballet.tickets.lock import TicketLock

async def main() -> None:
    redis = Redis.from_url(sys.argv[1])
    lock = TicketLock(redis, "t", timeout_seconds=300, wait_seconds=30, lease_seconds=1)
    async with lock.hold("o/r#1"):
        print("held", flush=True)
        await asyncio.sleep(600)  # writing a ticket's effects when its worker is killed

asyncio.run(main())
"""


async def test_a_holder_whose_worker_was_killed_frees_the_ticket_within_its_lease(
    redis: Redis, github_redis_url: str
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, github_redis_url], stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None
        assert await asyncio.to_thread(holder.stdout.readline) == b"held\n"
        await asyncio.sleep(1.5)  # past one lease: the live holder renewed it
        assert await redis.exists("t:lock:o/r#1")
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    finally:
        holder.kill()
    # Five minutes was the whole timeout; the dead holder's lease runs out in a second.
    lock = TicketLock(redis, "t", timeout_seconds=300, wait_seconds=20, lease_seconds=1)
    async with lock.hold("o/r#1"):
        pass


async def test_a_dead_waiter_does_not_block_the_line(redis: Redis) -> None:
    lock = TicketLock(redis, "t", timeout_seconds=30, wait_seconds=30)
    await redis.rpush(LINE, "ghost")  # type: ignore[misc]  # queued, then its process died
    async with lock.hold("o/r#1"):
        assert await redis.llen(LINE) == 0  # type: ignore[misc]


async def test_waiting_too_long_raises_ticket_busy(redis: Redis) -> None:
    patient = TicketLock(redis, "t", timeout_seconds=30, wait_seconds=30)
    hasty = TicketLock(redis, "t", timeout_seconds=30, wait_seconds=0.2)
    async with patient.hold("o/r#1"):
        with pytest.raises(TicketBusy, match="o/r#1"):
            async with hasty.hold("o/r#1"):
                pass
    async with hasty.hold("o/r#1"):  # free again, and the line is clean
        pass


@asynccontextmanager
async def lock_through_cuttable(url: str) -> AsyncIterator[tuple[TicketLock, Cuttable]]:
    cuttable = Cuttable(url)
    client = Redis.from_url(await cuttable.start())
    try:
        yield TicketLock(client, "t", timeout_seconds=30, wait_seconds=5, lease_seconds=1), cuttable
    finally:
        await client.aclose()


async def test_redis_lost_while_held_does_not_replace_the_holders_error(
    redis: Redis, github_redis_url: str
) -> None:
    # A worker stopping closes Redis under jobs in flight: the lock's cleanup failed
    # and its ConnectionError replaced the job's own error (or its cancellation).
    async with lock_through_cuttable(github_redis_url) as (lock, cuttable):
        with pytest.raises(ValueError, match="the job's own"):
            async with lock.hold("o/r#1"):
                await cuttable.cut()
                raise ValueError("the job's own error")
    # Nothing is lost: the lease runs out and the ticket can be taken again.
    again = TicketLock(redis, "t", timeout_seconds=30, wait_seconds=10, lease_seconds=1)
    async with again.hold("o/r#1"):
        pass


async def test_redis_lost_while_held_leaves_the_holder_cancelled(
    redis: Redis, github_redis_url: str
) -> None:
    held = asyncio.Event()
    async with lock_through_cuttable(github_redis_url) as (lock, cuttable):

        async def holder() -> None:
            async with lock.hold("o/r#1"):
                held.set()
                await asyncio.sleep(600)

        task = asyncio.create_task(holder())
        await held.wait()
        await cuttable.cut()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert task.cancelled()


async def _has(order: list[str], name: str) -> bool:
    return name in order


async def _line_is(redis: Redis, waiting: int) -> bool:
    # The holder left the line when it took the lock; only waiters remain.
    length: int = await redis.llen(LINE)  # type: ignore[misc]
    return length == waiting
