"""Stage sessions: a fresh process in a fresh clone, per docs/session-contract.md.

The worker calls `run_session(spec, workspaces=…, git_auth=…)` once per session
(one phase of a phased stage per call); the session is named by the engine's
job key (`ballet.core.routing.job_key`), which is also its arq job id.

The session's files live outside its clone: BALLET_REPORT, BALLET_CONTEXT,
BALLET_PROMPT (the *path* of the rendered prompt.md) and, in a phased stage,
BALLET_HANDOFF are paths in a per-session directory next to the clone.
"""

from __future__ import annotations

from ballet.sessions.git_auth import GitAuth, anonymous, static_token
from ballet.sessions.routing import ModelChoice, route
from ballet.sessions.runner import SessionOptions, open_workspace, run_session
from ballet.sessions.spec import (
    Answer,
    EarlierReport,
    FailureReason,
    RunnerSpec,
    SessionResult,
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
    "RunnerSpec",
    "SessionOptions",
    "SessionResult",
    "StageInfo",
    "TicketInfo",
    "Workspace",
    "WorkspaceError",
    "Workspaces",
    "anonymous",
    "open_workspace",
    "route",
    "run_session",
    "static_token",
]
