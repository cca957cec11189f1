"""A session's result on its way to its ticket: kept, queued, and applied at once.

The session job keeps the report and handoff as the ticket's artifact, queues
the SessionFinished on the events queue, and then applies it itself through the
ticket service; the queued copy is the backstop, due a moment later, so a worker
dying in between never loses the result. A crashed session is reported under
the same event id, so a session is never reported twice.
"""

from __future__ import annotations

from typing import Any

import structlog
from arq.connections import ArqRedis

from ballet.core.effects import SessionSpec
from ballet.core.events import SessionCrashed, SessionFinished
from ballet.jobs.artifacts import Artifact
from ballet.jobs.services import Services, SessionJobs
from ballet.jobs.session_specs import runner_stage_id, ticket_of
from ballet.jobs.ticket_events import send_ticket_event
from ballet.sessions import SessionResult

log = structlog.get_logger("ballet.jobs.session_results")

# The queued SessionFinished is due this long after it is queued when the job
# applies it itself: past the apply's usual ~0.1 s, so it finds it applied, and
# short enough that a worker dying there delays the ticket by only this much.
RESULT_BACKSTOP_SECONDS = 2.0


def finished_event_id(job_key: str) -> str:
    """One SessionFinished per session, whether the job or the reconciler sends it."""
    return f"session-finished:{job_key}"


def session_of(jobs: SessionJobs, spec: SessionSpec) -> dict[str, Any]:
    """The fields every event about this session carries, as of now."""
    return {
        "now": jobs.clock(),
        "job_key": spec.job_key,
        "stage": spec.stage,
        "iteration": spec.iteration,
        "attempt": spec.attempt,
        "phase": spec.phase,
    }


async def deliver_result(
    jobs: SessionJobs, spec: SessionSpec, result: SessionResult, *, applies: bool
) -> SessionFinished:
    """Keep the report and handoff as the ticket's artifact, then queue SessionFinished:
    as the backstop of this job's own apply when it `applies` it (`apply_now`)."""
    await jobs.artifacts.add(
        ticket_of(spec),
        Artifact(
            job_key=spec.job_key,
            stage=runner_stage_id(spec),
            iteration=spec.iteration,
            phase=spec.phase,
            report=result.report,
            handoff=result.handoff,
        ),
    )
    event = SessionFinished(
        **session_of(jobs, spec),
        report=result.report,
        head_sha=result.head_sha,
        usage=result.usage,
        spend=result.spend,
        cap_reached=result.cap_reached,
        duration_seconds=result.duration_seconds,
        handoff=result.handoff,
        companion_heads=result.companion_heads,
    )
    await send_ticket_event(
        jobs.redis,
        ticket_of(spec),
        event,
        event_id=finished_event_id(spec.job_key),
        backstop_seconds=RESULT_BACKSTOP_SECONDS if applies else None,
    )
    return event


async def apply_now(services: Services, ticket: str, event: SessionFinished, event_id: str) -> None:
    """Apply the session's result here and now, instead of a queue poll later.

    It is queued first (`deliver_result`), so it is never lost: should this worker die or
    GitHub fail here, the queued job applies it (due `RESULT_BACKSTOP_SECONDS`
    later). Both go through the ticket service under the ticket's lock with the
    same event id, so whichever comes second finds it applied and does nothing."""
    if services.tickets is None:
        return
    try:
        await services.tickets.handle(ticket, event, event_id=event_id)
    except Exception as exc:
        log.info("session result left to its queued job", ticket=ticket, reason=repr(exc))


async def deliver_crash(redis: ArqRedis, ticket: str, event: SessionCrashed) -> bool:
    """Tell the ticket its session's worker died, under the event id the session's
    own result would have had: a session that only finished late is never
    reported twice. False when either was sent already."""
    return await send_ticket_event(redis, ticket, event, event_id=finished_event_id(event.job_key))
