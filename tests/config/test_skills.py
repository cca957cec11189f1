"""The skill library: built-in skills ship with the package; repositories add their own."""

from __future__ import annotations

from pathlib import Path

import pytest
from ballet.core.config import BUILTIN_SKILL_NAMES
from ballet.skills import SkillFileError, builtin_skills, repository_skills

SKILLS_SOURCE = Path(__file__).resolve().parents[2] / "app" / "ballet" / "skills"


def test_every_shipped_skill_file_is_a_builtin_and_loads() -> None:
    assert {p.stem for p in SKILLS_SOURCE.glob("*.md")} == BUILTIN_SKILL_NAMES
    skills = builtin_skills()
    assert set(skills) == BUILTIN_SKILL_NAMES
    for name, text in skills.items():
        assert text.startswith(f"# Skill: {name}\n")
        assert "BALLET_REPORT" in text  # each tells its agent where the verdict goes


def test_gate_skills_name_the_outcomes_their_default_stages_route() -> None:
    skills = builtin_skills()
    # The reviewer serves review stages and sign-offs alike: it names no outcome of
    # its own and defers to the ones its prompt lists (sessions/prompt.py).
    assert "`approve`" not in skills["reviewer"] and "`changes_requested`" not in skills["reviewer"]
    assert "outcomes your prompt lists" in skills["reviewer"]
    assert "`pass`" in skills["verifier"] and "`fail`" in skills["verifier"]
    assert "`done`" in skills["implementer"]


def test_missing_skills_directory_means_no_skills(tmp_path: Path) -> None:
    assert repository_skills(tmp_path / "absent") == {}


def test_repository_skills_are_read_by_name(tmp_path: Path) -> None:
    (tmp_path / "audit.md").write_text("# Audit\n")
    (tmp_path / "style-guide.md").write_text("# Style\n")
    (tmp_path / "notes.txt").write_text("not a skill")
    assert repository_skills(tmp_path) == {"audit": "# Audit\n", "style-guide": "# Style\n"}


@pytest.mark.parametrize(
    ("filename", "content", "expected"),
    [
        ("Audit.md", b"x", "is not a skill name"),
        ("reviewer.md", b"x", "is a built-in skill; rename the file"),
        ("audit.md", b"\xff\xfe", "not UTF-8"),
    ],
)
def test_bad_skill_files_are_refused(
    tmp_path: Path, filename: str, content: bytes, expected: str
) -> None:
    (tmp_path / filename).write_bytes(content)
    with pytest.raises(SkillFileError, match=expected) as raised:
        repository_skills(tmp_path)
    assert filename in str(raised.value)
