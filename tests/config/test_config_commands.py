"""`ballet validate` and `ballet schema`, run as the user runs them."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from ballet.cli import main
from ballet.commands.schema import render_schema
from ballet.core.resolve import MAX_CUSTOM_SKILL_BYTES
from config_helpers import DESIGN_EXAMPLE

REPO_ROOT = Path(__file__).resolve().parents[2]
COMMITTED_SCHEMA = REPO_ROOT / "docs" / "ballet.schema.json"


def ballet(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ballet", *args], cwd=cwd, capture_output=True, text=True
    )


def test_validate_valid_file_exits_0_with_a_summary(tmp_path: Path) -> None:
    (tmp_path / ".ballet.yml").write_text(DESIGN_EXAMPLE.read_text())
    done = ballet("validate", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == (".ballet.yml: valid; 2 pipelines: default (5 stages), docs (2 stages)\n")


def test_validate_invalid_file_exits_1_with_one_line_per_error(tmp_path: Path) -> None:
    path = tmp_path / "custom.yml"
    path.write_text("runtimez: {}\npolicy: {merge: never}\n")
    done = ballet("validate", str(path), cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0] == f"{path}:1:1: unknown key `runtimez`; did you mean `runtimes`?"
    assert lines[1].startswith(f"{path}:2:17: policy.merge: Input should be")


def test_validate_unreadable_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(tmp_path / "missing.yml")]) == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "missing.yml" in err and "ballet validate PATH" in err
    (tmp_path / "latin1.yml").write_bytes(b"trigger_label: caf\xe9\n")
    assert main(["validate", str(tmp_path / "latin1.yml")]) == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_validate_uses_repository_skills_next_to_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / ".ballet.yml"
    path.write_text("pipelines:\n  default: {stages: [{id: a, kind: agent, skills: [audit]}]}\n")
    assert main(["validate", str(path)]) == 1
    assert f"{path}:2:52: unknown skill `audit`" in capsys.readouterr().out
    skills = tmp_path / ".ballet" / "skills"
    skills.mkdir(parents=True)
    (skills / "audit.md").write_text("# Audit\n")
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: valid; 1 pipeline: default (1 stage)\n"


def test_validate_refuses_oversized_repository_skills(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / ".ballet.yml"
    path.write_text("pipelines:\n  default: {stages: [{id: a, kind: agent, skills: [audit]}]}\n")
    skills = tmp_path / ".ballet" / "skills"
    skills.mkdir(parents=True)
    (skills / "audit.md").write_text("x" * (MAX_CUSTOM_SKILL_BYTES + 1))
    assert main(["validate", str(path)]) == 1
    assert "over the 16 KB limit" in capsys.readouterr().out


def test_validate_refuses_a_bad_skill_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / ".ballet.yml"
    path.write_text("trigger_label: ballet\n")
    skills = tmp_path / ".ballet" / "skills"
    skills.mkdir(parents=True)
    (skills / "Bad Name.md").write_text("x")
    assert main(["validate", str(path)]) == 1
    assert "is not a skill name" in capsys.readouterr().out


def test_validate_file_without_pipelines_says_the_default_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / ".ballet.yml"
    path.write_text("trigger_label: go\n")
    assert main(["validate", str(path)]) == 0
    assert "no pipelines (tickets use the built-in default)" in capsys.readouterr().out


def test_committed_schema_is_the_generated_one() -> None:
    assert COMMITTED_SCHEMA.read_text() == render_schema(), (
        "run: ballet schema --output docs/ballet.schema.json"
    )


def test_schema_command_prints_and_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema"]) == 0
    assert capsys.readouterr().out == render_schema()
    assert main(["schema", "--output", str(tmp_path / "s.json")]) == 0
    assert (tmp_path / "s.json").read_text() == render_schema()
    assert main(["schema", "--output", str(tmp_path / "no" / "dir" / "s.json")]) == 2
    assert "cannot write" in capsys.readouterr().out


def test_schema_accepts_the_example_and_rejects_an_unknown_key() -> None:
    schema = json.loads(render_schema())
    validator = jsonschema.Draft202012Validator(schema)
    example = yaml.safe_load(DESIGN_EXAMPLE.read_text())
    assert list(validator.iter_errors(example)) == []
    example["pipelines"]["docs"]["stages"][0]["nxt"] = {}
    errors = list(validator.iter_errors(example))
    assert len(errors) == 1 and "nxt" in errors[0].message


def test_run_accepts_parsed_arguments_directly(capsys: pytest.CaptureFixture[str]) -> None:
    from ballet.commands import validate

    parser = argparse.ArgumentParser()
    validate.add_arguments(parser)
    args = parser.parse_args([str(DESIGN_EXAMPLE)])
    assert validate.run(args) == 0
    assert "valid" in capsys.readouterr().out
