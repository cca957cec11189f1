"""Pull-request reviews and their inline comments: submit a review (with GitHub's draft
comments), read one review, its comments and all of a pull request's, reply in a thread.

As on GitHub, anyone who may comment on the repository (it is public) may review
and reply, reads follow the repository's read rules, and every inline comment
belongs to a review: a reply is filed under a review of its own, which GitHub
announces (`pull_request_review.submitted`) like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ballet.sandbox import diffs, events, gitcache, shapes
from ballet.sandbox.errors import ApiError, not_found, unprocessable
from ballet.sandbox.handler import body_of, field, int_param, now, page, repo_for, respond
from ballet.sandbox.pullview import base_sha
from ballet.sandbox.rest_pulls import pull_of
from ballet.sandbox.state import Pull, Repo, Review, ReviewComment, Sandbox

REVIEW_EVENTS = {
    "APPROVE": "APPROVED",
    "REQUEST_CHANGES": "CHANGES_REQUESTED",
    "COMMENT": "COMMENTED",
}
SIDES = ("LEFT", "RIGHT")


@dataclass(frozen=True)
class Draft:
    """A draft review comment as the request names it, placed in the diff."""

    path: str
    body: str
    line: int
    side: str
    start_line: int | None
    start_side: str | None
    anchor: diffs.Anchor


def _unresolved(what: str) -> ApiError:
    # GitHub's own words when a draft comment is not on a line of the diff.
    return ApiError(422, "Unprocessable Entity", [f"{what} could not be resolved"])


def _side(item: dict[str, Any], name: str, default: str | None) -> str | None:
    side = field(item, name, str) or default
    if side is not None and side not in SIDES:
        raise unprocessable(f"{name} must be LEFT or RIGHT", field=name)
    return side


def _draft(repo: Repo, base: str, commit: str, item: Any) -> Draft:
    if not isinstance(item, dict):
        raise unprocessable("Each review comment must be an object", field="comments")
    if item.get("position") is not None:
        raise unprocessable(
            "The sandbox places review comments by line: send line (and side), not position",
            field="position",
        )
    path = field(item, "path", str, required=True)
    body = field(item, "body", str, required=True)
    line = field(item, "line", int, required=True)
    side = _side(item, "side", "RIGHT") or "RIGHT"
    start_line = field(item, "start_line", int)
    start_side = _side(item, "start_side", side if start_line is not None else None)
    if start_line is not None and start_side == side and start_line >= line:
        raise unprocessable("start_line must precede line", field="start_line")
    diff = diffs.file_diff(repo.path, base, commit, path)
    if diff is None:
        raise _unresolved("Path")
    found = diffs.anchor(diff, line, side)
    first = None if start_line is None else diffs.anchor(diff, start_line, start_side or side)
    if found is None or (start_line is not None and first is None):
        raise _unresolved("Line")
    return Draft(path, body, line, side, start_line, start_side, found)


def _submit(sb: Sandbox, repo: Repo, pr: Pull, login: str, data: dict[str, Any]) -> Review:
    event = field(data, "event", str) or "COMMENT"
    if event not in REVIEW_EVENTS:
        raise unprocessable(
            f"{event} is not a review event: use APPROVE, REQUEST_CHANGES or COMMENT", field="event"
        )
    if event != "COMMENT" and login == repo.issues[pr.number].user:
        raise unprocessable("Can not approve your own pull request", field="event")
    commit = pr.head_sha
    asked = field(data, "commit_id", str)
    if asked is not None:
        commit = gitcache.commit(repo, asked) or ""
        if not commit:
            raise unprocessable(f"No commit found for SHA: {asked}", field="commit_id")
    items = field(data, "comments", list) or []
    # Every draft is placed before anything is made: a refused review leaves nothing behind.
    drafts = [_draft(repo, base_sha(repo, pr), commit, item) for item in items]
    body = field(data, "body", str) or ""
    if event != "APPROVE" and not body and not drafts:
        raise unprocessable(f"Body is required for {event} events.", field="body")
    review = Review(sb.next_id(), pr.number, login, body, REVIEW_EVENTS[event], commit, now())
    repo.reviews[review.id] = review
    for d in drafts:
        item = ReviewComment(
            sb.next_id(),
            pr.number,
            review.id,
            login,
            d.body,
            d.path,
            d.line,
            d.side,
            d.start_line,
            d.start_side,
            commit,
            d.anchor.position,
            d.anchor.diff_hunk,
            review.submitted_at,
        )
        repo.review_comments[item.id] = item
    return review


async def create_review(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "read")
    pr = pull_of(repo, int_param(request, "number"))
    review = _submit(sb, repo, pr, actor.login, await body_of(request))
    if actor.login in pr.requested_reviewers:
        pr.requested_reviewers.remove(actor.login)
    events.review_submitted(sb, repo, review, actor.login)
    sb.reviewed(repo, pr.number)
    return respond(shapes.review(sb, repo, review))


async def list_reviews(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    number = pull_of(repo, int_param(request, "number")).number
    found = [r for r in repo.reviews.values() if r.pull_number == number]
    return respond([shapes.review(sb, repo, r) for r in page(request, found)])


def _review_of(request: Request, repo: Repo) -> Review:
    number = pull_of(repo, int_param(request, "number")).number
    review = repo.reviews.get(int_param(request, "review_id"))
    if review is None or review.pull_number != number:
        raise not_found()
    return review


async def get_review(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    return respond(shapes.review(sb, repo, _review_of(request, repo)))


async def list_review_comments(request: Request) -> JSONResponse:
    """One review's comments (GitHub's `review-comment` items), oldest first."""
    sb, repo, _ = repo_for(request, "read")
    review = _review_of(request, repo)
    found = [c for c in repo.review_comments.values() if c.review_id == review.id]
    return respond([shapes.review_comment(sb, repo, c) for c in page(request, found)])


async def list_pull_comments(request: Request) -> JSONResponse:
    """Every review comment of the pull request, replies too, oldest first."""
    sb, repo, _ = repo_for(request, "read")
    number = pull_of(repo, int_param(request, "number")).number
    found = [c for c in repo.review_comments.values() if c.pull_number == number]
    return respond([shapes.review_comment(sb, repo, c) for c in page(request, found)])


async def reply(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "read")
    pr = pull_of(repo, int_param(request, "number"))
    target = repo.review_comments.get(int_param(request, "comment_id"))
    if target is None or target.pull_number != pr.number:
        raise not_found()
    body = field(await body_of(request), "body", str, required=True)
    # GitHub documents replies to top-level comments only; one to a reply joins the
    # same thread, as the web does, rather than starting a thread of its own.
    root = repo.review_comments.get(target.in_reply_to_id or target.id, target)
    review = Review(sb.next_id(), pr.number, actor.login, "", "COMMENTED", pr.head_sha, now())
    repo.reviews[review.id] = review
    item = ReviewComment(
        sb.next_id(),
        pr.number,
        review.id,
        actor.login,
        body,
        root.path,
        root.line,
        root.side,
        root.start_line,
        root.start_side,
        root.commit_id,
        root.position,
        root.diff_hunk,
        review.submitted_at,
        in_reply_to_id=root.id,
    )
    repo.review_comments[item.id] = item
    events.review_submitted(sb, repo, review, actor.login)
    return respond(shapes.review_comment(sb, repo, item), 201)


_PULL = "/repos/{owner}/{repo}/pulls/{number}"
_REVIEW = _PULL + "/reviews/{review_id}"
ROUTES = [
    Route(_PULL + "/reviews", create_review, methods=["POST"]),
    Route(_PULL + "/reviews", list_reviews),
    Route(_REVIEW, get_review),
    Route(_REVIEW + "/comments", list_review_comments),
    Route(_PULL + "/comments", list_pull_comments),
    Route(_PULL + "/comments/{comment_id}/replies", reply, methods=["POST"]),
]
