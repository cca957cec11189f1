"""Confined sessions: bubblewrap around the agent, an egress proxy its only way out.

See docs/security.md for the threat model and what a session can and cannot reach.
"""

from ballet.sessions.confine.bwrap import SandboxUnavailable, check_bwrap
from ballet.sessions.confine.session import (
    UNCONFINED_WARNING,
    Isolation,
    IsolationMode,
    SessionPaths,
    SessionSandbox,
    confined,
)

__all__ = [
    "UNCONFINED_WARNING",
    "Isolation",
    "IsolationMode",
    "SandboxUnavailable",
    "SessionPaths",
    "SessionSandbox",
    "check_bwrap",
    "confined",
]
