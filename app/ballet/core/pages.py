"""Where a ticket and each of its sessions live on Ballet's own pages.

One scheme for every place that links them — the pages' routes
(`ballet.watch.routes`), the check runs' `details_url`, the tracking comment —
so a link on GitHub always lands on the page that serves it. Paths only: the
edge prefixes Ballet's public URL (`BALLET_PUBLIC_URL`).
"""

from __future__ import annotations

from urllib.parse import quote

from ballet.core.record import Record, StageRun
from ballet.core.report_block import artifact_stage


def ticket_path(repo: str, number: int) -> str:
    return f"/tickets/{quote(repo)}/{number}"


def session_path(rec: Record, run: StageRun) -> str | None:
    """A session's page: the parts of its job key (`core.routing.job_key`) under
    its ticket's. None for a run no session made (a person's or GitHub's step)."""
    if run.job_key is None:
        return None
    parts = [artifact_stage(run.stage, run.role), str(run.iteration), str(run.attempt)]
    if run.phase:
        parts.append(run.phase)
    tail = "/".join(quote(p, safe="") for p in parts)
    return f"{ticket_path(rec.ticket.repo, rec.ticket.number)}/sessions/{tail}"


def run_path(rec: Record, run: StageRun) -> str:
    """Where a stage run's check run links: its session's page, else the ticket's."""
    return session_path(rec, run) or ticket_path(rec.ticket.repo, rec.ticket.number)
