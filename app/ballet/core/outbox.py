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
Pure: the edge asks, and carries out what is left.
"""

from __future__ import annotations

from collections.abc import Sequence

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

LabelEffect = SetLabels | RemoveLabels
# The effects a later one can make redundant.
Coalescable = UpsertTrackingComment | SetCheckRun | SetLabels | RemoveLabels | MarkReadyForReview


def superseded(effect: AnyEffect, later: Sequence[AnyEffect]) -> bool:
    """A later effect writes the same tracking comment or check run over this one."""
    if isinstance(effect, UpsertTrackingComment):
        same = (effect.repo, effect.number, effect.marker)
        return any(
            isinstance(e, UpsertTrackingComment) and (e.repo, e.number, e.marker) == same
            for e in later
        )
    if isinstance(effect, SetCheckRun):
        run = _run(effect)
        return any(isinstance(e, SetCheckRun) and _run(e) == run for e in later)
    if isinstance(effect, MarkReadyForReview):
        pr = (effect.repo, effect.number)
        return any(isinstance(e, MergePR) and (e.repo, e.number) == pr for e in later)
    return False


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
