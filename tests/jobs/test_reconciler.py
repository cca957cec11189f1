"""The reconciler: ticks for live tickets, crashed sessions reported, ended tickets let go."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from arq.connections import ArqRedis
from arq.constants import job_key_prefix
from ballet.core.report import Report
from ballet.jobs.artifacts import Artifact, Artifacts
from ballet.jobs.heartbeats import heartbeat_key, last_beat_key
from ballet.jobs.reconciler import LAUNCH_GRACE, LAUNCH_LOST, Reconciler
from ballet.jobs.services import Services, SessionJobs
from ballet.jobs.stage_sessions import LAUNCHED_PREFIX, ArqSessionLauncher
from ballet.queue import EVENTS_QUEUE, SESSIONS_QUEUE
from ballet.settings import Settings
from ballet.tickets.live import LIVE_TICKETS, LiveTickets
from fake_github import FakeGitHub
from jobs_kit import REPO, EngineTickets, agent_runtime
from jobs_running import eventually, queued_crash, queued_finish, run_events

pytestmark = pytest.mark.anyio

TICKET = f"{REPO}#7"
NOW = datetime(2026, 1, 1, 12, 30, tzinfo=UTC)


def reconciler(jobs: SessionJobs) -> Reconciler:
    return Reconciler(jobs.redis, jobs.tickets, jobs.artifacts, clock=lambda: NOW)


async def worker_died(redis: ArqRedis, job_key: str) -> None:
    """What Redis holds once a session's worker died: its last beat, no live heartbeat,
    and no arq job left (arq's in-progress and job keys expired with the worker)."""
    await redis.set(last_beat_key(job_key), "2026-01-01T12:04:00+00:00")
    await redis.set(heartbeat_key(job_key), "beat", px=50)
    await redis.zrem(SESSIONS_QUEUE, job_key)
    await redis.delete(job_key_prefix + job_key)

    async def expired() -> bool:
        return not await redis.exists(heartbeat_key(job_key))

    await eventually(expired, "the heartbeat key expiring")


async def test_an_expired_heartbeat_runs_the_stage_again_as_a_new_attempt(
    settings: Settings,
    services: Services,
    session_jobs: SessionJobs,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
) -> None:
    start = await tickets.request(agent_runtime(agent_script))
    job_key = start.spec.job_key
    await launcher.launch(start)
    queued = await reconciler(session_jobs).sweep()
    assert (queued.ticked, queued.crashed) == ((TICKET,), ())  # waiting for a slot is no crash

    await worker_died(redis, job_key)
    sweep = await reconciler(session_jobs).sweep()

    assert sweep.crashed == (job_key,)
    event = await queued_crash(redis, job_key)
    assert event is not None
    assert (event.stage, event.iteration, event.attempt, event.now) == ("implement", 1, 1, NOW)
    assert event.last_beat == datetime(2026, 1, 1, 12, 4, tzinfo=UTC)
    assert event.retries_allowed == 2
    await run_events(settings, services)
    assert event in tickets.applied  # the engine took it: the crashed run is closed...
    record = tickets.records[TICKET]
    assert record.history[0].outcome == "crashed"
    assert "no heartbeat since 2026-01-01T12:04:00+00:00" in record.history[0].summary
    # ...and the stage runs again, as attempt 2, with nobody typing a command.
    again = tickets.starts[-1].spec
    assert (again.stage, again.attempt) == ("implement", 2) and again.job_key != job_key
    assert record.open_run is not None and record.open_run.job_key == again.job_key


async def test_a_live_heartbeat_is_no_crash(
    session_jobs: SessionJobs,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
) -> None:
    start = await tickets.request(agent_runtime(agent_script))
    job_key = start.spec.job_key
    await launcher.launch(start)
    await worker_died(redis, job_key)
    await redis.set(heartbeat_key(job_key), "beat", ex=60)  # ...but it beats after all

    sweep = await reconciler(session_jobs).sweep()

    assert sweep.crashed == ()
    assert await queued_finish(redis, job_key) is None


async def test_ended_tickets_leave_the_live_set_and_their_artifacts_go(
    session_jobs: SessionJobs,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
) -> None:
    start = await tickets.request(agent_runtime(agent_script))
    await launcher.launch(start)
    artifacts = Artifacts(redis)
    report = Report(outcome="done", summary="did it")
    await artifacts.add(
        TICKET, Artifact(job_key="j", stage="implement", iteration=1, report=report)
    )
    # A person closed the ticket: the record ended.
    record = tickets.records[TICKET].model_copy(update={"status": "cancelled"})
    await tickets.store.commit(record, [], None)

    sweep = await reconciler(session_jobs).sweep()

    assert (sweep.ended, sweep.ticked) == ((TICKET,), ())
    assert await redis.smembers(LIVE_TICKETS) == set()
    assert await artifacts.of(TICKET) == ()
    assert await redis.zcard(EVENTS_QUEUE) == 0


async def test_a_session_not_yet_enqueued_is_no_crash_however_long_it_takes(
    session_jobs: SessionJobs, redis: ArqRedis, tickets: EngineTickets, agent_script: Path
) -> None:
    # The record is saved before the StartSession effect reaches the queue: a
    # sweep in between sees a running stage with no job and no heartbeat.
    start = await tickets.request(agent_runtime(agent_script))
    await redis.sadd(LIVE_TICKETS, TICKET)
    run_start = tickets.records[TICKET].history[-1].start
    just_after = Reconciler(
        session_jobs.redis,
        session_jobs.tickets,
        session_jobs.artifacts,
        clock=lambda: run_start + LAUNCH_GRACE / 2,
    )
    assert (await just_after.sweep()).crashed == ()

    much_later = Reconciler(
        session_jobs.redis,
        session_jobs.tickets,
        session_jobs.artifacts,
        clock=lambda: run_start + LAUNCH_GRACE * 2,
    )
    # Its StartSession still waits in the outbox (GitHub slow ahead of it): on its way.
    assert (await much_later.sweep()).crashed == ()
    # Launched, then gone without a trace (its job expired with a dead worker): a crash.
    await redis.set(LAUNCHED_PREFIX + start.spec.job_key, "1")
    assert (await much_later.sweep()).crashed == (start.spec.job_key,)


async def test_a_session_never_launched_for_longer_than_any_outbox_waits_is_lost(
    session_jobs: SessionJobs, redis: ArqRedis, tickets: EngineTickets, agent_script: Path
) -> None:
    # A Redis that lost the ticket's outbox: the StartSession will never come.
    start = await tickets.request(agent_runtime(agent_script))
    await redis.sadd(LIVE_TICKETS, TICKET)
    run_start = tickets.records[TICKET].history[-1].start
    lost = Reconciler(
        session_jobs.redis,
        session_jobs.tickets,
        session_jobs.artifacts,
        clock=lambda: run_start + LAUNCH_LOST + LAUNCH_GRACE,
    )
    assert (await lost.sweep()).crashed == (start.spec.job_key,)


async def test_a_live_set_lost_with_redis_is_rebuilt_from_the_labels_on_github(
    session_jobs: SessionJobs,
    redis: ArqRedis,
    tickets: EngineTickets,
    github: FakeGitHub,
    agent_script: Path,
) -> None:
    """A ticket waiting on a person gets no event after Redis is lost; the reconciler
    finds it again by its issue's label and sweeps it, with nobody typing a command."""
    await tickets.request(agent_runtime(agent_script))  # octo/demo#7, labelled ballet:running
    github.add_issue(REPO, 8, title="waits for an answer", labels=("ballet:waiting",))
    github.add_issue(REPO, 9, title="not Ballet's", labels=("bug",))
    await redis.flushdb()  # a restart without persistence

    sweep = await reconciler(session_jobs).sweep()

    # Both labelled tickets were visited again, the unlabelled issue was not. (This
    # harness writes no tracking comments, so neither record can be rebuilt from one,
    # and both leave the set; tests/e2e/test_redis_lost.py rebuilds them for real.)
    assert sorted(sweep.ticked + sweep.ended) == [TICKET, f"{REPO}#8"]
    assert await LiveTickets(redis).is_complete()
    calls = len(github.calls)
    await reconciler(session_jobs).sweep()  # once rebuilt, GitHub is not asked again
    assert not any("/installation/repositories" in path for _, path in github.calls[calls:])
