"""The outcomes a session may report, and what each does: told to the session in its
prompt and context, so an agent never guesses a word the pipeline does not know."""

from __future__ import annotations

from ballet.core.config import ResolvedPipeline
from ballet.core.routing import following, integrates

# A sign-off session's outcomes are fixed; anything else it reports asks a person.
SIGNOFF_OUTCOMES = ("signed_off", "changes")
UNKNOWN_OUTCOME = "Any other outcome raises a question for a person."


def signoff_outcomes(role: str) -> dict[str, str]:
    return {
        "signed_off": f"you sign off as the `{role}` role: the ticket goes on. A sign-off "
        "is not an approval; people decide what merges.",
        "changes": "say what must change in `summary` and `details`: the ticket goes back "
        "to whoever handed it over, with your report.",
    }


def stage_outcomes(
    pipeline: ResolvedPipeline, stage_id: str, phase: str | None = None
) -> dict[str, str]:
    """Each outcome the stage's `next` knows, and `done`, which always moves on (in a
    phase but the last, to the next phase)."""
    stage = pipeline.stage(stage_id)
    if phase is not None and phase in stage.phases and phase != stage.phases[-1]:
        after = stage.phases[stage.phases.index(phase) + 1]
        return {"done": f"phase `{after}` starts, given only your handoff."}
    targets = dict(stage.next)
    targets.setdefault("done", following(pipeline, stage_id))
    if integrates(stage):
        # An integrator: its `done` is Ballet's landing, whose result is `merged` or
        # `returned`; a session never reports `merged` itself.
        told = {o: _goes_to(t) for o, t in targets.items() if o not in ("done", "merged")}
        return {"done": LANDS, **told}
    return {outcome: _goes_to(target) for outcome, target in targets.items()}


LANDS = (
    "the branch is up to date with the base and the checks pass: Ballet lands the pull "
    "request by the repository's rules, and the stage's outcome is the landing's "
    "(merged, or returned with its cause)."
)


def _goes_to(target: str) -> str:
    if target == "$done":
        return "the ticket is done."
    if target == "$failed":
        return "the ticket ends failed."
    if target == "$question":
        return "a person is asked."
    return f"the ticket goes to stage `{target}`."
