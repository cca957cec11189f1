"""Builders for the core's tests: pipelines and records made directly.

Pipelines are built as `ResolvedPipeline` values (not through the resolver) so
these tests pin the machine's behaviour alone.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from ballet.core.commands import parse_commands
from ballet.core.config import (
    Budget,
    Policy,
    ResolvedPipeline,
    ResolvedRole,
    ResolvedStage,
    Runtime,
)
from ballet.core.effects import AnyEffect, SessionSpec, StartSession, UpsertTrackingComment
from ballet.core.events import (
    AnyEvent,
    CommandIssued,
    PullRequestOpened,
    SessionFinished,
    TicketRequested,
)
from ballet.core.machine import advance
from ballet.core.record import Record
from ballet.core.report import Report

E = TypeVar("E")

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
CLAUDE = Runtime(adapter="claude-code", model="sonnet", env=("ANTHROPIC_API_KEY",))
CODEX = Runtime(adapter="codex")


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def agent(stage_id: str, **kw: Any) -> ResolvedStage:
    runtime = kw.pop("runtime", "claude")
    return ResolvedStage(
        id=stage_id,
        kind="agent",
        name=kw.pop("name", stage_id.title()),
        runtime=runtime,
        runtime_config=CODEX if runtime == "codex" else CLAUDE,
        **kw,
    )


def human(stage_id: str, **kw: Any) -> ResolvedStage:
    return ResolvedStage(id=stage_id, kind="human", name=stage_id.title(), **kw)


def platform(stage_id: str, **kw: Any) -> ResolvedStage:
    return ResolvedStage(id=stage_id, kind="platform", name=stage_id.title(), **kw)


def default_stages() -> tuple[ResolvedStage, ...]:
    return (
        agent("implement", skills=("implementer",), next={"done": "review"}),
        agent(
            "review", runtime="codex", next={"approve": "verify", "changes_requested": "implement"}
        ),
        agent("verify", next={"pass": "approval", "fail": "implement"}),
        human("approval", optional=True, next={"approve": "integrate", "reject": "implement"}),
        platform("integrate", action="merge", next={"merged": "$done", "returned": "implement"}),
    )


def make_pipeline(stages: tuple[ResolvedStage, ...] | None = None, **kw: Any) -> ResolvedPipeline:
    roles = {
        "security": ResolvedRole(
            name="security",
            runtime="codex",
            runtime_config=CODEX,
            skills=("reviewer",),
            instructions="Review for security.",
        ),
        "docs": ResolvedRole(name="docs", runtime="claude", runtime_config=CLAUDE),
    }
    fields: dict[str, Any] = {
        "name": "default",
        "version": 3,
        "hash": "sha256:abc",
        "ticket_type": "default",
        "branch": "ballet/{ticket}-{slug}",
        "base": None,
        "iteration_limit": 3,
        "budget": Budget(),
        "signoffs": (),
        "roles": roles,
        "approvers": None,
        # Ballet lands with no person here: these tests are about everything else;
        # test_machine_landing_approval has the person's approval (the default).
        "policy": Policy(merge="auto"),
        "stages": stages if stages is not None else default_stages(),
    }
    fields.update(kw)
    return ResolvedPipeline(**fields)


class Ticket:
    """Drives one ticket through `advance`, keeping the record and the last effects."""

    def __init__(self, pipeline: ResolvedPipeline | None = None, **request: Any) -> None:
        fields: dict[str, Any] = {
            "now": T0,
            "repo": "octo/app",
            "issue": 7,
            "author": "alice",
            "title": "Add a --verbose flag",
            "pipeline": pipeline or make_pipeline(),
            "default_branch": "main",
        }
        fields.update(request)
        self.minutes = 0.0
        self.grace = timedelta(0)  # BALLET_WRITE_GRACE_SECONDS: none unless a test sets it
        self.record: Record | None = None
        self.effects: list[AnyEffect] = []
        self.feed(TicketRequested(**fields))

    @property
    def rec(self) -> Record:
        assert self.record is not None
        return self.record

    def feed(self, event: AnyEvent) -> list[AnyEffect]:
        self.record, self.effects = advance(self.record, event, write_grace=self.grace)
        return self.effects

    def now(self, step: float = 1) -> datetime:
        self.minutes += step
        return at(self.minutes)

    def of(self, cls: type[E]) -> list[E]:
        return [e for e in self.effects if isinstance(e, cls)]

    def one(self, cls: type[E]) -> E:
        found = self.of(cls)
        assert len(found) == 1, f"expected one {cls.__name__}, got {self.effects}"
        return found[0]

    def one_tracking(self) -> UpsertTrackingComment:
        return [
            e
            for e in self.of(UpsertTrackingComment)
            if e.target != "issue" or self.rec.pr_number is None
        ][-1]

    def session(self) -> SessionSpec:
        return self.one(StartSession).spec

    def finish(
        self, outcome: str, summary: str = "ok", sha: str | None = "c1", **kw: Any
    ) -> list[AnyEffect]:
        run = self.rec.open_run
        assert run is not None and run.job_key is not None, f"no session open: {self.rec.status}"
        report = kw.pop("report", None) or Report(
            outcome=outcome, summary=summary, **kw.pop("report_fields", {})
        )
        return self.feed(
            SessionFinished(
                now=self.now(),
                job_key=run.job_key,
                stage=run.stage,
                iteration=run.iteration,
                attempt=run.attempt,
                phase=run.phase,
                report=report,
                head_sha=sha,
                **kw,
            )
        )

    def command(
        self,
        line: str,
        author: str = "alice",
        permission: str = "write",
        bot: bool = False,
        head_sha: str | None = None,
    ) -> list[AnyEffect]:
        (cmd,) = parse_commands(line)
        self.comment_id = 100 + len(self.rec.history)
        return self.feed(
            CommandIssued(
                now=self.now(),
                command=cmd,
                author=author,
                permission=permission,
                author_is_bot=bot,
                comment_id=self.comment_id,
                head_sha=head_sha,
            )
        )

    def open_pr(self, number: int = 8, sha: str = "c0") -> None:
        self.feed(PullRequestOpened(now=self.now(), number=number, head_sha=sha))
