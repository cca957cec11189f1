"""A running session job's sign of life, which the reconciler reads.

While a session's job runs it beats: `ballet:heartbeat:<job key>` is set
with a TTL of a few beats, so the key vanishes soon after its worker does.
`ballet:heartbeat-last:<job key>` keeps the time of the last beat much longer,
for the crash report ("no heartbeat since …"), to tell a retried job of a
session that had begun from one that never started, and to let the reconciler
count a silent session as crashed at once once it has beaten.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import datetime

from redis.asyncio import Redis

HEARTBEAT_PREFIX = "ballet:heartbeat:"
LAST_BEAT_PREFIX = "ballet:heartbeat-last:"
TTL_BEATS = 4  # the heartbeat key outlives its last beat by this many intervals
LAST_BEAT_KEEP_SECONDS = 30 * 24 * 3600


def heartbeat_key(job_key: str) -> str:
    return HEARTBEAT_PREFIX + job_key


def last_beat_key(job_key: str) -> str:
    return LAST_BEAT_PREFIX + job_key


async def is_beating(redis: Redis, job_key: str) -> bool:
    return bool(await redis.exists(heartbeat_key(job_key)))


async def last_beat(redis: Redis, job_key: str) -> datetime | None:
    """When the session's job last beat, while that is remembered."""
    raw = await redis.get(last_beat_key(job_key))
    return datetime.fromisoformat(raw.decode()) if raw else None


async def forget_last_beat(redis: Redis, job_key: str) -> None:
    """The job will be retried without having started its session: no crash to report."""
    await redis.delete(last_beat_key(job_key))


@contextlib.asynccontextmanager
async def beating(
    redis: Redis,
    job_key: str,
    *,
    every_seconds: float,
    clock: Callable[[], datetime],
    forget_on: tuple[type[BaseException], ...] = (),
) -> AsyncIterator[None]:
    """Beat every `every_seconds` until the block ends; the heartbeat key goes with it.

    When the block raises one of `forget_on` (the job will run again, as if it had
    never begun), the beats stop and the last beat is forgotten *before* the
    heartbeat key goes: the reconciler never sees a silent job that had begun,
    which is how a crash looks, in the moment before arq queues the job again."""

    async def beat() -> None:
        ttl = max(1, round(every_seconds * TTL_BEATS))
        while True:
            now = clock().isoformat()
            async with redis.pipeline(transaction=True) as tx:
                tx.set(heartbeat_key(job_key), now, ex=ttl)
                tx.set(last_beat_key(job_key), now, ex=LAST_BEAT_KEEP_SECONDS)
                await tx.execute()
            await asyncio.sleep(every_seconds)

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    task = asyncio.create_task(beat())
    try:
        yield
    except forget_on:
        await stop()
        await forget_last_beat(redis, job_key)
        raise
    finally:
        await stop()
        await redis.delete(heartbeat_key(job_key))
