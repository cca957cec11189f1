"""`./run serve` finds the agent CLIs `./run test` installed under `.ballet-tools/`:
the real `run` script, in a checkout laid out as it leaves it, with stand-ins for the
virtualenv's `ballet` (which reports what it finds) and for the CLIs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{text}\n")
    path.chmod(0o755)


def test_run_serve_puts_the_installed_clis_after_the_system_path(tmp_path: Path) -> None:
    shutil.copy(ROOT / "run", tmp_path / "run")
    (tmp_path / "pyproject.toml").write_text("")
    venv = tmp_path / ".venv"
    _executable(venv / "bin" / "python", "exit 0")
    _executable(venv / "bin" / "ballet", 'echo "PATH=$PATH"; command -v claude; command -v aider')
    (venv / ".ballet-installed").touch()  # installed already: no pip
    npm_bin = tmp_path / ".ballet-tools" / "npm" / "node_modules" / ".bin"
    aider_bin = tmp_path / ".ballet-tools" / "aider" / "bin"
    _executable(npm_bin / "claude", "exit 0")
    _executable(aider_bin / "aider", "exit 0")
    system = os.environ["PATH"]
    done = subprocess.run(
        [str(tmp_path / "run"), "serve"],
        env={**os.environ, "PATH": system},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"PATH={system}:{npm_bin}:{aider_bin}"
    assert lines[1:] == [str(npm_bin / "claude"), str(aider_bin / "aider")]
