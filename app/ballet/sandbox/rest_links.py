"""Sub-issues and the issue timeline's cross-references, as GitHub serves them.

- `GET /repos/{o}/{r}/issues/{n}/parent`: the parent issue, 404 when there is none;
- `GET` and `POST /repos/{o}/{r}/issues/{n}/sub_issues` (`{"sub_issue_id": <issue id>}`,
  `replace_parent`): an issue's sub-issues, in order;
- `GET /repos/{o}/{r}/issues/{n}/timeline`: `commented` events for the issue's
  comments and one `cross-referenced` event per issue or pull request whose body or
  comments name it (`#n`, `owner/name#n` or its URL), as GitHub records them.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ballet.sandbox import shapes
from ballet.sandbox.auth import can_see
from ballet.sandbox.errors import ApiError, not_found, unprocessable
from ballet.sandbox.handler import body_of, field, int_param, page, repo_for, respond
from ballet.sandbox.rest_issues import issue_of
from ballet.sandbox.state import Issue, Repo, Sandbox

# GitHub's sub-issue limit per parent.
MAX_SUB_ISSUES = 100


async def get_parent(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    item = issue_of(repo, int_param(request, "number"))
    if item.parent is None:
        raise not_found()
    return respond(shapes.issue(sb, repo, repo.issues[item.parent]))


async def list_sub_issues(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    item = issue_of(repo, int_param(request, "number"))
    found = [repo.issues[n] for n in item.sub_issues]
    return respond([shapes.issue(sb, repo, sub) for sub in page(request, found)])


async def add_sub_issue(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "triage")
    parent = issue_of(repo, int_param(request, "number"))
    data = await body_of(request)
    wanted = field(data, "sub_issue_id", int, required=True)
    sub = next((i for i in repo.issues.values() if i.id == wanted), None)
    if sub is None or sub.is_pull:
        raise unprocessable("The provided sub-issue does not exist", field="sub_issue_id")
    if sub.number == parent.number or _is_ancestor(repo, sub.number, parent):
        raise unprocessable("An issue cannot be its own sub-issue", field="sub_issue_id")
    if sub.parent is not None and not field(data, "replace_parent", bool):
        raise unprocessable("Issue may not contain duplicate sub-issues", field="sub_issue_id")
    if len(parent.sub_issues) >= MAX_SUB_ISSUES:
        raise ApiError(422, f"An issue can have at most {MAX_SUB_ISSUES} sub-issues")
    if sub.parent is not None:
        repo.issues[sub.parent].sub_issues.remove(sub.number)
    sub.parent = parent.number
    parent.sub_issues.append(sub.number)
    return respond(shapes.issue(sb, repo, parent), 201)


def _is_ancestor(repo: Repo, number: int, item: Issue) -> bool:
    while item.parent is not None:
        if item.parent == number:
            return True
        item = repo.issues[item.parent]
    return False


async def timeline(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "read")
    item = issue_of(repo, int_param(request, "number"))
    events: list[tuple[datetime, dict[str, Any]]] = []
    for c in repo.comments.values():
        if c.issue_number == item.number:
            shape = shapes.comment(sb, repo, c)
            events.append((c.created_at, {**shape, "event": "commented", "actor": shape["user"]}))
    for when, source_repo, source, who in _referrers(sb, repo, item):
        if not can_see(actor, source_repo):
            continue  # GitHub leaves out references from repositories the caller cannot see
        event = {
            "event": "cross-referenced",
            "actor": shapes.user(sb, who),
            "created_at": shapes.iso(when),
            "updated_at": shapes.iso(when),
            "source": {"type": "issue", "issue": shapes.issue(sb, source_repo, source)},
        }
        events.append((when, event))
    events.sort(key=lambda pair: pair[0])
    return respond(page(request, [event for _, event in events]))


def _pattern(sb: Sandbox, target: Repo, number: int, same_repo: bool) -> re.Pattern[str]:
    name = re.escape(target.full_name)
    forms = [
        rf"(?<![\w/]){name}#{number}\b",
        rf"{re.escape(shapes.repo_html(sb, target))}/(?:issues|pull)/{number}\b",
    ]
    if same_repo:
        forms.append(rf"(?<![\w/&]){'#'}{number}\b")
    return re.compile("|".join(forms), re.IGNORECASE)


def _referrers(sb: Sandbox, repo: Repo, item: Issue) -> list[tuple[datetime, Repo, Issue, str]]:
    """(when, repository, issue or pull request, who) of each item naming `item`, earliest.
    Only the texts noted under its number are read (sandbox/references.py)."""
    found: dict[tuple[str, int], tuple[datetime, Repo, Issue, str]] = {}
    patterns: dict[bool, re.Pattern[str]] = {}
    for repo_key, kind, key in sb.references.naming(repo.full_name.lower(), item.number):
        other = sb.repos.get(repo_key)
        text = _text(other, kind, key) if other is not None else None
        if other is None or text is None:
            continue
        number, body, when, who = text
        if other is repo and number == item.number:
            continue
        same_repo = other is repo
        if same_repo not in patterns:
            patterns[same_repo] = _pattern(sb, repo, item.number, same_repo)
        if not patterns[same_repo].search(body):
            continue
        at = (other.full_name, number)
        if at not in found or when < found[at][0]:
            found[at] = (when, other, other.issues[number], who)
    return list(found.values())


def _text(repo: Repo, kind: str, key: int) -> tuple[int, str, datetime, str] | None:
    """(the issue's number, the text, when, who) of an issue's body or a comment."""
    if kind == "issue":
        issue = repo.issues.get(key)
        return None if issue is None else (key, issue.body or "", issue.created_at, issue.user)
    comment = repo.comments.get(key)
    if comment is None:
        return None
    return (comment.issue_number, comment.body, comment.created_at, comment.user)


_ISSUE = "/repos/{owner}/{repo}/issues/{number}"
ROUTES = [
    Route(_ISSUE + "/parent", get_parent),
    Route(_ISSUE + "/sub_issues", list_sub_issues),
    Route(_ISSUE + "/sub_issues", add_sub_issue, methods=["POST"]),
    Route(_ISSUE + "/timeline", timeline),
]
