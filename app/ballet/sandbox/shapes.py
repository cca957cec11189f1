"""GitHub's JSON shapes, built from sandbox state; each parses with githubkit's models.

Every builder takes the server's base URL so that the `url` fields point back at
the sandbox (githubkit follows none of them, but people and logs do).
"""

from __future__ import annotations

import base64
import zlib
from datetime import datetime
from typing import Any

from ballet.sandbox.gitrepo import CommitInfo
from ballet.sandbox.state import (
    CheckRun,
    CheckSuite,
    Comment,
    CommitStatus,
    Issue,
    Label,
    Pull,
    Repo,
    Review,
    Sandbox,
)

JSON = dict[str, Any]
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "eyes", "rocket")


def iso(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def node_id(kind: str, id: int) -> str:
    return base64.b64encode(f"{kind}{id}".encode()).decode()


def user_id(login: str) -> int:
    # Stable across restarts, so a login always maps to the same id.
    return zlib.crc32(login.encode()) & 0x7FFFFFFF


def user(sb: Sandbox, login: str) -> JSON:
    is_bot = login.endswith("[bot]")
    api = f"{sb.base_url}/users/{login}"
    return {
        "login": login,
        "id": user_id(login),
        "node_id": node_id("User", user_id(login)),
        "avatar_url": f"{sb.base_url}/avatars/{login}",
        "gravatar_id": "",
        "url": api,
        "html_url": f"{sb.base_url}/{login}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": "Bot" if is_bot else "User",
        "site_admin": False,
    }


_REPO_URLS = {
    "archive_url": "/{archive_format}{/ref}",
    "assignees_url": "/assignees{/user}",
    "blobs_url": "/git/blobs{/sha}",
    "branches_url": "/branches{/branch}",
    "collaborators_url": "/collaborators{/collaborator}",
    "comments_url": "/comments{/number}",
    "commits_url": "/commits{/sha}",
    "compare_url": "/compare/{base}...{head}",
    "contents_url": "/contents/{+path}",
    "contributors_url": "/contributors",
    "deployments_url": "/deployments",
    "downloads_url": "/downloads",
    "events_url": "/events",
    "forks_url": "/forks",
    "git_commits_url": "/git/commits{/sha}",
    "git_refs_url": "/git/refs{/sha}",
    "git_tags_url": "/git/tags{/sha}",
    "hooks_url": "/hooks",
    "issue_comment_url": "/issues/comments{/number}",
    "issue_events_url": "/issues/events{/number}",
    "issues_url": "/issues{/number}",
    "keys_url": "/keys{/key_id}",
    "labels_url": "/labels{/name}",
    "languages_url": "/languages",
    "merges_url": "/merges",
    "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}",
    "pulls_url": "/pulls{/number}",
    "releases_url": "/releases{/id}",
    "stargazers_url": "/stargazers",
    "statuses_url": "/statuses/{sha}",
    "subscribers_url": "/subscribers",
    "subscription_url": "/subscription",
    "tags_url": "/tags",
    "teams_url": "/teams",
    "trees_url": "/git/trees{/sha}",
}


def repo_api(sb: Sandbox, repo: Repo) -> str:
    return f"{sb.base_url}/repos/{repo.full_name}"


def repo_html(sb: Sandbox, repo: Repo) -> str:
    return f"{sb.base_url}/{repo.full_name}"


def clone_url(sb: Sandbox, repo: Repo) -> str:
    return f"{sb.base_url}/{repo.full_name}.git"


def repository(sb: Sandbox, repo: Repo) -> JSON:
    api = repo_api(sb, repo)
    open_issues = sum(1 for i in repo.issues.values() if i.state == "open")
    shape: JSON = {
        "id": repo.id,
        "node_id": node_id("Repository", repo.id),
        "name": repo.name,
        "full_name": repo.full_name,
        "owner": user(sb, repo.owner),
        "private": False,
        "html_url": repo_html(sb, repo),
        "description": None,
        "fork": False,
        "url": api,
        "git_url": clone_url(sb, repo),
        "ssh_url": clone_url(sb, repo),
        "clone_url": clone_url(sb, repo),
        "svn_url": repo_html(sb, repo),
        "mirror_url": None,
        "homepage": None,
        "language": None,
        "forks_count": 0,
        "forks": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "watchers": 0,
        "subscribers_count": 0,
        "network_count": 0,
        "size": 0,
        "default_branch": repo.default_branch,
        "open_issues_count": open_issues,
        "open_issues": open_issues,
        "has_issues": True,
        "has_projects": False,
        "has_wiki": False,
        "has_pages": False,
        "has_discussions": False,
        "has_downloads": False,
        "archived": False,
        "disabled": False,
        "visibility": "public",
        "license": None,
        "topics": [],
        "is_template": False,
        "web_commit_signoff_required": False,
        "custom_properties": {},
        "pushed_at": iso(repo.pushed_at or repo.created_at),
        "created_at": iso(repo.created_at),
        "updated_at": iso(repo.pushed_at or repo.created_at),
        "allow_merge_commit": "merge" in repo.merge_methods,
        "allow_squash_merge": "squash" in repo.merge_methods,
        "allow_rebase_merge": "rebase" in repo.merge_methods,
    }
    shape.update({key: api + suffix for key, suffix in _REPO_URLS.items()})
    return shape


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


def reactions_rollup(url: str, contents: list[str]) -> JSON:
    rollup: JSON = {"url": url, "total_count": len(contents)}
    rollup.update({content: contents.count(content) for content in REACTIONS})
    return rollup


def author_association(repo: Repo, login: str) -> str:
    if login == repo.owner:
        return "OWNER"
    return "COLLABORATOR" if login in repo.collaborators else "NONE"


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
        "user": user(sb, item.user),
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
        "author_association": author_association(repo, item.user),
        "reactions": reactions_rollup(f"{api}/reactions", [r[2] for r in item.reactions]),
        "performed_via_github_app": None,
    }


def reaction(sb: Sandbox, id: int, login: str, content: str, created: datetime) -> JSON:
    return {
        "id": id,
        "node_id": node_id("Reaction", id),
        "user": user(sb, login),
        "content": content,
        "created_at": iso(created),
    }


def pull(
    sb: Sandbox, repo: Repo, item: Issue, pr: Pull, base_sha: str, mergeable: bool | None
) -> JSON:
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
    state = "clean" if mergeable else "dirty" if mergeable is False else "unknown"
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
        "auto_merge": None,
        "draft": pr.draft,
        "merged": merged,
        "mergeable": None if merged else mergeable,
        "rebaseable": None if merged else mergeable,
        "mergeable_state": "unknown" if merged else ("draft" if pr.draft else state),
        "merged_by": user(sb, pr.merged_by) if pr.merged_by else None,
        "comments": sum(1 for c in repo.comments.values() if c.issue_number == pr.number),
        "review_comments": 0,
        "maintainer_can_modify": pr.maintainer_can_modify,
        "commits": 1,
        "additions": 0,
        "deletions": 0,
        "changed_files": 0,
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


def app(sb: Sandbox) -> JSON:
    return {
        "id": sb.app.app_id,
        "slug": sb.app.slug,
        "node_id": node_id("Integration", sb.app.app_id),
        "client_id": f"Iv1.sandbox{sb.app.app_id}",
        "owner": user(sb, "sandbox"),
        "name": sb.app.slug,
        "description": "The App that the Ballet sandbox hosts",
        "external_url": sb.base_url,
        "html_url": f"{sb.base_url}/apps/{sb.app.slug}",
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "permissions": PERMISSIONS,
        "events": EVENTS,
    }


PERMISSIONS = {
    "checks": "write",
    "contents": "write",
    "issues": "write",
    "metadata": "read",
    "pull_requests": "write",
    "statuses": "write",
}
EVENTS = [
    "check_run",
    "check_suite",
    "issue_comment",
    "issues",
    "pull_request",
    "pull_request_review",
    "push",
    "status",
]


def installation(sb: Sandbox, owner: str, installation_id: int) -> JSON:
    return {
        "id": installation_id,
        "account": user(sb, owner),
        "repository_selection": "all",
        "access_tokens_url": f"{sb.base_url}/app/installations/{installation_id}/access_tokens",
        "repositories_url": f"{sb.base_url}/installation/repositories",
        "html_url": f"{sb.base_url}/settings/installations/{installation_id}",
        "app_id": sb.app.app_id,
        "app_slug": sb.app.slug,
        "target_id": user_id(owner),
        "target_type": "User",
        "permissions": PERMISSIONS,
        "events": EVENTS,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "single_file_name": None,
        "suspended_by": None,
        "suspended_at": None,
    }


def webhook_installation(installation_id: int) -> JSON:
    return {"id": installation_id, "node_id": node_id("Installation", installation_id)}


def git_ref(sb: Sandbox, repo: Repo, ref: str, sha: str) -> JSON:
    return {
        "ref": ref,
        "node_id": node_id("Ref", zlib.crc32(ref.encode())),
        "url": f"{repo_api(sb, repo)}/git/{ref}",
        "object": {"type": "commit", "sha": sha, "url": f"{repo_api(sb, repo)}/git/commits/{sha}"},
    }


def git_actor(name: str, email: str, date: str) -> JSON:
    return {"name": name, "email": email, "date": date}


def commit(sb: Sandbox, repo: Repo, info: CommitInfo) -> JSON:
    api = f"{repo_api(sb, repo)}/commits/{info.sha}"
    return {
        "url": api,
        "sha": info.sha,
        "node_id": node_id("Commit", zlib.crc32(info.sha.encode())),
        "html_url": f"{repo_html(sb, repo)}/commit/{info.sha}",
        "comments_url": f"{api}/comments",
        "commit": {
            "url": f"{repo_api(sb, repo)}/git/commits/{info.sha}",
            "author": git_actor(info.author_name, info.author_email, info.timestamp),
            "committer": git_actor(info.committer_name, info.committer_email, info.timestamp),
            "message": info.message,
            "comment_count": 0,
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
                "verified_at": None,
            },
            "tree": {"sha": info.tree, "url": f"{repo_api(sb, repo)}/git/trees/{info.tree}"},
        },
        "author": None,
        "committer": None,
        "parents": [{"sha": p, "url": f"{repo_api(sb, repo)}/commits/{p}"} for p in info.parents],
    }


def branch(sb: Sandbox, repo: Repo, name: str, info: CommitInfo) -> JSON:
    api = f"{repo_api(sb, repo)}/branches/{name}"
    return {
        "name": name,
        "commit": commit(sb, repo, info),
        "_links": {"self": api, "html": f"{repo_html(sb, repo)}/tree/{name}"},
        "protected": False,
        "protection": {"enabled": False},
        "protection_url": f"{api}/protection",
    }


def push_commit(sb: Sandbox, repo: Repo, info: CommitInfo) -> JSON:
    """A commit as the push webhook lists it (not the REST commit shape)."""
    return {
        "id": info.sha,
        "tree_id": info.tree,
        "distinct": True,
        "message": info.message,
        "timestamp": info.timestamp,
        "url": f"{repo_html(sb, repo)}/commit/{info.sha}",
        "author": {"name": info.author_name, "email": info.author_email, "username": None},
        "committer": {"name": info.committer_name, "email": info.committer_email},
        "added": [],
        "removed": [],
        "modified": [],
    }


def simple_commit(info: CommitInfo) -> JSON:
    return {
        "id": info.sha,
        "tree_id": info.tree,
        "message": info.message,
        "timestamp": info.timestamp,
        "author": {"name": info.author_name, "email": info.author_email},
        "committer": {"name": info.committer_name, "email": info.committer_email},
    }


def check_suite(sb: Sandbox, repo: Repo, suite: CheckSuite, runs: int, head: CommitInfo) -> JSON:
    api = f"{repo_api(sb, repo)}/check-suites/{suite.id}"
    return {
        "id": suite.id,
        "node_id": node_id("CheckSuite", suite.id),
        "head_branch": suite.head_branch,
        "head_sha": suite.head_sha,
        "status": suite.status,
        "conclusion": suite.conclusion,
        "url": api,
        "before": suite.before,
        "after": suite.head_sha,
        "pull_requests": [],
        "app": app(sb),
        "repository": minimal_repository(sb, repo),
        "created_at": iso(suite.created_at),
        "updated_at": iso(suite.updated_at),
        "head_commit": simple_commit(head),
        "latest_check_runs_count": runs,
        "check_runs_url": f"{api}/check-runs",
        "rerequestable": True,
        "runs_rerequestable": True,
    }


def minimal_repository(sb: Sandbox, repo: Repo) -> JSON:
    return repository(sb, repo)


def check_run(sb: Sandbox, repo: Repo, run: CheckRun) -> JSON:
    api = f"{repo_api(sb, repo)}/check-runs/{run.id}"
    output = {
        "title": None,
        "summary": None,
        "text": None,
        "annotations_count": 0,
        "annotations_url": f"{api}/annotations",
    }
    output.update(run.output)
    return {
        "id": run.id,
        "head_sha": run.head_sha,
        "node_id": node_id("CheckRun", run.id),
        "external_id": run.external_id,
        "url": api,
        "html_url": f"{repo_html(sb, repo)}/runs/{run.id}",
        "details_url": run.details_url,
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": iso(run.started_at),
        "completed_at": iso(run.completed_at),
        "output": output,
        "name": run.name,
        "check_suite": _suite_ref(sb, repo, repo.suites[run.suite_id]),
        "app": app(sb),
        "pull_requests": [],
    }


def _suite_ref(sb: Sandbox, repo: Repo, suite: CheckSuite) -> JSON:
    """The suite as a check run carries it (webhooks show all of this, REST only the id)."""
    return {
        "id": suite.id,
        "node_id": node_id("CheckSuite", suite.id),
        "head_branch": suite.head_branch,
        "head_sha": suite.head_sha,
        "status": suite.status,
        "conclusion": suite.conclusion,
        "url": f"{repo_api(sb, repo)}/check-suites/{suite.id}",
        "before": suite.before,
        "after": suite.head_sha,
        "pull_requests": [],
        "app": app(sb),
        "deployment": None,
        "created_at": iso(suite.created_at),
        "updated_at": iso(suite.updated_at),
    }


def status(sb: Sandbox, repo: Repo, item: CommitStatus) -> JSON:
    return {
        "url": f"{repo_api(sb, repo)}/statuses/{item.sha}",
        "avatar_url": None,
        "id": item.id,
        "node_id": node_id("StatusContext", item.id),
        "state": item.state,
        "description": item.description,
        "target_url": item.target_url,
        "context": item.context,
        "created_at": iso(item.created_at),
        "updated_at": iso(item.created_at),
        "creator": user(sb, item.creator),
    }
