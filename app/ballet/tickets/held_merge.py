"""A merge the base's rules hold back, pinned to the head a person approved.

The interpreter's `_merge` asks here in two cases (core/merge_pins.py has the rules):

- the base's rules want the branch up to date (`behind`): GitHub merges the base in
  (`update-branch`, with `expected_head_sha` the approved head, so a head that moved
  is not updated), and the waiting merge is pinned to the commit GitHub made, read
  from the pull request (`updated`); the engine moves its pin there. GitHub answers
  update-branch before the head may have moved: the pull request is read again a few
  times, and a head still unmoved leaves the pin on the approved head, where the
  update's push then asks a person again rather than merge unseen.
- where the repository allows auto-merge and no merge queue is required, GitHub's
  auto-merge is turned on pinned to the approved head (`expectedHeadOid`): GitHub
  merges it once its rules let it (`auto_merge`). GitHub refuses a pull request that
  can merge now ("clean status"): Ballet merges it itself, as anywhere.

`withdraw` undoes either when the head moved to anything else (`WithdrawMerge`).
`update_pinned` brings up to date a pull request whose auto-merge waits while its base
moved on (`UpdateBranch`): GitHub keeps auto-merge on across an update by a writer.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

import structlog

from ballet.core.effects import MergePR, UpdateBranch, WithdrawMerge
from ballet.core.events import MergeResult
from ballet.github.auto_merge import AutoMergeRefused
from ballet.github.forge import Forge, HeadMoved, PullRequest
from ballet.tickets.memo import Memo
from ballet.tickets.merge_queue import QUEUE_RULE
from ballet.tickets.mergeability import READ_AGAIN_AFTER

log = structlog.get_logger("ballet.tickets.held_merge")
# GitHub's words for a pull request its rules let merge now (auto_merge.MERGEABLE_NOW).
_MERGEABLE_NOW = ("clean", "unstable", "has_hooks")


async def bring_up_to_date(
    forge: Forge, memo: Memo, effect: MergePR, pr: PullRequest, now: datetime
) -> MergeResult | None:
    """Update the branch; the merge then waits for the new head's checks, pinned to it."""
    repo, number = effect.repo, effect.number
    approved = effect.sha or pr.head_sha
    try:
        if pr.head_sha != approved:
            raise HeadMoved(f"the head is {pr.head_sha}, not the approved {approved}")
        if not await forge.update_branch(repo, number, expected_head_sha=approved):
            detail = f"{pr.head_ref} cannot be brought up to date with {pr.base_ref}"
            return MergeResult(now=now, result="conflict", detail=detail, repo=repo)
    except HeadMoved as exc:
        # Someone pushed since the approval: the engine hears it and asks again.
        log.info("merge withdrawn: the head moved", repo=repo, pr=number, detail=str(exc))
        await memo.forget_pending_merge(repo, number)
        return None
    if effect.companion:  # its checks are not heard: the engine tries it again at ticks
        return MergeResult(now=now, result="checks_pending", repo=repo)
    head = await _moved_from(forge, repo, number, approved)
    log.info("branch brought up to date; merge waits for checks", repo=repo, pr=number, sha=head)
    await memo.remember_pending_merge(effect.model_copy(update={"sha": head or approved}))
    return None if head is None else MergeResult(now=now, result="updated", sha=head, repo=repo)


async def update_pinned(forge: Forge, effect: UpdateBranch, now: datetime) -> MergeResult | None:
    """Update the branch if its head is still the pinned one; the new head, once read."""
    repo, number = effect.repo, effect.number
    try:
        if not await forge.update_branch(repo, number, expected_head_sha=effect.sha):
            # GitHub turns auto-merge off over the conflict, and the ticket hears that.
            log.info("cannot be brought up to date", repo=repo, pr=number, sha=effect.sha)
            return None
    except HeadMoved as exc:  # its push withdraws the merge and asks again
        log.info("not brought up to date: the head moved", repo=repo, pr=number, detail=str(exc))
        return None
    head = await _moved_from(forge, repo, number, effect.sha)
    log.info("brought up to date while auto-merge waits", repo=repo, pr=number, sha=head)
    return None if head is None else MergeResult(now=now, result="updated", sha=head, repo=repo)


async def _moved_from(forge: Forge, repo: str, number: int, old: str) -> str | None:
    """The pull request's head once GitHub moved it from `old`; None if it did not yet."""
    for delay in (0.0, *READ_AGAIN_AFTER):
        await asyncio.sleep(delay)
        pr = await forge.get_pr(repo, number)
        if pr.head_sha != old:
            return pr.head_sha
    return None


async def by_auto_merge(
    forge: Forge, memo: Memo, effect: MergePR, pr: PullRequest, now: datetime
) -> MergeResult | None:
    """GitHub's auto-merge turned on (`auto_merge`), or refused; None where it is not
    the repository's way or the pull request can merge now (merge it as usual)."""
    if effect.companion or not pr.allow_auto_merge or pr.mergeable_state in _MERGEABLE_NOW:
        return None  # (GitHub would refuse it "in clean status": no call to be told so)
    if QUEUE_RULE in await forge.base_rules(effect.repo, pr.base_ref):
        return None  # the queue lands it (tickets/merge_queue.py)
    head = effect.sha or pr.head_sha
    try:
        await forge.enable_auto_merge(pr.node_id, head, effect.method, effect.commit_title)
    except AutoMergeRefused as exc:
        if exc.mergeable_now:
            return None
        log.info("auto-merge refused", repo=effect.repo, pr=effect.number, detail=str(exc))
        detail = f"GitHub refused to turn auto-merge on: {exc}"
        await memo.forget_pending_merge(effect.repo, effect.number)
        return MergeResult(now=now, result="checks_failed", detail=detail, repo=effect.repo)
    log.info("auto-merge on", repo=effect.repo, pr=effect.number, sha=head)
    await memo.forget_pending_merge(effect.repo, effect.number)
    return MergeResult(now=now, result="auto_merge", sha=head, repo=effect.repo)


async def withdraw(forge: Forge, memo: Memo, effect: WithdrawMerge) -> None:
    """Forget the waiting merge; turn GitHub's auto-merge off if it is on."""
    await memo.forget_pending_merge(effect.repo, effect.number)
    pr = await forge.get_pr(effect.repo, effect.number)
    if pr.auto_merge and pr.state == "open":
        await forge.disable_auto_merge(pr.node_id)
        log.info("auto-merge off: the head moved", repo=effect.repo, pr=effect.number)
