"""What GitHub holds of a return's cause, read when the session it is for starts.

The record keeps a cause small (who, why, which head, which review); the failing
checks' output and annotations and a review's inline comments stay on GitHub and
are read here, by the cause's commit and review id, bounded: 20 checks, 50
annotations, 50 inline comments, 2,000 characters a text, each cut counted.
A cause given on a companion's pull request (its red checks, a review there) is
read in that repository, on that pull request.
Reading when the session starts, not when the wait settled, costs GitHub nothing
for returns no session follows, and survives a Redis loss with the record. A
GitHub that fails here loses the session only the details: it still runs, told
the cause and what could not be read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog

from ballet.core.limits import clip
from ballet.core.returns import ReturnCause
from ballet.github.forge import FailedCheck, Forge, ForgeError, ReviewDetail
from ballet.sessions.returns import (
    AnnotationInfo,
    CheckInfo,
    ReturnInfo,
    ReviewCommentInfo,
    ReviewInfo,
)

log = structlog.get_logger("ballet.tickets.returns")

MAX_CHECKS = 20
MAX_ANNOTATIONS = 50
MAX_COMMENTS = 50
TEXT_MAX = 2_000
CHECK_KINDS = ("checks_failed", "merge_checks_failed")


class ReturnReads:
    def __init__(
        self, forge_for: Callable[[str], Awaitable[Forge]], *, own_app_id: int | None
    ) -> None:
        self._forge_for = forge_for
        # Ballet's own stage check runs are not what the agent must fix.
        self._own_app_id = own_app_id

    async def read(
        self, repo: str, pr: int | None, causes: tuple[ReturnCause, ...]
    ) -> tuple[ReturnInfo, ...]:
        return tuple([await self._one(repo, pr, c) for c in causes])

    async def _one(self, repo: str, pr: int | None, c: ReturnCause) -> ReturnInfo:
        if c.repo is not None:
            # Given on a companion's pull request: its checks and review are there.
            repo, pr = c.repo, c.pr
        try:
            if c.kind in CHECK_KINDS and c.sha is not None:
                forge = await self._forge_for(repo)
                found = await forge.failed_checks(
                    repo,
                    c.sha,
                    ignore_app=self._own_app_id,
                    max_checks=MAX_CHECKS,
                    max_annotations=MAX_ANNOTATIONS,
                )
                checks = tuple(_check(f) for f in found.checks)
                return ReturnInfo.of(c, checks=checks, checks_left_out=found.checks_left_out)
            if c.kind == "changes_requested" and c.review_id is not None and pr is not None:
                forge = await self._forge_for(repo)
                review = await forge.review(repo, pr, c.review_id, max_comments=MAX_COMMENTS)
                return ReturnInfo.of(c, review=_review(review))
        except ForgeError as exc:
            log.warning("return details unread", repo=repo, kind=c.kind, error=str(exc))
            return ReturnInfo.of(c, unread=f"GitHub answered {exc}")
        return ReturnInfo.of(c)


def _check(f: FailedCheck) -> CheckInfo:
    return CheckInfo(
        name=clip(f.name, 200),
        kind=f.kind,
        conclusion=f.conclusion,
        title=clip(f.title, TEXT_MAX),
        summary=clip(f.summary, TEXT_MAX),
        url=f.url,
        annotations=tuple(
            AnnotationInfo(
                path=clip(a.path, 500),
                start_line=a.start_line,
                end_line=a.end_line,
                level=a.level,
                message=clip(a.message, TEXT_MAX),
                title=clip(a.title, 500) if a.title else None,
            )
            for a in f.annotations
        ),
        annotations_left_out=f.annotations_left_out,
    )


def _review(r: ReviewDetail) -> ReviewInfo:
    return ReviewInfo(
        author=r.author,
        state=r.state,
        body=clip(r.body, TEXT_MAX),
        commit_id=r.commit_id,
        url=r.html_url,
        comments=tuple(
            ReviewCommentInfo(
                path=clip(c.path, 500),
                line=c.line,
                start_line=c.start_line,
                side=c.side,
                diff_hunk=clip(c.diff_hunk, TEXT_MAX),
                body=clip(c.body, TEXT_MAX),
            )
            for c in r.comments
        ),
        comments_left_out=r.comments_left_out,
    )
