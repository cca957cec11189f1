"""The record store on a real Valkey: outbox order, applied window, ticket lookup."""

from __future__ import annotations

import asyncio
import base64
import zlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from ballet.core.effects import React, SetLabels
from ballet.core.pinned_text import pin
from ballet.core.record import Record, as_on_github, encode_record
from ballet.github.forge import Comment, IssueBrief, IssueDetails
from ballet.github.intents import TicketTarget
from ballet.tickets.store import RecordStore, tracking_marker
from github_edge_kit import stored_record
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 1, 2, tzinfo=UTC)
REPO = "octo/demo"


def record(**changes: object) -> Record:
    return stored_record(REPO, **changes)


@pytest.fixture(params=[False, True], ids=["bytes", "text"])
async def store(
    github_redis_url: str, request: pytest.FixtureRequest
) -> AsyncIterator[RecordStore]:
    client = Redis.from_url(github_redis_url, decode_responses=request.param)
    await client.flushdb()
    try:
        yield RecordStore(client)
    finally:
        await client.aclose()


async def test_outbox_keeps_order_and_applied_ids_dedupe(store: RecordStore) -> None:
    rec = record(version=3, pr_number=12, branch="ballet/7-t")
    effects = [
        SetLabels(repo=REPO, number=7, labels=("ballet:running",)),
        React(repo=REPO, comment_id=5),
    ]
    await store.commit(rec, effects, "delivery:a:0")
    assert await store.was_applied(rec.key, "delivery:a:0")
    assert not await store.was_applied(rec.key, "delivery:b:0")
    first = await store.next_effect(rec.key)
    assert first is not None and first.effect == effects[0]
    await store.effect_done(rec.key, first)
    await store.effect_done(rec.key, first)  # twice: the second is a no-op
    second = await store.next_effect(rec.key)
    assert second is not None and second.effect == effects[1]
    await store.effect_done(rec.key, second)
    assert await store.next_effect(rec.key) is None


async def test_tickets_are_found_by_pr_branch_or_linked_issue(store: RecordStore) -> None:
    rec = record(version=1, pr_number=12, branch="ballet/7-t")
    await store.commit(rec, [], None)
    assert await store.find_ticket(TicketTarget(repo=REPO, pr=12)) == f"{REPO}#7"
    assert await store.find_ticket(TicketTarget(repo=REPO, branch="ballet/7-t")) == f"{REPO}#7"
    assert await store.find_ticket(TicketTarget(repo=REPO, pr=99, linked_issue=3)) == f"{REPO}#3"
    assert await store.find_ticket(TicketTarget(repo=REPO, pr=99)) is None
    await store.remember_installation(REPO, 77)
    assert await store.installation_of(REPO) == 77
    await store.forget_repositories([REPO])
    assert await store.installation_of(REPO) is None


class _SlowTrackingComment:
    """GitHub as seen by a rebuild that is slow: the tracking comment, still at the
    version it was written with, handed over only once `release` is set."""

    def __init__(self, stale: Record) -> None:
        self.body = f"{tracking_marker(stale.key)}\n{encode_record(stale)}"
        self.asked = asyncio.Event()
        self.release = asyncio.Event()

    async def list_comments(self, repo: str, number: int) -> list[Comment]:
        self.asked.set()
        await self.release.wait()
        return [Comment(id=1, body=self.body, author="ballet[bot]", html_url="")]


async def test_a_late_rebuild_never_overwrites_a_newer_committed_record(
    store: RecordStore,
) -> None:
    # Redis lost everything; a reader without the ticket's lock (a session job) starts
    # rebuilding from the tracking comment, and meanwhile the lock's holder commits
    # the next version, which the comment has not caught up with yet.
    stale, newer = record(version=4, stage="implement"), record(version=5, stage="review")
    github = _SlowTrackingComment(stale)
    reader = asyncio.create_task(store.load(stale.key, github))  # type: ignore[arg-type]
    await github.asked.wait()
    await store.commit(newer, (), "session-finished")
    github.release.set()

    assert await reader == newer
    assert await store.load(stale.key, github) == newer  # type: ignore[arg-type]


class _Comments:
    def __init__(self, *comments: Comment) -> None:
        self.comments = list(comments)

    async def list_comments(self, repo: str, number: int) -> list[Comment]:
        return self.comments


async def test_a_record_is_rebuilt_only_from_the_apps_own_tracking_comment(
    github_redis_url: str,
) -> None:
    # Anyone may comment on a public issue: a passer-by posts the tracking marker with
    # a state block of their own making (a later version, no approvers, done) first.
    real = record(version=3, stage="implement")
    forged = record(version=99, status="done", stage=None)
    marker = tracking_marker(real.key)
    github = _Comments(
        Comment(id=1, body=f"{marker}\n{encode_record(forged)}", author="mallory", html_url=""),
        Comment(id=2, body=f"{marker}\n{encode_record(real)}", author="Ballet[bot]", html_url=""),
    )
    client = Redis.from_url(github_redis_url)
    await client.flushdb()
    try:
        trusting = await RecordStore(client).load(real.key, github)  # type: ignore[arg-type]
        assert trusting == forged  # what a store that trusts any author would do
        await client.flushdb()
        own = RecordStore(client, own_login="ballet[bot]")
        assert await own.load(real.key, github) == real  # type: ignore[arg-type]
    finally:
        await client.aclose()


class _Issues:
    """GitHub as a rebuild reads it: comments per issue or PR, and the issue's
    cross-references (the PRs whose text names it), oldest first."""

    def __init__(self, comments: dict[int, list[Comment]], naming: list[IssueBrief]) -> None:
        self.comments, self.naming = comments, naming
        self.read: list[int] = []

    async def list_comments(self, repo: str, number: int) -> list[Comment]:
        self.read.append(number)
        return self.comments.get(number, [])

    async def cross_references(self, repo: str, number: int) -> tuple[IssueBrief, ...]:
        return tuple(self.naming)


def pull(number: int, author: str) -> IssueBrief:
    return IssueBrief(
        repo=REPO, number=number, title="t", state="open", url="", is_pull=True, author=author
    )


async def test_the_record_is_found_on_the_apps_pr_that_names_the_issue(
    github_redis_url: str,
) -> None:
    # Since issue 24 the issue keeps no pointer: a ticket's PR is the App's PR whose
    # "Closes #7" GitHub lists on the issue's timeline. A passer-by's PR naming the
    # issue, with a forged tracking comment of its own, is not even read.
    real = record(version=6, stage="implement", pr_number=12)
    forged = record(version=99, status="done", stage=None, pr_number=13)
    marker = tracking_marker(real.key)
    github = _Issues(
        {
            12: [
                Comment(
                    id=1, body=f"{marker}\n{encode_record(real)}", author="ballet[bot]", html_url=""
                )
            ],
            13: [
                Comment(
                    id=2,
                    body=f"{marker}\n{encode_record(forged)}",
                    author="ballet[bot]",
                    html_url="",
                )
            ],
        },
        [pull(12, "Ballet[bot]"), pull(13, "mallory")],
    )
    client = Redis.from_url(github_redis_url)
    await client.flushdb()
    try:
        store = RecordStore(client, own_login="ballet[bot]")
        assert await store.load(real.key, github) == real  # type: ignore[arg-type]
        assert github.read == [7, 12]  # the issue, then the App's PR only
    finally:
        await client.aclose()


class _IssueNow(_Comments):
    """GitHub after Redis was lost: the tracking comment, and the issue as it is now."""

    def __init__(self, comment: Comment, title: str, body: str) -> None:
        super().__init__(comment)
        self.issue = IssueDetails(body=body, labels=(), url="", title=title)

    async def get_issue(self, repo: str, number: int) -> IssueDetails:
        return self.issue


@pytest.mark.parametrize(
    ("title", "body", "known"),
    [("Add a flag", "as labelled", True), ("Add a flag", "edited since", False)],
    ids=["unchanged", "edited"],
)
async def test_a_rebuilt_record_gets_its_pinned_words_back_only_from_the_pinned_issue(
    store: RecordStore, title: str, body: str, known: bool
) -> None:
    pinned = pin("Add a flag", "as labelled", "carol", "labelled", NOW)
    real = record(version=3, stage="implement", text=pinned)
    block = encode_record(real)
    assert "as labelled" not in zlib.decompress(base64.b64decode(block.split()[3])).decode()
    comment = Comment(id=1, body=f"{tracking_marker(real.key)}\n{block}", author="b", html_url="")
    rebuilt = await store.load(real.key, _IssueNow(comment, title, body))  # type: ignore[arg-type]
    assert rebuilt is not None and rebuilt.text is not None
    assert rebuilt.text.known is known and rebuilt.text.digest == pinned.digest
    assert rebuilt == (real if known else as_on_github(real))
    assert await store.cached(real.key) == rebuilt  # what Redis keeps from now on
