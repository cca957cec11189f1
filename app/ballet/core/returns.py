"""Why a ticket came back for rework, and what people did to its sign-offs.

A return (a reject, red checks, a merge refused, a review asking for changes, a
sign-off's `changes`, a stage's report) is kept on the record as a `ReturnCause`,
so it is written through to the tracking comment and survives a Redis loss; the
sessions of the iteration it started are given it. The record keeps only what
the event said, bounded: the failing checks' output and a review's inline
comments stay on GitHub, and the session job reads them by the cause's `sha`
and `review_id` when the session starts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ballet.core.limits import clip

ReturnKind = Literal[
    "rejected",  # `/ballet reject <reason>` at a human stage
    "checks_failed",  # red checks at a checks wait
    "merge_conflict",  # the merge was refused: the branch conflicts with its base
    "merge_checks_failed",  # the merge was refused: red required checks
    "merge_closed",  # the pull request was closed under the merge
    "changes_requested",  # a pull-request review asking for changes
    "signoff_changes",  # a sign-off role's session reported `changes`
    "stage_report",  # an agent stage's report routed the ticket back
]
# What a cause's text may hold; the tracking comment carries every cause.
CAUSE_TEXT_MAX = 2_000
# Reviews asking for changes that wait for a running session or merge to end.
PENDING_MAX = 5


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReturnCause(Frozen):
    kind: ReturnKind
    stage: str  # the stage that returned the ticket
    by: str = ""  # a login, `role:<name>` or `stage:<id>`
    sha: str | None = None  # the head it was given on, or the commit the checks ran on
    text: str = ""  # the reason, the review's body, the merge's or the report's words
    review_id: int | None = None
    at: datetime
    # The commit a rework session left after a review asked for changes, once told.
    addressed_in: str | None = None
    # A companion's pull request it was given on (its checks, its review): the session
    # job reads the details there; None: the ticket's own repository and pull request.
    repo: str | None = None
    pr: int | None = None


def cause(
    kind: ReturnKind,
    stage: str,
    at: datetime,
    *,
    by: str = "",
    sha: str | None = None,
    text: str = "",
    review_id: int | None = None,
    repo: str | None = None,
    pr: int | None = None,
) -> ReturnCause:
    return ReturnCause(
        kind=kind,
        stage=stage,
        by=by,
        sha=sha,
        text=clip(text, CAUSE_TEXT_MAX),
        review_id=review_id,
        at=at,
        repo=repo,
        pr=pr,
    )


class SignoffChange(Frozen):
    """A role's sign-off required or waived by a person, required by a session's
    report, or no longer needed because `.ballet.yml` deleted the role."""

    role: str
    action: Literal["required", "waived", "deleted"]
    by: str  # a login, `stage:<id>` or `role:<name>` (a report), `config:<sha>` (deleted)
    at: datetime


def describe_change(c: SignoffChange) -> str:
    """One line for a session's prompt: who changed which sign-off."""
    if c.action == "deleted":
        sha = c.by.removeprefix("config:")
        return (
            f"`.ballet.yml` on the default branch ({sha}) no longer has the role `{c.role}`:"
            " its sign-off is no longer needed"
        )
    if c.by.startswith("stage:"):
        who = f"stage `{c.by.removeprefix('stage:')}`'s report"
    elif c.by.startswith("role:"):
        who = f"the `{c.by.removeprefix('role:')}` sign-off's report"
    else:
        who = f"@{c.by}"
    return f"{who} {c.action} the sign-off of `{c.role}`"


def describe(c: ReturnCause) -> str:
    """One line for people and the tracking comment."""
    who = f" by @{c.by}" if c.by and not c.by.startswith(("role:", "stage:")) else ""
    on = f" on {c.sha[:12]}" if c.sha else ""
    if c.repo is not None:
        on += f" of {c.repo}" + (f"#{c.pr}" if c.pr is not None else "")
    words = {
        "rejected": f"rejected{who}{on}",
        "checks_failed": f"red checks{on}",
        "merge_conflict": "the merge found a conflict with the base branch",
        "merge_checks_failed": f"the merge found red required checks{on}",
        "merge_closed": "the pull request was closed under the merge",
        "changes_requested": f"changes requested in a review{who}{on}",
        "signoff_changes": f"sign-off `{c.by.removeprefix('role:')}` asked for changes",
        "stage_report": f"`{c.stage}` sent it back",
    }
    return words[c.kind]
