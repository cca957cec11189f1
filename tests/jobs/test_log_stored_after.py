"""A session's finished log is stored beside its result going out: the result is
queued (and applied) while the log's storing is still under way, and the job ends
only once the log is stored."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from arq.connections import ArqRedis
from ballet.jobs.deliveries import LoggingConsumer
from ballet.jobs.services import Services, SessionJobs
from ballet.jobs.stage_sessions import run_stage_session
from ballet.sessionlog.steps import Step
from ballet.sessionlog.store import SessionLogs
from ballet.settings import Settings
from ballet.wiring import services_for
from jobs_kit import EngineTickets, agent_runtime
from jobs_running import eventually, queued_end

pytestmark = pytest.mark.anyio


class GatedLogs(SessionLogs):
    """The worker's real log store, whose storing of a finished log waits for a gate."""

    gate: asyncio.Event

    async def finish(self, job_key: str, log: bytes, steps: Sequence[Step]) -> None:
        await self.gate.wait()
        await super().finish(job_key, log, steps)


async def test_the_result_goes_out_while_the_log_is_stored(
    settings: Settings,
    redis: ArqRedis,
    tickets: EngineTickets,
    session_jobs: SessionJobs,
    agent_script: Path,
) -> None:
    logs = GatedLogs.from_settings(settings, redis)  # the worker's own store, gated
    logs.gate = asyncio.Event()
    jobs = replace(session_jobs, logs=logs)
    services: Services = services_for(
        settings, redis, LoggingConsumer(), tickets=tickets, session_jobs=jobs
    )
    start = await tickets.request(agent_runtime(agent_script))
    job = asyncio.create_task(
        run_stage_session({"services": services, "job_try": 1}, start.model_dump(mode="json"))
    )

    async def result_queued() -> bool:
        return await queued_end(redis, start.spec.job_key) is not None

    await eventually(result_queued, "the session's result queued before its log is stored")
    assert not job.done() and not await logs.exists(start.spec.job_key)
    logs.gate.set()
    assert await asyncio.wait_for(job, 30) == "done"
    stored = await logs.read(start.spec.job_key)
    assert stored is not None and b"session ended" in stored.log
