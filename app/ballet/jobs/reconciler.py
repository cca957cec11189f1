"""The reconciler: twice a minute, settle what no webhook will ever settle.

For every live ticket it sends a `ReconcileTick(now)`, with which the engine
times out sessions and waits that outlived their stage's timeout. Before
that it looks for a crashed session: the record says a session runs, but its
job's heartbeat key expired and arq no longer has it queued. That session
will never report, so the reconciler reports for it: a SessionCrashed (the
ticket re-runs the stage as a new attempt, a few times, then asks a person),
sent under the same event id the job's own SessionFinished would have used,
so a session that merely finished late is never reported twice.
A session still queued on a pool with no live worker is told to its ticket
(`WorkerAwaited`; the launch tells it too, but a pool's last worker may have gone
since), whose tracking comment then says so until the stage's timeout asks.

Live tickets are those whose last saved record was live (`ballet.tickets.live`);
a ticket whose record has ended (or is gone) leaves the set, and its session
artifacts are forgotten.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from arq.connections import ArqRedis
from arq.cron import CronJob, cron
from arq.jobs import Job, JobStatus

from ballet import metrics
from ballet.core.events import ReconcileTick, SessionCrashed, WorkerAwaited
from ballet.core.record import TERMINAL, Record
from ballet.jobs.artifacts import Artifacts
from ballet.jobs.heartbeats import fence_off
from ballet.jobs.launcher import pool_of, queue_of
from ballet.jobs.pools import live_workers, mark_awaiting
from ballet.jobs.services import Services
from ballet.jobs.session_look import Silent, look
from ballet.jobs.session_results import deliver_crash
from ballet.jobs.ticket_events import send_ticket_event
from ballet.spend_ledger import SpendLedger
from ballet.tickets.live import LiveTickets
from ballet.tickets.source import TicketSource

log = structlog.get_logger("ballet.jobs.reconciler")

NOT_STARTED = (JobStatus.queued, JobStatus.deferred)


@dataclass(frozen=True)
class Sweep:
    """What one pass did, for logs and tests."""

    ticked: tuple[str, ...] = ()
    crashed: tuple[str, ...] = ()  # job keys reported as failed
    ended: tuple[str, ...] = ()  # tickets that left the live set


# How long after a stage run starts its session may still be on its way to the queue.
LAUNCH_GRACE = timedelta(minutes=2)
# How long a session never launched may still be on its way before it counts as lost.
LAUNCH_LOST = timedelta(minutes=15)


class Reconciler:
    def __init__(
        self,
        redis: ArqRedis,
        tickets: TicketSource,
        artifacts: Artifacts,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        crash_retries: int = 2,
    ) -> None:
        self._redis = redis
        self._crash_retries = crash_retries
        self._live = LiveTickets(redis)
        self._tickets = tickets
        self._artifacts = artifacts
        self._clock = clock

    async def sweep(self) -> Sweep:
        now = self._clock()
        ticked: list[str] = []
        crashed: list[str] = []
        ended: list[str] = []
        if not await self._live.is_complete():
            await self._rebuild_live_set()
        live = await self._live.members()
        for ticket in live:
            try:
                record = await self._tickets.record(ticket)
                if record is None or record.status in TERMINAL:
                    await self._live.remove(ticket)
                    await self._artifacts.forget(ticket)
                    ended.append(ticket)
                    continue
                silent = await self._crashed_session(record, now)
                # The verdict holds only if the session is still silent as it is
                # fenced off (a stalled worker may have beaten again since the look).
                if (
                    silent is not None
                    and await fence_off(self._redis, silent.job_key, now)
                    and await self._report_crash(record, silent, now)
                ):
                    crashed.append(silent.job_key)
                    metrics.RECONCILER_CRASHED_SESSIONS.inc()
                await self._unstaffed(record, now)
                tick = ReconcileTick(now=now)
                event_id = f"reconcile:{ticket}:{now.strftime('%Y%m%dT%H%M')}"
                await send_ticket_event(self._redis, ticket, tick, event_id=event_id)
                ticked.append(ticket)
            except Exception:
                # One ticket GitHub cannot serve now must not stall the others;
                # the next minute's sweep tries it again.
                log.exception("could not reconcile ticket", ticket=ticket)
        metrics.LIVE_TICKETS.set(len(live) - len(ended))
        return Sweep(tuple(ticked), tuple(crashed), tuple(ended))

    async def _rebuild_live_set(self) -> None:
        """Redis lost the set of live tickets (or this is the first sweep ever): ask
        GitHub which issues are labelled live, so a ticket waiting on a person or a
        dead session is swept again without waiting for an event of its own."""
        found = await self._tickets.live_on_github()
        for ticket in found:
            await self._live.add(ticket)
        await self._live.mark_complete()
        log.warning("live tickets rebuilt from GitHub's labels", tickets=len(found))

    async def _crashed_session(self, record: Record, now: datetime) -> Silent | None:
        """The record's running session, if its worker is gone."""
        run = record.open_run
        if record.status != "running" or run is None or run.job_key is None:
            return None
        job_key = run.job_key
        seen = await look(self._redis, job_key)
        if seen.beating:
            return None
        began = seen.last_beat
        if began is None and now - run.start < LAUNCH_GRACE:
            # The record is saved before its StartSession is enqueued (and a
            # retried outbox enqueues it later still): no job yet is no crash.
            # A job that has beaten once is past that, so its silence counts at once.
            return None
        if seen.status in NOT_STARTED:
            return None  # waiting for a session slot: it has not beaten yet
        if seen.status == JobStatus.in_progress and began is None:
            return None  # picked up a moment ago, before its first beat
        if (
            seen.status == JobStatus.not_found
            and began is None
            and now - run.start < LAUNCH_LOST
            and not seen.launched
        ):
            # Its StartSession is still in the ticket's outbox (a busy or unreachable
            # GitHub holds the effects before it): nothing was lost, it is on its way.
            # Past LAUNCH_LOST it counts as lost (a Redis that lost the outbox) and the
            # stage runs again; should the old one launch after all, it finds the
            # ticket moved on (and itself fenced off) and does not run.
            return None
        return Silent(job_key, began)

    async def _unstaffed(self, record: Record, now: datetime) -> None:
        """Tell the ticket its queued session waits for a worker of a pool with none."""
        run = record.open_run
        if record.status != "running" or run is None or run.job_key is None or run.awaits_pool:
            return
        pool = await pool_of(self._redis, run.job_key)
        if pool is None or await live_workers(self._redis, pool):
            return
        queue = await queue_of(self._redis, run.job_key)
        if await Job(run.job_key, self._redis, _queue_name=queue).status() not in NOT_STARTED:
            return
        await mark_awaiting(self._redis, run.job_key)
        event = WorkerAwaited(now=now, job_key=run.job_key, pool=pool)
        event_id = f"worker-awaited:{run.job_key}:{now.strftime('%Y%m%dT%H%M')}"
        await send_ticket_event(self._redis, record.key, event, event_id=event_id)
        log.warning("session waits for a worker", ticket=record.key, pool=pool)

    async def _report_crash(self, record: Record, silent: Silent, now: datetime) -> bool:
        run = record.open_run
        assert run is not None
        job_key, since = silent
        event = SessionCrashed(
            now=now,
            job_key=job_key,
            stage=run.stage,
            iteration=run.iteration,
            attempt=run.attempt,
            phase=run.phase,
            last_beat=since,
            retries_allowed=self._crash_retries,
            spend=await SpendLedger(self._redis).session(job_key),
        )
        sent = await deliver_crash(self._redis, record.key, event)
        if sent:
            log.warning("session crashed", ticket=record.key, job_key=job_key, last_beat=since)
        return sent


async def reconcile(ctx: dict[str, Any]) -> None:
    """The cron job."""
    services: Services = ctx["services"]
    jobs = services.session_jobs
    if jobs is None:
        log.info("reconciler idle: this worker has no session jobs wired")
        return
    sweep = await Reconciler(
        jobs.redis, jobs.tickets, jobs.artifacts, clock=jobs.clock, crash_retries=jobs.crash_retries
    ).sweep()
    log.info("reconciled", tickets=len(sweep.ticked), crashed=sweep.crashed, ended=len(sweep.ended))
    if jobs.logs is not None:
        try:
            # At most hourly, by one worker of all (a Redis key decides).
            deleted = await jobs.logs.sweep_if_due(jobs.clock())
            if deleted:
                log.info("old session logs deleted", objects=deleted)
        except Exception:
            # The object store unreachable now: the next hour's sweep finds them still old.
            log.exception("could not sweep old session logs")
    if services.redeliveries is not None:
        try:
            await services.redeliveries.sweep()
        except Exception:
            # GitHub unreachable now: the next sweep looks back far enough.
            log.exception("could not check for failed webhook deliveries")


def reconcile_cron(every_seconds: int = 30) -> CronJob:
    """The sweep every `every_seconds` (a divisor of 60, `Settings.reconcile_seconds`),
    at the same seconds of each minute on every worker, so it runs once across all
    workers (arq's unique cron job id). By default twice a minute: with the
    heartbeat's 40 s time to live, a dead worker's session is seen within ~70 s."""
    seconds = set(range(0, 60, every_seconds))
    return cron(reconcile, name="reconcile", second=seconds, unique=True)
