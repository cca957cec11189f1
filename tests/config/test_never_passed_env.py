"""`ballet validate` refuses, at the entry's line and column, a runtime naming in `env:`
or `keys:` a variable Ballet never passes to a session (docs/session-contract.md):
before, the file was valid and every ticket's session failed instead."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ballet.core.validate import ConfigError, parse_config

CONFIG = """\
runtimes:
  mine:
    adapter: claude-code
    keys:
      - ANTHROPIC_API_KEY
      - {{VALKEY_PASSWORD: anthropic}}
    env: [MY_TOKEN, {name}]
"""
NEVER = ["GITHUB_TOKEN", "GH_TOKEN", "GIT_ASKPASS", "BALLET_APP_ID", "HOME", "PATH", "REDIS_URL"]


def errors(name: str) -> list[ConfigError]:
    result = parse_config(CONFIG.format(name=name))
    assert isinstance(result, list), f"{name} was accepted"
    return result


@pytest.mark.parametrize("name", NEVER)
def test_a_variable_ballet_never_passes_is_refused_at_its_entry(name: str) -> None:
    keys, env = errors(name)
    assert (keys.line, keys.column) == (6, 9)
    assert "Ballet never passes `VALKEY_PASSWORD`" in keys.message
    assert (env.line, env.column) == (7, 21)
    assert env.message.startswith(f"Ballet never passes `{name}` to a session: ")
    assert env.message.endswith("remove it from .ballet.yml")


def test_the_variables_a_runtime_may_name_still_pass() -> None:
    fine = CONFIG.replace("      - {{VALKEY_PASSWORD: anthropic}}\n", "").format(name="NPM_TOKEN")
    assert not isinstance(parse_config(fine), list)


def test_an_adapter_variable_keeps_its_own_advice() -> None:
    text = "runtimes:\n  a:\n    adapter: aider\n    env: [BALLET_AIDER_USAGE]\n"
    (error,) = parse_config(text)  # type: ignore[misc]
    assert "where Ballet's meter writes aider's model calls" in error.message


def test_ballet_validate_says_it_with_the_file_line_and_column(tmp_path: Path) -> None:
    config = tmp_path / ".ballet.yml"
    config.write_text(CONFIG.format(name="GITHUB_TOKEN"))
    done = subprocess.run(
        [sys.executable, "-m", "ballet", "validate", str(config)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert f"{config}:7:21: Ballet never passes `GITHUB_TOKEN` to a session" in done.stdout
