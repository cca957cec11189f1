"""A checked `BalletConfig` plus an issue's labels to the `ResolvedPipeline` a ticket pins.

Resolution fills in every default, so the engine never consults the config
again: stage names, runtimes (looked up by name), roles, the implicit
`done` target of each stage, and the texts of the repository's own skills.
The result carries a sha256 of its canonical JSON, so two tickets (or two
moments) can tell whether they run exactly the same pipeline.

Errors are raised as `ResolveError` (a `ValueError`) with a message fit for
the issue comment: which pipeline or stage, and what to change.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping

from ballet.core.config import (
    BUILTIN_SKILL_NAMES,
    BalletConfig,
    Pipeline,
    ResolvedPipeline,
    ResolvedRole,
    ResolvedStage,
    Role,
    Runtime,
    Stage,
    merge_strategy,
)
from ballet.core.config_rules import stage_targets
from ballet.core.session_limits import lowered

# Repository skills are pinned into the ticket's record (kept in a GitHub
# comment), so their total size per pipeline is bounded.
MAX_CUSTOM_SKILL_BYTES = 16 * 1024
DEPLOYMENT_RUNTIME = "default"  # the name given to the runtime the deployment passes in


class ResolveError(ValueError):
    """The config cannot produce a pipeline for this ticket; the message says why."""


class NoPipelineError(ResolveError):
    """No `types` entry matches the labels and the file has no `default` pipeline."""


class SkillsTooLargeError(ResolveError):
    """The repository skills a pipeline uses exceed `MAX_CUSTOM_SKILL_BYTES`."""


# The built-in pipeline (docs/configuration.md): a repository without
# `.ballet.yml`, or whose file has no `pipelines:`, runs these stages.
DEFAULT_STAGES = (
    Stage(id="implement", kind="agent", skills=("implementer",), next={"done": "review"}),
    Stage(
        id="review",
        kind="agent",
        skills=("reviewer",),
        next={"approve": "verify", "changes_requested": "implement"},
    ),
    Stage(
        id="verify",
        kind="agent",
        skills=("verifier",),
        next={"pass": "integrate", "fail": "implement"},
    ),
    Stage(
        id="integrate",
        kind="platform",
        action="merge",
        next={"merged": "$done", "returned": "implement"},
    ),
)


def default_config(default_runtime: Runtime) -> BalletConfig:
    """The built-in template for a repository without `.ballet.yml` (docs/configuration.md)."""
    return BalletConfig(
        runtimes={DEPLOYMENT_RUNTIME: default_runtime},
        default_runtime=DEPLOYMENT_RUNTIME,
        pipelines={"default": Pipeline(stages=DEFAULT_STAGES)},
    )


def with_pipelines(config: BalletConfig) -> BalletConfig:
    """A file that defines no `pipelines:` runs the built-in one, as `ballet validate`
    and docs/configuration.md promise; its runtimes, policy and the rest still hold."""
    if config.pipelines:
        return config
    return config.model_copy(update={"pipelines": {"default": Pipeline(stages=DEFAULT_STAGES)}})


def choose_pipeline(config: BalletConfig, labels: Collection[str]) -> tuple[str, str]:
    """(pipeline name, ticket type): the first `types` entry whose label is on the issue."""
    on_issue = {label.casefold() for label in labels}
    for ticket_type in config.types:
        if ticket_type.label.casefold() in on_issue:
            return ticket_type.pipeline, ticket_type.label
    if "default" in config.pipelines:
        return "default", "default"
    wanted = ", ".join(f"`{t.label}`" for t in config.types) or "(no `types:` defined)"
    raise NoPipelineError(
        f"no pipeline fits this issue: none of its labels matches {wanted} and .ballet.yml "
        "has no `default` pipeline; add one of those labels or a `pipelines: default:` entry"
    )


def resolve_pipeline(
    config: BalletConfig,
    labels: Collection[str],
    *,
    custom_skills: Mapping[str, str] = {},
    default_runtime: Runtime | None = None,
) -> ResolvedPipeline:
    """The pipeline a ticket with `labels` runs, fully resolved and hashed.

    `custom_skills` are the texts of `.ballet/skills/<name>.md`; `default_runtime`
    is the deployment's runtime for agents when the file names no `default_runtime`.
    Raises `ResolveError` (or its subclasses) when no pipeline can be built.
    """
    config = with_pipelines(config)
    name, ticket_type = choose_pipeline(config, labels)
    pipeline = config.pipelines[name]
    roles = {
        role_name: _resolve_role(config, role_name, role, default_runtime)
        for role_name, role in config.roles.items()
    }
    resolved = ResolvedPipeline(
        name=name,
        version=pipeline.version,
        hash="",
        title=pipeline.name,
        ticket_type=ticket_type,
        branch=pipeline.branch,
        base=pipeline.base,
        iteration_limit=pipeline.iteration_limit,
        budget=pipeline.budget,
        signoffs=pipeline.signoffs,
        roles=roles,
        approvers=config.approvers,
        policy=config.policy,
        stages=tuple(
            _resolve_stage(config, pipeline, i, default_runtime)
            for i in range(len(pipeline.stages))
        ),
        custom_skills=pinned_skills(config, name, custom_skills),
        merge=merge_strategy(config, pipeline),
        reviews=pipeline.reviews,
        phase_settings=config.phases,
        companions=config.companions,
    )
    return resolved.model_copy(update={"hash": content_hash(resolved)})


def content_hash(pipeline: ResolvedPipeline) -> str:
    """sha256 of the canonical JSON of everything but the hash itself."""
    data = pipeline.model_dump(mode="json", exclude={"hash"})
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def pinned_skills(
    config: BalletConfig, pipeline_name: str, custom_skills: Mapping[str, str]
) -> dict[str, str]:
    """Texts of the repository skills the pipeline's stages and the roles use."""
    pipeline = config.pipelines[pipeline_name]
    used = {s for stage in pipeline.stages for s in stage.skills}
    used |= {s for role in config.roles.values() for s in role.skills}
    pinned: dict[str, str] = {}
    for skill in sorted(used - BUILTIN_SKILL_NAMES):
        if skill not in custom_skills:
            raise ResolveError(f"skill `{skill}` is not defined; add .ballet/skills/{skill}.md")
        pinned[skill] = custom_skills[skill]
    size = sum(len(text.encode("utf-8")) for text in pinned.values())
    if size > MAX_CUSTOM_SKILL_BYTES:
        raise SkillsTooLargeError(
            f"the repository skills pipeline `{pipeline_name}` uses ({', '.join(pinned)}) total "
            f"{size} bytes, over the {MAX_CUSTOM_SKILL_BYTES // 1024} KB limit; shorten them"
        )
    return pinned


def _runtime(
    config: BalletConfig, name: str | None, fallback: Runtime | None, user: str
) -> tuple[str, Runtime]:
    name = name or config.default_runtime
    if name is not None:
        if name not in config.runtimes:
            raise ResolveError(f"{user} names unknown runtime `{name}`; run `ballet validate`")
        return name, config.runtimes[name]
    if fallback is None:
        raise ResolveError(
            f"{user} has no runtime: set `default_runtime:` in .ballet.yml "
            "or give the deployment a default runtime"
        )
    return DEPLOYMENT_RUNTIME, fallback


def _resolve_role(
    config: BalletConfig, name: str, role: Role, fallback: Runtime | None
) -> ResolvedRole:
    runtime, runtime_config = _runtime(config, role.runtime, fallback, f"role `{name}`")
    return ResolvedRole(
        name=name,
        runtime=runtime,
        runtime_config=runtime_config,
        model=role.model,
        effort=role.effort,
        skills=role.skills,
        instructions=role.instructions,
    )


def _resolve_stage(
    config: BalletConfig, pipeline: Pipeline, index: int, fallback: Runtime | None
) -> ResolvedStage:
    stage = pipeline.stages[index]
    runtime: str | None = None
    runtime_config: Runtime | None = None
    if stage.kind == "agent":
        runtime, runtime_config = _runtime(config, stage.runtime, fallback, f"stage `{stage.id}`")
        if stage.limits is not None:
            # The runtime as this stage runs it: its limits lowered by the stage's own.
            limits = lowered(runtime_config.limits, stage.limits)
            runtime_config = runtime_config.model_copy(update={"limits": limits})
    # A stage's own pool wins over its runtime's (roles take their runtime's).
    pool = stage.pool or (runtime_config.pool if runtime_config is not None else None)
    return ResolvedStage(
        id=stage.id,
        kind=stage.kind,
        name=stage.name or stage.id.replace("-", " ").replace("_", " ").capitalize(),
        runtime=runtime,
        runtime_config=runtime_config,
        model=stage.model,
        effort=stage.effort,
        pool=pool,
        skills=stage.skills,
        instructions=stage.instructions,
        phases=stage.phases if config.phases.enabled else (),
        timeout_minutes=stage.timeout_minutes,
        optional=stage.optional,
        action=stage.action,
        wait_for=stage.wait_for,
        # `done` made explicit, so the engine needs one rule only: missing means `$question`.
        next=stage_targets(pipeline.stages, index),
    )
