"""Hostile input stays bounded: a flood of commands, a huge title, a huge report."""

from __future__ import annotations

from ballet.core.commands import CommandError, parse_commands
from ballet.core.effects import OpenBranchAndDraftPR, PostReportComment
from ballet.core.limits import (
    COMMANDS_PER_COMMENT,
    COMMENT_MAX,
    HANDOFF_ITEMS_MAX,
    RUN_SUMMARY_MAX,
    TITLE_MAX,
    clip,
    clip_handoff,
)
from ballet.core.record import decode_record
from ballet.core.render import marker_for, with_marker
from ballet.core.report import Handoff
from core_kit import Ticket, agent, make_pipeline


def test_a_comment_of_thousands_of_commands_takes_ten_and_says_so() -> None:
    parsed = parse_commands("/ballet status\n" * 5000)
    assert len(parsed) == COMMANDS_PER_COMMENT + 1
    refused = parsed[-1]
    assert isinstance(refused, CommandError)
    assert "4990 more were ignored" in refused.message
    assert all(not isinstance(c, CommandError) for c in parsed[:-1])


def test_ten_commands_are_all_taken() -> None:
    parsed = parse_commands("/ballet help\n" * COMMANDS_PER_COMMENT)
    assert len(parsed) == COMMANDS_PER_COMMENT
    assert not any(isinstance(c, CommandError) for c in parsed)


def test_a_ten_thousand_character_title_is_cut_everywhere_it_lands() -> None:
    title = "Fix " + "x" * 9_996
    t = Ticket(title=title)
    assert len(t.rec.ticket.title) == TITLE_MAX
    assert t.rec.ticket.title.endswith("characters cut]")
    opened = t.one(OpenBranchAndDraftPR)
    assert len(opened.title) == TITLE_MAX
    assert opened.branch is not None and len(opened.branch) < 80
    assert len(t.one_tracking().body) < COMMENT_MAX + 200
    assert len(t.session().title) == TITLE_MAX


def test_a_huge_summary_is_cut_in_the_record_and_the_report_comment() -> None:
    t = Ticket()
    t.finish("done", summary="s" * 500_000)
    assert len(t.rec.history[0].summary) == RUN_SUMMARY_MAX
    (report,) = t.of(PostReportComment)
    assert len(report.body) <= COMMENT_MAX + 200
    assert "more characters cut]" in report.body


def test_a_huge_handoff_is_cut_before_the_record_keeps_it() -> None:
    phased = make_pipeline(
        stages=(agent("implement", phases=("plan", "implement"), next={"done": "$done"}),)
    )
    t = Ticket(pipeline=phased)
    big = Handoff(summary="h" * 100_000, decisions=("d" * 5_000,) * 500)
    t.finish("done", handoff=big)
    kept = t.rec.handoff
    assert kept is not None and len(kept.summary) < 100_000
    assert len(kept.decisions) == HANDOFF_ITEMS_MAX
    assert all(len(d) < 5_000 for d in kept.decisions)
    assert clip_handoff(None) is None


def test_a_clipped_tracking_comment_keeps_its_state_block_whole() -> None:
    t = Ticket()
    block = t.one_tracking().body.rpartition("<!-- ballet:state ")
    state = block[1] + block[2]
    body = "x" * (2 * COMMENT_MAX) + "\n" + state
    clipped = with_marker(body, "k")
    assert len(clipped) <= COMMENT_MAX + len(marker_for("k")) + 1
    assert decode_record(clipped).key == t.rec.key
    plain = with_marker("y" * (2 * COMMENT_MAX), "k")
    assert plain.endswith("characters cut]")


def test_clip_leaves_short_text_alone() -> None:
    assert clip("short", 10) == "short"
    assert clip("z" * 50, 30) == "z" * 3 + " … [20 more characters cut]"
