"""A session job's heartbeat on a real Valkey, watched as the reconciler would see it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from arq import Retry
from arq.connections import ArqRedis
from ballet.jobs.heartbeats import beating, heartbeat_key, last_beat, last_beat_key
from cuttable_redis import Cuttable
from redis.asyncio import Redis
from redis.exceptions import ConnectionError

pytestmark = pytest.mark.anyio

JOB = "octo/demo#7:implement:1:1"


async def deletions(url: str, seen: list[str], ready: asyncio.Event) -> None:
    """Every DEL Valkey runs, in the order it ran them."""
    redis = Redis.from_url(url)
    try:
        async with redis.monitor() as monitor:
            ready.set()
            async for info in monitor.listen():
                command = str(info.get("command", ""))
                if command.startswith("DEL "):
                    seen.append(command.split(" ", 1)[1])
    finally:
        await redis.aclose()


async def test_a_job_that_will_run_again_forgets_its_beat_before_it_falls_silent(
    redis: ArqRedis, jobs_redis_url: str
) -> None:
    """Silent but once beating is how a crash looks; a retried job must never look so,
    not even in the moment before arq queues it again."""
    seen: list[str] = []
    ready = asyncio.Event()
    watching = asyncio.create_task(deletions(jobs_redis_url, seen, ready))
    await ready.wait()
    try:
        with pytest.raises(Retry):
            async with beating(
                redis,
                JOB,
                every_seconds=0.01,
                clock=lambda: datetime.now(UTC),
                forget_on=(Retry,),
            ):
                await asyncio.sleep(0.05)  # a few beats
                raise Retry(defer=1)
        for _ in range(100):
            if len(seen) >= 2:
                break
            await asyncio.sleep(0.01)
    finally:
        watching.cancel()
    assert seen[:2] == [last_beat_key(JOB), heartbeat_key(JOB)]
    assert await last_beat(redis, JOB) is None


async def test_a_job_that_ends_otherwise_keeps_its_last_beat_for_the_crash_report(
    redis: ArqRedis,
) -> None:
    with pytest.raises(RuntimeError):
        async with beating(
            redis, JOB, every_seconds=0.01, clock=lambda: datetime.now(UTC), forget_on=(Retry,)
        ):
            await asyncio.sleep(0.03)
            raise RuntimeError("the worker's disk is gone")
    assert not await redis.exists(heartbeat_key(JOB))
    assert await last_beat(redis, JOB) is not None


class DropsOneWrite(ArqRedis):
    """Valkey, but the first beat's write is lost on the way (a timeout under load)."""

    dropped = 0

    async def evalsha(self, *args: Any, **kwargs: Any) -> Any:
        if not self.dropped:
            self.dropped += 1
            raise ConnectionError("Connection reset by peer")
        return await super().evalsha(*args, **kwargs)


async def test_a_beat_that_fails_once_does_not_silence_the_session(redis: ArqRedis) -> None:
    flaky = DropsOneWrite(connection_pool=redis.connection_pool)
    async with beating(flaky, JOB, every_seconds=0.05, clock=lambda: datetime.now(UTC)):
        await asyncio.sleep(0.3)
        assert flaky.dropped == 1
        assert await redis.exists(heartbeat_key(JOB))  # the next beat came


async def test_redis_lost_as_a_session_is_cancelled_leaves_it_cancelled(
    jobs_redis_url: str,
) -> None:
    # A stopping worker cancels its sessions and closes its connections: the
    # heartbeat's cleanup failed, and its ConnectionError replaced the cancellation
    # (arq queues a cancelled job again; an error is the job's own failure).
    cuttable = Cuttable(jobs_redis_url)
    client = Redis.from_url(await cuttable.start())
    beat = asyncio.Event()

    async def session() -> None:
        async with beating(client, JOB, every_seconds=0.01, clock=lambda: datetime.now(UTC)):
            beat.set()
            await asyncio.sleep(600)

    task = asyncio.create_task(session())
    try:
        await beat.wait()
        await cuttable.cut()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    finally:
        await client.aclose()
    assert task.cancelled()


async def test_redis_lost_as_a_session_defers_keeps_its_deferral(jobs_redis_url: str) -> None:
    cuttable = Cuttable(jobs_redis_url)
    client = Redis.from_url(await cuttable.start())
    try:
        with pytest.raises(Retry):
            async with beating(
                client,
                JOB,
                every_seconds=0.01,
                clock=lambda: datetime.now(UTC),
                forget_on=(Retry,),
            ):
                await cuttable.cut()
                raise Retry(defer=1)
    finally:
        await client.aclose()
