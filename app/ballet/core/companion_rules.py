"""`companions:` checked against the installation: every companion must be a repository
the App's installation on the ticket's repository reaches, and not that repository
itself. Only GitHub knows the installation, so this is checked where the file is
read for a repository (a ticket's start, a pull request's config check), each
refusal pointing at the companion's item; `ballet validate` checks the shape only."""

from __future__ import annotations

from collections.abc import Collection, Iterator

from ballet.core.config import BalletConfig
from ballet.core.config_rules import Problem
from ballet.core.validate import ConfigError
from ballet.core.yaml_positions import load


def companion_refusals(
    config: BalletConfig, repo: str, reached: Collection[str]
) -> Iterator[Problem]:
    """`reached`: the companions (lower-cased) the installation on `repo` reaches."""
    for index, companion in enumerate(config.companions):
        if companion.lower() == repo.lower():
            yield Problem(
                ("companions", index),
                f"`{companion}` is this repository itself: a ticket always changes its own"
                " repository; name only the other repositories it may change",
            )
        elif companion.lower() not in reached:
            yield Problem(
                ("companions", index),
                f"`{companion}` is not a repository this installation reaches: install the"
                " App on it, or remove it",
            )


def companion_errors(
    text: str, config: BalletConfig, repo: str, reached: Collection[str], *, file: str
) -> list[ConfigError]:
    """The refusals as errors at their line and column of `text` (which parsed as `config`)."""
    problems = list(companion_refusals(config, repo, reached))
    if not problems:
        return []
    document = load(text)
    return [ConfigError(file, *document.position(p.path), p.message) for p in problems]
