"""A session's resource limits as the runner applies them: the deployment's, lowered
by the runtime's and the stage's `limits:` (core/session_limits.py), enforced by the
confinement (confine/limits.py), and afterwards, when the session failed, the limit
that stopped it as its failure (confine/verdict.py).
"""

from __future__ import annotations

from ballet.core.config import Runtime
from ballet.core.report import Report
from ballet.core.session_limits import Effective, effective_limits
from ballet.sessions.confine import Isolation, SessionSandbox
from ballet.sessions.confine.verdict import limit_notes, limit_verdict
from ballet.sessions.outcome import SessionFailure
from ballet.sessions.process import ProcessOutcome

# Failures a limit may be the cause of: the session ended without a valid report.
_CAUSED = frozenset({"timeout", "exit_code", "missing_report", "invalid_report", "invalid_handoff"})


def session_limits(isolation: Isolation, runtime: Runtime) -> Effective | None:
    """What a session of `runtime` runs with here (None: this worker sets no limits)."""
    if isolation.limits is None:
        return None
    return effective_limits(isolation.limits.values, runtime.limits)


def workspace_disk(isolation: Isolation, runtime: Runtime) -> int | None:
    """The size of the session's own disk, where workspaces get one (None: a directory)."""
    effective = session_limits(isolation, runtime)
    if effective is None or isolation.limits is None:
        return None
    return isolation.limits.workspace_size(effective.values)


def limits_line(isolation: Isolation, effective: Effective) -> str:
    """`limits: memory 4 GiB (cgroup v1 …), …` for the session's log."""
    plan = isolation.limits
    assert plan is not None
    values = effective.values
    return "limits: " + "; ".join(
        f"{name} {values.describe(name)}"
        + (f" ({plan.how(name)})" if getattr(values, name) else "")
        for name in ("memory", "disk", "processes", "cpus")
    )


def ended_notes(sandbox: SessionSandbox) -> list[str]:
    """What the session did against its limits, for its log."""
    if sandbox.limits is None or sandbox.usage is None:
        return []
    return limit_notes(sandbox.limits, sandbox.usage)


def limit_failure(
    failure: SessionFailure,
    sandbox: SessionSandbox,
    outcome: ProcessOutcome,
    timeout_seconds: float,
    isolation: Isolation,
) -> SessionFailure:
    """The limit that stopped a failed session as its failure, or `failure` itself."""
    if failure.reason not in _CAUSED or sandbox.limits is None or sandbox.usage is None:
        return failure
    verdict = limit_verdict(
        sandbox.limits,
        sandbox.usage,
        timed_out=outcome.timed_out,
        timeout_seconds=timeout_seconds,
        disk_in_memory=isolation.limits is not None and isolation.limits.workspace_disk,
    )
    return failure if verdict is None else SessionFailure(verdict.reason, verdict.message)


def with_notes(report: Report, effective: Effective | None) -> Report:
    """The report with what Ballet changed of the repository's `limits:` at its end,
    so its comment says so (a value above the deployment's was lowered to it)."""
    if effective is None or not effective.notes:
        return report
    notes = "\n".join(f"- {note}" for note in effective.notes)
    details = f"{report.details}\n\n" if report.details else ""
    return report.model_copy(update={"details": f"{details}**Ballet's limits:**\n{notes}"})


def failure_with_notes(failure: SessionFailure, effective: Effective | None) -> SessionFailure:
    if effective is None or not effective.notes:
        return failure
    return SessionFailure(failure.reason, f"{failure.message} ({' '.join(effective.notes)})")
