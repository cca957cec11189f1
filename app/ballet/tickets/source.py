"""What a session job reads about its ticket besides the StartSession effect.

The engine's effect carries the ticket's title and author, not the issue's
labels or URL (they change on GitHub and the record need not copy them), so
the job reads the issue once; the record gives the pinned title and body, the
pinned custom skills and the answered questions; the forge gives the clone URL and a short-lived
installation token, which reaches git per command and never a file.

Every read goes through a token limited to the one repository it reads, able to
read issues, pull requests and checks and nothing else (`TokenScope.reads`):
the session job's and the reconciler's reads never hold a token that could write,
or reach a repository of the installation the ticket does not touch. A ticket's
lineage may span the installation (`reader_for`: issues and pull requests, read
only), and so may the sweep for live tickets after Redis was lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from ballet.core.record import Record, split_key, ticket_key
from ballet.github.forge import Forge, ForgeError, ForgeUnavailable, IssueDetails, RateLimited
from ballet.github.token_scope import LINEAGE_READS, TokenScope
from ballet.tickets.live import LIVE_LABELS
from ballet.tickets.store import RecordStore
from ballet.tickets.ticket_forges import InstallationForges


class TicketSource(Protocol):
    async def issue(self, repo: str, number: int) -> IssueDetails: ...

    async def record(self, ticket: str) -> Record | None:
        """The ticket's live record (`owner/repo#n`), or None when there is none."""
        ...

    async def clone_url(self, repo: str) -> str: ...

    async def git_token(self, repo: str) -> str | None: ...

    async def default_branch(self, repo: str) -> str:
        """The repository's default branch: a companion's base (core/companions.py)."""
        ...

    async def installation_of(self, repo: str) -> int | None:
        """The App installation on `repo`, whose monthly spend its sessions count in."""
        ...

    async def live_on_github(self) -> list[str]:
        """The tickets whose issues GitHub shows as live (their labels), in every
        installation: what to sweep when Redis lost its set of live tickets."""
        ...


GIT_TOKEN_TRIES = 4
GIT_TOKEN_MAX_WAIT = 60.0


class GitHubTicketSource:
    """`TicketSource` on the GitHub edge: the record store and a forge per installation."""

    def __init__(
        self,
        store: RecordStore,
        forges: InstallationForges,
        *,
        clone_urls: Callable[[str], str] | None = None,
        find_installation: Callable[[str], Awaitable[int | None]] | None = None,
        installations: Callable[[], Awaitable[tuple[int, ...]]] | None = None,
    ) -> None:
        self._store = store
        # Asked (with the App's JWT) when Redis no longer knows the repository's
        # installation: Redis was lost, and a running session must still finish.
        self._find_installation = find_installation
        self._installations = installations
        self._forges = forges
        # Where to clone from instead of the forge's URL (a local mirror, a test remote).
        self._clone_urls = clone_urls

    async def forge_for(self, repo: str) -> Forge:
        """A forge of the installation on `repo`, reading that repository alone."""
        return await self._forge(repo)

    async def reader_for(self, repo: str) -> Forge:
        """A forge of the installation on `repo` reading issues and pull requests in
        any of its repositories: a ticket's lineage may be anywhere there."""
        return self._forges(await self._installation(repo), TokenScope.everywhere(LINEAGE_READS))

    async def _forge(self, repo: str) -> Forge:
        return self._forges(await self._installation(repo), TokenScope.reads((repo,)))

    async def _installation(self, repo: str) -> int:
        installation = await self._store.installation_of(repo)
        if installation is None and self._find_installation is not None:
            installation = await self._find_installation(repo)
            if installation is not None:
                await self._store.remember_installation(repo, installation)
        if installation is None:
            raise ForgeError(
                f"no App installation is known for {repo}; is Ballet still installed there?"
            )
        return installation

    async def issue(self, repo: str, number: int) -> IssueDetails:
        return await (await self._forge(repo)).get_issue(repo, number)

    async def default_branch(self, repo: str) -> str:
        return await (await self._forge(repo)).default_branch(repo)

    async def installation_of(self, repo: str) -> int | None:
        return await self._store.installation_of(repo)

    async def live_on_github(self) -> list[str]:
        if self._installations is None:
            return []
        found: list[str] = []
        labels = TokenScope.everywhere({"issues": "read"})  # every repository, its labels
        for installation in await self._installations():
            forge = self._forges(installation, labels)
            for repo in await forge.repositories():
                await self._store.remember_installation(repo, installation)
                for label in LIVE_LABELS:
                    found += (
                        ticket_key(repo, n) for n in await forge.open_issues_labelled(repo, label)
                    )
        return sorted(set(found))

    async def record(self, ticket: str) -> Record | None:
        repo, _ = split_key(ticket)
        return await self._store.load(ticket, await self._forge(repo))

    async def clone_url(self, repo: str) -> str:
        if self._clone_urls is not None:
            return self._clone_urls(repo)
        return (await (await self._forge(repo)).git_remote(repo)).url

    async def git_token(self, repo: str) -> str | None:
        # githubkit caches the installation token until shortly before it expires.
        # Asked mid-session (for the clone and the push): a GitHub that is briefly
        # failing or rate limiting is waited out here, a few times, rather than
        # losing the agent's finished work to it.
        for attempt in range(GIT_TOKEN_TRIES):
            try:
                return (await (await self._forge(repo)).git_remote(repo)).token
            except RateLimited as exc:
                if attempt + 1 == GIT_TOKEN_TRIES:
                    raise
                await asyncio.sleep(min(exc.retry_after_seconds, GIT_TOKEN_MAX_WAIT))
            except ForgeUnavailable:
                if attempt + 1 == GIT_TOKEN_TRIES:
                    raise
                await asyncio.sleep(min(2.0**attempt, GIT_TOKEN_MAX_WAIT))
        raise AssertionError("unreachable")
