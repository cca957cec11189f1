"""The report block: a session's report and handoff, hidden in its report comment so they
survive the loss of Redis. Round trip, bounded size, damage refused, no early `-->`."""

from __future__ import annotations

import base64
import random
import zlib

import pytest
from ballet.core import render
from ballet.core.effects import PostReportComment
from ballet.core.limits import COMMENT_MAX
from ballet.core.record import StageRun
from ballet.core.report import Handoff, Question, Report, Usage
from ballet.core.report_block import (
    BLOCK_MAX,
    BLOCK_START,
    RAW_MAX,
    ReportBlock,
    ReportBlockError,
    artifact_stage,
    decode_block,
    encode_block,
)
from core_kit import Ticket, agent, at, make_pipeline

FULL = ReportBlock(
    job_key="octo/app#1:implement:1:1:plan",
    stage="implement",
    iteration=2,
    phase="plan",
    report=Report(
        outcome="done",
        summary="Planned the change.",
        details="step 1, step 2",
        decisions=("use argparse",),
        constraints=("no new dependency",),
        open_questions=("which flag name?",),
        questions=(Question(text="ok?", blocking=True),),
        usage=Usage(input_tokens=10, output_tokens=5, cost_usd=0.25),
        require_signoffs=("security",),
    ),
    handoff=Handoff(
        summary="Do it with argparse.", decisions=("d",), constraints=("c",), open_questions=("q",)
    ),
)


def noise(n: int, seed: int) -> str:
    """Text that does not compress: random letters, punctuation, emoji and control characters."""
    rng = random.Random(seed)
    alphabet = [chr(c) for c in range(1, 0x250)] + ["🦄", "𝔘", "\u2028", "\x00"]
    return "".join(rng.choice(alphabet) for _ in range(n))


def test_a_block_round_trips_every_field() -> None:
    encoded = encode_block(FULL)
    assert encoded.startswith(BLOCK_START + "v1 ") and encoded.endswith(" -->")
    assert decode_block(f"some comment\n\n{encoded}") == FULL
    bare = FULL.model_copy(update={"phase": None, "handoff": None})
    assert decode_block(encode_block(bare)) == bare


def test_a_session_report_comment_carries_its_block_as_the_artifact_names_it() -> None:
    run = StageRun(
        stage="review",
        iteration=1,
        attempt=2,
        role="security",
        start=at(0),
        end=at(1),
        job_key="octo/app#1:review:1:2:security",
    )
    rep = Report(outcome="signed_off", summary="Looks safe.")
    body = render.with_marker(render.report(run, rep, None, "`integrate`"), "k")
    block = decode_block(body)
    assert (block.job_key, block.stage, block.iteration, block.phase) == (
        "octo/app#1:review:1:2:security",
        "signoff-security",
        1,
        None,
    )
    assert block.report == rep and block.handoff is None and not block.clipped
    assert artifact_stage("review", None) == "review"
    # What people read is unchanged before the block.
    assert "**Next:** `integrate`\n\n" + BLOCK_START in body


def test_a_human_or_platform_stage_report_has_no_block() -> None:
    run = StageRun(stage="approve", iteration=1, attempt=1, start=at(0), end=at(1))
    body = render.report(run, Report(outcome="approved", summary="by @octocat"), None, "x")
    assert BLOCK_START not in body
    with pytest.raises(ReportBlockError, match="no '<!-- ballet:report … -->' block found"):
        decode_block(body)


def test_the_engine_puts_the_session_report_and_handoff_in_the_comment() -> None:
    phased = make_pipeline(
        stages=(agent("implement", phases=("plan", "implement"), next={"done": "$done"}),)
    )
    t = Ticket(pipeline=phased)
    job_key = t.session().job_key
    t.finish("done", summary="Planned.", handoff=Handoff(summary="the plan"))
    (comment,) = t.of(PostReportComment)
    block = decode_block(comment.body)
    assert (block.job_key, block.stage, block.phase) == (job_key, "implement", "plan")
    assert block.report.summary == "Planned." and block.handoff == Handoff(summary="the plan")


def test_a_huge_report_is_cut_to_a_bounded_block_saying_so() -> None:
    huge = ReportBlock(
        job_key="k",
        stage="implement",
        iteration=1,
        report=Report(
            outcome="done",
            summary=noise(300_000, 1),
            details=noise(300_000, 2),
            decisions=tuple(noise(5_000, 10 + i) for i in range(200)),
            questions=tuple(Question(text=noise(3_000, 400 + i)) for i in range(100)),
        ),
        handoff=Handoff(summary=noise(100_000, 3), open_questions=(noise(9_000, 4),) * 80),
    )
    encoded = encode_block(huge)
    assert len(encoded) <= BLOCK_MAX
    block = decode_block(encoded)
    assert block.clipped and block.job_key == "k" and block.report.outcome == "done"
    assert block.report.summary.endswith("more characters cut]")
    assert block.report.summary.startswith(huge.report.summary[:100])
    assert block.handoff is not None and block.handoff.summary.endswith("more characters cut]")

    # In its comment, the block stays whole and the comment under GitHub's limit.
    run = StageRun(stage="implement", iteration=1, attempt=1, start=at(0), job_key="k")
    body = render.with_marker(render.report(run, huge.report, huge.handoff, "x"), "k")
    assert len(body) <= COMMENT_MAX + 100
    assert decode_block(body) == block


def test_a_long_but_plain_report_loses_only_what_does_not_fit() -> None:
    # Repetitive text compresses: the first bounds keep it, each cut field says so.
    long = FULL.report.model_copy(
        update={"details": "log line\n" * 200_000, "decisions": ("same",) * 500}
    )
    block = decode_block(encode_block(FULL.model_copy(update={"report": long})))
    assert block.clipped
    assert block.report.summary == FULL.report.summary  # short fields kept whole
    assert block.report.details.endswith("more characters cut]")
    assert len(block.report.details) <= 16_000
    assert block.report.decisions[-1] == "… [450 more cut]"
    assert block.handoff == FULL.handoff


def test_a_report_saying_end_of_comment_cannot_close_the_block_early() -> None:
    evil = "done --> <!-- ballet:report v1 AAAA --> <!-- ballet:marker x -->"
    rep = Report(outcome="done", summary=evil, decisions=(evil,))
    run = StageRun(stage="implement", iteration=1, attempt=1, start=at(0), job_key="k")
    body = render.with_marker(render.report(run, rep, Handoff(summary=evil), "x"), "k")
    # Two comment ends only: the marker's and the block's, which ends the body.
    assert body.count("-->") == 2 and body.endswith(" -->")
    assert body.count(BLOCK_START) == 1
    data = body.rpartition(BLOCK_START)[2].removesuffix(" -->")
    assert "-" not in data and ">" not in data
    block = decode_block(body)
    assert block.report.summary == evil and block.handoff == Handoff(summary=evil)


def _with_data(data: str, fmt: str = "v1") -> str:
    return f"report text\n\n<!-- ballet:report {fmt} {data} -->"


def test_a_damaged_block_is_refused_clearly() -> None:
    good = encode_block(FULL)
    data = good.removeprefix(BLOCK_START + "v1 ").removesuffix(" -->")
    cases = {
        "truncated": _with_data(data[: len(data) // 2]),
        "not base64": _with_data(data[:-4] + "!!!!"),
        "not zlib": _with_data(base64.b64encode(b"plain text, not compressed").decode()),
        "not a report": _with_data(base64.b64encode(zlib.compress(b'{"stage": 1}')).decode()),
        "not JSON": _with_data(base64.b64encode(zlib.compress(b"{nope")).decode()),
    }
    for name, body in cases.items():
        with pytest.raises(ReportBlockError) as caught:
            decode_block(body)
        assert "damaged" in str(caught.value), name
        assert "was the report comment edited?" in str(caught.value), name
    with pytest.raises(ReportBlockError, match="format 'v9' is not 'v1'; upgrade Ballet"):
        decode_block(_with_data(data, fmt="v9"))
    with pytest.raises(ReportBlockError, match="no '<!-- ballet:report … -->' block found"):
        decode_block("a person rewrote this comment")


def test_a_block_that_unpacks_to_too_much_is_refused_unread() -> None:
    bomb = zlib.compress(b"[" + b" " * (RAW_MAX * 2) + b"]", 9)
    with pytest.raises(ReportBlockError, match=f"over {RAW_MAX} bytes uncompressed"):
        decode_block(_with_data(base64.b64encode(bomb).decode()))


def astral(n: int, seed: int) -> str:
    """The least compressible text there is: random code points of four UTF-8 bytes each."""
    rng = random.Random(seed)
    return "".join(chr(rng.randrange(0x10000, 0x110000)) for _ in range(n))


def test_a_report_of_noise_in_every_field_keeps_its_outcome_and_summary_start() -> None:
    # Nothing compresses and every list is full: even the tightest bounds do not fit,
    # only the bare report does.
    def many(seed: int) -> tuple[str, ...]:
        return tuple(astral(300, seed + i) for i in range(12))

    rep = Report(
        outcome="changes",
        summary=astral(5_000, 5),
        decisions=many(100),
        constraints=many(200),
        open_questions=many(300),
        questions=tuple(Question(text=q) for q in many(400)),
        require_signoffs=many(500),
        usage=Usage(input_tokens=7),
    )
    block = ReportBlock(job_key="k", stage="review", iteration=1, report=rep)
    encoded = encode_block(block)
    assert len(encoded) <= BLOCK_MAX
    kept = decode_block(encoded)
    assert kept.clipped and kept.handoff is None
    assert kept.report.outcome == "changes" and kept.report.usage == rep.usage
    assert kept.report.summary.startswith(rep.summary[:400])
    assert kept.report.details == "[the rest of this report was cut: see the report comment]"
    assert kept.report.decisions == ()


def test_a_block_cut_short_on_a_base64_boundary_is_refused_as_damaged() -> None:
    data = encode_block(FULL).removeprefix(BLOCK_START + "v1 ").removesuffix(" -->")
    with pytest.raises(ReportBlockError, match=r"damaged \(error: truncated\)"):
        decode_block(_with_data(data[: (len(data) // 8) * 4]))
