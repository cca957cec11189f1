"""The documentation a user reads: links that resolve, commands that exist, and no
dependency on anything outside the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from ballet.core.commands import HELP_TEXT

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", ROOT / "manifests" / "README.md", *ROOT.glob("docs/*.md")])
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    return [ROOT / name for name in listed.decode().split("\0") if name]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    for target in LINK.findall(doc.read_text()):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: not this test's business
        path = (doc.parent / target).resolve()
        assert path.exists(), f"{doc.name} links to missing {target}"


def test_nothing_in_the_repository_needs_the_development_only_shared_folder() -> None:
    needle = "../" + "shared"  # spelled apart so this file does not match itself
    offenders = [
        str(path.relative_to(ROOT))
        for path in tracked_files()
        if path.is_file()
        and path.suffix not in (".json",)
        and needle in path.read_text(errors="replace")
    ]
    assert offenders == []


def test_every_slash_command_is_documented() -> None:
    doc = (ROOT / "docs" / "commands.md").read_text()
    verbs = re.findall(r"`/ballet ([a-z]+(?: (?:require|waive))?)", HELP_TEXT)
    assert len(verbs) >= 12
    for verb in verbs:
        assert f"`/ballet {verb}" in doc, verb


def test_the_readme_links_every_doc() -> None:
    readme = (ROOT / "README.md").read_text()
    for doc in ROOT.glob("docs/*.md"):
        assert f"docs/{doc.name}" in readme, f"README.md does not link docs/{doc.name}"
