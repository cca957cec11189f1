"""`ballet validate [PATH]`: check a `.ballet.yml` and its `.ballet/skills` like Ballet will.

Exit 0 with a one-line summary when valid, after a `path:line:col: warning: …`
line per warning (a cost budget over a model with no known price) and a line saying
that companions are checked against the installation on GitHub only; 1 with one
`path:line:col: message` line per error when not; 2 when the file cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ballet.core.config import BUILTIN_SKILL_NAMES, BalletConfig
from ballet.core.resolve import ResolveError, pinned_skills
from ballet.core.validate import ConfigError, config_warnings, parse_config
from ballet.pricing import has_price
from ballet.skills import SKILLS_DIR, SkillFileError, repository_skills


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", nargs="?", type=Path, default=Path(".ballet.yml"), help="default: .ballet.yml"
    )


def run(args: argparse.Namespace) -> int:
    path: Path = args.path
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as error:
        print(f"ballet validate: cannot read {path}: {error.strerror}", file=sys.stderr)
        print("give the path of a .ballet.yml: ballet validate PATH", file=sys.stderr)
        return 2
    except UnicodeDecodeError as error:
        print(
            f"ballet validate: {path} is not UTF-8 text ({error.reason} at byte "
            f"{error.start}); save it as UTF-8",
            file=sys.stderr,
        )
        return 2
    try:
        custom = repository_skills(path.parent / SKILLS_DIR)
    except SkillFileError as error:
        print(f"{error}")
        return 1
    result = parse_config(text, file=str(path), skills=BUILTIN_SKILL_NAMES | custom.keys())
    errors = result if isinstance(result, list) else _skill_errors(str(path), result, custom)
    for config_error in errors:
        print(config_error)
    if errors:
        return 1
    assert isinstance(result, BalletConfig)
    for warning in config_warnings(text, result, has_price=has_price, file=str(path)):
        print(warning)
    if result.companions:
        # Which repositories the App's installation reaches only GitHub knows.
        print(
            f"{path}: companions checked for shape only: whether the App's installation"
            " reaches each one is checked on GitHub (the ballet/config check run of a pull"
            " request that changes the file, and each ticket's start)"
        )
    print(f"{path}: valid; {_summary(result)}")
    return 0


def _skill_errors(file: str, config: BalletConfig, custom: dict[str, str]) -> list[ConfigError]:
    """The size cap on pinned skills, checked here so a ticket never meets it first."""
    errors = []
    for name in config.pipelines:
        try:
            pinned_skills(config, name, custom)
        except ResolveError as error:
            errors.append(ConfigError(file, 1, 1, str(error)))
    return errors


def _summary(config: BalletConfig) -> str:
    pipelines = [
        f"{name} ({_count(len(p.stages), 'stage')})" for name, p in config.pipelines.items()
    ]
    if not pipelines:
        return "no pipelines (tickets use the built-in default)"
    return f"{_count(len(pipelines), 'pipeline')}: {', '.join(pipelines)}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
