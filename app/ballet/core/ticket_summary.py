"""What a listing or the fleet page shows of a ticket, cut from its record once per commit.

Pure: a record in, a small frozen summary out, and what one transition adds to
the per-stage tallies `ballet stats` prints (runs, outcomes, time, rework). The
pages read these from the ticket index (tickets/ticket_index.py) instead of
every record: a record carries its pipeline, history and text, ten times more.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from ballet.core.github_text import clean_line
from ballet.core.record import TERMINAL, Record, StageRun, Status, WaitKind

# A person acts on these waits; the others wait for GitHub (checks, a merge).
PERSON_WAITS: frozenset[WaitKind] = frozenset({"question", "approval", "review"})
DEFAULT_POOL = "default"


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OpenSession(Frozen):
    """The ticket's session running (or queued) now."""

    stage: str  # "implement · plan", "signoff:security"
    pool: str
    started: datetime
    job_key: str


class TicketSummary(Frozen):
    key: str
    repo: str
    number: int
    title: str  # as a reader of GitHub sees it (hidden text removed)
    status: Status
    stage: str  # "—" before any stage; "implement · plan" for a phase
    waiting: str  # what it waits for, "paused", or ""
    waiting_kind: WaitKind | None = None
    waiting_since: datetime | None = None
    session: OpenSession | None = None
    version: int
    created_at: datetime
    updated_at: datetime

    @property
    def live(self) -> bool:
        return self.status not in TERMINAL

    @property
    def waits_for_person(self) -> bool:
        return self.live and self.waiting_kind in PERSON_WAITS


def summary_of(record: Record) -> TicketSummary:
    waiting = record.waiting.reason if record.waiting is not None else ""
    stage = record.stage or "—"
    if record.phase:
        stage += f" · {record.phase}"
    return TicketSummary(
        key=record.key,
        repo=record.ticket.repo,
        number=record.ticket.number,
        title=clean_line(record.ticket.title).text,
        status=record.status,
        stage=stage,
        waiting="paused" if record.status == "paused" else waiting,
        waiting_kind=record.waiting.kind if record.waiting is not None else None,
        waiting_since=record.waiting.since if record.waiting is not None else None,
        session=_open_session(record),
        version=record.version,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def _open_session(record: Record) -> OpenSession | None:
    run = record.open_run
    if run is None or run.job_key is None:
        return None  # a person's or the platform's step: no session
    stage = next((s for s in record.pipeline.stages if s.id == run.stage), None)
    pool = (stage.pool if stage is not None and run.role is None else None) or DEFAULT_POOL
    name = stage_name(run) + (f" · {run.phase}" if run.phase else "")
    return OpenSession(stage=name, pool=pool, started=run.start, job_key=run.job_key)


def lead_seconds(record: Record) -> float | None:
    """Label to done (merged, for a pipeline that merges); None while not done."""
    if record.status != "done":
        return None
    return max((record.updated_at - record.created_at).total_seconds(), 0.0)


# -- the per-stage tallies of `ballet stats`, as transitions add to them ----------------


def stage_name(run: StageRun) -> str:
    return f"signoff:{run.role}" if run.role is not None else run.stage


def sent_back(history: tuple[StageRun, ...], index: int) -> bool:
    """Whether the run sent the ticket back: the next run belongs to a later iteration
    (going back to an earlier stage is what starts one)."""
    later = history[index + 1 : index + 2]
    return bool(later) and later[0].iteration > history[index].iteration


@dataclass(frozen=True)
class StageTally:
    """What one transition adds to a stage's figures, on the day its run started."""

    stage: str
    day: str  # "2026-12-07", the run's start (UTC)
    runs: int = 0
    outcome: str = ""
    milliseconds: int = 0
    rework: int = 0


def stage_tallies(before: Record | None, after: Record) -> list[StageTally]:
    """Runs the transition finished, and runs it showed were sent back. A run is counted
    once: its end, and the start of the run after it, each happen in one transition."""
    old = before.history if before is not None else ()
    found: list[StageTally] = []
    for index, run in enumerate(after.history):
        was = old[index] if index < len(old) else None
        if run.end is not None and (was is None or was.end is None):
            took = max(int((run.end - run.start).total_seconds() * 1000), 0)
            found.append(
                StageTally(stage_name(run), _day(run.start), 1, run.outcome or "none", took)
            )
        if index + 1 >= len(old) and sent_back(after.history, index):
            found.append(StageTally(stage_name(run), _day(run.start), rework=1))
    return found


def _day(at: datetime) -> str:
    return (at.astimezone(UTC) if at.tzinfo else at).strftime("%Y-%m-%d")
