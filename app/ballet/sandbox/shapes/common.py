"""Shapes shared by every resource: users, repositories, the App and its installations."""

from __future__ import annotations

import base64
import zlib
from datetime import datetime
from typing import Any

from ballet.sandbox.state import Repo, Sandbox, permission_at_least

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
        "private": repo.private,
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
        "visibility": "private" if repo.private else "public",
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
        "delete_branch_on_merge": repo.delete_branch_on_merge,
        "allow_auto_merge": repo.allow_auto_merge,
    }
    shape.update({key: api + suffix for key, suffix in _REPO_URLS.items()})
    return shape


def repo_permissions(repo: Repo, login: str) -> JSON:
    """The `permissions` GitHub adds to a repository it shows a signed-in person."""
    have = repo.permission_of(login)
    return {
        name: permission_at_least(have, level)
        for name, level in (
            ("admin", "admin"),
            ("maintain", "maintain"),
            ("push", "write"),
            ("triage", "triage"),
            ("pull", "read"),
        )
    }


def reactions_rollup(url: str, contents: list[str]) -> JSON:
    rollup: JSON = {"url": url, "total_count": len(contents)}
    rollup.update({content: contents.count(content) for content in REACTIONS})
    return rollup


def author_association(repo: Repo, login: str) -> str:
    if login == repo.owner:
        return "OWNER"
    return "COLLABORATOR" if login in repo.collaborators else "NONE"


# The repository's own CI reports as another App (GitHub Actions' id), so that Ballet,
# which ignores its own check suites, sees the CI's.
CI_APP_ID = 15368
CI_APP_SLUG = "github-actions"


def app(sb: Sandbox) -> JSON:
    shape = _app(sb, sb.app.app_id, sb.app.slug, "The App that the Ballet sandbox hosts")
    shape["client_id"] = sb.app.client_id
    if sb.app.name is not None:
        shape["name"] = sb.app.name
    if sb.app.permissions is not None:
        shape["permissions"] = sb.app.permissions
    if sb.app.events is not None:
        shape["events"] = list(sb.app.events)
    return shape


def ci_app(sb: Sandbox) -> JSON:
    ci_id = CI_APP_ID if sb.app.app_id != CI_APP_ID else CI_APP_ID + 1
    return _app(sb, ci_id, CI_APP_SLUG, "The sandbox repositories' CI")


def _app(sb: Sandbox, app_id: int, slug: str, description: str) -> JSON:
    return {
        "id": app_id,
        "slug": slug,
        "node_id": node_id("Integration", app_id),
        "client_id": f"Iv1.sandbox{app_id}",
        "owner": user(sb, "sandbox"),
        "name": slug,
        "description": description,
        "external_url": sb.base_url,
        "html_url": f"{sb.base_url}/apps/{slug}",
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
