"""The `.ballet.yml` models (file version 1) and the resolved, pinnable pipeline.

These models are the shape of the file; `ballet.core.validate` turns YAML text
into them with positioned errors, and `ballet.core.resolve` turns them plus an
issue's labels into a `ResolvedPipeline` a ticket pins for its whole life.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

StageKind = Literal["agent", "human", "platform"]
Adapter = Literal["command", "claude-code", "codex", "aider", "gemini", "opencode"]
ReviewPolicy = Literal["agent", "agent+human"]
MergePolicy = Literal["auto", "manual"]
PlatformAction = Literal["merge"]
WaitFor = Literal["checks", "review", "merge"]
Phase = Literal["research", "plan", "implement", "verify"]

# Targets a stage's `next` may name besides another stage's id.
TERMINAL_TARGETS = ("$done", "$failed", "$question")
DEFAULT_BRANCH_TEMPLATE = "ballet/{ticket}-{slug}"
BRANCH_PLACEHOLDERS = ("ticket", "slug", "type")
# Skills shipped with Ballet as app/ballet/skills/<name>.md; a repository may
# add its own as .ballet/skills/<name>.md.
BUILTIN_SKILL_NAMES = frozenset({"implementer", "reviewer", "verifier", "integrator"})
MAX_ITERATION_LIMIT = 20


class Strict(BaseModel):
    # Unknown keys are refused: a typo must never silently change a pipeline.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Runtime(Strict):
    adapter: Adapter
    model: str | None = None
    effort: str | None = None
    env: tuple[str, ...] = ()
    command: tuple[str, ...] | None = None


class Role(Strict):
    runtime: str | None = None
    skills: tuple[str, ...] = ()
    instructions: str = ""


class Policy(Strict):
    review: ReviewPolicy = "agent"
    merge: MergePolicy = "auto"


class TicketType(Strict):
    label: str
    pipeline: str


class Budget(Strict):
    sessions: int | None = Field(default=None, ge=1)
    cost_usd: float | None = Field(default=None, gt=0)


class Stage(Strict):
    id: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,39}$")
    kind: StageKind
    name: str | None = None
    runtime: str | None = None
    model: str | None = None
    effort: str | None = None
    skills: tuple[str, ...] = ()
    instructions: str = ""
    phases: tuple[Phase, ...] = ()
    timeout_minutes: int = Field(default=60, ge=1, le=24 * 60)
    optional: bool = False
    action: PlatformAction | None = None
    wait_for: WaitFor | None = None
    next: dict[str, str] = Field(default_factory=dict)


class Pipeline(Strict):
    version: int = Field(default=1, ge=1)
    # None (`branch: null`) is a pipeline without a branch, e.g. a spike whose
    # result is a knowledge report on the issue.
    branch: str | None = DEFAULT_BRANCH_TEMPLATE
    base: str | None = None
    iteration_limit: int = Field(default=3, ge=1, le=MAX_ITERATION_LIMIT)
    budget: Budget = Budget()
    signoffs: tuple[str, ...] = ()
    stages: tuple[Stage, ...]


class BalletConfig(Strict):
    version: Literal[1] = 1
    trigger_label: str = "ballet"
    approvers: tuple[str, ...] | None = None
    runtimes: dict[str, Runtime] = Field(default_factory=dict)
    default_runtime: str | None = None
    roles: dict[str, Role] = Field(default_factory=dict)
    policy: Policy = Policy()
    types: tuple[TicketType, ...] = ()
    pipelines: dict[str, Pipeline] = Field(default_factory=dict)


class ResolvedRole(Strict):
    name: str
    runtime: str
    runtime_config: Runtime
    skills: tuple[str, ...] = ()
    instructions: str = ""


class ResolvedStage(Strict):
    """A stage with every default filled in and its runtime looked up."""

    id: str
    kind: StageKind
    name: str
    runtime: str | None = None  # agent stages only
    runtime_config: Runtime | None = None
    model: str | None = None
    effort: str | None = None
    skills: tuple[str, ...] = ()
    instructions: str = ""
    phases: tuple[Phase, ...] = ()
    timeout_minutes: int = 60
    optional: bool = False
    action: PlatformAction | None = None
    wait_for: WaitFor | None = None
    next: dict[str, str] = Field(default_factory=dict)


class ResolvedPipeline(Strict):
    """What a ticket pins: editing `.ballet.yml` later never changes it."""

    name: str
    version: int
    hash: str  # stable content hash of everything below
    ticket_type: str  # the label that chose it, or "default"
    branch: str | None
    base: str | None  # None: the repository's default branch
    iteration_limit: int
    budget: Budget
    signoffs: tuple[str, ...]
    roles: dict[str, ResolvedRole]
    approvers: tuple[str, ...] | None
    policy: Policy
    stages: tuple[ResolvedStage, ...]
    # Texts of repository skills (`.ballet/skills/<name>.md` on the default
    # branch) pinned with the pipeline; built-in skills ship with Ballet.
    custom_skills: dict[str, str] = Field(default_factory=dict)

    def stage(self, stage_id: str) -> ResolvedStage:
        for stage in self.stages:
            if stage.id == stage_id:
                return stage
        raise KeyError(stage_id)
