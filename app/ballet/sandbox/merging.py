"""Merging a pull request and bringing its branch up to date, for real, in the bare repo.

Merge and squash commits are built with `git merge-tree --write-tree` and
`commit-tree`; rebase replays the head's commits in a throwaway worktree.
"""

from __future__ import annotations

import re

from ballet.sandbox import events, gitrepo, pullview, pushes, rulesets
from ballet.sandbox.auth import Actor
from ballet.sandbox.errors import ApiError
from ballet.sandbox.handler import now
from ballet.sandbox.repo_settings import REFUSALS
from ballet.sandbox.rest_issues import set_state
from ballet.sandbox.state import Pull, Repo, Sandbox

# "Closes #1", "fixes: #2", "Resolved #3": GitHub's closing keywords in a PR's description.
CLOSING = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+#(\d+)\b", re.IGNORECASE)


def _bot_env(login: str) -> dict[str, str]:
    email = f"{login}@users.noreply.github.com"
    return {"GIT_AUTHOR_NAME": login, "GIT_AUTHOR_EMAIL": email}


async def merge(
    sb: Sandbox,
    repo: Repo,
    pr: Pull,
    method: str,
    expected_sha: str | None,
    title: str | None,
    message: str | None,
    actor: Actor,
) -> str:
    """Merge `pr` into its base with `method`; the new base sha. Raises GitHub's errors."""
    issue = repo.issues[pr.number]
    if method not in repo.merge_methods:
        raise ApiError(405, REFUSALS[method])
    if pr.merged or issue.state != "open":
        raise ApiError(405, "Pull Request is not mergeable")
    if pr.draft:
        raise ApiError(405, "Pull Request is still a draft")
    if expected_sha and expected_sha != pr.head_sha:
        raise ApiError(409, "Head branch was modified. Review and try the merge again.")
    violations = rulesets.merge_violations(repo, pr, method)
    if violations:
        raise ApiError(405, rulesets.refusal(violations))
    base_ref = f"refs/heads/{pr.base_ref}"
    async with repo.ref_lock:
        base = gitrepo.resolve(repo.path, base_ref)
        if base is None:
            raise ApiError(405, f"Base branch {pr.base_ref} does not exist")
        new = merge_commit(repo, pr, base, method, title, message, actor.login)
        if new is None:
            raise ApiError(405, "Pull Request is not mergeable")
        land(sb, repo, pr, base, new, actor.login)
    announce_merged(sb, repo, pr, actor.login)
    return new


def land(sb: Sandbox, repo: Repo, pr: Pull, base: str, new: str, merger: str) -> None:
    """Move the base branch from `base` to `new`, the merge of `pr`, and record it as
    merged; under the repository's ref lock."""
    base_ref = f"refs/heads/{pr.base_ref}"
    pr.merged_stats = pullview.stats(repo, pr)
    gitrepo.update_ref(repo.path, base_ref, new, base)
    moment = now()
    pr.merged, pr.merged_at, pr.merged_by, pr.merge_commit_sha = True, moment, merger, new
    issue = repo.issues[pr.number]
    issue.state, issue.closed_at, issue.updated_at = "closed", moment, moment
    pushes.ref_moved(sb, repo, base_ref, base, new, merger)
    if repo.delete_branch_on_merge:
        _delete_head(sb, repo, pr)


def announce_merged(sb: Sandbox, repo: Repo, pr: Pull, merger: str) -> None:
    """What GitHub sends and does once a pull request merged, after its push."""
    events.pull_request(sb, repo, pr.number, "closed", merger)
    _close_linked_issues(sb, repo, pr, merger)


def _delete_head(sb: Sandbox, repo: Repo, pr: Pull) -> None:
    """GitHub's "Automatically delete head branches", done by GitHub itself."""
    head_ref = f"refs/heads/{pr.head_ref}"
    old = gitrepo.resolve(repo.path, head_ref)
    if old is not None:
        gitrepo.delete_ref(repo.path, head_ref)
        pushes.ref_moved(sb, repo, head_ref, old, gitrepo.ZERO_SHA, "github")


def _close_linked_issues(sb: Sandbox, repo: Repo, pr: Pull, merger: str) -> None:
    """GitHub closes the issues a PR names with a closing keyword once it merges into
    the default branch (and only then)."""
    if pr.base_ref != repo.default_branch:
        return
    for match in CLOSING.finditer(repo.issues[pr.number].body or ""):
        linked = repo.issues.get(int(match.group(1)))
        if linked is not None and not linked.is_pull and linked.state == "open":
            set_state(sb, repo, linked, "closed", "completed", Actor("user", merger))


def merge_commit(
    repo: Repo,
    pr: Pull,
    base: str,
    method: str,
    title: str | None,
    message: str | None,
    author: str,
) -> str | None:
    """The commit `pr` merged into `base` with `method` would make; None on a conflict."""
    issue = repo.issues[pr.number]
    env = _bot_env(author)
    if method == "rebase":
        commits = gitrepo.commits_between(repo.path, base, pr.head_sha)
        return gitrepo.rebase_onto(repo.path, base, commits)
    tree = gitrepo.merge_tree(repo.path, base, pr.head_sha)
    if tree is None:
        return None
    if method == "squash":
        text = f"{title or f'{issue.title} (#{pr.number})'}\n\n{message or ''}".strip()
        return gitrepo.commit_tree(repo.path, tree, [base], text, env)
    default_title = f"Merge pull request #{pr.number} from {repo.owner}/{pr.head_ref}"
    text = f"{title or default_title}\n\n{message or issue.title}".strip()
    return gitrepo.commit_tree(repo.path, tree, [base, pr.head_sha], text, env)


async def update_branch(
    sb: Sandbox, repo: Repo, pr: Pull, expected_sha: str | None, actor: Actor
) -> None:
    """Merge the base branch into the head branch, as GitHub's "Update branch" button does."""
    if expected_sha and expected_sha != pr.head_sha:
        raise ApiError(422, "expected_head_sha does not match the pull request's head sha")
    head_ref = f"refs/heads/{pr.head_ref}"
    async with repo.ref_lock:
        base = gitrepo.resolve(repo.path, f"refs/heads/{pr.base_ref}")
        head = gitrepo.resolve(repo.path, head_ref)
        if base is None or head is None:
            raise ApiError(422, "The head or base branch of this pull request no longer exists")
        if gitrepo.is_ancestor(repo.path, base, head):
            return  # already up to date
        tree = gitrepo.merge_tree(repo.path, head, base)
        if tree is None:
            raise ApiError(422, "merge conflict between base and head")
        text = f"Merge branch '{pr.base_ref}' into {pr.head_ref}"
        new = gitrepo.commit_tree(repo.path, tree, [head, base], text, _bot_env(actor.login))
        gitrepo.update_ref(repo.path, head_ref, new, head)
        pushes.ref_moved(sb, repo, head_ref, head, new, actor.login)
