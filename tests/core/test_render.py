"""Rendered comments: markers, escaping of user text, the tracking comment."""

from __future__ import annotations

from ballet.core import render
from ballet.core.effects import PostReportComment
from ballet.core.record import StageRun, as_on_github, decode_record
from ballet.core.report import Handoff, Question, Report, Usage
from core_kit import Ticket, agent, at, make_pipeline
from hypothesis import given, settings
from hypothesis import strategies as st
from markers import find_marker

HOSTILE = 'x | y --> z <!-- "q" [a] (b) {c} `d`\nnew line'


def test_markers_round_trip_and_stay_one_token() -> None:
    body = render.with_marker("hello", "o/r#1:report:implement:1:1")
    assert find_marker(body) == "o/r#1:report:implement:1:1"
    assert find_marker("no marker here") is None
    assert render.marker_for("a b>c") == "<!-- ballet:marker a_b_c -->"


def test_table_cells_and_text_cannot_break_markdown_or_comments() -> None:
    assert render.cell(HOSTILE) == 'x \\| y --&gt; z &lt;!-- "q" [a] (b) {c} `d` new line'
    assert "-->" not in render.text("a --> b") and "<!--" not in render.text("<!-- a")


def test_mermaid_labels_cannot_break_the_graph() -> None:
    label = render.mermaid_label(HOSTILE)
    assert not set(label) & set('"[](){}<>|`#;\n')
    assert render.mermaid_label("()") == "stage"


def test_tracking_comment_with_a_hostile_title() -> None:
    t = Ticket(title=HOSTILE)
    body = t.one_tracking().body
    outside_graph = body.split("```mermaid")[0] + body.split("```")[-1]
    assert outside_graph.count("-->") == 2  # the marker's end and the state block's end
    assert outside_graph.count("<!--") == 2
    assert decode_record(body) == as_on_github(t.rec)
    table_rows = [line for line in body.splitlines() if line.startswith("| implement")]
    assert len(table_rows) == 1 and table_rows[0].count(" | ") == 5
    assert "class s0 current" in body
    assert "**Status:** 🏃 running" in body


def test_tracking_comment_says_what_the_ticket_waits_for() -> None:
    t = Ticket()
    t.finish("weird")
    body = t.one_tracking().body
    assert "**Waiting for** stage `implement` reported outcome `weird`" in body
    assert "(who can act: @alice) — `/ballet answer <text>`" in body
    t.command("/ballet pause")
    assert "**Paused.** `/ballet resume` carries on." in t.one_tracking().body


def test_waiting_line_for_anyone_with_write() -> None:
    t = Ticket(pipeline=None)
    t.open_pr()
    t.finish("done")
    t.finish("approve")
    t.command("/ballet policy merge=manual")
    t.finish("pass")
    assert "(who can act: anyone with write permission)" in t.one_tracking().body


def test_forge_waits_say_no_one_needs_to_act() -> None:
    t = Ticket()
    t.open_pr()
    t.finish("done")
    t.finish("approve")
    t.finish("pass")
    assert (
        "**Waiting for** the merge of the pull request (no one needs to act; `/ballet retry` "
        "asks again)" in t.one_tracking().body
    )


def test_report_comment_has_every_part() -> None:
    run = StageRun(stage="implement", iteration=2, attempt=1, phase="plan", start=at(0), end=at(3))
    rep = Report(
        outcome="done",
        summary="Did --> it",
        details="long log",
        decisions=("use x",),
        open_questions=("why y?",),
        questions=(Question(text="ok?"),),
        usage=Usage(input_tokens=10, output_tokens=5, cost_usd=0.5),
    )
    body = render.report(
        run,
        rep,
        Handoff(summary="plan", decisions=("d",), constraints=("c",), open_questions=("q",)),
        "`review`",
    )
    assert "### implement · plan — `done` (iteration 2, attempt 1)" in body
    assert "Did --&gt; it" in body
    assert "**Decisions**\n- use x" in body
    assert "**Open questions**\n- why y?\n- ok?" in body
    assert "Usage: 10 in / 5 out tokens, $0.50" in body
    assert "<details><summary>Details</summary>" in body
    assert "<details><summary>Handoff</summary>" in body and "**Constraints**\n- c" in body
    assert body.endswith("**Next:** `review`")


def test_tracking_comment_names_the_pipeline_by_its_name_too() -> None:
    t = Ticket()
    assert "· pipeline `default` v" in render.tracking_text(t.rec)
    titled = t.rec.pipeline.model_copy(update={"title": "Feature | work"})
    text = render.tracking_text(t.rec.model_copy(update={"pipeline": titled}))
    assert "· pipeline `default` (Feature \\| work) v" in text


def test_report_comment_shows_the_report_s_own_constraints() -> None:
    run = StageRun(stage="implement", iteration=1, attempt=1, start=at(0), end=at(3))
    rep = Report(outcome="done", summary="s", constraints=("stay on Python 3.11",))
    body = render.report(run, rep, None, "`review`")
    assert "**Constraints**\n- stay on Python 3.11" in body
    assert "Handoff" not in body  # not only a phase's handoff shows them


def test_minimal_report_and_signoff_title() -> None:
    run = StageRun(stage="integrate", iteration=1, attempt=1, role="security", start=at(0))
    body = render.report(run, Report(outcome="signed_off", summary="fine"), None, "x")
    assert body.startswith("### integrate · sign-off security — `signed_off`")
    assert "<details>" not in body and "Decisions" not in body


def test_runs_table_empty_and_durations() -> None:
    t = Ticket()
    empty = t.rec.model_copy(update={"history": ()})
    assert render.runs_table(empty) == "_No stage has run yet._"
    assert render.duration(at(0), None) == "…"
    assert render.duration(at(0), at(61.5)) == "1h 01m"
    assert render.duration(at(0), at(0.34 / 60)) == "340 ms"  # not "0m 00s"


def test_status_reply_and_signoff_line() -> None:
    t = Ticket()
    t.command("/ballet signoff require security")
    text = render.status(t.rec)
    assert "Status: 🏃 running, stage `implement`, iteration 1, attempt 1." in text
    assert "**Sign-offs:** security ⏳" in text


def test_knowledge_report_without_findings() -> None:
    t = Ticket()
    assert "_No findings reported._" in render.knowledge_report(t.rec)


@settings(max_examples=200, deadline=None)
@given(title=st.text(), summary=st.text(), outcome=st.text(min_size=1, max_size=64))
def test_no_user_text_escapes_its_place(title: str, summary: str, outcome: str) -> None:
    t = Ticket(title=title)
    t.finish(outcome, summary)
    body = t.one_tracking().body
    outside_graph = body.split("```mermaid")[0] + body.split("```")[-1]
    assert outside_graph.count("<!--") == 2 and outside_graph.count("-->") == 2
    assert decode_record(body) == as_on_github(t.rec)
    rows = [line for line in body.splitlines() if line.startswith("| implement")]
    assert len(rows) == 1 and rows[0].count(" | ") == 5
    graph = body.split("```mermaid")[1].split("```")[0]
    assert all(line.count('"') % 2 == 0 for line in graph.splitlines())
    report = t.of(PostReportComment)[0].body
    # The marker and the report block (`core.report_block`) only.
    assert report.count("<!--") == 2 and report.count("-->") == 2


def test_runs_link_their_reports_by_marker_for_the_edge_to_resolve() -> None:
    t = Ticket()
    t.open_pr()
    t.finish("done")
    ref = t.rec.history[0].report_ref
    assert ref is not None
    assert f"[report]({render.REPORT_LINK_SCHEME}{ref})" in render.runs_table(t.rec)


def test_the_implicit_done_arrow_is_not_drawn_twice() -> None:
    # The resolver adds `done` to every stage's `next`; for review it repeats approve's arrow.
    stages = (
        agent("implement", next={"done": "review"}),
        agent(
            "review", next={"approve": "$done", "changes_requested": "implement", "done": "$done"}
        ),
    )
    graph = render.flowchart(Ticket(pipeline=make_pipeline(stages)).rec)
    assert 's1 -- "approve" --> done' in graph
    assert 's1 -- "done" --> done' not in graph
    assert 's0 -- "done" --> s1' in graph  # implement's only arrow stays
