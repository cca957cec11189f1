"""docs/state-machine.md is generated from the transition table and must be current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ballet.core.machine import COMMANDS, TABLE

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "state_diagram.py"


def test_the_committed_state_diagram_is_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_diagram_names_every_rule_and_verb() -> None:
    doc = (ROOT / "docs" / "state-machine.md").read_text()
    assert "stateDiagram-v2" in doc
    for (status, kind), rule in TABLE.items():
        assert f"| {status or '(new)'} | `{kind}` |" in doc and rule.says in doc
    for verb in COMMANDS:
        assert f"| `{verb}` |" in doc


def test_check_fails_on_a_stale_doc(tmp_path: Path) -> None:
    # Run a copy of the script against a copy of the repo layout with a stale doc.
    (tmp_path / "scripts").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "scripts" / "state_diagram.py").write_text(SCRIPT.read_text())
    (tmp_path / "docs" / "state-machine.md").write_text("stale\n")
    stale = subprocess.run(
        [sys.executable, str(tmp_path / "scripts" / "state_diagram.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert stale.returncode == 1 and "out of date" in stale.stderr
    subprocess.run(
        [sys.executable, str(tmp_path / "scripts" / "state_diagram.py")],
        check=True,
        capture_output=True,
    )
    fresh = (tmp_path / "docs" / "state-machine.md").read_text()
    assert fresh == (ROOT / "docs" / "state-machine.md").read_text()
