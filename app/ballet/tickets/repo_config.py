"""A repository's `.ballet.yml` and skills, read through the forge.

At ticket start the file is read from the default branch only (a pull request
cannot rewrite the pipeline that judges it). A pull request that edits the
file or a skill gets a check run validating the new version, with an
annotation at every failing line. Reads are conditional GETs, so re-reading
an unchanged file costs no rate limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import yaml

from ballet.core.companion_rules import companion_errors
from ballet.core.config import BUILTIN_SKILL_NAMES, BalletConfig
from ballet.core.pool_rules import MayUse
from ballet.core.pools import PoolAccess
from ballet.core.validate import ConfigError, config_warnings, parse_config
from ballet.github.forge import Annotation, CheckRunSpec, Forge
from ballet.pricing import has_price
from ballet.tickets.memo import Memo

CONFIG_PATH = ".ballet.yml"
SKILLS_DIR = ".ballet/skills"
DEFAULT_TRIGGER_LABEL = "ballet"
CHECK_NAME = "ballet/config"


@dataclass(frozen=True)
class RepoConfig:
    """What the default branch says: a config (None: no file), or the file's errors."""

    text: str | None
    config: BalletConfig | None
    errors: tuple[ConfigError, ...]
    custom_skills: dict[str, str]

    @property
    def trigger_label(self) -> str:
        if self.config is not None:
            return self.config.trigger_label
        return trigger_label_of(self.text)


def trigger_label_of(text: str | None) -> str:
    """The trigger label of a file, read leniently: even an invalid file names it."""
    if text is None:
        return DEFAULT_TRIGGER_LABEL
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return DEFAULT_TRIGGER_LABEL
    label = data.get("trigger_label") if isinstance(data, dict) else None
    return label if isinstance(label, str) and label else DEFAULT_TRIGGER_LABEL


async def skill_names(forge: Forge, repo: str, ref: str) -> frozenset[str]:
    names = await forge.list_directory(repo, SKILLS_DIR, ref)
    return frozenset(n.removesuffix(".md") for n in names if n.endswith(".md"))


async def read_file(forge: Forge, repo: str, ref: str) -> str | None:
    return await forge.file_text(repo, CONFIG_PATH, ref)


def pools_for(pools: PoolAccess | None, repo: str) -> MayUse | None:
    """Whether `repo` may use a pool, by the deployment's BALLET_POOLS (None: any)."""
    if pools is None or not pools.rules:
        return None
    return lambda pool: pools.allows(repo, pool)


async def read_config(
    forge: Forge, repo: str, ref: str, text: str | None, pools: PoolAccess | None = None
) -> RepoConfig:
    """Validate `text` (the file at `ref`) and fetch the repository skills it uses. A
    companion the installation does not reach is an error at its item."""
    if text is None:
        return RepoConfig(None, None, (), {})
    # A file valid with the built-in skills alone uses no repository skill (a built-in
    # name always wins): listing the skills directory would be a request for nothing.
    custom: frozenset[str] = frozenset()
    may_use = pools_for(pools, repo)
    parsed = parse_config(text, file=CONFIG_PATH, skills=BUILTIN_SKILL_NAMES, may_use_pool=may_use)
    if not isinstance(parsed, BalletConfig):
        custom = await skill_names(forge, repo, ref)
        skills = BUILTIN_SKILL_NAMES | custom
        parsed = parse_config(text, file=CONFIG_PATH, skills=skills, may_use_pool=may_use)
    if not isinstance(parsed, BalletConfig):
        return RepoConfig(text, None, tuple(parsed), {})
    unreached = await _companion_errors(forge, text, parsed, repo)
    if unreached:
        return RepoConfig(text, None, tuple(unreached), {})
    used = {s for p in parsed.pipelines.values() for stage in p.stages for s in stage.skills}
    used |= {s for role in parsed.roles.values() for s in role.skills}
    texts: dict[str, str] = {}
    for name in sorted((used & custom) - BUILTIN_SKILL_NAMES):
        skill = await forge.file_text(repo, f"{SKILLS_DIR}/{name}.md", ref)
        if skill is not None:
            texts[name] = skill
    return RepoConfig(text, parsed, (), texts)


def errors_comment(errors: tuple[ConfigError, ...], branch: str, label: str) -> str:
    lines = "\n".join(str(e) for e in errors)
    noun = "error" if len(errors) == 1 else "errors"
    return (
        f"⚠️ Ballet did not start this ticket: `{CONFIG_PATH}` on `{branch}` has "
        f"{len(errors)} {noun}.\n\n```\n{lines}\n```\n\n"
        f"Fix the file on `{branch}` (`ballet validate {CONFIG_PATH}` checks it locally), "
        f"then remove and add the `{label}` label again."
    )


async def config_check(
    forge: Forge, repo: str, pr: int, head_sha: str, pools: PoolAccess | None = None
) -> CheckRunSpec | None:
    """The check run for a pull request that touches the config or skills; None if it does not."""
    files = await forge.list_pr_files(repo, pr)
    if not any(f == CONFIG_PATH or f.startswith(SKILLS_DIR + "/") for f in files):
        return None
    text = await read_file(forge, repo, head_sha)
    if text is None:
        return _check(head_sha, "success", "No .ballet.yml", "The built-in pipeline applies.")
    custom = await skill_names(forge, repo, head_sha)
    skills = BUILTIN_SKILL_NAMES | custom
    parsed = parse_config(
        text, file=CONFIG_PATH, skills=skills, may_use_pool=pools_for(pools, repo)
    )
    if isinstance(parsed, BalletConfig):
        parsed = await _companion_errors(forge, text, parsed, repo) or parsed
    if isinstance(parsed, BalletConfig):
        warnings = config_warnings(text, parsed, has_price=has_price, file=CONFIG_PATH)
        if not warnings:
            return _check(head_sha, "success", ".ballet.yml is valid", "Tickets can run on it.")
        title = f".ballet.yml is valid, with {_count(warnings, 'warning')}"
        summary = "Tickets can run on it.\n\n" + "\n".join(f"- `{w}`" for w in warnings)
        notes = _annotations(warnings, "warning", "a warning on .ballet.yml")
        return _check(head_sha, "success", title, summary, notes)
    summary = "\n".join(f"- `{e}`" for e in parsed)
    annotations = _annotations(parsed, "failure", "invalid .ballet.yml")
    title = f".ballet.yml has {_count(parsed, 'error')}"
    return _check(head_sha, "failure", title, summary, annotations)


async def _companion_errors(
    forge: Forge, text: str, config: BalletConfig, repo: str
) -> list[ConfigError]:
    if not config.companions:
        return []
    reached = await forge.reached(config.companions)
    return companion_errors(text, config, repo, reached, file=CONFIG_PATH)


def _count(found: list[ConfigError], noun: str) -> str:
    return f"{len(found)} {noun}{'' if len(found) == 1 else 's'}"


def _annotations(
    found: list[ConfigError], level: Literal["warning", "failure"], title: str
) -> tuple[Annotation, ...]:
    return tuple(
        Annotation(
            path=e.file,
            start_line=e.line,
            end_line=e.line,
            start_column=e.column,
            message=e.message,
            level=level,
            title=title,
        )
        for e in found
    )


def _check(
    sha: str,
    conclusion: str,
    title: str,
    summary: str,
    annotations: tuple[Annotation, ...] = (),
) -> CheckRunSpec:
    return CheckRunSpec(
        name=CHECK_NAME,
        head_sha=sha,
        status="completed",
        conclusion="success" if conclusion == "success" else "failure",
        title=title,
        summary=summary,
        annotations=annotations,
    )


async def check_config_in_pr(
    forge: Forge, memo: Memo, repo: str, pr: int, head_sha: str, pools: PoolAccess | None = None
) -> None:
    """A pull request that edits `.ballet.yml` gets a check run saying whether the
    new file is valid, the pools it names open to the repository and its companions
    reached by the installation (one per head: created once, then updated)."""
    spec = await config_check(forge, repo, pr, head_sha, pools)
    if spec is None:
        return
    known = await memo.check_run_id(repo, spec.name, spec.head_sha)
    if known is not None:
        await forge.update_check_run(repo, known, spec)
        return
    run_id = await forge.create_check_run(repo, spec)
    await memo.remember_check_run(repo, spec.name, spec.head_sha, run_id)
