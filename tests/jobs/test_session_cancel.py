"""CancelSession aborts a running session's job, and its whole process group dies with it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from arq.connections import ArqRedis
from arq.jobs import Job, JobStatus
from ballet.core.effects import CancelSession
from ballet.jobs.heartbeats import heartbeat_key
from ballet.jobs.services import Services
from ballet.jobs.stage_sessions import ArqSessionLauncher
from ballet.queue import SESSIONS_QUEUE
from ballet.settings import Settings
from git_repos import git
from jobs_kit import REPO, EngineTickets, agent_runtime
from jobs_running import eventually, queued_finish, run_sessions, sessions_spec, worker_group
from process_namespaces import namespace_alive, namespace_ends

pytestmark = pytest.mark.anyio


@contextlib.asynccontextmanager
async def hanging_session(
    settings: Settings,
    services: Services,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
    pids: Path,
) -> AsyncIterator[tuple[str, str]]:
    """A worker running a session whose agent hangs: (job key, the session's pid
    namespace); the worker stops cleanly when the block ends."""
    start = await tickets.request(agent_runtime(agent_script, str(pids)))
    await launcher.launch(start)
    group = worker_group(settings, services, sessions_spec(settings), burst=False)
    serving = asyncio.create_task(group.run())
    try:

        async def agent_hangs() -> bool:
            return pids.exists()

        await eventually(agent_hangs, "the agent starting")
        yield start.spec.job_key, pids.read_text()
    finally:
        group.stop()
        await serving


async def test_cancel_aborts_a_running_session_and_kills_its_processes(
    settings: Settings,
    services: Services,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
    observed: Path,
) -> None:
    pids = observed / "agent.pids"
    session = hanging_session(settings, services, tickets, launcher, agent_script, pids)
    async with session as (job_key, namespace):
        assert namespace_alive(namespace)
        assert await redis.exists(heartbeat_key(job_key))

        await launcher.cancel(CancelSession(repo=REPO, job_key=job_key))

        job = Job(job_key, redis, _queue_name=SESSIONS_QUEUE)

        async def job_ended() -> bool:
            return await job.status() == JobStatus.complete

        await eventually(job_ended, "the aborted job ending")

    # The session's processes, the agent's child too, are gone, not merely signalled.
    assert namespace_ends(namespace)
    info = await job.result_info()
    assert info is not None and not info.success
    assert isinstance(info.result, asyncio.CancelledError)
    assert not await redis.exists(heartbeat_key(job_key))
    assert await queued_finish(redis, job_key) is None  # a cancelled session reports nothing


async def test_a_session_cancelled_while_queued_never_starts(
    settings: Settings,
    services: Services,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
    origin: Path,
) -> None:
    start = await tickets.request(agent_runtime(agent_script))
    await launcher.launch(start)
    await launcher.cancel(CancelSession(repo=REPO, job_key=start.spec.job_key))

    await run_sessions(settings, services)

    assert await redis.zcard(SESSIONS_QUEUE) == 0
    assert git("branch", "--list", "ballet/*", cwd=origin) == ""  # the agent never ran
    assert await queued_finish(redis, start.spec.job_key) is None


async def test_a_session_interrupted_by_a_worker_stopping_runs_again_on_the_next(
    settings: Settings,
    services: Services,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
    observed: Path,
) -> None:
    pids = observed / "agent.pids"
    # A deploy: the worker stops cleanly under a running session.
    session = hanging_session(settings, services, tickets, launcher, agent_script, pids)
    async with session as (job_key, namespace):
        pass
    assert namespace_ends(namespace)
    assert await queued_finish(redis, job_key) is None

    # Another worker picks the job up again and runs the session afresh.
    await run_sessions(settings, services)

    event = await queued_finish(redis, job_key)
    assert event is not None
    assert event.report.outcome == "done", event.report.summary
    assert event.report.summary == "implement finished"
