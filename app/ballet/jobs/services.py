"""What every job shares: the worker's `Services` and the types the jobs pass around.

The bottom of `ballet.jobs`: every job module imports from here and nothing
here imports a job, so the jobs never import each other's wiring. One worker
process builds one `Services` (`ballet.wiring.build_services`) and each job
finds it in `ctx["services"]`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from arq.connections import ArqRedis

from ballet.core.events import AnyEvent
from ballet.github.payloads import Envelope
from ballet.jobs.artifacts import Artifacts
from ballet.jobs.prefetch import SessionPrefetch
from ballet.jobs.redelivery import Redeliveries
from ballet.queue import DeliveryQueue
from ballet.sessionlog.store import SessionLogs
from ballet.sessions import SessionOptions, Workspaces
from ballet.settings import Settings
from ballet.tickets.links import TicketLinksReader
from ballet.tickets.return_reads import ReturnReads
from ballet.tickets.source import TicketSource


@dataclass(frozen=True)
class Delivery:
    """A verified webhook delivery, parsed, as consumers receive it."""

    id: str
    event: str
    payload: dict[str, Any]
    envelope: Envelope
    received_at: datetime


class DeliveryConsumer(Protocol):
    """What the worker hands each delivery to (the ticket service, in production)."""

    async def on_delivery(self, delivery: Delivery) -> None: ...


class TicketEventHandler(Protocol):
    """The ticket service, as the ticket-event job uses it."""

    async def handle(self, key: str, event: AnyEvent, *, event_id: str | None = None) -> bool: ...


@dataclass(frozen=True)
class SessionJobs:
    """What the session job needs, built once per worker (Services.session_jobs)."""

    redis: ArqRedis
    tickets: TicketSource
    workspaces: Workspaces
    artifacts: Artifacts
    parent_env: Mapping[str, str] | None = None  # the worker's env; None: os.environ
    options: SessionOptions = field(default_factory=SessionOptions)
    # The heartbeat key lives TTL_BEATS beats: a dead worker's sessions are seen
    # within ~40 s of its death, plus the reconciler's 30 s between sweeps.
    heartbeat_seconds: float = 10.0
    crash_retries: int = 2  # Settings.session_crash_retries
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    builtin_skills: Mapping[str, str] = field(default_factory=dict)
    links: TicketLinksReader | None = None  # None: sessions get no epic or lineage
    # The mirror fetched, and the issue read, as a session is launched.
    prefetch: SessionPrefetch | None = None
    # What GitHub holds of a return's cause (failing checks, a review); None: the cause alone.
    returns: ReturnReads | None = None
    # Where sessions' logs go (the runner's LogSink) and old ones are swept from; None: nowhere.
    logs: SessionLogs | None = None


@dataclass
class Services:
    settings: Settings
    redis: ArqRedis  # also enqueues follow-up jobs, e.g. sessions
    deliveries: DeliveryQueue
    consumer: DeliveryConsumer
    tickets: TicketEventHandler | None = None  # applies session results and ticks
    session_jobs: SessionJobs | None = None  # runs stage sessions and the reconciler
    redeliveries: Redeliveries | None = None  # asks GitHub again for failed deliveries
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def aclose(self) -> None:
        """Every closer, in reverse order; one failing does not skip the others."""
        errors = []
        for close in reversed(self.closers):
            try:
                await close()
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
