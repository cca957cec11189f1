"""Which pending effects a later one makes redundant (core.outbox)."""

from __future__ import annotations

from ballet.core.effects import (
    MarkerKey,
    MarkReadyForReview,
    MergePR,
    PostReportComment,
    RemoveLabels,
    SetCheckRun,
    SetLabels,
    UpsertTrackingComment,
)
from ballet.core.outbox import net_labels, same_issue_labels, superseded, unwritten_close
from ballet.core.render import STATE_BLOCK_START

REPO = "octo/demo"
KEY = MarkerKey(ticket=f"{REPO}#1", kind="tracking")


def tracking(number: int, body: str) -> UpsertTrackingComment:
    return UpsertTrackingComment(repo=REPO, number=number, target="pr", marker=KEY, body=body)


def check(status: str, head: str = "c1", name: str = "ballet/integrate") -> SetCheckRun:
    return SetCheckRun(repo=REPO, name=name, head_sha=head, status=status)  # type: ignore[arg-type]


def test_a_tracking_comment_rewritten_later_is_not_written_now() -> None:
    assert superseded(tracking(2, "v1"), [tracking(2, "v2")])
    # The issue's pointer is another comment than the PR's tracking comment.
    assert not superseded(tracking(1, "v1"), [tracking(2, "v2")])
    report = PostReportComment(repo=REPO, number=2, marker=KEY, body="report")
    assert not superseded(report, [report])  # reports are never skipped


def test_a_check_run_set_again_later_is_created_once_with_its_last_status() -> None:
    assert superseded(check("in_progress"), [check("completed")])
    assert not superseded(check("in_progress"), [check("completed", head="c2")])
    assert not superseded(check("in_progress"), [check("completed", name="ballet/verify")])


def test_marking_ready_is_left_to_the_merge_behind_it() -> None:
    ready = MarkReadyForReview(repo=REPO, number=2)
    assert superseded(ready, [MergePR(repo=REPO, number=2)])
    assert not superseded(ready, [MergePR(repo=REPO, number=3)])
    assert not superseded(ready, [])


def test_labels_fold_into_their_net_change() -> None:
    waiting = SetLabels(repo=REPO, number=1, labels=("ballet:waiting",))
    no_running = RemoveLabels(repo=REPO, number=1, labels=("ballet:running",))
    done = SetLabels(repo=REPO, number=1, labels=("ballet:done",))
    no_waiting = RemoveLabels(repo=REPO, number=1, labels=("ballet:waiting",))
    # running → waiting → done in one drain: waiting is never touched.
    assert net_labels([waiting, no_running, done, no_waiting]) == [
        SetLabels(repo=REPO, number=1, labels=("ballet:done",)),
        RemoveLabels(repo=REPO, number=1, labels=("ballet:running",)),
    ]
    # Removed and added back: it was on and stays on.
    assert (
        net_labels([no_running, SetLabels(repo=REPO, number=1, labels=("ballet:running",))]) == []
    )
    assert net_labels([waiting]) == [waiting]
    assert same_issue_labels(waiting, no_running)
    assert not same_issue_labels(waiting, RemoveLabels(repo=REPO, number=2, labels=()))


def test_the_starts_record_on_the_issue_gives_way_to_the_prs() -> None:
    # The ticket's start writes its record on the issue; the PR opened right behind
    # it takes the record, and GitHub links it from the issue by itself.
    on_issue = UpsertTrackingComment(
        repo=REPO, number=1, target="issue", marker=KEY, body=f"x {STATE_BLOCK_START}…-->"
    )
    assert superseded(on_issue, [tracking(2, "the record on the PR")])
    # A pointer (a PR opened later) stays: the issue's comment must not go stale.
    pointer = on_issue.model_copy(update={"body": "Ballet tracks this ticket on #2."})
    assert not superseded(pointer, [tracking(2, "the record on the PR")])


def test_a_start_never_shown_needs_no_close_on_the_head_it_left() -> None:
    # A rework's implement starts on the head the first implement left ("in
    # progress" deferred), pushes a new head at once: its close on the old head
    # would only overwrite the first implement's verdict there.
    start = check("in_progress", head="c1", name="ballet/implement")
    close = check("completed", head="c1", name="ballet/implement").model_copy(
        update={"closes_start": True}
    )
    done = check("completed", head="c2", name="ballet/implement")
    assert superseded(start, [close, done])
    assert unwritten_close(start, [done, close]) == 1
    assert unwritten_close(start, [done]) is None  # nothing to drop with it
    assert unwritten_close(close, [close]) is None  # a close is no start
