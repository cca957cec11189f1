"""A ticket across its companions: a pull request where a session left commits, asked
for once, named in the record (so on GitHub) and in the tracking comment."""

from __future__ import annotations

import pytest
from ballet.core.effects import OpenCompanionPR, SetCheckRun
from ballet.core.events import CompanionPROpened, PullRequestClosed
from ballet.core.machine import IllegalEvent
from ballet.core.record import decode_record
from core_kit import Ticket, make_pipeline


def _ticket() -> Ticket:
    t = Ticket(make_pipeline(companions=("octo/lib", "octo/docs")))
    t.open_pr(number=8)
    return t


def test_a_companion_with_commits_gets_one_linked_draft_pr() -> None:
    t = _ticket()
    # Heads in any order: the record keeps the landing order of `companions:`.
    t.finish("done", sha="c1", companion_heads={"octo/docs": "d1", "octo/lib": "l1"})
    asked = t.of(OpenCompanionPR)
    assert [(e.repo, e.branch) for e in asked] == [
        ("octo/lib", t.rec.branch),
        ("octo/docs", t.rec.branch),
    ]
    assert asked[0].ticket == "octo/app#7"
    assert "\nPart of octo/app#7, with octo/app#8.\n" in asked[0].body
    assert [(p.repo, p.head_sha, p.number) for p in t.rec.companion_prs] == [
        ("octo/lib", "l1", None),
        ("octo/docs", "d1", None),
    ]
    t.feed(CompanionPROpened(now=t.now(), repo="octo/lib", number=34, head_sha="l1"))
    assert t.rec.companion_prs[0].number == 34
    text = t.one_tracking().body
    assert "**Pull requests**, in landing order: octo/lib#34 open at `l1`" in text
    assert "octo/docs (opening)" in text and "octo/app#8 (this one)" in text
    # The tracking comment's hidden record names them: a Redis loss loses none.
    rebuilt = decode_record(text)
    assert [(p.repo, p.number) for p in rebuilt.companion_prs] == [
        ("octo/lib", 34),
        ("octo/docs", None),
    ]


def test_the_next_session_moves_heads_and_asks_only_for_prs_not_heard_of() -> None:
    t = _ticket()
    t.finish("done", companion_heads={"octo/lib": "l1", "octo/docs": "d1"})
    t.feed(CompanionPROpened(now=t.now(), repo="octo/lib", number=34, head_sha="l1"))
    # Review: lib moved, docs' PR still unheard of (its opening failed, or Redis lost it).
    t.finish("approve", companion_heads={"octo/lib": "l2", "octo/docs": "d1"})
    assert [e.repo for e in t.of(OpenCompanionPR)] == ["octo/docs"]
    assert [(p.repo, p.head_sha, p.number) for p in t.rec.companion_prs] == [
        ("octo/lib", "l2", 34),
        ("octo/docs", "d1", None),
    ]
    # A session that pushed no companion (a failed one) forgets none.
    t.finish("fail")
    assert len(t.rec.companion_prs) == 2


def test_a_redelivered_opening_changes_nothing() -> None:
    t = _ticket()
    t.finish("done", companion_heads={"octo/lib": "l1"})
    t.feed(CompanionPROpened(now=t.now(), repo="octo/lib", number=34, head_sha="l1"))
    with pytest.raises(IllegalEvent, match="known already"):
        t.feed(CompanionPROpened(now=t.now(), repo="octo/lib", number=34, head_sha="l1"))
    with pytest.raises(IllegalEvent, match="octo/web has no pull request"):
        t.feed(CompanionPROpened(now=t.now(), repo="octo/web", number=3, head_sha="w1"))


def test_a_repository_not_among_the_companions_is_never_given_a_pr() -> None:
    t = _ticket()
    t.finish("done", companion_heads={"octo/elsewhere": "e1"})
    assert t.of(OpenCompanionPR) == [] and t.rec.companion_prs == ()


def test_each_stage_verdict_shows_on_every_companion_head_too() -> None:
    t = _ticket()
    t.finish("done", sha="c1", companion_heads={"octo/lib": "l1"})
    done = {(e.repo, e.head_sha, e.name, e.conclusion) for e in t.of(SetCheckRun)
            if e.status == "completed"}  # fmt: skip
    assert done == {
        ("octo/app", "c1", "ballet/implement", "success"),
        ("octo/lib", "l1", "ballet/implement", "success"),
    }
    # The next run's start shows on the ticket's head alone.
    assert {e.repo for e in t.of(SetCheckRun) if e.status == "in_progress"} == {"octo/app"}


def test_commits_after_a_companions_pr_merged_get_a_pr_of_their_own() -> None:
    t = _ticket()
    t.finish("done", companion_heads={"octo/lib": "l1"})
    t.feed(CompanionPROpened(now=t.now(), repo="octo/lib", number=34, head_sha="l1"))
    t.feed(PullRequestClosed(now=t.now(), merged=True, by="carol", repo="octo/lib"))
    t.finish("approve", companion_heads={"octo/lib": "l1"})  # nothing new there
    assert t.of(OpenCompanionPR) == [] and t.rec.companion_prs[0].state == "merged"
    t.finish("fail")
    t.finish("done", companion_heads={"octo/lib": "l2"})
    assert [e.repo for e in t.of(OpenCompanionPR)] == ["octo/lib"]
    assert (t.rec.companion_prs[0].number, t.rec.companion_prs[0].state) == (None, "open")
