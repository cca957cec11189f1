"""Launching and cancelling stage sessions on the pools' sessions queues.

`ArqSessionLauncher` is the GitHub edge's `SessionLauncher`: a StartSession
becomes the arq job `run_stage_session` on its pool's queue (`SessionSpec.pool`,
`queue.sessions_queue`), whose id is the engine's job key, so the same session
is never started twice (arq refuses a duplicate id while the job or its result
exists, and a launch marker, naming the pool, outlives both), and a
CancelSession aborts that job on the queue its marker names.

A pool with no live worker (`pools.live_workers`) is the ticket's to hear: the
launch answers `WorkerAwaited` (the session stays queued), and the job that
finally runs it sends `SessionStarted`. A ticket's session is reserved for a
moment for the worker that ran its last one (`pools.reserve`), whose mirror is
warm; the launching process prefetches the mirror, and reads the issue, only for a
session it may run (jobs/prefetch.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import UTC, datetime

import structlog
from arq.connections import ArqRedis
from arq.jobs import Job, ResultNotFound

from ballet.core.effects import CancelSession, StartSession
from ballet.core.events import AnyEvent, WorkerAwaited
from ballet.core.pools import DEFAULT_POOL
from ballet.jobs import pools
from ballet.jobs.prefetch import SessionPrefetch
from ballet.jobs.session_specs import ticket_of
from ballet.jobs.wakeups import wake
from ballet.queue import sessions_queue
from ballet.tickets.decided import decided_by
from ballet.tickets.live import LiveTickets

log = structlog.get_logger("ballet.jobs.launcher")

RUN_STAGE_SESSION = "run_stage_session"
LAUNCHED_PREFIX = "ballet:session-launched:"
# A session is never started twice: far longer than any redelivery of its effect.
KEEP_SECONDS = 30 * 24 * 3600


async def is_launched(redis: ArqRedis, job_key: str) -> bool:
    """Whether the session's job was ever enqueued (its launch marker outlives the job)."""
    return bool(await redis.exists(LAUNCHED_PREFIX + job_key))


async def pool_of(redis: ArqRedis, job_key: str) -> str | None:
    """The pool the session was launched on (None: never launched). Its launch marker
    names it; one from before pools says `1`: those all went to the default pool."""
    raw: bytes | None = await redis.get(LAUNCHED_PREFIX + job_key)
    if raw is None:
        return None
    return raw.decode() if raw != b"1" else DEFAULT_POOL


async def queue_of(redis: ArqRedis, job_key: str) -> str:
    """The queue the session was launched on (the default pool's if none is known)."""
    return sessions_queue(await pool_of(redis, job_key) or DEFAULT_POOL)


class ArqSessionLauncher:
    """The `SessionLauncher` of the GitHub edge, on the pools' sessions queues.

    `pools`: those this process serves (None: any), so it prefetches a mirror only for
    a session it may run; `affinity_seconds`: how long a ticket's session is kept for
    the worker that ran its last one."""

    def __init__(
        self,
        redis: ArqRedis,
        prefetch: SessionPrefetch | None = None,
        *,
        worker_id: str = "",
        pools: tuple[str, ...] | None = None,
        affinity_seconds: float = 0.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._redis = redis
        self._live = LiveTickets(redis)
        # Set once the worker's session jobs are built (wiring), when it runs sessions.
        self.prefetch = prefetch
        self._worker_id = worker_id
        self._pools = pools
        self._affinity_seconds = affinity_seconds
        self._clock = clock

    async def launch(self, effect: StartSession) -> AnyEvent | None:
        spec = effect.spec
        job_key, pool, ticket = spec.job_key, spec.pool, ticket_of(spec)
        marker = LAUNCHED_PREFIX + job_key
        # Independent reads (and the live set, which the ticket service adds it to as
        # well), together: one round trip's wait on the way to the session, not three.
        _, launched, alive = await asyncio.gather(
            self._live.add(ticket),  # the ticket service adds it too; cheap
            self._redis.exists(marker),
            pools.live_workers(self._redis, pool),
        )
        if launched:
            log.info("session already launched", job_key=job_key)
            return None
        preferred = None
        if alive:
            preferred = await pools.reserve(
                self._redis, ticket, pool, job_key, self._affinity_seconds
            )
        else:
            # Before the enqueue: a worker that comes up and takes it at once tells the ticket.
            await pools.mark_awaiting(self._redis, job_key)
        job = await self._redis.enqueue_job(
            RUN_STAGE_SESSION,
            effect.model_dump(mode="json"),
            _job_id=job_key,
            _queue_name=sessions_queue(pool),
            # Queued behind busy session slots for as long as it takes.
            _expires=KEEP_SECONDS,
        )
        # After the enqueue: a crash in between leaves the job, which arq refuses to repeat.
        woken = [wake(self._redis, sessions_queue(pool))] if job is not None else []
        await asyncio.gather(
            *woken,
            self._redis.set(marker, pool, ex=KEEP_SECONDS),
            pools.note_pool(self._redis, pool),
        )
        mine = self._pools is None or pool in self._pools
        if (
            job is not None
            and self.prefetch is not None
            and mine
            and preferred in (None, self._worker_id)
        ):
            # The issue's read is a charged request, wasted if another worker runs the
            # session: begun only when it is kept for this one, or no other is alive.
            ours = preferred == self._worker_id or len(alive) <= 1
            issue = spec.issue if ours else None
            self.prefetch.launched(job_key, spec.repo, issue=issue, decided=decided_by())
        log.info(
            "session launched" if job else "session already queued",
            job_key=job_key,
            pool=pool,
            workers=len(alive),
            preferred=preferred,
        )
        if job is None or alive:
            return None
        log.warning("no live worker in the session's pool", job_key=job_key, pool=pool)
        return WorkerAwaited(now=self._clock(), job_key=job_key, pool=pool)

    async def cancel(self, effect: CancelSession) -> None:
        """Abort the session's job: a queued one never starts, a running one is cancelled."""
        queue = await queue_of(self._redis, effect.job_key)
        job = Job(effect.job_key, self._redis, _queue_name=queue)
        # Not waited for; and a job already gone has no result to wait for either.
        with contextlib.suppress(TimeoutError, ResultNotFound):
            await job.abort(timeout=0)  # don't wait for the worker to get round to it
        # The running job's worker cancels it when it next reads the abort set.
        await wake(self._redis, queue)
        log.info("session cancelled", job_key=effect.job_key)
