"""The rendered prompt and the failed report's summary."""

from __future__ import annotations

from pathlib import Path

from ballet.core.report import Handoff, Report
from ballet.sessions import EarlierReport
from ballet.sessions.outcome import failed_report
from ballet.sessions.prompt import acceptance_criteria, render_prompt
from session_helpers import MakeSpec


def test_acceptance_criteria_come_from_their_section() -> None:
    body = "Intro\n\n### Acceptance Criteria\n- works\n- is fast\n\n### Notes\n- not this\n"
    assert acceptance_criteria(body) == "- works\n- is fast"


def test_a_bold_label_also_opens_the_section() -> None:
    body = "Intro\n\n**Acceptance criteria:**\n1. first\n2. second\n"
    assert acceptance_criteria(body) == "1. first\n2. second"


def test_without_a_section_the_checklist_is_the_criteria() -> None:
    body = "Do it.\n\n- [ ] one\n- [x] two\n- plain bullet\n"
    assert acceptance_criteria(body) == "- [ ] one\n- [x] two"
    assert acceptance_criteria("Just do it.") is None


def test_a_later_phase_prompt_carries_the_handoff_not_the_earlier_reports(
    make_spec: MakeSpec,
) -> None:
    earlier = EarlierReport(
        stage="review", iteration=1, report=Report(outcome="changes", summary="SECRET-REVIEW")
    )
    spec = make_spec(
        phase="implement",
        earlier_reports=(earlier,),
        handoff=Handoff(summary="HANDOFF-SUMMARY", decisions=("use Y",)),
    )
    prompt = render_prompt(spec, report_path=Path("/s/report.json"), handoff_path=Path("/s/h.json"))
    assert "HANDOFF-SUMMARY" in prompt and "use Y" in prompt
    assert "SECRET-REVIEW" not in prompt
    assert "## This phase: implement" in prompt
    assert "`/s/report.json`" in prompt and "`/s/h.json`" in prompt


def test_long_texts_are_cut(make_spec: MakeSpec) -> None:
    ticket = make_spec().ticket.model_copy(update={"body": "x" * 50_000})
    prompt = render_prompt(make_spec(ticket=ticket), report_path=Path("/r"), handoff_path=None)
    assert len(prompt) < 30_000
    assert "cut at 20000 characters" in prompt


def test_the_failed_summary_fences_output_that_has_fences_itself() -> None:
    report = failed_report("missing_report", "no report at /r", "before\n```\ninside\n```\nafter")
    assert report.outcome == "failed"
    assert "````\nbefore" in report.summary and "after\n````" in report.summary


def test_many_long_earlier_reports_keep_the_prompt_under_an_argument_limit(
    make_spec: MakeSpec,
) -> None:
    reports = tuple(
        EarlierReport(
            stage="review",
            iteration=i + 1,
            report=Report(
                outcome="changes", summary=f"REPORT-{i} " + "s" * 9000, details="d" * 9000
            ),
        )
        for i in range(40)
    )
    prompt = render_prompt(
        make_spec(earlier_reports=reports), report_path=Path("/r"), handoff_path=None
    )
    assert len(prompt.encode()) < 100 * 1024
    assert "REPORT-39" in prompt  # the newest are kept
    assert "REPORT-0 " not in prompt
    assert "older report(s) left out here" in prompt
    assert prompt.index("REPORT-38") < prompt.index("REPORT-39")  # oldest first


def test_the_report_example_claims_no_usage_and_aider_reports_in_its_reply(
    make_spec: MakeSpec, tmp_path: Path
) -> None:
    spec = make_spec()
    report = tmp_path / "report.json"
    to_file = render_prompt(spec, report_path=report, handoff_path=None)
    in_reply = render_prompt(spec, report_path=report, handoff_path=None, report_in_reply=True)
    assert '"usage"' not in to_file and '"usage"' not in in_reply
    assert f"Write this JSON to `{report}`" in to_file
    assert "Write this JSON to" not in in_reply
    assert "JSON on one single line" in in_reply


def test_a_changed_ticket_text_is_said_once_in_its_own_section(make_spec: MakeSpec) -> None:
    note = "The ticket's text changed since the last session: adopted from @carol's edit."
    ticket = make_spec().ticket.model_copy(update={"text_change": note})
    told = render_prompt(make_spec(ticket=ticket), report_path=Path("/r"), handoff_path=None)
    assert told.count(note) == 1 and "## The ticket's text changed" in told
    quiet = render_prompt(make_spec(), report_path=Path("/r"), handoff_path=None)
    assert "text changed" not in quiet
