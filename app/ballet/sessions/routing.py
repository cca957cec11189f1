"""Which model and effort a session runs with: a pure function of stage and phase.

Research and plan get the runtime's strongest model and high effort; implement,
verify and unphased stages get the runtime's defaults. The stage's own
`model`/`effort` always win. The engine passes only those overrides (it cannot
know what "strongest" means for each CLI); this is the one place that routes.

Strongest model per adapter (None: the CLI's own default, usually its flagship):
- claude-code: `opus` (alias for the newest Opus), effort `high`
- codex: CLI default model, `model_reasoning_effort="high"`
- aider: the runtime's model (litellm names are provider-specific), `--reasoning-effort high`
- gemini: `pro` (alias for the newest Pro model); the CLI has no effort flag
- opencode: the runtime's model (`provider/model`), `--variant high`
- command: not applicable; the program chooses for itself

A runtime's `strongest_model` names it where the adapter has no alias, or another.
"""

from __future__ import annotations

from typing import NamedTuple

from ballet.core.config import Adapter, Phase
from ballet.sessions.spec import RunnerSpec

STRONGEST_MODEL: dict[Adapter, str | None] = {
    "claude-code": "opus",
    "codex": None,
    "aider": None,
    "gemini": "pro",
    "opencode": None,
    "command": None,
}
HIGH_EFFORT = "high"
THINKING_PHASES: frozenset[Phase] = frozenset({"research", "plan"})


class ModelChoice(NamedTuple):
    model: str | None
    effort: str | None


def route(
    adapter: Adapter,
    phase: Phase | None,
    *,
    stage_model: str | None,
    stage_effort: str | None,
    runtime_model: str | None,
    runtime_effort: str | None,
    strongest_model: str | None = None,
) -> ModelChoice:
    """`strongest_model` is the runtime's own word for its strongest (`.ballet.yml`),
    which wins over the adapter's alias: aider and opencode name models per provider."""
    if phase in THINKING_PHASES:
        strongest = strongest_model or STRONGEST_MODEL[adapter] or runtime_model
        return ModelChoice(stage_model or strongest, stage_effort or HIGH_EFFORT)
    return ModelChoice(stage_model or runtime_model, stage_effort or runtime_effort)


def route_of(spec: RunnerSpec) -> ModelChoice:
    """The session's model and effort, from its stage, phase and runtime."""
    return route(
        spec.runtime.adapter,
        spec.phase,
        stage_model=spec.model,
        stage_effort=spec.effort,
        runtime_model=spec.runtime.model,
        runtime_effort=spec.runtime.effort,
        strongest_model=spec.runtime.strongest_model,
    )
