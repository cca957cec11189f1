"""The job registry: which jobs each of Ballet's arq queues runs, and the
worker that serves them.

One worker process runs one arq Worker per queue in a single event loop:
`ballet:events` (deliveries and other short jobs, shared by every worker) and
the sessions queue of each agent pool it serves (`settings.worker_pools`,
`queue.sessions_queue`: long agent sessions, at most `settings.session_slots`
at a time across its pools), so a busy agent pool never delays a webhook.
While it runs it announces itself in its pools (`pools.PoolMembership`). Its
Workers read their queues when a job is queued, not on a timer: the process
holds one pub/sub connection that wakes them (`wakeups.py`), and
`settings.queue_poll_seconds` is only the fallback.
Every job finds the process's shared `Services` in `ctx["services"]`. To add a
job, add its function to its queue's `functions` (or `cron_jobs`) in `queue_specs`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog
from arq.connections import ArqRedis
from arq.cron import CronJob
from arq.typing import WorkerCoroutine
from arq.worker import Function

from ballet.jobs.deliveries import HANDLE_DELIVERY_JOB
from ballet.jobs.pool_worker import PoolWorker, SharedSlots
from ballet.jobs.pools import PoolMembership
from ballet.jobs.reconciler import reconcile_cron
from ballet.jobs.retries import MAX_DEFERRALS
from ballet.jobs.services import Services
from ballet.jobs.stage_sessions import RUN_STAGE_SESSION_JOB, SESSION_MAX_TRIES
from ballet.jobs.ticket_events import APPLY_TICKET_EVENT_JOB, DRAIN_TICKET_JOB
from ballet.jobs.wakeups import Wakeups, WakingWorker
from ballet.queue import EVENTS_QUEUE, connect, redis_settings, sessions_queue
from ballet.sessions.leftovers import to_the_end
from ballet.settings import Settings

log = structlog.get_logger("ballet.worker")


@dataclass(frozen=True)
class QueueSpec:
    """One arq queue a worker process serves, and the jobs it runs."""

    name: str
    max_jobs: int
    job_timeout: int  # seconds
    max_tries: int = MAX_DEFERRALS  # real failures are counted by the jobs (retries.py)
    functions: Sequence[Function | WorkerCoroutine] = ()
    cron_jobs: Sequence[CronJob] = field(default_factory=tuple)
    pool: str | None = None  # a pool's sessions queue: its slots are the process's


def queue_specs(settings: Settings) -> list[QueueSpec]:
    """The queues and their jobs; add a job here with one line."""
    return [
        QueueSpec(
            EVENTS_QUEUE,
            max_jobs=settings.event_slots,
            job_timeout=300,
            functions=(HANDLE_DELIVERY_JOB, APPLY_TICKET_EVENT_JOB, DRAIN_TICKET_JOB),
            cron_jobs=(reconcile_cron(settings.reconcile_seconds),),
        ),
        *(
            QueueSpec(
                sessions_queue(pool),
                max_jobs=settings.session_slots,
                job_timeout=24 * 3600,
                max_tries=SESSION_MAX_TRIES,
                functions=(RUN_STAGE_SESSION_JOB,),
                pool=pool,
            )
            for pool in settings.worker_pools
        ),
    ]


ServicesFactory = Callable[[Settings, ArqRedis], Awaitable[Services]]


class WorkerGroup:
    """Runs one arq Worker per queue spec in the current event loop."""

    def __init__(
        self,
        settings: Settings,
        redis_url: str,
        services_factory: ServicesFactory,
        specs: Sequence[QueueSpec] | None = None,
        burst: bool = False,
    ) -> None:
        self._settings = settings
        self._redis_url = redis_url
        self._services_factory = services_factory
        self._specs = list(queue_specs(settings) if specs is None else specs)
        self._burst = burst
        self._stopping = asyncio.Event()
        self._slots = SharedSlots(settings.session_slots)

    def stop(self) -> None:
        self._stopping.set()

    def _worker(self, spec: QueueSpec, services: Services, wakeups: Wakeups) -> WakingWorker:
        args = self._worker_args(spec, services)
        wake = wakeups.event(spec.name)
        if spec.pool is None:
            return WakingWorker(wake=wake, **args)
        return PoolWorker(slots=self._slots, worker_id=self._settings.worker_id, wake=wake, **args)

    def _worker_args(self, spec: QueueSpec, services: Services) -> dict[str, Any]:
        return dict(
            functions=list(spec.functions),
            cron_jobs=list(spec.cron_jobs),
            queue_name=spec.name,
            redis_settings=redis_settings(self._redis_url),
            max_jobs=spec.max_jobs,
            job_timeout=spec.job_timeout,
            max_tries=spec.max_tries,
            poll_delay=self._settings.queue_poll_seconds,  # the fallback (WakingWorker)
            burst=self._burst,
            handle_signals=False,  # the command owns the process's signals
            ctx={"services": services},
            # CancelSession aborts a session's job; nothing aborts an event's, so the
            # events Worker does not read the abort set at every look (a round trip).
            allow_abort_jobs=spec.pool is not None,
        )

    def _membership(self, pool: ArqRedis, workers: Sequence[WakingWorker]) -> PoolMembership:
        pools = [w for w in workers if isinstance(w, PoolWorker)]
        names = [s.pool for s in self._specs if s.pool is not None]

        def running() -> dict[str, int]:
            return {name: w.running for name, w in zip(names, pools, strict=True)}

        return PoolMembership(pool, self._settings.worker_id, self._settings.session_slots, running)

    async def run(self) -> None:
        """Serve the queues until cancelled (or, in burst mode, until they are empty)."""
        pool = await connect(self._redis_url)
        workers: list[WakingWorker] = []
        services: Services | None = None
        wakeups = Wakeups(pool)
        listening: asyncio.Task[None] | None = None
        try:
            services = await self._services_factory(self._settings, pool)
            for spec in self._specs:
                if spec.functions or spec.cron_jobs:
                    workers.append(self._worker(spec, services, wakeups))
                else:
                    log.info("queue has no jobs registered; not serving it", queue=spec.name)
            log.info(
                "worker started",
                queues=[w.queue_name for w in workers],
                worker_id=self._settings.worker_id,
            )
            membership = self._membership(pool, workers)
            await membership.announce_now()  # a launch right after start finds it alive
            listening = asyncio.create_task(wakeups.run())
            await self._serve(workers, membership)
        finally:
            try:
                if listening is not None:
                    listening.cancel()
                    await asyncio.gather(listening, return_exceptions=True)
                for worker in workers:
                    # A worker whose Redis already went away has nothing left to close.
                    with contextlib.suppress(Exception):
                        await worker.close()
            finally:
                # Also when cancelled while its jobs end (the stop's grace ran out): what
                # the closers remove (prepared clones, disks still mounted) would
                # otherwise outlive the process.
                if services is not None:
                    await to_the_end(services.aclose())
                await pool.aclose()
                log.info("worker stopped")

    async def _serve(self, workers: Sequence[WakingWorker], membership: PoolMembership) -> None:
        running: asyncio.Future[Any] = asyncio.gather(*(w.async_run() for w in workers))
        stopping: asyncio.Future[Any] = asyncio.ensure_future(self._stopping.wait())
        announcing = asyncio.ensure_future(membership.run())
        try:
            done, _ = await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            membership.stop()
            await asyncio.gather(announcing, return_exceptions=True)
        stopping.cancel()
        if running in done:
            running.result()  # burst mode ran dry, or a worker crashed
            return
        # Cancelled jobs stay queued: arq runs them again when a worker is back.
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
