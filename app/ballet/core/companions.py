"""A ticket's pull requests in its companions (`.ballet.yml` `companions:`).

A session pushes the ticket's branch in each companion it committed in and names
their heads (`SessionFinished.companion_heads`); the first time a companion has
commits, the ticket asks the edge for a draft pull request there (`OpenCompanionPR`),
and the edge answers `CompanionPROpened`. The record keeps every one, in landing
order, so its tracking comment's state block names them all: a record rebuilt
from GitHub after Redis was lost loses none, and a pull request asked for and
never heard of is asked for again after the next session (the edge reuses an
open one, so a repeat opens nothing twice).
"""

from __future__ import annotations

from collections.abc import Mapping

from ballet.core import handlers
from ballet.core.companion_text import companion_pr_body, link_effects
from ballet.core.effects import MarkReadyForReview, OpenCompanionPR, SetCheckRun
from ballet.core.events import CompanionPROpened, SessionFinished
from ballet.core.handlers import IllegalEvent
from ballet.core.record import CompanionPR, Record
from ballet.core.tx import Tx


def session_finished(tx: Tx, ev: SessionFinished) -> None:
    """The companions' heads first: the report's route (a landing) sees them. A stale
    result raises in `handlers.session_finished`, and nothing of this is kept."""
    heads_pushed(tx, ev.companion_heads)
    handlers.session_finished(tx, ev)


def heads_pushed(tx: Tx, heads: Mapping[str, str]) -> None:
    """Keep each companion's new head; ask for its pull request where it has none."""
    rec = tx.rec
    if rec.branch is None:
        return  # a pipeline without a branch pushes nothing
    known = {pr.repo: pr for pr in rec.companion_prs}
    kept: list[CompanionPR] = []
    for repo in rec.pipeline.companions:  # landing order, whatever order heads came in
        pr, head = known.get(repo), heads.get(repo)
        if pr is None and head is None:
            continue
        if head is not None and (
            pr is None or pr.state == "closed" or (pr.state == "merged" and head != pr.head_sha)
        ):
            # New, or its pull request was closed, or merged before these commits: one more.
            pr = CompanionPR(repo=repo, head_sha=head)
        elif pr is not None and head is not None:
            pr = pr.model_copy(update={"head_sha": head})
        assert pr is not None
        kept.append(pr)
    tx.set(companion_prs=tuple(kept))
    for pr in kept:
        if pr.number is None and pr.repo in heads:
            tx.emit(open_effect(tx.rec, pr.repo))


def open_effect(rec: Record, repo: str) -> OpenCompanionPR:
    assert rec.branch is not None
    return OpenCompanionPR(
        repo=repo, ticket=rec.key, branch=rec.branch, title=rec.ticket.title,
        body=companion_pr_body(rec, repo),
    )  # fmt: skip


def pr_opened(tx: Tx, ev: CompanionPROpened) -> None:
    """The companion's pull request is known: its number joins the record."""
    prs = tx.rec.companion_prs
    at = next((i for i, pr in enumerate(prs) if pr.repo == ev.repo), None)
    if at is None:
        raise IllegalEvent(f"{ev.repo} has no pull request of {tx.rec.key} asked for")
    if prs[at].number == ev.number:
        raise IllegalEvent(f"{ev.repo}#{ev.number} is known already")
    tx.set(companion_prs=tx.rec.with_companion_pr(prs[at].model_copy(update={"number": ev.number})))
    tx.emit(*link_effects(tx.rec))  # each of the ticket's pull requests names this one
    if tx.rec.ready_for_review:
        # Opened as a draft after the ticket's own went into review: it follows
        # (companion_merges.in_review_with_the_ticket).
        tx.emit(MarkReadyForReview(repo=ev.repo, number=ev.number))


def on_companions(rec: Record, runs: list[SetCheckRun]) -> list[SetCheckRun]:
    """A stage run's verdict on the ticket's head, written on every companion's head
    too: each pull request shows what every stage said of the change it is part of."""
    heads = [(pr.repo, pr.head_sha) for pr in rec.companion_prs if pr.state == "open"]
    return [
        run.model_copy(update={"repo": repo, "head_sha": head, "closes_start": False})
        for run in runs
        if run.status == "completed" and run.head_sha == rec.head_sha
        for repo, head in heads
    ]
