"""The GitHub edge's own test helpers: a launcher that records, a webhook delivery, and
a ticket's record as the store keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ballet.core.config import Policy, ResolvedPipeline, ResolvedStage
from ballet.core.effects import CancelSession, StartSession
from ballet.core.record import Record, TicketRef

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@dataclass
class RecordingLauncher:
    launched: list[StartSession] = field(default_factory=list)
    cancelled: list[CancelSession] = field(default_factory=list)

    async def launch(self, effect: StartSession) -> None:
        self.launched.append(effect)

    async def cancel(self, effect: CancelSession) -> None:
        self.cancelled.append(effect)


@dataclass(frozen=True)
class Delivery:
    id: str
    event: str
    payload: dict[str, Any]
    received_at: datetime = NOW


def stored_record(repo: str = "octo/demo", **changes: object) -> Record:
    """A one-stage ticket's record on issue 7 of `repo`, with `changes` applied."""
    pipeline = ResolvedPipeline(
        name="default",
        version=1,
        hash="h",
        ticket_type="default",
        branch="ballet/{ticket}-{slug}",
        base=None,
        iteration_limit=3,
        budget={},
        signoffs=(),
        roles={},
        approvers=None,
        policy=Policy(),
        stages=(ResolvedStage(id="implement", kind="agent", name="Implement"),),
    )
    when = datetime(2026, 1, 2, tzinfo=UTC)
    base = Record(
        ticket=TicketRef(repo=repo, number=7, author="octocat", title="t"),
        ticket_type="default",
        pipeline=pipeline,
        status="running",
        base="main",
        policy=Policy(),
        created_at=when,
        updated_at=when,
    )
    return base.model_copy(update=changes)
