"""The issue read as a session is launched (jobs/prefetch.py): its job takes that
read instead of making its own, when the job starts moments later; a session
that waited longer, or whose early read failed, reads the issue as it is when it
runs (its labels and URL: the body is the ticket's pinned text). Proven on what
the agent's context holds, and on GitHub's request count."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pytest
from arq.connections import ArqRedis
from ballet.core.pools import DEFAULT_POOL
from ballet.jobs.deliveries import LoggingConsumer
from ballet.jobs.pools import POOL_WORKERS_PREFIX
from ballet.jobs.prefetch import ISSUE_FRESH_SECONDS, SessionPrefetch
from ballet.jobs.services import Services, SessionJobs
from ballet.jobs.stage_sessions import ArqSessionLauncher
from ballet.settings import Settings
from ballet.wiring import services_for
from fake_github import FakeGitHub
from jobs_kit import ISSUE, ISSUE_BODY, REPO, EngineTickets, agent_runtime
from jobs_running import eventually, queued_finish, run_sessions

pytestmark = pytest.mark.anyio

ISSUE_PATH = f"/repos/{REPO}/issues/{ISSUE}"
WORKER = "w1"
EDITED = "Please greet, loudly.\n"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def prefetching(
    settings: Settings,
    redis: ArqRedis,
    tickets: EngineTickets,
    session_jobs: SessionJobs,
    clock: Clock,
) -> tuple[ArqSessionLauncher, Services]:
    """The launcher and the worker's services of one process, sharing its prefetch."""
    prefetch = SessionPrefetch(session_jobs.workspaces, session_jobs.tickets, clock=clock)
    jobs = dataclasses.replace(session_jobs, prefetch=prefetch)
    services = services_for(settings, redis, LoggingConsumer(), tickets=tickets, session_jobs=jobs)
    return ArqSessionLauncher(redis, prefetch, worker_id=WORKER), services


async def issue_read(github: FakeGitHub, times: int) -> None:
    async def read() -> bool:
        return github.requests_to("GET", ISSUE_PATH) >= times

    await eventually(read, f"the issue read {times} time(s)")


async def seen_body(redis: ArqRedis, job_key: str) -> str:
    body: str = await seen(redis, job_key, "body")
    return body


async def seen(redis: ArqRedis, job_key: str, field: str) -> Any:
    """What the session's agent saw of the ticket's `field` in its context."""
    event = await queued_finish(redis, job_key)
    assert event is not None, f"no SessionFinished was queued for {job_key}"
    return json.loads(event.report.details)[field]


async def test_the_issue_read_at_the_launch_is_the_sessions(
    settings: Settings,
    redis: ArqRedis,
    tickets: EngineTickets,
    session_jobs: SessionJobs,
    agent_script: Path,
    github: FakeGitHub,
) -> None:
    launcher, services = prefetching(settings, redis, tickets, session_jobs, Clock())
    start = await tickets.request(agent_runtime(agent_script))
    await launcher.launch(start)
    await issue_read(github, 1)  # before any session job ran
    await run_sessions(settings, services)
    assert await seen_body(redis, start.spec.job_key) == ISSUE_BODY
    assert github.requests_to("GET", ISSUE_PATH) == 1


async def test_a_session_that_waited_past_the_reads_freshness_reads_the_issue_again(
    settings: Settings,
    redis: ArqRedis,
    tickets: EngineTickets,
    session_jobs: SessionJobs,
    agent_script: Path,
    github: FakeGitHub,
) -> None:
    clock = Clock()
    launcher, services = prefetching(settings, redis, tickets, session_jobs, clock)
    start = await tickets.request(agent_runtime(agent_script))
    await launcher.launch(start)
    await issue_read(github, 1)
    # A person labels and edits it while the session waits: the labels are read again,
    # the body is the ticket's pinned one (an edit is heard only as core/edits.py says).
    github.issues[(REPO, ISSUE)].body = EDITED
    github.labels[(REPO, ISSUE)] = ["ballet", "ballet:running", "urgent"]
    clock.now += ISSUE_FRESH_SECONDS
    await run_sessions(settings, services)
    assert await seen_body(redis, start.spec.job_key) == ISSUE_BODY
    assert "urgent" in await seen(redis, start.spec.job_key, "labels")
    assert github.requests_to("GET", ISSUE_PATH) == 2


async def test_a_failed_early_read_is_made_again_by_the_session(
    settings: Settings,
    redis: ArqRedis,
    tickets: EngineTickets,
    session_jobs: SessionJobs,
    agent_script: Path,
    github: FakeGitHub,
) -> None:
    launcher, services = prefetching(settings, redis, tickets, session_jobs, Clock())
    start = await tickets.request(agent_runtime(agent_script))
    github.fail_next("GET", f"^{ISSUE_PATH}$", 404, {"message": "Not Found"})
    await launcher.launch(start)
    await issue_read(github, 1)
    await run_sessions(settings, services)
    assert await seen_body(redis, start.spec.job_key) == ISSUE_BODY
    assert github.requests_to("GET", ISSUE_PATH) == 2


async def test_a_session_another_worker_may_run_has_no_read_at_its_launch(
    settings: Settings,
    redis: ArqRedis,
    tickets: EngineTickets,
    session_jobs: SessionJobs,
    agent_script: Path,
    github: FakeGitHub,
) -> None:
    # Two live workers and no reservation: whichever takes the session reads the issue
    # itself; a read here would be a charged request wasted three times in four.
    alive = (time.time() + 60) * 1000
    await redis.zadd(POOL_WORKERS_PREFIX + DEFAULT_POOL, {WORKER: alive, "w2": alive})
    launcher, services = prefetching(settings, redis, tickets, session_jobs, Clock())
    start = await tickets.request(agent_runtime(agent_script))
    await launcher.launch(start)
    prefetch = services.session_jobs.prefetch if services.session_jobs else None
    assert prefetch is not None and prefetch.issue_read(start.spec.job_key) is None
    await run_sessions(settings, services)
    assert await seen_body(redis, start.spec.job_key) == ISSUE_BODY
    assert github.requests_to("GET", ISSUE_PATH) == 1
