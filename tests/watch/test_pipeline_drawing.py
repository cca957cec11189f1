"""The ticket's pipeline laid out and drawn (watch/pipeline_layout.py, pipeline_svg.html):
records made by the core itself, for the default pipeline and for one with phases,
sign-offs and a person's stage."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from ballet.core.config import ResolvedPipeline
from ballet.core.events import PullRequestOpened, SessionFinished, TicketRequested
from ballet.core.machine import advance
from ballet.core.record import Record
from ballet.core.report import Report
from ballet.core.resolve import default_config, resolve_pipeline
from ballet.core.validate import parse_config
from ballet.watch.pipeline_layout import Box, Drawing, drawing
from ballet.watch.render import environment
from watch_kit import pipeline_runtime

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
# Phases, a sign-off role, a person's optional approval, a merge (as docs/configuration.md's).
DESIGN = """\
runtimes:
  claude: {adapter: claude-code, model: sonnet, env: [ANTHROPIC_API_KEY]}
  codex: {adapter: codex, env: [OPENAI_API_KEY]}
default_runtime: claude
roles:
  security: {runtime: codex, skills: [reviewer], instructions: "Review for security."}
pipelines:
  default:
    signoffs: [security]
    stages:
      - {id: implement, kind: agent, phases: [research, plan, implement, verify],
         next: {done: review}}
      - {id: review, kind: agent, runtime: codex,
         next: {approve: verify, changes_requested: implement}}
      - {id: verify, kind: agent, next: {pass: integrate, fail: implement}}
      - {id: approval, kind: human, optional: true, next: {approve: integrate, reject: implement}}
      - {id: integrate, kind: platform, action: merge, next: {merged: $done, returned: implement}}
"""


def default_pipeline() -> ResolvedPipeline:
    return resolve_pipeline(default_config(pipeline_runtime()), ())


def design_pipeline() -> ResolvedPipeline:
    config = parse_config(DESIGN)
    assert not isinstance(config, list), config
    return resolve_pipeline(config, ())


def ticket(pipeline: ResolvedPipeline, *outcomes: str) -> Record:
    """A ticket started on `pipeline` whose sessions ended with `outcomes`, in turn."""
    rec, _ = advance(
        None,
        TicketRequested(
            now=T0,
            repo="acme/app",
            issue=1,
            author="alice",
            title="t",
            pipeline=pipeline,
            default_branch="main",
        ),
    )
    rec, _ = advance(rec, PullRequestOpened(now=T0, number=8, head_sha="c0"))
    for minute, outcome in enumerate(outcomes, 1):
        run = rec.open_run
        assert run is not None and run.job_key is not None, (rec.status, rec.waiting)
        rec, _ = advance(
            rec,
            SessionFinished(
                now=T0 + timedelta(minutes=minute),
                job_key=run.job_key,
                stage=run.stage,
                iteration=run.iteration,
                attempt=run.attempt,
                phase=run.phase,
                report=Report(outcome=outcome, summary="ok"),
                head_sha="c1",
            ),
        )
    assert rec is not None
    return rec


def box(d: Drawing, stage: str) -> Box:
    return next(b for b in d.boxes if b.id == stage)


def arrow_labels(d: Drawing, *, back: bool) -> dict[str, int]:
    return {a.label: a.taken for a in d.arrows if a.back == back}


def test_the_default_pipeline_in_a_row_with_its_returns_below() -> None:
    d = drawing(ticket(default_pipeline(), "done"))
    assert [b.id for b in d.boxes] == ["implement", "review", "verify", "integrate", "$done"]
    assert [b.label for b in d.boxes] == ["Implement", "Review", "Verify", "Integrate", "done"]
    # Left to right without overlapping, all in one row.
    for left, right in zip(d.boxes, d.boxes[1:], strict=False):
        assert left.x + left.w < right.x
    assert {b.y + b.h / 2 for b in d.boxes} == {d.boxes[0].y + d.boxes[0].h / 2}
    assert d.width >= d.boxes[-1].x + d.boxes[-1].w
    # The ticket is at review now; the way it went is implement → review.
    assert [b.id for b in d.boxes if b.current] == ["review"]
    assert arrow_labels(d, back=False) == {"done": 1, "approve": 0, "pass": 0, "merged": 0}
    # Returns are arcs below the row, none taken yet; `done` repeating a named arrow is left out.
    assert arrow_labels(d, back=True) == {"changes_requested": 0, "fail": 0, "returned": 0}
    row_bottom = max(b.y + b.h for b in d.boxes)
    assert all(a.label_y > row_bottom for a in d.arrows if a.back)
    assert box(d, "implement").runs == 1 and box(d, "verify").runs == 0
    assert "Now at Review, iteration 1." in d.description
    assert "Review (agent · default): on approve to Verify; on changes_requested to Implement" in (
        d.description
    )


def test_rework_is_marked_on_the_way_back_and_counted_on_the_way_forward() -> None:
    d = drawing(ticket(default_pipeline(), "done", "changes_requested", "done", "approve"))
    assert [b.id for b in d.boxes if b.current] == ["verify"]
    assert arrow_labels(d, back=False) == {"done ×2": 2, "approve": 1, "pass": 0, "merged": 0}
    assert arrow_labels(d, back=True)["changes_requested"] == 1
    assert (box(d, "implement").runs, box(d, "review").runs) == (2, 2)


def test_phases_sign_offs_and_a_persons_stage_are_drawn() -> None:
    rec = ticket(design_pipeline(), "done", "done")  # research and plan of implement ran
    d = drawing(rec)
    assert [b.id for b in d.boxes] == [
        "implement", "review", "verify", "approval", "integrate", "$done",
    ]  # fmt: skip
    implement = box(d, "implement")
    assert implement.current and implement.runs == 1
    assert [(p.name, p.state) for p in implement.phases] == [
        ("research", "ran"), ("plan", "ran"), ("implement", "now"), ("verify", ""),
    ]  # fmt: skip
    # The phases fit in their box, one after another.
    ends = [p.x + p.w for p in implement.phases]
    assert implement.x < implement.phases[0].x and ends[-1] < implement.x + implement.w
    assert all(p.x >= e for p, e in zip(implement.phases[1:], ends, strict=False))
    approval = box(d, "approval")
    assert (approval.kind, approval.detail) == ("human", "a person approves")
    assert box(d, "integrate").detail == "GitHub · merge"
    # The security sign-off gates the first stage that moves the ticket to review: once.
    assert [b.id for b in d.boxes if b.gate] == ["approval"]
    assert approval.gate == "needs sign-off: security"
    # verify's pass skips the optional approval: an arc above the row.
    (passing,) = [a for a in d.arrows if a.label == "pass"]
    assert not passing.back and passing.label_y < implement.y


def test_an_ended_ticket_marks_its_end_and_no_stage() -> None:
    rec = ticket(default_pipeline(), "done", "approve", "pass")
    rec = rec.model_copy(update={"status": "done", "stage": "integrate"})
    d = drawing(rec)
    assert [b.id for b in d.boxes if b.current] == ["$done"]
    assert arrow_labels(d, back=False)["merged"] == 1
    assert "The ticket ended done." in d.description


def test_every_label_is_text_in_the_svg() -> None:
    pipeline = default_pipeline()
    hostile = '<script>alert("stage")</script>'
    stages = (pipeline.stages[0].model_copy(update={"name": hostile}), *pipeline.stages[1:])
    review = stages[1].model_copy(
        update={"next": {"<img src=x onerror=alert(1) alt=y>": "implement"}}
    )
    pipeline = pipeline.model_copy(update={"stages": (stages[0], review, *stages[2:])})
    d = drawing(ticket(pipeline))
    svg = environment().get_template("pipeline_svg.html").render(drawing=d, nonce="n")
    # The one script is the partial's own, with the page's nonce.
    assert svg.count("<script") == 1 and '<script nonce="n">' in svg and "<img" not in svg
    assert "&lt;script&gt;alert(&#34;stage&#34;)&lt;/script&gt;" in svg  # its whole name, titled
    # An arrow's label is cut at 28 characters; the description says it whole.
    assert ">&lt;img src=x onerror=alert(1)…</text>" in svg
    assert "on &lt;img src=x onerror=alert(1) alt=y&gt; to" in svg
    assert 'role="img"' in svg and re.search(r'data-stage="implement" data-current="true"', svg)
