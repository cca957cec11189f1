"""The job queue: arq on Redis/Valkey — the events queue, one sessions queue per
agent pool — and durable, deduplicated enqueueing of webhook deliveries.

A delivery is keyed by its X-GitHub-Delivery id. A marker
`ballet:delivery:<id>` lives for the dedupe window (days: GitHub allows
redelivery long after arq's own result keys have expired) and is written in
the same Lua script that enqueues the job, so there is never a marker
without a job (a delivery refused as a duplicate yet never handled) nor a
job without a marker (a delivery handled twice). One call of the script
enqueues any number of deliveries, so the web app writes the deliveries that
arrive together in one round trip (`ballet.web.group_commit`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field

import structlog
from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.constants import job_key_prefix
from arq.jobs import serialize_job
from redis import exceptions as redis_errors
from redis.asyncio import ConnectionPool
from redis.exceptions import RedisError

from ballet.core.pools import DEFAULT_POOL

log = structlog.get_logger("ballet.queue")

EVENTS_QUEUE = "ballet:events"  # deliveries and other short jobs, shared by every worker
SESSIONS_QUEUE = "ballet:sessions"  # the default pool's agent sessions
DELIVERY_MARKER_PREFIX = "ballet:delivery:"
HANDLE_DELIVERY = "handle_delivery"
WAKE_PREFIX = "ballet:wake:"  # a queue's pub/sub channel: a job is there (jobs/wakeups.py)
# Redis gone from under a command (a worker stopping closes its connections, a
# failover): what a cleanup in a `finally` logs rather than raises (`left_to_expire`).
REDIS_LOST: tuple[type[Exception], ...] = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    OSError,
)

# Per delivery, exactly what arq's own enqueue_job writes (the job under
# arq:job:<id>, its id in the queue's sorted set scored by its time), behind
# the marker, and a wake for the queue's workers in the same round trip
# (jobs/wakeups.py). KEYS: queue, then marker and job key of each delivery.
# ARGV: window ms, job expiry ms, the queue's wake channel, then job id, score
# and job bytes of each delivery. Returns 1 (queued) or 0 (a duplicate) per
# delivery, in order; a delivery repeated within one call is queued once.
_ENQUEUE_ONCE = """
local added, queued = {}, false
for i = 1, (#KEYS - 1) / 2 do
  local id, score, job = ARGV[3 * i + 1], ARGV[3 * i + 2], ARGV[3 * i + 3]
  if redis.call('SET', KEYS[2 * i], score, 'NX', 'PX', ARGV[1]) then
    redis.call('PSETEX', KEYS[2 * i + 1], ARGV[2], job)
    redis.call('ZADD', KEYS[1], score, id)
    added[i] = 1
    queued = true
  else
    added[i] = 0
  end
end
if queued then
  redis.call('PUBLISH', ARGV[3], '')
end
return added
"""


@dataclass(frozen=True)
class DeliveryJob:
    """A verified webhook delivery as it travels through the queue.

    arq pickles it into the job, so queued jobs name this class by its path:
    moving or renaming it strands the deliveries already queued.
    """

    delivery_id: str
    event: str
    received_at: float  # seconds since the epoch
    # The raw JSON exactly as GitHub sent it; kept out of repr, so arq's job
    # log lines name the delivery without dumping its payload.
    body: bytes = field(repr=False)


async def left_to_expire(cleanup: Awaitable[object], what: str, **context: object) -> None:
    """Await a cleanup in a `finally`: Redis lost there (`REDIS_LOST`) is logged, never
    raised in place of the block's own error or its cancellation. Nothing is lost:
    what the cleanup would have removed expires."""
    try:
        await cleanup
    except REDIS_LOST as error:
        log.warning(f"{what} left to expire", error=repr(error), **context)


def sessions_queue(pool: str) -> str:
    """The arq queue of a pool's sessions: `ballet:sessions:<pool>`, and for the
    default pool `ballet:sessions` as before pools, so sessions an older version
    queued are still run and old and new workers share it during a rolling update."""
    return SESSIONS_QUEUE if pool == DEFAULT_POOL else f"{SESSIONS_QUEUE}:{pool}"


def wake_channel(queue: str) -> str:
    """The pub/sub channel that wakes `queue`'s workers."""
    return WAKE_PREFIX + queue


def redis_settings(url: str) -> RedisSettings:
    """arq's connection settings for a redis:// or rediss:// URL, with a clear error."""
    try:
        return RedisSettings.from_dsn(url)
    except (RuntimeError, ValueError) as exc:
        raise ValueError(
            "REDIS_URL must look like redis://host:6379/0 or rediss://user:password@host:6380/0"
        ) from exc


class QueueUnavailable(Exception):
    """The queue's Redis does not answer; the message says where it was looked for."""


async def connect(url: str) -> ArqRedis:
    """A connection pool to the queue's Redis, once it answers PING (arq retries a few times)."""
    settings = redis_settings(url)
    try:
        return await create_pool(settings, default_queue_name=EVENTS_QUEUE)
    except (RedisError, OSError) as exc:
        # Name host and port only: the URL may hold a password.
        raise QueueUnavailable(
            f"cannot reach Redis at {settings.host}:{settings.port} ({exc}): check that it runs"
            " and that REDIS_URL names it"
        ) from exc


def open_pool(url: str) -> ArqRedis:
    """A lazy connection pool: nothing connects until first used, so a web app
    starts while Redis is down and says so on /readyz instead of crash-looping."""
    redis_settings(url)  # refuse a malformed URL now, with the clear message
    pool = ConnectionPool.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    return ArqRedis(pool, default_queue_name=EVENTS_QUEUE)


class DeliveryQueue:
    """Enqueues each delivery at most once within the dedupe window."""

    def __init__(self, redis: ArqRedis, dedupe_seconds: int, queue_name: str = EVENTS_QUEUE):
        self._redis = redis
        self._window_ms = dedupe_seconds * 1000
        self._queue_name = queue_name
        self._script = redis.register_script(_ENQUEUE_ONCE)

    async def enqueue(self, job: DeliveryJob) -> bool:
        """Queue the delivery's job; False when this delivery id was already queued."""
        (added,) = await self.enqueue_many([job])
        return added

    async def enqueue_many(self, jobs: Sequence[DeliveryJob]) -> list[bool]:
        """Queue many deliveries in one round trip; per job, False for a duplicate."""
        if not jobs:
            return []
        now_ms = int(time.time() * 1000)
        keys = [self._queue_name]
        # The job outlives arq's default day: a worker down for a weekend
        # must still find every delivery when it comes back.
        args: list[bytes | str | int] = [
            self._window_ms,
            self._window_ms,
            wake_channel(self._queue_name),
        ]
        for job in jobs:
            keys += [DELIVERY_MARKER_PREFIX + job.delivery_id, job_key_prefix + job.delivery_id]
            payload = serialize_job(HANDLE_DELIVERY, (job,), {}, None, now_ms)
            args += [job.delivery_id, now_ms, payload]
        added = await self._script(keys=keys, args=args)
        return [bool(flag) for flag in added]

    async def forget(self, delivery_id: str) -> None:
        """Drop the marker, so a person's redelivery of a failed delivery runs again."""
        await self._redis.delete(DELIVERY_MARKER_PREFIX + delivery_id)
