"""The `SessionSpec` of a session the ticket starts now: what the runner needs
of the record (the edge reads the rest: the issue, skills, earlier reports)."""

from __future__ import annotations

from ballet.core import routing
from ballet.core.budgets import session_budget
from ballet.core.effects import SessionSpec
from ballet.core.pools import DEFAULT_POOL
from ballet.core.record import Record
from ballet.core.returns import SignoffChange

# A sign-off role has no stage of its own to take a timeout from.
SIGNOFF_TIMEOUT_MINUTES = 60


def session_spec(
    rec: Record, stage_id: str, phase: str | None, role: str | None, note: str
) -> SessionSpec:
    if role is not None:
        r = rec.pipeline.roles[role]
        run_stage, runtime, config = f"signoff-{role}", r.runtime, r.runtime_config
        pool = r.runtime_config.pool  # a role runs where its runtime does
        model, effort = r.model, r.effort  # like a stage's own, they win over its runtime's
        skills, instructions, timeout = r.skills, r.instructions, SIGNOFF_TIMEOUT_MINUTES
    else:
        s = rec.pipeline.stage(stage_id)
        assert s.runtime is not None and s.runtime_config is not None, "agent stages have one"
        run_stage, runtime, config, pool = stage_id, s.runtime, s.runtime_config, s.pool
        # Only the stage's own overrides: the session side routes per phase and
        # adapter (`ballet.sessions.routing`), which only it knows how to name.
        model, effort = s.model, s.effort
        skills, instructions, timeout = s.skills, s.instructions, s.timeout_minutes
    lands = role is None and routing.lands(rec.pipeline.stage(stage_id))
    job = routing.job_key(rec.key, run_stage, rec.iteration, rec.attempt, phase)
    return SessionSpec(
        job_key=job,
        repo=rec.ticket.repo,
        issue=rec.ticket.number,
        title=rec.ticket.title,
        author=rec.ticket.author,
        stage=stage_id,
        kind="signoff" if role else "agent",
        role=role,
        iteration=rec.iteration,
        attempt=rec.attempt,
        phase=phase,
        runtime=runtime,
        runtime_config=config,
        pool=pool or DEFAULT_POOL,
        model=model,
        effort=effort,
        skills=skills,
        instructions=instructions,
        timeout_minutes=timeout,
        branch=rec.branch,
        base=rec.base,
        update_with=rec.pipeline.merge.update if lands else None,
        pr_number=rec.pr_number,
        pipeline=rec.pipeline.name,
        pipeline_version=rec.pipeline.version,
        handoff=rec.handoff if phase else None,
        answers=tuple(q.answer for q in rec.questions if q.answer is not None),
        note=note,
        returned=rec.returned,
        signoffs_required=rec.signoffs_required,
        signoffs_given=rec.signoffs_given,
        signoff_changes=changes_since_last_session(rec, role),
        budget=session_budget(rec),
    )


def changes_since_last_session(rec: Record, role: str | None) -> tuple[SignoffChange, ...]:
    """What changed in the sign-offs since a session like this one last began: the
    stage agents' (role None) or this role's. A sign-off session in between does not
    take the news away from the agent, which reads it with its next turn."""
    last = next(
        (r.start for r in reversed(rec.history) if r.job_key is not None and r.role == role),
        None,
    )
    return tuple(c for c in rec.signoff_changes if last is None or c.at >= last)
