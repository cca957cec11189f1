"""A companion the installation does not reach, or the repository itself, is refused at its
item; `ballet validate`, which cannot know the installation, says where that is checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from ballet.cli import main
from ballet.core.companion_rules import companion_errors
from config_helpers import valid

TEXT = """\
runtimes: {claude: {adapter: claude-code}}
default_runtime: claude
companions:
  - acme/lib
  - globex/api
  - Acme/App
"""


def test_each_unreached_companion_and_the_repository_itself_is_an_error_at_its_item() -> None:
    config = valid(TEXT)
    errors = companion_errors(TEXT, config, "acme/app", {"acme/lib"}, file=".ballet.yml")
    assert [(e.line, e.column) for e in errors] == [(5, 5), (6, 5)]
    assert errors[0].message == (
        "`globex/api` is not a repository this installation reaches: install the App on it,"
        " or remove it"
    )
    assert errors[1].message.startswith("`Acme/App` is this repository itself")
    assert str(errors[0]).startswith(".ballet.yml:5:5: ")


def test_companions_the_installation_reaches_are_no_error() -> None:
    config = valid(TEXT.replace("  - Acme/App\n", ""))
    reached = {"acme/lib", "globex/api"}
    assert companion_errors(TEXT, config, "acme/app", reached, file=".ballet.yml") == []


def test_validate_says_the_installation_is_checked_on_github(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / ".ballet.yml"
    path.write_text(TEXT)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "companions checked for shape only" in out
    assert "checked on GitHub (the ballet/config check run" in out
    path.write_text(TEXT.split("companions:")[0])
    assert main(["validate", str(path)]) == 0
    assert "companions" not in capsys.readouterr().out
