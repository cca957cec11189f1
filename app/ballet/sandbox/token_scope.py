"""Installation tokens limited to some repositories and some permissions, as GitHub makes them.

`POST /app/installations/{id}/access_tokens` takes `repositories` (names of the
installation account's repositories), `repository_ids` and `permissions` in its
body; a repository the installation does not reach, or a permission beyond the
App's, is a 422 and no token. A limited token is then refused outside its
repositories (404, as if they did not exist: auth.reaches) and beyond its
permissions (403 "Resource not accessible by integration"). Which permission a
request needs is GitHub's table "Permissions required for GitHub Apps", for the
endpoints the sandbox serves; a request this table does not know is not checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ballet.sandbox import shapes
from ballet.sandbox.auth import Actor
from ballet.sandbox.errors import ApiError, forbidden, unprocessable
from ballet.sandbox.state import Repo, Sandbox

LEVELS = ("read", "write", "admin")
NOT_REACHED = (
    "There is at least one repository that does not exist or is not accessible"
    " to the parent installation."
)
NOT_GRANTED = "The permissions requested are not granted to this installation."
REFUSED = "Resource not accessible by integration"

ISSUES_OR_PULLS = ("issues", "pull_requests")
# (methods, the path below /repos/{owner}/{repo}) -> the permissions that each let it
# through, first match wins. A GET or HEAD needs read, anything else write.
_RULES: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (methods, re.compile(pattern), needs)
    for methods, pattern, needs in (
        ("GET", r"", ("metadata",)),
        ("PATCH", r"", ("administration",)),
        ("*", r"/collaborators(/.*)?", ("metadata",)),
        ("GET", r"/rules/.*|/rulesets(/.*)?", ("metadata",)),
        ("*", r"/rulesets(/.*)?", ("administration",)),
        ("*", r"/commits/.+/check-(runs|suites)", ("checks",)),
        ("*", r"/check-(runs|suites)(/.*)?", ("checks",)),
        ("*", r"/commits/.+/status(es)?|/statuses/.*", ("statuses",)),
        ("*", r"/(contents|git|branches|commits|compare|merges)(/.*)?", ("contents",)),
        ("PUT", r"/pulls/\d+/merge", ("contents",)),
        ("*", r"/pulls(/.*)?", ("pull_requests",)),
        ("*", r"/labels(/.*)?", ISSUES_OR_PULLS),
        ("*", r"/issues(/.*)?", ("issues",)),
    )
)
_ISSUE_NUMBER = re.compile(r"^/issues/(\d+)(/|$)")
_COMMENT_ID = re.compile(r"^/issues/comments/(\d+)(/|$)")
_REPO_PATH = re.compile(r"^/repos/[^/]+/[^/]+(?P<rest>/.*)?$")


@dataclass(frozen=True)
class Scope:
    repos: tuple[Repo, ...] | None  # None: every repository of the installation
    permissions: dict[str, str] | None  # None: every permission of the App


def granted(sb: Sandbox) -> dict[str, str]:
    """The permissions the installation holds: the App's."""
    return dict(sb.app.permissions or shapes.PERMISSIONS)


def requested_scope(sb: Sandbox, installation_id: int, body: dict[str, Any]) -> Scope:
    """What a token request's body asks for, or a 422 saying what it may not have."""
    names, ids = body.get("repositories"), body.get("repository_ids")
    repos: list[Repo] | None = None
    if names is not None or ids is not None:
        reached = [r for r in sb.repos.values() if r.installation_id == installation_id]
        repos = []
        for field, value in (("repositories", names), ("repository_ids", ids)):
            if value is None:
                continue
            if not isinstance(value, list):
                raise unprocessable(f'Invalid request. "{field}" must be an array.', field=field)
            for wanted in value:
                found = next((r for r in reached if _named(r, field, wanted)), None)
                if found is None:
                    raise unprocessable(NOT_REACHED, field=field)
                if found not in repos:
                    repos.append(found)
    permissions = body.get("permissions")
    if permissions is not None:
        if not isinstance(permissions, dict) or not permissions:
            raise unprocessable('Invalid request. "permissions" must be an object.')
        holds = granted(sb)
        for name, level in permissions.items():
            if level not in LEVELS or not _at_least(holds.get(name), str(level)):
                raise unprocessable(NOT_GRANTED, field="permissions")
        # Every token may read the metadata of its repositories, asked for or not.
        permissions = {"metadata": "read", **{str(k): str(v) for k, v in permissions.items()}}
    return Scope(tuple(repos) if repos is not None else None, permissions)


def check_permission(actor: Actor, method: str, path: str, repo: Repo) -> None:
    """Refuse (403) a limited installation token a request its permissions do not cover."""
    if actor.kind != "installation" or actor.permissions is None:
        return
    match = _REPO_PATH.match(path)
    if match is None:
        return
    rest = match.group("rest") or ""
    level = "read" if method in ("GET", "HEAD") else "write"
    needs = _needs(method, rest, repo)
    if needs is not None and not any(_at_least(actor.permissions.get(n), level) for n in needs):
        raise forbidden(REFUSED)


def check_git(actor: Actor, pushing: bool) -> None:
    """Git over HTTP: fetching needs `contents: read`, pushing `contents: write`."""
    if actor.kind != "installation" or actor.permissions is None:
        return
    if not _at_least(actor.permissions.get("contents"), "write" if pushing else "read"):
        raise ApiError(403, f"Permission to the repository denied: {REFUSED}")


def check_named(actor: Actor, permission: str, level: str) -> None:
    """A request whose permission its handler names (a GraphQL mutation)."""
    limited = actor.kind == "installation" and actor.permissions is not None
    if limited and not _at_least((actor.permissions or {}).get(permission), level):
        raise forbidden(REFUSED)


def _needs(method: str, rest: str, repo: Repo) -> tuple[str, ...] | None:
    for methods, pattern, needs in _RULES:
        applies = methods in ("*", method) or (methods == "GET" and method == "HEAD")
        if applies and pattern.fullmatch(rest):
            return _on_pull(rest, repo) if needs == ("issues",) else needs
    return None


def _named(repo: Repo, field: str, wanted: object) -> bool:
    if field == "repository_ids":
        return repo.id == wanted
    return repo.name.lower() == str(wanted).lower()


def _on_pull(rest: str, repo: Repo) -> tuple[str, ...]:
    """An issue endpoint on a pull request takes either permission, as on GitHub."""
    number: int | None = None
    if comment := _COMMENT_ID.match(rest):
        found = repo.comments.get(int(comment.group(1)))
        number = found.issue_number if found else None
    elif issue := _ISSUE_NUMBER.match(rest):
        number = int(issue.group(1))
    on_pull = number is not None and number in repo.issues and repo.issues[number].is_pull
    return ISSUES_OR_PULLS if on_pull else ("issues",)


def _at_least(have: str | None, need: str) -> bool:
    if have is None or have not in LEVELS:
        return False
    return LEVELS.index(have) >= LEVELS.index(need)
