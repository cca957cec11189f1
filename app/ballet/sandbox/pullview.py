"""A pull request as GitHub shows it: its shape, live base sha and mergeability."""

from __future__ import annotations

from ballet.sandbox import gitcache, gitrepo, rulesets, shapes
from ballet.sandbox.state import Pull, PullStats, Repo, Sandbox


# Every pull request's shape (each GET, list and webhook) asks these: gitcache keeps them.
def base_sha(repo: Repo, pr: Pull) -> str:
    return gitcache.branch(repo, pr.base_ref) or gitrepo.ZERO_SHA


def mergeable(repo: Repo, pr: Pull) -> bool | None:
    """Whether head merges into base without conflict (None when either side is gone)."""
    base = gitcache.branch(repo, pr.base_ref)
    if base is None or gitcache.commit(repo, pr.head_sha) is None:
        return None
    return gitcache.merges(repo, base, pr.head_sha)


def stats(repo: Repo, pr: Pull) -> PullStats:
    """Commits and changed lines of head against its merge base with base, as GitHub counts."""
    if pr.merged_stats is not None:
        return pr.merged_stats
    base = gitcache.branch(repo, pr.base_ref)
    if base is None or gitcache.commit(repo, pr.head_sha) is None:
        return PullStats()
    changes = gitcache.changed_files(repo, base, pr.head_sha)
    return PullStats(
        commits=gitcache.commits_between(repo, base, pr.head_sha),
        additions=sum(c.additions for c in changes),
        deletions=sum(c.deletions for c in changes),
        changed_files=len(changes),
    )


def rules_state(repo: Repo, pr: Pull) -> str | None:
    """GitHub's `mergeable_state` where the base's rules hold the pull request back:
    `blocked` while anything but being up to date does (reviews or required checks
    missing), so it hides a branch that is behind too; `behind` only where being out of
    date with the base is all; None where they do not (a queue required is not a block)."""
    if not repo.rulesets:
        return None
    if rulesets.merge_violations(repo, pr, "merge", enqueuing=True):
        return "blocked"
    return "behind" if rulesets.out_of_date(repo, pr) else None


def pull_shape(sb: Sandbox, repo: Repo, number: int) -> shapes.JSON:
    pr = repo.pulls[number]
    merge_ok = None if pr.merged else mergeable(repo, pr)
    counts = stats(repo, pr)
    held = None if pr.merged or not merge_ok else rules_state(repo, pr)
    return shapes.pull(
        sb, repo, repo.issues[number], pr, base_sha(repo, pr), merge_ok, counts, held
    )
