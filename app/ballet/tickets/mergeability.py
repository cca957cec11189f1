"""A pull request's mergeability as GitHub has computed it.

Right after a push to its head or its base, GitHub answers `mergeable: null`
(`mergeable_state: unknown`) while a background job computes it: that is neither
clean nor conflicting, and a read shortly after has the answer. Ballet reads again
a few times before deciding on a null: a base move would otherwise pass a conflict
as clean, and a landing would skip the update a `behind` branch needs and have its
merge refused as if the work were at fault.

Whether a branch is behind where its base wants it up to date is not GitHub's one word
either: `behind` is said only where being out of date is all that holds the pull
request back, and a review missing or a required check pending makes it `blocked`,
which hides it (`behind_base`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from ballet.github.forge import Forge, PullRequest

log = structlog.get_logger(__name__)

# Seconds before each read again; GitHub's job usually answers within a second or two.
READ_AGAIN_AFTER: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0)


async def computed_pr(
    forge: Forge,
    repo: str,
    number: int,
    *,
    waits: tuple[float, ...] = READ_AGAIN_AFTER,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> PullRequest:
    """The pull request, read again while GitHub still computes whether it merges;
    after the last read, as GitHub last answered (`mergeable` may still be None)."""
    pr = await forge.get_pr(repo, number)
    for delay in waits:
        if pr.mergeable is not None or pr.merged or pr.state != "open":
            return pr
        await sleep(delay)
        pr = await forge.get_pr(repo, number)
    if pr.mergeable is None and not pr.merged and pr.state == "open":
        log.info("mergeability not computed yet", repo=repo, pr=number, reads=len(waits) + 1)
    return pr


async def behind_base(forge: Forge, repo: str, pr: PullRequest) -> bool:
    """Whether `pr` must be brought up to date with its base before its rules let it
    merge: GitHub says `behind`; or it says `blocked`, the base's rules want branches up
    to date (strict required checks) and the base has commits the head has not."""
    if pr.mergeable_state == "behind":
        return True
    if pr.mergeable_state != "blocked" or not await forge.wants_up_to_date(repo, pr.base_ref):
        return False
    behind = await forge.behind_by(repo, pr.base_ref, pr.head_sha)
    if behind:
        log.info("behind its base, which GitHub's `blocked` hid", repo=repo, pr=pr.number)
    return behind > 0
