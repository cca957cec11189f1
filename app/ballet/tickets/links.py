"""A ticket's epic and lineage for its sessions, read from GitHub and kept in Redis.

What is read, in as few requests as the REST API allows:
- the parent (`GET .../issues/{n}/parent`), only when the issue says it has one
  (`parent_issue_url`; a GitHub that does not say is asked), then the parent's
  sub-issues (one page: GitHub allows 100 per parent);
- the ticket's comments (the list the edge reads anyway, usually a 304), and one
  `GET .../issues/{m}` per issue or pull request its text names that is not
  already known, at most `MAX_REFERENCE_LOOKUPS`;
- its timeline's cross-references (`GET .../issues/{n}/timeline`, a few pages),
  and the ticket's own pull request (`GET .../pulls?head=`), left out of them.
How a sibling Ballet ran stands comes from Redis (its live record), else from its
`ballet:*` labels: never a request per sibling.
Who is a writer (`core.lineage` decides whose titles are shown): one permission
read per distinct author whose item would be shown, and only when no writer
already stands behind it (the ticket's description, a writer's comment); none for
bots.

The result is kept per ticket for `TTL_SECONDS`, keyed by the issue's description,
so the stages of one ticket share one read and an edited description is read anew.
What is kept is what sessions see, titles already withheld; an entry kept under an
older rule of what is shown is read anew (`RULE`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog
from pydantic import BaseModel, ValidationError
from redis.asyncio import Redis

from ballet.core import lineage as core
from ballet.core.events import WRITE_PERMISSIONS
from ballet.core.record import Record
from ballet.github.forge import Forge, ForgeError, ForgeUnavailable, IssueBrief

log = structlog.get_logger("ballet.tickets.links")

TTL_SECONDS = 30 * 60
# Raised when what a kept entry shows would change: 2, only writers' words; 3,
# Ballet's own pull requests in the ticket's repository too.
RULE = 3


class _Cached(BaseModel):
    rule: int
    body_sha: str
    links: core.TicketLinks


class _Writers:
    """Who has write permission on the ticket's repository, asked of GitHub once per
    login within one read; a read that fails for good counts as not a writer."""

    def __init__(self, forge: Forge, repo: str) -> None:
        self._forge = forge
        self._repo = repo
        self._asked: dict[str, bool] = {}

    async def any_of(self, logins: tuple[str, ...]) -> bool:
        """Whether one of `logins` is a writer, asking in order until one is."""
        for login in logins:
            if await self._is_writer(login):
                return True
        return False

    async def _is_writer(self, login: str) -> bool:
        key = login.casefold()
        if key not in self._asked:
            asked = self._forge.permission(self._repo, login)
            self._asked[key] = await _partial(asked, "none", "permission") in WRITE_PERMISSIONS
        return self._asked[key]

    @property
    def known(self) -> frozenset[str]:
        return frozenset(login for login, writes in self._asked.items() if writes)


def item_of(brief: IssueBrief) -> core.Item:
    state: core.ItemState = "merged" if brief.merged else brief.state
    kind: core.ItemKind = "pull_request" if brief.is_pull else "issue"
    return core.Item(
        repo=brief.repo,
        number=brief.number,
        kind=kind,
        title=brief.title,
        state=state,
        url=brief.url,
        author=brief.author,
    )


def _key(repo: str, number: int) -> core.Ref:
    return (repo.lower(), number)


class TicketLinksReader:
    def __init__(
        self,
        redis: Redis,
        forge_for: Callable[[str], Awaitable[Forge]],
        record_of: Callable[[str], Awaitable[Record | None]],
        *,
        prefix: str = "ballet:links",
        ttl_seconds: int = TTL_SECONDS,
        own_login: str | None = None,
    ) -> None:
        self._redis = redis
        # Ballet's own bot: its pull requests in the ticket's repository are shown.
        self._own_login = own_login
        self._forge_for = forge_for
        # The live record of a ticket (`owner/repo#n`) Redis holds, None otherwise.
        self._record_of = record_of
        self._prefix = prefix
        self._ttl = ttl_seconds

    async def read(
        self,
        repo: str,
        number: int,
        body: str,
        *,
        has_parent: bool | None,
        branch: str | None = None,
        own_pr: int | None = None,
    ) -> core.TicketLinks:
        """The ticket's links; `has_parent` None: the issue did not say. The pull
        request from the ticket's `branch` is the ticket's own, not its lineage
        (`own_pr` when the record knows it: then it is not looked up)."""
        key = f"{self._prefix}:{repo}#{number}"
        body_sha = hashlib.sha256(body.encode()).hexdigest()
        cached = _kept(await self._redis.get(key))
        if cached is not None and cached.body_sha == body_sha:
            return cached.links
        forge = await self._forge_for(repo)
        links = await self._fetch(forge, repo, number, body, has_parent, branch, own_pr)
        value = _Cached(rule=RULE, body_sha=body_sha, links=links).model_dump_json()
        await self._redis.set(key, value, ex=self._ttl)
        return links

    async def _fetch(
        self,
        forge: Forge,
        repo: str,
        number: int,
        body: str,
        has_parent: bool | None,
        branch: str | None,
        own_pr: int | None,
    ) -> core.TicketLinks:
        known: dict[core.Ref, core.Item] = {}
        writers = _Writers(forge, repo)
        skip = [(repo, number)]
        # Opened before the ticket's first session: it names the ticket ("Closes #n").
        if own_pr is None and branch is not None:
            own = await _partial(forge.find_pr_by_head(repo, branch), None, "own pull request")
            own_pr = own.number if own is not None else None
        if own_pr is not None:
            skip.append((repo, own_pr))
        epic = None
        if has_parent is not False:
            epic = await _partial(self._epic(forge, repo, number, known, writers), None, "epic")
        named = await _partial(self._named(forge, repo, number, body), [], "comments")
        referenced = await _partial(self._referenced(forge, named, known), [], "refs")
        briefs = await _partial(forge.cross_references(repo, number), (), "timeline")
        referencing = [item_of(b) for b in briefs]
        skip += known
        # Permission is asked only of those who could show an item the lineage lists.
        by_ref = {r.ref: r for r in named}
        for item, _ in core.lineage_items(referenced, referencing, skip):
            await writers.any_of(core.vouchers(item, by_ref.get(_key(item.repo, item.number))))
        ballet = core.BalletIn(login=self._own_login, repo=repo) if self._own_login else None
        lineage, left_out = core.build_lineage(
            referenced, referencing, skip, named=named, writers=writers.known, ballet=ballet
        )
        return core.TicketLinks(epic=epic, lineage=lineage, lineage_left_out=left_out)

    async def _epic(
        self,
        forge: Forge,
        repo: str,
        number: int,
        known: dict[core.Ref, core.Item],
        writers: _Writers,
    ) -> core.Epic | None:
        parent = await forge.parent_issue(repo, number)
        if parent is None:
            return None
        subs = await forge.sub_issues(parent.repo, parent.number)
        runs: dict[core.Ref, core.BalletRun] = {}
        for sub in subs:
            run = await self._run_of(sub)
            if run is not None:
                runs[_key(sub.repo, sub.number)] = run
        epic, items = item_of(parent), [item_of(s) for s in subs]
        known.update({_key(i.repo, i.number): i for i in [epic, *items]})
        for item in [epic, *core.listed_sub_issues(items, (repo, number))]:
            await writers.any_of(core.vouchers(item, None))
        return core.build_epic(epic, parent.body, items, (repo, number), runs, writers.known)

    async def _run_of(self, sub: IssueBrief) -> core.BalletRun | None:
        record = await self._record_of(f"{sub.repo}#{sub.number}")
        if record is None:
            return core.run_from_labels(sub.labels)
        pr = record.pr_number
        base = sub.url.rsplit("/issues/", 1)[0]
        status = "question" if record.waiting and record.waiting.kind == "question" else None
        return core.BalletRun(
            status=status or record.status,
            pr_number=pr,
            pr_url=f"{base}/pull/{pr}" if pr is not None else None,
        )

    async def _named(self, forge: Forge, repo: str, number: int, body: str) -> list[core.Reference]:
        """What the ticket's description and comments name, and who named it."""
        comments = [(c.author, c.body) for c in await forge.list_comments(repo, number)]
        return core.ticket_references((repo, number), body, comments)

    async def _referenced(
        self, forge: Forge, named: list[core.Reference], known: dict[core.Ref, core.Item]
    ) -> list[core.Item]:
        found: list[core.Item] = []
        # The epic and its sub-issues are shown as such: no request for them here.
        unknown = [r.ref for r in named if r.ref not in known][: core.MAX_REFERENCE_LOOKUPS]
        for ref_repo, ref_number in unknown:
            brief = await _partial(forge.issue_brief(ref_repo, ref_number), None, "issue")
            if brief is not None:
                found.append(item_of(brief))
        return found


def _kept(raw: bytes | str | None) -> _Cached | None:
    """A kept entry, unless it was kept under another rule of what is shown."""
    if raw is None:
        return None
    try:
        cached = _Cached.model_validate_json(raw)
    except ValidationError:
        return None
    return cached if cached.rule == RULE else None


T = TypeVar("T")


async def _partial(work: Awaitable[T], instead: T, what: str) -> T:
    """`work`, or `instead` when GitHub refuses it for good: a missing part of the
    lineage must not stop the session. Outages and rate limits still defer it."""
    try:
        return await work
    except ForgeUnavailable:
        raise
    except ForgeError as exc:
        log.warning("ticket links: part unavailable", part=what, error=str(exc))
        return instead
