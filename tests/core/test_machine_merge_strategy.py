"""The pinned merge strategy reaches the merge, and a refused method asks a person."""

from __future__ import annotations

from ballet.core.config import MergeStrategy
from ballet.core.effects import MergePR, PostComment, SetLabels
from ballet.core.events import MergeResult
from core_kit import Ticket, make_pipeline


def _at_merge(strategy: MergeStrategy | None = None) -> Ticket:
    pipeline = make_pipeline()
    if strategy is not None:
        pipeline = pipeline.model_copy(update={"merge": strategy})
    t = Ticket(pipeline)
    t.open_pr()
    t.finish("done")
    t.finish("approve")
    t.finish("pass")
    return t


def test_the_default_squashes_with_githubs_title_and_deletes_the_branch() -> None:
    merge = _at_merge().one(MergePR)
    assert (merge.method, merge.commit_title, merge.delete_branch) == ("squash", None, True)


def test_the_commit_title_is_filled_in_from_the_ticket() -> None:
    strategy = MergeStrategy(
        method="merge", delete_branch=False, commit_title="{title} (#{pr}, issue {ticket})"
    )
    merge = _at_merge(strategy).one(MergePR)
    assert merge.method == "merge" and not merge.delete_branch
    assert merge.commit_title == "Add a --verbose flag (#8, issue 7)"


def test_a_refused_method_raises_a_question_saying_what_to_change() -> None:
    t = _at_merge(MergeStrategy(method="rebase"))
    detail = "Rebase merges are not allowed on this repository."
    t.feed(MergeResult(now=t.now(), result="method_not_allowed", detail=detail))
    rec = t.rec
    assert rec.status == "waiting" and rec.waiting is not None
    assert rec.waiting.kind == "question" and rec.waiting.who == ("alice",)
    question = rec.questions[-1].question
    assert "with the `rebase` method" in question and detail in question
    assert 'turn on "Allow rebase merging"' in question and "`/ballet retry`" in question
    assert "`merge: {method: ...}` in .ballet.yml" in question
    assert "(`squash`, `merge`)" in question
    assert rec.history[-1].outcome == "question"
    assert t.one(SetLabels).labels == ("ballet:question",)
    assert any("rebase" in c.body for c in t.of(PostComment))
    # Not tried again by itself: no second merge until a person acts.
    assert not t.of(MergePR)


def test_a_retry_after_the_question_merges_again() -> None:
    t = _at_merge()
    t.feed(MergeResult(now=t.now(), result="method_not_allowed"))
    assert "(GitHub:" not in t.rec.questions[-1].question
    t.command("/ballet retry")
    assert t.one(MergePR).method == "squash"
    t.feed(MergeResult(now=t.now(), result="merged", sha="m1"))
    assert t.rec.status == "done"
