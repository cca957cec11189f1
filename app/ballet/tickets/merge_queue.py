"""Landing where the base's rules require GitHub's merge queue: join it instead of merging.

The interpreter asks here before it merges, a companion's pull request as the
ticket's own (its result names the repository). The queue then merges (or drops) the
pull request on its own; the engine hears how from the `merge_group` and
`pull_request` `dequeued`/`closed` webhooks (core/merge_queue.py).
"""

from __future__ import annotations

from datetime import datetime

import structlog

from ballet.core.effects import MergePR
from ballet.core.events import MergeResult
from ballet.github.forge import Forge, PullRequest
from ballet.github.merge_queue import QueueRefused

log = structlog.get_logger("ballet.tickets.merge_queue")

QUEUE_RULE = "merge_queue"


async def land_by_queue(
    forge: Forge, effect: MergePR, pr: PullRequest, now: datetime
) -> MergeResult | None:
    """The pull request joined its base's merge queue (`queued`), or the queue refused it;
    None where the base's rules do not require the queue (merge as usual)."""
    if QUEUE_RULE not in await forge.base_rules(effect.repo, pr.base_ref):
        return None
    # The head Ballet's checks passed on: a head that moved since is refused, not queued.
    head = effect.sha or pr.head_sha
    try:
        await forge.enqueue_pr(pr.node_id, head)
    except QueueRefused as exc:
        log.info("merge queue refused", repo=effect.repo, pr=effect.number, detail=str(exc))
        detail = f"GitHub's merge queue refused the pull request: {exc}"
        return MergeResult(now=now, result="checks_failed", detail=detail, repo=effect.repo)
    log.info("pull request queued", repo=effect.repo, pr=effect.number, sha=head)
    return MergeResult(now=now, result="queued", sha=head, repo=effect.repo)
