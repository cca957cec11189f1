"""The GitHub edge's own test helpers: a launcher that records, the ticket service on
the fake GitHub, a webhook delivery, and a ticket's record as the store keeps it."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ballet.core.config import Policy, ResolvedPipeline, ResolvedStage, Runtime
from ballet.core.effects import CancelSession, StartSession
from ballet.core.record import Record, TicketRef
from ballet.github.app import GitHubApp
from ballet.github.forge import AppIdentity
from ballet.tickets.decided import decided_by
from ballet.tickets.live import LiveTickets
from ballet.tickets.memo import Memo
from ballet.tickets.service import TicketService
from ballet.tickets.store import RecordStore
from fake_github import INSTALLATION_ID
from redis.asyncio import Redis

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


APP = AppIdentity(app_id=4242, slug="ballet-test")


@dataclass
class RecordingLauncher:
    launched: list[StartSession] = field(default_factory=list)
    cancelled: list[CancelSession] = field(default_factory=list)
    # Per launch: since when a mirror fetch would do for it (tickets/decided.py), and when.
    decided: list[tuple[float | None, float]] = field(default_factory=list)

    async def launch(self, effect: StartSession) -> None:
        self.launched.append(effect)
        self.decided.append((decided_by(), time.monotonic()))

    async def cancel(self, effect: CancelSession) -> None:
        self.cancelled.append(effect)


def ticket_service(
    forges: GitHubApp,
    redis: Redis,
    launcher: RecordingLauncher,
    store: RecordStore | None = None,
    app: AppIdentity = APP,
) -> TicketService:
    """The ticket service of the edge tests: the fake GitHub, this Redis, `launcher`."""
    return TicketService(
        forges.for_installation,
        store or RecordStore(redis),
        Memo(redis),
        launcher,
        app=app,
        default_runtime=Runtime(adapter="command", command=("python3", "agent.py")),
        clock=lambda: NOW,
        live_tickets=LiveTickets(redis),
        find_installation=forges.installation_of,
    )


@dataclass(frozen=True)
class Delivery:
    id: str
    event: str
    payload: dict[str, Any]
    received_at: datetime = NOW


def labeled(
    webhooks_dir: Path,
    label: str = "ballet",
    sender: str = "Codertocat",
    delivery_id: str = "d-label",
) -> Delivery:
    """GitHub's recorded `issues.labeled` delivery, for the fake's installation."""
    payload = json.loads((webhooks_dir / "issues/labeled.payload.json").read_text())
    payload["label"] = {"name": label}
    payload["installation"] = {"id": INSTALLATION_ID}
    payload["sender"] = {**payload["sender"], "login": sender}
    return Delivery(id=delivery_id, event="issues", payload=payload)


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
