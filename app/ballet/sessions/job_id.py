"""The arq job id of a session: the same session is never enqueued twice.

arq refuses a job whose id is already queued or has a kept result, so the id
names exactly one session: ticket, stage, iteration, attempt and phase.
"""

from __future__ import annotations


def session_job_id(ticket: str, stage: str, iteration: int, attempt: int, phase: str | None) -> str:
    """E.g. `session:octo/hello#12:implement:i2:a1:plan` (`-` when not phased)."""
    if iteration < 1 or attempt < 1:
        raise ValueError(f"iteration and attempt start at 1, got {iteration} and {attempt}")
    return f"session:{ticket}:{stage}:i{iteration}:a{attempt}:{phase or '-'}"
