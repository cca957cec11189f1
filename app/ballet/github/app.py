"""The App on GitHub, one per process: its identity, its installations, a forge each.

Below this seam is the HTTP plumbing (`client.py`: auth, the sealed token cache,
ETags, pacing); above it, every caller sees only `GitHubApp` and the `Forge`
Protocol that `GitHubForge` (rest.py) implements per installation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
from redis.asyncio import Redis

from ballet.github import models as m
from ballet.github.client import (
    MAX_PAGES,
    PER_PAGE,
    GitHubAppCredentials,
    GitHubClient,
    GitHubClients,
    ServerErrorRetry,
)
from ballet.github.forge import AppIdentity, NotFound
from ballet.github.pacing import DEFAULT_PER_HOUR, DEFAULT_SPACING_SECONDS
from ballet.github.rest import GitHubForge
from ballet.github.token_scope import TokenScope

# Pages of deliveries read per sweep: far more than a sweep's worth.
MAX_DELIVERY_PAGES = 10


class GitHubApp:
    """The App on GitHub: who it is, where it is installed, and a `Forge` per
    installation. One per process: every forge shares its Redis (tokens, the HTTP
    cache, write pacing) and its connection pool (`GitHubClients`, below the seam)."""

    def __init__(
        self,
        credentials: GitHubAppCredentials,
        redis: Redis,
        *,
        write_spacing_seconds: float = DEFAULT_SPACING_SECONDS,
        writes_per_hour: int = DEFAULT_PER_HOUR,
        retry: ServerErrorRetry | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._clients = GitHubClients(
            credentials,
            redis,
            write_spacing_seconds=write_spacing_seconds,
            writes_per_hour=writes_per_hour,
            retry=retry,
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._clients.aclose()

    async def app_identity(self) -> AppIdentity:
        """Who the App is (its slug names its bot), asked once at start-up with the App JWT."""
        app = m.AppData.model_validate(await self._clients.app().json("GET", "/app"))
        return AppIdentity(app_id=app.id, slug=app.slug)

    async def installation_of(self, repo: str) -> int | None:
        """The App's installation on `repo` (asked with the App JWT), or None if not installed."""
        try:
            data = await self._clients.app().json("GET", f"/repos/{repo}/installation")
        except NotFound:
            return None
        return m.InstallationData.model_validate(data).id

    async def installations(self) -> tuple[int, ...]:
        """Every installation of the App (asked with the App JWT)."""
        data = await self._clients.app().pages("/app/installations")
        return tuple(m.InstallationData.model_validate(item).id for item in data)

    async def installations_by_account(self) -> dict[str, int] | None:
        """Every installation of the App by its account's login, lower-cased (App JWT);
        None when there are more than one listing reads (it would be incomplete)."""
        data = await self._clients.app().pages("/app/installations")
        if len(data) >= MAX_PAGES * PER_PAGE:
            return None
        found: dict[str, int] = {}
        for item in data:
            login = (item.get("account") or {}).get("login")
            if isinstance(login, str) and isinstance(item.get("id"), int):
                found[login.lower()] = item["id"]
        return found

    async def installation_repositories(self, installation_id: int, most: int) -> set[str] | None:
        """The full names (lower-cased) of the repositories an installation reaches, or
        None when it reaches more than `most` (asked with its token, a page of 100 each)."""
        client = self._clients.installation(installation_id)
        names: set[str] = set()
        for page in range(1, most // PER_PAGE + 2):
            data = await client.json(
                "GET", "/installation/repositories", params={"per_page": PER_PAGE, "page": page}
            )
            if int(data.get("total_count", 0)) > most:
                return None
            batch = data.get("repositories") or []
            names |= {str(r["full_name"]).lower() for r in batch if r.get("full_name")}
            if len(batch) < PER_PAGE:
                break
        return names

    async def hook_deliveries(self, since: datetime) -> list[m.HookDelivery]:
        """The App's webhook delivery attempts since `since`, newest first (App JWT)."""
        found: list[m.HookDelivery] = []
        params: dict[str, Any] = {"per_page": PER_PAGE}
        for _ in range(MAX_DELIVERY_PAGES):
            response = await self._clients.app().call("GET", "/app/hook/deliveries", params=params)
            page = [m.HookDelivery.model_validate(item) for item in response.json()]
            found += (d for d in page if d.delivered_at is None or d.delivered_at >= since)
            following = response.links.get("next", {}).get("url")
            oldest = page[-1].delivered_at if page else None
            if not page or (oldest is not None and oldest < since) or not following:
                break
            cursor = httpx.URL(following).params.get("cursor")
            if cursor is None:
                break
            params = {"per_page": PER_PAGE, "cursor": cursor}
        return found

    async def redeliver(self, delivery_id: int) -> None:
        """Ask GitHub to send a delivery again, under its GUID (202: queued)."""
        await self._clients.app().call("POST", f"/app/hook/deliveries/{delivery_id}/attempts")

    def for_installation(
        self, installation_id: int, scope: TokenScope | None = None
    ) -> GitHubForge:
        """The installation's forge. With a `scope`, every request it makes uses a token
        limited to those repositories and permissions (a request outside them GitHub
        refuses: 404, 403). Its git remotes always carry a token for that one
        repository's contents alone (TokenScope.git)."""

        def git_client(repo: str) -> GitHubClient:
            return self._clients.installation(installation_id, TokenScope.git(repo))

        async def installed_here(repo: str) -> bool:
            return await self.installation_of(repo) == installation_id

        return GitHubForge(
            self._clients.installation(installation_id, scope),
            self._clients.credentials.api_url,
            git_client,
            installed_here,
        )
