"""The sandbox's Starlette app: the routes table, GitHub-shaped errors and the request log."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ballet.sandbox import (
    admin,
    auto_merge,
    githttp,
    graphql,
    hook_deliveries,
    manifest_flow,
    merge_queue,
    oauth,
    repo_settings,
    rest_app,
    rest_checks,
    rest_compare,
    rest_gitdata,
    rest_issues,
    rest_links,
    rest_pulls,
    rest_repos,
    rest_reviews,
    rest_rulesets,
    rest_user,
)
from ballet.sandbox.auth import Actor, new_app_identity
from ballet.sandbox.errors import ApiError, error_response
from ballet.sandbox.etag import ConditionalGet
from ballet.sandbox.faults import FaultInjector
from ballet.sandbox.state import Sandbox
from ballet.sandbox.webhooks import WebhookQueue

ROUTES = [
    *admin.ROUTES,
    *rest_app.ROUTES,
    *hook_deliveries.ROUTES,
    *manifest_flow.ROUTES,
    *oauth.ROUTES,
    *rest_user.ROUTES,
    *rest_repos.ROUTES,
    *rest_compare.ROUTES,
    *repo_settings.ROUTES,
    *rest_gitdata.ROUTES,
    *rest_issues.ROUTES,
    *rest_links.ROUTES,
    *rest_pulls.ROUTES,
    *rest_rulesets.ROUTES,
    *rest_reviews.ROUTES,
    *rest_checks.ROUTES,
    *graphql.ROUTES,
    *githttp.ROUTES,
]


def new_sandbox(
    data_dir: Path,
    base_url: str,
    webhook_url: str | None,
    *,
    app_id: int = 1,
    slug: str = "ballet",
    token_ttl_seconds: float = 3600,
    ci_timeout_seconds: float = 600,
    callback_urls: list[str] | None = None,
    oauth_code_ttl_seconds: float = 600,
    user_token_ttl_seconds: float = 8 * 3600,
    webhooks_at_once: int = 1,
) -> Sandbox:
    """`callback_urls`: the App's OAuth callback URLs; None: `<public URL>/oauth/callback`,
    the public URL being the webhook URL's scheme and host (see oauth.callback_urls).
    `webhooks_at_once`: deliveries posted at once (1: in the order they were made)."""
    identity = new_app_identity(app_id, slug)
    if callback_urls is not None:
        identity.callback_urls = tuple(callback_urls)
    sandbox = Sandbox(
        app=identity,
        data_dir=data_dir,
        base_url=base_url.rstrip("/"),
        token_ttl_seconds=token_ttl_seconds,
        ci_timeout_seconds=ci_timeout_seconds,
        hooks=WebhookQueue(
            webhook_url, identity.webhook_secret, app_id, posting_at_once=webhooks_at_once
        ),
        oauth_code_ttl_seconds=oauth_code_ttl_seconds,
        user_token_ttl_seconds=user_token_ttl_seconds,
    )
    merge_queue.watch(sandbox)
    auto_merge.watch(sandbox)
    return sandbox


class RequestLog:
    """Records every request the App made (JWT, installation token or a user access
    token: the App acting for a person), for counting."""

    def __init__(self, app: ASGIApp, sandbox: Sandbox) -> None:
        self.app = app
        self.sandbox = sandbox

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 0
        began = time.monotonic()
        logged = False

        def log() -> None:
            nonlocal logged
            actor = scope.get("state", {}).get("actor")
            if logged or not isinstance(actor, Actor) or not (actor.is_app or actor.via_app):
                return
            logged = True
            entry = {
                "method": scope["method"],
                "path": scope["path"],
                "status": status,
                "time": time.time(),
                # When the sandbox began and ended answering, on the machine's
                # monotonic clock: benches subtract GitHub's time from Ballet's.
                "began": began,
                "ended": time.monotonic(),
            }
            if actor.via_app:
                entry["user"] = actor.login
            if actor.repository_ids is not None:
                # The repositories a limited installation token reaches: which token it was.
                reached = (r for r in self.sandbox.repos.values() if r.id in actor.repository_ids)
                entry["token_repos"] = sorted(r.full_name for r in reached)
            if actor.kind == "installation" and actor.permissions is not None:
                # The permissions a limited installation token was asked with.
                entry["token_permissions"] = dict(sorted(actor.permissions.items()))
            self.sandbox.requests.append(entry)

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            if message["type"] == "http.response.body" and not message.get("more_body"):
                # As the answer's last bytes go out, not after what the sandbox does
                # next (a push's webhooks and CI) while the App goes on: the log holds
                # the request before its client can have the answer.
                log()
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            log()


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = "Not Found" if exc.status_code == 404 else str(exc.detail)
    return error_response(request, ApiError(exc.status_code, message))


def create_app(sandbox: Sandbox) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        sandbox.data_dir.mkdir(parents=True, exist_ok=True)
        sender = asyncio.create_task(sandbox.hooks.run())
        try:
            yield {"sandbox": sandbox}
        finally:
            for task in [sender, *sandbox.tasks]:
                task.cancel()
            await asyncio.gather(sender, *sandbox.tasks, return_exceptions=True)

    app = Starlette(
        routes=ROUTES,
        lifespan=lifespan,
        exception_handlers={ApiError: error_response, HTTPException: _http_error},
    )
    app.add_middleware(ConditionalGet)
    app.add_middleware(FaultInjector, sandbox=sandbox)  # logs its faults itself
    app.add_middleware(RequestLog, sandbox=sandbox)  # outermost: it logs the 304s too
    return app
