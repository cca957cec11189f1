"""Webhook payloads for each change, in the shapes GitHub sends, handed to the delivery queue.

Every payload carries `repository`, `sender` and `installation: {id, node_id}`.
A completed check run and a status also tell the sandbox's check listeners (the
merge queue judges its groups by them).
The App's own changes are announced too, as GitHub does; Ballet ignores its own.
"""

from __future__ import annotations

from typing import Any

from ballet.sandbox import gitcache, shapes
from ballet.sandbox.pullview import pull_shape
from ballet.sandbox.state import (
    CheckRun,
    CheckSuite,
    Comment,
    CommitStatus,
    Issue,
    QueueEntry,
    Repo,
    Review,
    Sandbox,
)


def _send(sb: Sandbox, repo: Repo, event: str, sender: str, payload: dict[str, Any]) -> None:
    payload.setdefault("repository", shapes.repository(sb, repo))
    payload["sender"] = shapes.user(sb, sender)
    payload["installation"] = shapes.webhook_installation(repo.installation_id)
    sb.hooks.send(event, payload)


def issues(sb: Sandbox, repo: Repo, item: Issue, action: str, sender: str, **extra: Any) -> None:
    payload = {"action": action, "issue": shapes.issue(sb, repo, item), **extra}
    _send(sb, repo, "issues", sender, payload)


def labeled(sb: Sandbox, repo: Repo, item: Issue, name: str, added: bool, sender: str) -> None:
    """`issues.labeled` or, on a pull request, `pull_request.labeled` (and the un- pair)."""
    action = "labeled" if added else "unlabeled"
    lab = shapes.label(sb, repo, repo.labels[name])
    if item.is_pull:
        pull_request(sb, repo, item.number, action, sender, label=lab)
    else:
        issues(sb, repo, item, action, sender, label=lab)


def issue_comment(
    sb: Sandbox, repo: Repo, item: Comment, action: str, sender: str, **extra: Any
) -> None:
    payload = {
        "action": action,
        "issue": shapes.issue(sb, repo, repo.issues[item.issue_number]),
        "comment": shapes.comment(sb, repo, item),
        **extra,
    }
    _send(sb, repo, "issue_comment", sender, payload)


def pull_request(
    sb: Sandbox, repo: Repo, number: int, action: str, sender: str, **extra: Any
) -> None:
    payload = {
        "action": action,
        "number": number,
        "pull_request": pull_shape(sb, repo, number),
        **extra,
    }
    _send(sb, repo, "pull_request", sender, payload)


def review_submitted(sb: Sandbox, repo: Repo, item: Review, sender: str) -> None:
    # The webhook's review differs from REST's: its state is lower case ("commented")
    # and an empty body is null.
    review = shapes.review(sb, repo, item)
    review.update(state=item.state.lower(), body=item.body or None)
    payload = {
        "action": "submitted",
        "review": review,
        "pull_request": pull_shape(sb, repo, item.pull_number),
    }
    _send(sb, repo, "pull_request_review", sender, payload)


def push(
    sb: Sandbox,
    repo: Repo,
    ref: str,
    before: str,
    after: str,
    pusher: str,
    commits: list[dict[str, Any]],
    forced: bool,
) -> None:
    zero = "0" * 40
    head = (
        None if after == zero else shapes.push_commit(sb, repo, gitcache.commit_info(repo, after))
    )
    payload = {
        "ref": ref,
        "before": before,
        "after": after,
        "created": before == zero,
        "deleted": after == zero,
        "forced": forced,
        "base_ref": None,
        "compare": f"{shapes.repo_html(sb, repo)}/compare/{before[:12]}...{after[:12]}",
        "commits": commits,
        "head_commit": head,
        "pusher": {"name": pusher, "email": f"{pusher}@users.noreply.github.com"},
    }
    # Push payloads carry an older repository shape: owner with name/email, master_branch.
    repository = shapes.repository(sb, repo)
    repository["owner"].update(name=repo.owner, email=f"{repo.owner}@users.noreply.github.com")
    repository.update(master_branch=repo.default_branch, stargazers=0)
    payload["repository"] = repository
    _send(sb, repo, "push", pusher, payload)


def check_run(sb: Sandbox, repo: Repo, run: CheckRun, action: str) -> None:
    payload = {"action": action, "check_run": shapes.check_run(sb, repo, run)}
    _send(sb, repo, "check_run", sb.app.bot_login, payload)
    if action == "completed":
        sb.checks_reported(repo, run.head_sha)


def check_suite(sb: Sandbox, repo: Repo, suite: CheckSuite, action: str) -> None:
    runs = sum(1 for r in repo.runs.values() if r.suite_id == suite.id)
    head = gitcache.commit_info(repo, suite.head_sha)
    payload = {"action": action, "check_suite": shapes.check_suite(sb, repo, suite, runs, head)}
    _send(sb, repo, "check_suite", sb.app.bot_login, payload)


def status(sb: Sandbox, repo: Repo, item: CommitStatus) -> None:
    info = gitcache.commit_info(repo, item.sha)
    branches = [
        {
            "name": ref.removeprefix("refs/heads/"),
            "commit": {"sha": sha, "url": f"{shapes.repo_api(sb, repo)}/commits/{sha}"},
            "protected": False,
        }
        for ref, sha in _branch_heads(repo).items()
        if sha == item.sha
    ]
    payload = {
        "id": item.id,
        "sha": item.sha,
        "name": repo.full_name,
        "target_url": item.target_url,
        "avatar_url": None,
        "context": item.context,
        "description": item.description,
        "state": item.state,
        "commit": shapes.commit(sb, repo, info),
        "branches": branches,
        "created_at": shapes.iso(item.created_at),
        "updated_at": shapes.iso(item.created_at),
    }
    _send(sb, repo, "status", item.creator, payload)
    sb.checks_reported(repo, item.sha)


def merge_group(
    sb: Sandbox, repo: Repo, entry: QueueEntry, action: str, sender: str, **extra: Any
) -> None:
    """`checks_requested` once the group's commit exists; `destroyed` with a `reason`."""
    assert entry.group_sha is not None and entry.group_ref is not None
    assert entry.group_base_sha is not None
    group = {
        "head_sha": entry.group_sha,
        "head_ref": entry.group_ref,
        "base_sha": entry.group_base_sha,
        "base_ref": f"refs/heads/{entry.base_ref}",
        "head_commit": shapes.simple_commit(gitcache.commit_info(repo, entry.group_sha)),
    }
    _send(sb, repo, "merge_group", sender, {"action": action, **extra, "merge_group": group})


def _branch_heads(repo: Repo) -> dict[str, str]:
    return {ref: sha for ref, sha in gitcache.refs(repo).items() if ref.startswith("refs/heads/")}


def installed(sb: Sandbox, repo: Repo, new_installation: bool) -> None:
    """`installation.created` for an owner's first repository, else `installation_repositories`."""
    brief = {
        "id": repo.id,
        "node_id": shapes.node_id("Repository", repo.id),
        "name": repo.name,
        "full_name": repo.full_name,
        "private": repo.private,
    }
    installation = shapes.installation(sb, repo.owner, repo.installation_id)
    payload: dict[str, Any]
    if new_installation:
        event = "installation"
        payload = {"action": "created", "installation": installation, "repositories": [brief]}
    else:
        event = "installation_repositories"
        payload = {
            "action": "added",
            "installation": installation,
            "repository_selection": "all",
            "repositories_added": [brief],
            "repositories_removed": [],
            "requester": None,
        }
    payload["sender"] = shapes.user(sb, repo.owner)
    sb.hooks.send(event, payload)
