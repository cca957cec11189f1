"""The session and reconciler metrics move: sessions by adapter and result, their wall
time, the running gauge, crashed sessions and live tickets.

The registry is the process's global one: counters are read before and after
and the difference asserted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from arq.connections import ArqRedis
from arq.constants import job_key_prefix
from ballet.jobs.heartbeats import heartbeat_key, last_beat_key
from ballet.jobs.reconciler import Reconciler
from ballet.jobs.services import Services, SessionJobs
from ballet.jobs.session_specs import build_runner_spec
from ballet.jobs.stage_sessions import ArqSessionLauncher, run_counted
from ballet.queue import SESSIONS_QUEUE
from ballet.settings import Settings
from jobs_kit import REPO, EngineTickets, agent_runtime
from jobs_running import eventually, run_sessions
from prometheus_client import REGISTRY

pytestmark = pytest.mark.anyio

TICKET = f"{REPO}#7"
NOW = datetime(2026, 1, 1, 12, 30, tzinfo=UTC)


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def delta(name: str, **labels: str) -> Callable[[], float]:
    """How much a sample has moved since this call."""
    before = sample(name, **labels)
    return lambda: sample(name, **labels) - before


async def test_a_session_that_reports_counts_as_reported_with_its_wall_time(
    settings: Settings,
    services: Services,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
) -> None:
    reported = delta("ballet_sessions_total", adapter="command", result="reported")
    timed = delta("ballet_session_seconds_count", adapter="command")
    failed = delta("ballet_sessions_total", adapter="command", result="missing_report")
    running = delta("ballet_sessions_running", adapter="command")

    start = await tickets.request(agent_runtime(agent_script))
    await launcher.launch(start)
    await run_sessions(settings, services)

    assert (reported(), timed(), failed(), running()) == (1, 1, 0, 0)


async def test_a_session_past_its_timeout_counts_as_timeout_and_runs_meanwhile(
    session_jobs: SessionJobs, tickets: EngineTickets, agent_script: Path, observed: Path
) -> None:
    # The agent hangs; the stage's timeout (minutes in .ballet.yml) is cut to a second.
    start = await tickets.request(agent_runtime(agent_script, str(observed / "agent.pids")))
    spec = await build_runner_spec(session_jobs, start.spec)
    spec = spec.model_copy(update={"timeout_seconds": 1.0})
    timeouts = delta("ballet_sessions_total", adapter="command", result="timeout")
    reported = delta("ballet_sessions_total", adapter="command", result="reported")
    running = delta("ballet_sessions_running", adapter="command")

    session = asyncio.create_task(run_counted(session_jobs, spec))

    async def counted_as_running() -> bool:
        return running() == 1

    await eventually(counted_as_running, "the session counting as running")
    result = await session

    assert result.failure_reason == "timeout"
    assert (timeouts(), reported(), running()) == (1, 0, 0)


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


async def test_the_reconciler_counts_crashed_sessions_and_sets_the_live_tickets(
    session_jobs: SessionJobs,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
) -> None:
    reconciler = Reconciler(
        session_jobs.redis, session_jobs.tickets, session_jobs.artifacts, clock=lambda: NOW
    )
    start = await tickets.request(agent_runtime(agent_script))
    await launcher.launch(start)
    crashed = delta("ballet_reconciler_crashed_sessions_total")

    await reconciler.sweep()  # queued behind busy slots: live, not crashed
    assert (sample("ballet_live_tickets"), crashed()) == (1, 0)

    await worker_died(redis, start.spec.job_key)
    await reconciler.sweep()
    await reconciler.sweep()  # the same crash is reported once
    assert (sample("ballet_live_tickets"), crashed()) == (1, 1)

    record = tickets.records[TICKET]
    closed = record.history[-1].model_copy(update={"end": NOW})
    await tickets.store.commit(
        record.model_copy(update={"status": "cancelled", "history": (closed,)}), [], None
    )
    await reconciler.sweep()
    assert (sample("ballet_live_tickets"), crashed()) == (0, 1)
