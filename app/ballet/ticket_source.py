"""What a session job reads about its ticket besides the StartSession effect.

The engine's effect carries the ticket's title and author, not its body,
labels or URL (they change on GitHub and the record need not copy them), so
the job reads the issue once; the record gives the pinned custom skills and
the answered questions; the forge gives the clone URL and a short-lived
installation token, which reaches git per command and never a file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from githubkit import GitHub, TokenAuthStrategy
from githubkit.exception import RateLimitExceeded, RequestError, RequestFailed
from pydantic import BaseModel, ConfigDict

from ballet.core.record import Record
from ballet.github.forge import Forge, ForgeError, ForgeUnavailable, NotFound, RateLimited
from ballet.github.store import RecordStore, split_key


@dataclass(frozen=True)
class IssueDetails:
    body: str
    labels: tuple[str, ...]
    url: str
    # Whether it is a sub-issue (`parent_issue_url`); None: this GitHub does not say.
    has_parent: bool | None = None


class TicketSource(Protocol):
    async def issue(self, repo: str, number: int) -> IssueDetails: ...

    async def record(self, ticket: str) -> Record | None:
        """The ticket's live record (`owner/repo#n`), or None when there is none."""
        ...

    async def clone_url(self, repo: str) -> str: ...

    async def git_token(self, repo: str) -> str | None: ...


GIT_TOKEN_TRIES = 4
GIT_TOKEN_MAX_WAIT = 60.0


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Label(_Lenient):
    name: str | None = None


class _Issue(_Lenient):
    body: str | None = None
    html_url: str
    # GitHub documents a label as an object or a bare name.
    labels: list[_Label | str] = []
    parent_issue_url: str | None = None

    @property
    def label_names(self) -> tuple[str, ...]:
        names = (lbl if isinstance(lbl, str) else lbl.name for lbl in self.labels)
        return tuple(n for n in names if n)


class GitHubTicketSource:
    """`TicketSource` on the GitHub edge: the record store and a forge per installation."""

    def __init__(
        self,
        store: RecordStore,
        forges: Callable[[int], Forge],
        *,
        api_url: str,
        clone_urls: Callable[[str], str] | None = None,
        find_installation: Callable[[str], Awaitable[int | None]] | None = None,
    ) -> None:
        self._store = store
        # Asked (with the App's JWT) when Redis no longer knows the repository's
        # installation: Redis was lost, and a running session must still finish.
        self._find_installation = find_installation
        self._forges = forges
        self._api_url = api_url
        # Where to clone from instead of the forge's URL (a local mirror, a test remote).
        self._clone_urls = clone_urls

    async def forge_for(self, repo: str) -> Forge:
        """The forge of the installation on `repo`."""
        return await self._forge(repo)

    async def _forge(self, repo: str) -> Forge:
        installation = await self._store.installation_of(repo)
        if installation is None and self._find_installation is not None:
            installation = await self._find_installation(repo)
            if installation is not None:
                await self._store.remember_installation(repo, installation)
        if installation is None:
            raise ForgeError(
                f"no App installation is known for {repo}; is Ballet still installed there?"
            )
        return self._forges(installation)

    async def issue(self, repo: str, number: int) -> IssueDetails:
        token = (await (await self._forge(repo)).git_remote(repo)).token
        # No automatic retries: a rate limit defers the job instead of sleeping in it.
        gh: GitHub[Any] = GitHub(
            TokenAuthStrategy(token), base_url=self._api_url, auto_retry=False, user_agent="ballet"
        )
        path = f"/repos/{repo}/issues/{number}"
        try:
            response = await gh.arequest("GET", path)
        except RateLimitExceeded as exc:
            wait = max(exc.retry_after.total_seconds(), 1.0)
            raise RateLimited(wait, reason=f"GET {path}: rate limited") from exc
        except RequestFailed as exc:
            status = exc.response.status_code
            text = f"GET {path}: {status}"
            if status == 404:
                raise NotFound(f"{text}; was the issue deleted or transferred?") from exc
            kind = ForgeUnavailable if status >= 500 else ForgeError
            raise kind(text, status=status) from exc
        except RequestError as exc:
            raise ForgeUnavailable(f"GET {path}: {exc!r}") from exc
        data = _Issue.model_validate(response.raw_response.json())
        return IssueDetails(
            body=data.body or "",
            labels=data.label_names,
            url=data.html_url,
            has_parent=(
                data.parent_issue_url is not None
                if "parent_issue_url" in data.model_fields_set
                else None
            ),
        )

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
