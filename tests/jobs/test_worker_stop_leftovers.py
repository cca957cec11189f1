"""A worker stopping leaves nothing of its sessions on the machine: no workspace,
no prepared clone, no mounted disk, however its jobs are ending as it stops.

Real arq workers on Valkey, real git, real mounts (where this machine may mount),
the shared fake GitHub. Each test fails without the safety it names: a session
job cancelled by the stop while it waited for its workspace left the workspace
made after it; a run cancelled while its jobs ended (the stop's grace ran out)
skipped the closers that remove the prepared clones.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import structlog
from arq.connections import ArqRedis
from arq.worker import func
from ballet.core.session_limits import LimitValues
from ballet.jobs.deliveries import LoggingConsumer
from ballet.jobs.registry import QueueSpec
from ballet.jobs.services import SessionJobs
from ballet.jobs.stage_sessions import ArqSessionLauncher
from ballet.queue import EVENTS_QUEUE
from ballet.sessions.confine.limits import LimitPlan
from ballet.sessions.disk import can_mount
from ballet.sessions.mounts import mounts
from ballet.settings import Settings
from ballet.wiring import services_for
from fake_github import FakeGitHub
from jobs_kit import ISSUE, REPO, EngineTickets, agent_runtime
from jobs_running import eventually, sessions_spec, worker_group
from mirror_locks import held

pytestmark = pytest.mark.anyio

DISK = 32 << 20
ISSUE_PATH = f"/repos/{REPO}/issues/{ISSUE}"


def with_own_disks(jobs: SessionJobs) -> SessionJobs:
    """The session jobs, each workspace a disk of its own where this machine may mount."""
    if not can_mount():
        return jobs
    plan = LimitPlan(LimitValues(disk=DISK), workspace_disk=True)
    isolation = replace(jobs.options.isolation, limits=plan)
    return replace(jobs, options=replace(jobs.options, isolation=isolation))


def assert_nothing_left(root: Path) -> None:
    assert not [m.point for m in mounts() if m.point.is_relative_to(root)]
    assert not list((root / "sessions").glob("*"))
    assert not list((root / "prepared").glob("*/*"))
    leases = root / "mirrors" / "octo" / "demo.git" / "ballet-leases"
    assert not [p.name for p in leases.glob("*")]


async def every_task_ended(before: set[asyncio.Task[Any]]) -> None:
    """Every task begun since `before` has ended: whatever the worker left running
    (a workspace still being made) has done all it will do."""
    me = asyncio.current_task()

    async def ended() -> bool:
        return not [t for t in asyncio.all_tasks() if t not in before and t is not me]

    await eventually(ended, "every task of the worker ending")


async def test_a_session_job_waiting_for_its_workspace_as_the_worker_stops_leaves_none(
    settings: Settings,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
    github: FakeGitHub,
    session_jobs: SessionJobs,
    caplog: pytest.LogCaptureFixture,
) -> None:
    jobs = with_own_disks(session_jobs)
    services = services_for(settings, redis, LoggingConsumer(), tickets=tickets, session_jobs=jobs)
    caplog.set_level(logging.INFO, logger="arq.worker")
    # GitHub defers the session (a rate limit on the issue's read) while its workspace
    # is still being made (a long fetch holds the mirror's lock): the job waits for the
    # workspace to remove it, and the worker stops (a deploy) meanwhile.
    github.fail_next(
        "GET", ISSUE_PATH, 403, {"message": "secondary rate limit"}, {"retry-after": "60"}
    )
    start = await tickets.request(agent_runtime(agent_script))
    mirror = jobs.workspaces.mirror_path(REPO)
    before = asyncio.all_tasks()
    group = worker_group(settings, services, sessions_spec(settings), burst=False)
    with structlog.testing.capture_logs() as logs, held(mirror):
        await launcher.launch(start)
        serving = asyncio.create_task(group.run())

        async def job_waits() -> bool:
            return any(e["event"] == "session workspace awaited, to remove it" for e in logs)

        await eventually(job_waits, "the deferred job waiting for its workspace")
        group.stop()

        async def jobs_cancelled() -> bool:  # arq's Worker.close(), which cancels its jobs
            return any(r.getMessage().startswith("shutdown on") for r in caplog.records)

        await eventually(jobs_cancelled, "the worker cancelling its jobs")
    # The fetch ends: the workspace is made, then must be removed.
    await serving
    await every_task_ended(before)
    assert_nothing_left(jobs.workspaces.root)


SLOW: dict[str, asyncio.Event] = {}


async def ends_slowly(_ctx: dict[str, Any]) -> None:
    """A job that takes its time to end once cancelled (a session's cleanup)."""
    SLOW["started"].set()
    try:
        await asyncio.Event().wait()
    finally:
        SLOW["ending"].set()
        await SLOW["ended"].wait()


async def test_a_worker_whose_stop_runs_out_of_grace_still_removes_its_prepared_clones(
    settings: Settings, redis: ArqRedis, session_jobs: SessionJobs, origin: Path
) -> None:
    jobs = with_own_disks(session_jobs)
    workspaces = jobs.workspaces
    await workspaces.refresh(REPO, origin.as_uri(), None)
    disk = DISK if can_mount() else None
    workspaces.prepare(REPO, branch="ballet/7-x", base="main", disk=disk)
    await workspaces.prepared.made()
    assert list(workspaces.prepared.root.iterdir())
    # As the production wiring closes them (wiring.build_services).
    services = services_for(
        settings, redis, LoggingConsumer(), session_jobs=jobs, closers=(workspaces.aclose,)
    )
    SLOW.update(started=asyncio.Event(), ending=asyncio.Event(), ended=asyncio.Event())
    spec = QueueSpec(
        EVENTS_QUEUE, max_jobs=1, job_timeout=60, functions=(func(ends_slowly, name="slow"),)
    )
    await redis.enqueue_job("slow", _queue_name=EVENTS_QUEUE)
    group = worker_group(settings, services, spec, burst=False)
    serving = asyncio.create_task(group.run())
    async with asyncio.timeout(30):
        await SLOW["started"].wait()
        group.stop()
        await SLOW["ending"].wait()  # the worker cancelled its job, and waits for its end
    serving.cancel()  # the stop's grace ran out (commands/lifecycle.py)
    SLOW["ended"].set()
    with contextlib.suppress(asyncio.CancelledError):
        await serving
    assert_nothing_left(workspaces.root)
