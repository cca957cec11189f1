"""The long-lived objects a worker's jobs share, built once when it starts.

Jobs find them in `ctx["services"]`. This is the one place edges are wired
together: swap the consumer (the GitHub edge) or add a store here.
"""

from __future__ import annotations

from dataclasses import dataclass

from arq.connections import ArqRedis

from ballet.queue import DeliveryQueue
from ballet.session_jobs import SessionJobs
from ballet.settings import Settings
from ballet.ticket_events import TicketEventHandler
from ballet.worker import DeliveryConsumer, LoggingConsumer


@dataclass
class Services:
    settings: Settings
    redis: ArqRedis  # also enqueues follow-up jobs, e.g. sessions
    deliveries: DeliveryQueue
    consumer: DeliveryConsumer
    tickets: TicketEventHandler | None = None  # applies session results and ticks
    session_jobs: SessionJobs | None = None  # runs stage sessions and the reconciler


async def build_services(settings: Settings, redis: ArqRedis) -> Services:
    """The production services of a worker process."""
    return Services(
        settings=settings,
        redis=redis,
        deliveries=DeliveryQueue(redis, settings.delivery_dedupe_seconds),
        consumer=LoggingConsumer(),
    )
