"""Issues, issue comments, labels and reactions."""

from __future__ import annotations

from datetime import datetime

from ballet.sandbox.shapes.common import (
    JSON,
    app,
    author_association,
    iso,
    node_id,
    reactions_rollup,
    repo_api,
    repo_html,
    user,
)
from ballet.sandbox.state import Comment, Issue, Label, Repo, Sandbox


def label(sb: Sandbox, repo: Repo, lab: Label) -> JSON:
    return {
        "id": lab.id,
        "node_id": node_id("Label", lab.id),
        "url": f"{repo_api(sb, repo)}/labels/{lab.name}",
        "name": lab.name,
        "description": lab.description,
        "color": lab.color,
        "default": False,
        "archived_at": None,
        "archived_by": None,
    }


def issue(sb: Sandbox, repo: Repo, item: Issue) -> JSON:
    api = f"{repo_api(sb, repo)}/issues/{item.number}"
    html_kind = "pull" if item.is_pull else "issues"
    comments = sum(1 for c in repo.comments.values() if c.issue_number == item.number)
    shape: JSON = {
        "id": item.id,
        "node_id": node_id("Issue", item.id),
        "url": api,
        "repository_url": repo_api(sb, repo),
        "labels_url": f"{api}/labels{{/name}}",
        "comments_url": f"{api}/comments",
        "events_url": f"{api}/events",
        "html_url": f"{repo_html(sb, repo)}/{html_kind}/{item.number}",
        "number": item.number,
        "state": item.state,
        "state_reason": item.state_reason,
        "title": item.title,
        "body": item.body,
        "user": user(sb, item.user),
        "labels": [label(sb, repo, repo.labels[name]) for name in item.labels],
        "assignee": user(sb, item.assignees[0]) if item.assignees else None,
        "assignees": [user(sb, login) for login in item.assignees],
        "milestone": None,
        "locked": False,
        "active_lock_reason": None,
        "comments": comments,
        "closed_at": iso(item.closed_at),
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
        "author_association": author_association(repo, item.user),
        "reactions": reactions_rollup(f"{api}/reactions", []),
        "draft": False,
        "parent_issue_url": None
        if item.parent is None
        else f"{repo_api(sb, repo)}/issues/{item.parent}",
        "sub_issues_summary": _sub_issues_summary(repo, item),
    }
    if item.is_pull:
        pulls = f"{repo_api(sb, repo)}/pulls/{item.number}"
        pull_state = repo.pulls[item.number]
        shape["draft"] = pull_state.draft
        shape["pull_request"] = {
            "url": pulls,
            "html_url": f"{repo_html(sb, repo)}/pull/{item.number}",
            "diff_url": f"{repo_html(sb, repo)}/pull/{item.number}.diff",
            "patch_url": f"{repo_html(sb, repo)}/pull/{item.number}.patch",
            "merged_at": iso(pull_state.merged_at),
        }
    return shape


def _sub_issues_summary(repo: Repo, item: Issue) -> JSON:
    total = len(item.sub_issues)
    completed = sum(1 for n in item.sub_issues if repo.issues[n].state == "closed")
    percent = completed * 100 // total if total else 0
    return {"total": total, "completed": completed, "percent_completed": percent}


def comment(sb: Sandbox, repo: Repo, item: Comment) -> JSON:
    api = f"{repo_api(sb, repo)}/issues/comments/{item.id}"
    kind = "pull" if repo.issues[item.issue_number].is_pull else "issues"
    return {
        "id": item.id,
        "node_id": node_id("IssueComment", item.id),
        "url": api,
        "html_url": f"{repo_html(sb, repo)}/{kind}/{item.issue_number}#issuecomment-{item.id}",
        "issue_url": f"{repo_api(sb, repo)}/issues/{item.issue_number}",
        "body": item.body,
        # GitHub sends null for an account deleted since (the web shows "ghost").
        "user": None if item.user in sb.deleted_users else user(sb, item.user),
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
        "author_association": author_association(repo, item.user),
        "reactions": reactions_rollup(f"{api}/reactions", [r[2] for r in item.reactions]),
        # GitHub names the App behind a bot's comment; Ballet uses it to skip its own.
        "performed_via_github_app": app(sb) if item.user == sb.app.bot_login else None,
    }


def reaction(sb: Sandbox, id: int, login: str, content: str, created: datetime) -> JSON:
    return {
        "id": id,
        "node_id": node_id("Reaction", id),
        "user": user(sb, login),
        "content": content,
        "created_at": iso(created),
    }
