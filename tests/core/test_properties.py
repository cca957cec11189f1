"""Invariants over random event sequences (hypothesis).

Whatever happens to a ticket: it is never done by Ballet without every
required sign-off, its iteration never passes the limit, its version strictly
increases, every stage run ends once, the record round-trips through its
serialised form, and each new status is one the transition table declares.
"""

from __future__ import annotations

from datetime import timedelta

from ballet.core.commands import parse_commands
from ballet.core.config import Budget, Policy, ResolvedPipeline
from ballet.core.effects import PostComment, PostReportComment, StartSession
from ballet.core.events import (
    AnyEvent,
    ChecksCompleted,
    ChecksStarted,
    CommandIssued,
    HeadPushed,
    MergeResult,
    PullRequestClosed,
    PullRequestOpened,
    ReconcileTick,
    ReviewSubmitted,
    SessionCrashed,
    SessionFinished,
    TicketRequested,
)
from ballet.core.machine import TABLE, IllegalEvent, advance, destinations
from ballet.core.record import TERMINAL, Record, as_on_github, decode_record, encode_record
from ballet.core.report import Handoff, Question, Report, Usage
from core_kit import T0, agent, default_stages, human, make_pipeline, platform
from hypothesis import given, settings
from hypothesis import strategies as st

PIPELINES: list[ResolvedPipeline] = [
    make_pipeline(signoffs=("security",), iteration_limit=2, budget=Budget(sessions=9)),
    make_pipeline(
        signoffs=("security", "docs"),
        policy=Policy(review="agent+human"),
        approvers=("bob",),
        budget=Budget(cost_usd=3.0),
    ),
    make_pipeline(
        (
            agent("implement", phases=("research", "plan", "implement"), next={"done": "ci"}),
            platform("ci", wait_for="checks", next={"pass": "review", "fail": "implement"}),
            platform(
                "review",
                wait_for="review",
                next={"approve": "$done", "changes_requested": "implement"},
            ),
        ),
        signoffs=("docs",),
        iteration_limit=3,
    ),
    make_pipeline((agent("explore", next={"done": "$done"}),), branch=None, signoffs=("docs",)),
    make_pipeline(default_stages(), policy=Policy(merge="manual", review="agent+human")),
    make_pipeline(
        (human("triage", next={"approve": "implement", "reject": "$failed"}), *default_stages())
    ),
]
LINES = [
    "/ballet approve",
    "/ballet approve sha0001",
    "/ballet reject no",
    "/ballet answer yes",
    "/ballet retry",
    "/ballet cancel",
    "/ballet pause",
    "/ballet resume",
    "/ballet signoff require security",
    "/ballet signoff require docs",
    "/ballet signoff waive security",
    "/ballet signoff waive docs",
    "/ballet policy review=agent+human",
    "/ballet policy review=agent merge=manual",
    "/ballet policy merge=auto",
    "/ballet status",
    "/ballet help",
    "/ballet bogus",
]
NEW_COMMENTS = (PostComment, PostReportComment)
SHAS = ["sha0001", "sha0002", "sha0003"]
OUTCOMES = [
    "done",
    "failed",
    "approve",
    "changes_requested",
    "pass",
    "fail",
    "signed_off",
    "changes",
    "weird",
]


def session_result(rec: Record, data: st.DataObject, now: object) -> AnyEvent:
    run = rec.open_run
    assert run is not None and run.job_key is not None
    stage = rec.pipeline.stage(run.stage)
    # Mostly the outcomes the pipeline routes, so tickets get somewhere.
    likely = ["signed_off"] * 3 if run.role else [*stage.next, "done"] * 3
    outcome = data.draw(st.sampled_from([*likely, *OUTCOMES]))
    report = Report(
        outcome=outcome,
        summary="s",
        questions=(Question(text="q?", blocking=True),)
        if data.draw(st.integers(0, 9)) == 0
        else (),
        require_signoffs=data.draw(st.sampled_from([(), (), ("docs",), ("nope",)])),
        usage=Usage(cost_usd=data.draw(st.sampled_from([0.0, 0.5, 1.5]))),
    )
    return SessionFinished(
        now=now,
        job_key=run.job_key,
        stage=run.stage,
        iteration=run.iteration,  # type: ignore[arg-type]
        attempt=run.attempt,
        phase=run.phase,
        report=report,
        head_sha=data.draw(st.sampled_from([None, *SHAS])),
        handoff=Handoff(summary="h") if run.phase else None,
    )


def random_event(rec: Record, data: st.DataObject, minutes: float) -> AnyEvent:
    now = T0 + timedelta(minutes=minutes)
    kinds = ["session"] * 8 + ["command"] * 3 + ["checks_started", "checks", "checks"]
    kinds += ["review", "review", "merge", "merge", "pr_opened", "push", "tick", "stale"]
    kind = data.draw(st.sampled_from(kinds))
    if data.draw(st.integers(0, 499)) == 317:  # hypothesis favours 0 and the bounds
        kind = "pr_closed"  # rare: a person ending the ticket stops everything else
    sha = data.draw(st.sampled_from(SHAS))
    if kind == "session" and rec.open_run is not None and rec.open_run.job_key is not None:
        if data.draw(st.integers(0, 7)) == 0:  # now and then its worker dies instead
            run = rec.open_run
            return SessionCrashed(
                now=now,
                job_key=run.job_key,
                stage=run.stage,
                iteration=run.iteration,
                attempt=run.attempt,
                phase=run.phase,
            )
        return session_result(rec, data, now)
    if kind == "command" or kind == "session":
        line = data.draw(st.sampled_from(LINES))
        if line == "/ballet cancel" and data.draw(st.integers(0, 4)) != 3:
            line = "/ballet status"  # cancelling is rare, or nothing else gets exercised
        (cmd,) = parse_commands(line)
        return CommandIssued(
            now=now,
            command=cmd,
            author=data.draw(st.sampled_from(["alice", "bob", "bot"])),
            permission=data.draw(st.sampled_from(["read", "write", "admin"])),
            author_is_bot=data.draw(st.booleans()),
            comment_id=data.draw(st.integers(1, 5)),
            head_sha=sha,
        )
    if kind == "checks_started":
        return ChecksStarted(now=now, head_sha=sha)
    if kind == "checks":
        return ChecksCompleted(
            now=now, head_sha=sha, conclusion=data.draw(st.sampled_from(["success", "failure"]))
        )
    if kind == "review":
        return ReviewSubmitted(
            now=now,
            author="bob",
            state=data.draw(st.sampled_from(["approved", "changes_requested", "commented"])),
        )
    if kind == "merge":
        return MergeResult(
            now=now,
            result=data.draw(
                st.sampled_from(["merged", "merged", "conflict", "checks_failed", "closed"])
            ),
        )
    if kind == "pr_opened":
        return PullRequestOpened(now=now, number=data.draw(st.integers(8, 9)), head_sha=sha)
    if kind == "pr_closed":
        return PullRequestClosed(now=now, merged=data.draw(st.booleans()), by="bob")
    if kind == "push":
        return HeadPushed(now=now, sha=sha, pusher="alice")
    if kind == "tick":
        return ReconcileTick(now=now)
    return SessionFinished(
        now=now,
        job_key="nope",
        stage="implement",
        iteration=1,
        attempt=1,
        report=Report(outcome="done", summary=""),
    )


def check_invariants(
    before: Record, after: Record, effects: list[object], rule_to: tuple[str, ...]
) -> None:
    assert after.version == before.version + 1
    assert 1 <= after.iteration <= after.pipeline.iteration_limit
    if after.status == "done" and after.ended_by is None:
        assert after.missing_signoffs() == (), "done without every required sign-off"
    assert all(run.end is not None for run in after.history[:-1]), "only the last run may be open"
    for old, new in zip(before.history, after.history, strict=False):
        if old.end is not None:
            assert new == old, "an ended run never changes"
    if after.status in TERMINAL or after.status == "paused":
        assert after.open_run is None or after.status == "paused"
    if after.status == "running":
        assert after.open_run is not None and after.open_run.job_key is not None
    sessions = [e for e in effects if isinstance(e, StartSession)]
    assert len(sessions) <= 1 and (not sessions or after.status == "running")
    assert after.status == before.status or after.status in rule_to
    jobs = [run.job_key for run in after.history if run.job_key]
    assert len(jobs) == len(set(jobs)), "every session has a job key of its own"
    assert decode_record(encode_record(after)) == as_on_github(after)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(PIPELINES), st.data())
def test_random_event_sequences_keep_the_invariants(
    pipeline: ResolvedPipeline, data: st.DataObject
) -> None:
    rec, _ = advance(
        None,
        TicketRequested(
            now=T0,
            repo="o/r",
            issue=1,
            author="alice",
            title="t",
            pipeline=pipeline,
            default_branch="main",
        ),
    )
    minutes = 0.0
    posted: set[str] = set()
    for _ in range(data.draw(st.integers(1, 40))):
        minutes += data.draw(st.sampled_from([0, 1, 20, 90]))
        event = random_event(rec, data, minutes)
        try:
            after, effects = advance(rec, event)
        except IllegalEvent:
            continue
        to = destinations(TABLE[(rec.status, event.kind)], event)
        check_invariants(rec, after, list(effects), to)
        # A new comment never reuses another's marker (that would edit it instead).
        markers = [e.marker.render() for e in effects if isinstance(e, NEW_COMMENTS)]
        assert len(markers) == len(set(markers)) and not posted & set(markers), markers
        posted |= set(markers)
        rec = after
