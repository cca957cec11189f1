"""Wiring of the GitHub edge for a worker process: one call, from settings.

    edge = await build_edge(settings, redis, launcher, default_runtime=runtime)
    services.consumer = edge.service          # the worker's DeliveryConsumer
    ...
    await edge.aclose()                       # at shutdown

`redis` must return bytes (arq's `ArqRedis` does): it holds installation
tokens, the HTTP cache, write pacing, ticket records and their outboxes.
A job that gets `RateLimited` should be deferred:
`raise arq.Retry(defer=exc.retry_after_seconds)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from redis.asyncio import Redis

from ballet.core.config import Runtime
from ballet.github.github_client import GitHubClients
from ballet.github.github_forge import GitHubAppCredentials, GitHubForges
from ballet.github.interpret import SessionLauncher
from ballet.github.memo import Memo
from ballet.github.store import RecordStore
from ballet.github.ticket_service import TicketService
from ballet.live_tickets import LiveTickets
from ballet.settings import Settings


class EdgeConfigError(ValueError):
    """The settings cannot run the GitHub edge; the message says which to set."""


@dataclass
class GitHubEdge:
    forges: GitHubForges
    store: RecordStore
    service: TicketService

    async def aclose(self) -> None:
        await self.forges.aclose()


async def build_edge(
    settings: Settings,
    redis: Redis,
    launcher: SessionLauncher,
    *,
    default_runtime: Runtime | None = None,
) -> GitHubEdge:
    if settings.app_id is None:
        raise EdgeConfigError("set BALLET_APP_ID to the GitHub App's id")
    key = settings.private_key_pem()
    if not key:
        raise EdgeConfigError(
            "set BALLET_PRIVATE_KEY (PEM text) or BALLET_PRIVATE_KEY_PATH to the App's private key"
        )
    forges = GitHubForges(
        GitHubClients(
            GitHubAppCredentials(settings.app_id, key, settings.github_api_url),
            redis,
            write_spacing_seconds=settings.write_spacing_seconds,
        )
    )
    identity = await forges.app_identity()
    store = RecordStore(redis)
    service = TicketService(
        forges.for_installation,
        store,
        Memo(redis),
        launcher,
        app=identity,
        default_runtime=default_runtime,
        clock=lambda: datetime.now(UTC),
        live_tickets=LiveTickets(redis),
        find_installation=forges.installation_of,
    )
    return GitHubEdge(forges=forges, store=store, service=service)
