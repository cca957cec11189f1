"""The rendered prompt and the failed report's summary."""

from __future__ import annotations

from pathlib import Path

from ballet.core.config import Runtime
from ballet.core.outcomes import signoff_outcomes, stage_outcomes
from ballet.core.report import Handoff, Report
from ballet.core.resolve import default_config, resolve_pipeline
from ballet.sessions import EarlierReport, StageInfo
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


def test_the_failed_summary_fences_error_lines_that_have_fences_themselves() -> None:
    report = failed_report("missing_report", "no report at /r", "ok\nError: ``` broke\n")
    assert report.outcome == "failed"
    assert "````\nError: ``` broke\n````" in report.summary


def test_a_failed_report_passes_on_what_failed_not_what_the_session_printed() -> None:
    output = (
        "MARKER-printed-by-the-agent\n"
        + "chatter\n" * 2_000
        + "Traceback (most recent call last):\n"
        + "ValueError: "
        + "v" * 1_000
        + "\n"
        + "MARKER-printed-last\n"
    )
    report = failed_report("exit_code", "it exited with code 3", output, exit_code=3)
    summary = report.summary
    assert "MARKER" not in summary and "chatter" not in summary
    assert "the session exited with an error and wrote no report" in summary
    assert "it exited with code 3" in summary and summary.count("code 3") == 1
    assert "Traceback (most recent call last):" in summary
    assert "ValueError: " + "v" * 280 in summary and "v" * 301 not in summary
    assert "whole output is in the session's log" in summary
    assert len(summary) < 1_000


def test_a_failed_report_names_the_exit_when_its_message_does_not() -> None:
    report = failed_report("missing_report", "no report at /r", "quiet\n", exit_code=0)
    assert "It exited with code 0." in report.summary and "quiet" not in report.summary


def test_a_signoff_prompt_names_exactly_its_outcomes_and_what_each_does(
    make_spec: MakeSpec,
) -> None:
    stage = StageInfo(
        id="signoff-security", skills=("reviewer",), outcomes=signoff_outcomes("security")
    )
    prompt = render_prompt(make_spec(stage=stage), report_path=Path("/r"), handoff_path=None)
    contract = prompt[prompt.index("## When you finish") :]
    assert '"outcome": "signed_off"' in contract and '"outcome": "done"' not in contract
    assert "- `signed_off`: you sign off as the `security` role" in contract
    assert "- `changes`: say what must change" in contract
    assert "goes back to whoever handed it over" in contract
    assert "Any other outcome raises a question for a person." in contract


def test_a_stage_prompt_names_its_next_outcomes_and_where_each_goes(make_spec: MakeSpec) -> None:
    pipeline = default_config(Runtime(adapter="command", command=("a",)))
    resolved = resolve_pipeline(pipeline, ())
    outcomes = stage_outcomes(resolved, "review")
    prompt = render_prompt(
        make_spec(stage=StageInfo(id="review", outcomes=outcomes)),
        report_path=Path("/r"),
        handoff_path=None,
    )
    assert '"outcome": "approve"' in prompt
    assert "- `approve`: the ticket goes to stage `verify`." in prompt
    assert "- `changes_requested`: the ticket goes to stage `implement`." in prompt
    assert "- `done`: the ticket goes to stage `verify`." in prompt


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
