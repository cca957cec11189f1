"""Issues, issue comments, labels on issues and comment reactions."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ballet.sandbox import events, shapes
from ballet.sandbox.auth import Actor, require
from ballet.sandbox.errors import not_found, unprocessable
from ballet.sandbox.handler import body_of, field, int_param, now, page, repo_for, respond
from ballet.sandbox.state import Comment, Issue, Label, Repo, Sandbox


def issue_of(repo: Repo, number: int) -> Issue:
    item = repo.issues.get(number)
    if item is None:
        raise not_found()
    return item


def ensure_label(sb: Sandbox, repo: Repo, name: str) -> None:
    """Repository labels come into being when first used, as `gh issue edit` users expect."""
    if name not in repo.labels:
        repo.labels[name] = Label(sb.next_id(), name)


def set_labels(sb: Sandbox, repo: Repo, item: Issue, names: list[str], actor: Actor) -> None:
    """Make `names` the issue's labels, announcing each one added or removed."""
    added = [n for n in dict.fromkeys(names) if n not in item.labels]
    removed = [n for n in item.labels if n not in names]
    for name in added:
        ensure_label(sb, repo, name)
    item.labels = [n for n in item.labels if n in names] + added
    item.updated_at = now()
    for name in removed:
        events.labeled(sb, repo, item, name, False, actor.login)
    for name in added:
        events.labeled(sb, repo, item, name, True, actor.login)


def _label_names(data: dict[str, Any]) -> list[str]:
    raw = data.get("labels", [])
    names = (
        [entry.get("name") if isinstance(entry, dict) else entry for entry in raw]
        if isinstance(raw, list)
        else None
    )
    if names is None or not all(isinstance(n, str) and n for n in names):
        raise unprocessable('"labels" must be a list of label names.', field="labels")
    return [str(n) for n in names]


async def create_issue(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "read")
    data = await body_of(request)
    title = field(data, "title", str, required=True)
    labels = _label_names(data) if "labels" in data else []
    if labels:
        require(actor, repo, "triage")
    moment = now()
    number = max(repo.issues, default=0) + 1
    item = Issue(sb.next_id(), number, title, field(data, "body", str), actor.login, moment, moment)
    sb.references.note(repo.full_name.lower(), "issue", number, item.body)
    repo.issues[number] = item
    events.issues(sb, repo, item, "opened", actor.login)
    set_labels(sb, repo, item, labels, actor)
    return respond(shapes.issue(sb, repo, item), 201)


async def get_issue(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    return respond(shapes.issue(sb, repo, issue_of(repo, int_param(request, "number"))))


async def list_issues(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    state = request.query_params.get("state", "open")
    wanted = [n for n in request.query_params.get("labels", "").split(",") if n]
    creator = request.query_params.get("creator")
    found = [
        item
        for item in sorted(repo.issues.values(), key=lambda i: -i.number)
        if (state == "all" or item.state == state)
        and all(n in item.labels for n in wanted)
        and (creator is None or item.user == creator)
    ]
    return respond([shapes.issue(sb, repo, item) for item in page(request, found)])


async def update_issue(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "read")
    item = issue_of(repo, int_param(request, "number"))
    if actor.login != item.user:
        require(actor, repo, "triage")
    data = await body_of(request)
    apply_issue_update(sb, repo, item, data, actor)
    return respond(shapes.issue(sb, repo, item))


def apply_issue_update(
    sb: Sandbox, repo: Repo, item: Issue, data: dict[str, Any], actor: Actor
) -> None:
    """Title, body, state and labels of an issue or pull request, each announced."""
    changes: dict[str, Any] = {}
    for name in ("title", "body"):
        value = field(data, name, str)
        if value is not None and value != getattr(item, name):
            changes[name] = {"from": getattr(item, name)}
            setattr(item, name, value)
            if name == "body":
                sb.references.note(repo.full_name.lower(), "issue", item.number, value)
    if changes:
        item.updated_at = now()
        if item.is_pull:
            events.pull_request(sb, repo, item.number, "edited", actor.login, changes=changes)
        else:
            events.issues(sb, repo, item, "edited", actor.login, changes=changes)
    if "labels" in data:
        require(actor, repo, "triage")
        set_labels(sb, repo, item, _label_names(data), actor)
    state = field(data, "state", str)
    if state not in (None, "open", "closed"):
        raise unprocessable(f"{state} is not a valid state: use open or closed", field="state")
    if state and state != item.state:
        set_state(sb, repo, item, state, field(data, "state_reason", str), actor)


def set_state(
    sb: Sandbox, repo: Repo, item: Issue, state: str, reason: str | None, actor: Actor
) -> None:
    moment = now()
    item.state, item.updated_at = state, moment
    item.closed_at = moment if state == "closed" else None
    item.state_reason = (reason or "completed") if state == "closed" else "reopened"
    action = "closed" if state == "closed" else "reopened"
    if item.is_pull:
        events.pull_request(sb, repo, item.number, action, actor.login)
    else:
        events.issues(sb, repo, item, action, actor.login)


async def add_labels(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "triage")
    item = issue_of(repo, int_param(request, "number"))
    names = _label_names(await body_of(request))
    set_labels(sb, repo, item, item.labels + names, actor)
    return respond([shapes.label(sb, repo, repo.labels[n]) for n in item.labels])


async def replace_labels(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "triage")
    item = issue_of(repo, int_param(request, "number"))
    set_labels(sb, repo, item, _label_names(await body_of(request)), actor)
    return respond([shapes.label(sb, repo, repo.labels[n]) for n in item.labels])


async def remove_label(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "triage")
    item = issue_of(repo, int_param(request, "number"))
    name = request.path_params["name"]
    if name not in item.labels:
        raise not_found()
    set_labels(sb, repo, item, [n for n in item.labels if n != name], actor)
    return respond([shapes.label(sb, repo, repo.labels[n]) for n in item.labels])


async def list_repo_labels(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    found = sorted(repo.labels.values(), key=lambda lab: lab.name.casefold())
    return respond([shapes.label(sb, repo, lab) for lab in page(request, found)])


async def create_repo_label(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "write")
    data = await body_of(request)
    name = field(data, "name", str, required=True)
    color = (field(data, "color", str) or "ededed").removeprefix("#")
    if len(color) != 6 or any(c not in "0123456789abcdefABCDEF" for c in color):
        raise unprocessable(f"{color} is not a hex color like f29513", field="color")
    if name in repo.labels:
        raise unprocessable(f"Label {name} already exists", field="name", code="already_exists")
    repo.labels[name] = Label(sb.next_id(), name, color.lower(), field(data, "description", str))
    return respond(shapes.label(sb, repo, repo.labels[name]), 201)


async def list_issue_labels(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    item = issue_of(repo, int_param(request, "number"))
    return respond([shapes.label(sb, repo, repo.labels[n]) for n in item.labels])


def comment_of(repo: Repo, comment_id: int) -> Comment:
    item = repo.comments.get(comment_id)
    if item is None:
        raise not_found()
    return item


async def create_comment(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "read")
    item = issue_of(repo, int_param(request, "number"))
    body = field(await body_of(request), "body", str, required=True)
    moment = now()
    made = Comment(sb.next_id(), item.number, body, actor.login, moment, moment)
    repo.comments[made.id] = made
    sb.references.note(repo.full_name.lower(), "comment", made.id, body)
    item.updated_at = moment
    events.issue_comment(sb, repo, made, "created", actor.login)
    return respond(shapes.comment(sb, repo, made), 201)


async def list_comments(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    number = issue_of(repo, int_param(request, "number")).number
    found = [c for c in repo.comments.values() if c.issue_number == number]
    return respond([shapes.comment(sb, repo, c) for c in page(request, found)])


async def get_comment(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    return respond(shapes.comment(sb, repo, comment_of(repo, int_param(request, "comment_id"))))


async def edit_comment(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "read")
    item = comment_of(repo, int_param(request, "comment_id"))
    if actor.login != item.user:
        require(actor, repo, "write")
    body = field(await body_of(request), "body", str, required=True)
    if body != item.body:
        previous, item.body, item.updated_at = item.body, body, now()
        sb.references.note(repo.full_name.lower(), "comment", item.id, body)
        events.issue_comment(
            sb, repo, item, "edited", actor.login, changes={"body": {"from": previous}}
        )
    return respond(shapes.comment(sb, repo, item))


async def delete_comment(request: Request) -> Response:
    sb, repo, actor = repo_for(request, "read")
    item = comment_of(repo, int_param(request, "comment_id"))
    if actor.login != item.user:
        require(actor, repo, "write")
    events.issue_comment(sb, repo, item, "deleted", actor.login)
    del repo.comments[item.id]
    sb.references.forget(repo.full_name.lower(), "comment", item.id)
    return Response(status_code=204)


async def react(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "read")
    item = comment_of(repo, int_param(request, "comment_id"))
    content = field(await body_of(request), "content", str, required=True)
    if content not in shapes.REACTIONS:
        raise unprocessable(
            f"{content} is not a reaction: use one of {', '.join(shapes.REACTIONS)}",
            field="content",
        )
    for rid, login, existing in item.reactions:
        if login == actor.login and existing == content:
            # GitHub answers 200 with the reaction already there.
            return respond(shapes.reaction(sb, rid, login, content, item.created_at))
    rid = sb.next_id()
    item.reactions.append((rid, actor.login, content))
    return respond(shapes.reaction(sb, rid, actor.login, content, now()), 201)


_ISSUE = "/repos/{owner}/{repo}/issues/{number}"
_COMMENT = "/repos/{owner}/{repo}/issues/comments/{comment_id}"
ROUTES = [
    Route("/repos/{owner}/{repo}/issues", create_issue, methods=["POST"]),
    Route("/repos/{owner}/{repo}/issues", list_issues),
    Route(_COMMENT, get_comment),
    Route(_COMMENT, edit_comment, methods=["PATCH"]),
    Route(_COMMENT, delete_comment, methods=["DELETE"]),
    Route(_COMMENT + "/reactions", react, methods=["POST"]),
    Route(_ISSUE, get_issue),
    Route(_ISSUE, update_issue, methods=["PATCH"]),
    Route("/repos/{owner}/{repo}/labels", list_repo_labels),
    Route("/repos/{owner}/{repo}/labels", create_repo_label, methods=["POST"]),
    Route(_ISSUE + "/labels", list_issue_labels),
    Route(_ISSUE + "/labels", add_labels, methods=["POST"]),
    Route(_ISSUE + "/labels", replace_labels, methods=["PUT"]),
    Route(_ISSUE + "/labels/{name}", remove_label, methods=["DELETE"]),
    Route(_ISSUE + "/comments", create_comment, methods=["POST"]),
    Route(_ISSUE + "/comments", list_comments),
]
