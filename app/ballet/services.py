"""The long-lived objects a worker's jobs share, built once when it starts.

Jobs find them in `ctx["services"]`. This is the one place the edges are
wired together: the GitHub edge consumes deliveries and applies ticket
events, its launcher sends StartSession effects to the sessions queue, and
the session jobs run them and report back through the ticket events job.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog
from arq.connections import ArqRedis

from ballet.core.config import Runtime
from ballet.github.edge import EdgeConfigError, build_edge
from ballet.queue import DeliveryQueue
from ballet.session_jobs import ArqSessionLauncher, SessionJobs, session_jobs_for
from ballet.settings import Settings
from ballet.ticket_events import TicketEventHandler
from ballet.worker import DeliveryConsumer, LoggingConsumer

log = structlog.get_logger("ballet.services")


@dataclass
class Services:
    settings: Settings
    redis: ArqRedis  # also enqueues follow-up jobs, e.g. sessions
    deliveries: DeliveryQueue
    consumer: DeliveryConsumer
    tickets: TicketEventHandler | None = None  # applies session results and ticks
    session_jobs: SessionJobs | None = None  # runs stage sessions and the reconciler
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def aclose(self) -> None:
        for close in reversed(self.closers):
            await close()


def default_runtime(settings: Settings) -> Runtime:
    """The runtime of repositories without a `.ballet.yml`: the deployment's choice."""
    return Runtime(
        adapter=settings.default_adapter,
        model=settings.default_model,
        env=settings.default_runtime_env,
    )


async def build_services(settings: Settings, redis: ArqRedis) -> Services:
    """The production services of a worker process."""
    deliveries = DeliveryQueue(redis, settings.delivery_dedupe_seconds)
    launcher = ArqSessionLauncher(redis)
    try:
        edge = await build_edge(
            settings, redis, launcher, default_runtime=default_runtime(settings)
        )
    except EdgeConfigError as exc:
        # Ballet still starts, so a new install can check its webhook wiring:
        # deliveries are verified, queued, counted and logged, but not acted on.
        log.warning(
            f"no GitHub App configured, deliveries are only logged: {exc}; then"
            " redeliver from the App's settings any delivery that should start a ticket"
        )
        return Services(settings, redis, deliveries, LoggingConsumer())
    return Services(
        settings=settings,
        redis=redis,
        deliveries=deliveries,
        consumer=edge.service,
        tickets=edge.service,
        session_jobs=session_jobs_for(
            settings,
            redis,
            edge.store,
            edge.forges.for_installation,
            find_installation=edge.forges.installation_of,
        ),
        closers=[edge.aclose],
    )
