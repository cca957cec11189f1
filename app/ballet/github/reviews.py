"""Pull-request reviews for `GitHubForge`: one review with its inline comments, and a
reply in a comment's thread (kept here so the adapter's module stays short).

Paths and shapes (the models hold only what Ballet reads; `tests/openapi` walks
them against GitHub's OpenAPI description):
- `GET /repos/{o}/{r}/pulls/{n}/reviews/{id}`: a `pull-request-review`;
- `GET .../reviews/{id}/comments`: a list of `review-comment`;
- `POST /repos/{o}/{r}/pulls/{n}/comments/{id}/replies`: makes a
  `pull-request-review-comment` (GitHub files it under a review of its own).
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import TypeAdapter

from ballet.github import models as m
from ballet.github.forge import ReviewComment, ReviewDetail
from ballet.github.issue_graph import Client


class PagedClient(Client, Protocol):
    async def pages(self, path: str, params: dict[str, Any] | None = None) -> list[Any]: ...


class ReviewData(m.Lenient):
    id: int
    user: m.User | None = None  # null: the reviewer's account was deleted
    state: str  # GitHub documents a plain string: APPROVED, CHANGES_REQUESTED, ...
    body: str | None = None
    commit_id: str | None = None
    html_url: str = ""


class ReviewCommentData(m.Lenient):
    id: int
    path: str
    # GitHub sends null `line` for a comment whose line the branch has since changed
    # (outdated); `original_line` is where it was made.
    line: int | None = None
    original_line: int | None = None
    start_line: int | None = None
    original_start_line: int | None = None
    side: str | None = None
    diff_hunk: str = ""
    body: str | None = None
    user: m.User | None = None
    in_reply_to_id: int | None = None

    def comment(self) -> ReviewComment:
        outdated = self.line is None
        return ReviewComment(
            id=self.id,
            path=self.path,
            line=self.original_line if outdated else self.line,
            start_line=self.original_start_line if outdated else self.start_line,
            side=self.side,
            diff_hunk=self.diff_hunk,
            body=self.body or "",
            author=self.user.login if self.user is not None else m.GHOST,
            in_reply_to=self.in_reply_to_id,
        )


_comments = TypeAdapter(list[ReviewCommentData])


class ReviewCalls:
    _client: PagedClient

    async def review(
        self, repo: str, pr: int, review_id: int, *, max_comments: int = 50
    ) -> ReviewDetail:
        path = f"/repos/{repo}/pulls/{pr}/reviews/{review_id}"
        data = ReviewData.model_validate(await self._client.json("GET", path))
        # All pages are read to count what is left out; a review of more than a
        # hundred comments (one page) is rare enough for that to cost nothing.
        comments = _comments.validate_python(await self._client.pages(f"{path}/comments"))
        kept = comments[: max(max_comments, 0)]
        return ReviewDetail(
            id=data.id,
            author=data.user.login if data.user is not None else m.GHOST,
            state=data.state,
            body=data.body or "",
            commit_id=data.commit_id,
            html_url=data.html_url,
            comments=tuple(c.comment() for c in kept),
            comments_left_out=len(comments) - len(kept),
        )

    async def reply_to_review_comment(self, repo: str, pr: int, comment_id: int, body: str) -> None:
        await self._client.call(
            "POST", f"/repos/{repo}/pulls/{pr}/comments/{comment_id}/replies", json={"body": body}
        )
