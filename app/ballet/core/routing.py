"""Where a ticket goes next: the pipeline's `next` tables and their defaults.

Pure functions of the pinned pipeline and the ticket's policy; the machine
decides what entering a target means.
"""

from __future__ import annotations

from ballet.core.config import Policy, ResolvedPipeline, ResolvedStage

DONE, FAILED, QUESTION = "$done", "$failed", "$question"
# Where an integrator's `done` leads: Ballet lands the pull request (steps.proceed).
LAND = "$land"
INTEGRATOR = "integrator"


def lands(stage: ResolvedStage) -> bool:
    """A stage whose end is the pull request's landing: a platform merge, or an agent
    stage with the integrator skill, which Ballet lands once its session reports `done`
    (the branch up to date with the base, the checks run); the landing's result is then
    the stage's outcome, `merged` or `returned`."""
    return stage.action == "merge" or (stage.kind == "agent" and INTEGRATOR in stage.skills)


def integrates(stage: ResolvedStage) -> bool:
    """An agent stage that lands: its session's `done` is followed by Ballet's landing."""
    return stage.kind == "agent" and lands(stage)


def integrator_stage(pipeline: ResolvedPipeline) -> str | None:
    """The pipeline's switched-on agent stage that integrates, if any."""
    return next((s.id for s in pipeline.stages if integrates(s)), None)


def index_of(pipeline: ResolvedPipeline, stage_id: str) -> int:
    return [s.id for s in pipeline.stages].index(stage_id)


def following(pipeline: ResolvedPipeline, stage_id: str) -> str:
    """The stage after this one; after the last stage, `$done`."""
    i = index_of(pipeline, stage_id) + 1
    return pipeline.stages[i].id if i < len(pipeline.stages) else DONE


def next_target(pipeline: ResolvedPipeline, stage_id: str, outcome: str) -> tuple[str, str]:
    """The target of an outcome, and why when it is a question."""
    stage = pipeline.stage(stage_id)
    if outcome == "done" and integrates(stage):
        return LAND, ""  # the landing's result, `merged` or `returned`, is routed instead
    if outcome in stage.next:
        target = stage.next[outcome]
        why = f"stage `{stage_id}` routes outcome `{outcome}` to a question"
        return target, why if target == QUESTION else ""
    if outcome == "done":
        return following(pipeline, stage_id), ""
    return QUESTION, f"stage `{stage_id}` reported outcome `{outcome}`, which has no target"


def session_target(pipeline: ResolvedPipeline, stage_id: str, outcome: str) -> tuple[str, str]:
    """The target of a session's report. An integrator's `merged` is Ballet's to say,
    after its landing: from the session itself it is a question, not the ticket's end."""
    stage = pipeline.stage(stage_id)
    if outcome == "merged" and integrates(stage):
        return QUESTION, (
            f"the `{stage_id}` session reported `merged`, which only Ballet's landing says: "
            "an integrator reports `done` and Ballet lands the pull request"
        )
    return next_target(pipeline, stage_id, outcome)


def is_on(stage: ResolvedStage, policy: Policy) -> bool:
    # The policy's only switch is human review: optional stages run with it.
    return not stage.optional or policy.review == "agent+human"


def skip_off_stages(pipeline: ResolvedPipeline, policy: Policy, target: str) -> tuple[str, str]:
    """Follow switched-off optional stages to the target of their first `next` entry."""
    seen: set[str] = set()
    while not target.startswith("$") and not is_on(pipeline.stage(target), policy):
        if target in seen:
            return QUESTION, f"optional stages switched off form a loop at `{target}`"
        seen.add(target)
        stage = pipeline.stage(target)
        target = next(iter(stage.next.values()), None) or following(pipeline, target)
    return target, ""


def is_backwards(pipeline: ResolvedPipeline, current: str | None, target: str) -> bool:
    """Returning to this stage or an earlier one starts a new iteration."""
    if current is None or target.startswith("$"):
        return False
    return index_of(pipeline, target) <= index_of(pipeline, current)


def rework_stage(pipeline: ResolvedPipeline) -> str:
    """Where a sign-off's `changes` sends the ticket: `implement`, else the first agent stage."""
    ids = [s.id for s in pipeline.stages]
    if "implement" in ids:
        return "implement"
    return next((s.id for s in pipeline.stages if s.kind == "agent"), ids[0])


def handed_over_by(pipeline: ResolvedPipeline, stage_id: str | None) -> str:
    """Where a signer's `changes` goes: whoever handed the ticket to the gate.

    An agent stage gets its work back. A platform stage only waited for GitHub: the
    agent stage before it did the work in question. (A human stage's approvers are
    asked again instead.) With none, the rework stage."""
    here = pipeline.stage(stage_id) if stage_id else None
    if here is None:
        return rework_stage(pipeline)
    if here.kind == "agent":
        return here.id
    before = [s.id for s in pipeline.stages[: index_of(pipeline, here.id)] if s.kind == "agent"]
    return before[-1] if before else rework_stage(pipeline)


def needs_signoffs(pipeline: ResolvedPipeline, target: str) -> bool:
    """Targets that move the ticket to "in review" or "done" wait for every sign-off."""
    if target in (DONE, LAND):
        return True
    if target.startswith("$"):
        return False
    stage = pipeline.stage(target)
    return stage.kind == "human" or lands(stage) or stage.wait_for in ("review", "merge")


def job_key(ticket: str, stage: str, iteration: int, attempt: int, phase: str | None) -> str:
    base = f"{ticket}:{stage}:{iteration}:{attempt}"
    return f"{base}:{phase}" if phase else base
