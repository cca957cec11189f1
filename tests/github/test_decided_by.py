"""Since when a mirror fetch will do for a session being launched (tickets/decided.py):
never earlier than the commit that decided to start it, so a fetch begun before the
decision is never taken for the session's own."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from ballet.github.app import GitHubApp
from ballet.tickets.decided import decided_by
from ballet.tickets.store import RecordStore
from fake_github import REPO, FakeGitHub
from github_edge_kit import RecordingLauncher, ticket_service
from redis.asyncio import Redis
from test_ticket_service import labeled

pytestmark = pytest.mark.anyio


class CommitTimes(RecordStore):
    """The real store, noting when each commit ended."""

    def __init__(self, redis: Redis) -> None:
        super().__init__(redis)
        self.ended: list[float] = []

    async def commit(self, *args: Any, **kwargs: Any) -> None:
        await super().commit(*args, **kwargs)
        self.ended.append(time.monotonic())


async def test_a_launch_counts_from_the_commit_that_decided_it(
    forges: GitHubApp, redis: Redis, fake_github: FakeGitHub, webhooks_dir: Path
) -> None:
    repo = fake_github.repos[REPO]
    repo.default_branch = "master"
    repo.branches = {"master": "a" * 40}
    launcher, store = RecordingLauncher(), CommitTimes(redis)
    service = ticket_service(forges, redis, launcher, store)
    began = time.monotonic()

    await service.on_delivery(labeled(webhooks_dir))

    ((decided, launched),) = launcher.decided
    assert decided is not None
    # The start's commits (the label, then the PR opened, fed back) came before the
    # launch; the last of them may be the one that decided it. A fetch begun before
    # it (the lock's taking, say) must not do.
    last = max(t for t in store.ended if t <= launched)
    assert began < last <= decided <= launched
    assert decided_by() is None  # outside a ticket's lock: not known
