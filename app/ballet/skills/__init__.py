"""Skill texts: the built-in ones shipped here as `<name>.md`, and a repository's own.

A skill is Markdown an agent stage or role is given in its prompt. Built-in
skills are package data; a repository adds skills as `.ballet/skills/<name>.md`.
This module only reads files; `ballet.core` checks names and pins texts.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from ballet.core.config import BUILTIN_SKILL_NAMES

SKILLS_DIR = Path(".ballet") / "skills"
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")


class SkillFileError(ValueError):
    """A repository skill file Ballet refuses; the message names the file and the fix."""


def builtin_skills() -> dict[str, str]:
    """Name -> Markdown of every skill shipped with Ballet."""
    package = resources.files(__name__)
    return {name: package.joinpath(f"{name}.md").read_text("utf-8") for name in BUILTIN_SKILL_NAMES}


def repository_skills(directory: Path) -> dict[str, str]:
    """Name -> Markdown of each `<name>.md` in `directory` (a checkout's `.ballet/skills`).

    A missing directory means no skills. Raises SkillFileError for a file whose
    name is not a valid skill name, shadows a built-in skill, or is not UTF-8.
    """
    if not directory.is_dir():
        return {}
    skills: dict[str, str] = {}
    for path in sorted(directory.glob("*.md")):
        name = path.stem
        if not _NAME.match(name):
            raise SkillFileError(
                f"{path}: `{name}` is not a skill name; rename the file to a lowercase "
                "letter followed by lowercase letters, digits, `-` or `_` (e.g. `security.md`)"
            )
        if name in BUILTIN_SKILL_NAMES:
            # A repository must not quietly rewrite what the built-in gates judge by.
            raise SkillFileError(
                f"{path}: `{name}` is a built-in skill; rename the file (e.g. `my-{name}.md`) "
                "and name it in `skills:`"
            )
        try:
            skills[name] = path.read_text("utf-8")
        except UnicodeDecodeError:
            raise SkillFileError(f"{path}: not UTF-8 text; save it as UTF-8") from None
    return skills
