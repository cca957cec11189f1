"""Running the real arq workers of the session-job tests, and reading what they queued."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from arq.connections import ArqRedis
from arq.jobs import Job
from ballet.core.events import AnyEvent, SessionCrashed, SessionFinished
from ballet.jobs.registry import QueueSpec, WorkerGroup, queue_specs
from ballet.jobs.services import Services
from ballet.jobs.session_results import finished_event_id
from ballet.jobs.ticket_events import APPLY_TICKET_EVENT_JOB, ticket_event_job_id
from ballet.queue import EVENTS_QUEUE, SESSIONS_QUEUE
from ballet.settings import Settings
from pydantic import TypeAdapter

# The events queue without the reconciler's cron job, so no tick lands mid-test.
EVENTS_ONLY = QueueSpec(
    EVENTS_QUEUE, max_jobs=4, job_timeout=60, functions=(APPLY_TICKET_EVENT_JOB,)
)


def sessions_spec(settings: Settings) -> QueueSpec:
    (spec,) = (s for s in queue_specs(settings) if s.name == SESSIONS_QUEUE)
    return spec


def worker_group(
    settings: Settings, services: Services, spec: QueueSpec, *, burst: bool
) -> WorkerGroup:
    async def factory(_settings: Settings, _pool: ArqRedis) -> Services:
        return services

    return WorkerGroup(settings, settings.require_redis_url(), factory, [spec], burst=burst)


async def run_sessions(settings: Settings, services: Services) -> None:
    await worker_group(settings, services, sessions_spec(settings), burst=True).run()


async def run_events(settings: Settings, services: Services) -> None:
    await worker_group(settings, services, EVENTS_ONLY, burst=True).run()


_EVENT: TypeAdapter[AnyEvent] = TypeAdapter(AnyEvent)


async def queued_end(redis: ArqRedis, job_key: str) -> AnyEvent | None:
    """What the events queue holds for a session's end (finished or crashed), if any."""
    job_id = ticket_event_job_id(finished_event_id(job_key))
    job = Job(job_id, redis, _queue_name=EVENTS_QUEUE)
    info = await job.info()
    if info is None:
        return None
    _ticket, event_json, _event_id = info.args
    return _EVENT.validate_json(event_json)


async def queued_finish(redis: ArqRedis, job_key: str) -> SessionFinished | None:
    """The SessionFinished queued on the events queue for a session, if any."""
    event = await queued_end(redis, job_key)
    assert event is None or isinstance(event, SessionFinished), event
    return event


async def queued_crash(redis: ArqRedis, job_key: str) -> SessionCrashed | None:
    """The SessionCrashed queued for a session whose worker died, if any."""
    event = await queued_end(redis, job_key)
    assert event is None or isinstance(event, SessionCrashed), event
    return event


async def eventually(check: Callable[[], Awaitable[bool]], what: str, limit: float = 30.0) -> None:
    """Wait until `check()` holds; fail saying `what` did not happen."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"{what} did not happen within {limit:g} s")
        await asyncio.sleep(0.05)
