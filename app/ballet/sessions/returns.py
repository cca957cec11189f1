"""Why the ticket came back, and its sign-offs, as a session is told them.

The engine keeps each return's cause on the record (`ballet.core.returns`); the
session job adds what GitHub holds of it — the failing checks' output and
annotations, a review's body and inline comments — bounded where it is read
(`ballet.tickets.return_reads`). Here it becomes the prompt's "Why this ticket
came back" section (short, readable) and BALLET_CONTEXT's `returned` and
`signoffs` (structured; docs/session-contract.md).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from ballet.core.record import SignOff
from ballet.core.returns import (
    ReturnCause,
    ReturnKind,
    SignoffChange,
    describe,
    describe_change,
)


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AnnotationInfo(Frozen):
    path: str
    start_line: int
    end_line: int
    level: str
    message: str
    title: str | None = None


class CheckInfo(Frozen):
    name: str
    kind: str  # "check_run" | "status"
    conclusion: str
    title: str = ""
    summary: str = ""
    url: str | None = None
    annotations: tuple[AnnotationInfo, ...] = ()
    annotations_left_out: int = 0


class ReviewCommentInfo(Frozen):
    path: str
    line: int | None = None
    start_line: int | None = None
    side: str | None = None
    diff_hunk: str = ""
    body: str


class ReviewInfo(Frozen):
    author: str
    state: str
    body: str
    commit_id: str | None = None
    url: str = ""
    comments: tuple[ReviewCommentInfo, ...] = ()
    comments_left_out: int = 0


class ReturnInfo(Frozen):
    kind: ReturnKind
    stage: str
    by: str = ""
    sha: str | None = None
    text: str = ""
    at: datetime
    checks: tuple[CheckInfo, ...] = ()
    checks_left_out: int = 0
    review: ReviewInfo | None = None
    unread: str = ""  # what GitHub could not tell when the session started, and why
    # A companion's pull request the cause was given on, where its details were read.
    repo: str | None = None
    pr: int | None = None

    @classmethod
    def of(cls, c: ReturnCause, **details: object) -> ReturnInfo:
        return cls.model_validate(
            {
                "kind": c.kind,
                "stage": c.stage,
                "by": c.by,
                "sha": c.sha,
                "text": c.text,
                "at": c.at,
                "repo": c.repo,
                "pr": c.pr,
                **details,
            }
        )


class Signoffs(Frozen):
    required: tuple[str, ...] = ()
    given: tuple[SignOff, ...] = ()
    changes: tuple[SignoffChange, ...] = ()  # since this kind of session last began


def returned_section(returned: tuple[ReturnInfo, ...]) -> str:
    if not returned:
        return ""
    parts = [
        "## Why this ticket came back\n\nThe work was returned for rework. Address what "
        "follows first; all of it is in $BALLET_CONTEXT (`returned`)."
    ]
    for r in returned:
        said = describe(
            ReturnCause(kind=r.kind, stage=r.stage, by=r.by, sha=r.sha, at=r.at, repo=r.repo,
                        pr=r.pr)
        )  # fmt: skip
        lines = [f"### {said[:1].upper()}{said[1:]} (stage `{r.stage}`)"]
        if r.text and r.review is None:  # a review read from GitHub shows its own body
            lines.append(_quote(r.text))
        lines += [_check(c) for c in r.checks]
        if r.checks_left_out:
            lines.append(f"({r.checks_left_out} more failing checks left out)")
        if r.review is not None:
            lines.append(_review(r.review))
        if r.unread:
            lines.append(f"(Not read from GitHub: {r.unread})")
        parts.append("\n\n".join(lines))
    return "\n\n".join(parts)


def signoffs_section(s: Signoffs) -> str:
    if not (s.required or s.given or s.changes):
        return ""
    given = {g.role for g in s.given}
    lines = ["## Sign-offs"]
    if s.required:
        needed = ", ".join(f"`{r}`" + (" (given)" if r in given else "") for r in s.required)
        lines.append(f"Needed before review and merge: {needed}.")
    lines += [f"- {describe_change(c)}" for c in s.changes]
    return "\n\n".join(lines)


def _check(c: CheckInfo) -> str:
    head = f"- Check `{c.name}`: {c.conclusion}" + (f" — {c.title}" if c.title else "")
    lines = [head]
    if c.summary:
        lines.append(_indent(c.summary))
    for a in c.annotations:
        where = f"{a.path}:{a.start_line}" + (
            f"-{a.end_line}" if a.end_line != a.start_line else ""
        )
        title = f" {a.title}:" if a.title else ""
        lines.append(f"  - {where} [{a.level}]{title} {a.message}")
    if c.annotations_left_out:
        lines.append(f"  - ({c.annotations_left_out} more annotations left out)")
    return "\n".join(lines)


def _review(r: ReviewInfo) -> str:
    lines = [f"Review by @{r.author} ({r.state.lower()}) of {r.commit_id or 'the head'}:"]
    if r.body:
        lines.append(_quote(r.body))
    for c in r.comments:
        span = f"{c.start_line}-{c.line}" if c.start_line and c.line else str(c.line or "?")
        lines.append(f"- `{c.path}` line {span}:\n{_indent(c.body)}")
        if c.diff_hunk:
            lines.append(_indent(f"```diff\n{c.diff_hunk}\n```"))
    if r.comments_left_out:
        lines.append(f"({r.comments_left_out} more inline comments left out)")
    return "\n".join(lines)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines())
