"""GitHub answers `mergeable: null` while it computes a pull request's mergeability
(right after a push to its head or base): Ballet reads again shortly instead of taking
the null for clean or for a conflict."""

from __future__ import annotations

import pytest
from ballet.core.effects import MergePR
from ballet.core.events import MergeResult
from ballet.github.app import GitHubApp
from ballet.tickets.interpret import Interpreter
from ballet.tickets.memo import Memo
from ballet.tickets.mergeability import computed_pr
from fake_github import INSTALLATION_ID, REPO, FakeGitHub, FakePR
from github_edge_kit import NOW, RecordingLauncher
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio

R = f"/repos/{REPO}"


async def test_a_null_is_read_again_until_github_has_computed_it(
    forges: GitHubApp, fake_github: FakeGitHub
) -> None:
    fake_github.prs[(REPO, 3)] = FakePR(3, "b", "main", "3" * 40, "t", "", mergeable=False)
    fake_github.prs[(REPO, 3)].computing = 2
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    forge = forges.for_installation(INSTALLATION_ID)
    pr = await computed_pr(forge, REPO, 3, waits=(0.1, 0.2, 0.4), sleep=sleep)
    assert (pr.mergeable, pr.mergeable_state) == (False, "dirty")  # a conflict, not clean
    assert slept == [0.1, 0.2]
    assert fake_github.requests_to("GET", f"{R}/pulls/3") == 3


async def test_a_null_that_outlasts_the_reads_is_left_as_github_said(
    forges: GitHubApp, fake_github: FakeGitHub
) -> None:
    fake_github.prs[(REPO, 3)] = FakePR(3, "b", "main", "3" * 40, "t", "")
    fake_github.prs[(REPO, 3)].computing = 9

    async def sleep(seconds: float) -> None:
        return None

    forge = forges.for_installation(INSTALLATION_ID)
    pr = await computed_pr(forge, REPO, 3, waits=(0.1, 0.1), sleep=sleep)
    assert pr.mergeable is None and fake_github.prs[(REPO, 3)].computing == 6


async def test_a_landing_right_after_a_push_still_brings_a_behind_branch_up_to_date(
    forges: GitHubApp, redis: Redis, fake_github: FakeGitHub
) -> None:
    interpreter = Interpreter(
        forges.for_installation(INSTALLATION_ID),
        Memo(redis),
        RecordingLauncher(),
        clock=lambda: NOW,
    )
    old = "6" * 40
    pr = FakePR(6, "b", "main", old, "t", "", behind=True)
    pr.computing = 1  # the first read answers `mergeable_state: unknown`, not `behind`
    fake_github.prs[(REPO, 6)] = pr
    updated = await interpreter.apply(MergePR(repo=REPO, number=6, sha=old))
    assert isinstance(updated, MergeResult) and updated.result == "updated"
    assert ("PUT", f"{R}/pulls/6/update-branch") in fake_github.writes()
    assert pr.head_sha != old and not pr.merged
