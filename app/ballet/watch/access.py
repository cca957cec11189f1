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
never act (a command asks afresh). "No such repository here" is kept five
minutes, and costs no request at all for an owner or a name the App's
installations do not list (`directory.py`); a "not installed" kept is set aside
as soon as the worker learns of an installation there. Concurrent askers of
one repository share one request (`single_flight.py`).
"""

from __future__ import annotations

import asyncio
import re
from typing import Literal, Protocol

import httpx
from redis.asyncio import Redis

from ballet.core.events import WRITE_PERMISSIONS, Permission
from ballet.github.forge import Forge, ForgeError, RateLimited
from ballet.watch.cookies import Viewer
from ballet.watch.oauth import GITHUB_JSON
from ballet.watch.single_flight import SingleFlight

CACHE_SECONDS = 60
NEGATIVE_SECONDS = 300  # no installation, no such repository, not visible to it
PREFIX = "ballet:watch"
READ_PERMISSIONS: frozenset[Permission] = frozenset({"read", "triage", *WRITE_PERMISSIONS})
# GitHub's own rules for owner and repository names: anything else is no repository.
REPO = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")

# hidden: the installation cannot see it; uninstalled: no installation of the App there.
Visibility = Literal["public", "private", "hidden", "uninstalled"]


class Installations(Protocol):
    async def of(self, repo: str) -> int | None:
        """The App's installation on `repo` (may ask GitHub), or None."""

    async def known(self, repo: str) -> int | None:
        """The installation the worker learnt of (installation events), asking nobody."""

    def forge(self, installation_id: int, repo: str) -> Forge:
        """A forge reading `repo` alone: whom it shows to, nothing of its content."""


class AccessUnknown(Exception):
    """GitHub did not answer whether the viewer may read; the page asks to try again."""


class Access:
    def __init__(
        self,
        redis: Redis,
        installations: Installations,
        http: httpx.AsyncClient,
        api_url: str,
        *,
        cache_seconds: int = CACHE_SECONDS,
        negative_seconds: int = NEGATIVE_SECONDS,
    ) -> None:
        self._redis = redis
        self._installations = installations
        self._http = http
        self._api_url = api_url
        self._ttl = cache_seconds
        self._negative_ttl = negative_seconds
        self._visibilities: SingleFlight[Visibility] = SingleFlight()
        self._permissions: SingleFlight[Permission] = SingleFlight()

    async def permission(
        self, repo: str, viewer: Viewer | None, *, fresh: bool = False
    ) -> Permission | None:
        """The viewer's permission on `repo` if they may read its tickets, else None.
        `fresh`: ask GitHub now (before an action), never the minute-old answer."""
        if not REPO.match(repo) or repo.endswith(("/.", "/..")):
            return None
        visibility = await self._visibility(repo, fresh)
        if visibility in ("hidden", "uninstalled"):
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

    async def installation_of(self, repo: str) -> int | None:
        """The App's installation on `repo` (may ask GitHub), or None."""
        return await self._installations.of(repo)

    async def _visibility(self, repo: str, fresh: bool) -> Visibility:
        key = f"{PREFIX}:visibility:{repo.lower()}"
        cached = None if fresh else await self._redis.get(key)
        if cached is not None:
            found = _visibility_of(cached)
            if found != "uninstalled" or await self._installations.known(repo) is None:
                return found
        return await self._visibilities.run(key, lambda: self._look_up(repo, key))

    async def _look_up(self, repo: str, key: str) -> Visibility:
        found = await self._ask_visibility(repo)
        seen = found in ("public", "private")
        await self._redis.set(key, found, ex=self._ttl if seen else self._negative_ttl)
        return found

    async def _ask_visibility(self, repo: str) -> Visibility:
        try:
            installation = await self._installations.of(repo)
            if installation is None:
                return "uninstalled"
            # The token of the repository's git remote: it reaches that repository
            # alone (TokenScope.git), as the worker's forge holds it.
            remote = await self._installations.forge(installation, repo).git_remote(repo)
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
        return await self._permissions.run(key, lambda: self._ask_permission(repo, login, key))

    async def _ask_permission(self, repo: str, login: str, key: str) -> Permission:
        try:
            installation = await self._installations.of(repo)
            if installation is None:
                return "none"
            forge = self._installations.forge(installation, repo)
            permission = await forge.permission(repo, login)
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
    known: tuple[Visibility, ...] = ("public", "private", "uninstalled")
    return next((v for v in known if v == value), "hidden")


def _permission_of(raw: bytes | str) -> Permission:
    value = _text(raw)
    known: tuple[Permission, ...] = ("read", "triage", "write", "maintain", "admin")
    return next((p for p in known if p == value), "none")
