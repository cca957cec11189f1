"""The rules a well-typed `.ballet.yml` must still follow (docs/configuration.md).

Pydantic checks each value's shape; these rules check how values refer to
each other: names that must exist, stage kinds' required keys, and the stage
graph (every stage reachable, `$done` reachable). Each problem carries the
path of the offending node so the caller can point at its line.
"""

from __future__ import annotations

import string
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from ballet.core.config import (
    BRANCH_PLACEHOLDERS,
    COMMIT_TITLE_PLACEHOLDERS,
    PHASE_ORDER,
    TERMINAL_TARGETS,
    BalletConfig,
    MergeStrategy,
    Phase,
    Pipeline,
    Stage,
    merge_strategy,
)
from ballet.core.runtime_env import declared_refusal, never_passed

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    path: Path
    message: str
    at_key: bool = False  # point at the key (`name:`) rather than its value


def _names(names: Collection[str]) -> str:
    return ", ".join(f"`{n}`" for n in sorted(names)) or "(none defined)"


def default_next(stages: tuple[Stage, ...], index: int) -> str:
    """Where `done` goes when a stage's `next` does not say: the following stage, or `$done`."""
    return stages[index + 1].id if index + 1 < len(stages) else "$done"


def as_target(target: str, ids: Collection[str]) -> str:
    """A target as the engine reads it: `done`, `failed` or `question` written without
    `$` (as the seeds' templates write them) is that end, unless a stage has the id."""
    bare = f"${target}"
    return bare if bare in TERMINAL_TARGETS and target not in ids else target


def stage_targets(stages: tuple[Stage, ...], index: int) -> dict[str, str]:
    """A stage's `next` with the implicit `done` filled in (other outcomes: `$question`)
    and its ends spelled as the engine reads them (`as_target`)."""
    ids = {stage.id for stage in stages}
    targets = {outcome: as_target(t, ids) for outcome, t in stages[index].next.items()}
    targets.setdefault("done", default_next(stages, index))
    return targets


def check_config(config: BalletConfig, skills: Collection[str]) -> list[Problem]:
    """Every rule violation in `config`; empty when it may run tickets."""
    return [
        *_check_top_level(config, skills),
        *(
            p
            for name, pipeline in config.pipelines.items()
            for p in _check_pipeline(config, name, pipeline, skills)
        ),
    ]


def _check_top_level(config: BalletConfig, skills: Collection[str]) -> Iterator[Problem]:
    runtimes = config.runtimes
    if config.default_runtime is not None and config.default_runtime not in runtimes:
        yield Problem(
            ("default_runtime",),
            f"unknown runtime `{config.default_runtime}`; write one of {_names(runtimes)} "
            "or define it under `runtimes:`",
        )
    for name, runtime in runtimes.items():
        if runtime.adapter == "command" and not runtime.command:
            yield Problem(
                ("runtimes", name, "adapter"),
                "a `command` runtime needs `command: [program, args...]`; add it",
            )
        if runtime.adapter != "command" and runtime.command is not None:
            yield Problem(
                ("runtimes", name, "command"),
                f"the {runtime.adapter} adapter builds its own command line; remove `command` "
                "or write `adapter: command`",
                at_key=True,
            )
        for i, variable in enumerate(runtime.env):
            # Ballet would replace it, in a format the two cannot merge, or never passes
            # it at all (runtime_env.py).
            refusal = declared_refusal(
                runtime.adapter, variable, base_url=runtime.sets_endpoint
            ) or never_passed(variable)
            if refusal:
                yield Problem(("runtimes", name, "env", i), refusal)
        for i, entry in enumerate(runtime.keys):
            for variable in [entry] if isinstance(entry, str) else entry:
                if refusal := never_passed(variable):
                    yield Problem(("runtimes", name, "keys", i), refusal)
    for name, role in config.roles.items():
        if role.runtime is not None and role.runtime not in runtimes:
            yield Problem(
                ("roles", name, "runtime"),
                f"unknown runtime `{role.runtime}`; write one of {_names(runtimes)} "
                "or define it under `runtimes:`",
            )
        yield from _check_skills(("roles", name, "skills"), role.skills, skills)
    yield from _check_merge(("merge",), config.merge, config.merge)
    labels: set[str] = set()
    for i, ticket_type in enumerate(config.types):
        label = ticket_type.label.casefold()  # GitHub labels ignore case
        if label in labels:
            yield Problem(
                ("types", i, "label"),
                f"label `{ticket_type.label}` is already matched by an earlier entry, so this "
                "one never applies; remove it or use another label",
            )
        labels.add(label)
        if ticket_type.pipeline not in config.pipelines:
            yield Problem(
                ("types", i, "pipeline"),
                f"unknown pipeline `{ticket_type.pipeline}`; write one of "
                f"{_names(config.pipelines)}",
            )


def _check_skills(path: Path, used: tuple[str, ...], skills: Collection[str]) -> Iterator[Problem]:
    for i, skill in enumerate(used):
        if skill not in skills:
            yield Problem(
                (*path, i),
                f"unknown skill `{skill}`; write one of {_names(skills)} "
                f"or add .ballet/skills/{skill}.md",
            )


def _check_pipeline(
    config: BalletConfig, name: str, pipeline: Pipeline, skills: Collection[str]
) -> Iterator[Problem]:
    at: Path = ("pipelines", name)
    if pipeline.branch is not None:
        yield from _check_branch(at, pipeline.branch)
    if "merge" in pipeline.model_fields_set:
        yield from _check_merge((*at, "merge"), pipeline.merge, merge_strategy(config, pipeline))
    for i, role in enumerate(pipeline.signoffs):
        if role not in config.roles:
            yield Problem(
                (*at, "signoffs", i),
                f"unknown role `{role}`; write one of {_names(config.roles)} "
                "or define it under `roles:`",
            )
    if not pipeline.stages:
        yield Problem((*at, "stages"), "a pipeline needs at least one stage; add a stage")
        return
    ids = {stage.id for stage in pipeline.stages}
    seen: set[str] = set()
    for i, stage in enumerate(pipeline.stages):
        if stage.id in seen:
            yield Problem(
                (*at, "stages", i, "id"),
                f"duplicate stage id `{stage.id}`; give this stage another id",
            )
        seen.add(stage.id)
        yield from _check_stage(config, (*at, "stages", i), stage, ids, skills)
    known = ids.union(TERMINAL_TARGETS)
    targets_known = all(
        as_target(t, ids) in known for stage in pipeline.stages for t in stage.next.values()
    )
    # With duplicate ids or unknown targets the graph is not what the author meant:
    # its reachability errors would only repeat the errors already reported.
    if len(ids) == len(pipeline.stages) and targets_known:
        yield from _check_graph(at, pipeline)


def _check_branch(at: Path, branch: str) -> Iterator[Problem]:
    allowed = ", ".join(f"{{{p}}}" for p in BRANCH_PLACEHOLDERS)
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(branch) if f is not None]
    except ValueError:
        yield Problem(
            (*at, "branch"),
            f"unbalanced `{{` or `}}` in the branch template; use only {allowed}",
        )
        return
    for placeholder in fields:
        if placeholder not in BRANCH_PLACEHOLDERS:
            yield Problem(
                (*at, "branch"),
                f"unknown branch placeholder `{{{placeholder}}}`; use only {allowed}",
            )


def _check_merge(at: Path, own: MergeStrategy, effective: MergeStrategy) -> Iterator[Problem]:
    """`own` is the mapping at `at`; `effective` is what a pipeline gets of it and the default."""
    title = own.commit_title
    if title is not None:
        allowed = ", ".join(f"{{{p}}}" for p in COMMIT_TITLE_PLACEHOLDERS)
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(title) if f is not None]
        except ValueError:
            fields = None
        if fields is None or any(f not in COMMIT_TITLE_PLACEHOLDERS for f in fields):
            yield Problem(
                (*at, "commit_title"),
                f"a commit title may use only the placeholders {allowed} (write `{{{{` "
                "for a literal brace); fix the template",
            )
        elif not title.format(title="t", pr=1, ticket=1).strip():
            yield Problem((*at, "commit_title"), "an empty commit title; write one or remove it")
    if effective.method == "rebase" and effective.commit_title is not None:
        key = "commit_title" if "commit_title" in own.model_fields_set else "method"
        yield Problem(
            (*at, key),
            "a rebase replays the branch's commits and makes no commit of its own, so "
            "`commit_title` has no effect; remove it or use `method: squash` or `merge`",
        )


def _check_stage(
    config: BalletConfig, at: Path, stage: Stage, ids: set[str], skills: Collection[str]
) -> Iterator[Problem]:
    if stage.kind != "agent":
        for key in ("runtime", "model", "effort", "phases", "pool", "limits"):
            if getattr(stage, key):
                yield Problem(
                    (*at, key),
                    f"a {stage.kind} stage runs no agent, so it takes no `{key}`; remove it",
                    at_key=True,
                )
    if stage.kind == "platform":
        if (stage.action is None) == (stage.wait_for is None):
            yield Problem(
                at,
                "a platform stage needs exactly one of `action: merge` or "
                "`wait_for: checks|review|merge`; keep one",
            )
    else:
        for key in ("action", "wait_for"):
            if getattr(stage, key) is not None:
                yield Problem(
                    (*at, key),
                    f"only platform stages take `{key}`; remove it or write `kind: platform`",
                    at_key=True,
                )
    if stage.runtime is not None and stage.runtime not in config.runtimes:
        yield Problem(
            (*at, "runtime"),
            f"unknown runtime `{stage.runtime}`; write one of {_names(config.runtimes)} "
            "or define it under `runtimes:`",
        )
    yield from _check_skills((*at, "skills"), stage.skills, skills)
    yield from _check_phases((*at, "phases"), stage.phases)
    if stage.optional and not stage.next:
        yield Problem(
            at,
            "an optional stage is skipped to the target of its first `next` entry; "
            "add a `next:` mapping",
        )
    for outcome, target in stage.next.items():
        if as_target(target, ids) not in ids and as_target(target, ids) not in TERMINAL_TARGETS:
            choices = _names([*sorted(ids), *TERMINAL_TARGETS])
            yield Problem(
                (*at, "next", outcome),
                f"unknown target `{target}`; write one of {choices}",
            )


def _check_phases(at: Path, phases: tuple[Phase, ...]) -> Iterator[Problem]:
    """Each phase once, in the pipeline's order: a phase works from the one before's handoff."""
    order = " → ".join(PHASE_ORDER)
    latest = -1
    for i, phase in enumerate(phases):
        rank = PHASE_ORDER.index(phase)
        if phase in phases[:i]:
            yield Problem(
                (*at, i), f"phase `{phase}` is listed twice; each phase runs once: remove this one"
            )
        elif rank < latest:
            yield Problem(
                (*at, i),
                f"phase `{phase}` comes after `{PHASE_ORDER[latest]}`, but phases run in the "
                f"order {order}; list them in that order",
            )
        latest = max(latest, rank)


def _check_graph(at: Path, pipeline: Pipeline) -> Iterator[Problem]:
    stages = pipeline.stages
    index = {stage.id: i for i, stage in enumerate(stages)}
    reached = {0}
    todo = [0]
    done_reachable = False
    while todo:
        current = todo.pop()
        for target in stage_targets(stages, current).values():
            done_reachable = done_reachable or target == "$done"
            if target in index and index[target] not in reached:
                reached.add(index[target])
                todo.append(index[target])
    for i, stage in enumerate(stages):
        if i not in reached:
            yield Problem(
                (*at, "stages", i),
                f"no path reaches stage `{stage.id}`; name it in an earlier stage's `next` "
                "or remove it",
            )
    if not done_reachable:
        yield Problem(
            (*at, "stages"),
            "this pipeline can never reach `$done`; send some outcome to `$done` "
            "(e.g. `next: {merged: $done}`)",
        )
