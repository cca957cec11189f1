"""The `.ballet.yml` models (file version 1) and the resolved, pinnable pipeline.

These models are the shape of the file; `ballet.core.validate` turns YAML text
into them with positioned errors, and `ballet.core.resolve` turns them plus an
issue's labels into a `ResolvedPipeline` a ticket pins for its whole life.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    model_validator,
)

from ballet.core.egress import parse_rule
from ballet.core.phase_settings import PhaseSettings
from ballet.core.pools import POOL_PATTERN
from ballet.core.provider_keys import Provider, gateway_keys, standard_provider
from ballet.core.session_limits import Limits

StageKind = Literal["agent", "human", "platform"]
Adapter = Literal["command", "claude-code", "codex", "aider", "gemini", "opencode"]
ReviewPolicy = Literal["agent", "agent+human"]
MergePolicy = Literal["approved", "auto", "manual"]
PlatformAction = Literal["merge"]
WaitFor = Literal["checks", "review", "merge"]
# What a pull-request review asking for changes does outside a `wait_for: review` stage.
ReviewsPolicy = Literal["rework", "ignore"]
Phase = Literal["research", "plan", "implement", "verify"]
# The order phases run in: each works from the handoff of the one before.
PHASE_ORDER: tuple[Phase, ...] = get_args(Phase)
MergeMethod = Literal["squash", "merge", "rebase"]
UpdateMethod = Literal["merge", "rebase"]

# Targets a stage's `next` may name besides another stage's id.
TERMINAL_TARGETS = ("$done", "$failed", "$question")
DEFAULT_BRANCH_TEMPLATE = "ballet/{ticket}-{slug}"
BRANCH_PLACEHOLDERS = ("ticket", "slug", "type")
COMMIT_TITLE_PLACEHOLDERS = ("title", "pr", "ticket")
# Skills shipped with Ballet as app/ballet/skills/<name>.md; a repository may
# add its own as .ballet/skills/<name>.md.
BUILTIN_SKILL_NAMES = frozenset({"implementer", "reviewer", "verifier", "integrator"})
MAX_ITERATION_LIMIT = 20


# GitHub limits label names to 50 characters.
Label = Annotated[str, Field(min_length=1, max_length=50)]
STAGE_ID_PATTERN = r"^[a-z][a-z0-9_-]{0,39}$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
EnvName = Annotated[str, Field(pattern=ENV_NAME_PATTERN)]
BASE_URL_PATTERN = r"^https?://[^\s/?#]+(/[^\s?#]*)?$"
# GitHub's own limits: an owner of 1-39 letters, digits and hyphens; a name of
# letters, digits, `.`, `_` and `-`.
REPO_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$"
RepoName = Annotated[str, Field(pattern=REPO_PATTERN)]


def _each_once(repos: tuple[str, ...]) -> tuple[str, ...]:
    # GitHub's names are case-insensitive: `Acme/Lib` is `acme/lib`.
    seen: set[str] = set()
    for repo in repos:
        if repo.casefold() in seen:
            raise ValueError(f"`{repo}` is named twice; name each repository once")
        seen.add(repo.casefold())
    return repos


def _public_destination(text: str) -> str:
    parse_rule(text)  # raises with what to write instead
    return text


EgressHost = Annotated[str, AfterValidator(_public_destination)]


def _standard_key(name: str) -> str:
    standard_provider(name)  # raises saying how to name the provider
    return name


StandardKey = Annotated[str, Field(pattern=ENV_NAME_PATTERN), AfterValidator(_standard_key)]
# One error per entry, of the form it was written in (a name or `{NAME: provider}`).
KeyEntry = Annotated[
    Annotated[StandardKey, Tag("name")] | Annotated[dict[EnvName, Provider], Tag("named")],
    Discriminator(lambda value: "name" if isinstance(value, str) else "named"),
]


class Strict(BaseModel):
    # Unknown keys are refused: a typo must never silently change a pipeline.
    # Attribute docstrings become descriptions in `ballet schema`.
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Runtime(Strict):
    """How an agent session is run: an adapter for a CLI, or any command."""

    adapter: Adapter
    """The agent CLI: claude-code, codex, aider, gemini, opencode, or command (any argv)."""
    model: str | None = None
    """The model passed to the CLI; its own default when absent."""
    effort: str | None = None
    """Reasoning effort passed to the CLI where it has one."""
    strongest_model: str | None = None
    """The model the research and plan phases run on (with high effort); default: the
    adapter's strongest (claude-code `opus`, gemini `pro`; codex, aider and opencode:
    `model`). A stage's own `model` wins."""
    env: tuple[EnvName, ...] = ()
    """Names of the deployment's environment variables the session may see, e.g. a
    package index's token. A CLI adapter's standard provider key names here (e.g.
    ANTHROPIC_API_KEY) are provider keys, as if listed under `keys`."""
    keys: tuple[KeyEntry, ...] = ()
    """The deployment's variables holding model provider keys: the key stays with
    Ballet's model gateway, and the session gets under the same name a token valid only
    for itself (docs/security.md, Model gateway). A standard name (ANTHROPIC_API_KEY,
    ANTHROPIC_AUTH_TOKEN, OPENAI_API_KEY, CODEX_API_KEY, GEMINI_API_KEY, GOOGLE_API_KEY,
    GOOGLE_GENERATIVE_AI_API_KEY) or `{NAME: provider}` (anthropic, openai, gemini)."""
    command: tuple[str, ...] | None = None
    """For `adapter: command`: the argv to run in the session's clone. For the other
    adapters: the CLI's executable and leading arguments, instead of its usual name."""
    base_url: str | None = Field(default=None, pattern=BASE_URL_PATTERN)
    """The model API endpoint the CLI talks to instead of its provider's own, e.g. a
    gateway or an OpenAI-, Anthropic- or Gemini-compatible server (docs/runtimes.md)."""
    egress: tuple[EgressHost, ...] = ()
    """Public hosts (`host` or `host:port`, default port 443, `*.domain` for subdomains) the
    session may reach through Ballet's egress proxy besides its provider's API, e.g. a
    package index. Loopback, private and link-local destinations are refused."""
    pool: str | None = Field(default=None, pattern=POOL_PATTERN)
    """The agent pool whose workers run this runtime's sessions (`ballet worker --pool
    NAME`), e.g. one with GPUs or a private network; default: `default`."""
    limits: Limits | None = None
    """Lower the deployment's limits on memory, disk, processes and CPU for this
    runtime's sessions (docs/security.md, Resource limits); never above them."""

    @property
    def provider_keys(self) -> dict[str, Provider]:
        """Each variable the model gateway holds for this runtime, with its provider."""
        named: dict[str, Provider] = {}
        for entry in self.keys:
            named.update({entry: standard_provider(entry)} if isinstance(entry, str) else entry)
        return gateway_keys(self.adapter, named, self.env)

    @property
    def sets_endpoint(self) -> bool:
        """Ballet points the CLI at an endpoint: the model gateway's, or `base_url`."""
        return self.base_url is not None or bool(self.provider_keys)

    @model_validator(mode="after")
    def _strongest_model_needs_an_llm_cli(self) -> Runtime:
        if self.strongest_model is not None and self.adapter == "command":
            raise ValueError(
                "`strongest_model` is for the agent CLIs; a `command` program chooses its "
                "own model in every phase (it reads BALLET_PHASE): remove it"
            )
        return self

    @model_validator(mode="after")
    def _base_url_needs_an_llm_cli(self) -> Runtime:
        if self.base_url is not None and self.adapter == "command":
            raise ValueError(
                "`base_url` is for the agent CLIs (claude-code, codex, aider, gemini, "
                "opencode); a `command` runtime reads its own configuration: remove it"
            )
        return self


class Role(Strict):
    """A sign-off role: an agent session judging the work from one angle."""

    runtime: str | None = None
    """A key of `runtimes`; default: `default_runtime`."""
    model: str | None = None
    """Overrides its runtime's model for the role's sign-off sessions."""
    effort: str | None = None
    """Overrides its runtime's effort for the role's sign-off sessions."""
    skills: tuple[str, ...] = ()
    """Built-in skills or `.ballet/skills/<name>.md` names given to the session."""
    instructions: str = ""
    """Extra instructions for the session's prompt."""


class Policy(Strict):
    """The ticket's default policy; `/ballet policy` changes it per ticket."""

    review: ReviewPolicy = "agent"
    """`agent+human` turns on optional human stages."""
    merge: MergePolicy = "approved"
    """`approved`: lands once a person approved the head; `auto`: no person; `manual`: by hand."""


class MergeStrategy(Strict):
    """How an `action: merge` stage merges the pull request. At the top level: the
    default of every pipeline; under a pipeline, its keys override the default's."""

    method: MergeMethod = "squash"
    """`squash`: one commit on the base; `merge`: a merge commit; `rebase`: the
    branch's commits replayed on the base. It must be one the repository allows."""
    delete_branch: bool = True
    """Delete the ticket's branch once the pull request is merged."""
    commit_title: str | None = None
    """Title of the squash or merge commit, with {title} (the issue's title), {pr}
    and {ticket} (numbers), e.g. "{title} (#{pr})"; default: GitHub's. Not for `rebase`."""
    update: UpdateMethod = "merge"
    """How an integrator stage brings the branch up to date with its base: `merge`
    merges the base in (a merge commit); `rebase` replays the branch's commits on
    the base, and Ballet pushes the rewritten branch leased on the head the session
    started from (a push by anyone meanwhile refuses it)."""


class TicketType(Strict):
    """An issue carrying `label` runs `pipeline`; the first matching entry wins."""

    label: Label
    pipeline: str
    """A key of `pipelines`."""


class Budget(Strict):
    """Limits per ticket and per session; reaching one raises a question."""

    sessions: int | None = Field(default=None, ge=1)
    """Agent sessions the ticket may start."""
    cost_usd: float | None = Field(default=None, gt=0)
    """What the ticket's sessions may spend on models, in US dollars, as Ballet's model
    gateway meters it; a writer's `/ballet budget +N` raises it for one ticket."""
    session_cost_usd: float | None = Field(default=None, gt=0)
    """What one session may spend on models, in US dollars; the gateway refuses its
    next model request once it is reached."""


class Stage(Strict):
    """One step of a pipeline: an agent session, a person's decision, or a forge wait."""

    id: str = Field(pattern=STAGE_ID_PATTERN)
    """Unique in the pipeline; `next` targets name it."""
    kind: StageKind
    name: str | None = None
    """Shown to people; default: the id, capitalised."""
    runtime: str | None = None
    """Agent stages: a key of `runtimes`; default: `default_runtime`."""
    model: str | None = None
    """Agent stages: overrides the runtime's and the phase's model."""
    effort: str | None = None
    """Agent stages: overrides the runtime's and the phase's effort."""
    pool: str | None = Field(default=None, pattern=POOL_PATTERN)
    """Agent stages: the agent pool whose workers run its sessions; overrides the runtime's."""
    limits: Limits | None = None
    """Agent stages: lower its runtime's `limits` further for this stage's sessions."""
    skills: tuple[str, ...] = ()
    """Built-in skills (implementer, reviewer, verifier, integrator) or `.ballet/skills` names."""
    instructions: str = ""
    """Extra instructions for the agent's prompt."""
    phases: tuple[Phase, ...] = ()
    """Agent stages: run each phase as a fresh session seeded with the previous handoff."""
    timeout_minutes: int = Field(default=60, ge=1, le=24 * 60)
    optional: bool = False
    """Runs only when the ticket's policy turns it on; otherwise skipped to its first `next`."""
    action: PlatformAction | None = None
    """Platform stages: `merge` brings the branch up to date and merges by the policy
    and the pipeline's `merge` strategy."""
    wait_for: WaitFor | None = None
    """Platform stages: wait for this forge event alone."""
    next: dict[str, str] = Field(default_factory=dict)
    """Outcome -> a stage id or `$done`, `$failed`, `$question` (or those without `$`).
    Missing: `done` goes to the following stage (after the last, `$done`), else `$question`."""


class Pipeline(Strict):
    """The stages a ticket runs, and its limits."""

    name: str | None = Field(default=None, min_length=1, max_length=100)
    """Shown to people beside its key, e.g. "Feature work"; default: the key alone."""
    version: int = Field(default=1, ge=1)
    """Bump it when you change the pipeline; tickets pin the version they started with."""
    branch: str | None = DEFAULT_BRANCH_TEMPLATE
    """Branch name template with {ticket}, {slug}, {type}; null: no branch (e.g. a spike)."""
    base: str | None = None
    """Base branch; default: the repository's default branch."""
    iteration_limit: int = Field(default=3, ge=1, le=MAX_ITERATION_LIMIT)
    """Returns to an earlier stage allowed before a question is raised instead."""
    budget: Budget = Budget()
    signoffs: tuple[str, ...] = ()
    """Roles (keys of `roles`) that must sign off before review and merge."""
    merge: MergeStrategy = MergeStrategy()
    """The keys given here override the top-level `merge`, one by one."""
    reviews: ReviewsPolicy = "rework"
    """`rework`: a pull-request review asking for changes, by someone with write
    permission, returns the ticket to rework with the review as its input, whatever
    the ticket is doing; `ignore`: only a `wait_for: review` stage reads reviews."""
    stages: tuple[Stage, ...]


class BalletConfig(Strict):
    """`.ballet.yml`: how Ballet runs tickets in this repository (read from the default branch)."""

    version: Literal[1] = 1
    """The file format's version."""
    trigger_label: Label = "ballet"
    """The label that starts a ticket."""
    approvers: tuple[str, ...] | None = None
    """Logins who may `/ballet approve` or `reject`; default: anyone with write permission."""
    runtimes: dict[str, Runtime] = Field(default_factory=dict)
    default_runtime: str | None = None
    """A key of `runtimes` for agent stages and roles that name none;
    default: the deployment's runtime."""
    roles: dict[str, Role] = Field(default_factory=dict)
    policy: Policy = Policy()
    phases: PhaseSettings = PhaseSettings()
    merge: MergeStrategy = MergeStrategy()
    """How `action: merge` stages merge, unless a pipeline says otherwise."""
    types: tuple[TicketType, ...] = ()
    """Issue label -> pipeline; issues matching none run pipeline `default`."""
    pipelines: dict[str, Pipeline] = Field(default_factory=dict)
    """Pipelines by name; without any, tickets run the built-in default."""
    companions: Annotated[tuple[RepoName, ...], AfterValidator(_each_once)] = ()
    """Other repositories of the same installation a ticket may change too, as `owner/name`, in
    the order their pull requests land (dependencies first; the ticket's own lands last), each
    by its own rules (through GitHub's merge queue where its base requires one). Every session
    gets a clone of each on the ticket's branch; each one it commits in gets a pull request.
    Each must be one the App's installation reaches, not this one: the `ballet/config` check
    and a ticket's start refuse any other at its line (`ballet validate` checks the shape
    only). Where people decide, each lands once a writer there approves its head."""


class ResolvedRole(Strict):
    name: str
    runtime: str
    runtime_config: Runtime
    model: str | None = None
    effort: str | None = None
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
    pool: str | None = None  # agent stages: its own or its runtime's; None is `default`
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
    title: str | None = None  # the pipeline's `name:`, shown to people
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
    # A default, so records pinned before merge strategies existed still load.
    merge: MergeStrategy = MergeStrategy()
    reviews: ReviewsPolicy = "rework"
    phase_settings: PhaseSettings = PhaseSettings()
    # Texts of repository skills (`.ballet/skills/<name>.md` on the default
    # branch) pinned with the pipeline; built-in skills ship with Ballet.
    custom_skills: dict[str, str] = Field(default_factory=dict)
    # The ticket's other repositories, in landing order (`companions:`).
    companions: tuple[str, ...] = ()

    def stage(self, stage_id: str) -> ResolvedStage:
        for stage in self.stages:
            if stage.id == stage_id:
                return stage
        raise KeyError(stage_id)


def merge_strategy(config: BalletConfig, pipeline: Pipeline) -> MergeStrategy:
    """The pipeline's merge strategy: the top-level default, with the keys it sets."""
    own = pipeline.merge
    return config.merge.model_copy(update={k: getattr(own, k) for k in own.model_fields_set})
