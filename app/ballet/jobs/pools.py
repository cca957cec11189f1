"""Agent pools on Redis: which workers serve which pool right now, and where a
ticket's next session should run.

Membership: every worker announces itself every `ANNOUNCE_SECONDS`.
`ballet:worker:<id>` (JSON: its pools, slots, sessions running per pool) lives
`ANNOUNCE_TTL` seconds, and `ballet:pool-workers:<pool>` (a sorted set) holds
its id scored by when that announcement runs out, so a pool's live workers are
one ZRANGEBYSCORE and a dead worker drops out by itself within `ANNOUNCE_TTL`;
a worker that stops cleanly leaves at once. The same loop sets the pools'
metrics (`ballet_pool_*`), for every pool any worker or launch has named.

Placement: `ballet:affinity:<ticket>:<pool>` names the worker that ran the
ticket's last session in that pool (its mirror of the repository is warm);
`ballet:session-worker:<job key>` the worker that ran a session;
`ballet:session-prefer:<job key>` reserves a queued session for its ticket's
worker for `BALLET_SESSION_AFFINITY_SECONDS` (other workers skip it meanwhile,
`pool_worker.PoolWorker`; then any worker of the pool may take it);
`ballet:session-awaits:<job key>` marks a session reported as waiting for a
worker, so the job that finally runs it tells the ticket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Mapping, Sequence

import structlog
from arq.constants import in_progress_key_prefix
from redis.asyncio import Redis

from ballet import metrics
from ballet.queue import sessions_queue

log = structlog.get_logger("ballet.jobs.pools")

ANNOUNCE_SECONDS = 3.0
ANNOUNCE_TTL = 12  # seconds: four missed announcements and the worker counts as gone
WORKER_PREFIX = "ballet:worker:"
POOL_WORKERS_PREFIX = "ballet:pool-workers:"
POOLS_KEY = "ballet:pools"  # every pool a worker or a launch named, for the metrics
AFFINITY_PREFIX = "ballet:affinity:"
SESSION_WORKER_PREFIX = "ballet:session-worker:"
PREFER_PREFIX = "ballet:session-prefer:"
AWAITS_PREFIX = "ballet:session-awaits:"
AFFINITY_KEEP_SECONDS = 7 * 24 * 3600
SESSION_WORKER_KEEP_SECONDS = 30 * 24 * 3600
# The pools whose metrics a worker keeps, and the queued sessions it looks at per pool.
MAX_POOLS_WATCHED = 64
DEPTH_LOOKED_AT = 256


async def announce(
    redis: Redis, worker_id: str, slots: int, running: Mapping[str, int], ttl: int = ANNOUNCE_TTL
) -> None:
    """This worker serves `running`'s pools with `slots` session slots, for `ttl` seconds."""
    until_ms = int((time.time() + ttl) * 1000)
    info = json.dumps({"pools": list(running), "slots": slots, "running": dict(running)})
    async with redis.pipeline(transaction=False) as pipe:
        pipe.set(WORKER_PREFIX + worker_id, info, ex=ttl)
        for pool in running:
            pipe.zadd(POOL_WORKERS_PREFIX + pool, {worker_id: until_ms})
            pipe.zremrangebyscore(POOL_WORKERS_PREFIX + pool, "-inf", time.time() * 1000)
        if running:
            pipe.sadd(POOLS_KEY, *running)
        await pipe.execute()


async def leave(redis: Redis, worker_id: str, pools: Sequence[str]) -> None:
    async with redis.pipeline(transaction=False) as pipe:
        pipe.delete(WORKER_PREFIX + worker_id)
        for pool in pools:
            pipe.zrem(POOL_WORKERS_PREFIX + pool, worker_id)
        await pipe.execute()


async def live_workers(redis: Redis, pool: str) -> list[str]:
    """The workers of `pool` whose last announcement has not run out."""
    ids = await redis.zrangebyscore(POOL_WORKERS_PREFIX + pool, time.time() * 1000, "+inf")
    return sorted(i.decode() for i in ids)


async def serves(redis: Redis, worker_id: str, pool: str) -> bool:
    """Whether the worker is alive and serves `pool`."""
    raw = await redis.get(WORKER_PREFIX + worker_id)
    return raw is not None and pool in json.loads(raw)["pools"]


async def note_pool(redis: Redis, pool: str) -> None:
    await redis.sadd(POOLS_KEY, pool)  # type: ignore[misc]


# -- placement ----------------------------------------------------------------------------


def affinity_key(ticket: str, pool: str) -> str:
    return f"{AFFINITY_PREFIX}{ticket}:{pool}"


async def reserve(redis: Redis, ticket: str, pool: str, job_key: str, seconds: float) -> str | None:
    """Keep the session for the worker that ran the ticket's last one in `pool`, for
    `seconds`, if it is alive; that worker's id, or None.

    Kept even when its slots look full: the ticket's next session is launched from
    within the job of its last one, whose slot frees a moment later, and a worker
    busy with other tickets costs the session only these seconds."""
    if seconds <= 0:
        return None
    raw: bytes | None = await redis.get(affinity_key(ticket, pool))
    if raw is None:
        return None
    worker = raw.decode()
    if not await serves(redis, worker, pool):
        return None  # gone: waiting for it would only delay the session
    await redis.set(PREFER_PREFIX + job_key, worker, px=max(1, int(seconds * 1000)))
    return worker


async def ran_here(redis: Redis, ticket: str, pool: str, job_key: str, worker_id: str) -> None:
    """The session runs on this worker: its ticket's next one in the pool prefers it."""
    async with redis.pipeline(transaction=False) as pipe:
        pipe.set(affinity_key(ticket, pool), worker_id, ex=AFFINITY_KEEP_SECONDS)
        pipe.set(SESSION_WORKER_PREFIX + job_key, worker_id, ex=SESSION_WORKER_KEEP_SECONDS)
        await pipe.execute()


async def session_worker(redis: Redis, job_key: str) -> str | None:
    """The worker that ran (or runs) the session, while that is remembered."""
    raw: bytes | None = await redis.get(SESSION_WORKER_PREFIX + job_key)
    return raw.decode() if raw is not None else None


async def mark_awaiting(redis: Redis, job_key: str) -> None:
    await redis.set(AWAITS_PREFIX + job_key, "1", ex=SESSION_WORKER_KEEP_SECONDS)


async def was_awaiting(redis: Redis, job_key: str) -> bool:
    """Whether the ticket was told the session waits for a worker (asked once: taken)."""
    return bool(await redis.delete(AWAITS_PREFIX + job_key))


# -- metrics ------------------------------------------------------------------------------


async def queue_depth(redis: Redis, pool: str, now: float) -> tuple[int, float]:
    """(sessions queued on the pool and not started, seconds the oldest has waited).

    arq keeps a running job in its queue until it ends, so the in-progress ones are
    told apart; only the oldest `DEPTH_LOOKED_AT` entries are looked at one by one."""
    queue = sessions_queue(pool)
    entries = await redis.zrange(queue, 0, DEPTH_LOOKED_AT - 1, withscores=True)
    if not entries:
        return 0, 0.0
    async with redis.pipeline(transaction=False) as pipe:
        for job_id, _ in entries:
            pipe.exists(in_progress_key_prefix + job_id.decode())
        started = await pipe.execute()
    waiting = [score for (_, score), busy in zip(entries, started, strict=True) if not busy]
    beyond = await redis.zcard(queue) - len(entries) if len(entries) == DEPTH_LOOKED_AT else 0
    due = [score for score in waiting if score <= now * 1000]  # deferred ones wait on purpose
    oldest = max(0.0, now - min(due) / 1000) if due else 0.0
    return len(waiting) + beyond, oldest


async def observe_pools(redis: Redis) -> None:
    """Set the pool gauges for every pool named so far (capped: `metrics.pool_label`)."""
    members: set[bytes] = await redis.smembers(POOLS_KEY)  # type: ignore[misc]
    names = sorted(p.decode() for p in members)[:MAX_POOLS_WATCHED]
    now = time.time()
    totals: dict[str, tuple[int, float, int]] = {}
    for pool in names:
        queued, oldest = await queue_depth(redis, pool, now)
        workers = len(await live_workers(redis, pool))
        label = metrics.pool_label(pool)
        q, o, w = totals.get(label, (0, 0.0, 0))
        totals[label] = (q + queued, max(o, oldest), w + workers)
    for label, (queued, oldest, workers) in totals.items():
        metrics.POOL_QUEUED.labels(label).set(queued)
        metrics.POOL_OLDEST_WAITING.labels(label).set(oldest)
        metrics.POOL_WORKERS.labels(label).set(workers)


class PoolMembership:
    """Announces a worker in its pools until stopped, then leaves them."""

    def __init__(
        self,
        redis: Redis,
        worker_id: str,
        slots: int,
        running: Callable[[], Mapping[str, int]],
        every_seconds: float = ANNOUNCE_SECONDS,
    ) -> None:
        self._redis = redis
        self._worker_id = worker_id
        self._slots = slots
        self._running = running
        self._every = every_seconds
        self._stopping = asyncio.Event()

    async def announce_now(self) -> None:
        await announce(self._redis, self._worker_id, self._slots, self._running())

    async def run(self) -> None:
        try:
            while not self._stopping.is_set():
                try:
                    await self.announce_now()
                    await observe_pools(self._redis)
                except Exception as exc:
                    # Redis away for a moment: the announcement runs out, the next one renews.
                    log.warning("could not announce the worker's pools", error=repr(exc))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), self._every)
        finally:
            with contextlib.suppress(Exception):
                await leave(self._redis, self._worker_id, list(self._running()))

    def stop(self) -> None:
        self._stopping.set()
