"""Since when a mirror fetch will do for a session being launched (tickets/decided.py):
never earlier than the commit that decided to start it, so a fetch begun before the
decision is never taken for the session's own."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from ballet.core.effects import AnyEffect
from ballet.core.record import Record
from ballet.github.app import GitHubApp
from ballet.tickets.decided import decided_by
from ballet.tickets.store import RecordStore
from fake_github import REPO, FakeGitHub
from github_edge_kit import RecordingLauncher, labeled, ticket_service
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio


class CommitTimes(RecordStore):
    """The real store, noting when each commit ended and which effects it saved."""

    def __init__(self, redis: Redis) -> None:
        super().__init__(redis)
        self.ended: list[tuple[float, tuple[str, ...]]] = []

    async def commit(
        self,
        record: Record,
        effects: Sequence[AnyEffect],
        event_id: str | None,
        **extra: Any,  # what else the store takes: passed on as it is
    ) -> None:
        await super().commit(record, effects, event_id, **extra)
        self.ended.append((time.monotonic(), tuple(e.kind for e in effects)))


async def test_a_launch_counts_from_the_commit_that_decided_it(
    forges: GitHubApp, redis: Redis, fake_github: FakeGitHub, webhooks_dir: Path
) -> None:
    repo = fake_github.repos[REPO]
    repo.default_branch = "master"
    repo.branches = {"master": "a" * 40}
    launcher, store = RecordingLauncher(), CommitTimes(redis)
    service = ticket_service(forges, redis, launcher, store)

    await service.on_delivery(labeled(webhooks_dir))

    ((decided, launched),) = launcher.decided
    # The start's commits: the label's, then the PR opened (fed back). The session is
    # counted from the end of the one that started it, which saved its StartSession:
    # not earlier (a fetch begun before the decision must not do), nor from a later
    # commit (the start's own fetch, for the branch, must do).
    (deciding,) = [end for end, kinds in store.ended if "start_session" in kinds]
    later = [end for end, _ in store.ended if end > deciding]
    assert later, "only one commit: the test would prove less"
    assert deciding <= decided < min(later) and decided <= launched
    assert decided_by() is None  # outside a ticket's lock: not known
