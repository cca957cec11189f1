"""Benchmark the pure core: transitions per second and the state block's size.

Drives whole tickets (implement → review → verify → integrate → merged, with
one rework loop) through `advance`, rendering the tracking comment on every
transition as the edge does, and measures the hidden state block of a ticket
with 50 stage runs against GitHub's 65,536-character comment limit.

    .venv/bin/python bench/core_machine.py [--tickets 300]
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta

from ballet.core.config import Budget, Policy, ResolvedPipeline, ResolvedStage, Runtime
from ballet.core.events import (
    AnyEvent,
    MergeResult,
    PullRequestOpened,
    SessionFinished,
    TicketRequested,
)
from ballet.core.machine import advance
from ballet.core.record import Record, encode_record
from ballet.core.report import Report

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CLAUDE = Runtime(adapter="claude-code", model="sonnet")


def pipeline() -> ResolvedPipeline:
    def agent(sid: str, nxt: dict[str, str]) -> ResolvedStage:
        return ResolvedStage(
            id=sid, kind="agent", name=sid, runtime="claude", runtime_config=CLAUDE, next=nxt
        )

    stages = (
        agent("implement", {"done": "review"}),
        agent("review", {"approve": "verify", "changes_requested": "implement"}),
        agent("verify", {"pass": "integrate", "fail": "implement"}),
        ResolvedStage(
            id="integrate",
            kind="platform",
            name="Integrate",
            action="merge",
            next={"merged": "$done", "returned": "implement"},
        ),
    )
    return ResolvedPipeline(
        name="default",
        version=1,
        hash="h",
        ticket_type="default",
        branch="ballet/{ticket}-{slug}",
        base=None,
        iteration_limit=20,
        budget=Budget(),
        signoffs=(),
        roles={},
        approvers=None,
        policy=Policy(),
        stages=stages,
    )


def finish(rec: Record, outcome: str, now: datetime) -> SessionFinished:
    run = rec.open_run
    assert run is not None and run.job_key is not None
    return SessionFinished(
        now=now,
        job_key=run.job_key,
        stage=run.stage,
        iteration=run.iteration,
        attempt=run.attempt,
        report=Report(outcome=outcome, summary="Did the work " * 10),
        head_sha="c" * 40,
    )


def one_ticket(p: ResolvedPipeline, issue: int) -> tuple[Record, int]:
    now = T0
    rec, _ = advance(
        None,
        TicketRequested(
            now=now,
            repo="octo/app",
            issue=issue,
            author="a",
            title="Add a flag",
            pipeline=p,
            default_branch="main",
        ),
    )
    steps: list[AnyEvent | str] = [
        PullRequestOpened(now=now, number=issue + 1, head_sha="b" * 40),
        "done",
        "changes_requested",
        "done",
        "approve",
        "pass",
    ]
    n = 1
    for step in steps:
        now += timedelta(minutes=5)
        event = finish(rec, step, now) if isinstance(step, str) else step
        rec, _ = advance(rec, event)
        n += 1
    rec, _ = advance(rec, MergeResult(now=now, result="merged"))
    return rec, n + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=300)
    args = parser.parse_args()
    p = pipeline()
    start = time.perf_counter()
    transitions = 0
    for i in range(args.tickets):
        rec, n = one_ticket(p, i * 2 + 1)
        assert rec.status == "done"
        transitions += n
    elapsed = time.perf_counter() - start
    print(
        f"{transitions} transitions in {elapsed:.2f}s: {transitions / elapsed:,.0f}/s "
        f"({elapsed / transitions * 1e3:.2f} ms each, tracking comment rendered each time)"
    )
    base = rec.history[0]
    runs = tuple(
        base.model_copy(
            update={
                "attempt": i + 1,
                "summary": f"Run {i}: fixed case {i * 7919}",
                "job_key": f"octo/app#1:implement:1:{i + 1}",
                "report_ref": f"octo/app#1:report:implement:1:{i + 1}",
                "end": T0 + timedelta(seconds=i * 97),
            }
        )
        for i in range(50)
    )
    big = rec.model_copy(update={"history": runs})
    size = len(encode_record(big))
    print(
        f"state block for 50 stage runs: {size:,} characters "
        f"({size / 65_536:.1%} of GitHub's comment limit)"
    )


if __name__ == "__main__":
    main()
