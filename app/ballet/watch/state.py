"""What the pages' handlers share, built by the web app's lifespan (never a global)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from arq.connections import ArqRedis
from jinja2 import Environment
from starlette.requests import Request

from ballet.github.app import GitHubApp
from ballet.github.client import GitHubAppCredentials
from ballet.github.forge import Forge
from ballet.jobs.artifacts import Artifacts
from ballet.sessionlog.store import SessionLogs
from ballet.tickets.store import RecordStore
from ballet.watch.access import Access
from ballet.watch.config import WatchConfig
from ballet.watch.cookies import SESSION_COOKIE, Cookies, Viewer
from ballet.watch.directory import Directory
from ballet.watch.render import environment
from ballet.watch.signed_in import SignedIn

# GitHub answers in well under a second; a page waits no longer than this for it.
GITHUB_TIMEOUT = httpx.Timeout(10.0, connect=5.0)


@dataclass
class WatchState:
    config: WatchConfig
    redis: ArqRedis  # the web app's pool: records, access answers, the events queue
    store: RecordStore  # read only: the pages never rebuild nor write a record
    artifacts: Artifacts  # the sessions' reports, while their ticket lives
    access: Access
    cookies: Cookies
    signed_in: SignedIn  # the sessions signing out has not ended, in Redis
    templates: Environment
    http: httpx.AsyncClient  # sign-in's requests, and the repositories' visibility
    github: GitHubApp | None  # None: no App configured yet, so no ticket to show

    async def aclose(self) -> None:
        await self.http.aclose()
        if self.github is not None:
            await self.github.aclose()

    def public_url(self, request: Request) -> str:
        return self.config.public_url or str(request.base_url).rstrip("/")


class _Nowhere:
    """No App configured: it is installed nowhere."""

    async def of(self, repo: str) -> int | None:
        return None

    async def known(self, repo: str) -> int | None:
        return None

    def forge(self, installation_id: int, repo: str) -> Forge:
        raise AssertionError("no App is configured, so no installation is ever found")


def open_watch(
    config: WatchConfig, redis: ArqRedis, *, write_spacing_seconds: float, writes_per_hour: int
) -> WatchState:
    """The pages' state on the web app's Redis; `aclose` it when the app stops."""
    http = httpx.AsyncClient(timeout=GITHUB_TIMEOUT, follow_redirects=False)
    store = RecordStore(redis)
    github = None
    access = Access(redis, _Nowhere(), http, config.github_api_url)
    if config.app is not None:
        credentials = GitHubAppCredentials(
            config.app.app_id, config.app.private_key, config.github_api_url
        )
        github = GitHubApp(
            credentials,
            redis,
            write_spacing_seconds=write_spacing_seconds,
            writes_per_hour=writes_per_hour,
        )
        access = Access(redis, Directory(redis, store, github), http, config.github_api_url)
    return WatchState(
        config=config,
        redis=redis,
        store=store,
        artifacts=Artifacts(redis),
        access=access,
        # Secure when people reach Ballet over https; a local http:// address must
        # still keep its session (browsers drop Secure cookies over http).
        cookies=Cookies(config.session_key, secure=(config.public_url or "").startswith("https:")),
        signed_in=SignedIn(redis),
        templates=environment(),
        http=http,
        github=github,
    )


def watch_state(request: Request) -> WatchState:
    state: WatchState = request.app.state.watch
    return state


async def viewer_of(request: Request) -> Viewer | None:
    """The signed-in person, or None (no cookie, one that is forged or stale, or one whose
    session was signed out, on any web process). Asked of Redis once per request."""
    if hasattr(request.state, "viewer"):
        known: Viewer | None = request.state.viewer
        return known
    state = watch_state(request)
    viewer = state.cookies.viewer(request.cookies.get(SESSION_COOKIE))
    if viewer is not None and not await state.signed_in.holds(viewer):
        viewer = None
    request.state.viewer = viewer
    return viewer


def logs_of(request: Request) -> SessionLogs | None:
    """The session logs (set by the web app's lifespan; None when none are kept)."""
    logs: SessionLogs | None = getattr(request.app.state, "logs", None)
    return logs
