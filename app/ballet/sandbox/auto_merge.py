"""GitHub's auto-merge: a pull request GitHub merges itself once the base's rules let it.

GraphQL `enablePullRequestAutoMerge(input: {pullRequestId, expectedHeadOid?,
mergeMethod?, commitHeadline?, commitBody?})` turns it on where the repository allows
auto-merge (`allow_auto_merge`) and something holds the pull request back: GitHub
refuses one that could merge now ("Pull request Pull request is in clean status"), a
draft, a closed one, one in conflict, and one whose head is not `expectedHeadOid`.
`disablePullRequestAutoMerge(input: {pullRequestId})` turns it off. Each change is
announced: `pull_request.auto_merge_enabled`, `auto_merge_disabled` with a `reason`.

The pull request is merged, as the person (or App) who enabled it, when checks are
reported on its head or a review is submitted and the base's rules no longer hold it
back. As on GitHub, a conflict with the base disables it (reason below); a writer's push
leaves it on, and the new head merges once its required checks pass. Not modelled:
disabling on a push by someone without write access (a fork's: the sandbox has no
forks), and auto-merge into a base that requires a merge queue.
"""

from __future__ import annotations

import asyncio

from ballet.sandbox import events, merging, pullview, rulesets
from ballet.sandbox.auth import Actor
from ballet.sandbox.errors import ApiError
from ballet.sandbox.repo_settings import REFUSALS
from ballet.sandbox.state import AutoMerge, Pull, Repo, Sandbox

METHODS = {"MERGE": "merge", "SQUASH": "squash", "REBASE": "rebase"}
NOT_ALLOWED = "Pull request Auto merge is not allowed for this repository"
CONFLICT = "Merge conflict with the base branch"


class AutoMergeRefusal(Exception):
    """Why auto-merge cannot be turned on or off (a GraphQL error's message)."""


def watch(sb: Sandbox) -> None:
    """Judge a pull request with auto-merge on whenever its head's checks are reported,
    a review is submitted on it, or its head or base branch moves."""

    def later(repo: Repo, pr: Pull) -> None:
        task = asyncio.get_running_loop().create_task(judge(sb, repo, pr))
        sb.tasks.add(task)
        task.add_done_callback(sb.tasks.discard)

    def checks(repo: Repo, sha: str) -> None:
        for pr in _armed(repo):
            if pr.head_sha == sha:
                later(repo, pr)

    def reviewed(repo: Repo, number: int) -> None:
        pr = repo.pulls[number]
        if pr.auto_merge is not None:
            later(repo, pr)

    def moved(repo: Repo, branch: str, pusher: str) -> None:
        for pr in _armed(repo):
            if branch in (pr.base_ref, pr.head_ref) and pullview.mergeable(repo, pr) is False:
                disable(sb, repo, pr, pusher, CONFLICT)
            elif branch in (pr.base_ref, pr.head_ref):
                later(repo, pr)

    sb.check_listeners.append(checks)
    sb.review_listeners.append(reviewed)
    sb.branch_listeners.append(moved)


def _armed(repo: Repo) -> list[Pull]:
    return [
        pr
        for pr in repo.pulls.values()
        if pr.auto_merge is not None and repo.issues[pr.number].state == "open"
    ]


def enable(
    sb: Sandbox,
    repo: Repo,
    pr: Pull,
    expected_head: str | None,
    method_name: str | None,
    headline: str | None,
    body: str | None,
    sender: str,
) -> None:
    if not repo.allow_auto_merge:
        raise AutoMergeRefusal(NOT_ALLOWED)
    if pr.merged or repo.issues[pr.number].state != "open":
        raise AutoMergeRefusal("Pull request Pull request is closed")
    if pr.draft:
        raise AutoMergeRefusal("Pull request Pull request is in draft state")
    if expected_head is not None and expected_head != pr.head_sha:
        raise AutoMergeRefusal(
            f"Pull request The head of the pull request is {pr.head_sha}, not the"
            f" expectedHeadOid {expected_head}"
        )
    method = METHODS.get(method_name or "MERGE")
    if method is None:
        raise AutoMergeRefusal(f"mergeMethod {method_name} is not MERGE, SQUASH or REBASE")
    if method not in repo.merge_methods:
        raise AutoMergeRefusal(f"Pull request {REFUSALS[method]}")
    mergeable = pullview.mergeable(repo, pr)
    if mergeable is False:
        raise AutoMergeRefusal("Pull request Pull request has merge conflicts")
    if mergeable and not rulesets.merge_violations(repo, pr, method):
        raise AutoMergeRefusal("Pull request Pull request is in clean status")
    title = repo.issues[pr.number].title
    squash = method == "squash"
    default = f"{title} (#{pr.number})" if squash else f"Merge pull request #{pr.number}"
    pr.auto_merge = AutoMerge(sender, method, headline or default, body or "")
    events.pull_request(sb, repo, pr.number, "auto_merge_enabled", sender)


def disable(sb: Sandbox, repo: Repo, pr: Pull, sender: str, reason: str) -> None:
    if pr.auto_merge is None:
        raise AutoMergeRefusal("Pull request Auto merge is not enabled for this pull request")
    pr.auto_merge = None
    events.pull_request(sb, repo, pr.number, "auto_merge_disabled", sender, reason=reason)


async def judge(sb: Sandbox, repo: Repo, pr: Pull) -> None:
    """Merge the pull request if auto-merge is on and the base's rules let it now."""
    auto = pr.auto_merge
    if auto is None or pr.merged or repo.issues[pr.number].state != "open":
        return
    if not pullview.mergeable(repo, pr) or rulesets.merge_violations(repo, pr, auto.merge_method):
        return
    pr.auto_merge = None  # not shown on the merged pull request's `closed`
    try:
        await merging.merge(
            sb,
            repo,
            pr,
            auto.merge_method,
            None,
            auto.commit_title,
            auto.commit_message,
            Actor("user", auto.enabled_by),
        )
    except ApiError:
        pr.auto_merge = auto  # held back after all (the base moved meanwhile): judged again
