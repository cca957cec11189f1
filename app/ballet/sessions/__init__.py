"""Stage sessions: a fresh process in a fresh clone, per docs/session-contract.md.

The worker calls `run_session(spec, workspaces=…, git_auth=…, heartbeat=…)`
once per session (one phase of a phased stage per call) under the arq job id
`session_job_id(ticket, stage, iteration, attempt, phase)`.

The session's files live outside its clone: BALLET_REPORT, BALLET_CONTEXT,
BALLET_PROMPT (the *path* of the rendered prompt.md) and, in a phased stage,
BALLET_HANDOFF are paths in a per-session directory next to the clone.
"""

from __future__ import annotations

from ballet.sessions.git_auth import GitAuth, anonymous, static_token
from ballet.sessions.job_id import session_job_id
from ballet.sessions.routing import ModelChoice, route
from ballet.sessions.runner import SessionOptions, run_session
from ballet.sessions.spec import (
    Answer,
    EarlierReport,
    FailureReason,
    SessionResult,
    SessionSpec,
    StageInfo,
    TicketInfo,
)
from ballet.sessions.workspace import GitIdentity, Workspace, WorkspaceError, Workspaces

__all__ = [
    "Answer",
    "EarlierReport",
    "FailureReason",
    "GitAuth",
    "GitIdentity",
    "ModelChoice",
    "SessionOptions",
    "SessionResult",
    "SessionSpec",
    "StageInfo",
    "TicketInfo",
    "Workspace",
    "WorkspaceError",
    "Workspaces",
    "anonymous",
    "route",
    "run_session",
    "session_job_id",
    "static_token",
]
