"""The commands the docs tell a user to type work as written: in a checkout that is
`./run COMMAND` (`ballet` is on PATH only in the images and a venv's shell), and
`ballet --version` says the package's version."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SUBCOMMANDS = ("validate", "stats", "schema", "serve", "sandbox")


def test_no_doc_tells_a_checkout_user_to_type_a_bare_ballet_command() -> None:
    typed = re.compile(rf"^\s*(?:\$ |[A-Z_]+=\S+ )*ballet ({'|'.join(SUBCOMMANDS)})\b")
    inline = re.compile(r"(?:check it with|type|run)\s+`ballet (validate|stats|schema)\b")
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for block in re.findall(r"```(?:sh|bash|console)\n(.*?)```", text, re.DOTALL):
            found += [f"{doc.name}: {line}" for line in block.splitlines() if typed.match(line)]
        found += [f"{doc.name}: {m.group(0)}" for m in inline.finditer(text.replace("\n", " "))]
    assert not found, f"write these as ./run …: {found}"


def test_ballet_version_and_run_pass_commands_through(tmp_path: Path) -> None:
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    direct = subprocess.run(
        [sys.executable, "-m", "ballet", "--version"], capture_output=True, text=True, check=False
    )
    assert (direct.returncode, direct.stdout.strip()) == (0, f"ballet {expected}")
    config = tmp_path / ".ballet.yml"
    config.write_text("trigger_label: ballet\n")
    for argv, said in ((["--version"], f"ballet {expected}"), (["validate", str(config)], "valid")):
        run = subprocess.run(
            [str(ROOT / "run"), *argv], capture_output=True, text=True, timeout=300, check=False
        )
        assert run.returncode == 0, run.stderr
        assert said in run.stdout
