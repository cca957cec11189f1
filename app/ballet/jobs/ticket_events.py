"""Events that do not come from webhooks (session results, reconciler ticks), into the pipeline.

A session job or the reconciler never touches a ticket's record itself: it
enqueues `apply_ticket_event` on the events queue, whose job hands the event
to the GitHub edge's ticket service, which applies it under the ticket's lock
(lock → load → advance → save → effects). The arq job id is derived from the
event id, so one event is queued once however often it is sent, and the
ticket service's applied-event window refuses a second application. (A
session job, once its result is queued, also hands it to the ticket service
itself, to save the queue's poll; the queued job then finds it applied.)
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import structlog
from arq import Retry
from arq.connections import ArqRedis
from arq.worker import Function, func
from pydantic import TypeAdapter

from ballet.core.events import AnyEvent
from ballet.github.forge import ForgeUnavailable, RateLimited
from ballet.jobs.retries import MAX_DEFERRALS, contention, count_failure, forget_failures
from ballet.jobs.services import Services
from ballet.jobs.wakeups import wake
from ballet.queue import EVENTS_QUEUE

log = structlog.get_logger("ballet.jobs.ticket_events")

APPLY_TICKET_EVENT = "apply_ticket_event"
DRAIN_TICKET = "drain_ticket"
# While its result is kept, arq refuses a second job for the same event id; a
# later duplicate is refused by the ticket service's applied-event window and
# the engine's stale-job-key check. An hour keeps a minute's ticks cheap.
KEEP_RESULT_SECONDS = 3600
MAX_TRIES = 8
RETRY_BASE_SECONDS = 5.0

_event: TypeAdapter[AnyEvent] = TypeAdapter(AnyEvent)


def ticket_event_job_id(event_id: str) -> str:
    """The arq job id of an event: the same event id is the same job, queued once."""
    return f"ticket-event:{event_id}"


async def send_ticket_event(
    redis: ArqRedis,
    ticket: str,
    event: AnyEvent,
    *,
    event_id: str,
    backstop_seconds: float | None = None,
) -> bool:
    """Queue `event` for ticket `owner/repo#n`; False when this event id was already queued.

    `backstop_seconds`: the sender applies the event itself at once, and the queued
    job is only its backstop, should the sender die or fail first. It is then due
    that much later: taken at once, it would only queue on the ticket's lock beside
    the sender's own apply, on a transition's path. The wake still goes out: a
    worker's wait ends at the earliest deferred job it knows of."""
    job = await redis.enqueue_job(
        APPLY_TICKET_EVENT,
        ticket,
        event.model_dump_json(),
        event_id,
        _job_id=ticket_event_job_id(event_id),
        _queue_name=EVENTS_QUEUE,
        _defer_by=backstop_seconds,
    )
    if job is None:
        return False
    await wake(redis, EVENTS_QUEUE)
    return True


async def apply_ticket_event(
    ctx: dict[str, Any], ticket: str, event_json: str, event_id: str | None = None
) -> bool:
    """The job: apply one event to one ticket; True when the engine took it."""
    services: Services = ctx["services"]
    if services.tickets is None:
        raise RuntimeError(
            "this worker has no ticket service (Services.tickets is None); "
            "build the worker's services with the GitHub edge wired in"
        )
    event = _event.validate_json(event_json)
    try:
        applied = await services.tickets.handle(ticket, event, event_id=event_id)
    except (RateLimited, ForgeUnavailable) as exc:
        wait = contention(exc)
        if wait is not None:
            log.info("ticket event deferred", ticket=ticket, kind=event.kind, reason=str(exc))
            raise wait from exc
        failures = await count_failure(services.redis, ctx)
        if failures >= MAX_TRIES:
            raise
        log.warning("ticket event deferred: GitHub unavailable", ticket=ticket, error=str(exc))
        raise Retry(defer=RETRY_BASE_SECONDS * failures**2) from exc
    await forget_failures(services.redis, ctx)
    log.info("ticket event handled", ticket=ticket, kind=event.kind, applied=applied)
    return applied


APPLY_TICKET_EVENT_JOB: Function = func(
    apply_ticket_event,
    name=APPLY_TICKET_EVENT,
    keep_result=KEEP_RESULT_SECONDS,
    max_tries=MAX_DEFERRALS,
)


async def drain_later(redis: ArqRedis, ticket: str, when: datetime) -> None:
    """Drain `ticket`'s outbox at `when`, when a deferred write is due (tickets/drain.py).
    One job per ticket and time; a lost one costs only a delay: the ticket's next
    drain (its next event, the reconciler's tick) writes what is due."""
    await redis.enqueue_job(
        DRAIN_TICKET,
        ticket,
        _job_id=f"drain:{ticket}:{when.timestamp():.3f}",
        _queue_name=EVENTS_QUEUE,
        _defer_until=when,
    )
    # Not due yet, but the workers' waits end at the earliest deferred job they know of.
    await wake(redis, EVENTS_QUEUE)


async def drain_ticket(ctx: dict[str, Any], ticket: str) -> None:
    """The job: carry out what is due in the ticket's outbox."""
    services: Services = ctx["services"]
    drain = getattr(services.tickets, "drain", None)
    if drain is None:
        return  # a worker without the GitHub edge: nothing to write with
    try:
        await drain(ticket)
    except (RateLimited, ForgeUnavailable) as exc:
        wait = contention(exc)
        if wait is not None:
            raise wait from exc
        failures = await count_failure(services.redis, ctx)
        if failures >= MAX_TRIES:
            raise
        raise Retry(defer=RETRY_BASE_SECONDS * failures**2) from exc
    await forget_failures(services.redis, ctx)


DRAIN_TICKET_JOB: Function = func(drain_ticket, name=DRAIN_TICKET, max_tries=MAX_DEFERRALS)
