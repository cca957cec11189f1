"""GitHub's merge queue, for a base branch whose rules require it (`merge_queue` rule).

A pull request joins with GraphQL `enqueuePullRequest` once it meets the other rules.
The first entry of a base gets a merge group: its merge (by the rule's
`merge_method`) onto the base's tip, pushed to
`refs/heads/gh-readonly-queue/{base}/pr-{number}-{head sha}`, announced with
`merge_group.checks_requested`, and run by the repository's CI as any push is.
When every required status check has passed on the group's commit the base is
moved to it (`merge_group.destroyed` reason `merged`, then `pull_request.closed`);
a required check that fails takes the pull request out (`destroyed` reason
`dequeued`, `pull_request.dequeued` reason `CI_FAILURE`), as does
`dequeuePullRequest` (`MANUAL`) and a conflict with the base (`MERGE_CONFLICT`).
One group is built at a time per base: the next entry's is built on the new base.
Not modelled: groups of several pull requests and `check_response_timeout_minutes`.

Everything but taking the repository's ref lock is synchronous, so one queue step
never interleaves with another or with a push.
"""

from __future__ import annotations

import asyncio

from ballet.sandbox import events, gitcache, gitrepo, merging, pullview, pushes, rulesets
from ballet.sandbox.handler import now
from ballet.sandbox.state import Pull, QueueEntry, Repo, Sandbox

QUEUE_BOT = "github-merge-queue[bot]"


class QueueRefusal(Exception):
    """Why a pull request cannot join or leave the queue (a GraphQL error's message)."""


def watch(sb: Sandbox) -> None:
    """Judge a merge group again whenever checks are reported on its commit."""

    def reported(repo: Repo, sha: str) -> None:
        entry = next((e for e in repo.merge_queue if e.group_sha == sha), None)
        if entry is not None:
            task = asyncio.get_running_loop().create_task(advance(sb, repo, entry.base_ref))
            sb.tasks.add(task)
            task.add_done_callback(sb.tasks.discard)

    sb.check_listeners.append(reported)


def entry_of(repo: Repo, pr: Pull) -> QueueEntry | None:
    return next((e for e in repo.merge_queue if e.pull_number == pr.number), None)


def position(repo: Repo, entry: QueueEntry) -> int:
    """1 for the first pull request of its base's queue."""
    ahead = repo.merge_queue[: repo.merge_queue.index(entry)]
    return 1 + sum(1 for e in ahead if e.base_ref == entry.base_ref)


async def enqueue(
    sb: Sandbox, repo: Repo, pr: Pull, expected_head: str | None, sender: str
) -> QueueEntry:
    if pr.merged or repo.issues[pr.number].state != "open":
        raise QueueRefusal("Pull request is closed and cannot be added to the merge queue")
    if rulesets.queue_rule(repo, pr.base_ref) is None:
        raise QueueRefusal(f"Merge queue is not enabled for the branch {pr.base_ref}")
    if pr.draft:
        raise QueueRefusal("Pull request is in draft state and cannot be added to the merge queue")
    if expected_head is not None and expected_head != pr.head_sha:
        raise QueueRefusal(
            f"The pull request's head is {pr.head_sha}, not the expectedHeadOid {expected_head}"
        )
    already = entry_of(repo, pr)
    if already is not None:
        return already
    if pullview.mergeable(repo, pr) is False:
        raise QueueRefusal("Pull request has merge conflicts and cannot be added to the queue")
    violations = rulesets.merge_violations(repo, pr, "merge", enqueuing=True)
    if violations:
        raise QueueRefusal("Pull request is not mergeable: " + " ".join(violations))
    entry = QueueEntry(sb.next_id(), pr.number, pr.base_ref, pr.head_sha, sender, now())
    repo.merge_queue.append(entry)
    events.pull_request(sb, repo, pr.number, "enqueued", sender)
    await advance(sb, repo, pr.base_ref)
    return entry


async def dequeue(sb: Sandbox, repo: Repo, pr: Pull, sender: str) -> QueueEntry:
    entry = entry_of(repo, pr)
    if entry is None:
        raise QueueRefusal("Pull request is not in the merge queue")
    async with repo.ref_lock:
        _remove(sb, repo, entry, "MANUAL", sender)
        _advance(sb, repo, entry.base_ref)
    return entry


async def advance(sb: Sandbox, repo: Repo, base_ref: str) -> None:
    async with repo.ref_lock:
        _advance(sb, repo, base_ref)


def _advance(sb: Sandbox, repo: Repo, base_ref: str) -> None:
    """Give the base's first entry a merge group, and merge or drop it on its checks."""
    while first := next((e for e in repo.merge_queue if e.base_ref == base_ref), None):
        if first.group_sha is None and not _build(sb, repo, first):
            _remove(sb, repo, first, "MERGE_CONFLICT", QUEUE_BOT)
            continue
        contexts = rulesets.required_contexts(repo, base_ref)
        assert first.group_sha is not None
        results = rulesets.check_results(repo, first.group_sha)
        if any(results.get(c) == "failure" for c in contexts):
            _remove(sb, repo, first, "CI_FAILURE", QUEUE_BOT)
            continue
        if any(results.get(c) != "success" for c in contexts):
            return  # its checks are still to come
        # Merged, or the base moved under the group: then it is built again on the new tip.
        _merge(sb, repo, first)


def _build(sb: Sandbox, repo: Repo, entry: QueueEntry) -> bool:
    pr = repo.pulls[entry.pull_number]
    params = rulesets.queue_rule(repo, entry.base_ref) or {}
    method = str(params.get("merge_method", "MERGE")).lower()
    base = gitrepo.resolve(repo.path, f"refs/heads/{entry.base_ref}")
    if base is None:
        return False
    sha = merging.merge_commit(repo, pr, base, method, None, None, QUEUE_BOT)
    if sha is None:
        return False
    ref = f"refs/heads/gh-readonly-queue/{entry.base_ref}/pr-{pr.number}-{entry.head_sha}"
    gitrepo.update_ref(repo.path, ref, sha)
    entry.group_ref, entry.group_sha, entry.group_base_sha = ref, sha, base
    events.merge_group(sb, repo, entry, "checks_requested", QUEUE_BOT)
    pushes.ref_moved(sb, repo, ref, gitrepo.ZERO_SHA, sha, QUEUE_BOT)
    return True


def _merge(sb: Sandbox, repo: Repo, entry: QueueEntry) -> bool:
    """Move the base to the group's commit; False (the group destroyed as `invalidated`)
    when the base is no longer the commit the group was built on."""
    assert entry.group_sha is not None and entry.group_base_sha is not None
    base = gitcache.branch(repo, entry.base_ref)
    if base != entry.group_base_sha:
        _drop_group(sb, repo, entry, "invalidated")
        return False
    pr = repo.pulls[entry.pull_number]
    merging.land(sb, repo, pr, base, entry.group_sha, QUEUE_BOT)
    repo.merge_queue.remove(entry)
    _drop_group(sb, repo, entry, "merged")
    merging.announce_merged(sb, repo, pr, QUEUE_BOT)
    return True


def _remove(sb: Sandbox, repo: Repo, entry: QueueEntry, reason: str, sender: str) -> None:
    """Take a pull request out of the queue: `pull_request.dequeued` with GitHub's reason."""
    if entry not in repo.merge_queue:
        return
    repo.merge_queue.remove(entry)
    if entry.group_sha is not None:
        _drop_group(sb, repo, entry, "dequeued")
    events.pull_request(sb, repo, entry.pull_number, "dequeued", sender, reason=reason)


def _drop_group(sb: Sandbox, repo: Repo, entry: QueueEntry, reason: str) -> None:
    """Delete the group's ref and announce `merge_group.destroyed` with `reason`."""
    assert entry.group_ref is not None and entry.group_sha is not None
    events.merge_group(sb, repo, entry, "destroyed", QUEUE_BOT, reason=reason)
    if gitrepo.resolve(repo.path, entry.group_ref) is not None:
        gitrepo.delete_ref(repo.path, entry.group_ref)
        pushes.ref_moved(sb, repo, entry.group_ref, entry.group_sha, gitrepo.ZERO_SHA, QUEUE_BOT)
    entry.group_ref = entry.group_sha = entry.group_base_sha = None
