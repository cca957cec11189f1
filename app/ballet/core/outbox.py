"""Which pending effects a later one in the same outbox makes redundant.

A ticket's outbox is carried out in order, and one drain often holds several
transitions at once: opening the PR feeds `PullRequestOpened` back, an instant
merge feeds its result back. Each transition writes the tracking comment, sets
a stage's check run and moves the status labels; only the last state of each
is worth a request to GitHub:
- a tracking comment (or a check run) another effect later in the outbox
  rewrites is skipped: the later one writes the same comment (check run) with
  the newer content, and it is in the outbox already, so it cannot be lost;
- label changes on one issue are folded into their net change: a label added
  and then removed again (or removed and added back) is never touched;
- marking a draft ready for review is left to a merge of the same PR behind
  it, which marks the draft ready itself with the PR it reads anyway.

Writes of a start are deferred (`with_grace`): an "in progress" check run (a
session's start, a merge under way), and the tracking-comment edit of Ballet's
own platform wait (the merge, checks before it), get a not-before time, `grace`
after the event. The drain leaves such an effect in the outbox until then and
carries on with the effects behind it; once due it is written, unless a later
effect has rewritten the same comment or check run meanwhile — an instant
session's end creates its check run completed, an instant merge's result
writes the next tracking state — so they cost nothing. A session's start is
still written to the tracking comment at once: it is the record's backup.
A write a person waits for is never deferred: report comments,
questions, replies, labels, the merge, a state that ends the ticket or awaits
a person, and whatever a person's command or review caused. A due effect is
skipped only for a later one that is due too (or when it is itself deferred):
never is a write held back because a later one waits.
Pure: the edge asks, and carries out what is left.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from ballet.core.effects import (
    ALL_LABELS,
    AnyEffect,
    Label,
    MarkReadyForReview,
    MergePR,
    RemoveLabels,
    SetCheckRun,
    SetLabels,
    UpsertTrackingComment,
)
from ballet.core.record import Record
from ballet.core.render import STATE_BLOCK_START

LabelEffect = SetLabels | RemoveLabels
# The effects a later one can make redundant.
Coalescable = UpsertTrackingComment | SetCheckRun | SetLabels | RemoveLabels | MarkReadyForReview


# Events a person caused: what they changed is shown at once, never deferred.
PEOPLE_EVENTS = frozenset({"command_issued", "review_submitted", "ticket_requested"})
# Platform waits a session's start is like: Ballet's own, over in a moment when
# nothing holds them (an instant merge), else worth showing.
PLATFORM_WAITS = frozenset({"checks", "merge_result"})


def due(effect: AnyEffect, now: datetime | None) -> bool:
    """Whether `effect` may be carried out at `now` (None: everything is due)."""
    not_before = getattr(effect, "not_before", None)
    return now is None or not_before is None or not_before <= now


def with_grace(
    before: Record | None,
    after: Record,
    event_kind: str,
    effects: Sequence[AnyEffect],
    now: datetime,
    grace: timedelta,
) -> list[AnyEffect]:
    """`effects` with the writes of a session's start deferred by `grace` (see above)."""
    if grace <= timedelta(0) or event_kind in PEOPLE_EVENTS:
        return list(effects)
    until = now + grace
    tracking = _start_like(before, after)
    passing = _may_pass_at_once(after)
    out: list[AnyEffect] = []
    for effect in effects:
        running = passing and isinstance(effect, SetCheckRun) and effect.status != "completed"
        edit = tracking and isinstance(effect, UpsertTrackingComment) and effect.target == "pr"
        out.append(effect.model_copy(update={"not_before": until}) if running or edit else effect)
    return out


def _may_pass_at_once(after: Record) -> bool:
    """The ticket runs a session or waits on Ballet's own platform wait: over in a
    moment when nothing holds it. A stage waiting for a person (an approval, a
    question) shows its "in progress" at once: that person is who it is for."""
    return (after.status == "running" and after.open_run is not None) or _platform_wait(after)


def _platform_wait(rec: Record) -> bool:
    w = rec.waiting
    return rec.status == "waiting" and w is not None and w.kind in PLATFORM_WAITS


def _start_like(before: Record | None, after: Record) -> bool:
    """The tracking comment's new state is Ballet's own platform wait (the merge under
    way, checks before it) that a quick end supersedes, on the PR's existing comment.
    A session's start is written at once: the comment is the record's backup, and a
    record rebuilt after losing Redis that did not know the running session would
    refuse its result (tests/e2e/test_redis_lost.py)."""
    if before is None or before.pr_number is None or before.pr_number != after.pr_number:
        return False
    return _platform_wait(after)


def superseded(effect: AnyEffect, later: Sequence[AnyEffect], now: datetime | None = None) -> bool:
    """A later effect writes the same tracking comment or check run over this one.

    At `now`, a due effect gives way only to a later one that is due as well: a
    deferred rewrite must not hold back a write that is due (None: all are due).
    """
    if due(effect, now):
        later = [e for e in later if due(e, now)]
    if isinstance(effect, UpsertTrackingComment):
        same = (effect.repo, effect.number, effect.marker)
        moved = effect.target == "issue" and STATE_BLOCK_START in effect.body
        return any(
            isinstance(e, UpsertTrackingComment)
            and (
                (e.repo, e.number, e.marker) == same
                # The record, not yet written on the issue, moves to the PR opened
                # behind it: written there, it is not worth writing here too.
                or (
                    moved
                    and e.target == "pr"
                    and (e.repo, e.marker) == (effect.repo, effect.marker)
                )
            )
            for e in later
        )
    if isinstance(effect, SetCheckRun):
        run = _run(effect)
        return any(isinstance(e, SetCheckRun) and _run(e) == run for e in later)
    if isinstance(effect, MarkReadyForReview):
        pr = (effect.repo, effect.number)
        return any(isinstance(e, MergePR) and (e.repo, e.number) == pr for e in later)
    return False


def unwritten_close(effect: AnyEffect, later: Sequence[AnyEffect]) -> int | None:
    """Where in `later` the close of `effect`'s run on the head it left stands, when
    `effect` is a deferred "in progress" check run dropped unwritten: with nothing
    shown to close, the close is not written either (it would only overwrite the
    verdict an earlier run of the stage left on that head). None: no such close."""
    if not isinstance(effect, SetCheckRun) or effect.status == "completed":
        return None
    run = _run(effect)
    return next(
        (
            i
            for i, e in enumerate(later)
            if isinstance(e, SetCheckRun) and e.closes_start and _run(e) == run
        ),
        None,
    )


def _run(effect: SetCheckRun) -> tuple[str, str, str, str]:
    return (effect.repo, effect.name, effect.head_sha, effect.run_key)


def same_issue_labels(effect: AnyEffect, other: AnyEffect) -> bool:
    """Both are label changes on the same issue."""
    return (
        isinstance(effect, LabelEffect)
        and isinstance(other, LabelEffect)
        and (effect.repo, effect.number) == (other.repo, other.number)
    )


def net_labels(effects: Sequence[AnyEffect]) -> list[AnyEffect]:
    """The label changes that leave an issue as `changes`, applied in order, would.

    A change's first move says how the core found the label (adding means it
    was off, removing that it was on); its last move how it leaves it. A label
    that ends as it began needs no request. Other effects are ignored.
    """
    changes = [e for e in effects if isinstance(e, LabelEffect)]
    if not changes:
        return []
    first: dict[Label, bool] = {}  # label -> was on before the changes
    last: dict[Label, bool] = {}  # label -> is on after them
    for change in changes:
        on = isinstance(change, SetLabels)
        for label in change.labels:
            first.setdefault(label, not on)
            last[label] = on
    add = tuple(lb for lb in ALL_LABELS if lb in last and last[lb] and not first[lb])
    drop = tuple(lb for lb in ALL_LABELS if lb in last and not last[lb] and first[lb])
    repo, number = changes[0].repo, changes[0].number
    out: list[AnyEffect] = []
    if add:
        out.append(SetLabels(repo=repo, number=number, labels=add))
    if drop:
        out.append(RemoveLabels(repo=repo, number=number, labels=drop))
    return out
