"""A stage run opened and closed, and the ticket set waiting: the smallest moves
`steps` and the handlers compose (re-exported by `steps`)."""

from __future__ import annotations

from typing import Any

from ballet.core.limits import RUN_SUMMARY_MAX, clip
from ballet.core.record import StageRun, Status, Waiting, WaitKind
from ballet.core.tx import Tx


def close_run(tx: Tx, outcome: str, summary: str = "", **extra: Any) -> StageRun | None:
    """End the open stage run, if any: every run gets exactly one end."""
    run = tx.rec.open_run
    if run is None:
        return None
    kept = clip(summary, RUN_SUMMARY_MAX)  # the report comment has it all
    done = run.model_copy(update={"outcome": outcome, "summary": kept, "end": tx.now, **extra})
    tx.set(history=(*tx.rec.history[:-1], done))
    return done


def set_status(tx: Tx, status: Status, waiting: Waiting | None = None) -> None:
    tx.set(status=status, waiting=waiting)


def open_run(
    tx: Tx, stage_id: str, phase: str | None = None, role: str | None = None, job: str | None = None
) -> None:
    rec = tx.rec
    run = StageRun(
        stage=stage_id,
        iteration=rec.iteration,
        attempt=rec.attempt,
        phase=phase,
        role=role,
        start=tx.now,
        job_key=job,
    )
    tx.set(history=(*rec.history, run))


def wait(
    tx: Tx,
    kind: WaitKind,
    reason: str,
    who: tuple[str, ...],
    command: str,
    sha: str | None = None,
    started: bool = False,
) -> None:
    w = Waiting(
        kind=kind,
        reason=reason,
        who=who,
        command=command,
        since=tx.now,
        sha=sha,
        checks_started=started,
    )
    set_status(tx, "waiting", w)
