"""Who may see a ticket, its sessions and their logs: read access to its repository.

Asked of GitHub with the App's installation on the repository, never with the
viewer's own token (none is kept):

- the installation cannot see the repository (or the App is not installed
  there): nobody may, whatever GitHub would tell the person;
- a public repository: anyone may read, signed in or not;
- a private (or internal) one: only a signed-in person whose collaborator
  permission (`GET /repos/{o}/{r}/collaborators/{login}/permission`, which counts
  teams and organisation roles) is read or more.

The answer is the viewer's permission (what the buttons need too) or None,
which every page turns into the same 404 as a ticket that does not exist.
Answers are kept in Redis for a minute per repository and per (repository,
login): a person just removed from a repository may see it that much longer,
never act (a command asks afresh).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Literal

import httpx
from redis.asyncio import Redis

from ballet.core.events import WRITE_PERMISSIONS, Permission
from ballet.github.forge import Forge, ForgeError, RateLimited
from ballet.watch.cookies import Viewer
from ballet.watch.oauth import GITHUB_JSON

CACHE_SECONDS = 60
PREFIX = "ballet:watch"
READ_PERMISSIONS: frozenset[Permission] = frozenset({"read", "triage", *WRITE_PERMISSIONS})
# GitHub's own rules for owner and repository names: anything else is no repository.
REPO = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")

Visibility = Literal["public", "private", "hidden"]  # hidden: the installation cannot see it


class AccessUnknown(Exception):
    """GitHub did not answer whether the viewer may read; the page asks to try again."""


class Access:
    def __init__(
        self,
        redis: Redis,
        installation_of: Callable[[str], Awaitable[int | None]],
        forges: Callable[[int], Forge],
        http: httpx.AsyncClient,
        api_url: str,
        *,
        cache_seconds: int = CACHE_SECONDS,
    ) -> None:
        self._redis = redis
        self._installation_of = installation_of
        self._forges = forges
        self._http = http
        self._api_url = api_url
        self._ttl = cache_seconds

    async def permission(
        self, repo: str, viewer: Viewer | None, *, fresh: bool = False
    ) -> Permission | None:
        """The viewer's permission on `repo` if they may read its tickets, else None.
        `fresh`: ask GitHub now (before an action), never the minute-old answer."""
        if not REPO.match(repo) or repo.endswith(("/.", "/..")):
            return None
        visibility = await self._visibility(repo, fresh)
        if visibility == "hidden":
            return None
        public = visibility == "public"
        if viewer is None:
            return "read" if public else None
        permission = await self._permission(repo, viewer.login, fresh)
        if permission in READ_PERMISSIONS:
            return permission
        return "read" if public else None

    async def readable(
        self, repos: list[str], viewer: Viewer | None, *, at_once: int = 8
    ) -> tuple[dict[str, Permission], int]:
        """The viewer's permission on each repository they may read (a listing's), and
        how many GitHub could not answer for (left out, as if unreadable)."""
        gate = asyncio.Semaphore(at_once)

        async def one(repo: str) -> Permission | AccessUnknown | None:
            async with gate:
                try:
                    return await self.permission(repo, viewer)
                except AccessUnknown as exc:
                    return exc

        found = await asyncio.gather(*(one(repo) for repo in repos))
        unknown = sum(isinstance(p, AccessUnknown) for p in found)
        return {
            repo: p
            for repo, p in zip(repos, found, strict=True)
            if p is not None and not isinstance(p, AccessUnknown)
        }, unknown

    async def _visibility(self, repo: str, fresh: bool) -> Visibility:
        key = f"{PREFIX}:visibility:{repo.lower()}"
        cached = None if fresh else await self._redis.get(key)
        if cached is not None:
            return _visibility_of(cached)
        found = await self._ask_visibility(repo)
        await self._redis.set(key, found, ex=self._ttl)
        return found

    async def _ask_visibility(self, repo: str) -> Visibility:
        try:
            installation = await self._installation_of(repo)
            if installation is None:
                return "hidden"
            # The installation's own token, as the worker's forge holds it.
            remote = await self._forges(installation).git_remote(repo)
            response = await self._http.get(
                f"{self._api_url}/repos/{repo}",
                headers={"Authorization": f"token {remote.token}", "Accept": GITHUB_JSON},
            )
        except (ForgeError, RateLimited, httpx.HTTPError) as exc:
            raise AccessUnknown(f"GitHub did not say who may read {repo}") from exc
        if response.status_code in (403, 404):
            return "hidden"
        if response.status_code != 200:
            raise AccessUnknown(f"GitHub answered {response.status_code} about {repo}")
        data = response.json()
        # An internal repository is private: its enterprise's members are not "anyone".
        if data.get("private") is False and data.get("visibility", "public") == "public":
            return "public"
        return "private"

    async def _permission(self, repo: str, login: str, fresh: bool) -> Permission:
        key = f"{PREFIX}:permission:{repo.lower()}:{login.lower()}"
        cached = None if fresh else await self._redis.get(key)
        if cached is not None:
            return _permission_of(cached)
        try:
            installation = await self._installation_of(repo)
            if installation is None:
                return "none"
            permission = await self._forges(installation).permission(repo, login)
        except (ForgeError, RateLimited) as exc:
            raise AccessUnknown(f"GitHub did not say what {login} may do on {repo}") from exc
        await self._redis.set(key, permission, ex=self._ttl)
        return permission


def may_write(permission: Permission | None) -> bool:
    return permission in WRITE_PERMISSIONS


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def _visibility_of(raw: bytes | str) -> Visibility:
    value = _text(raw)
    return "public" if value == "public" else "private" if value == "private" else "hidden"


def _permission_of(raw: bytes | str) -> Permission:
    value = _text(raw)
    known: tuple[Permission, ...] = ("read", "triage", "write", "maintain", "admin")
    return next((p for p in known if p == value), "none")
