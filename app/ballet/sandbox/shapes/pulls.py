"""Pull requests and their reviews."""

from __future__ import annotations

from ballet.sandbox.shapes.common import (
    JSON,
    author_association,
    iso,
    node_id,
    reactions_rollup,
    repo_api,
    repo_html,
    repository,
    user,
)
from ballet.sandbox.shapes.issues import label
from ballet.sandbox.state import Issue, Pull, PullStats, Repo, Review, ReviewComment, Sandbox


def pull(
    sb: Sandbox,
    repo: Repo,
    item: Issue,
    pr: Pull,
    base_sha: str,
    mergeable: bool | None,
    stats: PullStats,
    blocked_by: str | None = None,
) -> JSON:
    """`blocked_by`: `behind` or `blocked` where the base branch's rules hold a
    mergeable pull request back (pullview.rules_state)."""
    api = f"{repo_api(sb, repo)}/pulls/{pr.number}"
    html = f"{repo_html(sb, repo)}/pull/{pr.number}"
    issue_api = f"{repo_api(sb, repo)}/issues/{pr.number}"
    repo_shape = repository(sb, repo)
    owner = user(sb, repo.owner)

    def end(ref: str, sha: str) -> JSON:
        return {
            "label": f"{repo.owner}:{ref}",
            "ref": ref,
            "sha": sha,
            "user": owner,
            "repo": repo_shape,
        }

    merged = pr.merged
    state = (blocked_by or "clean") if mergeable else "dirty" if mergeable is False else "unknown"
    return {
        "url": api,
        "id": pr.id,
        "node_id": node_id("PullRequest", pr.id),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": issue_api,
        "commits_url": f"{api}/commits",
        "review_comments_url": f"{api}/comments",
        "review_comment_url": f"{repo_api(sb, repo)}/pulls/comments{{/number}}",
        "comments_url": f"{issue_api}/comments",
        "statuses_url": f"{repo_api(sb, repo)}/statuses/{pr.head_sha}",
        "number": pr.number,
        "state": item.state,
        "locked": False,
        "active_lock_reason": None,
        "title": item.title,
        "user": user(sb, item.user),
        "body": item.body,
        "labels": [label(sb, repo, repo.labels[name]) for name in item.labels],
        "milestone": None,
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
        "closed_at": iso(item.closed_at),
        "merged_at": iso(pr.merged_at),
        "merge_commit_sha": pr.merge_commit_sha,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [user(sb, login) for login in pr.requested_reviewers],
        "requested_teams": [],
        "head": end(pr.head_ref, pr.head_sha),
        "base": end(pr.base_ref, base_sha),
        "_links": {
            "self": {"href": api},
            "html": {"href": html},
            "issue": {"href": issue_api},
            "comments": {"href": f"{issue_api}/comments"},
            "review_comments": {"href": f"{api}/comments"},
            "review_comment": {"href": f"{repo_api(sb, repo)}/pulls/comments{{/number}}"},
            "commits": {"href": f"{api}/commits"},
            "statuses": {"href": f"{repo_api(sb, repo)}/statuses/{pr.head_sha}"},
        },
        "author_association": author_association(repo, item.user),
        "auto_merge": _auto_merge(sb, pr),
        "draft": pr.draft,
        "merged": merged,
        "mergeable": None if merged else mergeable,
        "rebaseable": None if merged else mergeable,
        "mergeable_state": "unknown" if merged else ("draft" if pr.draft else state),
        "merged_by": user(sb, pr.merged_by) if pr.merged_by else None,
        "comments": sum(1 for c in repo.comments.values() if c.issue_number == pr.number),
        "review_comments": sum(
            1 for c in repo.review_comments.values() if c.pull_number == pr.number
        ),
        "maintainer_can_modify": pr.maintainer_can_modify,
        "commits": stats.commits,
        "additions": stats.additions,
        "deletions": stats.deletions,
        "changed_files": stats.changed_files,
    }


def _auto_merge(sb: Sandbox, pr: Pull) -> JSON | None:
    auto = pr.auto_merge
    if auto is None:
        return None
    return {
        "enabled_by": user(sb, auto.enabled_by),
        "merge_method": auto.merge_method,
        "commit_title": auto.commit_title,
        "commit_message": auto.commit_message,
    }


def review(sb: Sandbox, repo: Repo, item: Review) -> JSON:
    pull_api = f"{repo_api(sb, repo)}/pulls/{item.pull_number}"
    html = f"{repo_html(sb, repo)}/pull/{item.pull_number}#pullrequestreview-{item.id}"
    return {
        "id": item.id,
        "node_id": node_id("PullRequestReview", item.id),
        "user": user(sb, item.user),
        "body": item.body,
        "state": item.state,
        "html_url": html,
        "pull_request_url": pull_api,
        "_links": {"html": {"href": html}, "pull_request": {"href": pull_api}},
        "submitted_at": iso(item.submitted_at),
        "commit_id": item.commit_id,
        "author_association": author_association(repo, item.user),
    }


def review_comment(sb: Sandbox, repo: Repo, item: ReviewComment) -> JSON:
    """GitHub's `pull-request-review-comment` (and `review-comment`, its twin that lists a
    review's comments); `in_reply_to_id` is there only on a reply."""
    api = f"{repo_api(sb, repo)}/pulls/comments/{item.id}"
    pull_api = f"{repo_api(sb, repo)}/pulls/{item.pull_number}"
    html = f"{repo_html(sb, repo)}/pull/{item.pull_number}#discussion_r{item.id}"
    shape: JSON = {
        "url": api,
        "pull_request_review_id": item.review_id,
        "id": item.id,
        "node_id": node_id("PullRequestReviewComment", item.id),
        "diff_hunk": item.diff_hunk,
        "path": item.path,
        "position": item.position,
        "original_position": item.position,
        "commit_id": item.commit_id,
        "original_commit_id": item.commit_id,
        "user": None if item.user in sb.deleted_users else user(sb, item.user),
        "body": item.body,
        "created_at": iso(item.created_at),
        "updated_at": iso(item.created_at),
        "html_url": html,
        "pull_request_url": pull_api,
        "author_association": author_association(repo, item.user),
        "_links": {
            "self": {"href": api},
            "html": {"href": html},
            "pull_request": {"href": pull_api},
        },
        "reactions": reactions_rollup(f"{api}/reactions", []),
        "start_line": item.start_line,
        "original_start_line": item.start_line,
        "start_side": item.start_side,
        "line": item.line,
        "original_line": item.line,
        "side": item.side,
        "subject_type": "line",
    }
    if item.in_reply_to_id is not None:
        shape["in_reply_to_id"] = item.in_reply_to_id
    return shape


# What `GET /pulls` leaves out of each item (GitHub's `pull-request-simple`):
# mergeability and the counts cost GitHub a computation per pull request.
_NOT_IN_LISTS = (
    "merged",
    "mergeable",
    "rebaseable",
    "mergeable_state",
    "merged_by",
    "comments",
    "review_comments",
    "maintainer_can_modify",
    "commits",
    "additions",
    "deletions",
    "changed_files",
)


def pull_list_item(full: JSON) -> JSON:
    return {k: v for k, v in full.items() if k not in _NOT_IN_LISTS}
