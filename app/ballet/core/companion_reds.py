"""A companion's red checks, kept until the ticket can act on them.

A companion pull request's checks may finish red while a session runs (or the
ticket is paused, or waits for something other than its landing). Nothing can
be returned then, so the verdict is kept on the record's `CompanionPR.checks`,
for the head it was heard on; when the ticket comes to land (`steps.land`, as
the session that led there ends), a red verdict on a companion's current head
returns the ticket, its cause naming the repository, the pull request and the
head, as red checks on its own head do. A new head pushed there since (the next
session's commits) leaves it behind: its own checks decide.
"""

from __future__ import annotations

from datetime import datetime

from ballet.core.record import CompanionPR, Record
from ballet.core.returns import ReturnCause, cause


def red_on_head(pr: CompanionPR) -> str | None:
    """The red verdict kept for `pr`'s current head (its summary), if there is one."""
    seen = pr.checks
    if seen is None or seen.sha != pr.head_sha or seen.outcome != "fail":
        return None
    return seen.summary


def held_red(rec: Record) -> CompanionPR | None:
    """The first open companion pull request (landing order) whose head is red."""
    open_prs = (pr for pr in rec.companion_prs if pr.state == "open")
    return next((pr for pr in open_prs if red_on_head(pr) is not None), None)


def red_cause(rec: Record, pr: CompanionPR, summary: str, at: datetime) -> ReturnCause:
    """The return for red checks on `pr`'s head: the session job reads their output
    and annotations in the companion's repository (tickets/return_reads.py)."""
    here = rec.stage or ""
    text = f"red checks on {pr.repo}#{pr.number} at {pr.head_sha[:12]}: {summary}"
    return cause("merge_checks_failed", here, at, by=f"stage:{here}", sha=pr.head_sha,
                 text=text, repo=pr.repo, pr=pr.number)  # fmt: skip
