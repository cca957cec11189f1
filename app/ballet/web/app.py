"""The Starlette application: a routes table and a lifespan owning the queue pool
(and, on `app.state.logs`, the session logs the pages read)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
from redis.asyncio import Redis
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ballet.queue import DeliveryQueue, open_pool
from ballet.sessionlog.objects import LogStoreConfigError
from ballet.sessionlog.store import SessionLogs
from ballet.settings import Settings
from ballet.setup.flow import SetupFlow
from ballet.watch.config import watch_config
from ballet.watch.routes import ROUTES as WATCH_ROUTES
from ballet.watch.state import open_watch
from ballet.web.errors import http_error, internal_error
from ballet.web.group_commit import GroupCommit
from ballet.web.probes import healthz, metrics, readyz
from ballet.web.responses import problem
from ballet.web.state import BodyBudget, WebState
from ballet.web.webhooks import receive_webhook

WEBHOOKS_PATH = "/webhooks"

log = structlog.get_logger("ballet.web")


async def _webhooks_route(request: Request) -> Response:
    # BalletApp answers POST /webhooks before routing once the lifespan has run;
    # the route lists the endpoint in the table, gets a GET answered 405, and
    # answers a delivery that comes before the app is ready.
    return problem(503, "starting", "the web app is starting: GitHub redelivers failed deliveries")


ROUTES = [
    Route(WEBHOOKS_PATH, _webhooks_route, methods=["POST"]),
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
    Route("/metrics", metrics, methods=["GET"]),
]


class BalletApp(Starlette):
    """Starlette, with POST /webhooks handed straight to its ASGI endpoint:
    Starlette's middleware and routing were a fifth of a delivery's time and
    the endpoint answers its own errors (docs/performance.md)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == WEBHOOKS_PATH and scope["method"] == "POST":
            state: WebState | None = getattr(self.state, "ballet", None)
            if state is not None:
                await receive_webhook(state, scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def create_app(
    settings: Settings, redis_url: str | None = None, *, setup: SetupFlow | None = None
) -> Starlette:
    """The web app. Refuses to build without a webhook secret or a queue URL.
    With `setup`, it also serves the first-run pages that register the GitHub App.
    It always serves Ballet's pages (ballet.watch: tickets, sessions, their logs)."""
    secrets = settings.require_webhook_secrets()
    url = redis_url or settings.require_redis_url()
    watch = watch_config(settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        redis = open_pool(url)
        deliveries = GroupCommit(
            DeliveryQueue(redis, settings.delivery_dedupe_seconds).enqueue_many
        )
        app.state.ballet = WebState(
            redis=redis,
            deliveries=deliveries,
            secret_keys=tuple(secret.encode() for secret in secrets),
            max_body_bytes=settings.max_webhook_bytes,
            bodies=BodyBudget(2 * settings.max_webhook_bytes),
        )
        # The pages' session logs (`request.app.state.logs: SessionLogs | None`), on
        # the same pool: nothing of theirs to close but the pool itself.
        app.state.logs = _session_logs(settings, redis)
        app.state.watch = open_watch(
            watch,
            redis,
            write_spacing_seconds=settings.write_spacing_seconds,
            writes_per_hour=settings.writes_per_hour,
        )
        try:
            yield
        finally:
            await app.state.watch.aclose()
            await deliveries.close()
            await redis.aclose(close_connection_pool=True)

    return BalletApp(
        # The setup flow's `/` (a redirect to /setup) comes before the pages' home.
        routes=[*ROUTES, *(setup.routes() if setup is not None else ()), *WATCH_ROUTES],
        lifespan=lifespan,
        exception_handlers={HTTPException: http_error, Exception: internal_error},
    )


def _session_logs(settings: Settings, redis: Redis) -> SessionLogs | None:
    """The session logs the pages read; None, said in the log, when BALLET_LOG_STORE
    cannot make a store: a log store's settings must not stop the webhooks."""
    try:
        return SessionLogs.from_settings(settings, redis)
    except LogStoreConfigError as exc:
        log.error(f"session logs unavailable to the web pages: {exc}")
        return None
