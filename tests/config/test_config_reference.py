"""docs/configuration.md is generated from the `.ballet.yml` models and must be current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ballet.core.config import BalletConfig, Pipeline, Runtime, Stage

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "config_reference.py"
DOC = ROOT / "docs" / "configuration.md"


def test_the_committed_reference_is_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_reference_names_every_key_with_its_description() -> None:
    doc = DOC.read_text()
    for model in (BalletConfig, Runtime, Pipeline, Stage):
        for name, field in model.model_fields.items():
            rows = [line for line in doc.splitlines() if line.startswith(f"| `{name}` |")]
            assert rows, f"{model.__name__}.{name} is missing"
            if field.description:
                described = " ".join(field.description.split())
                assert any(described in row.replace("\\|", "|") for row in rows)


def test_check_fails_on_a_stale_doc(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "docs").mkdir()
    script = tmp_path / "scripts" / "config_reference.py"
    script.write_text(SCRIPT.read_text())
    (tmp_path / "docs" / "configuration.md").write_text("stale\n")
    stale = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert stale.returncode == 1 and "out of date" in stale.stderr
    subprocess.run([sys.executable, str(script)], check=True, capture_output=True)
    assert (tmp_path / "docs" / "configuration.md").read_text() == DOC.read_text()
