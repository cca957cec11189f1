"""A running session job's sign of life, which the reconciler reads.

While a session's job runs it beats: `ballet:heartbeat:<job key>` is set
with a TTL of a few beats, so the key vanishes soon after its worker does.
`ballet:heartbeat-last:<job key>` keeps the time of the last beat much longer,
for the crash report ("no heartbeat since …"), to tell a retried job of a
session that had begun from one that never started, and to let the reconciler
count a silent session as crashed at once once it has beaten.

A crash verdict and a beat exclude each other (`fence_off`, `Lease`): the
reconciler fences a session off only while its heartbeat key is absent, and a
beat is written only while the session is not fenced off. A session that beat
has the heartbeat's life in which no verdict can be taken; one fenced off (its
worker stalled past that life and was judged crashed) can never beat again,
and the job, once it runs again, sees so before it pushes or reports: the
attempt that replaced it is the only one whose work lands.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import datetime

import structlog
from redis.asyncio import Redis

from ballet.queue import left_to_expire

log = structlog.get_logger("ballet.jobs.heartbeats")

HEARTBEAT_PREFIX = "ballet:heartbeat:"
LAST_BEAT_PREFIX = "ballet:heartbeat-last:"
FENCE_PREFIX = "ballet:session-fenced:"
TTL_BEATS = 4  # the heartbeat key outlives its last beat by this many intervals
LAST_BEAT_KEEP_SECONDS = 30 * 24 * 3600


def heartbeat_key(job_key: str) -> str:
    return HEARTBEAT_PREFIX + job_key


def last_beat_key(job_key: str) -> str:
    return LAST_BEAT_PREFIX + job_key


def fence_key(job_key: str) -> str:
    return FENCE_PREFIX + job_key


# A beat (heartbeat and last beat), unless the session was fenced off: 0 then.
_BEAT = """
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[3])
return 1
"""
# The crash verdict's claim: the session fenced off, unless it beats (0 then).
_FENCE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[2])
return 1
"""


async def fence_off(redis: Redis, job_key: str, now: datetime) -> bool:
    """Fence the session off for good, if it is silent now; False if it beats.

    Taken by the reconciler after it judged the session crashed from what it read:
    a worker that stalled past the heartbeat's life and beat again since then is
    alive after all, and one fenced off will never write another beat."""
    fence = redis.register_script(_FENCE)
    keys = [heartbeat_key(job_key), fence_key(job_key)]
    return bool(await fence(keys=keys, args=[now.isoformat(), LAST_BEAT_KEEP_SECONDS]))


class Lease:
    """A running session's right to push and report, renewed by each beat.

    `renew()` beats at once; True means no crash verdict can be taken for the next
    heartbeat's life (`TTL_BEATS` beats), False that one was: the session was fenced
    off and another attempt replaces it, so it must push and report nothing."""

    def __init__(
        self, redis: Redis, job_key: str, every_seconds: float, clock: Callable[[], datetime]
    ) -> None:
        self.job_key = job_key
        self._ttl = max(1, round(every_seconds * TTL_BEATS))
        self._clock = clock
        self._beat = redis.register_script(_BEAT)
        self.lost = False

    async def renew(self) -> bool:
        if self.lost:
            return False
        job_key = self.job_key
        keys = [heartbeat_key(job_key), last_beat_key(job_key), fence_key(job_key)]
        now = self._clock().isoformat()
        if not await self._beat(keys=keys, args=[now, self._ttl, LAST_BEAT_KEEP_SECONDS]):
            self.lost = True
            log.warning("session fenced off: judged crashed, another attempt runs", job_key=job_key)
        return not self.lost


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
) -> AsyncIterator[Lease]:
    """Beat every `every_seconds` until the block ends; the heartbeat key goes with it.

    When the block raises one of `forget_on` (the job will run again, as if it had
    never begun), the beats stop and the last beat is forgotten *before* the
    heartbeat key goes: the reconciler never sees a silent job that had begun,
    which is how a crash looks, in the moment before arq queues the job again.

    The block gets the session's `Lease`; once it is lost, the beats stop."""
    lease = Lease(redis, job_key, every_seconds, clock)

    async def beat() -> None:
        while True:
            try:
                if not await lease.renew():
                    return
            except Exception as exc:
                # One failed write (a Redis timeout under load) misses one beat; a
                # beat task that died of it would leave a live session silent.
                log.warning("heartbeat not written", job_key=job_key, error=repr(exc))
            await asyncio.sleep(every_seconds)

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    task = asyncio.create_task(beat())
    # Redis lost in the cleanups (a stopping worker) must not replace the session's
    # own outcome: the heartbeat expires, and the reconciler judges it as any lost one.
    try:
        yield lease
    except forget_on:
        await stop()
        await left_to_expire(forget_last_beat(redis, job_key), "heartbeat keys", job_key=job_key)
        raise
    finally:
        await stop()
        gone = redis.delete(heartbeat_key(job_key))
        await left_to_expire(gone, "heartbeat keys", job_key=job_key)
