"""Where a ticket's time went (people, GitHub, agent sessions), from its record alone
(the pages say each duration with `core/durations.spoken`).

Pure: the clock comes in as `now`. A stage run is a session's (an agent or a
sign-off role ran), a person's (a human stage, a manual merge, a review awaited)
or GitHub's (checks, the merge Ballet asked for); a question waits for a person
from its asking to the next run, or to now while it is open.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ballet.core.record import TERMINAL, Record, StageRun


@dataclass(frozen=True)
class TicketTimes:
    lead: float  # seconds from the label to the end, or to now
    ended: bool  # False: the lead time is so far
    people: float
    github: float
    sessions: float


def ticket_times(rec: Record, now: datetime) -> TicketTimes:
    ended = rec.status in TERMINAL
    end = rec.updated_at if ended else now
    spent = {"people": 0.0, "github": 0.0, "sessions": 0.0}
    for run in rec.history:
        spent[whose(rec, run)] += ((run.end or end) - run.start).total_seconds()
    starts = sorted(run.start for run in rec.history)
    for qa in rec.questions:
        after = next((s for s in starts if s >= qa.asked_at), end)
        spent["people"] += (after - qa.asked_at).total_seconds()
    return TicketTimes(
        lead=(end - rec.created_at).total_seconds(),
        ended=ended,
        people=spent["people"],
        github=spent["github"],
        sessions=spent["sessions"],
    )


def whose(rec: Record, run: StageRun) -> str:
    """Who a run waited on: "sessions", "people" or "github"."""
    if run.job_key is not None or run.role is not None:
        return "sessions"
    try:
        stage = rec.pipeline.stage(run.stage)
    except KeyError:  # a stage of an older pipeline: a person's step, as the engine knew it
        return "people"
    if stage.kind == "agent":
        return "sessions"
    if stage.kind == "human" or stage.wait_for in ("review", "merge"):
        return "people"
    if stage.action == "merge" and rec.policy.merge == "manual":
        return "people"
    return "github"
