"""Whether a labelled issue becomes a ticket, and the pinned pipeline it runs.

A ticket starts when the label just added is the repository's trigger label
(from `.ballet.yml` on the default branch, default `ballet`), a person (not a
bot, unless BALLET_TRUSTED_BOTS lists it) added it with write permission, and
the file (with its skills) is valid and yields a pipeline for the issue's
labels. Anything else is a refusal whose text the issue gets as a comment,
saying what to do next; a label that is not the trigger label is simply not
for Ballet.
"""

from __future__ import annotations

from dataclasses import dataclass

from ballet.core.config import ResolvedPipeline, Runtime
from ballet.core.events import WRITE_PERMISSIONS, TicketRequested
from ballet.core.pools import PoolAccess
from ballet.core.price_rules import pipeline_price_problems
from ballet.core.resolve import ResolveError, default_config, resolve_pipeline
from ballet.github.forge import Forge
from ballet.github.intents import StartTicket
from ballet.pricing import has_price
from ballet.tickets import repo_config


@dataclass(frozen=True)
class Refusal:
    what: str  # names the notice comment, so a second attempt edits the first
    body: str


async def request_ticket(
    forge: Forge,
    intent: StartTicket,
    default_runtime: Runtime | None,
    pools: PoolAccess | None = None,
) -> TicketRequested | Refusal | None:
    """The engine's `TicketRequested`, a refusal to post, or None (not the trigger label).
    `pools`: the deployment's BALLET_POOLS; a pool the repository may not use is a
    config error at its `pool:`."""
    repo = intent.repo
    branch = intent.default_branch or await forge.default_branch(repo)
    text = await repo_config.read_file(forge, repo, branch)
    label = repo_config.trigger_label_of(text)
    if intent.label.casefold() != label.casefold():
        return None
    if intent.requested_by_is_bot:
        bot = intent.requested_by
        return Refusal(
            "start",
            f"@{bot} Ballet did not start this ticket: `{bot}` is a bot, and only a person "
            f"may start one by adding the `{label}` label. Ask a maintainer to add it; or, if "
            "this bot should start tickets, Ballet's operator lists it in BALLET_TRUSTED_BOTS.",
        )
    permission = await forge.permission(repo, intent.requested_by)
    if permission not in WRITE_PERMISSIONS:
        return Refusal(
            "start",
            f"@{intent.requested_by} Ballet did not start this ticket: adding the `{label}` "
            f"label needs write permission on {repo} (you have {permission}). "
            "Ask a maintainer to add it.",
        )
    config = await repo_config.read_config(forge, repo, branch, text, pools)
    if config.errors:
        return Refusal("config", repo_config.errors_comment(config.errors, branch, label))
    try:
        pipeline = resolve(config, intent.labels, default_runtime)
    except ResolveError as exc:
        return Refusal("config", f"⚠️ Ballet did not start this ticket: {exc}")
    return TicketRequested(
        now=intent.now,
        repo=repo,
        issue=intent.issue,
        author=intent.author,
        title=intent.title,
        body=intent.body,
        labels=intent.labels,
        requested_by=intent.requested_by,
        pipeline=pipeline,
        default_branch=branch,
        warnings=pipeline_price_problems(pipeline, has_price),
    )


def resolve(
    config: repo_config.RepoConfig, labels: tuple[str, ...], default_runtime: Runtime | None
) -> ResolvedPipeline:
    if config.config is not None:
        return resolve_pipeline(
            config.config,
            labels,
            custom_skills=config.custom_skills,
            default_runtime=default_runtime,
        )
    if default_runtime is None:
        raise ResolveError(
            "the repository has no .ballet.yml and this deployment names no default "
            "runtime; add a .ballet.yml with `runtimes:` and `default_runtime:`"
        )
    return resolve_pipeline(
        default_config(default_runtime), labels, default_runtime=default_runtime
    )
