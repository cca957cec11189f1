"""A pull request as GitHub shows it: its shape, live base sha and mergeability."""

from __future__ import annotations

from ballet.sandbox import gitrepo, shapes
from ballet.sandbox.state import Pull, PullStats, Repo, Sandbox


def base_sha(repo: Repo, pr: Pull) -> str:
    return gitrepo.resolve(repo.path, f"refs/heads/{pr.base_ref}") or gitrepo.ZERO_SHA


def mergeable(repo: Repo, pr: Pull) -> bool | None:
    """Whether head merges into base without conflict (None when either side is gone)."""
    base = gitrepo.resolve(repo.path, f"refs/heads/{pr.base_ref}")
    if base is None or gitrepo.resolve(repo.path, pr.head_sha) is None:
        return None
    return gitrepo.merge_tree(repo.path, base, pr.head_sha) is not None


def stats(repo: Repo, pr: Pull) -> PullStats:
    """Commits and changed lines of head against its merge base with base, as GitHub counts."""
    if pr.merged_stats is not None:
        return pr.merged_stats
    base = gitrepo.resolve(repo.path, f"refs/heads/{pr.base_ref}")
    if base is None or gitrepo.resolve(repo.path, pr.head_sha) is None:
        return PullStats()
    changes = gitrepo.changed_files(repo.path, base, pr.head_sha)
    return PullStats(
        commits=len(gitrepo.commits_between(repo.path, base, pr.head_sha)),
        additions=sum(c.additions for c in changes),
        deletions=sum(c.deletions for c in changes),
        changed_files=len(changes),
    )


def pull_shape(sb: Sandbox, repo: Repo, number: int) -> shapes.JSON:
    pr = repo.pulls[number]
    merge_ok = None if pr.merged else mergeable(repo, pr)
    counts = stats(repo, pr)
    return shapes.pull(sb, repo, repo.issues[number], pr, base_sha(repo, pr), merge_ok, counts)
