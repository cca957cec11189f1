"""The Starlette application: a routes table and a lifespan owning the queue pool."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Route

from ballet.queue import DeliveryQueue, open_pool
from ballet.settings import Settings
from ballet.setup.flow import SetupFlow
from ballet.web.errors import http_error, internal_error
from ballet.web.probes import healthz, metrics, readyz
from ballet.web.state import WebState
from ballet.web.webhooks import receive_webhook

ROUTES = [
    Route("/webhooks", receive_webhook, methods=["POST"]),
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
    Route("/metrics", metrics, methods=["GET"]),
]


def create_app(
    settings: Settings, redis_url: str | None = None, *, setup: SetupFlow | None = None
) -> Starlette:
    """The web app. Refuses to build without a webhook secret or a queue URL.
    With `setup`, it also serves the first-run pages that register the GitHub App."""
    secrets = settings.require_webhook_secrets()
    url = redis_url or settings.require_redis_url()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        redis = open_pool(url)
        app.state.ballet = WebState(
            redis=redis,
            deliveries=DeliveryQueue(redis, settings.delivery_dedupe_seconds),
            secrets=secrets,
            max_body_bytes=settings.max_webhook_bytes,
        )
        try:
            yield
        finally:
            await redis.aclose(close_connection_pool=True)

    return Starlette(
        routes=[*ROUTES, *(setup.routes() if setup is not None else ())],
        lifespan=lifespan,
        exception_handlers={HTTPException: http_error, Exception: internal_error},
    )
