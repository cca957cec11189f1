"""A pull request's mergeability as GitHub has computed it.

Right after a push to its head or its base, GitHub answers `mergeable: null`
(`mergeable_state: unknown`) while a background job computes it: that is neither
clean nor conflicting, and a read shortly after has the answer. Ballet reads again
a few times before deciding on a null: a base move would otherwise pass a conflict
as clean, and a landing would skip the update a `behind` branch needs and have its
merge refused as if the work were at fault.
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
